package runner

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

func mustRun(t *testing.T, p *Pool, h env.Host, cmd string) string {
	t.Helper()
	var out bytes.Buffer
	r, err := p.Run(context.Background(), h, cmd, nil, &out, nil)
	if err != nil || r.Status != StatusOK {
		t.Fatalf("run %q on %s: %+v %v", cmd, h.Name, r, err)
	}
	return out.String()
}

func TestConnectionReuse(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := p.Run(context.Background(), h, "true", nil, nil, nil); err != nil || r.Status != StatusOK {
				errs <- err
			}
		}()
		if i%10 == 9 {
			wg.Wait() // mix concurrent bursts and sequential reuse
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("run: %v", err)
	}
	if n := srvs[0].Accepted(); n != 1 {
		t.Fatalf("sshd accepted %d connections for 50 runs, want 1", n)
	}
}

func TestReconnectAfterDrop(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	mustRun(t, p, h, "true")
	if n := sshtest.KillSessionChildren(t, srvs[0]); n == 0 {
		t.Fatal("no sshd children to kill")
	}
	if got := mustRun(t, p, h, "echo back"); got != "back\n" {
		t.Fatalf("after drop: %q", got)
	}
	if n := srvs[0].Accepted(); n != 2 {
		t.Fatalf("accepted %d connections, want 2 (one redial)", n)
	}
}

func TestDropMidRun(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	mustRun(t, p, h, "true")
	go func() {
		time.Sleep(500 * time.Millisecond)
		sshtest.KillSessionChildren(t, srvs[0])
	}()
	start := time.Now()
	r, err := p.Run(context.Background(), h, "sleep 20", nil, nil, nil)
	if err == nil || r.Status != StatusError || r.ExitCode != -1 {
		t.Fatalf("got %+v %v, want status error", r, err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s to notice the drop", el)
	}
	if !strings.Contains(r.Err, "connection lost") || strings.Contains(r.Err, "\n") {
		t.Errorf("reason %q, want one line naming the lost connection", r.Err)
	}
	mustRun(t, p, h, "true")
}

func TestKeepaliveDropsSilentPeer(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	e.SSH.KeepaliveS = 1
	h := e.Hosts[0]
	mustRun(t, p, h, "true")
	// SIGSTOP the per-connection sshd processes: TCP stays up but nothing
	// answers, the way a hung or partitioned host behaves.
	kids := sshtestChildren(t, srvs[0])
	for _, pid := range kids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	t.Cleanup(func() {
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	s, _ := p.slot(h.Name)
	c := s.c
	select {
	case <-c.dead:
	case <-time.After(6 * time.Second):
		t.Fatal("keepalive did not drop the silent connection within 6s")
	}
	if got := mustRun(t, p, h, "echo again"); got != "again\n" {
		t.Fatalf("after keepalive drop: %q", got)
	}
}

// sshtestChildren lists the per-connection sshd processes of s.
func sshtestChildren(t *testing.T, s *sshtest.Server) []int {
	t.Helper()
	var pids []int
	for _, pid := range sshtest.Pgrep("sshd") {
		if isDescendant(pid, s.PID) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatal("no per-connection sshd processes")
	}
	return pids
}

func isDescendant(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		pid = atoi(f[1])
		if pid == root {
			return true
		}
	}
	return false
}

func TestHostKeyMismatchRefused(t *testing.T) {
	p, e, srvs, k := testPool(t, 1, "", Options{AcceptNewHosts: true})
	// Replace the recorded key with another one for the same address.
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(pub)
	line := knownhosts.Line([]string{knownhosts.Normalize(srvs[0].Addr)}, other)
	if err := os.WriteFile(k.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := p.Run(context.Background(), e.Hosts[0], "true", nil, nil, nil)
	if err == nil || r.Status != StatusError {
		t.Fatalf("mismatch accepted: %+v", r)
	}
	for _, want := range []string{"h1", "MISMATCH", ssh.FingerprintSHA256(srvs[0].HostKey), ssh.FingerprintSHA256(other)} {
		if !strings.Contains(r.Err, want) {
			t.Errorf("reason %q lacks %q", r.Err, want)
		}
	}
	if b, _ := os.ReadFile(k.KnownHosts); string(b) != line+"\n" {
		t.Errorf("known_hosts changed on mismatch (AcceptNewHosts must not overwrite): %q", b)
	}
	if srvs[0].Accepted() != 0 {
		t.Error("authenticated to a host whose key did not match")
	}
}

func TestUnknownHostRefusedByDefault(t *testing.T) {
	p, e, srvs, k := testPool(t, 1, "", Options{})
	_ = os.Remove(k.KnownHosts)
	r, err := p.Run(context.Background(), e.Hosts[0], "true", nil, nil, nil)
	if err == nil || r.Status != StatusError {
		t.Fatalf("unknown host accepted: %+v", r)
	}
	for _, want := range []string{"h1", "unknown host key", ssh.FingerprintSHA256(srvs[0].HostKey), "--accept-new-host"} {
		if !strings.Contains(r.Err, want) {
			t.Errorf("reason %q lacks %q", r.Err, want)
		}
	}
	if _, err := os.Stat(k.KnownHosts); !os.IsNotExist(err) {
		t.Errorf("known_hosts written without --accept-new-host: %v", err)
	}
}

func TestAcceptNewHostWritesKnownHosts(t *testing.T) {
	_, e, srvs, k := testPool(t, 1, "", Options{})
	_ = os.Remove(k.KnownHosts)
	var log bytes.Buffer
	p := NewPool(e, Options{AcceptNewHosts: true, Log: &log})
	defer p.Close()
	mustRun(t, p, e.Hosts[0], "true")
	b, err := os.ReadFile(k.KnownHosts)
	if err != nil || strings.TrimSpace(string(b)) != srvs[0].HostKeyLine {
		t.Fatalf("known_hosts = %q (%v), want %q", b, err, srvs[0].HostKeyLine)
	}
	if !strings.Contains(log.String(), "accepted new host key") {
		t.Errorf("acceptance not logged: %q", log.String())
	}
	// A strict pool now trusts it.
	strict := NewPool(e, Options{})
	defer strict.Close()
	mustRun(t, strict, e.Hosts[0], "true")
}

func TestAgentAuth(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srv := sshtest.Start(t, k, sshtest.Options{})
	k.Trust(t, srv)
	sock := sshtest.StartAgent(t)
	sshtest.AddKey(t, sock, k.EncryptedKey, k.Passphrase)
	t.Setenv("SSH_AUTH_SOCK", sock)
	tests := []struct{ name, key string }{
		{"agent only", ""},
		{"encrypted key via agent", "  key: " + k.EncryptedKey + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yml := "ssh:\n  user: " + sshtest.User + "\n  known_hosts: " + k.KnownHosts + "\n" + tc.key +
				"hosts:\n  - {name: a, address: " + srv.Host + ", port: " + itoa(srv.Port) + "}\n"
			e, err := env.Parse("env.yml", []byte(yml))
			if err != nil {
				t.Fatal(err)
			}
			p := NewPool(e, Options{})
			defer p.Close()
			if got := mustRun(t, p, e.Hosts[0], "echo via-agent"); got != "via-agent\n" {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestEncryptedKeyWithoutAgent(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srv := sshtest.Start(t, k, sshtest.Options{})
	k.Trust(t, srv)
	t.Setenv("SSH_AUTH_SOCK", "")
	yml := "ssh:\n  user: " + sshtest.User + "\n  known_hosts: " + k.KnownHosts + "\n  key: " + k.EncryptedKey +
		"\nhosts:\n  - {name: a, address: " + srv.Host + ", port: " + itoa(srv.Port) + "}\n"
	e, err := env.Parse("env.yml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(e, Options{})
	defer p.Close()
	start := time.Now()
	r, err := p.Run(context.Background(), e.Hosts[0], "true", nil, nil, nil)
	if err == nil || r.Status != StatusError {
		t.Fatalf("got %+v", r)
	}
	if time.Since(start) > 2*time.Second {
		t.Error("took too long: something waited for a prompt")
	}
	if !strings.Contains(r.Err, k.EncryptedKey) || !strings.Contains(r.Err, "passphrase-protected") || !strings.Contains(r.Err, "no ssh-agent") {
		t.Errorf("reason %q should name the key path and the missing agent", r.Err)
	}
	pem, _ := os.ReadFile(k.EncryptedKey)
	body := strings.Split(string(pem), "\n")[1]
	if strings.Contains(r.Err, k.Passphrase) || strings.Contains(r.Err, body) {
		t.Errorf("reason leaks secret material: %q", r.Err)
	}
}

// TestDialErrorsNameEnvLine: every dial failure starts with the env.yml
// line of the host and its address, and says what to do.
func TestDialErrorsNameEnvLine(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srv := sshtest.StartTrusted(t, k, 1)[0]
	closed := srv.Port + 1 // nothing listens there
	missingKH := filepath.Join(t.TempDir(), "nowhere", "known_hosts")
	garbage := filepath.Join(t.TempDir(), "garbage_key")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missingKey := filepath.Join(t.TempDir(), "id_missing")
	cases := []struct {
		name       string
		port       int
		key, kh    string
		want, lack []string
	}{
		{"missing known_hosts", srv.Port, k.Key, missingKH,
			[]string{"unknown host key", "known_hosts " + missingKH + " does not exist", "ssh-keyscan -p " + itoa(srv.Port) + " 127.0.0.1 >> " + missingKH, "--accept-new-host"},
			[]string{"not in"}},
		{"unreachable host", closed, k.Key, k.KnownHosts, []string{"connect: ", "connection refused"}, nil},
		{"missing key file", srv.Port, missingKey, k.KnownHosts, []string{"read key: ", missingKey, "no such file"}, nil},
		{"not a key", srv.Port, garbage, k.KnownHosts, []string{"key " + garbage + " is not a usable private key"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yml := "# the hosts of this test\nssh:\n  user: " + sshtest.User + "\n  known_hosts: " + tc.kh + "\nhosts:\n" +
				"  - name: other\n    address: 127.0.0.1\n" +
				"  - name: h1\n    address: 127.0.0.1\n    port: " + itoa(tc.port) + "\n    key: " + tc.key + "\n"
			line := 1 + strings.Count(yml[:strings.Index(yml, "- name: h1")], "\n")
			path := filepath.Join(t.TempDir(), "env.yml")
			if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := env.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			p := NewPool(e, Options{Timeout: 5 * time.Second})
			defer p.Close()
			h := e.Hosts[1]
			r, err := p.Run(context.Background(), h, "true", nil, nil, nil)
			if err == nil || r.Status != StatusError {
				t.Fatalf("got %+v, want status error", r)
			}
			prefix := fmt.Sprintf("%s:%d: host h1 (127.0.0.1:%d): ", path, line, tc.port)
			if !strings.HasPrefix(r.Err, prefix) || strings.Contains(r.Err, "\n") {
				t.Errorf("reason %q does not start with %q", r.Err, prefix)
			}
			// The dial error itself is the shared file:line error, for
			// errors.As (Run flattens it into its one-line reason).
			_, _, release, derr := p.session(context.Background(), h)
			if derr == nil {
				release()
			}
			if fe := (*fileline.Error)(nil); !errors.As(derr, &fe) || fe.File != path || fe.Line != line || !strings.HasPrefix(derr.Error(), prefix) {
				t.Errorf("dial error %v is not a *fileline.Error at %s:%d", derr, path, line)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Err, w) {
					t.Errorf("reason %q lacks %q", r.Err, w)
				}
			}
			for _, w := range tc.lack {
				if strings.Contains(r.Err, w) {
					t.Errorf("reason %q says %q", r.Err, w)
				}
			}
		})
	}
}

// TestPerHostKnownHosts: a host's own known_hosts wins over ssh.known_hosts.
func TestPerHostKnownHosts(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := []*sshtest.Server{sshtest.Start(t, k, sshtest.Options{}), sshtest.Start(t, k, sshtest.Options{})}
	global := filepath.Join(t.TempDir(), "global_known_hosts")
	own := filepath.Join(t.TempDir(), "h1_known_hosts")
	if err := os.WriteFile(global, []byte(srvs[1].HostKeyLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte(srvs[0].HostKeyLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := "ssh:\n  user: " + sshtest.User + "\n  key: " + k.Key + "\n  known_hosts: " + global + "\nhosts:\n" +
		"  - {name: h1, address: 127.0.0.1, port: " + itoa(srvs[0].Port) + ", known_hosts: " + own + "}\n" +
		"  - {name: h2, address: 127.0.0.1, port: " + itoa(srvs[1].Port) + "}\n"
	e, err := env.Parse("env.yml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(e, Options{})
	defer p.Close()
	if got := mustRun(t, p, e.Hosts[0], "echo own"); got != "own\n" {
		t.Fatalf("h1 with its own known_hosts: %q", got)
	}
	if got := mustRun(t, p, e.Hosts[1], "echo global"); got != "global\n" {
		t.Fatalf("h2 with ssh.known_hosts: %q", got)
	}
	// h1's server without the per-host file: ssh.known_hosts does not
	// know it.
	e3, err := env.Parse("env.yml", []byte(strings.Replace(yml, ", known_hosts: "+own, "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p3 := NewPool(e3, Options{})
	defer p3.Close()
	r, err := p3.Run(context.Background(), e3.Hosts[0], "true", nil, nil, nil)
	if err == nil || !strings.Contains(r.Err, "unknown host key") || !strings.Contains(r.Err, global) {
		t.Fatalf("h1 without its known_hosts got %+v %v, want refused against %s", r, err, global)
	}
}

func TestTimeoutCeiling(t *testing.T) {
	tests := []struct {
		opt      time.Duration
		envS     int
		ctx      time.Duration
		want     time.Duration
		tolerant bool
	}{
		{0, 0, 0, 30 * time.Second, false},
		{time.Hour, 0, 0, 30 * time.Second, false},
		{5 * time.Second, 0, 0, 5 * time.Second, false},
		{20 * time.Second, 7, 0, 7 * time.Second, false},
		{20 * time.Second, 30, 2 * time.Second, 2 * time.Second, true},
		{0, 0, time.Hour, 30 * time.Second, false},
	}
	for _, tc := range tests {
		p := NewPool(&env.Env{SSH: env.SSH{TimeoutS: tc.envS}}, Options{Timeout: tc.opt})
		ctx := context.Background()
		if tc.ctx > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.ctx)
			defer cancel()
		}
		got := p.bound(ctx)
		if got > tc.want || (!tc.tolerant && got != tc.want) || got < tc.want-time.Second {
			t.Errorf("opt=%s env=%d ctx=%s: bound %s, want %s", tc.opt, tc.envS, tc.ctx, got, tc.want)
		}
	}
}

func TestCancelKillsRemote(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{Log: testLog{t}})
	marker := "dstgen-cancel-" + randomMarker()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	r, err := p.Run(ctx, e.Hosts[0], "sh -c "+shell.Quote("sleep 300; : "+marker), nil, nil, nil)
	if err == nil || r.Status != StatusError || !strings.Contains(r.Err, "canceled") {
		t.Fatalf("got %+v %v", r, err)
	}
	waitNoProc(t, marker, time.Second)
}

func waitNoProc(t *testing.T, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(sshtest.Pgrep(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if pids := sshtest.Pgrep(marker); len(pids) > 0 {
		t.Fatalf("orphan processes %v still match %q", pids, marker)
	}
}

// TestJumpHost reaches a target only the jump host can reach, with the
// jump given in ssh: for every host or under the host itself (which wins).
func TestJumpHost(t *testing.T) {
	for _, perHost := range []bool{false, true} {
		t.Run(map[bool]string{false: "ssh.jump", true: "host jump"}[perHost], func(t *testing.T) { testJumpHost(t, perHost) })
	}
}

func testJumpHost(t *testing.T, perHost bool) {
	sshtest.Require(t)
	nt := sshtest.NewNet(t, 1)
	k := sshtest.NewKeys(t)
	ns := nt.Hosts[0]
	jump := sshtest.Start(t, k, sshtest.Options{NetNS: ns.NS, Addr: ns.Addr, Port: 22})
	// The target listens on the namespace's loopback only: nothing outside
	// the namespace can reach it except through the jump host's sshd.
	target := sshtest.Start(t, k, sshtest.Options{NetNS: ns.NS, Addr: "127.0.0.1", Port: 2222})
	k.Trust(t, jump, target)
	yml := "ssh:\n  user: " + sshtest.User + "\n  key: " + k.Key + "\n  known_hosts: " + k.KnownHosts +
		"\n  jump: {host: " + ns.Addr + "}\nhosts:\n  - {name: inner, address: 127.0.0.1, port: 2222}\n"
	if perHost {
		// ssh.jump points nowhere: only the host's own jump leads in.
		yml = "ssh:\n  user: " + sshtest.User + "\n  key: " + k.Key + "\n  known_hosts: " + k.KnownHosts +
			"\n  jump: {host: 127.0.0.1, port: 1}\nhosts:\n  - {name: inner, address: 127.0.0.1, port: 2222, jump: {host: " + ns.Addr + "}}\n"
	}
	e, err := env.Parse("env.yml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(e, Options{})
	defer p.Close()
	for i := 0; i < 3; i++ {
		if got := mustRun(t, p, e.Hosts[0], "echo inner-$((1+1))"); got != "inner-2\n" {
			t.Fatalf("got %q", got)
		}
	}
	if n := target.Accepted(); n != 1 {
		t.Errorf("target accepted %d connections, want 1", n)
	}
	if n := jump.Accepted(); n != 1 {
		t.Errorf("jump accepted %d connections, want 1", n)
	}
	nTarget := 2
	// Dropping the jump connection drops the tunnelled one with it; the
	// next run redials both.
	sshtest.KillSessionChildren(t, jump)
	time.Sleep(200 * time.Millisecond)
	if got := mustRun(t, p, e.Hosts[0], "echo again"); got != "again\n" {
		t.Fatalf("after jump drop: %q", got)
	}
	if n := jump.Accepted(); n != 2 {
		t.Errorf("jump accepted %d connections after a drop, want 2", n)
	}
	// The target saw the login come from inside the namespace, where only
	// the jump host's sshd lives.
	if !strings.Contains(target.Log(), "Accepted publickey for "+sshtest.User+" from 127.0.0.1") {
		t.Errorf("target log shows no login from the jump host:\n%s", target.Log())
	}
	// Without the jump the target is unreachable: the only path is the jump.
	e2 := *e
	e2.SSH.Jump = nil
	e2.Hosts = []env.Host{e.Hosts[0]}
	e2.Hosts[0].Jump = nil // env.Load may fill the host's from ssh.jump
	direct := NewPool(&e2, Options{Timeout: 3 * time.Second})
	defer direct.Close()
	if r, err := direct.Run(context.Background(), e2.Hosts[0], "true", nil, nil, nil); err == nil && target.Accepted() > nTarget {
		t.Fatalf("target reached without the jump: %+v", r)
	}
}

func TestRunAllFanOut(t *testing.T) {
	p, e, srvs, _ := testPool(t, 4, "", Options{})
	for _, tc := range []struct {
		parallel int
		min, max time.Duration
	}{
		// Lower bounds prove the bound on concurrency; upper bounds only
		// prove concurrency (sequential would take 4 s), loose for a noisy
		// shared machine.
		{4, 1 * time.Second, 3500 * time.Millisecond},
		{2, 2 * time.Second, 3900 * time.Millisecond},
	} {
		var out bytes.Buffer
		start := time.Now()
		rs := p.runAll(context.Background(), e.Hosts, "sleep 1; echo out-$((6*7)); echo err >&2", tc.parallel, &out)
		el := time.Since(start)
		if el < tc.min || el > tc.max {
			t.Errorf("parallel %d: took %s, want %s..%s", tc.parallel, el, tc.min, tc.max)
		}
		for i, r := range rs {
			if r.Host != e.Hosts[i].Name || r.Status != StatusOK {
				t.Errorf("result %d: %+v", i, r)
			}
		}
		o := out.String()
		for _, h := range e.Hosts {
			for _, want := range []string{"[" + h.Name + "] out-42\n", "[" + h.Name + "] err\n", "host=" + h.Name + " status=ok exit=0 elapsed="} {
				if !strings.Contains(o, want) {
					t.Errorf("output lacks %q:\n%s", want, o)
				}
			}
		}
		// Summary lines come last.
		lines := strings.Split(strings.TrimSpace(o), "\n")
		if !strings.HasPrefix(lines[len(lines)-1], "host=h4 ") || !strings.HasPrefix(lines[len(lines)-4], "host=h1 ") {
			t.Errorf("summary not at the end in host order:\n%s", o)
		}
	}
	for _, s := range srvs {
		if s.Accepted() != 1 {
			t.Errorf("%s accepted %d connections, want 1", s.Addr, s.Accepted())
		}
	}
}

func TestRunAllSingleHostNoPrefix(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{})
	var out bytes.Buffer
	rs := p.runAll(context.Background(), e.Hosts, "printf 'a\\nno-newline'; exit 2", 0, &out)
	want := "a\nno-newline\nhost=h1 status=failed exit=2 elapsed="
	if !strings.HasPrefix(out.String(), want) || rs[0].Status != StatusFailed {
		t.Fatalf("got %q, want prefix %q", out.String(), want)
	}
}

func TestSFTPReuseAndReopen(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	c1, err := p.SFTP(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := p.SFTP(context.Background(), h)
	if err != nil || c1 != c2 {
		t.Fatalf("second SFTP call: %v, same client=%v", err, c1 == c2)
	}
	if _, err := c1.Getwd(); err != nil {
		t.Fatal(err)
	}
	sshtest.KillSessionChildren(t, srvs[0])
	time.Sleep(200 * time.Millisecond)
	c3, err := p.SFTP(context.Background(), h)
	if err != nil || c3 == c1 {
		t.Fatalf("after drop: %v, reopened=%v", err, c3 != c1)
	}
	if _, err := c3.Getwd(); err != nil {
		t.Fatal(err)
	}
}

func TestHostileCommandsQuoted(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{})
	marker := "/tmp/dstgen-pwned-" + randomMarker()
	hostile := []string{
		"; touch " + marker,
		"$(touch " + marker + ")",
		"`touch " + marker + "`",
		"' ; touch " + marker + " ; '",
		"\"; touch " + marker + "; \"",
		"a\ntouch " + marker,
		"-n",
		"../../etc/passwd",
	}
	for _, s := range hostile {
		got := mustRun(t, p, e.Hosts[0], "printf '%s' "+shell.Quote(s))
		if got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
		got = mustRun(t, p, e.Hosts[0], shell.QuoteArgs([]string{"printf", "%s", s}))
		if got != s {
			t.Errorf("QuoteArgs round trip of %q gave %q", s, got)
		}
	}
	if out := mustRun(t, p, e.Hosts[0], "ls "+shell.Quote(marker)+" 2>/dev/null || echo absent"); out != "absent\n" {
		t.Fatalf("injection happened: %q", out)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// testLog sends Pool diagnostics to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestSilentServerBounded: a peer that accepts TCP but never speaks SSH
// must not hold a Run beyond its bound.
func TestSilentServerBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	k := sshtest.NewKeys(t)
	port := l.Addr().(*net.TCPAddr).Port
	e, err := env.Parse("env.yml", []byte("ssh:\n  key: "+k.Key+"\n  known_hosts: "+k.KnownHosts+
		"\nhosts:\n  - {name: mute, address: 127.0.0.1, port: "+itoa(port)+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(e, Options{Timeout: 1500 * time.Millisecond})
	defer p.Close()
	start := time.Now()
	r, err := p.Run(context.Background(), e.Hosts[0], "true", nil, nil, nil)
	el := time.Since(start)
	if err == nil || r.Status != StatusError || !strings.Contains(r.Err, "handshake") {
		t.Fatalf("got %+v %v", r, err)
	}
	if el < 1400*time.Millisecond || el > 2500*time.Millisecond {
		t.Errorf("returned after %s, want ~1.5s", el)
	}
}

// TestSFTPSilentPeerBounded: pkg/sftp calls take no context, so on a peer
// that stops answering only the keepalive can unblock them. Even with a
// huge keepalive_s in env.yml the call must fail within the round-trip
// bound (here 3 s), not after hours.
func TestSFTPSilentPeerBounded(t *testing.T) {
	const bound = 3 * time.Second
	p, e, srvs, _ := testPool(t, 1, "", Options{Timeout: bound})
	e.SSH.KeepaliveS = 3600
	h := e.Hosts[0]
	c, err := p.SFTP(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	kids := sshtestChildren(t, srvs[0])
	for _, pid := range kids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	t.Cleanup(func() {
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	errc := make(chan error, 1)
	t0 := time.Now()
	go func() {
		_, err := c.Stat("/")
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("stat on a stopped peer succeeded")
		}
		t.Logf("sftp stat failed after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	case <-time.After(2*bound + time.Second):
		t.Fatalf("sftp stat on a silent peer still blocked after %v (bound %v)", time.Since(t0), bound)
	}
}

// TestCollectStuckSFTPServerBounded: an sftp-server that stops answering
// (a hung disk) while sshd itself still answers keepalives. pkg/sftp calls
// take no context, so only the stall guard can end the transfer: Collect
// must return an error result within the bound plus its margin, and the
// pool must reach the host again afterwards.
func TestCollectStuckSFTPServerBounded(t *testing.T) {
	sshtest.Require(t)
	const server = "/usr/lib/openssh/sftp-server"
	if _, err := os.Stat(server); err != nil {
		t.Skip("no external sftp-server:", err)
	}
	k := sshtest.NewKeys(t)
	srv := sshtest.Start(t, k, sshtest.Options{Config: []string{"Subsystem sftp " + server}})
	k.Trust(t, srv)
	e, err := env.Load(k.WriteEnv(t, []*sshtest.Server{srv}, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	const bound = 2 * time.Second
	p := NewPool(e, Options{Timeout: bound})
	t.Cleanup(func() { _ = p.Close() })
	h := e.Hosts[0]
	wd := sshtest.Workdir(t)
	mustRun(t, p, h, "head -c 1000000 /dev/zero >"+shell.Quote(wd+"/f"))
	if _, err := p.SFTP(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	var stopped []int
	for _, pid := range sshtest.Pgrep(server) {
		if isDescendant(pid, srv.PID) {
			stopped = append(stopped, pid)
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
	}
	if len(stopped) == 0 {
		t.Fatal("no sftp-server process under the test sshd")
	}
	t.Cleanup(func() {
		for _, pid := range stopped {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	type out struct {
		rs  []FileResult
		err error
	}
	done := make(chan out, 1)
	t0 := time.Now()
	go func() {
		rs, err := Collect(context.Background(), p, h, []string{wd + "/f"}, t.TempDir(), nil)
		done <- out{rs, err}
	}()
	select {
	case o := <-done:
		if o.err == nil && !AnyFailed(o.rs) {
			t.Fatalf("collect from a stuck sftp-server succeeded: %+v", o.rs)
		}
		t.Logf("collect ended after %v: %v %+v", time.Since(t0).Round(time.Millisecond), o.err, o.rs)
	case <-time.After(3*bound + stallMargin + 2*time.Second):
		t.Fatalf("collect from a stuck sftp-server still blocked after %v", time.Since(t0))
	}
	if got := mustRun(t, p, h, "echo back"); got != "back\n" {
		t.Fatalf("after the stall: %q", got)
	}
}
