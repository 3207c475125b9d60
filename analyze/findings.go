package analyze

// Stage 5, findings: a finding block for every FAIL and dirty initial
// state, with blame and TaxDC labels (docs/verdicts.md §9, §10). Calls only
// stages 0–2.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/reduce"
)

// BlamePending is the interim reduction class of docs/verdicts.md §9: analyze
// never guesses a blame class the evidence does not decide.
const BlamePending = "unknown — pending re-run on alternative harness/host"

// taxdc derives the TaxDC top-level category from the faults that were
// active (docs/verdicts.md §10): network ⇒ partition, process/storage ⇒
// crash-recovery, time/slow ⇒ timing, version ⇒ upgrade, config ⇒ config.
func taxdc(nemeses []string) string {
	for _, n := range nemeses {
		if networkNemeses[n] && n != "latency" && n != "slow-follower" && n != "bandwidth" {
			return "partition"
		}
	}
	for _, n := range nemeses {
		switch n {
		case "kill-9", "kill-term", "container-restart", "fsync-loss", "fsync-fail", "disk-full",
			"storage-corrupt", "bitflip", "restart-wrong-order", "backup-restore-race":
			return "crash-recovery"
		case "mixed-version", "rolling-upgrade":
			return "upgrade"
		case "config-divergence", "auth-divergence":
			return "config"
		}
	}
	return "timing"
}

// causalNemeses returns the nemeses of a violating run's fault windows
// that could have caused its anomalies: a fault injected only after every
// anomaly had ended cannot have, and labelling the finding by it (a
// crash-recovery label on a stale read seen before the kill) would mislead
// triage. When no anomaly carries a time window every fault counts; when
// none could have caused them, note says so, and when only some ended
// before the first injection, note counts them.
func causalNemeses(lr *loadedRun) (nemeses []string, note string) {
	var all []string
	var ends []int64 // the anomalies' time windows' ends
	for _, res := range lr.results {
		if res.Outcome != checker.Invalid {
			continue
		}
		for _, an := range res.Anomalies {
			if an.WindowEnd > 0 {
				ends = append(ends, an.WindowEnd)
			}
		}
	}
	located := len(ends) > 0
	latestEnd := int64(-1)
	if located {
		latestEnd = slices.Max(ends)
	}
	var causal []string
	first := int64(-1) // the first injection
	for _, w := range lr.run.FaultWindows {
		all = append(all, w.Nemesis)
		if !located || (w.InjectedAtNS != nil && *w.InjectedAtNS <= latestEnd) {
			causal = append(causal, w.Nemesis)
		}
		if w.InjectedAtNS != nil && (first < 0 || *w.InjectedAtNS < first) {
			first = *w.InjectedAtNS
		}
	}
	if located && len(all) > 0 && len(causal) == 0 {
		note = fmt.Sprintf("every anomaly ended (by +%s) before any fault was injected (%s), so no fault caused it", time.Duration(latestEnd), strings.Join(uniq(all), ", "))
	} else if located && first >= 0 {
		// Some before, some after: the label names the fault, but a
		// reviewer must know the anomaly class needs none (a Galera run's
		// lost updates in its first seconds, long before the kill).
		before := 0
		for _, e := range ends {
			if e < first {
				before++
			}
		}
		if before > 0 {
			note = fmt.Sprintf("%d of the %d anomalies with a time ended before the first fault was injected (+%s), so the anomaly class needs no fault", before, len(ends), time.Duration(first))
		}
	}
	if !located {
		return all, note
	}
	return causal, note
}

// tagsFor maps violation kinds, claim categories and nemeses to TaxDC
// secondary tags.
func tagsFor(kinds []string, cats map[string]bool, nemeses []string) []string {
	var tags []string
	for _, k := range kinds {
		k = strings.ToLower(k)
		switch {
		case strings.Contains(k, "lineariz"), strings.Contains(k, "session"), strings.Contains(k, "monotonic"),
			strings.Contains(k, "invariant"), strings.Contains(k, "order"), strings.Contains(k, "prefix"):
			tags = append(tags, "safety")
		case strings.Contains(k, "lost"):
			tags = append(tags, "durability")
		case strings.Contains(k, "dup"), strings.Contains(k, "exactly"):
			tags = append(tags, "idempotency/dedup")
		case strings.Contains(k, "reconcil"), strings.Contains(k, "diverg"):
			tags = append(tags, "replication")
		case strings.Contains(k, "slo"), strings.Contains(k, "latency"):
			tags = append(tags, "liveness")
		}
	}
	for c := range cats {
		switch c {
		case plan.CatSafety, plan.CatIsolation, plan.CatOrdering, plan.CatBoundary:
			tags = append(tags, "safety")
		case plan.CatDurability:
			tags = append(tags, "durability")
		case plan.CatIdempotency:
			tags = append(tags, "idempotency/dedup")
		case plan.CatLiveness:
			tags = append(tags, "liveness")
		case plan.CatMembership:
			tags = append(tags, "replication")
		}
	}
	for _, n := range nemeses {
		if n == "leader-isolation" || n == "split-brain" || n == "restart-wrong-order" {
			tags = append(tags, "leadership/election")
		}
	}
	tags = uniq(tags)
	sort.Strings(tags)
	return tags
}

func severity(tags []string) string {
	for _, t := range tags {
		if t == "safety" || t == "durability" || t == "idempotency/dedup" {
			return "P0"
		}
	}
	for _, t := range tags {
		if t == "liveness" || t == "replication" || t == "leadership/election" {
			return "P1"
		}
	}
	return "P2"
}

// findings raises one finding per FAIL scenario/arm and one review finding
// per red flag 7 failure, numbering them F1… in report order.
func (a *analysis) findings(ctx context.Context, groups map[string]*group) {
	n := 0
	next := func() string { n++; return fmt.Sprintf("F%d", n) }
	// record files f under the scenario or arm t, and under its parent s
	// too when t is an arm, so the aggregate row lists its arms' findings.
	record := func(s, t *ScenarioResult, f Finding) {
		t.Findings = append(t.Findings, f.ID)
		if t != s {
			s.Findings = append(s.Findings, f.ID)
		}
		a.rep.Findings = append(a.rep.Findings, f)
	}
	for i := range a.rep.Scenarios {
		s := &a.rep.Scenarios[i]
		g := groups[s.ID]
		targets := []*ScenarioResult{s}
		units := []*unit{g.parent}
		if len(s.Arms) > 0 {
			targets, units = nil, nil
			for j := range s.Arms {
				targets = append(targets, &s.Arms[j])
				units = append(units, g.arms[j])
			}
		}
		for k, t := range targets {
			u := units[k]
			if t.Verdict.IsFail() {
				f := failFinding(ctx, u, t)
				f.ID = next()
				record(s, t, f)
			}
			if f, ok := dirtyFinding(u, t); ok {
				f.ID = next()
				record(s, t, f)
			}
			for _, c := range t.RedFlags {
				if c.N == 7 && c.Status == CheckFail {
					f := Finding{ID: next(), Title: "Error markers in SUT logs not accounted for by the oracle (" + t.ID + ")",
						Scenario: t.ID, Verdict: t.Verdict, Hypothesis: strings.Join(t.Hypotheses, ", "),
						WhatHappened:   "The log scan found error markers the oracle did not account for (red flag 7); the verdict is kept but needs review: " + c.Evidence,
						Reproducer:     "not applicable — review item, not a violation",
						Reduction:      BlamePending,
						Classification: "fault-handling", Tags: nil, Severity: "P2",
						Evidence:   t.Artifacts,
						RootCause:  "not determined — errors may be swallowed by the SUT or expected under the fault",
						NextAction: "read the listed log hits and either account for them in the oracle or file them against the SUT",
					}
					record(s, t, f)
				}
			}
		}
	}
}

// failFinding writes the docs/report-format.md §3.3 block for a FAIL.
func failFinding(ctx context.Context, u *unit, t *ScenarioResult) Finding {
	var kinds, what, evidence, nemeses, notes []string
	var viol *loadedRun
	invalidHistory := false
	for _, lr := range attemptedRuns(u.runs) {
		ok, why := violated(lr)
		if !ok {
			continue
		}
		if viol == nil {
			viol = lr
		}
		what = append(what, why)
		for _, res := range lr.results {
			if res.Outcome != checker.Invalid {
				continue
			}
			for _, an := range res.Anomalies {
				kinds = append(kinds, an.Kind)
				msg := an.Message
				if an.Key != "" && !strings.Contains(msg, an.Key) {
					msg = fmt.Sprintf("key %s: %s", an.Key, msg)
				}
				if an.WindowEnd > an.WindowStart && !strings.Contains(msg, "window") {
					msg += fmt.Sprintf(" (window +%s…+%s)", time.Duration(an.WindowStart), time.Duration(an.WindowEnd))
				}
				what = append(what, msg)
			}
			if res.HTML != "" {
				evidence = append(evidence, res.HTML)
			}
			kinds = append(kinds, res.Checker)
		}
		if o := lr.run.Oracle; o != nil && o.Ran && (o.Outcome == "invalid" || o.Anomalies > 0) {
			kinds = append(kinds, o.Checkers...)
		}
		evidence = append(evidence, lr.rel)
		if lr.hasHist {
			evidence = append(evidence, lr.histRel)
		}
		if len(lr.invalid) > 0 {
			invalidHistory = true
		}
		ns, note := causalNemeses(lr)
		nemeses = append(nemeses, ns...)
		if note != "" {
			// Several violating seeds: each note says whose run it reads.
			notes = append(notes, lr.rel+": "+note)
		}
	}
	for _, rr := range u.reruns {
		evidence = append(evidence, rr.rel)
	}
	nemeses = uniq(nemeses)
	tags := tagsFor(kinds, u.categories, nemeses)
	f := Finding{
		Title:          fmt.Sprintf("%s in %s", titleKind(kinds), t.ID),
		Scenario:       t.ID,
		Verdict:        t.Verdict,
		Hypothesis:     strings.Join(t.Hypotheses, ", "),
		WhatHappened:   strings.Join(slices.Concat(render.FirstN(what, 5), notes), ". "),
		Reduction:      BlamePending,
		Classification: taxdc(nemeses),
		Tags:           tags,
		Severity:       severity(tags),
		Evidence:       uniq(evidence),
	}
	if invalidHistory {
		f.Reduction = "harness"
		f.WhatHappened += ". The history also breaks record-level validation (recorder bug), so the violation is blamed on the harness until the recorder is fixed"
	}
	if viol != nil {
		var seq []string
		for _, w := range viol.run.FaultWindows {
			s := fmt.Sprintf("%s on %s", w.Nemesis, strings.Join(w.AllTargets(), ","))
			if w.InjectedAtNS != nil {
				s += fmt.Sprintf(" at +%s", time.Duration(*w.InjectedAtNS))
				if w.RevertedAtNS != nil {
					s += fmt.Sprintf(" for %s", time.Duration(*w.RevertedAtNS-*w.InjectedAtNS))
				}
			}
			seq = append(seq, s)
		}
		fs := "no faults"
		if len(seq) > 0 {
			fs = strings.Join(seq, "; ")
		}
		f.Reproducer = fmt.Sprintf("seed %d with the config of %s; fault sequence: %s; %d ops. Not minimised: analyze does not reduce (reduced from %d events to %d events over 0 re-runs)",
			viol.run.Seed, viol.rel, fs, len(viol.ops), len(viol.ops)+len(seq), len(viol.ops)+len(seq))
		if red, ok := reduceFail(ctx, u, viol); ok {
			f.Reproducer = fmt.Sprintf("seed %d with the config of %s; fault sequence: %s; %s", viol.run.Seed, viol.rel, fs, red)
		}
		if u.model != nil && u.model.Reduction != "" {
			f.Reproducer += "; plan's reduction plan: " + u.model.Reduction
		}
	}
	sub := ""
	if u.ps != nil {
		for _, h := range u.hypos {
			if strings.TrimSpace(h.Subsystem) != "" {
				sub = h.Subsystem
				break
			}
		}
	}
	f.RootCause = "not determined by analyze"
	if sub != "" {
		f.RootCause += "; owning subsystem per the plan's hypothesis: " + sub
	}
	if t.Verdict == FailNondeterministic {
		if len(t.Actions) > 0 {
			f.NextAction = t.Actions[0]
		} else {
			f.NextAction = "try a deterministic scheduler or longer statistical runs; the re-run did not reproduce the violation"
		}
	} else {
		f.NextAction = "reduce the reproducer per the plan, re-run on an alternative harness/host to settle the blame class, then file it"
	}
	return f
}

func titleKind(kinds []string) string {
	if len(kinds) > 0 && kinds[0] != "" {
		return kinds[0] + " violation"
	}
	return "oracle violation"
}

// dirtyFinding raises the harness/environment finding for ops that read a
// value no op in their history wrote: the SUT did not start empty. It
// cites each op with its history file:line and says how to get a clean
// start; it is never a FAIL of the SUT.
func dirtyFinding(u *unit, t *ScenarioResult) (Finding, bool) {
	var cites []string
	for _, lr := range attemptedRuns(u.runs) {
		for _, res := range lr.results {
			for _, d := range res.Dirty {
				cites = append(cites, fmt.Sprintf("%s:%d: %s", lr.histRel, d.Line, d))
			}
		}
	}
	cites = uniq(cites)
	if len(cites) == 0 {
		return Finding{}, false
	}
	return Finding{Title: "Dirty initial state: the SUT held data from an earlier run (" + t.ID + ")",
		Scenario: t.ID, Verdict: t.Verdict, Hypothesis: strings.Join(t.Hypotheses, ", "),
		WhatHappened: fmt.Sprintf("%d key(s) read a value no op in the history wrote, before any write to the key was acknowledged: left-over state, not a SUT anomaly. Those keys were excluded from the check. %s",
			len(cites), strings.Join(render.FirstN(cites, 5), "; ")),
		Reproducer:     "not applicable — harness/environment problem, not a violation",
		Reduction:      "environment",
		Classification: "config", Severity: "P3",
		Evidence:   cites,
		RootCause:  "the SUT's data dir was not empty at the start of the run and the workload reused keys",
		NextAction: checker.DirtyAdvice + "; then re-run",
	}, true
}

// reduceBound is the time analyze gives the reduction of one FAIL.
const reduceBound = 10 * time.Second

// reduceFail reduces a run's history when a linearizability or an
// isolation checker found the violation (package reduce), bounded by
// reduceBound and ctx: "reduced from N ops to k ops (keys …, window …)",
// plus the run's fault windows the reduced window overlaps. The isolation
// check is re-run at the level the plan states. ok is false when no such
// result failed or the reduction refused (it then stays "not minimised").
func reduceFail(ctx context.Context, u *unit, lr *loadedRun) (string, bool) {
	for _, res := range lr.results {
		if res.Outcome != checker.Invalid || len(lr.ops) == 0 {
			continue
		}
		spec := checker.Spec{Model: res.Model, Checker: res.Checker, Timeout: reduceBound}
		switch res.Checker {
		case checker.Linearizability:
		case checker.Serializability:
			if lvl, ok := checker.IsolationLevel(isolationText(u)); ok {
				spec.Params = map[string]string{"level": lvl}
			}
		default:
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, reduceBound)
		defer cancel()
		red, err := reduce.Reduce(ctx, spec, lr.ops, nil)
		if err != nil {
			return "", false
		}
		return red.Describe(red.FaultWindows(lr.run.FaultWindows)), true
	}
	return "", false
}
