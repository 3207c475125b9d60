package analyze

// Stage 2, facts: per scenario or arm, what ran, what landed and what
// the checker said, reduced to the flat inputs of the decision tree.
// Calls only stages 0–1.

import (
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
)

// facts is everything the decision tree and the gates look at for one
// scenario or arm, already reduced from run.json, the history and checker
// results. Keeping it flat makes the tree a pure function that tables can
// test.
type facts struct {
	attempted     bool
	notRunReason  string
	missingCap    string // "<requirement>: <reason>"; non-empty ⇒ INCONCLUSIVE-env
	violation     bool
	violationText string
	// dirty cites ops that read a value no op in their history wrote
	// (left-over state from an earlier run, "history:line: …"); their keys
	// were not checked. Non-empty and no violation ⇒ INCONCLUSIVE-env.
	dirty []string
	// reruns counts re-run records of the violating seed(s); reproduced says
	// whether any of them violated too.
	reruns     int
	reproduced bool
	rerunText  string

	faultPlanned bool
	faultActive  bool
	// unlanded names every scheduled window without unambiguous landing
	// evidence ("S1-w2: victim evidence absent").
	unlanded []string

	serious bool
	// checkerRan: the §7.M checker produced a definite outcome with an op
	// count; checkerWhyNot says why not.
	checkerRan    bool
	checkerWhyNot string
	missingFields []string // history field audit + model/checker mismatch
	consumed      int
	produced      int
	scopeNarrower string

	oracleRan    bool // non-serious: the scenario's Oracle criterion ran
	oracleWhyNot string

	tier        TierLevel
	tierWarn    string
	releaseNA   bool   // release budget is the "not provided" disclosure
	releaseText string // the disclosure

	redFlags []Check
	weak     []WeakItem
}

// gatherFacts reduces a unit's runs to the tree's inputs.
func gatherFacts(u *unit, reqs []plan.EnvReq) *facts {
	f := &facts{serious: u.serious, faultPlanned: faultsPlanned(u.ps), tier: TierNone}
	if u.ps == nil {
		for _, lr := range u.runs {
			f.faultPlanned = f.faultPlanned || len(lr.run.FaultWindows) > 0
		}
	}
	for _, lr := range u.runs {
		if lr.run.Attempted {
			f.attempted = true
		} else if lr.run.Notes != "" {
			f.notRunReason = lr.rel + ": not attempted: " + lr.run.Notes
		}
	}
	if !f.attempted {
		if f.notRunReason == "" && u.notRun != "" {
			f.notRunReason = u.notRun
		}
		if f.notRunReason == "" && len(u.runs) > 0 {
			f.notRunReason = u.runs[0].rel + ": recorded as not attempted"
		}
		return f
	}
	runs := attemptedRuns(u.runs)
	factsCapabilities(f, u, runs, reqs)
	factsViolations(f, u, runs)
	factsLanding(f, u, runs)
	if u.serious {
		factsChecker(f, u, runs)
	} else {
		factsOracle(f, runs)
	}
	f.tier, f.tierWarn, f.releaseNA, f.releaseText = tierMet(u, runs)
	return f
}

// is tree step 1 (docs/verdicts.md §3.1): the first missing
// capability a run recorded, or a §6b requirement of the unit's recorded
// as not present.
func factsCapabilities(f *facts, u *unit, runs []*loadedRun, reqs []plan.EnvReq) {
	for _, lr := range runs {
		if m := lr.run.MissingCapability; m != nil {
			f.missingCap = fmt.Sprintf("%s — %s (%s:%d)", m.Requirement, m.Reason, lr.rel, lr.run.Line("missing_capability"))
			break
		}
		for i, c := range lr.run.Capabilities {
			if !c.Present && requiredBy(reqs, c.Requirement, u) {
				f.missingCap = fmt.Sprintf("%s not present (capability row, %s:%d)", c.Requirement, lr.rel, lr.run.Line(fmt.Sprintf("capabilities[%d]", i)))
				break
			}
		}
		if f.missingCap != "" {
			break
		}
	}
}

// is tree step 2: the runs whose checker or remote oracle found
// an anomaly, the re-runs of their seeds, and the dirty initial state the
// checkers left out.
func factsViolations(f *facts, u *unit, runs []*loadedRun) {
	var viol []string
	for _, lr := range runs {
		if ok, why := violated(lr); ok {
			f.violation = true
			viol = append(viol, fmt.Sprintf("seed %d (%s): %s", lr.run.Seed, lr.rel, why))
			for _, rr := range u.reruns {
				if rr.run.ReRunOf.Seed != lr.run.Seed || !rr.run.Attempted {
					continue
				}
				if rr.run.ReRunOf.File != "" && !strings.HasSuffix(lr.rel, rr.run.ReRunOf.File) {
					continue
				}
				f.reruns++
				rv, _ := violated(rr)
				if rv {
					f.reproduced = true
				}
				f.rerunText = appendText(f.rerunText, fmt.Sprintf("%s seed %d: %s", rr.rel, rr.run.Seed, map[bool]string{true: "violated again", false: "no violation"}[rv]))
			}
		}
	}
	f.violationText = strings.Join(viol, "; ")
	for _, lr := range runs {
		for _, res := range lr.results {
			for _, d := range res.Dirty {
				f.dirty = append(f.dirty, fmt.Sprintf("%s:%d: %s", lr.histRel, d.Line, d))
			}
		}
	}
	f.dirty = uniq(f.dirty)
}

// is tree step 3: whether a fault was active and which scheduled
// windows lack landing evidence.
func factsLanding(f *facts, u *unit, runs []*loadedRun) {
	for _, lr := range runs {
		if f.faultPlanned && len(lr.run.FaultWindows) == 0 && windowsExpected(u, lr) {
			why := lr.rel + ": no fault window recorded"
			if lr.run.Notes != "" {
				// What ended the run first (an interrupt before the window,
				// a stage that failed) is what the person reading the verdict
				// acts on.
				why += " (" + lr.run.Notes + ")"
			}
			f.unlanded = append(f.unlanded, why)
		}
		for _, w := range lr.run.FaultWindows {
			if w.InjectedAtNS != nil {
				f.faultActive = true
			}
			if ok, txt := windowLanded(w); !ok {
				f.unlanded = append(f.unlanded, txt)
			}
		}
	}
}

// is tree steps 4–6 for a serious unit: did the §7.M checker
// run on every run, on a history strong enough, over every op produced.
func factsChecker(f *facts, u *unit, runs []*loadedRun) {
	f.checkerRan = true
	for _, lr := range runs {
		c, p, ran, why := oracleCounts(u, lr)
		if !ran {
			f.checkerRan = false
			f.checkerWhyNot = appendText(f.checkerWhyNot, lr.rel+": "+why)
			continue
		}
		if c == 0 {
			f.checkerRan = false
			f.checkerWhyNot = appendText(f.checkerWhyNot, lr.rel+": checker reported 0 ops consumed")
			continue
		}
		if f.produced == 0 || c-p < f.consumed-f.produced {
			f.consumed, f.produced = c, p
		}
		f.missingFields = append(f.missingFields, historyGaps(u, lr, f.faultActive)...)
	}
	f.missingFields = uniq(f.missingFields)
	f.scopeNarrower = narrowerScope(u, runs)
}

// is tree step 4 for a non-serious unit (docs/verdicts.md §3.2):
// did the scenario's oracle run and cite an execution count.
func factsOracle(f *facts, runs []*loadedRun) {
	f.oracleRan = true
	for _, lr := range runs {
		o := lr.run.Oracle
		switch {
		case len(lr.results) > 0:
			// dstgen ran the scenario's threshold oracle (fairness,
			// SLO) on the history itself.
			for _, res := range lr.results {
				if res.Outcome == checker.Unknown || res.OpsConsumed == 0 {
					f.oracleRan = false
					f.oracleWhyNot = appendText(f.oracleWhyNot, fmt.Sprintf("%s: checker %s %s", lr.rel, res.Checker, orText(res.Reason, "consumed no ops")))
				}
			}
		case lr.checkErr != "" && o == nil:
			f.oracleRan = false
			f.oracleWhyNot = appendText(f.oracleWhyNot, lr.rel+": "+lr.checkErr)
		case o == nil:
			f.oracleRan = false
			f.oracleWhyNot = appendText(f.oracleWhyNot, lr.rel+": no oracle record")
		case !o.Ran:
			f.oracleRan = false
			f.oracleWhyNot = appendText(f.oracleWhyNot, lr.rel+": oracle recorded as not run")
		case o.Outcome == "unknown":
			f.oracleRan = false
			f.oracleWhyNot = appendText(f.oracleWhyNot, lr.rel+": oracle outcome unknown")
		case o.OpsConsumed == 0:
			f.oracleRan = false
			f.oracleWhyNot = appendText(f.oracleWhyNot, lr.rel+": oracle cites no execution count")
		}
	}
}

// violated reports whether a run registered a FAIL: a checker or the
// remote oracle found an anomaly.
func violated(lr *loadedRun) (bool, string) {
	var parts []string
	for _, res := range lr.results {
		if res.Outcome == checker.Invalid {
			parts = append(parts, fmt.Sprintf("%s: %s", res.Checker, res.Evidence()))
		}
	}
	if o := lr.run.Oracle; o != nil && o.Ran && (o.Outcome == "invalid" || o.Anomalies > 0) {
		parts = append(parts, fmt.Sprintf("remote oracle %s: %d ops consumed, %d anomalies", strings.Join(o.Checkers, "+"), o.OpsConsumed, o.Anomalies))
	}
	return len(parts) > 0, strings.Join(parts, "; ")
}

func attemptedRuns(runs []*loadedRun) []*loadedRun {
	var out []*loadedRun
	for _, lr := range runs {
		if lr.run.Attempted {
			out = append(out, lr)
		}
	}
	return out
}

// requiredBy reports whether §6b lists requirement as used by the unit.
func requiredBy(reqs []plan.EnvReq, requirement string, u *unit) bool {
	for _, r := range reqs {
		if !strings.EqualFold(strings.TrimSpace(r.Requirement), strings.TrimSpace(requirement)) {
			continue
		}
		for _, id := range r.UsedBy {
			if id == u.id || id == u.parent {
				return true
			}
		}
	}
	return false
}

// historyGaps is the step-5 audit: the history's missing fields for each
// declared checker, model/checker mismatches, and recorder bugs.
func historyGaps(u *unit, lr *loadedRun, faultActive bool) []string {
	var out []string
	model := ""
	if u.model != nil {
		model = u.model.Model
	}
	if !lr.hasHist {
		return nil // the remote oracle ran; nothing local to audit
	}
	if len(lr.invalid) > 0 {
		out = append(out, fmt.Sprintf("history invalid (recorder bug, blame harness): %s", strings.Join(render.FirstN(lr.invalid, 2), "; ")))
	}
	for _, res := range lr.results {
		if checker.Mismatched(model, res.Checker) {
			out = append(out, fmt.Sprintf("checker %s is mismatched to model %s", res.Checker, model))
		}
		need := checker.Needs(res.Checker, model)
		need.FaultEpoch = faultActive && overlaps(lr)
		if u.categories[plan.CatMembership] {
			need.NodeSeen = true
		}
		for _, w := range history.Weak(lr.meta, lr.ops, need) {
			out = append(out, fmt.Sprintf("%s: %s", lr.histRel, w))
		}
	}
	if lr.run.Clock == "wall" && lr.meta.Clock == "" {
		out = append(out, fmt.Sprintf("%s: clock=wall while the checker compares timestamps across processes", lr.rel))
	}
	return out
}

// faultsPlanned reads a scenario's Faults field: anything but an empty
// value, "none", "N/A" or "0 faults" plans a fault. (Private until the plan
// package ships its own helper.)
func faultsPlanned(s *plan.Scenario) bool {
	if s == nil {
		return false
	}
	t := strings.ToLower(strings.TrimSpace(strings.Trim(s.Faults, "`*_ ")))
	switch {
	case t == "", t == "none", t == "n/a", t == "-", t == "—", t == "0 faults", t == "no faults":
		return false
	case strings.HasPrefix(t, "none "), strings.HasPrefix(t, "none—"), strings.HasPrefix(t, "none —"), strings.HasPrefix(t, "n/a "):
		return false
	}
	return true
}

// windowsExpected says whether a run should have fault windows: the budget
// of the tier it ran at (smoke when unset) states a fault count above 0, or
// states none at all. A smoke run at "0 faults" of a fault scenario has
// nothing to prove.
func windowsExpected(u *unit, lr *loadedRun) bool {
	if u.ps == nil {
		return true
	}
	t := budgetFor(u.ps, TierLevel(lr.run.Tier)).Tier
	return !t.Faults.Known || t.Faults.N > 0
}

// overlaps reports whether any op ran (by its timestamps) inside an
// injected fault window: only then must the history carry fault_epoch.
func overlaps(lr *loadedRun) bool {
	for _, w := range lr.run.FaultWindows {
		if w.InjectedAtNS == nil {
			continue
		}
		for i := range lr.ops {
			if invokedIn(lr.ops[i].InvokeTS, w) {
				return true
			}
		}
	}
	return false
}

// narrowerScope names a claim the checkers that ran cannot cover in full:
// per-key linearizability for an isolation claim over a multi-key model
// (the spec row is serializability, which dstgen does not ship).
func narrowerScope(u *unit, runs []*loadedRun) string {
	if u.model == nil || !u.categories[plan.CatIsolation] {
		return ""
	}
	m := strings.ToLower(strings.TrimSpace(u.model.Model))
	if m != "map" && m != "kv" {
		return ""
	}
	for _, lr := range runs {
		for _, res := range lr.results {
			if res.Checker != checker.Linearizability {
				return ""
			}
		}
	}
	return "per-key linearizability checked; cross-key serializability (the isolation claim) was not"
}

// runFacts is the tree input for a single run, for per-seed verdicts.
func runFacts(u *unit, lr *loadedRun) *facts {
	one := *u
	one.runs = []*loadedRun{lr}
	one.reruns = nil
	return gatherFacts(&one, nil)
}

// evidenceTexts renders the oracle and landing evidence cells.
func evidenceTexts(u *unit) (oracle, landing string) {
	consumed, anomalies, n := 0, 0, 0
	var remote, bounds []string
	for _, lr := range attemptedRuns(u.runs) {
		if len(lr.results) > 0 {
			// Ops consumed are the history's: two checkers over one
			// history read the same ops, so a run counts the most any of
			// them read, never their sum. Anomalies are each checker's own.
			most := 0
			for _, res := range lr.results {
				most = max(most, res.OpsConsumed)
				anomalies += res.AnomalyCount()
				for _, t := range res.Thresholds {
					bounds = append(bounds, res.Checker+" "+t)
				}
			}
			consumed += most
			n++
			continue
		}
		if o := lr.run.Oracle; o != nil && o.Ran {
			consumed += o.OpsConsumed
			anomalies += o.Anomalies
			n++
			if o.Evidence != "" {
				remote = append(remote, o.Evidence)
			}
		}
	}
	if n == 0 {
		oracle = "oracle did not run"
	} else {
		oracle = fmt.Sprintf("%d ops consumed, %d %s", consumed, anomalies, plural(anomalies, "anomaly", "anomalies"))
		if n > 1 {
			oracle += fmt.Sprintf(" over %d runs", n)
		}
		if len(remote) > 0 {
			oracle += " (" + strings.Join(render.FirstN(uniq(remote), 2), "; ") + ")"
		}
		if bounds = uniq(bounds); len(bounds) > 0 {
			oracle += "; thresholds applied: " + strings.Join(bounds, ", ")
		}
	}
	var land []string
	for _, lr := range attemptedRuns(u.runs) {
		for _, w := range lr.run.FaultWindows {
			_, txt := windowLanded(w)
			land = append(land, txt)
		}
	}
	if len(land) == 0 {
		landing = "n/a — no fault window"
	} else {
		landing = strings.Join(render.FirstN(land, 3), "; ")
	}
	return oracle, landing
}
