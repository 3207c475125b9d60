package env

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

func TestParseDefaults(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home dir")
	}
	e, err := Parse("/x/testing/env.yml", []byte(`
ssh:
  key: ~/.ssh/id_ed25519
hosts:
  - name: n1
    address: 10.0.0.1
    roles: [db, leader]
  - name: n2
    address: n2.example
    port: 2222
    user: alice
    key: keys/n2
`))
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	want("user", e.SSH.User, "root")
	want("port", e.SSH.Port, 22)
	want("timeout", e.SSH.TimeoutS, 30)
	want("keepalive", e.SSH.KeepaliveS, 5)
	want("workdir", e.Workdir, "/opt/dstgen")
	want("key", e.SSH.Key, filepath.Join(home, ".ssh/id_ed25519"))
	want("known_hosts", e.SSH.KnownHosts, filepath.Join(home, ".ssh/known_hosts"))
	want("n1 port", e.Hosts[0].Port, 22)
	want("n1 user", e.Hosts[0].User, "root")
	want("n1 key", e.Hosts[0].Key, e.SSH.Key)
	want("n1 line", e.Hosts[0].Line, 5)
	want("n2 port", e.Hosts[1].Port, 2222)
	want("n2 user", e.Hosts[1].User, "alice")
	want("n2 key (relative to env file)", e.Hosts[1].Key, "/x/testing/keys/n2")
	want("n2 line", e.Hosts[1].Line, 8)
	want("path", e.Path, "/x/testing/env.yml")
}

func TestParseShorthand(t *testing.T) {
	e, err := Parse("env.yml", []byte(`
remote:
  host: 192.0.2.7
  user: ubuntu
  ssh_key: /k/id
  port: 2200
bastion:
  enabled: true
  host: jump.example
  ssh_key: /k/jump
dstgen:
  ssh_timeout_s: 12
  tier: smoke
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Hosts) != 1 {
		t.Fatalf("hosts = %+v", e.Hosts)
	}
	h := e.Hosts[0]
	if h.Name != "remote" || h.Address != "192.0.2.7" || h.User != "ubuntu" || h.Key != "/k/id" || h.Port != 2200 || h.Line != 2 {
		t.Errorf("remote host = %+v", h)
	}
	j := e.SSH.Jump
	if j == nil || j.Host != "jump.example" || j.Port != 22 || j.User != "root" || j.Key != "/k/jump" {
		t.Errorf("jump = %+v", j)
	}
	if e.SSH.TimeoutS != 12 {
		t.Errorf("timeout = %d, want 12 from dstgen.ssh_timeout_s", e.SSH.TimeoutS)
	}

	// A disabled bastion is no jump.
	e, err = Parse("env.yml", []byte("remote:\n  host: a\nbastion:\n  enabled: false\n  host: j\n"))
	if err != nil || e.SSH.Jump != nil {
		t.Errorf("disabled bastion: jump=%+v err=%v", e.SSH.Jump, err)
	}
}

func TestParseErrors(t *testing.T) {
	const key = "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n-----END OPENSSH PRIVATE KEY-----"
	tests := []struct {
		name, in string
		want     string // "env.yml:LINE: substring"
	}{
		{"empty", "", "env.yml:1: empty file"},
		{"comment only", "# nothing\n", "env.yml:1: empty file"},
		{"not a mapping", "- a\n- b\n", "env.yml:1: top level must be a mapping"},
		{"syntax tab", "hosts:\n  - {name: a, address: b}\nssh:\n  user: x\n\tport: 1\n", "env.yml:5: found a tab character"}, // the tab's line (yaml.v3 said 4),
		{"syntax mapping", "a: b\nc: d: e\n", "env.yml:2: mapping values are not allowed"},
		{"unknown top key", "hosts:\n  - {name: a, address: b}\nhostz: []\n", `env.yml:3: unknown key "hostz"`},
		{"unknown nested key", "ssh:\n  user: u\n  timout_s: 5\nhosts:\n  - {name: a, address: b}\n", `env.yml:3: unknown key "ssh.timout_s"`},
		{"unknown host key", "hosts:\n  - name: a\n    address: b\n    adress: c\n", `env.yml:4: unknown key "hosts[0].adress"`},
		{"duplicate key", "hosts:\n  - name: a\n    name: b\n    address: c\n", "env.yml:3: hosts[0].name: duplicate key"},
		{"wrong type", "ssh:\n  port: twenty\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: cannot construct !!str `twenty` into int"},
		{"hosts not list", "hosts:\n  name: a\n", "env.yml:2: hosts: expected a list"},
		{"no hosts", "ssh:\n  user: u\n", "env.yml:1: no hosts"},
		{"remote host empty", "remote:\n  user: u\n", "env.yml:1: remote.host not set"},
		{"remote and hosts", "remote:\n  host: a\nhosts:\n  - {name: a, address: b}\n", "env.yml:1: use either remote"},
		{"timeout above ceiling", "ssh:\n  timeout_s: 31\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.timeout_s 31: must be between 1 and 30"},
		{"timeout negative", "ssh:\n  timeout_s: -1\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.timeout_s -1"},
		{"dstgen timeout above ceiling", "dstgen:\n  ssh_timeout_s: 60\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: dstgen.ssh_timeout_s 60"},
		{"timeouts disagree", "ssh:\n  timeout_s: 10\ndstgen:\n  ssh_timeout_s: 20\nhosts:\n  - {name: a, address: b}\n", "env.yml:4: dstgen.ssh_timeout_s 20 disagrees"},
		{"keepalive negative", "ssh:\n  keepalive_s: -2\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.keepalive_s"},
		{"port range", "hosts:\n  - name: a\n    address: b\n    port: 70000\n", "env.yml:2: host a: port 70000 is out of range"},
		{"ssh port range", "ssh:\n  port: -1\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.port -1 is out of range"},
		{"duplicate host", "hosts:\n  - {name: a, address: b}\n  - {name: a, address: c}\n", `env.yml:3: host name "a" is used twice`},
		{"host name injection", "hosts:\n  - {name: 'a;reboot', address: b}\n", `env.yml:2: host name "a;reboot"`},
		{"host name subst", "hosts:\n  - {name: '$(id)', address: b}\n", `env.yml:2: host name "$(id)"`},
		{"host name leading dash", "hosts:\n  - {name: -oProxyCommand, address: b}\n", `env.yml:2: host name "-oProxyCommand"`},
		{"host name all", "hosts:\n  - {name: all, address: b}\n", `env.yml:2: host name "all" is reserved`},
		{"host name empty", "hosts:\n  - {address: b}\n", "env.yml:2: host 1: name is empty"},
		{"address empty", "hosts:\n  - {name: a}\n", "env.yml:2: host a: address is empty"},
		{"address injection", "hosts:\n  - {name: a, address: 'b`id`'}\n", "env.yml:2: host a: address"},
		{"address option", "hosts:\n  - {name: a, address: -oProxyCommand=x}\n", "env.yml:2: host a: address"},
		{"role injection", "hosts:\n  - {name: a, address: b, roles: ['x y']}\n", `env.yml:2: host a: role "x y"`},
		{"user injection", "ssh:\n  user: 'r;id'\nhosts:\n  - {name: a, address: b}\n", `env.yml:2: ssh.user "r;id"`},
		{"workdir relative", "workdir: opt/x\nhosts:\n  - {name: a, address: b}\n", "env.yml:1: workdir must be an absolute"},
		{"workdir root", "workdir: /\nhosts:\n  - {name: a, address: b}\n", "env.yml:1: workdir must not be /"},
		{"workdir dotdot", "workdir: /opt/../etc\nhosts:\n  - {name: a, address: b}\n", "env.yml:1: workdir must not contain .."},
		{"tier", "dstgen:\n  tier: huge\nhosts:\n  - {name: a, address: b}\n", `env.yml:2: dstgen.tier "huge"`},
		{"jump without host", "ssh:\n  jump:\n    user: u\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: jump host: host is empty"},
		{"bastion and jump", "ssh:\n  jump: {host: j}\nbastion: {enabled: true, host: k}\nremote: {host: a}\n", "env.yml:3: use either bastion"},
		{"tilde user", "ssh:\n  key: ~bob/id\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ~user paths"},
		{"inline key in key", "ssh:\n  key: \"" + key + "\"\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.key looks like inline private key material"},
		{"inline key in parameters", "hosts:\n  - {name: a, address: b}\nparameters:\n  secret: |\n    -----BEGIN RSA PRIVATE KEY-----\n    MIIE\n", "env.yml:4: parameters.secret looks like inline private key"},
		{"inline key in int field", "ssh:\n  port: \"" + key + "\"\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.port looks like inline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("env.yml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, strings.SplitN(tc.want, ": ", 2)[0]+":") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, tc.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if strings.Contains(msg, "b3BlbnNzaC1rZXktdjE") || strings.Contains(msg, "MIIE") {
				t.Errorf("error echoes key material: %q", msg)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "env.yml")
	if err := os.WriteFile(p, []byte("hosts:\n  - {name: a, address: b, port: 0}\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+":3: unknown key") {
		t.Fatalf("err = %v, want %s:3: unknown key", err, p)
	}
	if _, err := Load(filepath.Join(dir, "missing.yml")); err == nil || !strings.HasPrefix(err.Error(), "read env file: open ") || !strings.Contains(err.Error(), "missing.yml") {
		t.Fatalf("missing file: %v", err)
	}
	// A device never ends: the read stops at maxEnvBytes.
	if _, err := Load("/dev/zero"); !errors.Is(err, fileline.ErrTooLarge) || !strings.HasPrefix(err.Error(), "/dev/zero: file too large") {
		t.Fatalf("/dev/zero: %v", err)
	}
}

func TestExampleParses(t *testing.T) {
	e, err := Load("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Hosts) != 3 || e.SSH.Jump == nil || e.Benchmark.Rate != 20 || e.Parameters["replicas"] != 3 {
		t.Errorf("loaded %+v", e)
	}
}

func TestSelect(t *testing.T) {
	e, err := Parse("env.yml", []byte(`
hosts:
  - {name: n1, address: a, roles: [db, leader]}
  - {name: n2, address: b, roles: [db]}
  - {name: c1, address: c, roles: [client]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target string
		want   string // names joined, or "error: substring"
	}{
		{"all", "n1,n2,c1"},
		{"n2", "n2"},
		{"role:db", "n1,n2"},
		{"role:client", "c1"},
		{"c1,role:leader", "n1,c1"},
		{"n1,n1", "n1"},
		{"nope", `error: unknown target "nope"; valid: all, role:client, role:db, role:leader, n1, n2, c1`},
		{"role:web", `error: unknown target "role:web"`},
		{"", "error: empty target"},
		{"n1;reboot", `error: unknown target "n1;reboot"`},
		{"role:", `error: unknown target "role:"`},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			hs, err := e.Select(tc.target)
			if strings.HasPrefix(tc.want, "error: ") {
				if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(tc.want, "error: ")) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range hs {
				names = append(names, h.Name)
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// FuzzLoad: any input either loads into a valid Env or fails with a
// one-line file:line error that never echoes key material; never panics.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"hosts:\n  - {name: a, address: b}\n",
		"remote:\n  host: x\nbastion: {enabled: true, host: j}\n",
		"ssh:\n  timeout_s: 31\n",
		"hosts: [{name: a, address: b, roles: [x]}]\nparameters: {k: [1, {a: b}]}\n",
		"a: &x {b: *x}\n",
		"ssh:\n  key: \"-----BEGIN KEY\"\n",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("testdata/full.yml"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse("env.yml", data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "env.yml:") {
				t.Fatalf("error without file:line: %q", msg)
			}
			if strings.ContainsAny(msg, "\n") {
				t.Fatalf("multi-line error: %q", msg)
			}
			if strings.Contains(msg, "-----BEGIN") {
				t.Fatalf("error echoes key material: %q", msg)
			}
			return
		}
		if len(e.Hosts) == 0 || e.SSH.TimeoutS < 1 || e.SSH.TimeoutS > MaxTimeoutS || e.SSH.Port < 1 || e.SSH.KeepaliveS < 1 {
			t.Fatalf("accepted invalid env: %+v", e)
		}
		seen := map[string]bool{}
		for _, h := range e.Hosts {
			if !nameRE.MatchString(h.Name) || seen[h.Name] || h.Address == "" || h.Port < 1 || h.Port > 65535 || h.User == "" {
				t.Fatalf("accepted invalid host: %+v", h)
			}
			for _, f := range []string{"address", "port", "user", "key", "known_hosts", "jump"} {
				if h.Sources[f] == "" {
					t.Fatalf("host %s: no source for %s: %+v", h.Name, f, h.Sources)
				}
			}
			seen[h.Name] = true
		}
	})
}

// exampleEnv is shaped like a generated env.example.yml: a long comment
// header and a comment above every key, so a line number that lands on the
// enclosing construct (what yaml.v3 reported) is visibly wrong.
const exampleEnv = `# env.example.yml — where the SUT is tested.
#
#   cp env.example.yml env.yml
#   $EDITOR env.yml
#
# Never put a secret in this file.

# How every host is reached unless the host entry overrides it.
ssh:
  # SSH login user on every host.
  user: "root"
  # Private key file (a path, never the key itself).
  key: "~/.ssh/id_ed25519"
  # Default SSH port of every host.
  port: 22
  # Ceiling of every SSH round trip in seconds.
  timeout_s: 30

# Remote work dir on every host.
workdir: /opt/dstgen

# Machines under test.
hosts:
  # role etcd: runs etcd
  - name: "etcd-1"
    # IP or DNS name the control node can reach.
    address: "192.0.2.11"
    # SSH port of this host (0 = ssh.port).
    port: 0
    # What runs here.
    roles: ["etcd"]
  # role client: runs workloads
  - name: "client-1"
    # IP or DNS name the control node can reach.
    address: "192.0.2.14"
    # SSH port of this host (0 = ssh.port).
    port: 0
    # What runs here.
    roles: ["client"]

# Benchmark parameters.
benchmark:
  # Target operations per second.
  rate: 100
  # Duration of one run in seconds.
  duration: 60
`

// TestYAMLErrorLines: a syntax or type error names the line of the bad
// token, not the start of the enclosing mapping or the comment above it.
func TestYAMLErrorLines(t *testing.T) {
	if _, err := Parse("env.yml", []byte(exampleEnv)); err != nil {
		t.Fatalf("unedited example: %v", err)
	}
	tests := []struct {
		name string
		line int    // 1-based line replaced
		with string // its new text
		want string // "env.yml:N: substring"
	}{
		{"bad value", 29, "    port: twenty", "env.yml:29: cannot construct !!str `twenty` into int"},
		{"bad value top level", 44, "  rate: fast", "env.yml:44: cannot construct !!str `fast` into float64"},
		{"indentation too deep", 27, `      address: "192.0.2.11"`, "env.yml:27: did not find expected key"},
		{"indentation too shallow", 27, `   address: "192.0.2.11"`, "env.yml:27: did not find expected '-' indicator"},
		{"dash inside a mapping", 29, "    - port: 0", "env.yml:29: did not find expected key"},
		{"missing colon", 11, `  user "root"`, "env.yml:13: did not find expected key (while parsing a block mapping at line 9)"},
		{"unterminated double quote", 27, `    address: "192.0.2.11`, "env.yml:27: unclosed quoted scalar (yaml then failed at line 31"},
		{"unterminated single quote", 27, `    address: '192.0.2.11`, "env.yml:27: unclosed quoted scalar (yaml then failed at line 47: found unexpected end of stream)"},
		{"unclosed flow sequence", 31, `    roles: ["etcd"`, "env.yml:31: unclosed flow sequence (yaml then failed at line 33"},
		{"tab indent", 27, "\taddress: \"192.0.2.11\"", "env.yml:27: found character that cannot start any token"},
		{"two values", 27, `    address: a: b`, "env.yml:27: mapping values are not allowed in this context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := strings.Split(exampleEnv, "\n")
			lines[tc.line-1] = tc.with
			_, err := Parse("env.yml", []byte(strings.Join(lines, "\n")))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q\nwant prefix %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// TestParseSchema: the per-host, sut: and benchmark.driver keys are
// validated, defaulted and resolved relative to the env file.
func TestParseSchema(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"conf/etcd.conf.tmpl", "workload/main.go"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(dir, "env.yml")
	e, err := Parse(name, []byte(`
hosts:
  - name: n1
    address: 10.0.0.1
    roles: [etcd]
    workdir: /opt/dstgen/n1/
    vars: {client_port: 2379, _peer: x}
  - {name: c1, address: 10.0.0.2, roles: [client]}
sut:
  roles: [etcd]
  install:
    artifact: build/etcd
  configs:
    - template: conf/etcd.conf.tmpl
      dest: /etc/etcd.conf
benchmark:
  driver: ./workload
`))
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	want("host workdir (cleaned)", e.Hosts[0].Workdir, "/opt/dstgen/n1")
	want("HostWorkdir of a host without one", e.HostWorkdir(e.Hosts[1]), DefaultWorkdir)
	want("vars", e.Hosts[0].Vars["client_port"], 2379)
	want("sut.run default", e.SUT.Run, "auto")
	want("sut.name default", e.SUT.Name, "sut")
	want("sut.ready_timeout_s default", e.SUT.ReadyTimeoutS, 60)
	want("artifact", e.SUT.Install.Artifact, filepath.Join(dir, "build/etcd"))
	want("template", e.SUT.Configs[0].Template, filepath.Join(dir, "conf/etcd.conf.tmpl"))
	want("config line", e.SUT.Configs[0].Line, 14)
	want("driver", e.Benchmark.Driver, filepath.Join(dir, "workload"))

	const two = "hosts:\n  - {name: a, address: b, roles: [db]}\n  - {name: c, address: d, roles: [client]}\n"
	bad := []struct {
		name, in, want string
	}{
		{"host workdir relative", "hosts:\n  - name: a\n    address: b\n    workdir: opt/x\n", "env.yml:4: host a: workdir must be an absolute remote path"},
		{"host workdir root", "hosts:\n  - name: a\n    address: b\n    workdir: /./\n", "env.yml:4: host a: workdir must not be /"},
		{"host workdir dotdot", "hosts:\n  - name: a\n    address: b\n    workdir: /opt/../etc\n", "env.yml:4: host a: workdir must not contain .."},
		{"vars not a mapping", "hosts:\n  - name: a\n    address: b\n    vars: [x]\n", "env.yml:4: hosts[0].vars: expected a mapping"},
		{"vars key with dash", "hosts:\n  - name: a\n    address: b\n    vars:\n      ok_1: 1\n      client-port: 2\n", `env.yml:6: host a: vars key "client-port"`},
		{"vars key leading digit", "hosts:\n  - name: a\n    address: b\n    vars: {1x: 2}\n", `env.yml:4: host a: vars key "1x"`},
		{"sut run", two + "sut:\n  run: docker\n", `env.yml:5: sut.run "docker": want auto, systemd or job`},
		{"sut role nobody has", two + "sut:\n  roles:\n    - db\n    - etcd\n", `env.yml:7: sut.roles: no host has role "etcd"`},
		{"sut name unsafe", two + "sut:\n  name: 'etcd;rm'\n", `env.yml:5: sut.name "etcd;rm"`},
		{"sut name leading dash", two + "sut:\n  name: -x\n", `env.yml:5: sut.name "-x"`},
		{"sut name too long", two + "sut:\n  name: " + strings.Repeat("a", 33) + "\n", "env.yml:5: sut.name"},
		{"ready timeout negative", two + "sut:\n  ready_timeout_s: -1\n", "env.yml:5: sut.ready_timeout_s must not be negative"},
		{"template missing", two + "sut:\n  configs:\n    - dest: /etc/x\n    - template: nope.tmpl\n", "env.yml:6: sut.configs[0]: template is empty"},
		{"template not found", two + "sut:\n  configs:\n    - template: nope.tmpl\n", "env.yml:6: sut.configs[0].template: stat " + filepath.Join(dir, "nope.tmpl")},
		{"template is a dir", two + "sut:\n  configs:\n    - {template: conf}\n", "env.yml:6: sut.configs[0].template " + filepath.Join(dir, "conf") + " is not a regular file"},
		{"driver not found", two + "benchmark:\n  driver: nope\n", "env.yml:5: benchmark.driver: stat " + filepath.Join(dir, "nope")},
		{"driver is a file", two + "benchmark:\n  driver: conf/etcd.conf.tmpl\n", "env.yml:5: benchmark.driver " + filepath.Join(dir, "conf/etcd.conf.tmpl") + " is not a directory"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, "env.yml"), []byte(tc.in))
			want := filepath.Join(dir, tc.want)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %v\nwant prefix %q", err, want)
			}
		})
	}
}

// TestDuplicateAddress: two entries for one sshd (same address and port)
// are an error naming the second entry's line and the first's name; the
// same address on other ports is several sshd on one machine.
func TestDuplicateAddress(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" = loads
	}{
		{"same address and port", "hosts:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n  - name: c\n    address: 10.0.0.1\n", "env.yml:4: host c: address 10.0.0.1 port 22 is already host a's"},
		{"default port equals explicit", "hosts:\n  - {name: a, address: h.example}\n  - {name: b, address: H.example, port: 22}\n", "env.yml:3: host b: address H.example port 22 is already host a's"},
		{"ssh.port applies to both", "ssh:\n  port: 2200\nhosts:\n  - {name: a, address: x}\n  - {name: b, address: x}\n", "env.yml:5: host b: address x port 2200 is already host a's"},
		{"same address other ports", "hosts:\n  - {name: a, address: 127.0.0.1, port: 2201}\n  - {name: b, address: 127.0.0.1, port: 2202}\n  - {name: c, address: 127.0.0.1}\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(SSHConfigEnv, "none")
			_, err := Parse("env.yml", []byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant prefix %q", err, tc.want)
			}
		})
	}
}

// sut.bootstrap is refused at load, with its line, unless an ordered
// start can run: both commands, sut.command, a health command per role.
func TestBootstrapValidation(t *testing.T) {
	const hosts = "hosts:\n  - {name: a, address: b, roles: [db]}\n  - {name: c, address: d, roles: [db, client]}\n"
	const good = "sut:\n  roles: [db]\n  command: db\n  bootstrap:\n    command: db --new\n    rank: cat seqno\n  health:\n    db: db-ping\n"
	for _, c := range []struct{ name, in, want string }{
		{"good", hosts + good, ""},
		{"null bootstrap", hosts + "sut:\n  command: db\n  bootstrap: null\n", ""},
		{"init only", hosts + "sut:\n  command: db\n  init: db-init\n", ""},
		{"empty command", hosts + "sut:\n  roles: [db]\n  command: db\n  bootstrap:\n    rank: cat seqno\n  health: {db: ping}\n", "env.yml:7: sut.bootstrap.command is empty"},
		{"empty rank", hosts + "sut:\n  roles: [db]\n  command: db\n  bootstrap:\n    command: db --new\n    rank: ' '\n  health: {db: ping}\n", "env.yml:9: sut.bootstrap.rank is empty"},
		{"no sut.command", hosts + "sut:\n  roles: [db]\n  bootstrap:\n    command: db --new\n    rank: r\n  health: {db: ping}\n", "env.yml:6: sut.bootstrap needs sut.command"},
		{"no health", hosts + "sut:\n  roles: [db]\n  command: db\n  bootstrap:\n    command: db --new\n    rank: r\n", `env.yml:7: sut.bootstrap needs a sut.health command for role "db"`},
		{"health of another role only", hosts + "sut:\n  roles: [db]\n  command: db\n  bootstrap: {command: x, rank: r}\n  health: {client: ping}\n", `env.yml:7: sut.bootstrap needs a sut.health command for role "db"`},
		{"every host is SUT: every role needs health", hosts + "sut:\n  command: db\n  bootstrap: {command: x, rank: r}\n  health: {db: ping}\n", `env.yml:6: sut.bootstrap needs a sut.health command for role "client"`},
		{"typo", hosts + "sut:\n  command: db\n  bootstrap: {comand: x, rank: r}\n", `env.yml:6: unknown key "sut.bootstrap.comand"`},
		{"not a mapping", hosts + "sut:\n  command: db\n  bootstrap: mariadbd --wsrep-new-cluster\n", "env.yml:6: sut.bootstrap: expected a mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse("env.yml", []byte(c.in))
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.name == "good" && (e.SUT.Bootstrap == nil || e.SUT.Bootstrap.Command != "db --new" || e.SUT.Bootstrap.Rank != "cat seqno") {
					t.Errorf("bootstrap = %+v", e.SUT.Bootstrap)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line starting %q", err, c.want)
			}
		})
	}
}

// sut.secrets names files: anything else, or a name twice, is refused at
// load with its line.
func TestSecretsValidation(t *testing.T) {
	const hosts = "hosts:\n  - {name: a, address: b, roles: [db]}\n"
	for _, c := range []struct{ name, in, want string }{
		{"good", hosts + "sut:\n  secrets: [db_pass, api.key-1]\n", ""},
		{"none", hosts + "sut:\n  secrets: []\n", ""},
		{"slash", hosts + "sut:\n  secrets: [a/b]\n", `env.yml:4: sut.secrets[0] "a/b": a name`},
		{"dot dot", hosts + "sut:\n  secrets:\n    - ok\n    - ..\n", `env.yml:6: sut.secrets[1] ".."`},
		{"leading dash", hosts + "sut:\n  secrets: [-x]\n", `env.yml:4: sut.secrets[0] "-x"`},
		{"empty", hosts + "sut:\n  secrets: ['']\n", `env.yml:4: sut.secrets[0] ""`},
		{"twice", hosts + "sut:\n  secrets: [p, p]\n", `env.yml:4: sut.secrets[1] "p" is listed twice`},
		{"not a list", hosts + "sut:\n  secrets: p\n", "env.yml:4:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse("env.yml", []byte(c.in))
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.name == "good" && strings.Join(e.SUT.Secrets, ",") != "db_pass,api.key-1" {
					t.Errorf("secrets = %q", e.SUT.Secrets)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line starting %q", err, c.want)
			}
		})
	}
}
