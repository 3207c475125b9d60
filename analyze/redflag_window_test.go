package analyze

import (
	"strings"
	"testing"

	"github.com/dstgen/dstgen/session"
)

// linPlan is a plan whose S1 is a serious per-key linearizability
// scenario.
var linPlan = auditPlanHeader + seriousScenarioChecker("S1", "kv_lin", "register", "linearizability")

// Red flag 1 does not count a rate dip inside a fault window (or its two
// recovery intervals) as a stall — the client is suffering the fault — but
// the same dip outside every window still fails, and so does an interval
// with no op at all inside one.
func TestIntendedLoadExcusesDipsInsideFaultWindows(t *testing.T) {
	cases := []struct {
		name     string
		interval int // index of the 6 s interval changed (window: 20 s..30 s)
		ops      func(normal int) int
		want     string
		nominal  float64 // recovery.nominal_at_ns in seconds (0: none)
		firstAt  float64 // first_op_ns, seconds into interval 0 (0: at its start)
		through  int     // the last interval changed the same way (0: interval only)
	}{
		{"dip inside the window", 4, func(n int) int { return n / 3 }, CheckPass, 0, 0, 0},
		{"dip in the recovery after it", 5, func(n int) int { return n / 3 }, CheckPass, 0, 0, 0},
		{"dip far from any window", 8, func(n int) int { return n / 3 }, CheckFail, 0, 0, 0},
		{"no op at all inside the window", 4, func(int) int { return 0 }, CheckFail, 0, 0, 0},
		{"dip before the system was seen nominal", 7, func(n int) int { return n / 3 }, CheckPass, 36, 0, 0},
		{"dip after it was seen nominal", 8, func(n int) int { return n / 3 }, CheckFail, 36, 0, 0},
		{"the last interval, cut short by the end of the run", 9, func(n int) int { return n / 3 }, CheckPass, 0, 0, 0},
		// The run began 5.9 s into the first 6 s interval (one client of
		// a shared workload a moment early, mapped onto the control's
		// clock): too little of it to judge.
		{"the first interval, cut short by the start of the run", 0, func(int) int { return 1 }, CheckPass, 0, 5.9, 0},
		// Begun 2 s in, it covers 4 s: judged over those, and a third of
		// the rate over them is a stall.
		{"a dip in the covered part of the first interval", 0, func(n int) int { return n / 5 }, CheckFail, 0, 2, 0},
		// The rejoin after the heal (30 s) is an outage of its own: below
		// the floor from the heal on until 48 s, past the two recovery
		// intervals, is still the fault's recovery tail.
		{"a dip from the heal on until throughput returns", 5, func(n int) int { return n / 3 }, CheckPass, 0, 0, 7},
		// The interval of the heal was fine; the outage began in the next
		// one (TCP reconnecting) and lasted past the recovery intervals.
		{"a dip begun just after the heal until throughput returns", 6, func(n int) int { return n / 3 }, CheckPass, 0, 0, 8},
		// Back at the floor in 36..42 s: a dip after that is not recovery.
		{"a dip after throughput had returned", 7, func(n int) int { return n / 3 }, CheckFail, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := baseAudit("S1")
			g.ops = 600
			g.mutate = func(r *session.Run) {
				r.Workload.PlannedRate = 10
				iv := &r.Workload.Throughput[c.interval]
				for j := c.interval; j <= max(c.interval, c.through); j++ {
					r.Workload.Throughput[j].Ops = c.ops(r.Workload.Throughput[j].Ops)
				}
				if c.firstAt > 0 {
					first := iv.StartNS + int64(c.firstAt*1e9)
					r.Workload.FirstOpNS = &first
				}
				if c.interval == len(r.Workload.Throughput)-1 {
					last := iv.StartNS + 1e9 // the run ended a second into it
					r.Workload.LastOpNS = &last
				}
				if c.nominal > 0 {
					at := int64(c.nominal * 1e9)
					r.Recovery = &session.Recovery{Nominal: true, Evidence: "quiesce held", NominalAtNS: &at}
				}
			}
			rep := analyzeOne(t, linPlan, g, nil)
			s := findResult(rep, "S1")
			if s == nil {
				t.Fatal("no S1")
			}
			if got := s.RedFlags[0]; got.Status != c.want {
				t.Errorf("red flag 1 = %s (%s), want %s", got.Status, got.Evidence, c.want)
			} else if c.want == CheckPass && !strings.Contains(got.Evidence, "inside a fault window") && !strings.Contains(got.Evidence, "cut short by the run's") {
				t.Errorf("the pass does not say which interval it did not judge: %s", got.Evidence)
			}
		})
	}
}

// A final heal that failed fails red flag 8: a fault may still be active.
func TestRecoveryFailsWhenTheFinalHealFailed(t *testing.T) {
	g := baseAudit("S1")
	g.mutate = func(r *session.Run) {
		r.Heal = &session.HealRecord{Errors: []string{"h3: connection lost"}}
	}
	rep := analyzeOne(t, linPlan, g, nil)
	if got := findResult(rep, "S1").RedFlags[7]; got.Status != CheckFail || !strings.Contains(got.Evidence, "h3: connection lost") {
		t.Errorf("red flag 8 = %s (%s), want fail citing the heal error", got.Status, got.Evidence)
	}
}

// Client hosts of a shared workload start a moment apart: red flag 1
// judges the load from the last one's first op (all_started_ns), so the
// half rate of one host alone is not a stall; a host that began more
// than two intervals late is a share missing and fails. The evidence
// names only the intervals it did not judge.
func TestIntendedLoadJudgesFromTheLastClientsStart(t *testing.T) {
	cases := []struct {
		name    string
		started float64 // all_started_ns, seconds after first_op_ns (0: one client)
		firstAt float64 // first_op_ns, seconds into interval 0
		half    int     // intervals from 0 that carry half the ops (one host of two)
		last    bool    // the last interval ends the run a second in, at a third of the rate
		want    string
		says    []string // in the evidence
		never   []string // not in it
	}{
		{name: "the second host 3 s in: the first interval judged over its last 3 s", started: 3, half: 1, want: CheckPass, never: []string{"first interval"}},
		{name: "the second host 8 s in: the interval before it not judged", started: 8, half: 1, want: CheckPass, says: []string{"1 interval(s) below it before every client host had started"}},
		{name: "the second host 14 s in: a share missing", started: 14, half: 3, want: CheckFail, says: []string{"at +0s", "at +6s"}},
		{name: "one host, a half-rate first interval", half: 1, want: CheckFail, says: []string{"at +0s"}, never: []string{"before every client host"}},
		// A judged first interval that failed is not excused by the
		// last one's words.
		{name: "a judged failing first interval beside a cut-short last", firstAt: 2, half: 1, last: true, want: CheckFail,
			says: []string{"at +0s", "(the last interval, cut short by the run's end, not judged)"}, never: []string{"the first interval"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := baseAudit("S1")
			g.ops = 600
			g.mutate = func(r *session.Run) {
				r.Workload.PlannedRate = 10
				ser := r.Workload.Throughput
				first := ser[0].StartNS + int64(c.firstAt*1e9)
				r.Workload.FirstOpNS = &first
				if c.started > 0 {
					all := first + int64(c.started*1e9)
					r.Workload.AllStartedNS = &all
				}
				for j := 0; j < c.half; j++ {
					ser[j].Ops /= 2
				}
				if c.last {
					ser[len(ser)-1].Ops /= 3
					last := ser[len(ser)-1].StartNS + 1e9
					r.Workload.LastOpNS = &last
				}
			}
			rep := analyzeOne(t, linPlan, g, nil)
			got := findResult(rep, "S1").RedFlags[0]
			if got.Status != c.want {
				t.Fatalf("red flag 1 = %s (%s), want %s", got.Status, got.Evidence, c.want)
			}
			for _, w := range c.says {
				if !strings.Contains(got.Evidence, w) {
					t.Errorf("evidence lacks %q: %s", w, got.Evidence)
				}
			}
			for _, w := range c.never {
				if strings.Contains(got.Evidence, w) {
					t.Errorf("evidence has %q: %s", w, got.Evidence)
				}
			}
		})
	}
}

// A healed member forces its election when its election timer next
// fires: a dip that begins 3 s after the heal, after throughput had
// returned, is the rejoin (suite 026aa8f: etcd at 5 ops/s 2.6 s after a
// heal); one that begins 6 s after it is judged.
func TestIntendedLoadExcusesALateRejoin(t *testing.T) {
	for _, c := range []struct {
		name string
		dip  int // the 1 s interval at a tenth of the rate (heal at 2 s)
		want string
	}{
		{"a dip 3 s after the heal", 5, CheckPass},
		{"a dip 6 s after the heal", 8, CheckFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := baseAudit("S1")
			g.dur, g.ops = 10, 1000
			g.windows[0].at, g.windows[0].dur = 1, 1
			g.mutate = func(r *session.Run) {
				r.Workload.PlannedRate = 100
				for j := range r.Workload.Throughput {
					r.Workload.Throughput[j].Ops = 100
				}
				r.Workload.Throughput[1].Ops = 10 // the window
				r.Workload.Throughput[c.dip].Ops = 10
			}
			rep := analyzeOne(t, linPlan, g, nil)
			if got := findResult(rep, "S1").RedFlags[0]; got.Status != c.want {
				t.Errorf("red flag 1 = %s (%s), want %s", got.Status, got.Evidence, c.want)
			}
		})
	}
}

// TestIntendedLoadExcusesADipTheDriverCaughtUp: an open-loop driver that
// stalled for a moment owes the ops it missed and starts them in the next
// interval (driver/pacer.go), so one interval below the floor followed by
// one that makes up the shortfall to within one interval's tolerance is
// the intended load delivered. A dip not made up, two dips in a row, and a
// second with nothing invoked stay failures. The dips sit 6 s after the
// heal, outside its recovery tail.
func TestIntendedLoadExcusesADipTheDriverCaughtUp(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  map[int]int // interval → ops (the rest at the planned 100)
		want string
	}{
		{"caught up in full", map[int]int{8: 75, 9: 125}, CheckPass},
		{"caught up to the tolerance", map[int]int{8: 70, 9: 110}, CheckPass},
		{"not made up", map[int]int{8: 75, 9: 100}, CheckFail},
		{"made up short of the tolerance", map[int]int{8: 70, 9: 105}, CheckFail},
		{"two dips in a row", map[int]int{8: 75, 9: 75, 10: 150}, CheckFail},
		{"a second with nothing invoked", map[int]int{8: 0, 9: 200}, CheckFail},
		{"the surplus before the dip does not count", map[int]int{7: 125, 8: 75}, CheckFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := baseAudit("S1")
			g.dur, g.ops = 13, 1300
			g.windows[0].at, g.windows[0].dur = 1, 1
			g.mutate = func(r *session.Run) {
				r.Workload.PlannedRate, r.Workload.IntervalNS = 100, 1e9
				r.Workload.Throughput = nil
				for j := range 13 {
					r.Workload.Throughput = append(r.Workload.Throughput, session.Interval{StartNS: int64(j) * 1e9, Ops: 100})
				}
				r.Workload.Throughput[1].Ops = 10 // the window
				for j, n := range c.ops {
					r.Workload.Throughput[j].Ops = n
				}
			}
			rep := analyzeOne(t, linPlan, g, nil)
			got := findResult(rep, "S1").RedFlags[0]
			if got.Status != c.want {
				t.Errorf("red flag 1 = %s (%s), want %s", got.Status, got.Evidence, c.want)
			}
			if c.want == CheckPass && !strings.Contains(got.Evidence, "caught up") {
				t.Errorf("red flag 1 evidence %q does not say the dip was caught up", got.Evidence)
			}
		})
	}
}
