package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// RunUnit against the fake world: the stages of docs/dst-run.md §7 with
// real shell scripts on fake hosts, a real history and real evidence, in
// seconds and without root.

func TestRunUnitLandsAFaultAndHeals(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 7, 3*time.Second))
	if out.Code != codeOK || out.Err != nil {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	run, err := session.LoadRun(out.RunPath)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Attempted || len(run.FaultWindows) != 1 {
		t.Fatalf("attempted %v windows %d", run.Attempted, len(run.FaultWindows))
	}
	fw := run.FaultWindows[0]
	if verdictOf(fw.InjectorEvidence) != session.SignalChanged || verdictOf(fw.VictimEvidence) != session.SignalChanged || !fw.Landed {
		t.Errorf("window %s: injector %s victim %s landed %v", fw.FaultEpoch, verdictOf(fw.InjectorEvidence), verdictOf(fw.VictimEvidence), fw.Landed)
	}
	if run.Workload.OpsProduced == 0 || run.Workload.ExitStatus == nil || *run.Workload.ExitStatus != 0 {
		t.Errorf("workload %+v", run.Workload)
	}
	// The history's header says how it was recorded; without a leader
	// query no failover could be seen, so none is counted.
	if run.Recorder == nil || run.Recorder.Mechanism != "in-process" || run.Failovers != nil {
		t.Errorf("recorder %+v failovers %v; want in-process and no count", run.Recorder, run.Failovers)
	}
	if _, ops, _, err := history.ReadFile(filepath.Join(filepath.Dir(out.RunPath), "history.jsonl")); err != nil || len(ops) != run.Workload.OpsProduced {
		t.Errorf("collected history: %d ops, %v", len(ops), err)
	}
	if left := w.leftFaulted(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if r := w.running(); len(r) > 0 {
		t.Errorf("jobs still running: %v", r)
	}
}

// Every way out of a unit that touched the hosts heals every host and
// leaves its record: a stage's error, a cancelled context mid-window, a
// panic in a stage.
func TestRunUnitHealsOnEveryWayOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(w *fakeWorld, f *faultSpec, cancel context.CancelFunc)
		reason string
	}{
		{"a stage's error", func(w *fakeWorld, f *faultSpec, _ context.CancelFunc) {
			f.inject = `touch "$DSTGEN_WORKDIR/faulted"; echo refused >&2; exit 1` // applied half, then failed
		}, "inject custom"},
		{"context cancelled mid-window", func(_ *fakeWorld, _ *faultSpec, cancel context.CancelFunc) {
			time.AfterFunc(1300*time.Millisecond, cancel)
		}, "interrupted"},
		{"panic in a stage", func(w *fakeWorld, _ *faultSpec, _ context.CancelFunc) {
			w.panicOn = "injections\" 2>/dev/null || echo 0" // the evidence read, mid-window
		}, "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWorld(t, 3)
			o := testOrchestrator(t, w)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := faultSpec{}
			tc.set(w, &f, cancel)
			fault := markerFault("1s", "1500ms")
			if f.inject != "" {
				fault.Custom.Inject = f.inject
			}
			w.mu.Lock()
			panicOn := w.panicOn
			w.panicOn = "" // armed once the window is open
			w.mu.Unlock()
			if panicOn != "" {
				time.AfterFunc(1100*time.Millisecond, func() { w.mu.Lock(); w.panicOn = panicOn; w.mu.Unlock() })
			}
			out := o.RunUnit(ctx, unitOf(fault), attemptIn(o, 1, 3*time.Second))
			if out.Code != codeNotRun || out.Err == nil || !strings.Contains(out.Err.Error(), tc.reason) {
				t.Fatalf("outcome %d %v, want not-run naming %q", out.Code, out.Err, tc.reason)
			}
			run, err := session.LoadRun(out.RunPath)
			if err != nil {
				t.Fatalf("run record: %v", err)
			}
			if run.Heal == nil || len(run.Heal.Errors) > 0 {
				t.Errorf("heal record %+v", run.Heal)
			}
			for _, h := range w.hosts {
				if len(w.ran(h.Name, "removed undo")) == 0 {
					t.Errorf("HealAll never ran on %s", h.Name)
				}
			}
			if left := w.leftFaulted(); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if r := w.running(); len(r) > 0 {
				t.Errorf("the workload job still runs after the unit: %v", r)
			}
		})
	}
}

// faultSpec is what a test case changes of markerFault.
type faultSpec struct{ inject string }

// An injector reading that gives no number is ambiguous, never changed:
// the window is not landed, and the run still heals and ends.
func TestRunUnitWindowWhoseEvidenceReadFails(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	f := markerFault("1s", "1s")
	f.Custom.Evidence = `echo "no counter here"`
	out := o.RunUnit(context.Background(), unitOf(f), attemptIn(o, 3, 3*time.Second))
	if out.Code != codeOK {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	fw := out.Run.FaultWindows[0]
	if got := verdictOf(fw.InjectorEvidence); got != session.SignalAmbiguous || fw.Landed {
		t.Errorf("injector %s landed %v: an unreadable counter must not land the window", got, fw.Landed)
	}
	if left := w.leftFaulted(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A host that does not answer: at pre-flight the unit does not start
// (missing capability reach); mid-run every call to it is bounded, the
// others are healed, and the reason names it.
func TestRunUnitHostThatNeverAnswers(t *testing.T) {
	t.Run("unreachable at pre-flight", func(t *testing.T) {
		w := newFakeWorld(t, 3)
		w.unreachable["h2"] = true
		o := testOrchestrator(t, w)
		out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 1, 3*time.Second))
		if out.Code != codeNotRun || out.Run.MissingCapability == nil || out.Run.MissingCapability.Requirement != "reach h2" {
			t.Fatalf("outcome %d %v missing %+v", out.Code, out.Err, out.Run.MissingCapability)
		}
		if out.Run.Attempted || len(w.ran("", "job start")) > 0 {
			t.Error("the workload started on a cluster with a host down")
		}
	})
	t.Run("hangs mid-run", func(t *testing.T) {
		w := newFakeWorld(t, 3)
		o := testOrchestrator(t, w)
		f := markerFault("1s", "1s")
		f.Targets = "h2"
		time.AfterFunc(500*time.Millisecond, func() { w.mu.Lock(); w.hang["h2"] = true; w.mu.Unlock() })
		start := time.Now()
		out := o.RunUnit(context.Background(), unitOf(f), attemptIn(o, 1, 3*time.Second))
		if out.Code != codeNotRun || out.Err == nil || !strings.Contains(out.Err.Error(), "h2") {
			t.Fatalf("outcome %d %v, want not-run naming h2", out.Code, out.Err)
		}
		// Generous: the point is that it ends, with every wait bounded.
		if d := time.Since(start); d > time.Minute {
			t.Errorf("the unit took %s with one host hung", d)
		}
		for _, h := range []string{"h1", "h3", "c1"} {
			if len(w.ran(h, "removed undo")) == 0 {
				t.Errorf("HealAll skipped %s because h2 hung", h)
			}
		}
	})
}

// A re-run replays the recorded schedule: same windows at the same times
// on the same targets; and the schedule is a pure function of the seed.
func TestRunUnitReplaysTheScheduleFromASeed(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	u := unitOf(markerFault("500ms", "500ms"), markerFault("1600ms", "400ms"))
	first := o.RunUnit(context.Background(), u, attemptIn(o, 42, 3*time.Second))
	if first.Code != codeOK {
		t.Fatalf("first %d %v", first.Code, first.Err)
	}
	again, _, err := expandSchedule("S1", u.Scenario.Faults, 42, 3*time.Second, 0)
	if err != nil || !reflect.DeepEqual(again, first.Run.Schedule) {
		t.Fatalf("Schedule(seed 42) = %+v, %v; recorded %+v", again, err, first.Run.Schedule)
	}
	a := attemptIn(o, 42, 3*time.Second)
	a.Dir = filepath.Join(a.Dir, "rerun-1")
	a.Schedule = first.Run.Schedule
	a.ReRunOf = &session.RunRef{File: "run.json", Seed: 42}
	rerun := o.RunUnit(context.Background(), u, a)
	if rerun.Code != codeOK {
		t.Fatalf("rerun %d %v", rerun.Code, rerun.Err)
	}
	if !reflect.DeepEqual(rerun.Run.Schedule, first.Run.Schedule) || len(rerun.Run.FaultWindows) != 2 {
		t.Fatalf("rerun schedule %+v windows %d", rerun.Run.Schedule, len(rerun.Run.FaultWindows))
	}
	for i, fw := range rerun.Run.FaultWindows {
		was := first.Run.FaultWindows[i]
		if fw.FaultEpoch != was.FaultEpoch || !reflect.DeepEqual(fw.Targets, was.Targets) {
			t.Errorf("window %d: %s on %v, first run %s on %v", i, fw.FaultEpoch, fw.Targets, was.FaultEpoch, was.Targets)
		}
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "run.json")); err != nil {
		t.Errorf("rerun record: %v", err)
	}
}

// A victim reading whose baseline (before the fault) failed is unknown,
// never "changed": a leader query that failed before reads any leader
// after as new; a metric summed over the hosts that answered is smaller
// than a later full sum; a log whose size was not read would be read from
// its first byte, old markers included (issue: a failed before-reading
// became "landed").
func TestRunUnitFailedBeforeReadingIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		landing scenarios.Landing
		set     func(w *fakeWorld, f *scenarios.Fault, s *scenarios.Scenario)
	}{
		{"leader query failed before", scenarios.Landing{LeaderChange: true}, func(w *fakeWorld, f *scenarios.Fault, s *scenarios.Scenario) {
			// No host knows a leader until the fault names one.
			s.LeaderQuery = `cat "$HOME/leader"`
			f.Custom.Inject += `; echo "$DSTGEN_HOST" > "$DSTGEN_WORKDIR/leader"`
		}},
		{"metric failed on one host before", scenarios.Landing{Metric: `cat "$HOME/m" 2>/dev/null || echo 5`}, func(w *fakeWorld, f *scenarios.Fault, _ *scenarios.Scenario) {
			w.failOnHost["h2"] = `cat "$HOME/m"`
			time.AfterFunc(1500*time.Millisecond, func() { w.mu.Lock(); delete(w.failOnHost, "h2"); w.mu.Unlock() })
		}},
		{"log size failed on one host before", scenarios.Landing{Log: "elected leader"}, func(w *fakeWorld, _ *scenarios.Fault, _ *scenarios.Scenario) {
			w.logs = true
			for _, h := range []string{"h1", "h2", "h3"} {
				if err := os.WriteFile(filepath.Join(w.workdir(h), "sut.log"), []byte("old: elected leader h1 at term 3\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w.failOnHost["h1"] = "wc -c <"
			time.AfterFunc(1500*time.Millisecond, func() { w.mu.Lock(); delete(w.failOnHost, "h1"); w.mu.Unlock() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWorld(t, 3)
			o := testOrchestrator(t, w)
			f := markerFault("1s", "1s")
			f.Targets = "h1,h2,h3"
			l := tc.landing
			f.Landing = &l
			u := unitOf(f)
			tc.set(w, &u.Scenario.Faults[0], u.Scenario)
			out := o.RunUnit(context.Background(), u, attemptIn(o, 1, 3*time.Second))
			if out.Run == nil || len(out.Run.FaultWindows) != 1 {
				t.Fatalf("outcome %d %v", out.Code, out.Err)
			}
			fw := out.Run.FaultWindows[0]
			if got := verdictOf(fw.VictimEvidence); got == session.SignalChanged || fw.Landed {
				t.Fatalf("victim %s (%+v) landed %v: a failed baseline must not prove a change", got, fw.VictimEvidence, fw.Landed)
			}
		})
	}
}

// A fault applied on some targets before it failed on another is healed
// at once, and its window records the span it was there (injector_ok
// false, so never landed) instead of pretending it never happened.
func TestRunUnitHealsAPartialInjectAtOnce(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	f := markerFault("1s", "1s")
	f.Targets = "h1,h2,h3"
	w.failOnHost["h2"] = `touch "$DSTGEN_WORKDIR/faulted"`
	out := o.RunUnit(context.Background(), unitOf(f), attemptIn(o, 1, 3*time.Second))
	if out.Code != codeNotRun || out.Run == nil || len(out.Run.FaultWindows) != 1 {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	fw := out.Run.FaultWindows[0]
	if fw.InjectedAtNS == nil || fw.RevertedAtNS == nil || fw.InjectorOK == nil || *fw.InjectorOK || fw.Landed {
		t.Fatalf("window %+v: want injected, reverted, injector_ok false, not landed", fw)
	}
	heal := w.ran("h1", "case $? in 0|3) ;; 4)") // runUndo's call, not heal --all's
	final := w.ran("h1", "removed undo")
	if len(heal) == 0 || len(final) == 0 || !heal[0].at.Before(final[0].at) {
		t.Errorf("h1's part was not healed before the final heal (window heal %d, final %d)", len(heal), len(final))
	}
}

// The driver host's clock puts the windows on the history's clock: an
// offset never measured is unknown — no op is stamped, every op near a
// window is ambiguous and the history proves no landing — never 0 ± 0;
// and the drift a second measurement after the run shows widens the
// uncertainty the stamps are made with.
func TestRunUnitDriverClockUnknownOrDrifting(t *testing.T) {
	t.Run("never measured", func(t *testing.T) {
		w := newFakeWorld(t, 3)
		w.noClock["c1"] = true
		o := testOrchestrator(t, w)
		out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 1, 3*time.Second))
		tl := out.Run.Timeline
		if tl == nil || !tl.DriverClockUnknown || tl.StampedOps != 0 || tl.AmbiguousOps == 0 {
			t.Fatalf("timeline %+v: want the driver clock unknown, nothing stamped, ops ambiguous", tl)
		}
		if fw := out.Run.FaultWindows[0]; verdictOf(fw.VictimEvidence) != session.SignalUnknown || fw.Landed {
			t.Errorf("victim %s landed %v: a history off an unknown clock proves nothing", verdictOf(fw.VictimEvidence), fw.Landed)
		}
	})
	t.Run("drift widens the uncertainty", func(t *testing.T) {
		w := newFakeWorld(t, 3)
		w.clockEnd = 300 * time.Millisecond
		o := testOrchestrator(t, w)
		out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 1, 3*time.Second))
		tl := out.Run.Timeline
		if tl == nil || tl.DriverEnd == nil || tl.StampUncertaintyNS < int64(300*time.Millisecond) {
			t.Fatalf("timeline %+v: want the end measurement and an uncertainty of at least the 300 ms drift", tl)
		}
		if tl.AmbiguousOps < 40 {
			t.Errorf("%d ambiguous ops: 300 ms of uncertainty at each edge of a window at 2 ops/5 ms holds more", tl.AmbiguousOps)
		}
	})
}

// ops_produced is the driver's own count from its summary line, not the
// history's line count, so records a driver lost between issuing them and
// the file show as ops the checker never consumed.
func TestRunUnitOpsProducedIsTheDriversCount(t *testing.T) {
	w := newFakeWorld(t, 3)
	w.lostOps = 7
	o := testOrchestrator(t, w)
	out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 1, 3*time.Second))
	_, ops, _, err := history.ReadFile(filepath.Join(filepath.Dir(out.RunPath), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if wl := out.Run.Workload; wl.OpsProduced != len(ops)+7 || wl.OpsProducedBy != "driver" {
		t.Errorf("ops_produced %d by %q, history %d ops: want the driver's %d", wl.OpsProduced, wl.OpsProducedBy, len(ops), len(ops)+7)
	}
}

// A run never starts on hosts an earlier run left faulted: pre-flight
// finds the leftover (an undo script still armed) and refuses, naming it;
// asked to heal first it heals, records that, and runs — with tags that
// carry this session's id, so its faults never pass for the old ones.
func TestRunUnitRefusesOrHealsWhatAnEarlierRunLeft(t *testing.T) {
	leave := func(w *fakeWorld) {
		dir := filepath.Join(w.workdir("h2"), "nemesis", "active")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "20261201T000000Z.S1-w1.custom.sh"), []byte(`rm -f "$HOME/faulted"`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.workdir("h2"), "faulted"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("refused", func(t *testing.T) {
		w := newFakeWorld(t, 3)
		leave(w)
		o := testOrchestrator(t, w)
		out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 1, 3*time.Second))
		m := out.Run.MissingCapability
		if out.Code != codeNotRun || m == nil || !strings.Contains(m.Reason, "h2: undo 20261201T000000Z.S1-w1.custom") || out.Run.Attempted {
			t.Fatalf("outcome %d %v missing %+v attempted %v", out.Code, out.Err, m, out.Run.Attempted)
		}
	})
	t.Run("healed first", func(t *testing.T) {
		w := newFakeWorld(t, 3)
		leave(w)
		o := testOrchestrator(t, w)
		o.healFirst = true
		out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 1, 3*time.Second))
		if out.Code != codeOK {
			t.Fatalf("outcome %d %v", out.Code, out.Err)
		}
		if h := out.Run.Heal; h == nil || !strings.Contains(strings.Join(h.Removed, ";"), "before the run: h2: undo 20261201T000000Z.S1-w1.custom") {
			t.Errorf("heal record %+v: want the leftover healed before the run", out.Run.Heal)
		}
		if armed := w.ran("", "nemesis/active/20261202T000000Z.S1-w1.custom.sh"); len(armed) == 0 {
			t.Error("this run's undo script does not carry its session id")
		}
	})
}

// A §6b requirement of the unit's scenario that the SUT hosts lack makes
// the unit INCONCLUSIVE-env before anything runs (what validate said);
// one of another scenario, or one the hosts have, does not.
func TestRunUnitMissingPlanRequirementIsInconclusiveEnv(t *testing.T) {
	reqs := []plan.EnvReq{
		{Requirement: "etcd-server", UsedBy: []string{"S1", "S2"}, InstallHint: "`apt-get install etcd-server`", Line: 40},
		{Requirement: "etcd-client (etcdctl)", UsedBy: []string{"S1"}, Line: 41},
		{Requirement: "toxiproxy-cli (toxiproxy-cli)", UsedBy: []string{"S9"}, Line: 42},
	}
	for _, tc := range []struct {
		name    string
		missing []string
		want    string // the missing requirement, "" = the unit runs
	}{
		{"every binary there", nil, ""},
		{"another scenario's binary missing", []string{"toxiproxy-cli"}, ""},
		{"its own binary missing", []string{"etcd"}, "etcd-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWorld(t, 3)
			for _, b := range tc.missing {
				w.noBinary[b] = true
			}
			o := testOrchestrator(t, w)
			o.reqs = reqs
			out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 7, 3*time.Second))
			run, err := session.LoadRun(out.RunPath)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if out.Code != codeOK || run.MissingCapability != nil || run.Workload.OpsProduced == 0 {
					t.Fatalf("outcome %d %v, missing %+v, ops %d; want a run", out.Code, out.Err, run.MissingCapability, run.Workload.OpsProduced)
				}
				return
			}
			mc := run.MissingCapability
			if mc == nil || mc.Requirement != tc.want || !strings.Contains(mc.Reason, "plan §6b line 40") || !strings.Contains(mc.Reason, "apt-get install etcd-server") {
				t.Fatalf("missing capability %+v, want %s with its plan line and hint", mc, tc.want)
			}
			if len(w.ran("c1", "nohup")) > 0 || len(w.jobs) > 0 {
				t.Errorf("the workload started although the scenario cannot run")
			}
		})
	}
}

// Two client hosts each run a share of the workload — their own job,
// DSTGEN_SHARE, half the rate, their own history — and the run keeps one
// history: both shares' ops, on one clock, every id naming its host, the
// driver's counts summed.
func TestRunUnitTwoClientsShareTheWorkload(t *testing.T) {
	w := newFakeWorldClients(t, 3, 2)
	o := testOrchestrator(t, w)
	out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 7, 3*time.Second))
	if out.Code != codeOK || out.Err != nil {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	run, err := session.LoadRun(out.RunPath)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []string{"c1", "c2"} {
		vars := w.jobVars[c+"/"+findJob(t, w, c)]
		if vars["DSTGEN_SHARE"] != strconv.Itoa(i)+"/2" || vars["DSTGEN_RATE"] != "50" {
			t.Errorf("%s: DSTGEN_SHARE=%q DSTGEN_RATE=%q; want %d/2 and half of 100", c, vars["DSTGEN_SHARE"], vars["DSTGEN_RATE"], i)
		}
	}
	_, ops, _, err := history.ReadFile(filepath.Join(filepath.Dir(out.RunPath), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, op := range ops {
		host, _, _ := strings.Cut(op.ProcessID, "/")
		per[host]++
		if !strings.HasPrefix(op.OpID, host+"/") {
			t.Fatalf("op %s of process %s: its id does not name its host", op.OpID, op.ProcessID)
		}
	}
	if per["c1"] == 0 || per["c2"] == 0 || len(per) != 2 {
		t.Errorf("merged history ops per host %v, want both clients", per)
	}
	if run.Workload.OpsProduced != len(ops) || run.Workload.OpsProducedBy != "driver" {
		t.Errorf("ops_produced %d (%s), merged history %d ops", run.Workload.OpsProduced, run.Workload.OpsProducedBy, len(ops))
	}
	if tl := run.Timeline; tl == nil || !slices.Equal(tl.Drivers, []string{"c1", "c2"}) || tl.StampedOps == 0 {
		t.Errorf("timeline %+v: want both drivers and stamped ops", tl)
	}
	if r := w.running(); len(r) > 0 {
		t.Errorf("jobs still running: %v", r)
	}
}

// findJob is the id of the one workload job started on host.
func findJob(t *testing.T, w *fakeWorld, host string) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.jobs {
		if h, id, _ := strings.Cut(k, "/"); h == host && strings.HasPrefix(id, "wl-") {
			return id
		}
	}
	t.Fatalf("no workload job on %s", host)
	return ""
}

// Without a quiesce command, a run with faults on a SUT dstgen deployed
// is called back to nominal only once deploy's own check (every member
// running, sut.health) passes after the last heal, and not when it never
// does within the bound; a SUT it did not deploy records no recovery.
func TestRunUnitRecoveryFromTheDeployCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deployed bool
		checkErr func(int) error
		want     *bool
		evidence string
	}{
		{"back after two failed checks", true, func(n int) error {
			if n >= 2 && n <= 3 { // call 1 is the pre-flight
				return errors.New("deploy check: the SUT is not running on h2=failed")
			}
			return nil
		}, new(true), "the SUT's deploy check"},
		{"never back", true, func(n int) error {
			if n >= 2 {
				return errors.New("deploy check: health of h2 (sut) failed: not synced")
			}
			return nil
		}, new(false), "health of h2 (sut) failed"},
		{"not deployed by dstgen", false, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWorld(t, 3)
			w.deployed, w.checkErr = tc.deployed, tc.checkErr
			o := testOrchestrator(t, w)
			out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 7, 3*time.Second))
			if out.Err != nil {
				t.Fatalf("outcome %d %v", out.Code, out.Err)
			}
			run, err := session.LoadRun(out.RunPath)
			if err != nil {
				t.Fatal(err)
			}
			switch rc := run.Recovery; {
			case tc.want == nil && rc != nil:
				t.Errorf("recovery %+v, want none recorded", rc)
			case tc.want != nil && rc == nil:
				t.Errorf("no recovery recorded, want nominal=%v", *tc.want)
			case tc.want != nil && (rc.Nominal != *tc.want || !strings.Contains(rc.Evidence, tc.evidence)):
				t.Errorf("recovery %+v, want nominal=%v with %q", rc, *tc.want, tc.evidence)
			}
		})
	}
}

// Target "leader" asked while no majority names one (an election under
// way right after a heal) is asked again until one does, instead of
// failing the unit.
func TestRunUnitLeaderTargetWaitsOutAnElection(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	f := markerFault("1s", "1s")
	f.Targets = "leader"
	u := unitOf(f)
	// Each host's first two answers are "no leader yet" (an election under
	// way), its third names h1: counted per host in its working directory,
	// so a single query at planning time fails, whatever the timing.
	u.Scenario.LeaderQuery = `n=$(cat asked 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > asked; if [ "$n" -ge 3 ]; then echo h1; else echo "no leader yet" >&2; exit 1; fi`
	out := o.RunUnit(context.Background(), u, attemptIn(o, 7, 4*time.Second))
	if out.Code != codeOK || out.Err != nil {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	run, err := session.LoadRun(out.RunPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.FaultWindows) != 1 || !slices.Equal(run.FaultWindows[0].Targets, []string{"h1"}) {
		t.Errorf("windows %+v, want one on the leader h1", run.FaultWindows)
	}
}

// The leader_change signal's reading before the fault, like target
// "leader", is asked again while no majority names a leader (a moment of
// an election, or a host slow to answer): failing at once would leave the
// window unknown — never landed — though the fault then moved the leader.
func TestRunUnitLeaderBeforeReadingWaitsOutAnElection(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	f := markerFault("1s", "1s")
	f.Targets = "leader"
	f.Landing = &scenarios.Landing{LeaderChange: true}
	u := unitOf(f)
	// Per host: the first answer names h1 (the target), the second none,
	// the third h1 again (the reading before), every later one h2 (the
	// fault moved the leader).
	u.Scenario.LeaderQuery = `n=$(cat asked 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > asked; case $n in 1|3) echo h1 ;; 2) echo "no leader yet" >&2; exit 1 ;; *) echo h2 ;; esac`
	out := o.RunUnit(context.Background(), u, attemptIn(o, 7, 4*time.Second))
	if out.Code != codeOK || out.Err != nil {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	run, err := session.LoadRun(out.RunPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.FaultWindows) != 1 {
		t.Fatalf("windows %+v, want one", run.FaultWindows)
	}
	fw := run.FaultWindows[0]
	if ev := fw.VictimEvidence; ev == nil || ev.Verdict != session.SignalChanged || string(ev.Before) != `"h1"` || string(ev.After) != `"h2"` || !fw.Landed {
		t.Errorf("window %+v (victim %+v), want the leader h1→h2 and landed", fw, fw.VictimEvidence)
	}
}

// A window whose victim is the history (read only after collect) is
// logged as pending when it heals, never "landed=no": the run's own line
// and analyze's verdict must not contradict each other.
func TestRunUnitHistoryVictimIsPendingAtHeal(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	out := o.RunUnit(context.Background(), unitOf(markerFault("1s", "1s")), attemptIn(o, 7, 3*time.Second))
	if out.Err != nil {
		t.Fatalf("outcome %d %v", out.Code, out.Err)
	}
	b, err := os.ReadFile(filepath.Join(o.session.Dir, session.SessionLog))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if !strings.Contains(log, "window=S1-w1 landed=pending") || strings.Contains(log, "landed=no") {
		t.Errorf("session log does not say the history victim is pending at heal:\n%s", log)
	}
}
