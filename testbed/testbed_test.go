package testbed

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/testsupport/golden"
)

func TestCheckRoot(t *testing.T) {
	for _, c := range []struct {
		euid int
		want error
	}{{0, nil}, {1000, ErrNeedsRoot}, {65534, ErrNeedsRoot}} {
		if got := CheckRoot(c.euid); !errors.Is(got, c.want) {
			t.Errorf("CheckRoot(%d) = %v, want %v", c.euid, got, c.want)
		}
	}
	if want := "needs root (creates network namespaces and a bridge); run it with sudo"; ErrNeedsRoot.Error() != want {
		t.Errorf("ErrNeedsRoot = %q, want %q", ErrNeedsRoot, want)
	}
}

// TestCheckToolsNamesThePackage: the first missing tool is named with the
// apt package that has it.
func TestCheckToolsNamesThePackage(t *testing.T) {
	for _, c := range []struct {
		missing string
		want    string
	}{
		{"", ""},
		{"ip", "ip missing: apt-get install iproute2"},
		{"/usr/sbin/sshd", "/usr/sbin/sshd missing: apt-get install openssh-server"},
		{"useradd", "useradd missing: apt-get install passwd"},
		{"userdel", "userdel missing: apt-get install passwd"},
	} {
		look := func(name string) (string, error) {
			if name == c.missing {
				return "", exec.ErrNotFound
			}
			return "/bin/" + name, nil
		}
		err := CheckTools(look)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("missing %q: CheckTools = %q, want %q", c.missing, got, c.want)
		}
	}
}

func TestCheckSubnetFree(t *testing.T) {
	p := netip.MustParsePrefix
	for _, c := range []struct {
		name string
		ifs  []Iface
		own  string
		want string // substring of the error; "" = nil
	}{
		{"free", []Iface{{"lo", []netip.Prefix{p("127.0.0.1/8")}}, {"eth0", []netip.Prefix{p("192.0.2.2/24")}}}, "", ""},
		{"sshtest bridge", []Iface{{"dgbab12cd", []netip.Prefix{p("10.77.0.1/24")}}}, "", "10.77.0.0/24 is already in use: 10.77.0.1/24 on dgbab12cd (remove it first)"},
		{"own bridge", []Iface{{Bridge, []netip.Prefix{p("10.77.0.1/24")}}}, Bridge, ""},
		{"bridge of another dir", []Iface{{Bridge, []netip.Prefix{p("10.77.0.1/24")}}}, "", "on dstgen-tb0 (a testbed of another --dir?"},
		{"wider prefix overlaps", []Iface{{"eth1", []netip.Prefix{p("10.77.5.9/16")}}}, "", "10.77.5.9/16 on eth1"},
		{"own bridge, other iface in use", []Iface{{Bridge, []netip.Prefix{p("10.77.0.1/24")}}, {"dummy0", []netip.Prefix{p("10.77.0.250/24")}}}, Bridge, "on dummy0"},
		{"neighbour subnet", []Iface{{"eth1", []netip.Prefix{p("10.78.0.1/24")}}}, "", ""},
	} {
		err := CheckSubnetFree(c.ifs, c.own)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestConfigNormalize(t *testing.T) {
	prev := plan(Config{Dir: "/x", N: 2, Roles: []string{"db", "sut+client"}, DataMiB: 8}, nil)
	for _, c := range []struct {
		name  string
		in    Config
		prev  *State
		roles []string // want, when no error
		err   string
	}{
		{"defaults 1", Config{N: 1}, nil, []string{"sut"}, ""},
		{"defaults 3", Config{Dir: "/tmp/tb", N: 3}, nil, []string{"sut", "sut", "client"}, ""},
		{"recorded roles kept", Config{Dir: "/x", N: 2}, prev, []string{"db", "sut+client"}, ""},
		{"explicit roles win", Config{Dir: "/x", N: 2, Roles: []string{"a", "b"}}, prev, []string{"a", "b"}, ""},
		{"zero hosts", Config{N: 0}, nil, nil, "0 hosts: want 1..20"},
		{"too many", Config{N: 21}, nil, nil, "21 hosts: want 1..20"},
		{"roles count", Config{N: 3, Roles: []string{"sut"}}, nil, nil, "--roles names 1 role(s) for 3 hosts: want one per host, e.g. sut,sut,client"},
		{"bad role", Config{N: 2, Roles: []string{"sut", "a b"}}, nil, nil, `host 2: role "a b"`},
		{"empty role", Config{N: 2, Roles: []string{"sut", ""}}, nil, nil, `host 2: role ""`},
		{"dir with blank", Config{Dir: "/tmp/my tb", N: 1}, nil, nil, `--dir "/tmp/my tb": want an absolute path`},
		{"dir with percent", Config{Dir: "/tmp/%u", N: 1}, nil, nil, "written into sshd_config"},
		{"root dir", Config{Dir: "/", N: 1}, nil, nil, "not /"},
		{"data size", Config{N: 1, DataMiB: 5000}, nil, nil, "data dir size 5000 MiB: want 1..4096"},
	} {
		got, err := c.in.normalize(c.prev)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if strings.Join(got.Roles, ",") != strings.Join(c.roles, ",") || !filepath.IsAbs(got.Dir) || got.DataMiB == 0 {
			t.Errorf("%s: %+v, want roles %v, an absolute dir and a data size", c.name, got, c.roles)
		}
	}
}

// fixedState is a testbed record with fixed keys, for the golden files.
func fixedState() *State {
	st := plan(Config{Dir: "/var/lib/dstgen/testbed", N: 3, Roles: DefaultRoles(3), DataMiB: DefaultDataMiB}, nil)
	for i := range st.Hosts {
		st.Hosts[i].HostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey" + st.Hosts[i].Name
	}
	return st
}

// TestEnvYAMLGolden: the env.yml up writes, and that it loads.
func TestEnvYAMLGolden(t *testing.T) {
	out, err := EnvYAML(fixedState())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/env.golden.yml", out)
	e, err := env.Parse("env.yml", out)
	if err != nil {
		t.Fatalf("the testbed env.yml does not load: %v", err)
	}
	if len(e.Hosts) != 3 || e.Hosts[2].Address != "10.77.0.13" || e.Hosts[2].Roles[0] != "client" || e.SSH.User != User ||
		e.Hosts[0].Vars["data_dir"] != "/var/lib/dstgen/testbed/hosts/h1/work/data" {
		t.Errorf("loaded %+v", e)
	}
	if got, want := string(fixedState().knownHosts()), "10.77.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyh1\n"; !strings.HasPrefix(got, want) {
		t.Errorf("known_hosts = %q, want it to start %q", got, want)
	}
}

// TestEnvIntoKeepsOtherSections: --into replaces ssh: and hosts: only;
// every other section and comment stays (golden), remote:/bastion: go, and
// a missing env.yml starts from the env.example.yml beside it.
func TestEnvIntoKeepsOtherSections(t *testing.T) {
	for _, c := range []struct{ in, golden string }{
		{"testdata/into.in.yml", "testdata/into.golden.yml"},
		{"testdata/remote.in.yml", "testdata/remote.golden.yml"},
	} {
		data, err := os.ReadFile(c.in)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "env.yml")
		if err := os.WriteFile(path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := EnvInto(path, fixedState()); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, c.golden, got)
		// Every comment outside the replaced values survives.
		for _, l := range strings.Split(string(data), "\n") {
			if _, cm, ok := strings.Cut(l, "#"); ok && !strings.Contains(cm, "old value") && !strings.Contains(string(got), "#"+cm) {
				t.Errorf("%s: comment %q lost", c.in, cm)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, %v; want the file's own 0640", c.in, fi.Mode(), err)
		}
		// From env.example.yml when env.yml is missing: the same result.
		dir2 := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir2, "env.example.yml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := EnvInto(filepath.Join(dir2, "env.yml"), fixedState()); err != nil {
			t.Fatalf("%s from env.example.yml: %v", c.in, err)
		}
		if got2, _ := os.ReadFile(filepath.Join(dir2, "env.yml")); string(got2) != string(got) {
			t.Errorf("%s: from env.example.yml differs:\n%s", c.in, golden.FirstDiff(got, got2))
		}
	}
}

// TestEnvIntoRefusals: a file that cannot become a valid env.yml is left
// as it was, with a one-line reason.
func TestEnvIntoRefusals(t *testing.T) {
	for _, c := range []struct {
		name, body string // body "" = no file at all
		want       string
	}{
		{"no file", "", "no such file, and no env.example.yml beside it"},
		{"not a mapping", "- a\n- b\n", "env.yml:1: top level must be a mapping"},
		{"unknown key elsewhere", "ssh: {}\nhosts: []\nworkdirr: /x\n", "does not load: "},
		{"bad yaml", "ssh: [\n", "env.yml"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "env.yml")
		if c.body != "" {
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := EnvInto(path, fixedState())
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, err, c.want)
		}
		if c.body != "" {
			if got, _ := os.ReadFile(path); string(got) != c.body {
				t.Errorf("%s: the file was changed to %q", c.name, got)
			}
		}
	}
}
