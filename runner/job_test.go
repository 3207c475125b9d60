package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

func TestJobOverSSH(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	wd := sshtest.Workdir(t)
	ctx := context.Background()

	t0 := time.Now()
	st, err := StartJob(ctx, p, h, wd, "S1-42", []string{"sh", "-c", "sleep 2; echo done; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("start answered after %v, want <= 2s", d)
	}
	if st.Status != StatusStarted || st.PID <= 0 {
		t.Fatalf("start = %+v", st)
	}
	t1 := time.Now()
	run, err := JobStatusOf(ctx, p, h, wd, "S1-42")
	if err != nil || run.Status != StatusRunning || run.PID != st.PID {
		t.Fatalf("status = %+v, %v", run, err)
	}
	if d := time.Since(t1); d > time.Second {
		t.Errorf("status answered after %v, want <= 1s", d)
	}
	again, err := StartJob(ctx, p, h, wd, "S1-42", []string{"sh", "-c", "sleep 2; echo done; exit 3"})
	if err != nil || !again.Already || again.PID != st.PID {
		t.Errorf("second start, same command = %+v, %v; want the running job untouched", again, err)
	}
	other, err := StartJob(ctx, p, h, wd, "S1-42", []string{"true"})
	if !errors.Is(err, ErrAlreadyRunning) || other.Status != StatusAlreadyRunning || other.PID != st.PID {
		t.Errorf("second start, other command = %+v, %v; want already-running and the running job untouched", other, err)
	}
	// The connection drops (sshd session processes killed) while the job
	// runs: the job keeps running and the next poll reconnects.
	if n := sshtest.KillSessionChildren(t, srvs[0]); n == 0 {
		t.Error("no sshd session process to kill")
	}
	time.Sleep(100 * time.Millisecond)
	after, err := JobStatusOf(ctx, p, h, wd, "S1-42")
	if err != nil || after.Status != StatusRunning || after.PID != st.PID {
		t.Fatalf("status after dropped connection = %+v, %v", after, err)
	}
	var fin JobStatus
	for i := 0; i < 50; i++ {
		if fin, err = JobStatusOf(ctx, p, h, wd, "S1-42"); err != nil || fin.Status != StatusRunning {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || fin.Status != StatusFinished || fin.RC == nil || *fin.RC != 3 {
		t.Fatalf("final = %+v, %v; want finished rc=3", fin, err)
	}
	if out, err := JobLogs(ctx, p, h, wd, "S1-42", 5, false); err != nil || string(out) != "done\n" {
		t.Errorf("logs = %q, %v", out, err)
	}
	if fi, err := os.Stat(filepath.Join(wd, "jobs", "S1-42", "rc")); err != nil {
		t.Error(err)
	} else if uid := fi.Sys().(*syscall.Stat_t).Uid; uid == 0 {
		t.Error("rc written by root: the job did not run as the SSH user")
	}

	// lost: kill -9 the job and its wrapper so that nobody writes rc.
	st2, err := StartJob(ctx, p, h, wd, "victim", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	killJobGroup(filepath.Join(wd, "jobs", "victim"))
	var lost JobStatus
	for i := 0; i < 30; i++ {
		if lost, err = JobStatusOf(ctx, p, h, wd, "victim"); err != nil || lost.Status != StatusRunning {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || lost.Status != StatusLost || lost.RC != nil || lost.PID != st2.PID {
		t.Errorf("after kill -9 = %+v, %v; want lost, no rc", lost, err)
	}
	if ab, err := JobStatusOf(ctx, p, h, wd, "never-started"); err != nil || ab.Status != StatusAbsent {
		t.Errorf("absent = %+v, %v", ab, err)
	}
	jobs, err := ListJobs(ctx, p, h, wd)
	if err != nil || len(jobs) != 2 {
		t.Errorf("list = %+v, %v; want S1-42 and victim", jobs, err)
	}
}

func TestJobStopOverSSH(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	wd := sshtest.Workdir(t)
	ctx := context.Background()
	st, err := StartJob(ctx, p, h, wd, "stubborn", []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.2; done"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	sp, err := StopJob(ctx, p, h, wd, "stubborn", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < time.Second || d > 6*time.Second {
		t.Errorf("stop took %v; want the 1s grace then KILL", d)
	}
	if sp.Status != StatusFinished || sp.Stopped != "KILL" || sp.RC == nil || *sp.RC != 137 {
		t.Fatalf("stop = %+v", sp)
	}
	if syscall.Kill(st.PID, 0) == nil {
		t.Errorf("job pid %d alive after stop", st.PID)
	}
	again, err := StopJob(ctx, p, h, wd, "stubborn", time.Second)
	if err != nil || again.Stopped != "KILL" || *again.RC != 137 {
		t.Errorf("second stop = %+v, %v", again, err)
	}
}

// TestJobScriptRetriedAcrossDrop: the connection dies while a job script
// runs (the sshd serving it is killed mid-command). Job scripts are
// idempotent, so the poll must be redialled and answered, not failed.
func TestJobScriptRetriedAcrossDrop(t *testing.T) {
	p, e, srvs, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	mustRun(t, p, h, "true")
	go func() {
		time.Sleep(500 * time.Millisecond)
		sshtest.KillSessionChildren(t, srvs[0])
	}()
	out, _, code, err := poolShell{p, h}.runScript(context.Background(), "sleep 1.5; echo answered")
	if err != nil || code != 0 || string(out) != "answered\n" {
		t.Fatalf("script across a dropped connection = %q, exit %d, %v; want it retried and answered", out, code, err)
	}
	if n := srvs[0].Accepted(); n < 2 {
		t.Errorf("sshd accepted %d logins; want a second connection for the retry", n)
	}
}

// TestJobStatusUnreachable: the host of a running job stops answering.
// Job calls must say unreachable (an *UnreachableError and status
// unreachable), never lost or absent, and give up within the bound: first
// with sshd stopped (connection refused at once, so the retries run), then
// with the SSH port black-holed by iptables in a namespace (every dial
// hangs until the bound).
func TestJobStatusUnreachable(t *testing.T) {
	const bound = 4 * time.Second
	t.Run("sshd stopped", func(t *testing.T) {
		p, e, srvs, _ := testPool(t, 1, "", Options{Timeout: bound})
		h := e.Hosts[0]
		wd := sshtest.Workdir(t)
		ctx := context.Background()
		if _, err := StartJob(ctx, p, h, wd, "long", []string{"sleep", "30"}); err != nil {
			t.Fatal(err)
		}
		if st, err := JobStatusOf(ctx, p, h, wd, "long"); err != nil || st.Status != StatusRunning {
			t.Fatalf("status before the outage = %+v, %v", st, err)
		}
		// Session processes first: once the listener is gone they are no
		// longer found below it.
		sshtest.KillSessionChildren(t, srvs[0])
		if err := syscall.Kill(srvs[0].PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		st, err := JobStatusOf(ctx, p, h, wd, "long")
		took := time.Since(t0)
		var ue *UnreachableError
		if !errors.As(err, &ue) || st.Status != StatusUnreachable || st.Err == "" || st.PID != 0 {
			t.Fatalf("status with sshd stopped = %+v, %v; want status unreachable and an *UnreachableError", st, err)
		}
		if ue.Attempts < 2 {
			t.Errorf("gave up after %d attempt(s) on a refused connection; want retries within the bound", ue.Attempts)
		}
		if took > bound+2*time.Second {
			t.Errorf("unreachable answered after %v; want within the %v bound", took, bound)
		}
		for name, call := range map[string]func() error{
			"start": func() error { _, err := StartJob(ctx, p, h, wd, "long", []string{"sleep", "30"}); return err },
			"stop":  func() error { _, err := StopJob(ctx, p, h, wd, "long", time.Second); return err },
			"logs":  func() error { _, err := JobLogs(ctx, p, h, wd, "long", 5, false); return err },
		} {
			if err := call(); !IsUnreachable(err) {
				t.Errorf("%s with sshd stopped: %v; want unreachable", name, err)
			}
		}
	})
	t.Run("port black-holed", func(t *testing.T) {
		if _, err := exec.LookPath("iptables"); err != nil {
			t.Skip("iptables missing")
		}
		p, e, nsName := netnsPool(t, bound)
		rule := []string{"INPUT", "-p", "tcp", "--dport", "22", "-j", "DROP"}
		nsIptables(t, nsName, append([]string{"-I"}, rule...)...)
		t0 := time.Now()
		st, err := JobStatusOf(context.Background(), p, e.Hosts[0], "/tmp", "any")
		took := time.Since(t0)
		if !IsUnreachable(err) || st.Status != StatusUnreachable {
			t.Fatalf("status with the port black-holed = %+v, %v; want unreachable", st, err)
		}
		if took > bound+2*time.Second {
			t.Errorf("unreachable answered after %v; want within the %v bound", took, bound)
		}
	})
}

// TestJobStatusRetriesAcrossBlip: the SSH port refuses connections for
// about a second (iptables REJECT in the host's namespace) and is then
// open again. A status poll during the blip must be retried and answered,
// not reported unreachable.
func TestJobStatusRetriesAcrossBlip(t *testing.T) {
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("iptables missing")
	}
	p, e, nsName := netnsPool(t, 8*time.Second)
	rule := []string{"INPUT", "-p", "tcp", "--dport", "22", "-j", "REJECT", "--reject-with", "tcp-reset"}
	nsIptables(t, nsName, append([]string{"-I"}, rule...)...)
	healed := make(chan struct{})
	go func() {
		defer close(healed)
		time.Sleep(time.Second)
		_ = exec.Command("ip", append([]string{"netns", "exec", nsName, "iptables", "-w", "5", "-D"}, rule...)...).Run()
	}()
	defer func() { <-healed }()
	st, err := JobStatusOf(context.Background(), p, e.Hosts[0], "/tmp/dstgen-blip-"+randSuffix()[:6], "none")
	if err != nil || st.Status != StatusAbsent {
		t.Fatalf("status across a 1 s blip = %+v, %v; want it retried and answered (absent)", st, err)
	}
}

// netnsPool starts one sshd in a fresh network namespace and returns a pool
// on it, its env and the namespace name.
func netnsPool(t *testing.T, bound time.Duration) (*Pool, *env.Env, string) {
	t.Helper()
	nt := sshtest.NewNet(t, 1)
	k := sshtest.NewKeys(t)
	srv := sshtest.Start(t, k, sshtest.Options{NetNS: nt.Hosts[0].NS, Addr: nt.Hosts[0].Addr, Port: 22})
	k.Trust(t, srv)
	e, err := env.Load(k.WriteEnv(t, []*sshtest.Server{srv}, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(e, Options{Timeout: bound})
	t.Cleanup(func() { _ = p.Close() })
	return p, e, nt.Hosts[0].NS
}

// nsIptables runs iptables inside ns; an -I rule is deleted at cleanup.
func nsIptables(t *testing.T, ns string, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "iptables", "-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("iptables %v in %s: %v: %s", args, ns, err, out)
	}
	if len(args) > 0 && args[0] == "-I" {
		del := append([]string{"netns", "exec", ns, "iptables", "-w", "5", "-D"}, args[1:]...)
		t.Cleanup(func() { _ = exec.Command("ip", del...).Run() })
	}
}
