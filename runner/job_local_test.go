package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// localShell runs job scripts with the local sh, as a host's login shell
// would run them, so the remote protocol is tested without SSH.
type localShell struct{}

func (localShell) runScript(ctx context.Context, script string) ([]byte, []byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), errOut.Bytes(), ee.ExitCode(), nil
	}
	return out.Bytes(), errOut.Bytes(), 0, err
}

// runStream runs script with the local sh, stdin and stdout attached.
func (localShell) runStream(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	return cmd.Run()
}

// killJobGroup cleans up whatever a test left running, by the pgid the job
// recorded.
func killJobGroup(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "pgid"))
	if err != nil {
		return
	}
	if pg, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pg > 1 {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
}

func readPgid(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pgid"))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pg <= 1 {
		t.Fatalf("pgid file %q", b)
	}
	return pg
}

// groupGone waits (bounded) until no process is left in group pg; killed
// orphans may linger briefly as zombies until init reaps them.
func groupGone(pg int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for syscall.Kill(-pg, 0) == nil {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func waitStatus(t *testing.T, sh hostShell, wd, id, want string, within time.Duration) JobStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := jobStatus(context.Background(), sh, "local", wd, id)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if st.Status == want || time.Now().After(deadline) {
			if st.Status != want {
				t.Fatalf("status after %v = %+v, want %s", within, st, want)
			}
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestJobLifecycleLocal(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	sh := localShell{}
	t0 := time.Now()
	st, err := jobStart(ctx, sh, "local", wd, "life-1", []string{"sh", "-c", "echo out-line; echo err-line >&2; sleep 1; exit 7"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killJobGroup(filepath.Join(wd, "jobs", "life-1")) })
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("start took %v, want <= 2s", d)
	}
	if st.Status != StatusStarted || st.PID <= 0 {
		t.Fatalf("start = %+v, want started with pid", st)
	}
	run, err := jobStatus(ctx, sh, "local", wd, "life-1")
	if err != nil || run.Status != StatusRunning || run.PID != st.PID || run.RC != nil {
		t.Fatalf("status while running = %+v, %v", run, err)
	}
	// The pid is the command's own pid, recorded from inside the child.
	if _, err := os.Stat("/proc/" + strconv.Itoa(st.PID)); err != nil {
		t.Errorf("recorded pid %d is not a live process: %v", st.PID, err)
	}
	again, err := jobStart(ctx, sh, "local", wd, "life-1", []string{"sh", "-c", "echo out-line; echo err-line >&2; sleep 1; exit 7"})
	if err != nil || !again.Already || again.Status != StatusRunning || again.PID != st.PID {
		t.Fatalf("second start, same command = %+v, %v; want already running, same pid", again, err)
	}
	other, err := jobStart(ctx, sh, "local", wd, "life-1", []string{"sh", "-c", "touch " + filepath.Join(wd, "second")})
	if !errors.Is(err, ErrAlreadyRunning) || other.Status != StatusAlreadyRunning || other.PID != st.PID {
		t.Fatalf("second start, other command = %+v, %v; want already-running, same pid, ErrAlreadyRunning", other, err)
	}
	fin := waitStatus(t, sh, wd, "life-1", StatusFinished, 5*time.Second)
	if fin.RC == nil || *fin.RC != 7 {
		t.Fatalf("finished = %+v, want rc 7", fin)
	}
	if fin.Elapsed < time.Second || fin.Elapsed > 4*time.Second {
		t.Errorf("elapsed %v, want about 1s", fin.Elapsed)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(wd, "second")); err == nil {
		t.Error("starting a running ID ran the second command")
	}
	out, err := jobLogs(ctx, sh, "local", wd, "life-1", 10, false)
	if err != nil || string(out) != "out-line\n" {
		t.Errorf("stdout logs = %q, %v", out, err)
	}
	errOut, err := jobLogs(ctx, sh, "local", wd, "life-1", 10, true)
	if err != nil || string(errOut) != "err-line\n" {
		t.Errorf("stderr logs = %q, %v", errOut, err)
	}
	meta, _ := os.ReadFile(filepath.Join(wd, "jobs", "life-1", "meta"))
	if !strings.Contains(string(meta), "cmd=sh '-c' 'echo out-line;") || !strings.Contains(string(meta), "start_utc=") {
		t.Errorf("meta = %q", meta)
	}
	// A terminal job is archived, not overwritten, when started again.
	re, err := jobStart(ctx, sh, "local", wd, "life-1", []string{"true"})
	if err != nil || re.Status != StatusStarted {
		t.Fatalf("restart of finished job = %+v, %v", re, err)
	}
	arch, _ := filepath.Glob(filepath.Join(wd, "jobs", ".archive", "life-1.*", "rc"))
	if len(arch) != 1 {
		t.Errorf("archived runs = %v, want one", arch)
	}
}

func TestJobAbsentAndInvalid(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	st, err := jobStatus(ctx, localShell{}, "local", wd, "nope")
	if err != nil || st.Status != StatusAbsent {
		t.Fatalf("absent = %+v, %v", st, err)
	}
	st, err = jobStop(ctx, localShell{}, "local", wd, "nope", time.Second)
	if err != nil || st.Status != StatusAbsent {
		t.Fatalf("stop absent = %+v, %v", st, err)
	}
	for _, id := range []string{"", "-x", ".x", "a/b", "a b", "..", "a;b", "$(x)", "a\nb", strings.Repeat("a", 65)} {
		if _, err := jobStart(ctx, localShell{}, "local", wd, id, []string{"true"}); err == nil {
			t.Errorf("start accepted id %q", id)
		}
		if _, err := jobStatus(ctx, localShell{}, "local", wd, id); err == nil {
			t.Errorf("status accepted id %q", id)
		}
	}
	if _, err := jobStart(ctx, localShell{}, "local", wd, "ok", nil); err == nil {
		t.Error("start accepted empty argv")
	}
	if _, err := jobStop(ctx, localShell{}, "local", wd, "ok", time.Minute); err == nil {
		t.Error("stop accepted a grace above the bound")
	}
	if _, err := jobLogs(ctx, localShell{}, "local", wd, "ok", 0, false); err == nil {
		t.Error("logs accepted 0 lines")
	}
	if _, err := jobLogs(ctx, localShell{}, "local", wd, "nope", 5, false); err == nil {
		t.Error("logs of an absent job did not fail")
	}
}

func TestJobStopLocal(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		argv    []string
		grace   time.Duration
		wantSig string
		wantRC  int
	}{
		{"term-honoured", []string{"sleep", "60"}, 2 * time.Second, "TERM", 143},
		{"term-ignored", []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"}, 500 * time.Millisecond, "KILL", 137},
		// The signal must reach the whole process group, not only the
		// recorded pid: a child of the command would otherwise be orphaned.
		{"term-grandchild", []string{"sh", "-c", "sleep 60 & wait"}, 2 * time.Second, "TERM", 143},
		{"kill-grandchild", []string{"sh", "-c", "trap '' TERM; sh -c 'trap \"\" TERM; sleep 60' & wait"}, 300 * time.Millisecond, "KILL", 137},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			st, err := jobStart(ctx, localShell{}, "local", wd, "j", tc.argv)
			if err != nil || st.Status != StatusStarted {
				t.Fatalf("start = %+v, %v", st, err)
			}
			t.Cleanup(func() { killJobGroup(filepath.Join(wd, "jobs", "j")) })
			time.Sleep(200 * time.Millisecond)
			t0 := time.Now()
			sp, err := jobStop(ctx, localShell{}, "local", wd, "j", tc.grace)
			if err != nil {
				t.Fatal(err)
			}
			if sp.Status != StatusFinished || sp.Stopped != tc.wantSig || sp.RC == nil || *sp.RC != tc.wantRC {
				t.Fatalf("stop = %+v (rc %v), want finished stopped=%s rc=%d", sp, sp.RC, tc.wantSig, tc.wantRC)
			}
			if tc.wantSig == "KILL" && time.Since(t0) < tc.grace {
				t.Errorf("KILL came after %v, before the %v grace", time.Since(t0), tc.grace)
			}
			if syscall.Kill(st.PID, 0) == nil {
				t.Errorf("pid %d still alive after stop", st.PID)
			}
			if pg := readPgid(t, filepath.Join(wd, "jobs", "j")); !groupGone(pg, 2*time.Second) {
				t.Errorf("process group %d still has members after stop", pg)
			}
			again, err := jobStop(ctx, localShell{}, "local", wd, "j", tc.grace)
			if err != nil || again.Status != StatusFinished || *again.RC != tc.wantRC {
				t.Errorf("second stop = %+v, %v; want the same finished state", again, err)
			}
		})
	}
}

func TestJobLostLocal(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	st, err := jobStart(ctx, localShell{}, "local", wd, "victim", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wd, "jobs", "victim")
	killJobGroup(dir) // kill -9 the job and its wrapper: nobody writes rc
	_ = st
	lost := waitStatus(t, localShell{}, wd, "victim", StatusLost, 3*time.Second)
	if lost.RC != nil {
		t.Errorf("lost job has rc %d", *lost.RC)
	}
	// A job dir from another boot is lost even if its pid is reused.
	st2, err := jobStart(ctx, localShell{}, "local", wd, "reboot", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killJobGroup(filepath.Join(wd, "jobs", "reboot")) })
	if err := os.WriteFile(filepath.Join(wd, "jobs", "reboot", "boot"), []byte("other-boot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := jobStatus(ctx, localShell{}, "local", wd, "reboot")
	if err != nil || got.Status != StatusLost {
		t.Errorf("job from another boot (pid %d alive) = %+v, %v; want lost", st2.PID, got, err)
	}
}

func TestJobListLocal(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	for _, id := range []string{"a", "b"} {
		if _, err := jobStart(ctx, localShell{}, "local", wd, id, []string{"true"}); err != nil {
			t.Fatal(err)
		}
	}
	// Hostile directory names placed by someone else are skipped, not echoed.
	for _, bad := range []string{"x\nstatus=finished", "-rf", "a b"} {
		if err := os.MkdirAll(filepath.Join(wd, "jobs", bad), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	jobs, err := jobList(ctx, localShell{}, "local", wd)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID+":"+j.Status)
	}
	if strings.Join(ids, ",") != "a:finished,b:finished" {
		t.Errorf("list = %v", ids)
	}
	empty, err := jobList(ctx, localShell{}, "local", filepath.Join(wd, "none"))
	if err != nil || len(empty) != 0 {
		t.Errorf("list of missing workdir = %v, %v", empty, err)
	}
}

func TestFormatKV(t *testing.T) {
	tests := []struct {
		in   [][2]string
		want string
	}{
		{[][2]string{{"status", "running"}, {"pid", "12"}}, "status=running pid=12"},
		{[][2]string{{"host", "a b"}}, `host="a b"`},
		{[][2]string{{"host", "x\nstatus=finished"}}, `host="x\nstatus=finished"`},
		{[][2]string{{"rc", ""}}, "rc="},
	}
	for _, tc := range tests {
		if got := FormatKV(tc.in); got != tc.want {
			t.Errorf("FormatKV(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzParseRecords(f *testing.F) {
	f.Add([]byte("status=running\npid=12\nrc=\nstart=1\nelapsed=3\n"))
	f.Add([]byte("job=a\nstatus=finished\nrc=0\n--\njob=b\nstatus=lost\n--\n"))
	f.Add([]byte("error=x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, rec := range parseRecords(b) {
			st, err := jobStatusFrom("h", "id", rec)
			if err == nil && st.Status == "" {
				t.Fatalf("accepted a record without status: %q", rec)
			}
			if err == nil && st.PID < 0 {
				t.Fatalf("negative pid from %q", rec)
			}
		}
	})
}

// TestJobStatusPidIdentity pins the two edges of "lost": a recorded pid
// that is alive but belongs to another process (reused after the job died)
// is lost, not running; and a command that has exited while its wrapper is
// still writing rc is running, not lost, so a poller never sees a spurious
// lost in that window.
func TestJobStatusPidIdentity(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	sh := localShell{}
	st, err := jobStart(ctx, sh, "local", wd, "real", []string{"sleep", "60"})
	if err != nil || st.Status != StatusStarted {
		t.Fatalf("start = %+v, %v", st, err)
	}
	real := filepath.Join(wd, "jobs", "real")
	t.Cleanup(func() { killJobGroup(real) })
	for _, f := range []string{"pstart", "pgstart"} {
		if b, err := os.ReadFile(filepath.Join(real, f)); err != nil || len(strings.TrimSpace(string(b))) == 0 {
			t.Fatalf("%s not recorded: %q, %v", f, b, err)
		}
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	copyJob := func(id string, edit map[string]string) {
		t.Helper()
		dir := filepath.Join(wd, "jobs", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"pid", "pstart", "pgid", "pgstart", "boot", "start"} {
			b, _ := os.ReadFile(filepath.Join(real, f))
			if v, ok := edit[f]; ok {
				b = []byte(v + "\n")
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Same live pids, recorded start times of other processes: pid reuse.
	copyJob("reused", map[string]string{"pstart": "1", "pgstart": "1"})
	// The command is gone, its wrapper (group leader) still alive.
	copyJob("finishing", map[string]string{"pid": strconv.Itoa(dead.Process.Pid)})
	tests := []struct{ id, want string }{{"real", StatusRunning}, {"reused", StatusLost}, {"finishing", StatusRunning}}
	for _, tc := range tests {
		got, err := jobStatus(ctx, sh, "local", wd, tc.id)
		if err != nil || got.Status != tc.want {
			t.Errorf("job %s: status = %+v, %v; want %s", tc.id, got, err, tc.want)
		}
	}
}
