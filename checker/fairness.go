package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
)

// repeatSpread is (max − min) / mean of one group's per-run p99s
// (docs/history-and-checkers.md §5.14); it needs repeated runs, which one
// check does not have, so the fairness checker names the clause in its
// scope instead of evaluating it.
func repeatSpread(p99s []float64) float64 {
	if len(p99s) == 0 {
		return 0
	}
	lo, hi, sum := p99s[0], p99s[0], 0.0
	for _, v := range p99s {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	if sum == 0 {
		return 0
	}
	return (hi - lo) / (sum / float64(len(p99s)))
}

func groupOf(o *history.Op, dim string) string {
	switch dim {
	case "process_id", "process", "client":
		return o.ProcessID
	case "key", "shard", "partition":
		return o.Key
	case "node_seen", "node", "region":
		return o.NodeSeen
	case "fault_epoch":
		return o.FaultEpoch
	case "op_type", "workload-class":
		return o.OpType
	}
	if f, found := strings.CutPrefix(dim, "input."); found {
		id, _ := idemOf(o.Input, f)
		return id
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(o.Input, &m) == nil {
		// A string group ("tenant":"t2") is named without its JSON quotes.
		var s string
		if json.Unmarshal(m[dim], &s) == nil {
			return s
		}
		return canon(m[dim])
	}
	return ""
}

// checkFairness (docs/history-and-checkers.md §5.14) over one history,
// with the formula the plan parsed (plan.ParseFairness: the one grammar).
// repeat_spread needs several runs (repeatSpread); the Scope says so when
// the formula asks for it, and names clauses it does not evaluate.
func checkFairness(ctx context.Context, ops []history.Op, f *plan.Fairness) (Result, error) {
	lim := newBudget(ctx)
	if f == nil {
		return Result{}, fmt.Errorf("fairness: no formula (the plan's §7.M.S Fairness formula, or --param formula=...)")
	}
	res := Result{OpsConsumed: len(ops), Scope: "per-group over one history; a group coarser than the starved one hides it"}
	if f.RepeatSpread.Known {
		res.Scope += "; repeat_spread needs repeated runs and is not evaluated here"
	}
	for _, o := range f.Other {
		res.Scope += "; clause " + o.String() + " is not a fairness metric dstgen computes"
	}
	for _, th := range []plan.Threshold{f.WorstP99Ratio, f.MinThroughput, f.ErrorRate} {
		if th.Known {
			res.Thresholds = append(res.Thresholds, fmt.Sprintf("group=%s: %s", f.Group, th))
		}
	}
	if len(ops) == 0 {
		res.Outcome, res.Reason = Unknown, "no ops"
		return res, nil
	}
	type g struct {
		lat     []int64
		n, errs int
	}
	groups := map[string]*g{}
	var all []int64
	lo, hi := ops[0].InvokeTS, ops[0].InvokeTS
	for i := range ops {
		if lim.spent() {
			// A group half counted would misstate its share.
			return lim.settle(res), nil
		}
		o := &ops[i]
		name := groupOf(o, f.Group)
		x := groups[name]
		if x == nil {
			x = &g{}
			groups[name] = x
		}
		x.n++
		lo, hi = min(lo, o.InvokeTS), max(hi, o.InvokeTS)
		if ok(o) {
			d := *o.CompleteTS - o.InvokeTS
			x.lat = append(x.lat, d)
			all = append(all, d)
		} else {
			x.errs++
		}
	}
	slices.Sort(all)
	agg := percentile(all, 99)
	span := float64(hi-lo+1) / 1e9
	var an anomalies
	for _, n := range slices.Sorted(maps.Keys(groups)) {
		if lim.spent() {
			break
		}
		x := groups[n]
		slices.Sort(x.lat)
		if p := percentile(x.lat, 99); f.WorstP99Ratio.Known && agg > 0 && !f.WorstP99Ratio.Holds(float64(p)/float64(agg)) {
			an.add(Anomaly{Kind: "unfair", Key: n, Message: fmt.Sprintf("group %s=%s: p99 %v is %.2f× aggregate p99 %v (threshold %s)", f.Group, n, time.Duration(p), float64(p)/float64(agg), time.Duration(agg), f.WorstP99Ratio)})
		}
		if t := float64(x.n-x.errs) / span; !f.MinThroughput.Holds(t) {
			an.add(Anomaly{Kind: "unfair", Key: n, Message: fmt.Sprintf("group %s=%s: throughput %.1f ops/s (threshold %s)", f.Group, n, t, f.MinThroughput)})
		}
		if rate := float64(x.errs) / float64(x.n); !f.ErrorRate.Holds(rate) {
			an.add(Anomaly{Kind: "unfair", Key: n, Message: fmt.Sprintf("group %s=%s: %d of %d ops failed or timed out (threshold %s)", f.Group, n, x.errs, x.n, f.ErrorRate)})
		}
	}
	return lim.finish(res, &an), nil
}
