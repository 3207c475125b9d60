package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

// passFacts is a clean fault-active serious unit at the hardening tier
// with every audit satisfied; each case breaks one thing.
func passFacts() *facts {
	f := &facts{attempted: true, faultPlanned: true, faultActive: true, serious: true,
		checkerRan: true, consumed: 100, produced: 100, tier: TierHardening}
	for n := 1; n <= 10; n++ {
		f.redFlags = append(f.redFlags, Check{N: n, Status: CheckPass, Evidence: "ok"})
	}
	for n := 1; n <= 14; n++ {
		f.weak = append(f.weak, WeakItem{N: n, Kind: weakItems[n].kind, Status: ItemChecked})
	}
	return f
}

func TestDecideTree(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(f *facts)
		want   Verdict
		reason string
	}{
		{"0 not attempted", func(f *facts) { f.attempted = false }, NotRun, "no start record"},
		{"1 missing capability", func(f *facts) { f.missingCap = "tc netem" }, InconclusiveEnv, "tc netem"},
		{"1 beats a violation", func(f *facts) { f.missingCap = "x"; f.violation = true }, InconclusiveEnv, "capability"},
		{"2 reproduced", func(f *facts) { f.violation, f.reruns, f.reproduced = true, 1, true }, FailReproducible, "reproduced on re-run"},
		{"2 not re-run", func(f *facts) { f.violation = true }, FailNondeterministic, "not re-run"},
		{"2 re-run clean", func(f *facts) { f.violation, f.reruns = true, 2 }, FailNondeterministic, "did not reproduce"},
		{"2 FAIL beats unlanded", func(f *facts) { f.violation = true; f.unlanded = []string{"w1"} }, FailNondeterministic, ""},
		{"3 unlanded", func(f *facts) { f.unlanded = []string{"w2: victim absent"} }, InconclusiveFaultNotProven, "w2: victim absent"},
		{"3 unlanded but no fault planned", func(f *facts) { f.faultPlanned = false; f.unlanded = []string{"w2"} }, PassHardening, ""},
		{"4 checker did not run", func(f *facts) { f.checkerRan = false; f.checkerWhyNot = "no history" }, PartialSurface, "no history"},
		{"4 before 5", func(f *facts) { f.checkerRan = false; f.missingFields = []string{"fault_epoch"} }, PartialSurface, ""},
		{"5 weak history", func(f *facts) { f.missingFields = []string{"no fault_epoch"} }, InconclusiveOracleTooWeak, "no fault_epoch"},
		{"6 consumed < produced", func(f *facts) { f.consumed = 90 }, PartialModel, "90 of 100"},
		{"6 narrower scope", func(f *facts) { f.scopeNarrower = "per-key only" }, PartialModel, "per-key only"},
		{"7 smoke", func(f *facts) { f.faultActive, f.faultPlanned = false, false }, PassSmoke, "no fault active"},
		{"7 hardening", func(*facts) {}, PassHardening, "fault active"},
		{"3.2 non-serious oracle ran", func(f *facts) { f.serious, f.oracleRan = false, true }, PassHardening, ""},
		{"3.2 non-serious oracle missing", func(f *facts) { f.serious, f.oracleRan, f.oracleWhyNot = false, false, "none" }, PartialSurface, "oracle did not run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := passFacts()
			c.mod(f)
			got, reasons := decideTree(f)
			if got != c.want {
				t.Fatalf("verdict %s, want %s (%v)", got, c.want, reasons)
			}
			if len(reasons) != 1 || !strings.Contains(reasons[0].Text, c.reason) {
				t.Fatalf("reason %v, want it to mention %q", reasons, c.reason)
			}
		})
	}
}

func TestDecideGates(t *testing.T) {
	flag := func(n int, status string) func(f *facts) {
		return func(f *facts) { f.redFlags[n-1].Status = status }
	}
	item := func(n int) func(f *facts) {
		return func(f *facts) { f.weak[n-1].Status = ItemUnchecked; f.weak[n-1].Reason = "r" }
	}
	cases := []struct {
		name    string
		mods    []func(f *facts)
		want    Verdict
		release bool
		step    string
	}{
		{"clean hardening", nil, PassHardening, false, ""},
		{"release tier", []func(*facts){func(f *facts) { f.tier = TierRelease }}, PassHardening, true, ""},
		{"release disclosed", []func(*facts){func(f *facts) { f.tier, f.releaseNA, f.releaseText = TierRelease, true, "not provided" }}, PassHardening, false, "gate:tier"},
		{"smoke tier caps", []func(*facts){func(f *facts) { f.tier = TierSmoke }}, PassSmoke, false, "gate:tier"},
		{"unknown tier caps", []func(*facts){func(f *facts) { f.tier, f.tierWarn = TierUnknown, "unparseable" }}, PassSmoke, false, "gate:tier"},
		{"weak surface item", []func(*facts){item(1)}, PartialSurface, false, "gate:weak-oracle"},
		{"weak breadth item", []func(*facts){item(4)}, PartialModel, false, "gate:weak-oracle"},
		{"weak both kinds", []func(*facts){item(7), item(13)}, PartialSurface, false, "gate:weak-oracle"},
		{"weak item ignored at smoke tier", []func(*facts){item(4), func(f *facts) { f.tier = TierSmoke }}, PassSmoke, false, "gate:tier"},
		{"weak item ignored for non-serious", []func(*facts){item(4), func(f *facts) { f.serious, f.oracleRan = false, true }}, PassHardening, false, ""},
		{"weak item n/a ok", []func(*facts){func(f *facts) { f.weak[3].Status = ItemNA }}, PassHardening, false, ""},
		{"red flag 1", []func(*facts){flag(1, CheckFail)}, PartialSurface, false, "gate:red-flag"},
		{"red flag 2", []func(*facts){flag(2, CheckFail)}, PartialSurface, false, "gate:red-flag"},
		{"red flag 3", []func(*facts){flag(3, CheckFail)}, InconclusiveFaultNotProven, false, "gate:red-flag"},
		{"red flag 4", []func(*facts){flag(4, CheckFail)}, InconclusiveFaultNotProven, false, "gate:red-flag"},
		{"red flag 5", []func(*facts){flag(5, CheckFail)}, InconclusiveOracleTooWeak, false, "gate:red-flag"},
		{"red flag 6", []func(*facts){flag(6, CheckFail)}, PartialSurface, false, "gate:red-flag"},
		{"red flag 7 kept", []func(*facts){flag(7, CheckFail)}, PassHardening, false, ""},
		{"red flag 7 unknown blocks", []func(*facts){flag(7, CheckUnknown)}, PartialSurface, false, "gate:red-flag"},
		{"red flag 8", []func(*facts){flag(8, CheckFail)}, PartialSurface, false, "gate:red-flag"},
		{"red flag 9", []func(*facts){flag(9, CheckFail)}, PartialModel, false, "gate:red-flag"},
		{"red flag 10", []func(*facts){flag(10, CheckFail)}, PartialModel, false, "gate:red-flag"},
		{"red flag unknown blocks", []func(*facts){flag(1, CheckUnknown)}, PartialSurface, false, "gate:red-flag"},
		{"red flag n/a ok", []func(*facts){flag(9, CheckNA)}, PassHardening, false, ""},
		{"weakest red flag wins", []func(*facts){flag(9, CheckFail), flag(3, CheckFail), flag(1, CheckFail)}, InconclusiveFaultNotProven, false, "gate:red-flag"},
		{"red flag after weak gate", []func(*facts){item(4), flag(4, CheckFail)}, InconclusiveFaultNotProven, false, "gate:red-flag"},
		{"red flag on smoke", []func(*facts){func(f *facts) { f.faultActive, f.faultPlanned = false, false }, flag(8, CheckFail)}, PartialSurface, false, "gate:red-flag"},
		{"gates skip FAIL", []func(*facts){func(f *facts) { f.violation = true }, flag(3, CheckFail)}, FailNondeterministic, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := passFacts()
			for _, m := range c.mods {
				m(f)
			}
			_, got, rel, reasons := decide(f)
			if got != c.want || rel != c.release {
				t.Fatalf("got %s release=%v, want %s release=%v (%v)", got, rel, c.want, c.release, reasons)
			}
			if c.step == "" {
				if len(reasons) != 1 {
					t.Fatalf("want only the tree reason, got %v", reasons)
				}
				return
			}
			last := reasons[len(reasons)-1]
			if last.Step != c.step || last.Text == "" {
				t.Fatalf("last reason %+v, want step %s", last, c.step)
			}
			if last.From != "" && last.From != last.To && last.To != got {
				t.Fatalf("last downgrade %+v does not end at %s", last, got)
			}
		})
	}
}

func TestAggregateArms(t *testing.T) {
	arms := func(vs ...Verdict) []ScenarioResult {
		var out []ScenarioResult
		for i, v := range vs {
			out = append(out, ScenarioResult{ID: "S5/a" + string(rune('0'+i)), Verdict: v})
		}
		return out
	}
	cases := []struct {
		in     []ScenarioResult
		want   Verdict
		reason string
	}{
		{arms(PassHardening, PassHardening), PassHardening, "weakest"},
		{arms(PassHardening, PassSmoke), PassSmoke, "S5/a1"},
		{arms(PassHardening, NotRun), PartialSurface, "1 NOT-RUN arm"},
		{arms(PassHardening, NotRun, PartialModel), PartialSurface, "1 NOT-RUN arm (S5/a1) + 1 PARTIAL arm (S5/a2)"},
		{arms(PassHardening, InconclusiveEnv), InconclusiveEnv, "S5/a1"},
		{arms(PassHardening, FailNondeterministic, FailReproducible), FailReproducible, "S5/a2"},
		{arms(NotRun, FailNondeterministic), FailNondeterministic, "S5/a1"},
		{arms(NotRun, NotRun), NotRun, "all 2 arms"},
	}
	for _, c := range cases {
		got, why := aggregateArms(c.in)
		if got != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("aggregate %v = %s (%q), want %s mentioning %q", c.in, got, why, c.want, c.reason)
		}
	}
}

func TestSessionVerdict(t *testing.T) {
	cases := []struct {
		in   []Verdict
		want SessionVerdict
	}{
		{nil, Blocked},
		{[]Verdict{NotRun, NotRun}, Blocked},
		{[]Verdict{PassSmoke, FailReproducible, NotRun}, Fail},
		{[]Verdict{InconclusiveEnv, FailReproducible}, Fail},
		{[]Verdict{PassSmoke, PassHardening}, Done},
		{[]Verdict{PassSmoke, PartialModel}, DoneWithConcerns},
		{[]Verdict{PassSmoke, NotRun}, DoneWithConcerns},
		{[]Verdict{PassSmoke, FailNondeterministic}, DoneWithConcerns},
		{[]Verdict{FailNondeterministic, NotRun}, Inconclusive},
		{[]Verdict{InconclusiveEnv, PartialSurface, NotRun}, Inconclusive},
	}
	for _, c := range cases {
		if got := sessionVerdict(c.in); got != c.want {
			t.Errorf("sessionVerdict(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestVerdictStrings(t *testing.T) {
	want := []string{"PASS-smoke", "PASS-hardening", "FAIL-reproducible", "FAIL-nondeterministic",
		"INCONCLUSIVE-env", "INCONCLUSIVE-oracle-too-weak", "INCONCLUSIVE-fault-not-proven",
		"PARTIAL-surface", "PARTIAL-model", "NOT-RUN"}
	if len(Verdicts) != len(want) {
		t.Fatalf("%d verdicts, want 10", len(Verdicts))
	}
	for i, v := range Verdicts {
		if string(v) != want[i] || !v.valid() {
			t.Errorf("verdict %d = %q, want %q", i, v, want[i])
		}
	}
	order := []Verdict{PassHardening, PassSmoke, PartialModel, PartialSurface, InconclusiveEnv, NotRun}
	for i := 1; i < len(order); i++ {
		if order[i-1].Strength() <= order[i].Strength() {
			t.Errorf("%s should be stronger than %s", order[i-1], order[i])
		}
	}
	if InconclusiveEnv.Strength() != InconclusiveFaultNotProven.Strength() || FailReproducible.Strength() >= 0 {
		t.Error("INCONCLUSIVE-* must rank equal and FAIL-* outside the order")
	}
	if Verdict("PASS").valid() {
		t.Error("PASS is not a state")
	}
}

func TestHeadlineLeadsWithFail(t *testing.T) {
	scen := []ScenarioResult{{ID: "S1", Verdict: PassSmoke}, {ID: "S2", Verdict: FailNondeterministic}, {ID: "S3", Verdict: FailReproducible}}
	h := headline(Fail, scen)
	if !strings.HasPrefix(h, "1 reproducible oracle violation (S3) and 1 nondeterministic (S2)") || !strings.HasSuffix(h, "session verdict FAIL") {
		t.Errorf("headline %q", h)
	}
	h = headline(DoneWithConcerns, scen[:2])
	if !strings.HasPrefix(h, "1 nondeterministic oracle violation (S2)") {
		t.Errorf("headline %q must lead with the nondeterministic violation", h)
	}
}

// The headline's "not re-run" / "not reproduced on re-run" follow the
// tree's test, not the re-run records listed: a re-run that never started
// is no re-run, and a parent's words come from its arms.
func TestHeadlineReRunWords(t *testing.T) {
	unstarted := ScenarioResult{ID: "S1", Verdict: FailNondeterministic, Runs: []RunRef{{File: "run.json", Seed: 3}, {File: "run-seed-3.json", Seed: 3, ReRunOf: "seed 3"}}}
	parent := ScenarioResult{ID: "S4", Verdict: FailNondeterministic, Arms: []ScenarioResult{
		{ID: "S4/api", Verdict: FailNondeterministic, reRun: true},
		{ID: "S4/cli", Verdict: PassSmoke},
	}}
	h := headline(DoneWithConcerns, []ScenarioResult{unstarted, parent})
	if want := "2 nondeterministic oracle violations (S1, S4), not reproduced on re-run (S4/api), not re-run (S1)"; !strings.HasPrefix(h, want) {
		t.Errorf("headline %q, want it to begin %q", h, want)
	}
}

func TestPlannedRate(t *testing.T) {
	cases := map[string]float64{
		"2 clients, 100% put at 50 ops/s, 5 min":                          50,
		"3 writes/s for 10 min":                                           3,
		"5 tenants at 200 ops/s each plus 1 tenant at 1500 ops/s, 15 min": 0,
		"6 clients, 50% get / 40% put / 10% cas, 20 keys uniform, 10 min": 0,
		"1 client, 2.5 req/s":                                             2.5,
	}
	for in, want := range cases {
		if got := plannedRate(in); got != want {
			t.Errorf("plannedRate(%q) = %g, want %g", in, got, want)
		}
	}
}

func TestNarrowerScope(t *testing.T) {
	u := &unit{model: &plan.ModelBlock{Model: "map"}, categories: map[string]bool{plan.CatIsolation: true}}
	lin := []*loadedRun{{results: []checker.Result{{Checker: checker.Linearizability}}}}
	if narrowerScope(u, lin) == "" {
		t.Error("per-key linearizability for an isolation claim over a map must be narrower")
	}
	u.categories = map[string]bool{plan.CatSafety: true}
	if s := narrowerScope(u, lin); s != "" {
		t.Errorf("safety claim: %q", s)
	}
}

func TestTierMet(t *testing.T) {
	start := fixtureStart
	mk := func(nodes int, dur time.Duration, landed int, seeds ...int64) []*loadedRun {
		var out []*loadedRun
		for _, s := range seeds {
			r := &session.Run{Scenario: "S1", Attempted: true, Seed: s, Nodes: nodes, StartedAt: start, EndedAt: start.Add(dur)}
			for i := 0; i < landed; i++ {
				r.FaultWindows = append(r.FaultWindows, session.FaultWindow{FaultEpoch: fmt.Sprint(i), Nemesis: "kill-9", InjectedAtNS: i64(1),
					InjectorEvidence: evChanged("pid", "", 1, 2), VictimEvidence: evChanged("log", "", 0, 1)})
			}
			out = append(out, &loadedRun{run: r})
		}
		return out
	}
	sc := &plan.Scenario{
		Smoke:     budget("3 nodes, 60 s, 0 faults, 1 seed"),
		Hardening: budget("3 nodes, 10 min, 4 faults, 3 seeds"),
		Release:   budget("5 nodes, 2 h, 40 faults, 10 seeds"),
	}
	disclosed := *sc
	disclosed.Release = plan.Budget{Text: "not provided — no rig. Revisit when: later.", NotProvided: true}
	garbled := *sc
	garbled.Hardening = budget("as long as it takes")
	cases := []struct {
		name string
		ps   *plan.Scenario
		runs []*loadedRun
		want TierLevel
		warn string
	}{
		{"none", sc, mk(3, 30*time.Second, 0, 1), TierNone, "30s/1m0s duration"},
		{"smoke", sc, mk(3, time.Minute, 0, 1), TierSmoke, ""},
		{"hardening needs every dimension", sc, mk(3, 10*time.Minute, 4, 1, 2), TierSmoke, ""},
		{"hardening", sc, mk(3, 10*time.Minute, 4, 1, 2, 3), TierHardening, ""},
		{"hardening, too few nodes", sc, mk(2, 10*time.Minute, 4, 1, 2, 3), TierNone, "2/3 nodes"},
		{"release", sc, mk(5, 2*time.Hour, 40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), TierRelease, ""},
		{"release disclosed", &disclosed, mk(5, 2*time.Hour, 40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), TierHardening, ""},
		{"unparseable", &garbled, mk(3, 10*time.Minute, 4, 1, 2, 3), TierUnknown, "not parseable"},
		{"no plan", nil, mk(3, time.Minute, 0, 1), TierUnknown, "no plan budgets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, warn, relNA, _ := tierMet(&unit{ps: c.ps}, c.runs)
			if got != c.want || (c.warn != "" && !strings.Contains(warn, c.warn)) {
				t.Fatalf("tier %s (%q), want %s (%q)", got, warn, c.want, c.warn)
			}
			if c.ps == &disclosed && !relNA {
				t.Fatal("disclosure must be reported")
			}
		})
	}
}

// TestSeriesExtremeTimestamps: odd recorder timestamps never panic and
// never produce an unbounded chart.
func TestSeriesExtremeTimestamps(t *testing.T) {
	cases := map[string][]int64{
		"negative":      {-5, 3, 12},
		"huge span":     {0, 1 << 59},
		"garbage":       {-1 << 62, 1 << 62},
		"single":        {7},
		"late start":    {5e9, 9e9},
		"all same time": {4, 4, 4},
	}
	for name, ts := range cases {
		lr := &loadedRun{run: &session.Run{}, hasHist: true}
		for i, v := range ts {
			c := v + 1
			lr.ops = append(lr.ops, history.Op{OpID: fmt.Sprint(i), InvokeTS: v, CompleteTS: &c})
		}
		pts := series(lr)
		total := 0
		for _, p := range pts {
			total += p.Ops
		}
		if len(pts) > 2001 || (name != "garbage" && total != len(ts)) {
			t.Errorf("%s: %d points holding %d of %d ops", name, len(pts), total, len(ts))
		}
	}
}

// TestCausalNemeses: a finding's TaxDC label comes only from faults that
// were injected before its anomalies ended; a fault injected afterwards
// cannot have caused them and the finding says so.
func TestCausalNemeses(t *testing.T) {
	at := func(ns int64) *int64 { return &ns }
	windows := []session.FaultWindow{
		{FaultEpoch: "w1", Nemesis: "partition-asym", InjectedAtNS: at(10e9)},
		{FaultEpoch: "w2", Nemesis: "kill-9", InjectedAtNS: at(20e9)},
	}
	anomalyAt := func(end int64) []checker.Result {
		return []checker.Result{{Outcome: checker.Invalid, Anomalies: []checker.Anomaly{{Kind: "nonlinearizable", WindowStart: end - 1e6, WindowEnd: end}}}}
	}
	tests := []struct {
		name     string
		results  []checker.Result
		want     string
		wantNote bool
		label    string
	}{
		{"before every fault", anomalyAt(2e9), "", true, "timing"},
		{"after the partition only", anomalyAt(15e9), "partition-asym", false, "partition"},
		{"after both (crash effects show after heal)", anomalyAt(40e9), "partition-asym,kill-9", false, "partition"},
		{"some before every fault, some after", append(anomalyAt(2e9), anomalyAt(25e9)...), "partition-asym,kill-9", true, "partition"},
		{"no anomaly window: every fault counts", []checker.Result{{Outcome: checker.Invalid, Anomalies: []checker.Anomaly{{Kind: "lost"}}}}, "partition-asym,kill-9", false, "partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := &loadedRun{run: &session.Run{FaultWindows: windows}, results: tt.results}
			got, note := causalNemeses(lr)
			if strings.Join(got, ",") != tt.want {
				t.Errorf("nemeses %v, want %q", got, tt.want)
			}
			if (note != "") != tt.wantNote {
				t.Errorf("note %q, want one: %v", note, tt.wantNote)
			}
			if tt.name == "some before every fault, some after" && !strings.Contains(note, "1 of the 2 anomalies with a time ended before the first fault was injected (+10s)") {
				t.Errorf("note %q does not count the anomalies before the first fault", note)
			}
			if l := taxdc(got); l != tt.label {
				t.Errorf("label %s, want %s", l, tt.label)
			}
		})
	}
}

// TestStatistical: docs/verdicts.md §4.2's seed rule binds every serious claim
// at the hardening or release tier whatever its budget says, and only a
// run's declaration (docs/verdicts.md §7 item 11's escape) lifts it; other claims keep
// reading the claimed tier's budget.
func TestStatistical(t *testing.T) {
	oneSeed := &plan.Scenario{
		Smoke:     budget("3 nodes, 30 s, 1 fault, 1 seed"),
		Hardening: budget("3 nodes, 60 s, 1 fault, 1 seed"),
		Release:   budget("5 nodes, 1 h, 10 faults, 1 seed"),
	}
	noSeeds := &plan.Scenario{Hardening: budget("3 nodes, 60 s, 1 fault")}
	threeSeeds := &plan.Scenario{
		Smoke:     budget("3 nodes, 60 s, 0 faults, 1 seed"),
		Hardening: budget("3 nodes, 10 min, 0 faults, 3 seeds"),
	}
	runs := func(decl ...*bool) []*loadedRun {
		var out []*loadedRun
		for i, d := range decl {
			r := &session.Run{Scenario: "S1", Seed: int64(i + 1)}
			if d != nil {
				r.Claim = &session.ClaimScope{Statistical: d}
			}
			out = append(out, &loadedRun{run: r})
		}
		return out
	}
	const det = "declared deterministic (single-interleaving)"
	cases := []struct {
		name    string
		serious bool
		ps      *plan.Scenario
		runs    []*loadedRun
		claimed TierLevel
		want    bool
		why     string
	}{
		{"serious hardening, budget says 1 seed", true, oneSeed, runs(nil), TierHardening, true, ""},
		{"serious hardening, budget states no seeds", true, noSeeds, runs(nil), TierHardening, true, ""},
		{"serious release, budget says 1 seed", true, oneSeed, runs(nil), TierRelease, true, ""},
		{"serious hardening, no plan", true, nil, runs(nil), TierHardening, true, ""},
		{"serious hardening, declared deterministic", true, oneSeed, runs(boolp(false)), TierHardening, false, det},
		{"serious hardening, one run of three declares deterministic", true, oneSeed, runs(nil, boolp(false), nil), TierHardening, false, det},
		{"declarations disagree: statistical wins", true, oneSeed, runs(boolp(false), boolp(true)), TierHardening, true, ""},
		{"serious smoke, budget says 1 seed", true, oneSeed, runs(nil), TierSmoke, false, "claim is not statistical at the smoke tier"},
		{"non-serious hardening, budget says 1 seed", false, oneSeed, runs(nil), TierHardening, false, "claim is not statistical at the hardening tier"},
		{"non-serious hardening, budget says 3 seeds", false, threeSeeds, runs(nil), TierHardening, true, ""},
		{"non-serious smoke, declared statistical", false, threeSeeds, runs(boolp(true)), TierSmoke, true, ""},
		{"non-serious hardening, declared deterministic", false, threeSeeds, runs(boolp(false)), TierHardening, false, det},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := statistical(&unit{serious: c.serious, ps: c.ps, runs: c.runs}, c.claimed)
			if got != c.want || (!got && why != c.why) {
				t.Errorf("statistical = %v %q, want %v %q", got, why, c.want, c.why)
			}
		})
	}
}

// budget is a plan budget as the plan parser fills it: the text and its
// tier, parsed once.
func budget(text string) plan.Budget {
	return plan.Budget{Text: text, Tier: plan.ParseTier(text)}
}
