package testbed

import (
	"bytes"
	"context"
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

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testbed/netns"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

const tmpfsMagic = 0x01021994

// upForTest brings up an n-host testbed in a fresh dir while holding the
// shared 10.77.0.0/24 lock; Down runs in cleanup whatever the test did.
// The caller's context must start after the lock is held: the wait for it
// (other packages' namespace tests) is not the test's time.
func upForTest(t *testing.T, n, dataMiB int) (string, *UpResult) {
	t.Helper()
	sshtest.LockNet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := CheckTools(exec.LookPath); err != nil {
		t.Skip("testbed:", err)
	}
	dir := filepath.Join(t.TempDir(), "tb")
	t.Cleanup(func() {
		if _, err := Down(context.Background(), dir); err != nil {
			t.Errorf("cleanup down: %v", err)
		}
	})
	res, err := Up(ctx, Config{Dir: dir, N: n, DataMiB: dataMiB})
	if err != nil {
		t.Fatalf("up %d: %v", n, err)
	}
	return dir, res
}

// TestUpDown: up 3 gives three hosts the OpenSSH client reaches as uid 0
// with the written key and known_hosts (strict checking), that the env.yml
// reaches through runner.Probe and Pool.Run, each with a tmpfs data dir of
// the chosen size; up again is idempotent; up with another N is refused; a
// killed sshd is restarted by up; down leaves no namespace, bridge, sshd,
// mount, user or file, and down again finds nothing.
func TestUpDown(t *testing.T) {
	start := time.Now()
	dir, res := upForTest(t, 3, 16)
	t.Logf("up 3 (lock wait included): %s", time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := res.State
	if res.AlreadyUp() || len(st.Hosts) != 3 || !st.BridgeCreated {
		t.Fatalf("up made %v, state %+v", res.Made, st)
	}
	if fi, err := os.Stat(st.Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key %s: %v, %v; want mode 0600", st.Key, fi, err)
	}

	// The OpenSSH client, strict host key checking against known_hosts.
	for _, h := range st.Hosts {
		out, err := exec.CommandContext(ctx, "ssh", "-i", st.Key, "-o", "UserKnownHostsFile="+st.KnownHosts,
			"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-F", "none",
			User+"@"+h.Address, "id -u; stat -f -c %T "+h.DataDir).CombinedOutput()
		if err != nil || string(out) != "0\ntmpfs\n" {
			t.Errorf("ssh %s: %v: %q, want uid 0 and a tmpfs data dir", h.Name, err, out)
		}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(h.DataDir, &fs); err != nil || fs.Type != tmpfsMagic || fs.Blocks*uint64(fs.Bsize) != 16<<20 {
			t.Errorf("%s: data dir statfs %+v, %v; want tmpfs of 16 MiB", h.Name, fs, err)
		}
	}

	t.Logf("openssh: %s", time.Since(start))
	// dstgen's own runner, through the written env.yml.
	t.Setenv(env.SSHConfigEnv, "none")
	e, err := env.Load(st.EnvFile)
	if err != nil {
		t.Fatalf("env.yml: %v", err)
	}
	pool := runner.NewPool(e, runner.Options{})
	defer pool.Close()
	for _, c := range runner.Probe(ctx, pool, e.Hosts) {
		if !c.Reachable || c.UID != 0 {
			t.Errorf("probe %s: reachable=%v uid=%d err=%s; want reachable as uid 0", c.Host, c.Reachable, c.UID, c.Err)
		}
	}
	t.Logf("probe: %s", time.Since(start))
	for _, h := range e.Hosts {
		var out bytes.Buffer
		if r, err := pool.Run(ctx, h, `echo "$(id -u) $DSTGEN_WORKDIR"`, nil, &out, nil); err != nil || r.ExitCode != 0 ||
			out.String() != "0 "+filepath.Join(dir, "hosts", h.Name, "work")+"\n" {
			t.Errorf("Pool.Run %s: %v %+v: %q", h.Name, err, r, out.String())
		}
	}
	pool.Close()

	t.Logf("ssh, probe, run: %s", time.Since(start))
	// Idempotent: nothing made, same sshds.
	again, err := Up(ctx, Config{Dir: dir, N: 3, DataMiB: 16})
	if err != nil || !again.AlreadyUp() {
		t.Fatalf("second up: made %v, %v; want nothing", again.Made, err)
	}
	for i, h := range again.State.Hosts {
		if h.PID != st.Hosts[i].PID {
			t.Errorf("%s: sshd pid %d after the second up, was %d", h.Name, h.PID, st.Hosts[i].PID)
		}
	}
	if _, err := Up(ctx, Config{Dir: dir, N: 2}); err == nil || !strings.Contains(err.Error(), "has 3 host(s), not 2: dstgen testbed down --dir "+dir+" first") {
		t.Errorf("up 2 over 3: %v", err)
	}

	// Another size resizes the tmpfs in place; other roles rewrite env.yml.
	resized, err := Up(ctx, Config{Dir: dir, N: 3, DataMiB: 32, Roles: []string{"sut", "sut", "sut+client"}})
	if err != nil || len(resized.Made) != 4 || !slices.Contains(resized.Made, "tmpfs "+st.Hosts[0].DataDir+" resized to 32 MiB") ||
		!slices.Contains(resized.Made, "roles h3 sut+client (were client)") {
		t.Fatalf("up with 32 MiB and new roles: made %v, %v", resized.Made, err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(st.Hosts[2].DataDir, &fs); err != nil || fs.Blocks*uint64(fs.Bsize) != 32<<20 {
		t.Errorf("after the resize: statfs %+v, %v; want 32 MiB", fs, err)
	}
	if e, err := env.Load(st.EnvFile); err != nil || strings.Join(e.Hosts[2].Roles, ",") != "sut,client" {
		t.Errorf("env.yml after the roles change: %v", err)
	}

	// A dead sshd is started again.
	dead := st.Hosts[1].PID
	if err := stopPID(ctx, dead); err != nil {
		t.Fatal(err)
	}
	healed, err := Up(ctx, Config{Dir: dir, N: 3})
	if err != nil || len(healed.Made) != 1 || !strings.HasPrefix(healed.Made[0], "sshd h2 pid=") {
		t.Fatalf("up after killing h2's sshd: made %v, %v; want only h2's sshd", healed.Made, err)
	}

	// Down removes exactly what up made.
	var pids []int
	for _, h := range healed.State.Hosts {
		pids = append(pids, h.PID)
	}
	removed, err := Down(ctx, dir)
	if err != nil {
		t.Fatalf("down: %v (removed %v)", err, removed)
	}
	for _, want := range []string{"sshd h1 pid=", "tmpfs " + st.Hosts[2].DataDir, "netns dstgen-tb-3", "bridge " + Bridge, "user " + User, "files " + dir} {
		if !slices.ContainsFunc(removed, func(r string) bool { return strings.HasPrefix(r, want) }) {
			t.Errorf("down removed %v, want %q among them", removed, want)
		}
	}
	t.Logf("down: %s", time.Since(start))
	assertNothingLeft(t, dir, st, pids)
	if again, err := Down(ctx, dir); err != nil || len(again) != 0 {
		t.Errorf("second down: %v, %v; want nothing to do", again, err)
	}
}

// assertNothingLeft checks what TestUpDown's down must have removed.
func assertNothingLeft(t *testing.T, dir string, st *State, pids []int) {
	t.Helper()
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), nsPrefix) {
		t.Errorf("namespaces left: %s", out)
	}
	if _, err := net.InterfaceByName(Bridge); err == nil {
		t.Errorf("bridge %s left", Bridge)
	}
	for _, pid := range pids {
		// Exited is enough: reaping the daemonized sshd is pid 1's job.
		if !netns.Gone(context.Background(), pid, stopWait) {
			t.Errorf("sshd pid %d left", pid)
		}
	}
	for _, h := range st.Hosts {
		if m, _ := isMountPoint(h.DataDir); m {
			t.Errorf("mount on %s left", h.DataDir)
		}
	}
	if err := exec.Command("id", "-u", User).Run(); err == nil {
		t.Errorf("user %s left", User)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("testbed dir %s left", dir)
	}
}

// TestUpRefusesSubnetInUse: an address of 10.77.0.0/24 on another
// interface stops up before it makes anything, naming the interface.
func TestUpRefusesSubnetInUse(t *testing.T) {
	sshtest.LockNet(t)
	if err := CheckTools(exec.LookPath); err != nil {
		t.Skip("testbed:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A bridge, because the dummy driver is not in every kernel.
	const dummy = "dstgen-tbtest"
	if out, err := exec.Command("ip", "link", "add", dummy, "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", dummy).Run() })
	if out, err := exec.Command("ip", "addr", "add", "10.77.0.250/24", "dev", dummy).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "tb")
	_, err := Up(ctx, Config{Dir: dir, N: 1})
	if err == nil || err.Error() != "10.77.0.0/24 is already in use: 10.77.0.250/24 on "+dummy+" (remove it first)" {
		t.Fatalf("up with the subnet in use: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("up made %s although it refused", dir)
	}
	if _, err := net.InterfaceByName(Bridge); err == nil {
		t.Errorf("up made the bridge although it refused")
	}
}

// TestDownAfterFailedUp: an up that fails half way (here: host h2's
// sshd_config path is taken by a directory) leaves a record from which
// down removes everything already made, including an sshd whose pid only
// its pid file knows.
func TestDownAfterFailedUp(t *testing.T) {
	sshtest.LockNet(t)
	if err := CheckTools(exec.LookPath); err != nil {
		t.Skip("testbed:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "tb")
	t.Cleanup(func() { _, _ = Down(context.Background(), dir) })
	// First a good 1-host testbed whose sshd pid the record then forgets,
	// as if up had crashed between starting it and saving.
	res, err := Up(ctx, Config{Dir: dir, N: 1})
	if err != nil {
		t.Fatal(err)
	}
	pid := res.State.Hosts[0].PID
	res.State.Hosts[0].PID = 0
	if err := res.State.save(); err != nil {
		t.Fatal(err)
	}
	if removed, err := Down(ctx, dir); err != nil || !slices.Contains(removed, "sshd h1 pid="+strconv.Itoa(pid)) {
		t.Fatalf("down with the pid only in the pid file: %v, %v", removed, err)
	}
	if !netns.Gone(ctx, pid, stopWait) {
		t.Fatalf("sshd %d survived down", pid)
	}

	blocker := filepath.Join(dir, "hosts", "h2", "ssh", "sshd_config", "x")
	if err := os.MkdirAll(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Up(ctx, Config{Dir: dir, N: 3})
	if err == nil || !strings.HasPrefix(err.Error(), "h2: write "+filepath.Dir(blocker)) {
		t.Fatalf("up with h2 blocked: %v", err)
	}
	st, err := LoadState(dir)
	if err != nil || !st.BridgeCreated || !st.Hosts[1].NSCreated || !st.Hosts[1].Mounted {
		t.Fatalf("record after the failed up: %+v, %v", st, err)
	}
	removed, err := Down(ctx, dir)
	if err != nil {
		t.Fatalf("down after the failed up: %v", err)
	}
	for _, want := range []string{"netns dstgen-tb-1", "netns dstgen-tb-2", "tmpfs " + st.Hosts[1].DataDir, "bridge " + Bridge} {
		if !slices.Contains(removed, want) {
			t.Errorf("down removed %v, want %q among them", removed, want)
		}
	}
	assertNothingLeft(t, dir, st, nil)
}
