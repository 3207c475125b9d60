package nemesis

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/shell"
)

// armedUndo writes, under a fresh workdir, an undo script that fails if
// another run of it is under way (a mkdir it holds for 300 ms) and
// appends a line to count each time it completes.
func armedUndo(t *testing.T) (h Host, script, count string) {
	t.Helper()
	wd := t.TempDir()
	h = Host{Host: env.Host{Name: "h1"}, Workdir: wd}
	script = undoPath(wd, "S1-w1", undoKindIptables)
	count = filepath.Join(wd, "count")
	busy := filepath.Join(wd, "busy")
	body := "mkdir " + shell.Quote(busy) + " || { echo 'undone twice at once' >&2; exit 1; }\nsleep 0.3\nrmdir " + shell.Quote(busy) + "\necho done >> " + shell.Quote(count) + "\n"
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script+leaseSuffix, []byte("0 tok-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return h, script, count
}

func runs(t *testing.T, count string) int {
	t.Helper()
	b, err := os.ReadFile(count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "done")
}

// A window's heal and the dead-man timer whose lease ran out while that
// heal was under way meet on the same undo script (suite run 8e177e0: the
// loser's `iptables -F` found the chain the winner had deleted, and the
// heal failed). However many heals start at once, the script runs once
// and none of them fails.
func TestConcurrentHealsOfOneFaultRunItsUndoOnce(t *testing.T) {
	h, script, count := armedUndo(t)
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = runUndo(context.Background(), localExec{}, h, "S1-w1", undoKindIptables) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("heal %d of %d: %v", i+1, n, err)
		}
	}
	if got := runs(t, count); got != 1 {
		t.Errorf("undo script ran %d times, want 1", got)
	}
	if _, err := os.Stat(script); !os.IsNotExist(err) {
		t.Errorf("undo script left behind after its heal: %v", err)
	}
	if _, err := os.Stat(script + ".run"); !os.IsNotExist(err) {
		t.Errorf("lock left behind after the heal: %v", err)
	}
}

// The lock's edge cases, through the shell function itself: a lock whose
// holder died (an SSH session cut mid-heal) is taken over; the dead-man
// timer's call runs the script only while the lease still names its own
// token (a heal and a re-injection may have come between).
func TestUndoLock(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		lockPID  int // a lock directory left by this pid; 0 none
		token    string
		wantCode int
		wantRuns int
	}{
		{name: "no lock", wantCode: 0, wantRuns: 1},
		{name: "lock of a dead holder", lockPID: dead.Process.Pid, wantCode: 0, wantRuns: 1},
		{name: "timer's own token", token: "tok-1", wantCode: 0, wantRuns: 1},
		{name: "lease names another injection", token: "tok-0", wantCode: 3, wantRuns: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, script, count := armedUndo(t)
			if c.lockPID != 0 {
				if err := os.Mkdir(script+".run", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(script+".run/pid", []byte(strconv.Itoa(c.lockPID)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			call := "dstgen_undo " + shell.Quote(script)
			if c.token != "" {
				call += " " + shell.Quote(c.token)
			}
			out, err := localExec{}.Run(context.Background(), env.Host{}, undoOnce+call+"\necho code=$?")
			if err != nil {
				t.Fatalf("%v (%s)", err, out)
			}
			if want := "code=" + strconv.Itoa(c.wantCode); !strings.Contains(out, want) {
				t.Errorf("got %q, want %s", out, want)
			}
			if got := runs(t, count); got != c.wantRuns {
				t.Errorf("undo script ran %d times, want %d", got, c.wantRuns)
			}
		})
	}
}
