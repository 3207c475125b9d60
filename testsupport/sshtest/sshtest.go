// Package sshtest starts real OpenSSH sshd servers for tests: a dedicated
// login user, fresh client and host keys per test, optional network
// namespaces for multi-host topologies, and a real ssh-agent. Everything it
// starts is stopped by PID, and everything it creates is removed, in
// t.Cleanup. Tests skip (with the reason) when not root or sshd is missing.
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// User is the login user every test sshd accepts. Its shell is /bin/sh:
// root's ~/.bashrc on these machines is slow and would skew timings.
const User = "dstgentest"

const (
	sshdPath = "/usr/sbin/sshd"
	userHome = "/var/lib/dstgentest"
	lockPath = "/run/dstgen-sshtest.lock"
)

// Require skips t unless the real-sshd tests can run here.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshtest: needs root (creates a login user, runs sshd)")
	}
	if _, err := os.Stat(sshdPath); err != nil {
		t.Skipf("sshtest: %s missing (apt-get install openssh-server)", sshdPath)
	}
}

// EnsureUser creates the test login user once per machine; concurrent test
// binaries serialise on a lock file because useradd locks /etc/passwd.
func EnsureUser(t testing.TB) {
	t.Helper()
	Require(t)
	unlock := flock(t, lockPath, 60*time.Second)
	defer unlock()
	if err := exec.Command("id", "-u", User).Run(); err != nil {
		out, err := exec.Command("useradd", "--system", "--home-dir", userHome, "--create-home", "--shell", "/bin/sh", User).CombinedOutput()
		if err != nil {
			t.Fatalf("useradd %s: %v: %s", User, err, out)
		}
	}
	// sshd with UsePAM no refuses accounts whose password field is locked
	// ("!"); "*" means no password but not locked.
	if out, err := exec.Command("usermod", "-p", "*", User).CombinedOutput(); err != nil {
		t.Fatalf("usermod -p '*' %s: %v: %s", User, err, out)
	}
	if err := os.MkdirAll(filepath.Join(userHome, "auth"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// flock takes an exclusive lock on path, polling up to wait.
func flock(t testing.TB, path string, wait time.Duration) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock %s: %v", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			t.Fatalf("lock %s: still held after %s", path, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Keys are a test's client credentials. The private keys live in the
// test's temp dir; AuthorizedKeys lists both public keys.
type Keys struct {
	Dir          string
	Key          string // unencrypted ed25519 private key path
	EncryptedKey string // the same kind of key, passphrase-protected
	Passphrase   string
	PublicKeys   []string // authorized_keys lines for Key and EncryptedKey
	KnownHosts   string   // path; absent until Trust writes it
}

// NewKeys generates a fresh key pair set for t.
func NewKeys(t testing.TB) *Keys {
	t.Helper()
	dir := t.TempDir()
	k := &Keys{Dir: dir, Key: filepath.Join(dir, "id_ed25519"), EncryptedKey: filepath.Join(dir, "id_ed25519_enc"),
		Passphrase: "pw-" + randHex(8), KnownHosts: filepath.Join(dir, "known_hosts")}
	for i, path := range []string{k.Key, k.EncryptedKey} {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		var blk *pem.Block
		if i == 0 {
			blk, err = ssh.MarshalPrivateKey(priv, "dstgen-test")
		} else {
			blk, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "dstgen-test", []byte(k.Passphrase))
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
		sp, err := ssh.NewPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		k.PublicKeys = append(k.PublicKeys, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))))
	}
	return k
}

// Trust appends each server's host key to k.KnownHosts.
func (k *Keys) Trust(t testing.TB, srvs ...*Server) {
	t.Helper()
	f, err := os.OpenFile(k.KnownHosts, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range srvs {
		if _, err := fmt.Fprintln(f, s.HostKeyLine); err != nil {
			t.Fatal(err)
		}
	}
}

// Options shape one sshd.
type Options struct {
	NetNS string // run inside this network namespace (from NewNet)
	// Addr is the listen address: default 127.0.0.1, or the namespace's
	// address when NetNS is set.
	Addr string
	// Port: 0 picks a free loopback port (22 inside a namespace).
	Port int
	// Config holds extra sshd_config lines.
	Config []string
	// AuthorizedKeys overrides the accepted keys (default: all of Keys).
	AuthorizedKeys []string
}

// Server is one running sshd.
type Server struct {
	Addr        string // host:port to dial
	Host        string
	Port        int
	PID         int
	HostKey     ssh.PublicKey
	HostKeyLine string // known_hosts line for Addr
	User        string
	NetNS       string
	Dir         string
	LogPath     string // sshd's stderr (-e), LogLevel VERBOSE
}

// Start runs sshd for k and waits (bounded) until it listens.
func Start(t testing.TB, k *Keys, o Options) *Server {
	t.Helper()
	EnsureUser(t)
	dir := t.TempDir()
	host := o.Addr
	if host == "" {
		host = "127.0.0.1"
	}
	port := o.Port
	if port == 0 {
		if o.NetNS != "" {
			port = 22
		} else {
			port = FreePort(t)
		}
	}
	hostKeyPath := filepath.Join(dir, "ssh_host_ed25519_key")
	hpub, hpriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(hpriv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostKeyPath, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	hostKey, _ := ssh.NewPublicKey(hpub)

	// authorized_keys is read as the login user, who cannot enter the
	// root-only temp dir; give it a per-server dir under the user's home.
	authDir := filepath.Join(userHome, "auth", randHex(6))
	if err := os.MkdirAll(authDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(authDir) })
	auth := o.AuthorizedKeys
	if auth == nil && k != nil {
		auth = k.PublicKeys
	}
	authFile := filepath.Join(authDir, "authorized_keys")
	if err := os.WriteFile(authFile, []byte(strings.Join(auth, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := []string{
		"Port " + strconv.Itoa(port),
		"ListenAddress " + host,
		"HostKey " + hostKeyPath,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin no",
		"AllowUsers " + User,
		"AuthorizedKeysFile " + authFile,
		"StrictModes no",
		"LogLevel VERBOSE",
		"UseDNS no",
		"MaxStartups 100:30:200",
		"AllowTcpForwarding yes",
	}
	// sshd refuses a second Subsystem line for sftp, so a test that needs
	// another server (e.g. an external sftp-server it can stop) replaces it.
	if !slices.ContainsFunc(o.Config, func(l string) bool { return strings.HasPrefix(l, "Subsystem sftp ") }) {
		cfg = append(cfg, "Subsystem sftp internal-sftp")
	}
	cfg = append(cfg, o.Config...)
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "sshd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{sshdPath, "-D", "-e", "-f", cfgPath}
	if o.NetNS != "" {
		argv = append([]string{"ip", "netns", "exec", o.NetNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("start sshd: %v", err)
	}
	_ = logf.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	s := &Server{Addr: addr, Host: host, Port: port, PID: cmd.Process.Pid, HostKey: hostKey,
		HostKeyLine: knownhosts.Line([]string{knownhosts.Normalize(addr)}, hostKey),
		User:        User, NetNS: o.NetNS, Dir: dir, LogPath: logPath}
	t.Cleanup(func() {
		_ = syscall.Kill(s.PID, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(s.PID, syscall.SIGKILL)
			<-exited
		}
		// Per-connection children outlive the listener on SIGTERM.
		for _, pid := range descendants(s.PID, "sshd") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Log(), "Server listening on") {
		select {
		case <-exited:
			t.Fatalf("sshd exited at start:\n%s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd not listening on %s after 10s:\n%s", addr, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// test servers (sshd, etcd) that must be told their port up front.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Log returns what sshd has logged so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath)
	return string(b)
}

// Accepted counts successful logins, i.e. SSH connections the server took.
func (s *Server) Accepted() int {
	return strings.Count(s.Log(), "Accepted publickey for "+User)
}

// KillSessionChildren SIGKILLs every per-connection sshd process below the
// listener, dropping every connection the way a network cut or a server
// crash would. Processes the sessions started (shells, detached jobs) are
// left alone. Returns how many were killed.
func KillSessionChildren(t testing.TB, s *Server) int {
	t.Helper()
	pids := descendants(s.PID, "sshd")
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			t.Errorf("kill sshd child %d: %v", pid, err)
		}
	}
	return len(pids)
}

// descendants lists the processes below root whose comm is name (all when
// name is ""), read from /proc.
func descendants(root int, name string) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	comm := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// stat: pid (comm) state ppid ...; comm may contain spaces.
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(b[j+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		comm[pid] = string(b[i+1 : j])
	}
	var out []int
	for pid := range parent {
		if pid == root {
			continue
		}
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				if name == "" || comm[pid] == name {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// StartAgent runs a real ssh-agent on a socket in a temp dir and returns
// the socket path; it is stopped by PID in t.Cleanup.
func StartAgent(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dstgen-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Skipf("ssh-agent unavailable: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent socket %s not ready after 5s", sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// AddKey loads a private key into the agent at sock with ssh-add,
// answering a passphrase through SSH_ASKPASS (never on a terminal).
func AddKey(t testing.TB, sock, keyPath, passphrase string) {
	t.Helper()
	cmd := exec.Command("ssh-add", keyPath)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if passphrase != "" {
		dir := t.TempDir()
		pw := filepath.Join(dir, "pw")
		ask := filepath.Join(dir, "askpass")
		if err := os.WriteFile(pw, []byte(passphrase+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\ncat " + pw + "\n"
		if err := os.WriteFile(ask, []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "SSH_ASKPASS="+ask, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=none")
	}
	cmd.Stdin = nil
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add %s: %v: %s", keyPath, err, out)
	}
}

// WriteEnv writes an env.yml for srvs (hosts h1..hN, roles from roles[i]
// when given) using k's unencrypted key and known_hosts, plus extra YAML
// appended verbatim, and returns its path.
func (k *Keys) WriteEnv(t testing.TB, srvs []*Server, roles [][]string, extra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "ssh:\n  user: %s\n  key: %s\n  known_hosts: %s\n", User, k.Key, k.KnownHosts)
	b.WriteString("hosts:\n")
	for i, s := range srvs {
		fmt.Fprintf(&b, "  - name: h%d\n    address: %s\n    port: %d\n", i+1, s.Host, s.Port)
		if i < len(roles) && len(roles[i]) > 0 {
			fmt.Fprintf(&b, "    roles: [%s]\n", strings.Join(roles[i], ", "))
		}
	}
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Pgrep lists PIDs whose command line contains pattern (like pgrep -f),
// excluding the calling test process.
func Pgrep(pattern string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), pattern) {
			out = append(out, pid)
		}
	}
	return out
}

// Workdir makes a remote workdir the login User can write (t.TempDir's
// parents are private to root). At cleanup it SIGKILLs the process group of
// every job left under it (jobs/*/pgid, as dstgen job start records it),
// so a detached job never outlives its test, then removes the directory.
func Workdir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "dstgen-wd-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gs, _ := filepath.Glob(filepath.Join(d, "jobs", "*", "pgid"))
		for _, g := range gs {
			b, err := os.ReadFile(g)
			if err != nil {
				continue
			}
			if pg, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pg > 1 {
				_ = syscall.Kill(-pg, syscall.SIGKILL)
			}
		}
		_ = os.RemoveAll(d)
	})
	return d
}

// StartTrusted starts n default servers for k and records their host keys
// in k's known_hosts: the usual fixture of a multi-host test.
func StartTrusted(t testing.TB, k *Keys, n int) []*Server {
	t.Helper()
	srvs := make([]*Server, n)
	for i := range srvs {
		srvs[i] = Start(t, k, Options{})
	}
	k.Trust(t, srvs...)
	return srvs
}
