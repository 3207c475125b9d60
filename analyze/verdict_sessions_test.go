package analyze

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

var (
	fixtureMu      sync.Mutex
	fixtureReports = map[string]*Report{}
)

// analyzeFixture runs the real pipeline on a committed fixture session,
// reading the plan path from its session log (p == nil).
func analyzeFixture(t *testing.T, rel string) *Report {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if r := fixtureReports[rel]; r != nil {
		return r
	}
	rep, err := Analyze(context.Background(), filepath.Join("testdata", rel), nil, Options{HTMLDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Analyze %s: %v", rel, err)
	}
	fixtureReports[rel] = rep
	return rep
}

func findResult(rep *Report, id string) *ScenarioResult {
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		if s.ID == id {
			return s
		}
		for j := range s.Arms {
			if s.Arms[j].ID == id {
				return &s.Arms[j]
			}
		}
	}
	return nil
}

func reasonText(r *ScenarioResult) string {
	var parts []string
	for _, x := range r.Reasons {
		parts = append(parts, x.Step+" "+x.String())
	}
	return strings.Join(parts, " | ")
}

// TestFixtureVerdicts: every one of the ten states is reached by a real
// session directory through the real pipeline, with its reason.
func TestFixtureVerdicts(t *testing.T) {
	cases := []struct {
		session, id string
		want        Verdict
		reason      string
	}{
		{sessMixed, "S1", PassHardening, "tree:7 no anomaly with the fault active and landed"},
		{sessMixed, "S2", PartialSurface, "§7.M checker did not run: artifacts/S2/run.json: no history file"},
		{sessMixed, "S3", InconclusiveFaultNotProven, "S3-w1 partition-asym: injector iptables_counter DROP 0→14712; victim absent"},
		{sessMixed, "S4/api", PassSmoke, "no fault active"},
		{sessMixed, "S4/admin", InconclusiveEnv, "MinIO / S3-compatible — no S3 endpoint"},
		{sessMixed, "S4/export", NotRun, "no start record"},
		{sessMixed, "S4", PartialSurface, "1 NOT-RUN arm (S4/export)"},
		{sessMixed, "S5/api", PartialModel, "red flag 9 fail"},
		{sessMixed, "S5", PartialSurface, "1 PARTIAL arm (S5/api)"},
		{sessFail, "S1", FailReproducible, "linearizability: 60 ops consumed, 1 anomaly; reproduced on re-run (artifacts/S1/run-seed-7.json seed 7: violated again)"},
		{sessFail, "S3", PassSmoke, "PASS-hardening → PASS-smoke: hardening tier not met (tier met: smoke)"},
		{sessFail, "S2", NotRun, "no start record"},
		{sessFlaky, "S1", FailNondeterministic, "1 anomaly; not re-run"},
		{sessNoRep, "S1", FailNondeterministic, "did not reproduce it (artifacts/S1/run-seed-5.json seed 5: no violation)"},
		{sessWeak, "S1", InconclusiveOracleTooWeak, "a fault overlapped the workload but no op carries fault_epoch"},
		{sessBad, "S1", PartialModel, "checker consumed 55 of 60 ops produced"},
		{sessBad, "S2", NotRun, "run.json:5: malformed JSON"},
		{sessBad, "S3", NotRun, "artifacts/S3/ has files but no run.json"},
		{sessBad, "S4/api", NotRun, `run.json:6: unknown field "sed"`},
		{sessDone, "S1", PassHardening, "tree:7"},
		{sessDone, "S2", PassSmoke, "tree:7"},
		{sessBlock, "S1", NotRun, "no start record"},
		{sessAudit, "S17", InconclusiveOracleTooWeak, "checker session is mismatched to model set"},
		{sessAudit, "S18", PartialModel, "gate:weak-oracle PASS-hardening → PARTIAL-model: weak-oracle items unchecked: 11 (PASS-hardening rests on 1 seed [1]; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing)"},
		{sessAudit, "S19", PassHardening, "tree:7 no anomaly with the fault active and landed"},
	}
	reached := map[Verdict]bool{}
	for _, c := range cases {
		t.Run(filepath.Base(c.session)+"/"+c.id, func(t *testing.T) {
			rep := analyzeFixture(t, c.session)
			r := findResult(rep, c.id)
			if r == nil {
				t.Fatalf("%s missing from the report", c.id)
			}
			if r.Verdict != c.want {
				t.Fatalf("%s = %s, want %s; reasons: %s", c.id, r.Verdict, c.want, reasonText(r))
			}
			if !strings.Contains(reasonText(r), c.reason) {
				t.Fatalf("%s reasons %q do not mention %q", c.id, reasonText(r), c.reason)
			}
			reached[r.Verdict] = true
		})
	}
	for _, v := range Verdicts {
		if !reached[v] {
			t.Errorf("no fixture reaches %s", v)
		}
	}
}

func TestFixtureSessionVerdicts(t *testing.T) {
	cases := []struct {
		session  string
		want     SessionVerdict
		headline string
	}{
		{sessMixed, DoneWithConcerns, "1 of 5 scenarios passed"},
		{sessFail, Fail, "1 reproducible oracle violation (S1)"},
		{sessFlaky, DoneWithConcerns, "1 nondeterministic oracle violation (S1), not re-run;"},
		{sessWeak, Inconclusive, "0 of 5 scenarios passed"},
		{sessNoRep, Inconclusive, "1 nondeterministic oracle violation (S1), not reproduced on re-run;"},
		{sessDone, Done, "all 2 scenarios passed with stated coverage"},
		{sessBlock, Blocked, "nothing ran"},
	}
	seen := map[SessionVerdict]bool{}
	for _, c := range cases {
		rep := analyzeFixture(t, c.session)
		if rep.SessionVerdict != c.want || !strings.HasPrefix(rep.Headline, c.headline) {
			t.Errorf("%s: %s %q, want %s starting %q", c.session, rep.SessionVerdict, rep.Headline, c.want, c.headline)
		}
		seen[rep.SessionVerdict] = true
	}
	for _, v := range []SessionVerdict{Done, DoneWithConcerns, Inconclusive, Fail, Blocked} {
		if !seen[v] {
			t.Errorf("no fixture yields session verdict %s", v)
		}
	}
}

// TestFixtureRedFlags: each red flag fails (or is unknown) in the audit
// fixture that commits it, passes in the clean baseline, and moves the
// verdict the way docs/verdicts.md §4.3 says.
func TestFixtureRedFlags(t *testing.T) {
	rep := analyzeFixture(t, sessAudit)
	base := findResult(rep, "S14")
	if base == nil || base.Verdict != PassHardening {
		t.Fatalf("baseline S14 must be PASS-hardening, got %+v", base)
	}
	for _, c := range base.RedFlags {
		if c.Status != CheckPass && c.Status != CheckNA {
			t.Errorf("baseline red flag %d = %s: %s", c.N, c.Status, c.Evidence)
		}
	}
	cases := []struct {
		id       string
		flag     int
		status   string
		evidence string
		want     Verdict
	}{
		{"S1", 1, CheckFail, "0 ops/s at +24s", PartialSurface},
		{"S2", 2, CheckFail, "oracle consumed 60 of 80 ops produced", PartialModel},
		{"S3", 3, CheckFail, "workload finished (+15.254s) before the fault was injected", InconclusiveFaultNotProven},
		{"S3", 3, CheckFail, "S3-w1: no ops in the fault window", InconclusiveFaultNotProven},
		{"S4", 4, CheckFail, "rule_listing (unchanged)", InconclusiveFaultNotProven},
		{"S5", 5, CheckFail, "clock=wall", InconclusiveOracleTooWeak},
		{"S6", 6, CheckFail, "measured 20s < smoke tier 30s", PartialSurface},
		{"S7", 7, CheckFail, "2 error markers in SUT logs, 0 accounted", PassHardening},
		{"S8", 8, CheckFail, "not back to nominal", PartialSurface},
		{"S9", 9, CheckFail, "baseline harness h1/config c1 ≠ current h2/c1", PartialModel},
		{"S10", 10, CheckFail, "PASS-hardening rests on 1 seed [1]; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing", PartialModel},
		{"S18", 10, CheckFail, "PASS-hardening rests on 1 seed [1]; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing", PartialModel},
		{"S16", 7, CheckUnknown, "no log scan recorded", PartialSurface},
	}
	for _, c := range cases {
		r := findResult(rep, c.id)
		if r == nil {
			t.Fatalf("%s missing", c.id)
		}
		chk := r.RedFlags[c.flag-1]
		if chk.N != c.flag || chk.Status != c.status || !strings.Contains(chk.Evidence, c.evidence) {
			t.Errorf("%s red flag %d = %+v, want %s with %q", c.id, c.flag, chk, c.status, c.evidence)
		}
		if r.Verdict != c.want {
			t.Errorf("%s verdict %s, want %s (%s)", c.id, r.Verdict, c.want, reasonText(r))
		}
	}
	// Red flag 7 keeps the verdict but raises a finding for review.
	s7 := findResult(rep, "S7")
	if len(s7.Findings) != 1 {
		t.Fatalf("S7 findings %v, want one review finding", s7.Findings)
	}
	f := findingByID(rep, s7.Findings[0])
	if f == nil || f.Classification != "fault-handling" || !strings.Contains(f.WhatHappened, "panic: nil map") {
		t.Errorf("S7 finding %+v", f)
	}
}

func findingByID(rep *Report, id string) *Finding {
	for i := range rep.Findings {
		if rep.Findings[i].ID == id {
			return &rep.Findings[i]
		}
	}
	return nil
}

// TestFixtureSeedRule: docs/verdicts.md §4.2's seed rule on serious claims
// whose plan budget asks for a single seed. Three agreeing seeds keep
// PASS-hardening; one undeclared seed is PARTIAL-model with the rule
// named; a declared deterministic run takes the docs/verdicts.md §7 item 11 escape.
func TestFixtureSeedRule(t *testing.T) {
	const det = "declared deterministic (single-interleaving)"
	const rule = "PASS-hardening rests on 1 seed [1]; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing"
	cases := []struct {
		session, id string
		want        Verdict
		rf10        string // status of red flag 10
		item11      string // status of weak-oracle item 11
		evidence    string // in both
	}{
		{sessAudit, "S14", PassHardening, CheckPass, ItemChecked, "3 seeds [1 2 3], same verdict"},
		{sessAudit, "S7", PassHardening, CheckPass, ItemChecked, "3 seeds [1 2 3], same verdict"},
		{sessDone, "S1", PassHardening, CheckPass, ItemChecked, "3 seeds [1 2 3], same verdict"},
		{sessMixed, "S1", PassHardening, CheckPass, ItemChecked, "3 seeds [1 2 3], same verdict"},
		{sessAudit, "S18", PartialModel, CheckFail, ItemUnchecked, rule},
		{sessAudit, "S19", PassHardening, CheckNA, ItemNA, det},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.session)+"/"+c.id, func(t *testing.T) {
			r := findResult(analyzeFixture(t, c.session), c.id)
			if r == nil {
				t.Fatalf("%s missing", c.id)
			}
			if !r.Serious || r.TreeVerdict != PassHardening || r.Verdict != c.want {
				t.Fatalf("%s serious=%v tree %s final %s, want serious, tree PASS-hardening, final %s (%s)",
					c.id, r.Serious, r.TreeVerdict, r.Verdict, c.want, reasonText(r))
			}
			if rf := r.RedFlags[9]; rf.N != 10 || rf.Status != c.rf10 || !strings.Contains(rf.Evidence, c.evidence) {
				t.Errorf("red flag 10 = %+v, want %s with %q", rf, c.rf10, c.evidence)
			}
			if it := r.WeakOracle[10]; it.N != 11 || it.Status != c.item11 || !strings.Contains(it.Reason, c.evidence) {
				t.Errorf("weak item 11 = %+v, want %s with %q", it, c.item11, c.evidence)
			}
			if c.want != PassHardening && r.Release {
				t.Errorf("%s keeps the release annotation after the seed downgrade", c.id)
			}
		})
	}
}

func TestFixtureWeakOracle(t *testing.T) {
	rep := analyzeFixture(t, sessAudit)
	base := findResult(rep, "S14")
	for _, it := range base.WeakOracle {
		if it.Status == ItemUnchecked {
			t.Errorf("baseline weak item %d unchecked: %s", it.N, it.Reason)
		}
	}
	cases := []struct {
		id        string
		unchecked []int
		want      Verdict
		reason    string
	}{
		{"S11", []int{4}, PartialModel, "4 (single failover (1 per run))"},
		{"S12", []int{1, 5}, PartialSurface, "1 (only final-state checkers ran (final-state invariant))"},
		{"S13", []int{1, 4, 5}, PartialSurface, "4 (single failover"},
		{"S10", []int{11}, PartialModel, "11 (PASS-hardening rests on 1 seed [1]; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing)"},
		{"S18", []int{11}, PartialModel, "11 (PASS-hardening rests on 1 seed [1]; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing)"},
	}
	for _, c := range cases {
		r := findResult(rep, c.id)
		var got []int
		for _, it := range r.WeakOracle {
			if it.Status == ItemUnchecked {
				got = append(got, it.N)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.unchecked) {
			t.Errorf("%s unchecked items %v, want %v", c.id, got, c.unchecked)
		}
		if r.Verdict != c.want || !strings.Contains(reasonText(r), "gate:weak-oracle") || !strings.Contains(reasonText(r), c.reason) {
			t.Errorf("%s = %s (%s), want %s via the weak-oracle gate mentioning %q", c.id, r.Verdict, reasonText(r), c.want, c.reason)
		}
	}
	// The main plan's S1: network faults ⇒ item 7 needs a landed
	// partition-asym window; leader isolation ⇒ failover-based.
	s1 := findResult(analyzeFixture(t, sessMixed), "S1")
	if it := s1.WeakOracle[6]; it.Status != ItemChecked {
		t.Errorf("mixed S1 item 7 = %+v, want checked", it)
	}
	if it := s1.WeakOracle[3]; it.Status != ItemChecked {
		t.Errorf("mixed S1 item 4 = %+v, want checked", it)
	}
}

func TestFixtureProblems(t *testing.T) {
	rep := analyzeFixture(t, sessBad)
	want := []string{
		"artifacts/S1/history.jsonl:57: ",
		"artifacts/S1/history.jsonl:58: ",
		"artifacts/S2/run.json:5: malformed JSON",
		"artifacts/S3: artifact directory has files but no run.json",
		`artifacts/S4/api/run.json:6: unknown field "sed"`,
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
	// Unknown model: the problem points at the plan's §7.M line.
	rep = analyzeFixture(t, sessAudit)
	p, err := plan.Parse("testdata/plan-audit.md")
	if err != nil {
		t.Fatal(err)
	}
	var line int
	for _, s := range p.Scenarios {
		if s.ID == "S15" {
			line = s.M.Fields["Model under test"]
		}
	}
	found := false
	for _, pr := range rep.Problems {
		if pr.File == "testdata/plan-audit.md" && pr.Line == line && strings.Contains(pr.Message, `model "blockchain"`) {
			found = true
		}
	}
	if line == 0 || !found {
		t.Errorf("no problem at plan-audit.md:%d for the unknown model: %v", line, rep.Problems)
	}
	if r := findResult(rep, "S15"); r.Verdict != PartialSurface {
		t.Errorf("S15 = %s, want PARTIAL-surface (checker could not run)", r.Verdict)
	}
}

func TestFixtureFindings(t *testing.T) {
	rep := analyzeFixture(t, sessFail)
	s1 := findResult(rep, "S1")
	if len(s1.Findings) != 1 {
		t.Fatalf("S1 findings %v", s1.Findings)
	}
	f := findingByID(rep, s1.Findings[0])
	if f.ID != "F1" || f.Scenario != "S1" || f.Hypothesis != "H1" || f.Reduction != BlamePending ||
		f.Severity != "P0" || !slices.Contains(f.Tags, "safety") || f.Classification == "" ||
		!strings.Contains(f.WhatHappened, "nonlinearizable") && !strings.Contains(f.WhatHappened, "linearizab") ||
		!strings.Contains(f.Reproducer, "seed 7") || len(f.Evidence) == 0 {
		t.Errorf("finding %+v", f)
	}
	rep = analyzeFixture(t, sessFlaky)
	s1 = findResult(rep, "S1")
	if len(s1.Actions) == 0 || !strings.Contains(s1.Actions[0], "re-run S1 with seed 9") {
		t.Errorf("FAIL-nondeterministic without re-run must suggest one: %v", s1.Actions)
	}
}

func TestFixturePlanSections(t *testing.T) {
	rep := analyzeFixture(t, sessMixed)
	if rep.PlanSlug != "quorumkv-core-guarantees" || rep.Commit != "0123abc" {
		t.Errorf("slug %q commit %q", rep.PlanSlug, rep.Commit)
	}
	if len(rep.Disclosures) != 2 || rep.Disclosures[0].Scenario != "S2" ||
		rep.Disclosures[0].Reason != "no power-loss (fsync-drop) rig exists yet" ||
		rep.Disclosures[0].RevisitWhen != "dm-flakey is available on the test hosts" {
		t.Errorf("disclosures %+v", rep.Disclosures)
	}
	if len(rep.Surfaces) != 6 || rep.Surfaces[3].Surface != "(aggregate)" || rep.Surfaces[3].Verdict != PartialSurface {
		t.Errorf("surfaces %+v", rep.Surfaces)
	}
	if len(rep.MissingSurfaces) != 1 || !strings.HasPrefix(rep.MissingSurfaces[0], "S4/export (export pipeline)") {
		t.Errorf("missing surfaces %v", rep.MissingSurfaces)
	}
	if len(rep.Hypotheses) != 5 || !rep.Hypotheses[0].Exercised {
		t.Errorf("hypotheses %+v", rep.Hypotheses)
	}
	if len(rep.Adequacy) != 2 || rep.Adequacy[0].CalledOut || !rep.Adequacy[1].CalledOut {
		t.Errorf("adequacy %+v", rep.Adequacy)
	}
	if len(rep.Confidence.More) != 1 || !strings.HasPrefix(rep.Confidence.More[0], "C1:") || len(rep.Confidence.Unchanged) == 0 {
		t.Errorf("confidence %+v", rep.Confidence)
	}
	if rep.PreviousDir != "" {
		t.Errorf("first session has no previous, got %q", rep.PreviousDir)
	}
	if prev := analyzeFixture(t, sessFail).PreviousDir; !strings.HasSuffix(prev, "20260601T100000Z") {
		t.Errorf("previous of the fail session = %q", prev)
	}
	s1 := findResult(rep, "S1")
	if s1.OracleEvidence != "366 ops consumed, 0 anomalies over 3 runs" || !strings.Contains(s1.LandingEvidence, "DROP 0→14712") ||
		s1.Metrics == nil || len(s1.Metrics.Series) == 0 || len(s1.Metrics.FaultWindows) != 5 {
		t.Errorf("S1 evidence %q / %q metrics %+v", s1.OracleEvidence, s1.LandingEvidence, s1.Metrics)
	}
	// report.json round trip keeps the verdict strings.
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"verdict":"INCONCLUSIVE-fault-not-proven"`) || !strings.Contains(string(data), `"session_verdict":"DONE_WITH_CONCERNS"`) {
		t.Error("report.json lacks spec verdict strings")
	}
}

func TestAnalyzeWithoutPlan(t *testing.T) {
	dir := t.TempDir()
	rep, err := Analyze(context.Background(), dir, nil, Options{})
	if err == nil {
		t.Fatalf("empty dir must be an error, got %+v", rep)
	}
	if _, err := Analyze(context.Background(), filepath.Join(dir, "nope"), nil, Options{}); err == nil {
		t.Fatal("missing dir must be an error")
	}
	// A session whose plan cannot be found is still analyzed on its records.
	src := filepath.Join("testdata", sessFail)
	p, err := plan.Parse("testdata/plan.md")
	if err != nil {
		t.Fatal(err)
	}
	withPlan, err := Analyze(context.Background(), src, p, Options{})
	if err != nil || findResult(withPlan, "S1").Verdict != FailReproducible {
		t.Fatalf("explicit plan: %v", err)
	}
}

func TestAnalyzeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Analyze(ctx, filepath.Join("testdata", sessMixed), nil, Options{}); err == nil {
		t.Fatal("cancelled context must stop the analysis")
	}
}

// TestCheckerUnknownIsNoPass: a checker that ran out of time reports
// unknown, and an unknown oracle never yields a PASS (tree step 4).
func TestCheckerUnknownIsNoPass(t *testing.T) {
	p, err := plan.Parse("testdata/plan-mini.md")
	if err != nil {
		t.Fatal(err)
	}
	r, err := session.LoadRun(filepath.Join("testdata", sessDone, "artifacts/S1/run.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := &p.Scenarios[0]
	u := &unit{id: "S1", ps: s, model: s.M, serious: true, categories: map[string]bool{plan.CatSafety: true}}
	u.runs = []*loadedRun{{run: r, rel: "artifacts/S1/run.json", hasHist: true,
		results: []checker.Result{{Checker: checker.Linearizability, Outcome: checker.Unknown, OpsConsumed: 30, Reason: "time limit hit"}}}}
	res := evaluate(u, nil)
	if res.Verdict != PartialSurface || !strings.Contains(reasonText(&res), "returned unknown: time limit hit") {
		t.Fatalf("unknown checker gave %s (%s)", res.Verdict, reasonText(&res))
	}
	if c := res.RedFlags[1]; c.Status != CheckFail {
		t.Fatalf("red flag 2 = %+v", c)
	}
}

// TestRealEnvLayoutWithoutPlan: a real-env-test run_<ts>/ tree with run
// records under benchmark/<ID>/ and no plan anywhere is analyzed on its
// records alone, and the missing plan is reported.
func TestRealEnvLayoutWithoutPlan(t *testing.T) {
	root := filepath.Join(t.TempDir(), "results")
	dir := filepath.Join(root, "run_20260101_120000")
	g := runGen{scenario: "S9", seed: 1, tier: "smoke", nodes: 3, dur: 60, remoteOracle: remote("latency assertion", 60)}
	g.build(t, dir)
	// Move the record under benchmark/ as the real-env-test collector does.
	if err := os.Rename(filepath.Join(dir, "artifacts"), filepath.Join(dir, "benchmark")); err != nil {
		t.Fatal(err)
	}
	found, err := session.Find(root)
	if err != nil || found != dir {
		t.Fatalf("Find = %q, %v", found, err)
	}
	rep, err := Analyze(context.Background(), found, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s9 := findResult(rep, "S9")
	if s9 == nil || s9.Verdict.IsPass() || s9.TierMet != TierUnknown {
		t.Fatalf("S9 = %+v; without plan budgets the tier is unknown and red flag 6 blocks PASS", s9)
	}
	if len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Message, "analyzing without a plan") {
		t.Errorf("problems %v", rep.Problems)
	}
	if len(rep.Warnings) != 0 || rep.SessionVerdict != Inconclusive {
		t.Errorf("session %s warnings %v", rep.SessionVerdict, rep.Warnings)
	}
}

// analyzeMiniRun builds one generated run into a session of plan-mini and
// analyzes it against that plan.
func analyzeMiniRun(t *testing.T, g runGen) *Report {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mini", "20260101T000000Z")
	g.build(t, dir)
	p, err := plan.Parse("testdata/plan-mini.md")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), dir, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestRunNotInPlan: a record for an id the plan does not declare is
// analyzed on its own and reported, and never hides a plan scenario.
func TestRunNotInPlan(t *testing.T) {
	rep := analyzeMiniRun(t, runGen{scenario: "S7", seed: 1, tier: "smoke", nodes: 3, dur: 60, remoteOracle: remote("x", 60)})
	if len(rep.Scenarios) != 3 || rep.Scenarios[2].ID != "S7" || findResult(rep, "S1").Verdict != NotRun {
		t.Fatalf("scenarios %+v", rep.Scenarios)
	}
	found := false
	for _, pr := range rep.Problems {
		found = found || strings.Contains(pr.Message, "S7 is not a scenario of plan mini")
	}
	if !found {
		t.Errorf("problems %v", rep.Problems)
	}
}

// TestDeclaredNotAttempted: a record that says attempted=false is NOT-RUN
// with the runner's note as the reason, never a PASS on an empty history.
func TestDeclaredNotAttempted(t *testing.T) {
	rep := analyzeMiniRun(t, runGen{scenario: "S2", seed: 1, tier: "smoke", nodes: 3, dur: 60, remoteOracle: remote("x", 60), mutate: func(r *session.Run) {
		r.Attempted = false
		r.Notes = "time ran out before S2"
	}})
	s2 := findResult(rep, "S2")
	if s2.Verdict != NotRun || !strings.Contains(reasonText(s2), "time ran out before S2") || rep.SessionVerdict != Blocked {
		t.Fatalf("S2 = %s (%s), session %s", s2.Verdict, reasonText(s2), rep.SessionVerdict)
	}
}

// TestInterruptedRunSaysWhy: a run cut short before its fault window (the
// user's `dstgen run stop`, a SIGTERM) is INCONCLUSIVE-fault-not-proven,
// and its one-line reason says what ended it, not the tier warning recorded
// after it (a testbed walk's `reason.S1=` read "warning: smoke budget not
// met: 26.99s/1m0s duration, 0/1 faults landed").
func TestInterruptedRunSaysWhy(t *testing.T) {
	rep := analyzeMiniRun(t, runGen{scenario: "S1", seed: 1, tier: "smoke", nodes: 3, dur: 27, ops: 200, remoteOracle: remote("x", 200), mutate: func(r *session.Run) {
		r.Notes = "S1 interrupted before S1-w1: terminated signal received"
	}})
	s1 := findResult(rep, "S1")
	why := s1.Why()
	if s1.Verdict != InconclusiveFaultNotProven || !strings.Contains(why.Text, "no fault window recorded (S1 interrupted before S1-w1: terminated signal received)") {
		t.Fatalf("S1 = %s, why %q; reasons %v", s1.Verdict, why, s1.Reasons)
	}
	if last := s1.Reasons[len(s1.Reasons)-1].Text; !strings.HasPrefix(last, "warning: ") {
		t.Errorf("the tier warning is no longer recorded last (%q): the case this test guards is gone", last)
	}
}

// TestVerdictCellCitesTheDecidingReason: a non-PASS verdict's one-line reason
// is the branch that produced it, never the tier warning recorded after it
// (S3's table cell once read "warning: smoke budget not met" instead of the
// missing victim-side landing evidence).
func TestVerdictCellCitesTheDecidingReason(t *testing.T) {
	rep := analyzeFixture(t, sessMixed)
	md := string(RenderMarkdown(rep, nil))
	tests := []struct{ id, want string }{
		{"S3", "INCONCLUSIVE-fault-not-proven — landing signal absent or ambiguous"},
		{"S4/admin", "INCONCLUSIVE-env — required capability missing"},
	}
	for _, tt := range tests {
		row := ""
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "| "+tt.id+" |") {
				row = l
				break
			}
		}
		if !strings.Contains(row, tt.want) {
			t.Errorf("%s results row lacks %q:\n%s", tt.id, tt.want, row)
		}
		if strings.Contains(row, "— warning:") {
			t.Errorf("%s results row cites a tier warning as its reason:\n%s", tt.id, row)
		}
	}
	surf := md[strings.Index(md, "## Surface coverage"):]
	if !strings.Contains(surf, "| INCONCLUSIVE-env | required capability missing") {
		t.Errorf("surface coverage downgrade reason for S4/admin is not the capability row:\n%.800s", surf)
	}
}

// TestTornHistoryLineIsNotACompleteCheck: a history whose last line was
// torn (the Recorder's crash case) or that holds a garbage line lost an op
// the checker never saw, so the DONE fixture's PASS becomes PARTIAL-model
// citing the count, and the bad line is a file:line problem.
func TestTornHistoryLineIsNotACompleteCheck(t *testing.T) {
	p, err := plan.Parse("testdata/plan-mini.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{`{"op_id":"999","process_id":"p`, "garbage\n"} {
		dir := filepath.Join(t.TempDir(), "mini", "20260610T100000Z")
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", sessDone))); err != nil {
			t.Fatal(err)
		}
		hist := filepath.Join(dir, "artifacts", "S1", "history.jsonl")
		f, err := os.OpenFile(hist, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(tail); err != nil {
			t.Fatal(err)
		}
		f.Close()
		rep, err := Analyze(context.Background(), dir, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s1 := findResult(rep, "S1")
		if s1 == nil || s1.Verdict != PartialModel || !strings.Contains(reasonText(s1), "consumed 60 of 61 ops produced") {
			t.Errorf("tail %q: S1 = %+v, want PARTIAL-model citing 60 of 61", tail, s1)
		}
		if rep.SessionVerdict == Done {
			t.Errorf("tail %q: session DONE with a lost op", tail)
		}
		if !strings.Contains(fmt.Sprint(rep.Problems), "history.jsonl:62:") {
			t.Errorf("tail %q: no file:line problem: %v", tail, rep.Problems)
		}
	}
}

// TestAdequacyRangeOfScenarios: a §7b Scenarios cell written as a range
// ("S1–S3") covers every scenario in it, as the plan parser reads it.
func TestAdequacyRangeOfScenarios(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := "| C1 | (a) stale lease read, (b) split brain | S1 (a, b) |"
	if !strings.Contains(string(src), row) {
		t.Fatalf("fixture plan lacks the C1 adequacy row")
	}
	path := filepath.Join(t.TempDir(), "plan.md")
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), row, "| C1 | (a) stale lease read, (b) split brain | S1–S3 (a, b) |", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), filepath.Join("testdata", sessMixed), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Adequacy) == 0 {
		t.Fatal("no adequacy rows")
	}
	got := rep.Adequacy[0].WhatRan
	for _, id := range []string{"S1 ", "S2 ", "S3 "} {
		if !strings.Contains(got, id) {
			t.Errorf("adequacy of C1 over S1–S3 lacks %s: %q", id, got)
		}
	}
}
