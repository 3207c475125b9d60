package scripts

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

// runScript runs one of the scripts with a bound and returns its stdout,
// stderr and exit code.
func runScript(t *testing.T, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"./" + name}, args...)...) // sh: POSIX, as on the SUT hosts
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestLeaderAndHealthyScripts: on a real 3-member cluster on loopback,
// leader.sh prints one line naming the leader (the same from every
// member) and healthy.sh exits 0; with the leader stopped (SIGSTOP) a
// surviving member's leader.sh names the new leader and healthy.sh exits 1
// with a one-line reason; after SIGCONT healthy.sh exits 0 again.
func TestLeaderAndHealthyScripts(t *testing.T) {
	for _, bin := range []string{"/usr/bin/etcd", "/usr/bin/etcdctl"} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("%s not installed (apt-get install etcd-server etcd-client)", bin)
		}
	}
	ports := freePorts(t, 6)
	dataRoot := t.TempDir()
	members := []string{"m1", "m2", "m3"}
	t.Cleanup(func() {
		for _, m := range members {
			if b, err := os.ReadFile(filepath.Join(dataRoot, m, "pid")); err == nil {
				var pid int
				if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGCONT)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	up := exec.CommandContext(ctx, "./cluster-up.sh")
	up.Env = append(os.Environ(), "DATA_ROOT="+dataRoot, "CLIENT_PORTS="+strings.Join(ports[:3], " "), "PEER_PORTS="+strings.Join(ports[3:], " "))
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("cluster-up.sh: %v\n%s", err, out)
	}
	url := map[string]string{}
	for i, m := range members {
		url[m] = "http://127.0.0.1:" + ports[i]
	}

	leader := ""
	for _, m := range members {
		out, errOut, code := runScript(t, "leader.sh", url[m])
		fields := strings.Fields(out)
		if code != 0 || strings.Count(out, "\n") != 1 || len(fields) != 2 || url[fields[0]] != fields[1] {
			t.Fatalf("leader.sh %s: exit %d, stdout %q, stderr %q: want one line \"<member> <its client URL>\"", url[m], code, out, errOut)
		}
		if leader != "" && fields[0] != leader {
			t.Fatalf("leader.sh names %s from %s but %s before", fields[0], m, leader)
		}
		leader = fields[0]
	}
	if _, errOut, code := runScript(t, "healthy.sh", url[leader]); code != 0 {
		t.Fatalf("healthy.sh on a healthy cluster: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runScript(t, "leader.sh", "http://127.0.0.1:1"); code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "names no leader") {
		t.Errorf("leader.sh against nothing: exit %d, stderr %q: want 1 and one line", code, errOut)
	}

	pid := pidOf(t, dataRoot, leader)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	survivor := members[0]
	if survivor == leader {
		survivor = members[1]
	}
	// Bounded: an election takes about one election timeout (1 s).
	next := ""
	for i := 0; i < 30 && (next == "" || next == leader); i++ {
		out, _, code := runScript(t, "leader.sh", url[survivor])
		if f := strings.Fields(out); code == 0 && len(f) == 2 {
			next = f[0]
		}
		if next == "" || next == leader {
			time.Sleep(500 * time.Millisecond)
		}
	}
	if next == "" || next == leader {
		t.Fatalf("leader.sh still names %q after %s (the leader) stopped", next, leader)
	}
	_, errOut, code := runScript(t, "healthy.sh", url[survivor])
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, url[leader]+" is unhealthy") {
		t.Errorf("healthy.sh with %s stopped: exit %d, stderr %q: want 1 naming it", leader, code, errOut)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	healthy := false
	for i := 0; i < 30 && !healthy; i++ {
		if _, _, code := runScript(t, "healthy.sh", url[leader]); code == 0 {
			healthy = true
		} else {
			time.Sleep(500 * time.Millisecond)
		}
	}
	if !healthy {
		t.Error("healthy.sh not 0 within 15 s of SIGCONT")
	}
}

// TestShellcheck: the scripts pass shellcheck, leader.sh and healthy.sh as
// POSIX sh (they run on SUT hosts whose /bin/sh may be dash or busybox).
func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck not installed (apt-get install shellcheck)")
	}
	for _, tt := range []struct{ script, shell string }{
		{"leader.sh", "sh"}, {"healthy.sh", "sh"}, {"cluster-up.sh", "bash"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, sc, "-s", tt.shell, tt.script).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("shellcheck -s %s %s: %v\n%s", tt.shell, tt.script, err, out)
		}
	}
}
