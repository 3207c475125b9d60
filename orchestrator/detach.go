package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/wait"
	"github.com/dstgen/dstgen/session"
)

// Files of a detached run, in its session directory.
const (
	PIDFile = "run.pid" // written by the run itself, first thing
	rcFile  = "run.rc"  // written by the run itself, last thing
	OutFile = "run.out" // its stdout and stderr
)

// Detached-run states (`dstgen run status`).
const (
	StateRunning  = "running"
	stateFinished = "finished"
	StateLost     = "lost" // no rc and the pid is gone: killed, or the machine rebooted
)

// Detach starts argv (the same `dstgen run` without --detach) as a
// process of its own session (setsid), stdin /dev/null, stdout and stderr
// to <dir>/run.out, and waits up to wait for the child to write its own
// pid to <dir>/run.pid — the pid recorded from inside the child, not the
// one a wrapper saw (docs/dst-run.md §7).
func Detach(dir string, argv []string, wait time.Duration) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("detach: no command")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("detach: %w", err)
	}
	for _, n := range []string{PIDFile, rcFile} {
		_ = os.Remove(filepath.Join(dir, n))
	}
	out, err := os.OpenFile(filepath.Join(dir, OutFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("detach: %w", err)
	}
	defer out.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, fmt.Errorf("detach: %w", err)
	}
	defer null.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("detach: start %s: %w", argv[0], err)
	}
	// Reap it if it ends while we wait; never block on it afterwards.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(wait)
	for i := 0; i < 1000; i++ {
		if pid, err := readPID(dir); err == nil {
			return pid, nil
		}
		select {
		case err := <-exited:
			if pid, perr := readPID(dir); perr == nil {
				return pid, nil
			}
			return 0, fmt.Errorf("detach: the run exited before it started (%v); see %s", err, filepath.Join(dir, OutFile))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return cmd.Process.Pid, nil
}

// MarkChild is called by the detached run itself: it writes its own pid
// to <dir>/run.pid and returns the function that writes the exit code to
// <dir>/run.rc at the end.
func MarkChild(dir string) (func(rc int), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("detached run: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("detached run: %w", err)
	}
	return func(rc int) { _ = atomicfile.Write(filepath.Join(dir, rcFile), []byte(strconv.Itoa(rc)+"\n"), 0o644) }, nil
}

func readInt(p string) (int, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readPID(dir string) (int, error) { return readInt(filepath.Join(dir, PIDFile)) }

// DetachedStatus is what `dstgen run status` reports, from the session's
// files alone (no SSH: it answers at once).
type DetachedStatus struct {
	State   string
	PID     int
	RC      *int
	Phase   string
	Unit    string
	Elapsed time.Duration
}

// Fields are the key=value pairs of the status line.
func (s DetachedStatus) Fields() [][2]string {
	rc := ""
	if s.RC != nil {
		rc = strconv.Itoa(*s.RC)
	}
	return [][2]string{{"status", s.State}, {"unit", s.Unit}, {"phase", s.Phase},
		{"elapsed", s.Elapsed.Round(time.Second).String()}, {"rc", rc}, {"pid", strconv.Itoa(s.PID)}}
}

// alive reports whether pid is a live process (zombies count as gone).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill -0
	}
	// The state is the field after the ")" that ends the command name.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

var phaseRE = lazyre.New(`unit=(\S+) .*phase=(\S+)`)

// lastPhase reads the last phase line of the session log (its tail only).
func lastPhase(dir string) (unit, phase string) {
	f, err := os.Open(filepath.Join(dir, session.SessionLog))
	if err != nil {
		return "", ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if m := phaseRE.FindStringSubmatch(lines[i]); m != nil {
			return m[1], m[2]
		}
		if strings.Contains(lines[i], "checkpoint scenario=") {
			kv := map[string]string{}
			for _, f := range strings.Fields(lines[i]) {
				if k, v, ok := strings.Cut(f, "="); ok {
					kv[k] = v
				}
			}
			return kv["scenario"], kv["phase"]
		}
	}
	return "", ""
}

// StatusOf reads a detached run's state: finished when run.rc exists,
// running while its pid lives, lost otherwise.
func StatusOf(dir string) (DetachedStatus, error) {
	var s DetachedStatus
	pid, err := readPID(dir)
	if err != nil {
		return s, fmt.Errorf("%s: no detached run here (%s: %v)", dir, PIDFile, err)
	}
	s.PID = pid
	if fi, err := os.Stat(filepath.Join(dir, PIDFile)); err == nil {
		s.Elapsed = time.Since(fi.ModTime())
	}
	s.Unit, s.Phase = lastPhase(dir)
	if rc, err := readInt(filepath.Join(dir, rcFile)); err == nil {
		s.RC, s.State = &rc, stateFinished
		if fi, err := os.Stat(filepath.Join(dir, rcFile)); err == nil {
			if pf, err := os.Stat(filepath.Join(dir, PIDFile)); err == nil {
				s.Elapsed = fi.ModTime().Sub(pf.ModTime())
			}
		}
		return s, nil
	}
	if alive(pid) {
		s.State = StateRunning
	} else {
		s.State = StateLost
	}
	return s, nil
}

// StopDetached sends SIGTERM to the detached run (which heals on it) and
// waits, bounded by wait, until it wrote its rc or died.
func StopDetached(ctx context.Context, dir string, grace time.Duration) (DetachedStatus, error) {
	s, err := StatusOf(dir)
	if err != nil || s.State != StateRunning {
		return s, err
	}
	if err := syscall.Kill(s.PID, syscall.SIGTERM); err != nil {
		return s, fmt.Errorf("stop pid %d: %w", s.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	for i := 0; i < 100000; i++ {
		s, err = StatusOf(dir)
		if err != nil || s.State != StateRunning {
			return s, err
		}
		if wait.Sleep(ctx, 200*time.Millisecond) != nil {
			return s, fmt.Errorf("stop pid %d: still running after %s", s.PID, grace)
		}
	}
	return s, nil
}
