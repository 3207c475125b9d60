package env

import (
	"strings"
	"testing"
)

func TestRenderPerHostFacts(t *testing.T) {
	e, err := Parse("env.yml", []byte(`
workdir: /opt/d
parameters: {client_port: 2379}
sut:
  roles: [etcd]
  data_dir: "{{ .Host.Workdir }}/data/etcd"
hosts:
  - {name: etcd-1, address: 10.77.0.2, roles: [etcd], workdir: /opt/d/n1}
  - {name: etcd-2, address: 10.77.0.3, roles: [etcd], vars: {client_port: 3379}}
  - {name: client-1, address: 10.77.0.4, roles: [client]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := `name: {{ .Host.Name }}
data-dir: {{ .DataDir }}
advertise: http://{{ .Host.Address }}:{{ .Vars.client_port }}
initial-cluster: {{ range $i, $h := .Roles.etcd }}{{ if $i }},{{ end }}{{ $h.Name }}=http://{{ $h.Address }}:2380{{ end }}`
	cases := []struct {
		host int
		want []string
	}{
		{0, []string{"name: etcd-1", "data-dir: /opt/d/n1/data/etcd", "advertise: http://10.77.0.2:2379"}},
		{1, []string{"name: etcd-2", "data-dir: /opt/d/data/etcd", "advertise: http://10.77.0.3:3379"}},
	}
	for _, c := range cases {
		f, err := e.FactsFor(e.Hosts[c.host])
		if err != nil {
			t.Fatal(err)
		}
		out, err := Render("etcd.conf.yml.tmpl", tmpl, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range append(c.want, "initial-cluster: etcd-1=http://10.77.0.2:2380,etcd-2=http://10.77.0.3:2380") {
			if !strings.Contains(out, w) {
				t.Errorf("host %d: rendered config lacks %q:\n%s", c.host, w, out)
			}
		}
	}
	if got := len(e.SUTHosts()); got != 2 {
		t.Errorf("SUTHosts = %d hosts, want the 2 of role etcd", got)
	}
}

func TestRenderUnknownValueNamesLine(t *testing.T) {
	f := Facts{Host: HostFacts{Name: "h"}, Vars: map[string]any{}}
	for _, c := range []struct{ tmpl, want string }{
		{"a: 1\nb: {{ .Host.Nme }}\n", "cfg.tmpl:2: unknown value .Host.Nme"},
		{"a: 1\n\nc: {{ .Vars.missing }}\n", "cfg.tmpl:3: unknown value .Vars.missing"},
		{"a: {{ .Host.Name\n", "cfg.tmpl:2: unclosed action"},
	} {
		_, err := Render("cfg.tmpl", c.tmpl, f)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Render(%q) error = %v, want prefix %q", c.tmpl, err, c.want)
		}
	}
}

// A work dir reaches unquoted shell commands through the per-host
// templates, so it must be a plain path; a value that is not can be quoted
// in a template with shellQuote.
func TestWorkdirIsPlainAndShellQuote(t *testing.T) {
	for _, wd := range []string{"/opt/a b", "/opt/x;touch /tmp/p", "/opt/$(id)", "/opt/`id`", "/opt/'q'"} {
		_, err := Parse("env.yml", []byte("hosts:\n  - {name: h, address: 127.0.0.1, workdir: \""+strings.ReplaceAll(wd, `"`, `\"`)+"\"}\n"))
		if err == nil || !strings.Contains(err.Error(), "env.yml:2:") || !strings.Contains(err.Error(), "generated shell commands") {
			t.Errorf("workdir %q: err = %v, want a refusal at env.yml:2", wd, err)
		}
	}
	out, err := Render("sut.command", "run --name {{ shellQuote .Vars.n }}", Facts{Vars: map[string]any{"n": "a b'c;d"}})
	if err != nil || out != `run --name 'a b'\''c;d'` {
		t.Errorf("shellQuote: %q, %v", out, err)
	}
}

// An unset duration is not sent: a driver told DSTGEN_DURATION_S=0 would
// refuse to run (or run for no time).
func TestWorkloadEnvDuration(t *testing.T) {
	e := &Env{}
	for _, c := range []struct {
		dur  int
		want string
	}{{0, ""}, {30, "DSTGEN_DURATION_S=30"}} {
		got := ""
		for _, kv := range e.WorkloadEnv(WorkloadInput{RunID: "r", Benchmark: Benchmark{Duration: c.dur}}) {
			if strings.HasPrefix(kv, "DSTGEN_DURATION_S=") {
				got = kv
			}
		}
		if got != c.want {
			t.Errorf("duration %d: %q, want %q", c.dur, got, c.want)
		}
	}
}

func TestFactsSUTMembers(t *testing.T) {
	e, err := Parse("env.yml", []byte("hosts:\n  - {name: m1, address: 10.0.0.1, roles: [db]}\n  - {name: c1, address: 10.0.0.9, roles: [client]}\n  - {name: m2, address: 10.0.0.2, roles: [db]}\nsut:\n  roles: [db]\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.FactsFor(e.Hosts[1])
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render("t", "gcomm://{{ range $i, $m := .SUT.Members }}{{ if $i }},{{ end }}{{ $m.Address }}{{ end }} n={{ len .SUT.Members }}", f)
	if err != nil || got != "gcomm://10.0.0.1,10.0.0.2 n=2" {
		t.Errorf("render = %q, %v", got, err)
	}
}
