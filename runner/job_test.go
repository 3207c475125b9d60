package runner

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/sshtest"
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
	again, err := StartJob(ctx, p, h, wd, "S1-42", []string{"true"})
	if err != nil || !again.Already || again.PID != st.PID {
		t.Errorf("second start = %+v, %v; want the running job untouched", again, err)
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
