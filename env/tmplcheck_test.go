package env

import (
	"errors"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

// A quorum member's number comes from the facts, not from the operator's
// arithmetic: 1-based within each role, in env.yml order, the same on every
// host that renders it.
func TestRenderOrdinalFact(t *testing.T) {
	e, err := Parse("env.yml", []byte(`
sut: {roles: [zk]}
hosts:
  - {name: c-1, address: 10.77.0.9, roles: [client], workdir: /opt/c}
  - {name: zk-a, address: 10.77.0.2, roles: [zk], workdir: /opt/a}
  - {name: zk-b, address: 10.77.0.3, roles: [zk, web], workdir: /opt/b}
  - {name: zk-c, address: 10.77.0.4, roles: [zk], workdir: /opt/c2}
`))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := "myid={{ .Host.Ordinal.zk }}\n{{ range .Roles.zk }}server.{{ .Ordinal.zk }}={{ .Address }}:2888:3888\n{{ end }}"
	servers := "server.1=10.77.0.2:2888:3888\nserver.2=10.77.0.3:2888:3888\nserver.3=10.77.0.4:2888:3888\n"
	for _, c := range []struct {
		host int
		tmpl string
		want string
	}{
		{1, tmpl, "myid=1\n" + servers},
		{2, tmpl, "myid=2\n" + servers},
		{3, tmpl, "myid=3\n" + servers},
		{2, "{{ .Host.Ordinal.web }} {{ .Host.Ordinal.zk }}", "1 2"},
		{0, "{{ .Host.Ordinal.client }}", "1"},
	} {
		f, err := e.FactsFor(e.Hosts[c.host])
		if err != nil {
			t.Fatal(err)
		}
		out, err := Render("zoo.cfg.tmpl", c.tmpl, f)
		if err != nil || out != c.want {
			t.Errorf("host %s: %q = %q, %v; want %q", e.Hosts[c.host].Name, c.tmpl, out, err, c.want)
		}
	}
	// A host's ordinal in a role it does not have is an error, not 0.
	f, _ := e.FactsFor(e.Hosts[0])
	if _, err := Render("myid.tmpl", "{{ .Host.Ordinal.zk }}", f); err == nil || !strings.HasPrefix(err.Error(), "myid.tmpl:1: ") {
		t.Errorf("ordinal of a role the host lacks: err = %v, want myid.tmpl:1", err)
	}
}

// A template that names a role no host has, or a fact that does not exist,
// is an error at its line even where the engine would render nothing
// (index on a missing key) or never evaluate it (an untaken branch).
func TestCheckTemplate(t *testing.T) {
	roles := []string{"zookeeper", "client"}
	for _, c := range []struct {
		name, tmpl string
		want       string // error prefix; "" = no error
		found      []string
	}{
		{"ok", "{{ range .Roles.zookeeper }}{{ .Name }}{{ end }}", "", []string{"zookeeper"}},
		{"dot field", "a\n{{ range .Roles.zk }}{{ .Name }}{{ end }}", `t:2: unknown role "zk" (.Roles.zk): no host has it (roles: client, zookeeper)`, nil},
		{"index", "a\nb\n{{ range index .Roles \"zk\" }}x{{ end }}", `t:3: unknown role "zk" (index .Roles "zk")`, nil},
		{"dollar", "{{ range .Hosts }}{{ range $.Roles.zk }}{{ end }}{{ end }}", `t:1: unknown role "zk"`, nil},
		{"ordinal", "{{ .Host.Ordinal.zk }}", `t:1: unknown role "zk" (.Host.Ordinal.zk)`, nil},
		{"untaken branch", "{{ if false }}\n{{ .Host.Nme }}{{ end }}", "t:2: unknown value .Host.Nme: no such template fact", nil},
		{"top-level", "{{ .Sut.Members }}", "t:1: unknown value .Sut: no such template fact", nil},
		{"inside range dot moves", "{{ range .Hosts }}{{ .Name }}{{ .Roles }}{{ end }}", "", nil},
		{"vars keys are free", "{{ .Vars.anything }}{{ .Host.Vars.x }}", "", nil},
		{"with else keeps dot", "{{ with .Vars.x }}{{ .Y }}{{ else }}{{ .Host.Nope }}{{ end }}", "t:1: unknown value .Host.Nope", nil},
		{"parse error", "{{ .Host.Name", "t:1: unclosed action", nil},
	} {
		got, err := CheckTemplate("t", c.tmpl, roles)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want prefix %q", c.name, err, c.want)
		}
		var fe *fileline.Error
		if err != nil && c.name != "parse error" && !errors.As(err, &fe) {
			t.Errorf("%s: error %T is no *fileline.Error", c.name, err)
		}
		if c.found != nil {
			var names []string
			for _, r := range got {
				names = append(names, r.Role)
			}
			if strings.Join(names, ",") != strings.Join(c.found, ",") {
				t.Errorf("%s: roles = %v, want %v", c.name, names, c.found)
			}
		}
	}
	// Without roles (init has no env.yml yet) roles are reported, not judged.
	got, err := CheckTemplate("t", "{{ index .Roles \"zk\" }}\n{{ .Roles.kafka }}", nil)
	if err != nil || len(got) != 2 || got[0] != (TemplateRole{"zk", 1}) || got[1] != (TemplateRole{"kafka", 2}) {
		t.Errorf("roles without judging = %+v, %v", got, err)
	}
}

// deploy renders through Render: index .Roles "zk" used to render an empty
// server list.
func TestRenderRefusesUnknownRoleViaIndex(t *testing.T) {
	f := Facts{Roles: map[string][]HostFacts{"zookeeper": {{Name: "a"}}}, Vars: map[string]any{}}
	_, err := Render("zoo.cfg.tmpl", "x\n{{ range index .Roles \"zk\" }}{{ .Name }}{{ end }}", f)
	if err == nil || !strings.HasPrefix(err.Error(), `zoo.cfg.tmpl:2: unknown role "zk"`) {
		t.Errorf("err = %v", err)
	}
}
