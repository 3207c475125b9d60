package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

// loadedRun is one run.json with its history and the checker results on it.
type loadedRun struct {
	run        *session.Run
	rel        string // run file relative to the session dir
	histPath   string
	histRel    string
	meta       history.Meta
	ops        []history.Op
	hasHist    bool
	histWhy    string // why there is no usable history
	histBad    int    // lines the reader rejected
	invalid    []string
	finalState *checker.FinalState
	results    []checker.Result
	checkErr   string
}

// unit is one scenario or arm under analysis.
type unit struct {
	id, parent, name, surface string
	ps                        *plan.Scenario
	arm                       *plan.Arm
	model                     *plan.ModelBlock
	oracle                    string
	serious                   bool
	categories                map[string]bool
	claims                    []string
	hypos                     []plan.Hypothesis // hypotheses the scenario closes
	notRun                    string            // why there is no usable run record
	runs                      []*loadedRun      // primary runs (not re-runs)
	reruns                    []*loadedRun
}

// redFlagNames are the ten checks of verdicts.md §6.
var redFlagNames = [11]string{"",
	"Workload produced the intended load",
	"Oracle ran on every intended cycle",
	"Fault actually injected",
	"Fault did not silently no-op",
	"Clock skew did not mask a timing assertion",
	"Run duration met the exit criterion / claimed tier",
	"No silent error suppression",
	"Recovery completed",
	"Baseline comparison is fair",
	"One PASS is not PASS",
}

// weakItems are the fourteen items of verdicts.md §7 with the §4.2 kind.
var weakItems = [15]struct{ name, kind string }{{},
	{"Oracle is not \"final state only\"", KindSurface},
	{"Oracle is not \"logs only\"", KindSurface},
	{"Oracle is not \"health checks only\"", KindSurface},
	{"Failover exercised more than once", KindBreadth},
	{"Not \"no-error metrics\" alone", KindSurface},
	{"Not \"short runs\" alone", KindBreadth},
	{"≥ 1 asymmetric partition variant", KindBreadth},
	{"Recorder caught library-hidden retries", KindBreadth},
	{"Timestamps monotonic, not wall-clock", KindBreadth},
	{"More than one cluster topology", KindBreadth},
	{"≥ 3 PRNG seeds for statistical claims", KindBreadth},
	{"Not single-surface only", KindSurface},
	{"Negative controls present", KindSurface},
	{"Fairness oracle is per-group", KindSurface},
}

// Nemesis groups (nemesis.md) the audits need.
var (
	networkNemeses = map[string]bool{"partition-full": true, "partition-asym": true, "packet-loss": true,
		"latency": true, "bandwidth": true, "partition-minority": true, "partition-majority": true,
		"leader-isolation": true, "packet-dup": true, "packet-reorder": true, "metadata-outage": true,
		"split-brain": true, "slow-follower": true}
	failoverNemeses = map[string]bool{"kill-9": true, "kill-term": true, "container-restart": true,
		"leader-isolation": true, "partition-minority": true, "partition-majority": true,
		"restart-wrong-order": true, "split-brain": true, "rolling-upgrade": true}
)

// signal judges one evidence object: did it show a change?
func signal(e *session.Evidence) (bool, string) {
	if e == nil {
		return false, "absent"
	}
	desc := e.Kind
	if e.Name != "" {
		desc += " " + e.Name
	}
	vals := ""
	if len(e.Before) > 0 || len(e.After) > 0 {
		vals = fmt.Sprintf(" %s→%s", compactJSON(e.Before), compactJSON(e.After))
	} else if e.Delta != nil {
		vals = fmt.Sprintf(" Δ%g", *e.Delta)
	}
	desc = strings.TrimSpace(desc + vals)
	switch e.Verdict {
	case session.SignalChanged:
		return true, desc
	case session.SignalUnchanged, session.SignalAmbiguous, session.SignalAbsent:
		return false, desc + " (" + e.Verdict + ")"
	}
	if e.Delta != nil {
		if *e.Delta != 0 {
			return true, desc
		}
		return false, desc + " (no change)"
	}
	if len(e.Before) > 0 && len(e.After) > 0 {
		if !bytes.Equal(bytes.TrimSpace(e.Before), bytes.TrimSpace(e.After)) {
			return true, desc
		}
		return false, desc + " (no change)"
	}
	if e.Raw != "" {
		return false, desc + " (raw only, ambiguous)"
	}
	return false, desc + " (no values)"
}

func compactJSON(r json.RawMessage) string {
	if len(r) == 0 {
		return "?"
	}
	var b bytes.Buffer
	if json.Compact(&b, r) != nil {
		return "?"
	}
	return b.String()
}

// windowLanded reports whether a window's landing is proven and cites it.
func windowLanded(w session.FaultWindow) (bool, string) {
	inj, id := signal(w.InjectorEvidence)
	vic, vd := signal(w.VictimEvidence)
	txt := fmt.Sprintf("%s %s: injector %s; victim %s", w.FaultEpoch, w.Nemesis, id, vd)
	if w.InjectedAtNS == nil {
		return false, txt + "; never injected"
	}
	return inj && vic, txt
}

// opsIn counts ops that ran during window w: stamped with its fault_epoch
// or invoked between injection and revert. ok is false when neither a
// history nor a throughput series can tell.
func opsIn(lr *loadedRun, w session.FaultWindow) (int, bool) {
	if lr.hasHist {
		n := 0
		for i := range lr.ops {
			op := &lr.ops[i]
			if op.FaultEpoch == w.FaultEpoch {
				n++
				continue
			}
			if invokedIn(op.InvokeTS, w) {
				n++
			}
		}
		return n, true
	}
	ser := lr.run.Workload.Throughput
	if len(ser) == 0 || w.InjectedAtNS == nil {
		return 0, false
	}
	step := interval(lr.run)
	end := int64(1<<62 - 1)
	if w.RevertedAtNS != nil {
		end = *w.RevertedAtNS
	}
	n := 0
	for _, iv := range ser {
		if iv.StartNS+step > *w.InjectedAtNS && iv.StartNS <= end {
			n += iv.Ops
		}
	}
	return n, true
}

// invokedIn reports whether an op invoked at t ran while w was injected
// (an unreverted window stays open).
func invokedIn(t int64, w session.FaultWindow) bool {
	return w.InjectedAtNS != nil && t >= *w.InjectedAtNS && (w.RevertedAtNS == nil || t <= *w.RevertedAtNS)
}

func interval(r *session.Run) int64 {
	if r.Workload.IntervalNS > 0 {
		return r.Workload.IntervalNS
	}
	ser := r.Workload.Throughput
	if len(ser) >= 2 && ser[1].StartNS > ser[0].StartNS {
		return ser[1].StartNS - ser[0].StartNS
	}
	return int64(time.Second)
}

// lastOp returns the last op time of a run, from the history or run.json.
func lastOp(lr *loadedRun) (int64, bool) {
	if lr.hasHist && len(lr.ops) > 0 {
		var m int64
		for i := range lr.ops {
			t := lr.ops[i].InvokeTS
			if c := lr.ops[i].CompleteTS; c != nil && *c > t {
				t = *c
			}
			if t > m {
				m = t
			}
		}
		return m, true
	}
	if lr.run.Workload.LastOpNS != nil {
		return *lr.run.Workload.LastOpNS, true
	}
	return 0, false
}

// redFlags computes the ten checks of verdicts.md §6 for one unit.
// claimed is the tier the verdict would claim.
func redFlags(u *unit, f *facts, claimed Tier) []Check {
	out := make([]Check, 0, 10)
	add := func(n int, status, format string, a ...any) {
		out = append(out, Check{N: n, Name: redFlagNames[n], Status: status, Evidence: fmt.Sprintf(format, a...)})
	}
	runs := attemptedRuns(u.runs)
	if len(runs) == 0 {
		for n := 1; n <= 10; n++ {
			add(n, CheckUnknown, "not attempted: no run record")
		}
		return out
	}
	// 1. intended load.
	{
		status, ev := CheckPass, []string{}
		for _, lr := range runs {
			r := lr.run
			if r.Workload.ExitStatus != nil && *r.Workload.ExitStatus != 0 {
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: workload exited %d", lr.rel, *r.Workload.ExitStatus))
			}
			ser := r.Workload.Throughput
			if len(ser) == 0 {
				if status == CheckPass {
					status = CheckUnknown
				}
				ev = append(ev, fmt.Sprintf("%s: no throughput series", lr.rel))
				continue
			}
			step := float64(interval(r)) / 1e9
			tol := r.Workload.Tolerance
			if tol == 0 {
				tol = 0.2
			}
			planned := r.Workload.PlannedRate
			if planned == 0 && u.ps != nil {
				planned = plannedRate(u.ps.Workload)
			}
			floor := (1 - tol) * planned
			var bad []string
			for _, iv := range ser {
				rate := float64(iv.Ops) / step
				if iv.Ops == 0 || (planned > 0 && rate < floor) {
					bad = append(bad, fmt.Sprintf("%.0f ops/s at +%s", rate, time.Duration(iv.StartNS)))
				}
			}
			if len(bad) > 0 {
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: %d of %d intervals below floor %.0f ops/s (planned %.0f, tolerance %.0f%%): %s", lr.rel, len(bad), len(ser), floor, planned, tol*100, strings.Join(render.FirstN(bad, 3), ", ")))
			} else {
				ev = append(ev, fmt.Sprintf("%s: %d intervals, none below %.0f ops/s, no stall", lr.rel, len(ser), floor))
			}
		}
		add(1, status, "%s", strings.Join(ev, "; "))
	}
	// 2. oracle on every cycle.
	{
		status, ev := CheckPass, []string{}
		for _, lr := range runs {
			consumed, produced, ran, why := oracleCounts(u, lr)
			switch {
			case !ran:
				st := CheckUnknown
				if why != "" && why != "no oracle record" {
					st = CheckFail
				}
				if status != CheckFail {
					status = st
				}
				ev = append(ev, fmt.Sprintf("%s: %s", lr.rel, why))
			case consumed == 0 || (produced > 0 && consumed != produced):
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: oracle consumed %d of %d ops produced", lr.rel, consumed, produced))
			default:
				ev = append(ev, fmt.Sprintf("%s: %d ops consumed of %d produced", lr.rel, consumed, produced))
			}
		}
		add(2, status, "%s", strings.Join(ev, "; "))
	}
	// 3 and 4. fault injected / not a silent no-op.
	{
		s3, s4 := CheckPass, CheckPass
		var e3, e4 []string
		windows, expected := 0, false
		for _, lr := range runs {
			expected = expected || windowsExpected(u, lr)
			last, haveLast := lastOp(lr)
			for _, w := range lr.run.FaultWindows {
				windows++
				ok, txt := windowLanded(w)
				if !ok {
					s3 = CheckFail
				}
				e3 = append(e3, txt)
				if w.InjectedAtNS != nil {
					if n, known := opsIn(lr, w); !known {
						if s3 == CheckPass {
							s3 = CheckUnknown
						}
						e3 = append(e3, fmt.Sprintf("%s: cannot tell whether ops ran in the window", w.FaultEpoch))
					} else if n == 0 {
						s3 = CheckFail
						e3 = append(e3, fmt.Sprintf("%s: no ops in the fault window", w.FaultEpoch))
					} else {
						e3 = append(e3, fmt.Sprintf("%s: %d ops in window", w.FaultEpoch, n))
					}
					if haveLast && last < *w.InjectedAtNS {
						s3 = CheckFail
						e3 = append(e3, fmt.Sprintf("%s: workload finished (+%s) before the fault was injected (+%s)", w.FaultEpoch, time.Duration(last), time.Duration(*w.InjectedAtNS)))
					}
				}
				switch tc := w.TargetCheck; {
				case tc == nil:
					if s4 == CheckPass {
						s4 = CheckUnknown
					}
					e4 = append(e4, w.FaultEpoch+": no target check recorded")
				default:
					ok, d := signal(tc)
					if !ok && tc.Verdict != session.SignalChanged {
						s4 = CheckFail
					}
					e4 = append(e4, fmt.Sprintf("%s on %s: %s", w.FaultEpoch, strings.Join(w.AllTargets(), ","), d))
				}
			}
		}
		switch {
		case windows == 0 && !f.faultPlanned:
			add(3, CheckNA, "no fault planned")
			add(4, CheckNA, "no fault planned")
		case windows == 0 && !expected:
			add(3, CheckNA, "the budget of the tier run states 0 faults")
			add(4, CheckNA, "the budget of the tier run states 0 faults")
		case windows == 0:
			add(3, CheckFail, "fault planned but no fault window recorded")
			add(4, CheckUnknown, "no fault window recorded")
		default:
			add(3, s3, "%s", strings.Join(e3, "; "))
			add(4, s4, "%s", strings.Join(e4, "; "))
		}
	}
	// 5. clock.
	{
		status, ev := CheckPass, []string{}
		for _, lr := range runs {
			c := lr.run.Clock
			if c == "" && lr.hasHist {
				c = lr.meta.Clock
			}
			switch c {
			case "monotonic":
				ev = append(ev, lr.rel+": clock=monotonic")
			case "wall":
				status = CheckFail
				ev = append(ev, lr.rel+": clock=wall (wall-clock timestamps compared across processes)")
			default:
				if status == CheckPass {
					status = CheckUnknown
				}
				ev = append(ev, lr.rel+": clock source not recorded")
			}
		}
		add(5, status, "%s", strings.Join(ev, "; "))
	}
	// 6. duration vs claimed tier.
	{
		var budget plan.Budget
		if u.ps != nil {
			budget = budgetFor(u.ps, claimed)
		}
		t := budget.Tier
		switch {
		case u.ps == nil:
			add(6, CheckUnknown, "no plan budget to compare against")
		case !t.Duration.Known:
			add(6, CheckUnknown, "%s budget %q states no parseable duration", claimed, budget.Text)
		default:
			d := minDuration(runs)
			if d >= t.Duration.D {
				add(6, CheckPass, "measured %s ≥ %s tier %s", d, tierName(claimed), t.Duration.D)
			} else {
				add(6, CheckFail, "measured %s < %s tier %s", d, tierName(claimed), t.Duration.D)
			}
		}
	}
	// 7. silent errors.
	{
		status, ev := CheckPass, []string{}
		for _, lr := range runs {
			ls := lr.run.LogScan
			switch {
			case ls == nil:
				if status == CheckPass {
					status = CheckUnknown
				}
				ev = append(ev, lr.rel+": no log scan recorded")
			case ls.Found > ls.Accounted:
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: %d error markers in SUT logs, %d accounted for by the oracle: %s", lr.rel, ls.Found, ls.Accounted, strings.Join(render.FirstN(ls.Hits, 3), " | ")))
			default:
				ev = append(ev, fmt.Sprintf("%s: %d markers found, %d accounted", lr.rel, ls.Found, ls.Accounted))
			}
		}
		add(7, status, "%s", strings.Join(ev, "; "))
	}
	// 8. recovery.
	{
		status, ev := CheckPass, []string{}
		anyFault := false
		for _, lr := range runs {
			if len(lr.run.FaultWindows) == 0 {
				continue
			}
			anyFault = true
			for _, w := range lr.run.FaultWindows {
				if w.InjectedAtNS != nil && w.RevertedAtNS == nil {
					status = CheckFail
					ev = append(ev, w.FaultEpoch+": never reverted")
				}
			}
			switch rc := lr.run.Recovery; {
			case rc == nil:
				if status == CheckPass {
					status = CheckUnknown
				}
				ev = append(ev, lr.rel+": no recovery record")
			case !rc.Nominal:
				status = CheckFail
				ev = append(ev, lr.rel+": not back to nominal after the last heal: "+rc.Evidence)
			default:
				ev = append(ev, lr.rel+": nominal after last heal: "+rc.Evidence)
			}
		}
		if !anyFault {
			add(8, CheckNA, "no fault injected")
		} else {
			add(8, status, "%s", strings.Join(ev, "; "))
		}
	}
	// 9. baseline.
	{
		status, ev := CheckNA, []string{}
		for _, lr := range runs {
			b := lr.run.Baseline
			if b == nil || !b.Compared {
				continue
			}
			if status == CheckNA {
				status = CheckPass
			}
			if b.Rebaselined || (b.HarnessHash != "" && b.HarnessHash == b.BaselineHarnessHash && b.ConfigHash == b.BaselineConfigHash) {
				ev = append(ev, lr.rel+": baseline harness/config hash matches")
			} else {
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: baseline harness %s/config %s ≠ current %s/%s, not re-baselined", lr.rel, b.BaselineHarnessHash, b.BaselineConfigHash, b.HarnessHash, b.ConfigHash))
			}
		}
		if status == CheckNA {
			add(9, CheckNA, "no baseline comparison")
		} else {
			add(9, status, "%s", strings.Join(ev, "; "))
		}
	}
	// 10. replicated runs.
	{
		if ok, why := statistical(u, claimed); !ok {
			add(10, CheckNA, "%s", why)
		} else {
			seeds := distinctSeeds(runs)
			verdicts := map[Verdict]bool{}
			for _, lr := range runs {
				v, _ := decideTree(runFacts(u, lr))
				verdicts[v] = true
			}
			switch {
			case len(seeds) < 3:
				add(10, CheckFail, "%s rests on %d %s %v; verdicts.md §4.2 needs ≥ 3 agreeing",
					claimedPass(claimed), len(seeds), plural(len(seeds), "seed", "seeds"), seeds)
			case len(verdicts) > 1:
				add(10, CheckFail, "%d seeds disagree: %v", len(seeds), slices.Sorted(maps.Keys(verdicts)))
			default:
				add(10, CheckPass, "%d seeds %v, same verdict", len(seeds), seeds)
			}
		}
	}
	return out
}

// budgetFor is the plan's budget for tier t; every tier below hardening
// (none, unknown, smoke) reads the smoke budget.
func budgetFor(ps *plan.Scenario, t Tier) plan.Budget {
	switch t {
	case TierRelease:
		return ps.Release
	case TierHardening:
		return ps.Hardening
	}
	return ps.Smoke
}

func tierName(t Tier) string {
	if t == TierNone || t == TierUnknown || t == "" {
		return string(TierSmoke)
	}
	return string(t)
}

func minDuration(runs []*loadedRun) time.Duration {
	var d time.Duration
	for i, lr := range runs {
		if x := lr.run.Duration(); i == 0 || x < d {
			d = x
		}
	}
	return d
}

func distinctSeeds(runs []*loadedRun) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, lr := range runs {
		if !seen[lr.run.Seed] {
			seen[lr.run.Seed] = true
			out = append(out, lr.run.Seed)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// statistical decides whether red flag 10 / weak item 11 apply, and if
// not, why. A declaration in run.json wins, and a run declaring the claim
// statistical outweighs one declaring it deterministic: the seed rule is
// the safer reading. Without one, a serious (§7.M-gated) claim at the
// hardening or release tier is statistical: verdicts.md §4.2 treats a
// single-seed PASS-hardening as PARTIAL-model, and the §7 item 11 escape
// must be declared, never inferred from a budget that asks for one seed.
// Other claims are statistical only when the claimed tier's budget asks
// for more than one seed.
func statistical(u *unit, claimed Tier) (bool, string) {
	declared, deterministic := false, false
	for _, lr := range u.runs {
		if c := lr.run.Claim; c != nil && c.Statistical != nil {
			declared = declared || *c.Statistical
			deterministic = deterministic || !*c.Statistical
		}
	}
	switch {
	case declared:
		return true, ""
	case deterministic:
		return false, "declared deterministic (single-interleaving)"
	case u.serious && (claimed == TierHardening || claimed == TierRelease):
		return true, ""
	}
	notStat := fmt.Sprintf("claim is not statistical at the %s tier", tierName(claimed))
	if u.ps == nil {
		return false, notStat
	}
	t := budgetFor(u.ps, claimed).Tier
	return t.Seeds.Known && t.Seeds.N > 1, notStat
}

// claimedPass names the PASS a seed count is holding up, for the reason
// text of red flag 10.
func claimedPass(claimed Tier) Verdict {
	if claimed == TierHardening || claimed == TierRelease {
		return PassHardening
	}
	return PassSmoke
}

// oracleCounts returns what the unit's oracle consumed against what the
// run produced. For serious units the oracle is the §7.M checker run by
// analyze (or a remote record); otherwise run.json's oracle record.
func oracleCounts(u *unit, lr *loadedRun) (consumed, produced int, ran bool, why string) {
	produced = lr.run.Workload.OpsProduced
	// A line the reader rejected (a torn last line after a crash, garbage)
	// was an op the checker never saw: count it as produced so the tree
	// says PARTIAL-model instead of calling the check complete.
	if n := len(lr.ops) + lr.histBad; lr.hasHist && n > produced {
		produced = n
	}
	if len(lr.results) > 0 { // dstgen's own checkers ran (§7.M, or a threshold oracle)
		consumed = -1
		for _, res := range lr.results {
			if res.Outcome == checker.Unknown {
				return 0, produced, false, fmt.Sprintf("checker %s returned unknown: %s", res.Checker, res.Reason)
			}
			if consumed < 0 || res.OpsConsumed < consumed {
				consumed = res.OpsConsumed
			}
		}
		return consumed, produced, true, ""
	}
	if o := lr.run.Oracle; o != nil {
		if !o.Ran {
			return 0, produced, false, "oracle recorded as not run"
		}
		if o.Outcome == "unknown" {
			return 0, produced, false, "oracle outcome unknown"
		}
		return o.OpsConsumed, produced, true, ""
	}
	if u.serious {
		why = "checker did not run"
		if lr.checkErr != "" {
			why = lr.checkErr
		} else if lr.histWhy != "" {
			why = lr.histWhy
		}
		return 0, produced, false, why
	}
	return 0, produced, false, "no oracle record"
}

// weakAudit computes the fourteen weak-oracle items (verdicts.md §7).
func weakAudit(u *unit, f *facts, rf []Check) []WeakItem {
	out := make([]WeakItem, 0, 14)
	add := func(n int, status, format string, a ...any) {
		out = append(out, WeakItem{N: n, Name: weakItems[n].name, Kind: weakItems[n].kind, Status: status, Reason: fmt.Sprintf(format, a...)})
	}
	if !f.attempted {
		for n := 1; n <= 14; n++ {
			add(n, ItemNA, "not attempted")
		}
		return out
	}
	var names []string
	historyChecked := false
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
	finalOnly := len(names) > 0
	surfaceOnly := len(names) > 0
	for _, n := range names {
		l := strings.ToLower(n)
		if !strings.Contains(l, "final") && !strings.Contains(l, "reconcil") {
			finalOnly = false
		}
		if !strings.Contains(l, "slo") && !strings.Contains(l, "health") && !strings.Contains(l, "log") {
			surfaceOnly = false
		}
	}
	// 1–3.
	switch {
	case !historyChecked:
		add(1, ItemUnchecked, "no checker consumed a history or in-run assertions")
		add(2, ItemUnchecked, "no property checker ran")
		add(3, ItemUnchecked, "no consistency checker ran")
	default:
		if finalOnly {
			add(1, ItemUnchecked, "only final-state checkers ran (%s)", strings.Join(names, ", "))
		} else {
			add(1, ItemChecked, "history checked by %s", strings.Join(names, ", "))
		}
		if surfaceOnly {
			add(2, ItemUnchecked, "only log/SLO/health oracles ran (%s)", strings.Join(names, ", "))
			add(3, ItemUnchecked, "only log/SLO/health oracles ran")
		} else {
			add(2, ItemChecked, "property checker ran: %s", strings.Join(names, ", "))
			add(3, ItemChecked, "consistency checker ran: %s", strings.Join(names, ", "))
		}
	}
	// 4. failover.
	{
		based := false
		for _, lr := range u.runs {
			for _, w := range lr.run.FaultWindows {
				based = based || failoverNemeses[w.Nemesis]
			}
			if c := lr.run.Claim; c != nil && c.FailoverBased != nil {
				based = *c.FailoverBased
			}
		}
		if !based {
			add(4, ItemNA, "scenario is not failover-based")
		} else {
			minF, known := -1, true
			for _, lr := range u.runs {
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
				add(4, ItemUnchecked, "failover count not recorded")
			case minF < 2:
				add(4, ItemUnchecked, "single failover (%d per run)", minF)
			default:
				add(4, ItemChecked, "≥ %d failovers per run", minF)
			}
		}
	}
	// 5. no-error metrics alone.
	{
		hist := false
		for _, lr := range u.runs {
			hist = hist || (lr.hasHist && len(lr.ops) > 0)
		}
		switch {
		case !u.serious && !hist:
			add(5, ItemNA, "not a serious scenario; no client history expected")
		case hist && historyChecked:
			add(5, ItemChecked, "client-side history with timeout_marker checked")
		default:
			add(5, ItemUnchecked, "no client-side history was checked")
		}
	}
	// 6. short runs (ties to red flag 6).
	if c := rf[5]; c.Status == CheckPass {
		add(6, ItemChecked, "%s", c.Evidence)
	} else {
		add(6, ItemUnchecked, "red flag 6 %s: %s", c.Status, c.Evidence)
	}
	// 7. asymmetric partition.
	{
		network, asym := false, false
		for _, lr := range u.runs {
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
			add(7, ItemNA, "scenario has no network faults")
		case asym:
			add(7, ItemChecked, "a partition-asym window landed")
		default:
			add(7, ItemUnchecked, "no asymmetric partition window landed (symmetric partitions only)")
		}
	}
	// 8. hidden retries.
	{
		status, why := ItemChecked, ""
		for _, lr := range u.runs {
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
		if len(u.runs) == 0 {
			status, why = ItemUnchecked, "no run record"
		}
		add(8, status, "%s", why)
	}
	// 9. monotonic timestamps.
	if c := rf[4]; c.Status == CheckPass {
		add(9, ItemChecked, "%s", c.Evidence)
	} else {
		add(9, ItemUnchecked, "%s", c.Evidence)
	}
	// 10. topologies.
	{
		generic := sizeGeneric(u)
		var topo []string
		for _, lr := range u.runs {
			topo = append(topo, lr.run.Topologies...)
		}
		topo = uniq(topo)
		switch {
		case !generic:
			add(10, ItemNA, "claim is not size-generic")
		case len(topo) >= 2:
			add(10, ItemChecked, "topologies %s", strings.Join(topo, ", "))
		default:
			add(10, ItemUnchecked, "one topology (%s) for a size-generic claim", strings.Join(topo, ", "))
		}
	}
	// 11. seeds (ties to red flag 10).
	if c := rf[9]; c.Status == CheckNA {
		add(11, ItemNA, "%s", c.Evidence)
	} else if c.Status == CheckPass {
		add(11, ItemChecked, "%s", c.Evidence)
	} else {
		add(11, ItemUnchecked, "%s", c.Evidence)
	}
	// 12–13. boundary.
	if !u.categories[plan.CatBoundary] {
		add(12, ItemNA, "not a boundary claim")
		add(13, ItemNA, "not a boundary claim")
	} else {
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
			add(12, ItemChecked, "arm covers surface %q; sibling arms cover the others", u.surface)
		case len(planned) == 0:
			add(12, ItemUnchecked, "no surfaces declared in §7.M.S")
		case len(missing) > 0:
			add(12, ItemUnchecked, "surfaces not exercised: %s", strings.Join(missing, ", "))
		default:
			add(12, ItemChecked, "all %d declared surfaces exercised", len(planned))
		}
		den, side, known := true, true, false
		for _, lr := range u.runs {
			if c := lr.run.Controls; c != nil {
				known = true
				den = den && c.Denied
				side = side && c.SideChannel
			}
		}
		switch {
		case !known:
			add(13, ItemUnchecked, "no negative-control record")
		case den && side:
			add(13, ItemChecked, "denied-access and side-channel checks recorded")
		default:
			add(13, ItemUnchecked, "negative controls incomplete (denied=%t, side-channel=%t)", den, side)
		}
	}
	// 14. fairness per group.
	if !u.categories[plan.CatFairness] {
		add(14, ItemNA, "not a fairness claim")
	} else {
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
			add(14, ItemChecked, "metrics broken down per %s", u.runs[0].run.Fairness.Dimension)
		} else {
			add(14, ItemUnchecked, "%s", why)
		}
	}
	return out
}

func sizeGeneric(u *unit) bool {
	for _, lr := range u.runs {
		if c := lr.run.Claim; c != nil && c.SizeGeneric != nil {
			return *c.SizeGeneric
		}
	}
	return false
}

func plannedSurfaces(u *unit) []string {
	if u.ps == nil || u.ps.S == nil {
		return nil
	}
	var out []string
	for _, s := range strings.Split(u.ps.S.Surfaces, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[strings.ToLower(x)] = true
	}
	var out []string
	for _, x := range a {
		if !in[strings.ToLower(x)] {
			out = append(out, x)
		}
	}
	return out
}

var rateRE = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?)\s*(?:ops?|requests?|req|writes?|reads?|puts?)\s*/\s*s\b`)

// plannedRate reads a total rate ("at 50 ops/s") from the plan's Workload
// text; 0 when it states none. Per-group rates ("5 tenants at 200 ops/s
// each") are not summed: a floor derived from a guess would be worse than
// none.
func plannedRate(workload string) float64 {
	if strings.Contains(workload, " each") {
		return 0
	}
	m := rateRE.FindStringSubmatch(workload)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	return v
}
