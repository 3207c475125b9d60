package analyze

// Stage 3, audits: the fourteen weak-oracle items of docs/verdicts.md §7,
// one function each, with the docs/verdicts.md §4.2 kind from weakItems. Items 6, 9 and 11
// restate red flags 6, 5 and 10, which are computed first.

import (
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/plan"
)

// weakItemCheck is one numbered item of docs/verdicts.md §7.
type weakItemCheck struct {
	n     int
	check func(in *auditInput) (status, reason string)
}

// weakItemChecks lists the items in report order.
func weakItemChecks() []weakItemCheck {
	return []weakItemCheck{
		{1, weakNotFinalStateOnly},
		{2, weakNotLogsOnly},
		{3, weakNotHealthOnly},
		{4, weakFailoverRepeated},
		{5, weakNotNoErrorMetrics},
		{6, weakNotShortRuns},
		{7, weakAsymmetricPartition},
		{8, weakHiddenRetries},
		{9, weakMonotonicTimestamps},
		{10, weakTopologies},
		{11, weakSeeds},
		{12, weakNotSingleSurface},
		{13, weakNegativeControls},
		{14, weakFairnessPerGroup},
	}
}

// weakAudit computes the fourteen weak-oracle items (docs/verdicts.md §7);
// in.flags must hold the red flags already.
func weakAudit(in *auditInput) []WeakItem {
	out := make([]WeakItem, 0, 14)
	for _, c := range weakItemChecks() {
		status, why := ItemNA, "not attempted"
		if in.f.attempted {
			status, why = c.check(in)
		}
		out = append(out, WeakItem{N: c.n, Name: weakItems[c.n].name, Kind: weakItems[c.n].kind, Status: status, Reason: why})
	}
	return out
}

// oracleKinds names the checkers that ran on the unit's runs, whether any
// of them consumed a history, and whether they were all final-state (or
// reconciliation) checkers or all log/SLO/health oracles.
func oracleKinds(u *unit) (names []string, historyChecked, finalOnly, surfaceOnly bool) {
	for _, lr := range u.runs {
		for _, res := range lr.results {
			names = append(names, res.Checker)
			if res.OpsConsumed > 0 && res.Outcome != checker.Unknown {
				historyChecked = true
			}
		}
		if o := lr.run.Oracle; o != nil && o.Ran && o.OpsConsumed > 0 {
			names = append(names, o.Checkers...)
			historyChecked = historyChecked || lr.hasHist || len(o.Checkers) > 0
		}
	}
	names = uniq(names)
	finalOnly, surfaceOnly = len(names) > 0, len(names) > 0
	for _, n := range names {
		l := strings.ToLower(n)
		if !strings.Contains(l, "final") && !strings.Contains(l, "reconcil") {
			finalOnly = false
		}
		if !strings.Contains(l, "slo") && !strings.Contains(l, "health") && !strings.Contains(l, "log") {
			surfaceOnly = false
		}
	}
	return names, historyChecked, finalOnly, surfaceOnly
}

// weakNotFinalStateOnly is docs/verdicts.md §7 item 1.
func weakNotFinalStateOnly(in *auditInput) (string, string) {
	names, checked, finalOnly, _ := oracleKinds(in.u)
	switch {
	case !checked:
		return ItemUnchecked, "no checker consumed a history or in-run assertions"
	case finalOnly:
		return ItemUnchecked, fmt.Sprintf("only final-state checkers ran (%s)", strings.Join(names, ", "))
	}
	return ItemChecked, fmt.Sprintf("history checked by %s", strings.Join(names, ", "))
}

// weakNotLogsOnly is docs/verdicts.md §7 item 2.
func weakNotLogsOnly(in *auditInput) (string, string) {
	names, checked, _, surfaceOnly := oracleKinds(in.u)
	switch {
	case !checked:
		return ItemUnchecked, "no property checker ran"
	case surfaceOnly:
		return ItemUnchecked, fmt.Sprintf("only log/SLO/health oracles ran (%s)", strings.Join(names, ", "))
	}
	return ItemChecked, fmt.Sprintf("property checker ran: %s", strings.Join(names, ", "))
}

// weakNotHealthOnly is docs/verdicts.md §7 item 3.
func weakNotHealthOnly(in *auditInput) (string, string) {
	names, checked, _, surfaceOnly := oracleKinds(in.u)
	switch {
	case !checked:
		return ItemUnchecked, "no consistency checker ran"
	case surfaceOnly:
		return ItemUnchecked, "only log/SLO/health oracles ran"
	}
	return ItemChecked, fmt.Sprintf("consistency checker ran: %s", strings.Join(names, ", "))
}

// weakFailoverRepeated is docs/verdicts.md §7 item 4: a failover-based
// scenario fails over at least twice per run.
func weakFailoverRepeated(in *auditInput) (string, string) {
	based := false
	for _, lr := range in.u.runs {
		for _, w := range lr.run.FaultWindows {
			based = based || failoverNemeses[w.Nemesis]
		}
		if c := lr.run.Claim; c != nil && c.FailoverBased != nil {
			based = *c.FailoverBased
		}
	}
	if !based {
		return ItemNA, "scenario is not failover-based"
	}
	minF, known := -1, true
	for _, lr := range in.u.runs {
		if lr.run.Failovers == nil {
			known = false
			continue
		}
		if minF < 0 || *lr.run.Failovers < minF {
			minF = *lr.run.Failovers
		}
	}
	switch {
	case !known || minF < 0:
		return ItemUnchecked, "failover count not recorded"
	case minF < 2:
		return ItemUnchecked, fmt.Sprintf("single failover (%d per run)", minF)
	}
	return ItemChecked, fmt.Sprintf("≥ %d failovers per run", minF)
}

// weakNotNoErrorMetrics is docs/verdicts.md §7 item 5: a client-side
// history was checked, not only the absence of error metrics.
func weakNotNoErrorMetrics(in *auditInput) (string, string) {
	_, checked, _, _ := oracleKinds(in.u)
	hist := false
	for _, lr := range in.u.runs {
		hist = hist || (lr.hasHist && len(lr.ops) > 0)
	}
	switch {
	case !in.u.serious && !hist:
		return ItemNA, "not a serious scenario; no client history expected"
	case hist && checked:
		return ItemChecked, "client-side history with timeout_marker checked"
	}
	return ItemUnchecked, "no client-side history was checked"
}

// weakNotShortRuns is docs/verdicts.md §7 item 6, which restates red flag 6.
func weakNotShortRuns(in *auditInput) (string, string) {
	c := in.flags[5]
	if c.Status == CheckPass {
		return ItemChecked, c.Evidence
	}
	return ItemUnchecked, fmt.Sprintf("red flag 6 %s: %s", c.Status, c.Evidence)
}

// weakAsymmetricPartition is docs/verdicts.md §7 item 7: a scenario with
// network faults landed at least one asymmetric partition.
func weakAsymmetricPartition(in *auditInput) (string, string) {
	network, asym := false, false
	for _, lr := range in.u.runs {
		for _, w := range lr.run.FaultWindows {
			if networkNemeses[w.Nemesis] {
				network = true
				if ok, _ := windowLanded(w); ok && w.Nemesis == "partition-asym" {
					asym = true
				}
			}
		}
	}
	switch {
	case !network:
		return ItemNA, "scenario has no network faults"
	case asym:
		return ItemChecked, "a partition-asym window landed"
	}
	return ItemUnchecked, "no asymmetric partition window landed (symmetric partitions only)"
}

// weakHiddenRetries is docs/verdicts.md §7 item 8: the recorder sees the
// retries a client library may hide.
func weakHiddenRetries(in *auditInput) (string, string) {
	status, why := ItemChecked, ""
	for _, lr := range in.u.runs {
		rec := lr.run.Recorder
		switch {
		case rec == nil:
			status, why = ItemUnchecked, "recorder mechanism not recorded"
		case rec.Mechanism == "external probe" || rec.Mechanism == "server-side audit" || rec.Mechanism == "combined":
			if why == "" {
				why = "recorder " + rec.Mechanism + " sees retries on the wire/server"
			}
		case rec.HidesRetries != nil && !*rec.HidesRetries:
			if status == ItemChecked {
				status, why = ItemNA, "library does not hide retries"
			}
		default:
			status, why = ItemUnchecked, "in-process recorder only and the library may retry transparently"
		}
	}
	if len(in.u.runs) == 0 {
		status, why = ItemUnchecked, "no run record"
	}
	return status, why
}

// weakMonotonicTimestamps is docs/verdicts.md §7 item 9, which restates
// red flag 5.
func weakMonotonicTimestamps(in *auditInput) (string, string) {
	c := in.flags[4]
	if c.Status == CheckPass {
		return ItemChecked, c.Evidence
	}
	return ItemUnchecked, c.Evidence
}

// weakTopologies is docs/verdicts.md §7 item 10: a size-generic claim ran
// on more than one cluster topology.
func weakTopologies(in *auditInput) (string, string) {
	generic := sizeGeneric(in.u)
	var topo []string
	for _, lr := range in.u.runs {
		topo = append(topo, lr.run.Topologies...)
	}
	topo = uniq(topo)
	switch {
	case !generic:
		return ItemNA, "claim is not size-generic"
	case len(topo) >= 2:
		return ItemChecked, fmt.Sprintf("topologies %s", strings.Join(topo, ", "))
	}
	return ItemUnchecked, fmt.Sprintf("one topology (%s) for a size-generic claim", strings.Join(topo, ", "))
}

// weakSeeds is docs/verdicts.md §7 item 11, which restates red flag 10.
func weakSeeds(in *auditInput) (string, string) {
	switch c := in.flags[9]; c.Status {
	case CheckNA:
		return ItemNA, c.Evidence
	case CheckPass:
		return ItemChecked, c.Evidence
	default:
		return ItemUnchecked, c.Evidence
	}
}

// weakNotSingleSurface is docs/verdicts.md §7 item 12: a boundary claim
// exercised every surface §7.M.S declares.
func weakNotSingleSurface(in *auditInput) (string, string) {
	u := in.u
	if !u.categories[plan.CatBoundary] {
		return ItemNA, "not a boundary claim"
	}
	planned := plannedSurfaces(u)
	var ran []string
	for _, lr := range u.runs {
		ran = append(ran, lr.run.Surfaces...)
	}
	if u.surface != "" && len(u.runs) > 0 {
		ran = append(ran, u.surface)
	}
	missing := minus(planned, ran)
	switch {
	case u.arm != nil:
		return ItemChecked, fmt.Sprintf("arm covers surface %q; sibling arms cover the others", u.surface)
	case len(planned) == 0:
		return ItemUnchecked, "no surfaces declared in §7.M.S"
	case len(missing) > 0:
		return ItemUnchecked, fmt.Sprintf("surfaces not exercised: %s", strings.Join(missing, ", "))
	}
	return ItemChecked, fmt.Sprintf("all %d declared surfaces exercised", len(planned))
}

// weakNegativeControls is docs/verdicts.md §7 item 13: a boundary claim
// recorded both denied-access and side-channel controls.
func weakNegativeControls(in *auditInput) (string, string) {
	if !in.u.categories[plan.CatBoundary] {
		return ItemNA, "not a boundary claim"
	}
	den, side, known := true, true, false
	for _, lr := range in.u.runs {
		if c := lr.run.Controls; c != nil {
			known = true
			den = den && c.Denied
			side = side && c.SideChannel
		}
	}
	switch {
	case !known:
		return ItemUnchecked, "no negative-control record"
	case den && side:
		return ItemChecked, "denied-access and side-channel checks recorded"
	}
	return ItemUnchecked, fmt.Sprintf("negative controls incomplete (denied=%t, side-channel=%t)", den, side)
}

// weakFairnessPerGroup is docs/verdicts.md §7 item 14: a fairness claim's
// metrics are broken down per group, not only in aggregate.
func weakFairnessPerGroup(in *auditInput) (string, string) {
	u := in.u
	if !u.categories[plan.CatFairness] {
		return ItemNA, "not a fairness claim"
	}
	ok, why := true, ""
	for _, lr := range u.runs {
		fr := lr.run.Fairness
		if fr == nil || fr.Dimension == "" || len(fr.Groups) < 2 {
			ok, why = false, lr.rel+": no per-group breakdown (aggregate only)"
		}
	}
	if len(u.runs) == 0 {
		ok, why = false, "no run record"
	}
	if ok {
		return ItemChecked, fmt.Sprintf("metrics broken down per %s", u.runs[0].run.Fairness.Dimension)
	}
	return ItemUnchecked, why
}
