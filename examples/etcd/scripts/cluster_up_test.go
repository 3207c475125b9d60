// Package scripts holds the example's shell scripts; this test runs
// cluster-up.sh against the real packaged etcd on loopback.
package scripts

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePorts asks the kernel for n unused loopback ports.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func pidOf(t *testing.T, dataRoot, member string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataRoot, member, "pid"))
	if err != nil {
		t.Fatalf("pid of %s: %v", member, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestClusterUp brings up the 3-member cluster, writes and reads a key,
// kills one member with SIGKILL, lets the script restart it from its data
// dir, and tears everything down, leaving no process behind.
func TestClusterUp(t *testing.T) {
	for _, bin := range []string{"/usr/bin/etcd", "/usr/bin/etcdctl"} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("%s not installed (apt-get install etcd-server etcd-client)", bin)
		}
	}
	ports := freePorts(t, 6)
	dataRoot := t.TempDir()
	env := append(os.Environ(),
		"DATA_ROOT="+dataRoot,
		"CLIENT_PORTS="+strings.Join(ports[:3], " "),
		"PEER_PORTS="+strings.Join(ports[3:], " "))
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "./cluster-up.sh", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cluster-up.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	members := []string{"m1", "m2", "m3"}
	t.Cleanup(func() {
		// Never leave etcd running, even when an assertion failed.
		for _, m := range members {
			if b, err := os.ReadFile(filepath.Join(dataRoot, m, "pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})

	out := run()
	if !strings.Contains(out, "cluster_up endpoints=127.0.0.1:"+ports[0]) {
		t.Fatalf("no cluster_up line:\n%s", out)
	}
	endpoints := "127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2]
	etcdctl := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/usr/bin/etcdctl", append([]string{"--endpoints", endpoints, "--command-timeout", "5s"}, args...)...)
		cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("etcdctl %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	etcdctl("put", "dstgen-example", "v1")
	if got := etcdctl("get", "--print-value-only", "dstgen-example"); strings.TrimSpace(got) != "v1" {
		t.Fatalf("get = %q, want v1", got)
	}

	victim := pidOf(t, dataRoot, "m2")
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50 && alive(victim); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	out = run() // restarts m2 from its data dir (initial-cluster-state existing)
	if !strings.Contains(out, "m1 already running") || strings.Contains(out, "m2 already running") {
		t.Errorf("restart output:\n%s", out)
	}
	if pidOf(t, dataRoot, "m2") == victim {
		t.Errorf("m2 kept the killed pid %d", victim)
	}
	if got := etcdctl("get", "--print-value-only", "dstgen-example"); strings.TrimSpace(got) != "v1" {
		t.Errorf("after restart get = %q, want v1", got)
	}

	pids := map[string]int{}
	for _, m := range members {
		pids[m] = pidOf(t, dataRoot, m)
	}
	run("--down")
	for m, pid := range pids {
		if alive(pid) {
			// a zombie of ours would still answer kill 0; the script's
			// processes are reparented, so alive means still running.
			t.Errorf("%s pid %d still running after --down", m, pid)
		}
		if _, err := os.Stat(filepath.Join(dataRoot, m, "pid")); !os.IsNotExist(err) {
			t.Errorf("%s pid file left behind", m)
		}
	}
}
