package analyze

// Stage 4, decide: the decision tree, the tier, weak-oracle and
// red-flag gates, arm aggregation and the session verdict
// (docs/verdicts.md §3–§5, §8). Reads facts and audit results; calls only
// stages 0–2.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/checker"
)

// decideTree applies docs/verdicts.md §3 (tree steps 0–7 and docs/verdicts.md §3.2/§3.3) and
// returns the tree verdict with the reason for the branch taken.
func decideTree(f *facts) (Verdict, []Reason) {
	r := func(step string, v Verdict, format string, a ...any) (Verdict, []Reason) {
		return v, []Reason{{Step: step, To: v, Text: fmt.Sprintf(format, a...)}}
	}
	if !f.attempted {
		why := f.notRunReason
		if why == "" {
			why = "declared in the plan; no start record in the session"
		}
		return r("tree:0", NotRun, "%s", why)
	}
	if f.missingCap != "" {
		return r("tree:1", InconclusiveEnv, "required capability missing: %s", f.missingCap)
	}
	if f.violation {
		if f.reproduced {
			return r("tree:2", FailReproducible, "%s; reproduced on re-run (%s)", f.violationText, f.rerunText)
		}
		if f.reruns == 0 {
			return r("tree:2", FailNondeterministic, "%s; not re-run", f.violationText)
		}
		return r("tree:2", FailNondeterministic, "%s; re-run with the same inputs did not reproduce it (%s)", f.violationText, f.rerunText)
	}
	// A dirty initial state (the SUT did not start empty) is a gap between
	// the plan and the operator's environment, like a missing capability
	// at step 1 (docs/verdicts.md §2 INCONCLUSIVE-env: "not plan ↔ SUT"). It is
	// decided after step 2, not before, because the dirty keys were left
	// out of the check: a clean key's violation is the SUT's and stands.
	// Without one, neither FAIL (the "anomaly" is left-over data) nor PASS
	// (the dirty keys were never judged) can be claimed.
	if len(f.dirty) > 0 {
		return r("tree:1", InconclusiveEnv, "dirty initial state: %s; %s", strings.Join(render.FirstN(f.dirty, 3), "; "), checker.DirtyAdvice)
	}
	if f.faultPlanned && len(f.unlanded) > 0 {
		return r("tree:3", InconclusiveFaultNotProven, "landing signal absent or ambiguous: %s", strings.Join(f.unlanded, "; "))
	}
	if f.serious {
		if !f.checkerRan {
			return r("tree:4", PartialSurface, "§7.M checker did not run: %s", f.checkerWhyNot)
		}
		if len(f.missingFields) > 0 {
			return r("tree:5", InconclusiveOracleTooWeak, "history too weak for the checker: %s", strings.Join(f.missingFields, "; "))
		}
		if f.consumed < f.produced {
			return r("tree:6", PartialModel, "checker consumed %d of %d ops produced", f.consumed, f.produced)
		}
		if f.scopeNarrower != "" {
			return r("tree:6", PartialModel, "checker scope narrower than the claim: %s", f.scopeNarrower)
		}
	} else if !f.oracleRan {
		return r("tree:4", PartialSurface, "oracle did not run: %s", f.oracleWhyNot)
	}
	if f.faultActive {
		return r("tree:7", PassHardening, "no anomaly with the fault active and landed")
	}
	return r("tree:7", PassSmoke, "no anomaly; no fault active")
}

// decide runs the tree and then the docs/verdicts.md §4 gates (budget tier, weak-oracle
// audit, red flags), recording every downgrade.
func decide(f *facts) (tree, final Verdict, release bool, reasons []Reason) {
	tree, reasons = decideTree(f)
	v := tree
	// down caps v at to. A cap no weaker than v changes nothing but is
	// still recorded when equal, so every failing gate is explained.
	down := func(step string, to Verdict, text string) {
		switch {
		case to.Strength() < v.Strength():
			reasons = append(reasons, Reason{Step: step, From: v, To: to, Text: text})
			v = to
		case to == v:
			reasons = append(reasons, Reason{Step: step, From: v, To: to, Text: "also: " + text})
		}
	}
	if !v.IsPass() {
		return tree, v, false, reasons
	}
	// docs/verdicts.md §4.1 budget tier.
	if f.tierWarn != "" {
		reasons = append(reasons, Reason{Step: "gate:tier", To: v, Text: "warning: " + f.tierWarn})
	}
	switch f.tier {
	case TierHardening, TierRelease:
	default:
		if v == PassHardening {
			down("gate:tier", PassSmoke, fmt.Sprintf("hardening tier not met (tier met: %s); a fault-active clean run is capped to PASS-smoke", f.tier))
		}
	}
	if v == PassHardening && f.tier == TierRelease {
		if f.releaseNA {
			reasons = append(reasons, Reason{Step: "gate:tier", To: v, Text: "release tier measured but release budget not provided: " + f.releaseText})
		} else {
			release = true
		}
	}
	// docs/verdicts.md §4.2 weak-oracle audit (serious scenarios, PASS-hardening only).
	if f.serious && v == PassHardening {
		var surf, breadth []string
		for _, it := range f.weak {
			if it.Status != ItemUnchecked {
				continue
			}
			s := fmt.Sprintf("%d (%s)", it.N, it.Reason)
			if it.Kind == KindSurface {
				surf = append(surf, s)
			} else {
				breadth = append(breadth, s)
			}
		}
		switch {
		case len(surf) > 0:
			down("gate:weak-oracle", PartialSurface, "weak-oracle items unchecked: "+strings.Join(append(surf, breadth...), "; "))
			release = false
		case len(breadth) > 0:
			down("gate:weak-oracle", PartialModel, "weak-oracle items unchecked: "+strings.Join(breadth, "; "))
			release = false
		}
	}
	// docs/verdicts.md §4.3 red flags (all scenarios whose tree verdict was a PASS).
	{
		to, why := redFlagCap(f.redFlags)
		if to != "" {
			down("gate:red-flag", to, why)
			release = false
		}
	}
	return tree, v, release, reasons
}

// redFlagCap maps failing/unknown red-flag checks to the weakest verdict
// the docs/verdicts.md §4.3 mapping allows; "" when every check is satisfied or N/A.
func redFlagCap(checks []Check) (Verdict, string) {
	var to Verdict
	var why []string
	for _, c := range checks {
		if c.Status == CheckPass || c.Status == CheckNA {
			continue
		}
		var v Verdict
		switch c.N {
		case 3, 4:
			v = InconclusiveFaultNotProven
		case 5:
			v = InconclusiveOracleTooWeak
		case 1, 2, 6, 8:
			v = PartialSurface
		case 9, 10:
			v = PartialModel
		case 7:
			if c.Status == CheckFail {
				continue // kept; raised as a finding for review
			}
			v = PartialSurface // unknown: no log scan recorded blocks PASS
		default:
			continue
		}
		why = append(why, fmt.Sprintf("red flag %d %s: %s", c.N, c.Status, c.Evidence))
		if to == "" || v.Strength() < to.Strength() {
			to = v
		}
	}
	return to, strings.Join(why, "; ")
}

// aggregateArms applies docs/verdicts.md §5 and returns the parent verdict with
// its downgrade reason.
func aggregateArms(arms []ScenarioResult) (Verdict, string) {
	if len(arms) == 0 {
		return NotRun, "no arms"
	}
	var failR, failN, notRun, partial []string
	for _, a := range arms {
		switch {
		case a.Verdict == FailReproducible:
			failR = append(failR, a.ID)
		case a.Verdict == FailNondeterministic:
			failN = append(failN, a.ID)
		case a.Verdict == NotRun:
			notRun = append(notRun, a.ID)
		case a.Verdict.IsPartial():
			partial = append(partial, a.ID)
		}
	}
	if len(notRun) == len(arms) {
		// Nothing was attempted: the parent is NOT-RUN too, or a session
		// where nothing ran could never be BLOCKED.
		return NotRun, fmt.Sprintf("all %d %s NOT-RUN", len(arms), plural(len(arms), "arm", "arms"))
	}
	if len(failR) > 0 {
		return FailReproducible, "FAIL-reproducible arm: " + strings.Join(failR, ", ")
	}
	if len(failN) > 0 {
		return FailNondeterministic, "FAIL-nondeterministic arm: " + strings.Join(failN, ", ")
	}
	if len(notRun)+len(partial) > 0 {
		var parts []string
		if len(notRun) > 0 {
			parts = append(parts, fmt.Sprintf("%d NOT-RUN %s (%s)", len(notRun), plural(len(notRun), "arm", "arms"), strings.Join(notRun, ", ")))
		}
		if len(partial) > 0 {
			parts = append(parts, fmt.Sprintf("%d PARTIAL %s (%s)", len(partial), plural(len(partial), "arm", "arms"), strings.Join(partial, ", ")))
		}
		return PartialSurface, strings.Join(parts, " + ")
	}
	weakest := arms[0]
	for _, a := range arms[1:] {
		if a.Verdict.Strength() < weakest.Verdict.Strength() {
			weakest = a
		}
	}
	return weakest.Verdict, fmt.Sprintf("weakest arm %s is %s", weakest.ID, weakest.Verdict)
}

// sessionVerdict applies docs/verdicts.md §8 to the scenario (aggregate)
// verdicts, in the spec's evaluation order.
func sessionVerdict(vs []Verdict) SessionVerdict {
	ran := false
	for _, v := range vs {
		if v != NotRun {
			ran = true
		}
	}
	if !ran {
		return Blocked
	}
	anyPass, allPass := false, true
	for _, v := range vs {
		if v == FailReproducible {
			return Fail
		}
		if v.IsPass() {
			anyPass = true
		} else {
			allPass = false
		}
	}
	switch {
	case allPass:
		return Done
	case anyPass:
		return DoneWithConcerns
	}
	return Inconclusive
}

// headline leads with the strongest evidence: a reproducible FAIL, then a
// nondeterministic violation, then the pass/inconclusive tally.
func headline(sv SessionVerdict, scen []ScenarioResult) string {
	var failR, failN []string
	counts := map[Verdict]int{}
	for _, s := range scen {
		counts[s.Verdict]++
		switch s.Verdict {
		case FailReproducible:
			failR = append(failR, s.ID)
		case FailNondeterministic:
			failN = append(failN, s.ID)
		}
	}
	n := len(scen)
	var b strings.Builder
	switch {
	case len(failR) > 0:
		fmt.Fprintf(&b, "%d reproducible oracle %s (%s)", len(failR), plural(len(failR), "violation", "violations"), strings.Join(failR, ", "))
		if len(failN) > 0 {
			fmt.Fprintf(&b, " and %d nondeterministic (%s)", len(failN), strings.Join(failN, ", "))
		}
	case len(failN) > 0:
		// "Not reproduced" would say a re-run came out clean; a violation
		// nobody re-ran is not re-run (the reason's words, docs/verdicts.md §3.3).
		// A parent's arms carry the runs, so they are named.
		var clean, unrun []string
		for _, s := range scen {
			if s.Verdict != FailNondeterministic {
				continue
			}
			units := []ScenarioResult{s}
			if len(s.Arms) > 0 {
				units = s.Arms
			}
			for _, u := range units {
				switch {
				case u.Verdict != FailNondeterministic:
				case u.reRun:
					clean = append(clean, u.ID)
				default:
					unrun = append(unrun, u.ID)
				}
			}
		}
		fmt.Fprintf(&b, "%d nondeterministic oracle %s (%s)", len(failN), plural(len(failN), "violation", "violations"), strings.Join(failN, ", "))
		// The ids again only when they tell the two groups apart, or
		// name arms rather than the scenarios already listed.
		named := func(words string, ids []string) string {
			if (len(clean) == 0 || len(unrun) == 0) && slices.Equal(ids, failN) {
				return words
			}
			return words + " (" + strings.Join(ids, ", ") + ")"
		}
		var how []string
		if len(clean) > 0 {
			how = append(how, named("not reproduced on re-run", clean))
		}
		if len(unrun) > 0 {
			how = append(how, named("not re-run", unrun))
		}
		if len(how) > 0 {
			b.WriteString(", " + strings.Join(how, ", "))
		}
	case sv == Done:
		fmt.Fprintf(&b, "all %d %s passed with stated coverage", n, plural(n, "scenario", "scenarios"))
	case sv == Blocked:
		b.WriteString("nothing ran")
	default:
		pass := counts[PassSmoke] + counts[PassHardening]
		fmt.Fprintf(&b, "%d of %d %s passed", pass, n, plural(n, "scenario", "scenarios"))
	}
	var rest []string
	for _, v := range Verdicts {
		if c := counts[v]; c > 0 && !v.IsFail() {
			rest = append(rest, fmt.Sprintf("%d %s", c, v))
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 && sv != Done {
		fmt.Fprintf(&b, "; %s", strings.Join(rest, ", "))
	}
	fmt.Fprintf(&b, " — session verdict %s", sv)
	return b.String()
}

func weakestTier(arms []ScenarioResult) TierLevel {
	rank := map[TierLevel]int{TierNone: 0, TierUnknown: 1, TierSmoke: 2, TierHardening: 3, TierRelease: 4}
	t := TierRelease
	for _, a := range arms {
		if rank[a.TierMet] < rank[t] {
			t = a.TierMet
		}
	}
	return t
}

func armEvidence(arms []ScenarioResult) (string, string) {
	var o, l []string
	for _, a := range arms {
		o = append(o, a.ID+": "+a.OracleEvidence)
		l = append(l, a.ID+": "+a.LandingEvidence)
	}
	return strings.Join(o, "; "), strings.Join(l, "; ")
}

// mergeFlags gives the aggregate row the worst status of each red flag.
func mergeFlags(arms []ScenarioResult) []Check {
	rank := map[string]int{CheckNA: 0, CheckPass: 1, CheckUnknown: 2, CheckFail: 3}
	var out []Check
	for n := 1; n <= 10; n++ {
		c := Check{N: n, Name: redFlagNames[n], Status: CheckNA, Evidence: "all arms n/a"}
		var worst []string
		for _, a := range arms {
			for _, f := range a.RedFlags {
				if f.N != n {
					continue
				}
				if rank[f.Status] > rank[c.Status] {
					c.Status = f.Status
					worst = nil
				}
				if f.Status == c.Status {
					worst = append(worst, a.ID)
				}
			}
		}
		if len(worst) > 0 {
			c.Evidence = fmt.Sprintf("worst over arms: %s (%s)", c.Status, strings.Join(worst, ", "))
		}
		out = append(out, c)
	}
	return out
}

// tierWarnings lifts the "unparseable tier" warnings of docs/verdicts.md §4.1
// to the report, one per scenario or arm.
func tierWarnings(scen []ScenarioResult) []string {
	var out []string
	for _, s := range scen {
		for _, r := range s.Reasons {
			if r.Step == "gate:tier" && strings.Contains(r.Text, "not parseable") {
				out = append(out, s.ID+": "+strings.TrimPrefix(r.Text, "warning: "))
				break
			}
		}
		out = append(out, tierWarnings(s.Arms)...)
	}
	return out
}
