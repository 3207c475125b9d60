package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain keeps the developer's own ~/.ssh/config out of every test of
// this package; the tests of ssh_config support set their own file.
func TestMain(m *testing.M) {
	_ = os.Setenv(SSHConfigEnv, "none")
	os.Exit(m.Run())
}

// writeSSHConfig writes an OpenSSH config and points DSTGEN_SSH_CONFIG at it.
func writeSSHConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(SSHConfigEnv, p)
	return p
}

// jumpString is a Jump as user@host:port key, or "none".
func jumpString(j *Jump) string {
	if j == nil {
		return "none"
	}
	return fmt.Sprintf("%s@%s:%d key=%s", j.User, j.Host, j.Port, j.Key)
}

// TestSSHConfigResolve: a host address naming a Host block of the OpenSSH
// config takes HostName, Port, User, IdentityFile, UserKnownHostsFile and
// ProxyJump from it unless env.yml sets them explicitly; every SSH field
// says where it came from.
func TestSSHConfigResolve(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home dir")
	}
	const cfg = `# my machines
Host etcd-1
  HostName 10.77.0.11
  Port 2201
  IdentityFile ~/.ssh/lab_ed25519
  UserKnownHostsFile ~/.ssh/lab_known_hosts ~/.ssh/other
  ProxyJump bastion
Host etcd-2
  HostName 10.77.0.12
  ProxyJump jumper@10.77.0.1:2222
Host etcd-*
  HostName 10.77.0.%h
  User ops
Host bastion
  HostName 10.77.0.1
  User jump
  Port 2022
  IdentityFile %d/.ssh/jump_key
Host *.lab
  ProxyJump none
`
	type want struct {
		address, port, user, key, knownHosts, jump string // jump as jumpString
		src                                        map[string]string
	}
	kh := filepath.Join(home, ".ssh/known_hosts")
	tests := []struct {
		name string
		yml  string // env.yml
		want want
	}{
		{
			name: "alias fills every field",
			yml:  "hosts:\n  - name: e1\n    address: etcd-1\n",
			want: want{"10.77.0.11", "2201", "ops", filepath.Join(home, ".ssh/lab_ed25519"), filepath.Join(home, ".ssh/lab_known_hosts"),
				"jump@10.77.0.1:2022 key=" + filepath.Join(home, ".ssh/jump_key"),
				map[string]string{"address": "CFG:3", "port": "CFG:4", "user": "CFG:13", "key": "CFG:5", "known_hosts": "CFG:6", "jump": "CFG:7"}},
		},
		{
			name: "host-level values win",
			yml:  "hosts:\n  - name: e1\n    address: etcd-1\n    port: 22\n    user: admin\n    key: k/id\n    known_hosts: kh\n    jump: {host: j.example}\n",
			want: want{"10.77.0.11", "22", "admin", "ENVDIR/k/id", "ENVDIR/kh", "root@j.example:22 key=",
				map[string]string{"address": "CFG:3", "port": "ENV:4", "user": "ENV:5", "key": "ENV:6", "known_hosts": "ENV:7", "jump": "ENV:8"}},
		},
		{
			name: "explicit ssh: values win, defaults do not",
			yml:  "ssh:\n  user: deploy\n  port: 2000\n  key: /k/id\n  known_hosts: /k/kh\n  jump: {host: gw, user: g}\nhosts:\n  - name: e1\n    address: etcd-1\n",
			want: want{"10.77.0.11", "2000", "deploy", "/k/id", "/k/kh", "g@gw:22 key=/k/id",
				map[string]string{"address": "CFG:3", "port": "ENV:3", "user": "ENV:2", "key": "ENV:4", "known_hosts": "ENV:5", "jump": "ENV:6"}},
		},
		{
			name: "pattern block and literal ProxyJump",
			yml:  "hosts:\n  - {name: e2, address: etcd-2}\n",
			want: want{"10.77.0.12", "22", "ops", "", kh, "jumper@10.77.0.1:2222 key=",
				map[string]string{"address": "CFG:9", "port": "default", "user": "CFG:13", "key": "default", "known_hosts": "default", "jump": "CFG:10"}},
		},
		{
			name: "HostName token %h",
			yml:  "hosts:\n  - {name: e9, address: etcd-9}\n",
			want: want{"10.77.0.etcd-9", "22", "ops", "", kh, "none",
				map[string]string{"address": "CFG:12", "port": "default", "user": "CFG:13", "key": "default", "known_hosts": "default", "jump": "default"}},
		},
		{
			name: "unknown alias is just an address",
			yml:  "hosts:\n  - {name: x, address: 192.0.2.5}\n",
			want: want{"192.0.2.5", "22", "root", "", kh, "none",
				map[string]string{"address": "ENV:2", "port": "default", "user": "default", "key": "default", "known_hosts": "default", "jump": "default"}},
		},
		{
			name: "ProxyJump none",
			yml:  "hosts:\n  - {name: x, address: db.lab}\n",
			want: want{"db.lab", "22", "root", "", kh, "none",
				map[string]string{"address": "ENV:2", "port": "default", "user": "default", "key": "default", "known_hosts": "default", "jump": "CFG:20"}},
		},
		{
			name: "remote: shorthand",
			yml:  "remote:\n  host: etcd-1\n  user: me\n",
			want: want{"10.77.0.11", "2201", "me", filepath.Join(home, ".ssh/lab_ed25519"), filepath.Join(home, ".ssh/lab_known_hosts"),
				"jump@10.77.0.1:2022 key=" + filepath.Join(home, ".ssh/jump_key"),
				map[string]string{"address": "CFG:3", "port": "CFG:4", "user": "ENV:3", "key": "CFG:5", "known_hosts": "CFG:6", "jump": "CFG:7"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgPath := writeSSHConfig(t, cfg)
			dir := t.TempDir()
			envPath := filepath.Join(dir, "env.yml")
			e, err := Parse(envPath, []byte(tc.yml))
			if err != nil {
				t.Fatal(err)
			}
			h := e.Hosts[0]
			expand := func(s string) string {
				s = strings.ReplaceAll(s, "CFG:", cfgPath+":")
				s = strings.ReplaceAll(s, "ENV:", envPath+":")
				return strings.ReplaceAll(s, "ENVDIR", dir)
			}
			got := want{h.Address, fmt.Sprint(h.Port), h.User, h.Key, h.KnownHosts, jumpString(h.Jump), nil}
			w := tc.want
			w.key, w.knownHosts, w.jump, w.src = expand(w.key), expand(w.knownHosts), expand(w.jump), nil
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("resolved\n got %+v\nwant %+v", got, w)
			}
			for _, f := range []string{"address", "port", "user", "key", "known_hosts", "jump"} {
				if g, wv := h.Sources[f], expand(tc.want.src[f]); g != wv {
					t.Errorf("Sources[%s] = %q, want %q", f, g, wv)
				}
			}
		})
	}
}

// TestSSHConfigChoice: which file is read — DSTGEN_SSH_CONFIG, then
// ssh.config (relative to env.yml), "none" reads nothing, and a missing
// default file is no error while a missing named one is.
func TestSSHConfigChoice(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lab.conf"), []byte("Host n1\n  HostName 10.77.0.7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	envPath := filepath.Join(dir, "env.yml")
	const hosts = "hosts:\n  - {name: a, address: n1}\n"
	addr := func(yml string) (string, error) {
		e, err := Parse(envPath, []byte(yml))
		if err != nil {
			return "", err
		}
		return e.Hosts[0].Address, nil
	}

	t.Setenv(SSHConfigEnv, "")
	if got, err := addr("ssh:\n  config: lab.conf\n" + hosts); err != nil || got != "10.77.0.7" {
		t.Errorf("ssh.config relative to env.yml: %q, %v", got, err)
	}
	if got, err := addr("ssh:\n  config: none\n" + hosts); err != nil || got != "n1" {
		t.Errorf("ssh.config none: %q, %v", got, err)
	}
	if _, err := addr("ssh:\n  config: missing.conf\n" + hosts); err == nil || !strings.HasPrefix(err.Error(), envPath+":2: ssh.config: read OpenSSH config:") {
		t.Errorf("missing ssh.config: %v", err)
	}
	t.Setenv("HOME", t.TempDir()) // no ~/.ssh/config there
	if got, err := addr(hosts); err != nil || got != "n1" {
		t.Errorf("missing default ~/.ssh/config: %q, %v", got, err)
	}
	// env.example.yml spells the default out; that is still the default.
	if got, err := addr("ssh:\n  config: ~/.ssh/config\n" + hosts); err != nil || got != "n1" {
		t.Errorf("ssh.config: ~/.ssh/config written out, file missing: %q, %v", got, err)
	}

	t.Setenv(SSHConfigEnv, "none")
	if got, err := addr("ssh:\n  config: lab.conf\n" + hosts); err != nil || got != "n1" {
		t.Errorf("DSTGEN_SSH_CONFIG=none over ssh.config: %q, %v", got, err)
	}
	t.Setenv(SSHConfigEnv, filepath.Join(dir, "nope"))
	if _, err := addr(hosts); err == nil || !strings.HasPrefix(err.Error(), SSHConfigEnv+"=") {
		t.Errorf("missing DSTGEN_SSH_CONFIG file: %v", err)
	}
}

// TestSSHConfigErrors: a broken or unusable config line is an error naming
// the config file and line.
func TestSSHConfigErrors(t *testing.T) {
	tests := []struct {
		name, cfg, yml string
		line           int
		want           string
	}{
		{"unsupported Match", "Host a\n  User u\n\nMatch exec \"true\"\n  User v\n", "", 4, "Match Exec is not supported (set ssh.config: none"},
		{"bad Match criterion", "Match nothing\n", "", 1, `unsupported Match criterion "nothing"`},
		{"port not a number", "Host a\n  Port 22 # ok\nHost b\n  Port twenty-two\n", "b", 4, `Port "twenty-two" is not a port number`},
		{"port out of range", "Host b\n  Port 70000\n", "b", 2, `Port "70000"`},
		{"bad user", "Host b\n  User 'r;id'\n", "b", 2, `User "'r;id'" is not a valid user name`},
		{"bad HostName", "Host b\n  HostName -oProxyCommand=x\n", "b", 2, `HostName "-oProxyCommand=x"`},
		{"unsupported token", "Host b\n  IdentityFile ~/.ssh/%C\n", "b", 2, "token %C is not supported"},
		{"several hops", "Host b\n  ProxyJump j1,j2\n", "b", 2, `ProxyJump "j1,j2" has several hops`},
		{"jump of jump", "Host b\n  ProxyJump j\nHost j\n  ProxyJump k\n", "b", 4, "jump host j has a ProxyJump of its own"},
		{"bad jump port", "Host b\n  ProxyJump j:x\n", "b", 2, `ProxyJump port "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeSSHConfig(t, tc.cfg)
			addr := tc.yml
			if addr == "" {
				addr = "a"
			}
			_, err := Parse("env.yml", []byte("hosts:\n  - {name: h, address: "+addr+"}\n"))
			want := fmt.Sprintf("%s:%d: %s", p, tc.line, tc.want)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %v\nwant prefix %q", err, want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// TestSSHConfigDuplicateAddress: two aliases resolving to one sshd are
// caught after resolution.
func TestSSHConfigDuplicateAddress(t *testing.T) {
	writeSSHConfig(t, "Host one two\n  HostName 10.77.0.3\n")
	_, err := Parse("env.yml", []byte("hosts:\n  - {name: a, address: one}\n  - {name: b, address: two}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "env.yml:3: host b: address 10.77.0.3 port 22 is already host a's") {
		t.Errorf("err = %v", err)
	}
}

// TestSSHConfigMatchesOpenSSH cross-checks the resolution against OpenSSH
// itself: `ssh -G` prints the config ssh would use for an alias without
// connecting. HostName, Port, a configured User, the first IdentityFile
// and the first UserKnownHostsFile must agree for every alias, including
// first-value-wins across blocks, negated patterns, "Key=value" and quotes.
func TestSSHConfigMatchesOpenSSH(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no ssh client")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home dir")
	}
	cfg := writeSSHConfig(t, `Host etcd-1
  HostName 10.77.0.11
  Port 2201
  IdentityFile ~/.ssh/lab_ed25519
  UserKnownHostsFile ~/.ssh/lab_known_hosts ~/.ssh/other
Host etcd-2 etcd-3
  Port=2202
  User "quoted"
Host !etcd-3 etcd-*
  HostName 10.77.0.%h
  User ops
Host *.lab
  IdentityFile ~/.ssh/lab_key
  User labuser
Host *
  Port 2200
`)
	for _, alias := range []string{"etcd-1", "etcd-2", "etcd-3", "etcd-9", "db.lab", "plain.example"} {
		t.Run(alias, func(t *testing.T) {
			e, err := Parse("env.yml", []byte("hosts:\n  - {name: h, address: "+alias+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			h := e.Hosts[0]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, sshBin, "-G", "-F", cfg, alias).Output()
			if err != nil {
				t.Fatalf("ssh -G: %v", err)
			}
			g := map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				k, v, _ := strings.Cut(line, " ")
				if _, seen := g[k]; !seen {
					g[k] = v // first identityfile / known_hosts file
				}
			}
			if first, _, _ := strings.Cut(g["userknownhostsfile"], " "); h.Sources["known_hosts"] != "default" && first != h.KnownHosts {
				t.Errorf("known_hosts: dstgen %q, ssh %q", h.KnownHosts, first)
			}
			if h.Sources["key"] != "default" && strings.Replace(g["identityfile"], "~", home, 1) != h.Key {
				t.Errorf("key: dstgen %q, ssh %q", h.Key, g["identityfile"])
			}
			if g["hostname"] != h.Address || g["port"] != fmt.Sprint(h.Port) {
				t.Errorf("dstgen %s:%d, ssh %s:%s", h.Address, h.Port, g["hostname"], g["port"])
			}
			// Without a User in the config, ssh uses the local user and
			// dstgen root: only a configured User must agree.
			if strings.HasPrefix(h.Sources["user"], cfg) && g["user"] != h.User {
				t.Errorf("user: dstgen %q, ssh %q", h.User, g["user"])
			}
		})
	}
}

// TestSSHConfigNotRegular: a FIFO or a device named as the OpenSSH config
// is refused before it is opened: opening a FIFO blocks until a writer
// comes, so a check after the open would hang env loading.
func TestSSHConfigNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		t.Setenv(SSHConfigEnv, p)
		done := make(chan error, 1)
		go func() {
			_, err := Parse(filepath.Join(dir, "env.yml"), []byte("hosts:\n  - {name: a, address: n1}\n"))
			done <- err
		}()
		select {
		case err := <-done:
			if want := p + " is not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error containing %q", p, err, want)
			}
		case <-time.After(30 * time.Second):
			// Unblock the open so the goroutine ends, then fail.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = f.Close()
			}
			t.Fatalf("%s: loading env.yml hangs on the ssh config", p)
		}
	}
}
