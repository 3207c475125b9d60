package analyze

// Stage 3, audits: the ten green-but-broken red-flag checks of
// docs/verdicts.md §6, one function each. A check reads only its
// auditInput (facts of stage 2 and the per-run tree verdicts the driver
// passes down) and returns a status with the evidence it cites.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

// auditInput is everything the red-flag checks and the weak-oracle items
// read for one unit.
type auditInput struct {
	u *unit
	f *facts
	// claimed is the tier the verdict would claim.
	claimed TierLevel
	// runs are the unit's attempted runs.
	runs []*loadedRun
	// runVerdicts holds the decision tree's verdict of each attempted run
	// judged alone (red flag 10: replicated runs must agree).
	runVerdicts []Verdict
	// flags are the red flags, once computed (weak items 6, 9 and 11 tie
	// to them).
	flags []Check
}

// redFlagCheck is one numbered check of docs/verdicts.md §6.
type redFlagCheck struct {
	n     int
	check func(in *auditInput) (status, evidence string)
}

// redFlagChecks lists the checks in report order.
func redFlagChecks() []redFlagCheck {
	return []redFlagCheck{
		{1, flagIntendedLoad},
		{2, flagOracleEveryCycle},
		{3, flagFaultInjected},
		{4, flagFaultNotNoOp},
		{5, flagClock},
		{6, flagDuration},
		{7, flagSilentErrors},
		{8, flagRecovery},
		{9, flagBaseline},
		{10, flagReplicated},
	}
}

// redFlags computes the ten checks of docs/verdicts.md §6 for one unit.
func redFlags(in *auditInput) []Check {
	out := make([]Check, 0, 10)
	for _, c := range redFlagChecks() {
		status, ev := CheckUnknown, "not attempted: no run record"
		if len(in.runs) > 0 {
			status, ev = c.check(in)
		}
		out = append(out, Check{N: c.n, Name: redFlagNames[c.n], Status: status, Evidence: ev})
	}
	return out
}

// flagIntendedLoad is docs/verdicts.md §6 check 1: the workload ran to the
// end at no less than the planned rate minus its tolerance, with no stall.
func flagIntendedLoad(in *auditInput) (string, string) {
	status, ev := CheckPass, []string{}
	for _, lr := range in.runs {
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
		if planned == 0 && in.u.ps != nil {
			planned = plannedRate(in.u.ps.Workload)
		}
		floor := (1 - tol) * planned
		var flight *inFlight // built at the first interval that needs it
		tail := recoveryTails(r, ser, int64(step*1e9), func(iv session.Interval) bool {
			return iv.Ops == 0 || (planned > 0 && float64(iv.Ops)/step < floor)
		})
		var bad []string
		excused, blocked, caughtUp, undeclared := 0, 0, 0, false
		cutFirst, cutLast, ramp := false, false, 0
		// The load starts when the last client host invoked its first op
		// (all_started_ns); one client alone starts at first_op_ns. Hosts
		// start a moment apart; one that began over two intervals after
		// the first is a share of the load missing, and judged so.
		stepNS := int64(step * 1e9)
		start := r.Workload.FirstOpNS
		if all := r.Workload.AllStartedNS; all != nil && start != nil && *all > *start && *all-*start <= 2*stepNS {
			start = all
		}
		for i, iv := range ser {
			rate := float64(iv.Ops) / step
			low := planned > 0 && rate < floor
			// The intervals the run started and ended in are cut short
			// by the start (clients of a shared workload start a moment
			// apart, and their clocks are mapped onto the control's) and
			// by the end (the workload stopped inside it), not by a stall.
			if lo := r.Workload.LastOpNS; lo != nil && iv.StartNS+stepNS > *lo && iv.StartNS <= *lo && iv.Ops > 0 {
				cutLast = cutLast || low
				continue
			}
			if start != nil && iv.StartNS+stepNS <= *start && iv.Ops > 0 {
				// Before every client host ran: a share of the load.
				if low {
					ramp++
				}
				continue
			}
			// The first is judged by the part it covers, or not at all
			// when that is under half an interval (too few ops to tell).
			if start != nil && iv.StartNS < *start && *start < iv.StartNS+stepNS && iv.Ops > 0 {
				covered := float64(iv.StartNS+stepNS-*start) / 1e9
				if covered < step/2 {
					cutFirst = cutFirst || low
					continue
				}
				rate = float64(iv.Ops) / covered
			}
			if iv.Ops == 0 || (planned > 0 && rate < floor) {
				// An interval is active when an op was invoked in it or
				// ops invoked before it were in flight through it: clients
				// blocked on a cut-off node are waiting, not stalled. With
				// nothing invoked and nothing in flight the generator
				// stalled, under a fault or not.
				if flight == nil && iv.Ops == 0 {
					flight = inFlightOf(lr)
				}
				active := iv.Ops > 0 || flight.through(iv.StartNS, iv.StartNS+stepNS)
				switch {
				case active && (inFaultWindow(r, iv.StartNS, stepNS) || tail[iv.StartNS]):
					excused++
					continue
				case iv.Ops == 0 && active && planned == 0:
					blocked++
					continue
				case iv.Ops > 0 && planned > 0 && i+1 < len(ser) &&
					float64(iv.Ops+ser[i+1].Ops) >= (2-tol)*planned*step:
					// An open-loop driver starts the ops a moment's stall
					// cost it in the next interval (driver/pacer.go): made
					// up to within one interval's tolerance, the planned
					// load was delivered.
					caughtUp++
					continue
				}
				undeclared = undeclared || (iv.Ops == 0 && flight != nil && flight.undeclared)
				bad = append(bad, fmt.Sprintf("%.0f ops/s at +%s", rate, time.Duration(iv.StartNS)))
			}
		}
		excuse := ""
		if excused > 0 {
			excuse = fmt.Sprintf(" (%d interval(s) below it inside a fault window or its recovery not judged: the fault's effect, not a stall)", excused)
		}
		if blocked > 0 {
			excuse += fmt.Sprintf(" (%d interval(s) with no op invoked but ops in flight throughout: clients waiting, not stalled)", blocked)
		}
		if caughtUp > 0 {
			excuse += fmt.Sprintf(" (%d interval(s) below it caught up in the next: the driver made up the ops it owed)", caughtUp)
		}
		if ramp > 0 {
			excuse += fmt.Sprintf(" (%d interval(s) below it before every client host had started, not judged: a share of the load)", ramp)
		}
		switch {
		case cutFirst && cutLast:
			excuse += " (the first and last intervals, cut short by the run's start and end, not judged)"
		case cutFirst:
			excuse += " (the first interval, cut short by the run's start, not judged)"
		case cutLast:
			excuse += " (the last interval, cut short by the run's end, not judged)"
		}
		if undeclared {
			excuse += " (the history's header declares no op_timeout_ns, so an op with an unknown outcome counts in flight only at its invoke: docs/driver-contract.md §3.1)"
		}
		if len(bad) > 0 {
			status = CheckFail
			ev = append(ev, fmt.Sprintf("%s: %d of %d intervals below floor %.0f ops/s (planned %.0f, tolerance %.0f%%): %s%s", lr.rel, len(bad), len(ser), floor, planned, tol*100, strings.Join(render.FirstN(bad, 3), ", "), excuse))
		} else {
			ev = append(ev, fmt.Sprintf("%s: %d intervals, none below %.0f ops/s outside fault windows, no stall%s", lr.rel, len(ser), floor, excuse))
		}
	}
	return status, strings.Join(ev, "; ")
}

// inFlight answers, for red flag 1, whether ops were in flight through an
// interval: each op's span runs from its invoke to its answer or, for an
// unknown outcome, to invoke + the header's op_timeout_ns (the latest the
// client gave up waiting; without it, only the invoke instant).
type inFlight struct {
	invokes []int64 // sorted
	maxEnd  []int64 // maxEnd[i]: the latest end of the ops invoked at invokes[0..i]
	// undeclared: some op's outcome is unknown and the header declares no
	// op_timeout_ns, so that op's time in flight is not known.
	undeclared bool
}

// inFlightOf builds lr's spans; without a history nothing is in flight.
func inFlightOf(lr *loadedRun) *inFlight {
	f := &inFlight{}
	if !lr.hasHist {
		return f
	}
	type span struct{ inv, end int64 }
	spans := make([]span, 0, len(lr.ops))
	for i := range lr.ops {
		o := &lr.ops[i]
		end := o.InvokeTS
		switch {
		case o.CompleteTS != nil:
			end = max(end, *o.CompleteTS)
		case lr.meta.OpTimeoutNS > 0:
			end += lr.meta.OpTimeoutNS
		default:
			f.undeclared = true
		}
		spans = append(spans, span{o.InvokeTS, end})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.inv, b.inv) })
	f.invokes, f.maxEnd = make([]int64, len(spans)), make([]int64, len(spans))
	for i, sp := range spans {
		f.invokes[i], f.maxEnd[i] = sp.inv, sp.end
		if i > 0 {
			f.maxEnd[i] = max(f.maxEnd[i], f.maxEnd[i-1])
		}
	}
	return f
}

// through reports whether an op invoked before start was still in flight
// at end. For an interval in which no op was invoked that means ops were
// in flight all through it: the set in flight only shrinks there.
func (f *inFlight) through(start, end int64) bool {
	n, _ := slices.BinarySearch(f.invokes, start) // ops invoked before start
	return n > 0 && f.maxEnd[n-1] >= end
}

// recoveryIntervals is how many measurement intervals after a window's
// revert still count as its recovery for red flag 1: clients blocked on
// a request timeout and a re-election finish there.
const recoveryIntervals = 2

// rejoinGrace is how long after a heal a recovery tail may still begin,
// when that is longer than the recovery intervals: a member healed from
// a partition forces its election when its election timer next fires,
// which Raft randomizes up to twice the election timeout, and the
// election takes about one more (etcd's 1 s default: an outage begun 2–3 s
// after the heal, suite 026aa8f; docs/verdicts.md §6 check 1).
const rejoinGrace = 5 * time.Second

// recoveryCap bounds a recovery tail: a SUT that is not back at the floor
// this long after a heal is slow, not recovering.
const recoveryCap = 30 * time.Second

// recoveryTails are the intervals (by start) of each heal's recovery
// tail: a run of intervals below the floor that begins within the
// recovery intervals or rejoinGrace after the heal, whichever is longer,
// until the first at or above it, at
// most recoveryCap after the heal. The rejoin after a partition is itself
// a disruption — a cut-off member comes back with a higher term and forces
// an election, TCP reconnects after its retransmission backoff — so an
// outage that starts at the heal and lasts until throughput returns is
// the fault's effect; one that starts after the floor was met again is
// not (docs/verdicts.md §6 check 1).
func recoveryTails(r *session.Run, ser []session.Interval, step int64, below func(session.Interval) bool) map[int64]bool {
	out := map[int64]bool{}
	for _, w := range r.FaultWindows {
		if w.RevertedAtNS == nil || w.InjectedAtNS == nil {
			continue
		}
		heal := *w.RevertedAtNS
		i, _ := slices.BinarySearchFunc(ser, heal, func(iv session.Interval, t int64) int {
			switch {
			case iv.StartNS+step <= t:
				return -1
			case iv.StartNS > t:
				return 1
			}
			return 0
		})
		grace := heal + max(recoveryIntervals*step, int64(rejoinGrace))
		for dip := false; i < len(ser) && ser[i].StartNS < heal+int64(recoveryCap); i++ {
			b := below(ser[i])
			if b && (dip || ser[i].StartNS < grace) {
				out[ser[i].StartNS], dip = true, true
				continue
			}
			if b || dip || ser[i].StartNS >= grace {
				break // a dip begun too late, or throughput back
			}
		}
	}
	return out
}

// inFaultWindow reports whether the interval [start, start+step) overlaps
// an injected fault window or the recovery intervals after it. A closed-loop
// client slows down while its node is cut off or killed: that dip is the
// fault landing, not the generator stalling (docs/verdicts.md §6 check 1).
func inFaultWindow(r *session.Run, start, step int64) bool {
	var lastRevert int64
	for _, w := range r.FaultWindows {
		if w.RevertedAtNS != nil && *w.RevertedAtNS > lastRevert {
			lastRevert = *w.RevertedAtNS
		}
	}
	// After the last heal the system recovers until it is seen nominal
	// (run.json recovery.nominal_at_ns): a re-election there is still the
	// fault's effect.
	if rc := r.Recovery; rc != nil && rc.Nominal && rc.NominalAtNS != nil && lastRevert > 0 &&
		start+step > lastRevert && start < *rc.NominalAtNS+recoveryIntervals*step {
		return true
	}
	for _, w := range r.FaultWindows {
		if w.InjectedAtNS == nil {
			continue
		}
		end := int64(1<<62 - 1)
		if w.RevertedAtNS != nil {
			end = *w.RevertedAtNS + recoveryIntervals*step
		}
		if start+step > *w.InjectedAtNS && start < end {
			return true
		}
	}
	return false
}

// flagOracleEveryCycle is docs/verdicts.md §6 check 2: the oracle consumed
// every op the run produced.
func flagOracleEveryCycle(in *auditInput) (string, string) {
	status, ev := CheckPass, []string{}
	for _, lr := range in.runs {
		consumed, produced, ran, why := oracleCounts(in.u, lr)
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
	return status, strings.Join(ev, "; ")
}

// faultGate answers checks 3 and 4 when no fault window was recorded:
// gated is false when there are windows to judge one by one.
func faultGate(in *auditInput, check int) (status, evidence string, gated bool) {
	windows, expected := 0, false
	for _, lr := range in.runs {
		expected = expected || windowsExpected(in.u, lr)
		windows += len(lr.run.FaultWindows)
	}
	switch {
	case windows > 0:
		return "", "", false
	case !in.f.faultPlanned:
		return CheckNA, "no fault planned", true
	case !expected:
		return CheckNA, "the budget of the tier run states 0 faults", true
	case check == 3:
		return CheckFail, "fault planned but no fault window recorded", true
	}
	return CheckUnknown, "no fault window recorded", true
}

// flagFaultInjected is docs/verdicts.md §6 check 3: every window landed
// (injector and victim evidence), ops ran inside it, and the workload was
// still running when the fault was injected.
func flagFaultInjected(in *auditInput) (string, string) {
	if st, ev, gated := faultGate(in, 3); gated {
		return st, ev
	}
	status, ev := CheckPass, []string{}
	for _, lr := range in.runs {
		last, haveLast := lastOp(lr)
		for _, w := range lr.run.FaultWindows {
			ok, txt := windowLanded(w)
			if !ok {
				status = CheckFail
			}
			ev = append(ev, txt)
			if w.InjectedAtNS == nil {
				continue
			}
			if n, known := opsIn(lr, w); !known {
				if status == CheckPass {
					status = CheckUnknown
				}
				ev = append(ev, fmt.Sprintf("%s: cannot tell whether ops ran in the window", w.FaultEpoch))
			} else if n == 0 {
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: no ops in the fault window", w.FaultEpoch))
			} else {
				ev = append(ev, fmt.Sprintf("%s: %d ops in window", w.FaultEpoch, n))
			}
			if haveLast && last < *w.InjectedAtNS {
				status = CheckFail
				ev = append(ev, fmt.Sprintf("%s: workload finished (+%s) before the fault was injected (+%s)", w.FaultEpoch, time.Duration(last), time.Duration(*w.InjectedAtNS)))
			}
		}
	}
	return status, strings.Join(ev, "; ")
}

// flagFaultNotNoOp is docs/verdicts.md §6 check 4: a target check after
// each injection showed the fault changed something.
func flagFaultNotNoOp(in *auditInput) (string, string) {
	if st, ev, gated := faultGate(in, 4); gated {
		return st, ev
	}
	status, ev := CheckPass, []string{}
	for _, lr := range in.runs {
		for _, w := range lr.run.FaultWindows {
			tc := w.TargetCheck
			if tc == nil {
				if status == CheckPass {
					status = CheckUnknown
				}
				ev = append(ev, w.FaultEpoch+": no target check recorded")
				continue
			}
			ok, d := signal(tc)
			if !ok && tc.Verdict != session.SignalChanged {
				status = CheckFail
			}
			ev = append(ev, fmt.Sprintf("%s on %s: %s", w.FaultEpoch, strings.Join(w.AllTargets(), ","), d))
		}
	}
	return status, strings.Join(ev, "; ")
}

// flagClock is docs/verdicts.md §6 check 5: timestamps came from a
// monotonic clock, not wall clocks compared across processes.
func flagClock(in *auditInput) (string, string) {
	status, ev := CheckPass, []string{}
	for _, lr := range in.runs {
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
	return status, strings.Join(ev, "; ")
}

// flagDuration is docs/verdicts.md §6 check 6: the shortest run lasted at
// least the claimed tier's duration.
func flagDuration(in *auditInput) (string, string) {
	if in.u.ps == nil {
		return CheckUnknown, "no plan budget to compare against"
	}
	var budget plan.Budget = budgetFor(in.u.ps, in.claimed)
	t := budget.Tier
	if !t.Duration.Known {
		return CheckUnknown, fmt.Sprintf("%s budget %q states no parseable duration", in.claimed, budget.Text)
	}
	d := minDuration(in.runs)
	if d >= t.Duration.D {
		return CheckPass, fmt.Sprintf("measured %s ≥ %s tier %s", d, tierName(in.claimed), t.Duration.D)
	}
	return CheckFail, fmt.Sprintf("measured %s < %s tier %s", d, tierName(in.claimed), t.Duration.D)
}

// flagSilentErrors is docs/verdicts.md §6 check 7: every error marker the
// log scan found in the SUT logs is accounted for by the oracle.
func flagSilentErrors(in *auditInput) (string, string) {
	status, ev := CheckPass, []string{}
	for _, lr := range in.runs {
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
	return status, strings.Join(ev, "; ")
}

// flagRecovery is docs/verdicts.md §6 check 8: every injected window was
// reverted and the system was back to nominal after the last heal.
func flagRecovery(in *auditInput) (string, string) {
	status, ev := CheckPass, []string{}
	anyFault := false
	for _, lr := range in.runs {
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
		// A final heal that failed may have left a fault on a host: the
		// system cannot be called back to nominal (run.json heal.errors).
		if h := lr.run.Heal; h != nil && len(h.Errors) > 0 {
			status = CheckFail
			ev = append(ev, lr.rel+": the final heal failed, a fault may still be active: "+strings.Join(h.Errors, "; "))
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
		return CheckNA, "no fault injected"
	}
	return status, strings.Join(ev, "; ")
}

// flagBaseline is docs/verdicts.md §6 check 9: a baseline comparison used
// the same harness and config, or was re-baselined.
func flagBaseline(in *auditInput) (string, string) {
	status, ev := CheckNA, []string{}
	for _, lr := range in.runs {
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
		return CheckNA, "no baseline comparison"
	}
	return status, strings.Join(ev, "; ")
}

// flagReplicated is docs/verdicts.md §6 check 10: a statistical claim
// rests on at least three seeds whose runs, each judged alone, agree.
func flagReplicated(in *auditInput) (string, string) {
	ok, why := statistical(in.u, in.claimed)
	if !ok {
		return CheckNA, why
	}
	seeds := distinctSeeds(in.runs)
	verdicts := map[Verdict]bool{}
	for _, v := range in.runVerdicts {
		verdicts[v] = true
	}
	switch {
	case len(seeds) < 3:
		return CheckFail, fmt.Sprintf("%s rests on %d %s %v; `dstgen help verdicts` §4.2 needs ≥ 3 agreeing",
			claimedPass(in.claimed), len(seeds), plural(len(seeds), "seed", "seeds"), seeds)
	case len(verdicts) > 1:
		return CheckFail, fmt.Sprintf("%d seeds disagree: %v", len(seeds), slices.Sorted(maps.Keys(verdicts)))
	}
	return CheckPass, fmt.Sprintf("%d seeds %v, same verdict", len(seeds), seeds)
}
