package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/testsupport/sshtest"
	"golang.org/x/crypto/ssh"
)

// TestMain doubles the test binary as the holder process (Holder.Start
// re-executes it, as the CLI re-executes dstgen) and as a client run
// under another uid.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 {
		switch os.Args[1] {
		case "holder-serve":
			idle, _ := time.ParseDuration(os.Args[3])
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
			err := ServeHolder(ctx, os.Args[2], idle, os.Stderr)
			stop()
			if err != nil && !errors.Is(err, ErrHolderRunning) {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			os.Exit(0)
		case "holder-connect":
			os.Exit(holderConnectHelper(os.Args[2]))
		}
	}
	os.Exit(m.Run())
}

// holderConnectHelper tries to use the holder at socket sock the way a
// client would, without its host key file: exit 0 served, 3 refused.
func holderConnectHelper(sock string) int {
	nc, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		fmt.Println("refused:", err)
		return 3
	}
	_ = nc.SetDeadline(time.Now().Add(3 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(nc, "holder", &ssh.ClientConfig{User: "x", HostKeyCallback: ssh.InsecureIgnoreHostKey()}) //nolint:gosec // the attacker's side
	if err != nil {
		fmt.Println("refused:", err)
		return 3
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	ok, _, err := client.SendRequest(dialRequest, true, []byte(`{"address":"127.0.0.1","port":22}`))
	fmt.Println("served:", ok, err)
	return 0
}

// logBuf collects Pool diagnostics; Pools write from several goroutines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// holderDir is a fresh holder directory (not yet created); at cleanup the
// holder serving it, if any, is killed by its recorded PID.
func holderDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "holder")
	t.Cleanup(func() {
		if pid := holderPIDOf(dir); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return dir
}

func holderPIDOf(dir string) int {
	b, err := os.ReadFile(filepath.Join(buildDir(dir), holderPID))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// testHolder starts holders as this test binary (see TestMain).
func testHolder(t *testing.T, dir string, idle time.Duration) *Holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Holder{Dir: dir, Start: []string{exe, "holder-serve", dir, idle.String()}}
}

func holderEnv(t *testing.T, n int) (*env.Env, []*sshtest.Server, *sshtest.Keys) {
	t.Helper()
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := sshtest.StartTrusted(t, k, n)
	e, err := env.Load(k.WriteEnv(t, srvs, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	return e, srvs, k
}

// call is one CLI call's worth of work: its own Pool, closed at the end,
// as `dstgen exec` does.
func call(t *testing.T, e *env.Env, o Options, cmd string) (Result, string, string, error) {
	t.Helper()
	p := NewPool(e, o)
	defer p.Close()
	var out, errOut bytes.Buffer
	r, err := p.Run(context.Background(), e.Hosts[0], cmd, nil, &out, &errOut)
	return r, out.String(), errOut.String(), err
}

func TestHolderReusesConnectionAcrossCalls(t *testing.T) {
	e, srvs, _ := holderEnv(t, 1)
	dir := holderDir(t)
	for i := range 3 {
		r, out, _, err := call(t, e, Options{Holder: testHolder(t, dir, time.Minute)}, "echo call-"+itoa(i))
		if err != nil || r.Status != StatusOK || out != "call-"+itoa(i)+"\n" {
			t.Fatalf("call %d: %+v %q %v", i, r, out, err)
		}
	}
	if holderPIDOf(dir) == 0 {
		t.Fatal("no holder running after the calls")
	}
	// The holder probed the host's setsid/timeout once and hands the
	// answer to every call, so no call's wrapper runs the probe.
	p := NewPool(e, Options{Holder: testHolder(t, dir, time.Minute)})
	defer p.Close()
	c, _, err := p.conn(context.Background(), e.Hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	if g := c.grouping.Load(); !c.viaHolder || g != groupGrouped {
		t.Fatalf("connection via holder %v, grouping %d; want via the holder with %d (setsid -w and timeout probed)", c.viaHolder, g, groupGrouped)
	}
	if n := srvs[0].Accepted(); n != 1 {
		t.Fatalf("sshd accepted %d connections for 3 calls through the holder, want 1", n)
	}
}

// TestHolderKeepsGuarantees: through the holder, stdout, stderr and exit
// code stay apart, SFTP works, and a timed-out command's process group is
// killed.
func TestHolderKeepsGuarantees(t *testing.T) {
	e, srvs, _ := holderEnv(t, 1)
	dir := holderDir(t)
	o := Options{Holder: testHolder(t, dir, time.Minute)}
	r, out, errOut, err := call(t, e, o, "echo out; echo err >&2; exit 3")
	if err != nil || r.Status != StatusFailed || r.ExitCode != 3 || out != "out\n" || errOut != "err\n" {
		t.Fatalf("got %+v stdout %q stderr %q %v", r, out, errOut, err)
	}

	p := NewPool(e, o)
	defer p.Close()
	h := e.Hosts[0]
	sc, err := p.SFTP(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	wd := sshtest.Workdir(t)
	f, err := sc.Create(wd + "/via-holder")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "sftp through the holder\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if got := mustRun(t, p, h, "cat "+shell.Quote(wd+"/via-holder")); got != "sftp through the holder\n" {
		t.Fatalf("sftp upload read back %q", got)
	}

	marker := "holder-orphan-" + randomMarker()
	tp := NewPool(e, Options{Holder: o.Holder, Timeout: time.Second})
	defer tp.Close()
	r, err = tp.Run(context.Background(), h, "sleep 60 # "+marker, nil, nil, nil)
	if err == nil || r.Status != StatusTimeout {
		t.Fatalf("got %+v %v, want timeout", r, err)
	}
	waitNoProc(t, marker, 5*time.Second)
	if n := srvs[0].Accepted(); n != 1 {
		t.Errorf("sshd accepted %d connections, want 1 (all through the holder)", n)
	}
}

// TestHolderKeysOnIdentity: a connection verified under one known_hosts is
// never handed to a call with another one; a key removed from known_hosts
// stops being trusted on the pooled connection.
func TestHolderKeysOnIdentity(t *testing.T) {
	e, srvs, k := holderEnv(t, 1)
	dir := holderDir(t)
	o := Options{Holder: testHolder(t, dir, time.Minute)}
	if r, _, _, err := call(t, e, o, "true"); err != nil {
		t.Fatalf("first call: %+v %v", r, err)
	}
	empty := filepath.Join(t.TempDir(), "empty_known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.SSH.KnownHosts = empty
	e2.Hosts = []env.Host{e.Hosts[0]}
	e2.Hosts[0].KnownHosts = "" // env.Load may fill it from ssh.known_hosts
	r, _, _, err := call(t, &e2, o, "true")
	if err == nil || !strings.Contains(r.Err, "unknown host key") || !strings.Contains(r.Err, empty) {
		t.Fatalf("call with an empty known_hosts got %+v %v, want the key refused", r, err)
	}
	if err := os.WriteFile(k.KnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _, _, err = call(t, e, o, "true")
	if err == nil || !strings.Contains(r.Err, "unknown host key") {
		t.Fatalf("pooled connection still trusted after its key left known_hosts: %+v %v", r, err)
	}
	if n := srvs[0].Accepted(); n != 1 {
		t.Errorf("sshd accepted %d connections, want 1", n)
	}
}

// TestHolderKilledMidCall: SIGKILL of the holder under a running command
// ends that call with a clean one-line error within the bound; the same
// Pool and later calls go on directly or through a new holder.
func TestHolderKilledMidCall(t *testing.T) {
	e, srvs, _ := holderEnv(t, 1)
	dir := holderDir(t)
	h := e.Hosts[0]
	var log logBuf
	p := NewPool(e, Options{Holder: testHolder(t, dir, time.Minute), Log: &log})
	defer p.Close()
	mustRun(t, p, h, "true")
	pid := holderPIDOf(dir)
	if pid == 0 {
		t.Fatal("no holder")
	}
	time.AfterFunc(500*time.Millisecond, func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	start := time.Now()
	r, err := p.Run(context.Background(), h, "sleep 5; echo late", nil, nil, nil)
	if err == nil || r.Status != StatusError || !strings.Contains(r.Err, "connection lost") || strings.Contains(r.Err, "\n") {
		t.Fatalf("got %+v %v, want a one-line connection-lost error", r, err)
	}
	if el := time.Since(start); el > MaxTimeout {
		t.Fatalf("returned after %s, beyond the %s bound", el, MaxTimeout)
	}
	if got := mustRun(t, p, h, "echo direct"); got != "direct\n" {
		t.Fatalf("after the holder died: %q", got)
	}
	if n := srvs[0].Accepted(); n != 2 {
		t.Errorf("accepted %d, want 2 (holder's, then the direct fallback)", n)
	}

	// A stale socket and no way to start a holder: direct.
	var log2 logBuf
	r, out, _, err := call(t, e, Options{Holder: &Holder{Dir: dir}, Log: &log2}, "echo stale")
	if err != nil || out != "stale\n" || !strings.Contains(log2.String(), "connecting directly") {
		t.Fatalf("stale socket: %+v %q %v log %q", r, out, err, log2.String())
	}
	// With Start, the next call brings a new holder up and uses it.
	if r, out, _, err := call(t, e, Options{Holder: testHolder(t, dir, time.Minute)}, "echo fresh"); err != nil || out != "fresh\n" {
		t.Fatalf("after restart: %+v %q %v", r, out, err)
	}
	if np := holderPIDOf(dir); np == 0 || np == pid {
		t.Errorf("holder pid %d after restart, want a new one (old %d)", np, pid)
	}
}

// TestHolderHungFallsBack: a holder that accepts but never answers (SIGSTOP)
// costs a bounded wait, then the call connects directly.
func TestHolderHungFallsBack(t *testing.T) {
	e, _, _ := holderEnv(t, 1)
	dir := holderDir(t)
	o := Options{Holder: testHolder(t, dir, time.Minute)}
	if r, _, _, err := call(t, e, o, "true"); err != nil {
		t.Fatalf("%+v %v", r, err)
	}
	pid := holderPIDOf(dir)
	if pid <= 0 {
		t.Fatal("no holder pid") // never signal a process group
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	start := time.Now()
	r, out, _, err := call(t, e, o, "echo around")
	if err != nil || out != "around\n" {
		t.Fatalf("%+v %q %v", r, out, err)
	}
	if el := time.Since(start); el > MaxTimeout {
		t.Fatalf("took %s, beyond the %s bound", el, MaxTimeout)
	}
}

// sharedHolderDir makes a holder dir whose parent another user can
// traverse (t.TempDir's parents are private to root).
func sharedHolderDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "dstgen-holder-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "holder")
	t.Cleanup(func() {
		if pid := holderPIDOf(dir); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = os.RemoveAll(base)
	})
	return dir
}

func otherUser(t *testing.T) (uid, gid int) {
	t.Helper()
	sshtest.EnsureUser(t)
	u, err := user.Lookup(sshtest.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// TestHolderRefusesOtherUser: another uid can neither reach the socket
// (private dir) nor, if the modes were loosened, be served (SO_PEERCRED).
func TestHolderRefusesOtherUser(t *testing.T) {
	e, _, _ := holderEnv(t, 1)
	uid, gid := otherUser(t)
	dir := sharedHolderDir(t)
	if r, _, _, err := call(t, e, Options{Holder: testHolder(t, dir, time.Minute)}, "true"); err != nil {
		t.Fatalf("%+v %v", r, err)
	}
	// A copy of the test binary the other user may execute.
	exe, _ := os.Executable()
	bin := filepath.Join(filepath.Dir(dir), "helper")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	asOther := func() (int, string) {
		cmd := exec.Command(bin, "holder-connect", filepath.Join(buildDir(dir), holderSock))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := asOther(); code != 3 || !strings.Contains(out, "permission denied") {
		t.Fatalf("other user through the private dir: exit %d %q, want refused (permission denied)", code, out)
	}
	// Loosen the modes: the holder's own uid check still refuses.
	for _, d := range []string{dir, buildDir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(buildDir(dir), holderSock), 0o666); err != nil {
		t.Fatal(err)
	}
	if code, out := asOther(); code != 3 {
		t.Fatalf("other user with loosened modes: exit %d %q, want refused", code, out)
	}
	if lb, _ := os.ReadFile(filepath.Join(buildDir(dir), holderLog)); !strings.Contains(string(lb), "refused a connection") || !strings.Contains(string(lb), "uid "+strconv.Itoa(uid)) {
		t.Errorf("holder log does not record the refusal:\n%s", lb)
	}
	// And our own client now refuses the loosened directory.
	var log logBuf
	if r, _, _, err := call(t, e, Options{Holder: &Holder{Dir: dir}, Log: &log}, "true"); err != nil || !strings.Contains(log.String(), "must not be accessible") {
		t.Fatalf("client with a loosened dir: %+v %v log %q", r, err, log.String())
	}
}

// TestHolderRefusesUnsafeDir: neither the holder nor a client uses a
// directory that is another user's, group/world-accessible or a symlink;
// the call connects directly instead.
func TestHolderRefusesUnsafeDir(t *testing.T) {
	e, srvs, _ := holderEnv(t, 1)
	uid, _ := otherUser(t)
	cases := []struct {
		name string
		make func(dir string) error
		want string
	}{
		{"world-readable", func(d string) error { return os.Mkdir(d, 0o755) }, "has mode 0755"},
		{"group-writable", func(d string) error {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			return os.Chmod(d, 0o770)
		}, "has mode 0770"},
		{"other owner", func(d string) error {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			return os.Chown(d, uid, -1)
		}, "is owned by uid " + strconv.Itoa(uid)},
		{"symlink", func(d string) error {
			real := d + "-real"
			if err := os.Mkdir(real, 0o700); err != nil {
				return err
			}
			return os.Symlink(real, d)
		}, "is not a directory"},
		{"not a directory", func(d string) error { return os.WriteFile(d, nil, 0o600) }, "is not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := holderDir(t)
			if err := tc.make(dir); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := ServeHolder(ctx, dir, time.Minute, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ServeHolder: %v, want refusal %q", err, tc.want)
			}
			before := srvs[0].Accepted()
			var log logBuf
			r, out, _, err := call(t, e, Options{Holder: testHolder(t, dir, time.Minute), Log: &log}, "echo direct")
			if err != nil || out != "direct\n" {
				t.Fatalf("call: %+v %q %v", r, out, err)
			}
			if !strings.Contains(log.String(), tc.want) || !strings.Contains(log.String(), "connecting directly") {
				t.Errorf("log %q lacks %q and the fallback", log.String(), tc.want)
			}
			if srvs[0].Accepted() != before+1 || holderPIDOf(dir) != 0 {
				t.Errorf("a holder served the unsafe dir")
			}
		})
	}
}

func TestHolderExitsWhenIdle(t *testing.T) {
	e, _, _ := holderEnv(t, 1)
	dir := holderDir(t)
	if r, _, _, err := call(t, e, Options{Holder: testHolder(t, dir, time.Second)}, "true"); err != nil {
		t.Fatalf("%+v %v", r, err)
	}
	pid := holderPIDOf(dir)
	if pid == 0 {
		t.Fatal("no holder")
	}
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("holder %d still running 20s after a 1s idle timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(buildDir(dir), holderSock)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after idle exit: %v", err)
	}
	if lb, _ := os.ReadFile(filepath.Join(buildDir(dir), holderLog)); !strings.Contains(string(lb), "idle for 1s; exiting") {
		t.Errorf("holder log lacks the idle exit:\n%s", lb)
	}
}

// One holder per build: a holder another build left serving (here a copy
// of this test binary, so another build id) is never talked to — this
// build's client starts its own in its own build dir — and is retired
// (SIGTERM) rather than left holding its SSH sessions until it idles out.
func TestHolderOfAnotherBuildIsNeverUsedAndRetired(t *testing.T) {
	e, srvs, _ := holderEnv(t, 1)
	dir := holderDir(t)
	exe, _ := os.Executable()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "older-dstgen")
	if err := os.WriteFile(other, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := exec.Command(other, "holder-serve", dir, "1m")
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = old.Wait(); close(exited) }()
	t.Cleanup(func() { _ = old.Process.Kill(); <-exited })
	// It serves a build dir that is not ours: wait for its pid file (what
	// a new build retires it by), not just its dir, which comes first.
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids, _ := filepath.Glob(filepath.Join(dir, "build-*", holderPID))
		if len(pids) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other build's holder wrote no pid file within 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := srvs[0].Accepted()
	if r, _, _, err := call(t, e, Options{Holder: testHolder(t, dir, time.Minute)}, "true"); err != nil {
		t.Fatalf("%+v %v", r, err)
	}
	if pid := holderPIDOf(dir); pid <= 0 || pid == old.Process.Pid {
		t.Errorf("served by pid %d (the other build's is %d): want a holder of this build", pid, old.Process.Pid)
	}
	if srvs[0].Accepted() != before+1 {
		t.Errorf("%d new SSH logins, want 1 (this build's holder's)", srvs[0].Accepted()-before)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Error("the other build's holder still runs 10 s after this build's replaced it")
	}
}
