package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/session"
)

// sutProc is a real long-running process standing in for the SUT on one
// namespace host: `sleep <secs>` (or args), its pid in a pidfile in the
// host's work dir, started — first by the test, later by a heal — with the
// host's SUT.StartScript, as deploy's start script would. Each start is
// counted in a file beside the pidfile; every process left in the
// namespace is killed, by pid, when the test's namespaces are removed.
type sutProc struct {
	t       *testing.T
	x       nsExec
	h       *Host
	pidfile string
	starts  string // one line per start
	args    []string
}

// newSUTProc launches `sleep <secs>` in h's namespace and points h.SUT at
// its pidfile and start script. secs is distinct per test so a pattern can
// name one.
func newSUTProc(t *testing.T, x nsExec, h *Host, secs string) *sutProc {
	t.Helper()
	s := &sutProc{t: t, x: x, h: h, pidfile: filepath.Join(h.Workdir, "sut.pid"), starts: filepath.Join(t.TempDir(), "starts"), args: []string{"sleep", secs}}
	h.SUT = &SUT{PIDFile: s.pidfile, StartScript: s.script()}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// script starts one more instance, detached, and records its pid.
func (s *sutProc) script() string {
	return fmt.Sprintf("echo x >> %s\n%s </dev/null >/dev/null 2>&1 &\necho $! > %s\n",
		shell.Quote(s.starts), shell.QuoteArgs(s.args), shell.Quote(s.pidfile))
}

// Start runs the start script on the host, as a heal would.
func (s *sutProc) Start(ctx context.Context) error {
	s.h.SUT.StartScript = s.script()
	_, err := s.x.Run(ctx, s.h.Host, s.h.SUT.StartScript)
	return err
}

func (s *sutProc) pid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(s.pidfile)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *sutProc) startCount() int {
	b, _ := os.ReadFile(s.starts)
	return strings.Count(string(b), "\n")
}

// procState reads field 3 of /proc/<pid>/stat here ("" when gone). A
// zombie is gone: a process a heal started from a host shell is orphaned,
// and whether this machine's PID 1 reaps it at once is not the test's
// business (the nemeses read a zombie as gone too).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	if st := strings.Fields(rest)[0]; st != "Z" {
		return st
	}
	return ""
}

func mustNemesis(t *testing.T, id string) Nemesis {
	t.Helper()
	n, err := Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// jsonMap decodes an evidence value keyed by host.
func jsonMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

func TestKillNemesesKillRealProcessAndHealRestarts(t *testing.T) {
	hosts, x := newCluster(t, 2)
	ctx := context.Background()
	for i, id := range []string{"kill-9", "kill-term"} {
		t.Run(id, func(t *testing.T) {
			hs := make([]Host, len(hosts))
			copy(hs, hosts)
			var procs []*sutProc
			for j := range hs {
				procs = append(procs, newSUTProc(t, x, &hs[j], fmt.Sprintf("%d.%d", 7100+i, j)))
			}
			old := []int{procs[0].pid(t), procs[1].pid(t)}
			a, err := mustNemesis(t, id).Inject(ctx, x, Fault{Epoch: "S2-w1", Nemesis: id, Targets: hs, Cluster: hs})
			if err != nil {
				t.Fatal(err)
			}
			for j, p := range old {
				if st := procState(t, p); st != "" {
					t.Errorf("h%d: pid %d state %q after %s, want gone", j+1, p, st, id)
				}
			}
			ev, err := a.Evidence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != "pid" || ev.Verdict != session.SignalChanged {
				t.Fatalf("evidence %+v, want pid changed", ev)
			}
			if b := jsonMap(t, ev.Before); b["h1"] != float64(old[0]) || b["h2"] != float64(old[1]) {
				t.Errorf("before %s, want the old pids %v", ev.Before, old)
			}
			if a := jsonMap(t, ev.After); a["h1"] != "gone" || a["h2"] != "gone" {
				t.Errorf("after %s, want gone on both", ev.After)
			}
			tc, err := a.TargetCheck(ctx)
			if err != nil || tc == nil || tc.Verdict != session.SignalChanged {
				t.Errorf("target check %+v, %v; want changed", tc, err)
			}
			if err := a.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			for j, p := range procs {
				if n := p.pid(t); n == old[j] || procState(t, n) == "" {
					t.Errorf("h%d: after heal pid %d (old %d, state %q), want a new live pid", j+1, n, old[j], procState(t, n))
				}
			}
			ev, err = a.Evidence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Verdict != session.SignalChanged || !strings.Contains(ev.Raw, "back with new pid") {
				t.Errorf("evidence after heal %+v, want changed and back with a new pid", ev)
			}
			// Heal is idempotent: the SUT runs, so nothing is started again.
			if err := a.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			for j, p := range procs {
				if n := p.startCount(); n != 2 {
					t.Errorf("h%d: %d starts after two heals, want 2 (the first and one restart)", j+1, n)
				}
			}
		})
	}
}

func TestKillHealWithoutStartSaysCannotRestart(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	p := newSUTProc(t, x, &hosts[0], "7110")
	hosts[0].SUT.StartScript = ""
	a, err := mustNemesis(t, "kill-9").Inject(ctx, x, Fault{Epoch: "S2-w1", Targets: hosts})
	if err != nil {
		t.Fatal(err)
	}
	if st := procState(t, p.pid(t)); st != "" {
		t.Fatalf("state %q after kill-9, want gone", st)
	}
	if err := a.Heal(ctx); err == nil || !strings.Contains(err.Error(), "cannot restart") {
		t.Errorf("heal without a start script: %v, want cannot restart", err)
	}
}

func TestPauseStopsThenHealContinues(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	p := newSUTProc(t, x, &hosts[0], "7120")
	pid := p.pid(t)
	a, err := mustNemesis(t, "pause").Inject(ctx, x, Fault{Epoch: "S3-w1", Targets: hosts})
	if err != nil {
		t.Fatal(err)
	}
	if st := procState(t, pid); st != "T" {
		t.Fatalf("state %q after pause, want T", st)
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "proc_state" || ev.Verdict != session.SignalChanged || string(ev.After) != `"T"` || string(ev.Before) == `"T"` {
		t.Errorf("evidence %+v, want proc_state non-T → T changed", ev)
	}
	tc, err := a.TargetCheck(ctx)
	if err != nil || tc == nil || tc.Verdict != session.SignalChanged {
		t.Errorf("target check %+v, %v; want changed", tc, err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if st := procState(t, pid); st == "T" || st == "" {
		t.Errorf("state %q after heal, want running again", st)
	}
	if _, err := os.Stat(undoPath(hosts[0].Workdir, "S3-w1", pauseUndoKind)); !os.IsNotExist(err) {
		t.Errorf("undo script still there after heal: %v", err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Errorf("second heal: %v", err)
	}
	if ev, _ := a.Evidence(ctx); ev.Verdict != session.SignalUnchanged {
		t.Errorf("evidence after heal %+v, want unchanged (no longer T)", ev)
	}
}

func TestHealAllContinuesAPauseLeftByACrash(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	p := newSUTProc(t, x, &hosts[0], "7130")
	pid := p.pid(t)
	if _, err := mustNemesis(t, "pause").Inject(ctx, x, Fault{Epoch: "S3-w2", Targets: hosts}); err != nil {
		t.Fatal(err)
	}
	if st := procState(t, pid); st != "T" {
		t.Fatalf("state %q after pause, want T", st)
	}
	// The orchestrator "crashed": only HealAll is left.
	removed, err := HealAll(ctx, x, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if st := procState(t, pid); st == "T" || st == "" {
		t.Errorf("state %q after HealAll, want running again", st)
	}
	if len(removed) != 1 || removed[0].What != "undo S3-w2.pause" {
		t.Errorf("removed %+v, want the pause undo", removed)
	}
}

func TestRestartGivesNewPID(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	p := newSUTProc(t, x, &hosts[0], "7140")
	old := p.pid(t)
	a, err := mustNemesis(t, "restart").Inject(ctx, x, Fault{Epoch: "S4-w1", Targets: hosts})
	if err != nil {
		t.Fatal(err)
	}
	now := p.pid(t)
	if now == old || procState(t, now) == "" || procState(t, old) != "" {
		t.Fatalf("after restart pid %d (old %d, states %q/%q), want old gone and a new one live", now, old, procState(t, old), procState(t, now))
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Verdict != session.SignalChanged || string(ev.Before) != strconv.Itoa(old) || string(ev.After) != strconv.Itoa(now) {
		t.Errorf("evidence %+v, want pid %d → %d changed", ev, old, now)
	}
	if err := a.Heal(ctx); err != nil || p.startCount() != 2 {
		t.Errorf("heal after restart: %v, %d starts; want nil and no further start", err, p.startCount())
	}

	hosts[0].SUT.StartScript = ""
	if _, err := mustNemesis(t, "restart").Inject(ctx, x, Fault{Epoch: "S4-w2", Targets: hosts}); err == nil || !strings.Contains(err.Error(), "cannot restart") {
		t.Errorf("restart without a start script: %v, want cannot restart", err)
	}
	if procState(t, now) == "" {
		t.Error("restart without a start script stopped the SUT anyway")
	}
}

func TestProcessFaultsFindTheSUT(t *testing.T) {
	hosts, x := newCluster(t, 2)
	ctx := context.Background()
	a := newSUTProc(t, x, &hosts[0], "7150.5")
	b := newSUTProc(t, x, &hosts[1], "7150.5")
	cases := []struct {
		name    string
		sut     *SUT
		wantErr string // "" = kill-9 lands on a's pid
	}{
		{"pattern matching both hosts' processes", &SUT{Pattern: "sleep " + a.args[1]}, "matches 2 processes"},
		{"no SUT", nil, "no SUT process on this host"},
		{"empty SUT", &SUT{}, "no SUT process on this host"},
		{"pidfile of a dead pid", &SUT{PIDFile: filepath.Join(hosts[0].Workdir, "absent.pid")}, "not running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := hosts[0]
			h.SUT = c.sut
			_, err := mustNemesis(t, "kill-9").Inject(ctx, x, Fault{Epoch: "S2-w9", Targets: []Host{h}})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if c.wantErr == "matches 2 processes" && (!strings.Contains(err.Error(), strconv.Itoa(a.pid(t))) || !strings.Contains(err.Error(), strconv.Itoa(b.pid(t)))) {
				t.Errorf("err %v does not name both pids %d and %d", err, a.pid(t), b.pid(t))
			}
			if procState(t, a.pid(t)) == "" || procState(t, b.pid(t)) == "" {
				t.Error("a refused fault killed a process")
			}
		})
	}
	t.Run("pattern single match", func(t *testing.T) {
		h := hosts[0]
		c := newSUTProc(t, x, &h, "7151.25")
		pid := c.pid(t)
		h.SUT = &SUT{Pattern: `sleep 7151\.25`}
		act, err := mustNemesis(t, "kill-9").Inject(ctx, x, Fault{Epoch: "S2-w8", Targets: []Host{h}})
		if err != nil {
			t.Fatal(err)
		}
		if procState(t, pid) != "" {
			t.Errorf("pid %d still there after kill-9 by pattern", pid)
		}
		ev, err := act.Evidence(ctx)
		if err != nil || ev.Verdict != session.SignalChanged || string(ev.Before) != strconv.Itoa(pid) {
			t.Errorf("evidence %+v, %v; want pid %d changed", ev, err, pid)
		}
	})
}

// A kill arms the way back before it kills: `dstgen heal --all` after a
// run that died mid-window (nothing of its process left, only the host's
// undo scripts) restarts the SUT dstgen killed — once, however often it
// runs.
func TestHealAllRestartsASUTAKillLeftDown(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	p := newSUTProc(t, x, &hosts[0], "7131")
	old := p.pid(t)
	if _, err := mustNemesis(t, "kill-9").Inject(ctx, x, Fault{Epoch: "S2-w1", Targets: hosts}); err != nil {
		t.Fatal(err)
	}
	if st := procState(t, old); st != "" {
		t.Fatalf("state %q after kill-9, want gone", st)
	}
	// The run that injected it is gone: only HealAll, as `dstgen heal`.
	removed, err := HealAll(ctx, x, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].What != "undo S2-w1.restart" {
		t.Errorf("removed %+v, want the restart undo", removed)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.pid(t) == old && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if now := p.pid(t); now == old || procState(t, now) == "" || p.startCount() != 2 {
		t.Fatalf("after heal: pid %d (was %d) state %q, %d starts; want the SUT back, started once more", now, old, procState(t, now), p.startCount())
	}
	if removed, err := HealAll(ctx, x, hosts); err != nil || len(removed) != 0 || p.startCount() != 2 {
		t.Errorf("a second heal: removed %+v, %v, %d starts; want nothing and no further start", removed, err, p.startCount())
	}
}
