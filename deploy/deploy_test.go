package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// etcdTemplate is the example SUT's real per-host config template.
var etcdTemplate, _ = filepath.Abs("../examples/etcd/deploy/etcd.conf.yml.tmpl")

type testbed struct{ *sshtest.Testbed }

func newTestbed(t *testing.T, n int) testbed { return testbed{sshtest.NewTestbed(t, n)} }

// envYAML writes an env.yml for the testbed: hosts 0..2 run etcd, host 3
// is the client.
func (tb testbed) envYAML(t *testing.T, sut string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "ssh: {user: %s, key: %s, known_hosts: %s}\nworkdir: /opt/unused\nhosts:\n", sshtest.User, tb.Keys.Key, tb.Keys.KnownHosts)
	for i, s := range tb.Servers {
		name, role := fmt.Sprintf("etcd-%d", i+1), "etcd"
		if i == 3 {
			name, role = "client-1", "client"
		}
		fmt.Fprintf(&b, "  - {name: %s, address: %s, port: %d, roles: [%s], workdir: %s}\n", name, s.Host, s.Port, role, tb.Workdirs[i])
	}
	b.WriteString(sut)
	p := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const etcdSUT = `parameters: {bench_host: client-1}
sut:
  name: etcd
  roles: [etcd]
  run: auto
  install: {binary: /usr/bin/etcd, version: "/usr/bin/etcd --version"}
  command: /usr/bin/etcd --config-file {{ .Host.Workdir }}/etc/etcd.conf.yml
  data_dir: "{{ .Host.Workdir }}/data/etcd"
  configs:
    - template: TEMPLATE
  health:
    etcd: ETCDCTL_API=3 etcdctl --dial-timeout 2s --command-timeout 3s --endpoints http://{{ .Host.Address }}:2379 endpoint health
  ready_timeout_s: 40
`

func requireEtcd(t *testing.T) {
	t.Helper()
	for _, b := range []string{"/usr/bin/etcd", "/usr/bin/etcdctl"} {
		if _, err := os.Stat(b); err != nil {
			t.Skipf("%s not installed (apt-get install etcd-server etcd-client): %v", b, err)
		}
	}
}

func etcdctl(t *testing.T, endpoint string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("etcdctl", append([]string{"--dial-timeout", "2s", "--command-timeout", "5s", "--endpoints", endpoint}, args...)...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDeployBringsUpEtcdClusterWithoutSystemd is the cluster-ready proof:
// from one env.yml, every member gets its own rendered config, the SUT runs
// as a supervised job (namespaces have no systemd), the three members form
// one cluster (a write through member 1 is read through member 3), the
// client host gets nothing, and stop + clean-data + start gives a fresh
// cluster without the old data.
func TestDeployBringsUpEtcdClusterWithoutSystemd(t *testing.T) {
	requireEtcd(t)
	tb := newTestbed(t, 4)
	e, err := env.Load(tb.envYAML(t, strings.Replace(etcdSUT, "TEMPLATE", etcdTemplate, 1)))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Prepare(e)
	if err != nil {
		t.Fatal(err)
	}
	pool := runner.NewPool(e, runner.Options{})
	defer pool.Close()
	var out bytes.Buffer
	d := &Deployer{Env: e, Pool: pool, Hosts: hs, Out: &out}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, step := range []func(context.Context) error{d.Install, d.Configure, d.Start} {
		if err := step(ctx); err != nil {
			t.Fatalf("%v\noutput:\n%s", err, out.String())
		}
	}
	for i := 0; i < 3; i++ {
		cfg, err := os.ReadFile(filepath.Join(tb.Workdirs[i], "etc", "etcd.conf.yml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			fmt.Sprintf("name: etcd-%d\n", i+1),
			fmt.Sprintf("advertise-client-urls: http://%s:2379\n", tb.Servers[i].Host),
			fmt.Sprintf("data-dir: %s/data/etcd\n", tb.Workdirs[i]),
			fmt.Sprintf("initial-cluster: etcd-1=http://%s:2380,etcd-2=http://%s:2380,etcd-3=http://%s:2380\n", tb.Servers[0].Host, tb.Servers[1].Host, tb.Servers[2].Host),
		} {
			if !strings.Contains(string(cfg), want) {
				t.Errorf("member %d config lacks %q:\n%s", i+1, want, cfg)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tb.Workdirs[3], "etc")); !os.IsNotExist(err) {
		t.Errorf("the client host got SUT files (%s/etc: %v)", tb.Workdirs[3], err)
	}
	for _, want := range []string{"mode=job", "health=ok", "version='etcd Version: 3.4"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out.String())
		}
	}
	ep := func(i int) string { return "http://" + tb.Servers[i].Host + ":2379" }
	if o, err := etcdctl(t, ep(0), "put", "dstgen/probe", "through-member-1"); err != nil {
		t.Fatalf("put through member 1: %v: %s", err, o)
	}
	if o, err := etcdctl(t, ep(2), "get", "--print-value-only", "dstgen/probe"); err != nil || strings.TrimSpace(o) != "through-member-1" {
		t.Fatalf("get through member 3 = %q, %v; want the value written through member 1", o, err)
	}
	if o, err := etcdctl(t, ep(1), "member", "list"); err != nil || strings.Count(o, "started") != 3 {
		t.Fatalf("member list through member 2: %v\n%s", err, o)
	}

	// clean-data refuses while the SUT runs: the data would be pulled
	// from under a live process.
	if err := d.CleanData(ctx); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("CleanData while running = %v, want a refusal", err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.State == "running" {
			t.Errorf("after Stop, %s is still %s", s.Host, s.State)
		}
	}
	if err := d.CleanData(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tb.Workdirs[0], "data", "etcd", "member")); !os.IsNotExist(err) {
		t.Fatalf("clean-data left the member dir: %v", err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("restart on clean data: %v\n%s", err, out.String())
	}
	if o, err := etcdctl(t, ep(1), "get", "--print-value-only", "dstgen/probe"); err != nil || strings.TrimSpace(o) != "" {
		t.Fatalf("after clean-data the old key still reads %q (%v): state leaked between runs", o, err)
	}

	// A member that dies on its own (SIGKILL from outside, as the kernel
	// or a full disk would end it) is failed, and RestartFailed starts it
	// again — only it; the members that run are left alone.
	if again, err := d.RestartFailed(ctx, nil); err != nil || len(again) != 0 {
		t.Fatalf("RestartFailed on a healthy cluster restarted %+v, %v", again, err)
	}
	before, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The whole process group: etcd under its job's sh, as a crash ends it.
	pg, err := syscall.Getpgid(before[1].PID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pg, syscall.SIGKILL); err != nil {
		t.Fatalf("kill member 2 (pgid %d): %v", pg, err)
	}
	var failed bool
	for i := 0; i < 40 && !failed; i++ {
		st, err := d.Status(ctx)
		failed = err == nil && st[1].State == "failed"
		time.Sleep(250 * time.Millisecond)
	}
	if !failed {
		t.Fatal("member 2 killed from outside is not failed")
	}
	restarted, err := d.RestartFailed(ctx, nil)
	if err != nil || len(restarted) != 1 || restarted[0].Host != "etcd-2" {
		t.Fatalf("RestartFailed = %+v, %v; want etcd-2 only", restarted, err)
	}
	if err := d.WaitHealthy(ctx); err != nil {
		t.Fatalf("after RestartFailed: %v", err)
	}
	after, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range after {
		if st.State != "running" || (i != 1) != (st.PID == before[i].PID) {
			t.Errorf("%s: %s pid %d (before %d); want running, a new pid only for etcd-2", st.Host, st.State, st.PID, before[i].PID)
		}
	}
}

// loadEnv writes envYAML as env.yml beside one config template (its name
// and text) in a fresh dir and loads it.
func loadEnv(t *testing.T, envYAML, tmplName, tmpl string) *env.Env {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, tmplName), []byte(tmpl), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "env.yml")
	if err := os.WriteFile(p, []byte(envYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := env.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A config template that names an unknown fact or a role no host has
// stops deploy at the template's file:line before any host is touched,
// also where the engine alone would render nothing (index on a missing
// role) or never look (a branch not taken).
func TestPrepareNamesTheTemplateLine(t *testing.T) {
	for _, c := range []struct{ tmpl, want string }{
		{"name: {{ .Host.Name }}\nurl: http://{{ .Host.Adress }}:1\n", "member.conf.tmpl:2: unknown value .Host.Adress"},
		{"a\n{{ range .Roles.zk }}server={{ .Address }}{{ end }}\n", `member.conf.tmpl:2: unknown role "zk" (.Roles.zk)`},
		{"a\nb\n{{ range index .Roles \"zk\" }}server={{ .Address }}{{ end }}\n", `member.conf.tmpl:3: unknown role "zk" (index .Roles "zk"): no host has it (roles: client, db)`},
		{"{{ if eq .Host.Name \"nobody\" }}\n{{ .Host.Ordinal.zk }}{{ end }}\n", `member.conf.tmpl:2: unknown role "zk" (.Host.Ordinal.zk)`},
	} {
		e := loadEnv(t, "hosts:\n  - {name: m1, address: 127.0.0.1, roles: [db]}\n  - {name: c1, address: 127.0.0.2, roles: [client]}\n"+
			"sut:\n  roles: [db]\n  command: db --config {{ .Host.Workdir }}/etc/member.conf\n  configs:\n    - template: member.conf.tmpl\n",
			"member.conf.tmpl", c.tmpl)
		_, err := Prepare(e)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("template %q: Prepare error = %v, want one line with %q", c.tmpl, err, c.want)
		}
	}
}

func TestPrepareRendersOnlySUTHosts(t *testing.T) {
	e := loadEnv(t, "workdir: /w\nhosts:\n  - {name: m1, address: 127.0.0.1, roles: [db]}\n  - {name: m2, address: 127.0.0.2, roles: [db], workdir: /w2}\n  - {name: c1, address: 127.0.0.3, roles: [client]}\n"+
		"sut:\n  roles: [db]\n  command: db -c {{ .Host.Workdir }}/etc/m.conf\n  configs:\n    - template: m.conf.tmpl\n",
		"m.conf.tmpl", "me={{ .Host.Name }} peers={{ len .Roles.db }}\n")
	hs, err := Prepare(e)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		sut           bool
		dest, data, c string
	}{
		"m1": {true, "/w/etc/m.conf", "me=m1 peers=2\n", "db -c /w/etc/m.conf"},
		"m2": {true, "/w2/etc/m.conf", "me=m2 peers=2\n", "db -c /w2/etc/m.conf"},
		"c1": {false, "", "", ""},
	}
	for _, h := range hs {
		w := want[h.Name]
		if h.RunsSUT != w.sut || h.Command != w.c {
			t.Errorf("%s: RunsSUT=%v Command=%q, want %v %q", h.Name, h.RunsSUT, h.Command, w.sut, w.c)
		}
		if !w.sut {
			if len(h.Configs) != 0 {
				t.Errorf("%s is not a SUT host but gets configs %v", h.Name, h.Configs)
			}
			continue
		}
		if len(h.Configs) != 1 || h.Configs[0].Dest != w.dest || string(h.Configs[0].Data) != w.data {
			t.Errorf("%s: configs %+v, want dest %s data %q", h.Name, h.Configs, w.dest, w.data)
		}
	}
}

func TestUnsafeDataDir(t *testing.T) {
	for _, c := range []struct {
		p    string
		want bool
	}{
		{"/", true}, {"/var", true}, {"/data", true}, {"/etc/etcd", true}, {"/usr/lib", true},
		{"/var/lib/etcd", false}, {"/opt/dstgen/data", false}, {"/tmp/dstgen-wd-1/data/etcd", false},
	} {
		if got := unsafeDataDir(c.p); got != c.want {
			t.Errorf("unsafeDataDir(%q) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestPlatform(t *testing.T) {
	for _, c := range []struct{ in, os, arch string }{
		{"Linux x86_64", "linux", "amd64"}, {"Linux aarch64", "linux", "arm64"}, {"Darwin arm64", "darwin", "arm64"},
	} {
		o, a, err := platform(c.in)
		if err != nil || o != c.os || a != c.arch {
			t.Errorf("platform(%q) = %s %s %v", c.in, o, a, err)
		}
	}
	for _, bad := range []string{"", "Linux", "Plan9 x86_64", "Linux vax"} {
		if _, _, err := platform(bad); err == nil {
			t.Errorf("platform(%q) accepted", bad)
		}
	}
}

// Install uploads sut.install.artifact and verifies it at <workdir>/bin;
// a binary that is neither there nor installable is an error that says
// what to set, never a silent "installed".
func TestInstallArtifactAndMissingBinary(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srv := sshtest.StartTrusted(t, k, 1)[0]
	wd := sshtest.Workdir(t)
	dir := t.TempDir()
	art := filepath.Join(dir, "mysut")
	if err := os.WriteFile(art, []byte("#!/bin/sh\necho mysut 1.2.3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, install, want string
		ok                  bool
	}{
		{"artifact", "{artifact: mysut, version: " + wd + "/bin/mysut}", "version='mysut 1.2.3'", true},
		// What dstgen init writes for a built artifact: binary and version
		// are per-host templates.
		{"artifact, templated binary", `{artifact: mysut, binary: "{{ .Host.Workdir }}/bin/mysut", version: "{{ .Host.Workdir }}/bin/mysut"}`, "binary=" + wd + "/bin/mysut present=yes version='mysut 1.2.3'", true},
		{"missing binary", "{binary: /nonexistent/bin/mysut}", "binary /nonexistent/bin/mysut not found (set sut.install.package or sut.install.artifact", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := fmt.Sprintf("ssh: {user: %s, key: %s, known_hosts: %s, config: none}\nhosts:\n  - {name: m1, address: %s, port: %d, roles: [db], workdir: %s}\nsut:\n  roles: [db]\n  install: %s\n",
				sshtest.User, k.Key, k.KnownHosts, srv.Host, srv.Port, wd, c.install)
			p := filepath.Join(dir, "env.yml")
			if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := env.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			hs, err := Prepare(e)
			if err != nil {
				t.Fatal(err)
			}
			pool := runner.NewPool(e, runner.Options{})
			defer pool.Close()
			var out bytes.Buffer
			err = (&Deployer{Env: e, Pool: pool, Hosts: hs, Out: &out}).Install(context.Background())
			got := out.String()
			if err != nil {
				got += err.Error()
			}
			if (err == nil) != c.ok || !strings.Contains(got, c.want) {
				t.Fatalf("Install: err=%v, want ok=%v and %q in:\n%s", err, c.ok, c.want, got)
			}
		})
	}
}
