package checker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
)

func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// checkSLO (docs/history-and-checkers.md §5.4): thresholds come from the plan (slo, parsed by
// plan.ParseSLO) or, for a one-off check, from params p50, p95, p99
// (durations), error_rate (fraction), throughput (ops/s floor). Every window
// (param window, a duration; default the whole history) must meet every
// threshold. Latency counts ok ops (of slo.OpType when set); timeouts and
// errors count as errors.
func checkSLO(ctx context.Context, ops []history.Op, params map[string]string, slo *plan.SLO) (Result, error) {
	lim := newBudget(ctx)
	res := Result{OpsConsumed: len(ops), Scope: "latencies as the client saw them; windows with no ops are skipped; thresholds must be declared before the run"}
	if slo == nil {
		var err error
		if slo, err = sloFromParams(params); err != nil {
			return res, err
		}
	}
	type latBound struct {
		name  string
		p     float64
		th    plan.Threshold
		limit time.Duration
	}
	var lat []latBound
	for _, l := range []struct {
		name string
		p    float64
		th   plan.Threshold
	}{{"p50", 50, slo.P50}, {"p95", 95, slo.P95}, {"p99", 99, slo.P99}} {
		if !l.th.Known {
			continue
		}
		d, isTime := l.th.Duration()
		if !isTime {
			return res, fmt.Errorf("slo: %s: bound %q is not a duration", l.name, l.th)
		}
		lat = append(lat, latBound{l.name, l.p, l.th, d})
	}
	if len(lat) == 0 && !slo.ErrorRate.Known && !slo.Throughput.Known && !slo.Recovery.Known {
		return res, fmt.Errorf("slo: no threshold declared (params p50, p95, p99, error_rate, throughput)")
	}
	if slo.OpType != "" {
		res.Scope += "; latency bounds apply to " + slo.OpType + " ops only"
	}
	for _, th := range slo.Clauses() {
		res.Thresholds = append(res.Thresholds, th.String())
	}
	if len(ops) == 0 {
		res.Outcome, res.Reason = Unknown, "no ops: nothing measured"
		return res, nil
	}
	lo, hi := ops[0].InvokeTS, ops[0].InvokeTS
	for i := range ops {
		if lim.spent() {
			return lim.settle(res), nil
		}
		lo, hi = min(lo, ops[i].InvokeTS), max(hi, ops[i].InvokeTS)
	}
	win := hi - lo + 1
	if s := params["window"]; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return res, fmt.Errorf("slo: window: want a positive duration, got %q", s)
		}
		win = int64(d)
	}
	type bucket struct {
		lat       []int64
		n, errors int
	}
	buckets := map[int64]*bucket{}
	for i := range ops {
		if lim.spent() {
			// A window half filled would misstate its rates.
			return lim.settle(res), nil
		}
		o := &ops[i]
		b := (o.InvokeTS - lo) / win
		if buckets[b] == nil {
			buckets[b] = &bucket{}
		}
		bk := buckets[b]
		bk.n++
		switch {
		case !ok(o):
			bk.errors++
		case slo.OpType == "" || o.OpType == slo.OpType:
			bk.lat = append(bk.lat, *o.CompleteTS-o.InvokeTS)
		}
	}
	var an anomalies
	for _, b := range slices.Sorted(maps.Keys(buckets)) {
		if lim.spent() {
			break
		}
		bk := buckets[b]
		slices.Sort(bk.lat)
		ws, we := lo+b*win, lo+(b+1)*win
		for _, l := range lat {
			if len(bk.lat) == 0 {
				continue
			}
			if got := time.Duration(percentile(bk.lat, l.p)); !(plan.Threshold{Op: l.th.Op, Value: float64(l.limit), Known: true}).Holds(float64(got)) {
				an.add(Anomaly{Kind: "slo", WindowStart: ws, WindowEnd: we, Message: fmt.Sprintf("%s %v breaks threshold %s in window %d", l.name, got, l.th, b)})
			}
		}
		if rate := float64(bk.errors) / float64(bk.n); !slo.ErrorRate.Holds(rate) {
			an.add(Anomaly{Kind: "slo", WindowStart: ws, WindowEnd: we, Message: fmt.Sprintf("error rate %.4f breaks threshold %s in window %d", rate, slo.ErrorRate, b)})
		}
		span := min(we, hi+1) - ws
		if got := float64(bk.n-bk.errors) / (float64(span) / 1e9); !slo.Throughput.Holds(got) {
			an.add(Anomaly{Kind: "slo", WindowStart: ws, WindowEnd: we, Message: fmt.Sprintf("throughput %.1f ops/s breaks threshold %s in window %d", got, slo.Throughput, b)})
		}
	}
	return lim.finish(res, &an), nil
}

// sloFromParams reads dstgen check's --param thresholds into the plan's
// SLO shape, so both paths are judged by one code path.
func sloFromParams(params map[string]string) (*plan.SLO, error) {
	slo := &plan.SLO{}
	for k, dst := range map[string]*plan.Threshold{"p50": &slo.P50, "p95": &slo.P95, "p99": &slo.P99} {
		if s := params[k]; s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("slo: %s: want a non-negative duration, got %q", k, s)
			}
			*dst = plan.Threshold{Metric: k, Op: "<=", Value: float64(d) / 1e6, Unit: "ms", Known: true}
		}
	}
	for k, op := range map[string]string{"error_rate": "<=", "throughput": ">="} {
		s := params[k]
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0) { // NaN or negative would silently disable the check
			return nil, fmt.Errorf("slo: %s: want a non-negative number, got %q", k, s)
		}
		th := plan.Threshold{Metric: k, Op: op, Value: v, Known: true}
		if k == "throughput" {
			th.Unit = "ops/s"
			slo.Throughput = th
		} else {
			slo.ErrorRate = th
		}
	}
	return slo, nil
}

// checkRecovery judges an SLO's recovery bound (docs/history-and-checkers.md
// §5.4): for every fault window, the time from its injection to the
// earliest completion of an acknowledged op (of slo.RecoveryOp's kind)
// invoked at or after it. A window edge known only to ± u decides only
// when the bound holds or breaks either way; otherwise, or with no window
// to measure from, or a history that ends before the bound could be
// reached, the outcome is Unknown, never Valid. Anomalies already in res
// (the other thresholds) stand.
func checkRecovery(ops []history.Op, slo *plan.SLO, windows []Window, u time.Duration, res Result) Result {
	bound, _ := slo.Recovery.Duration()
	res.Scope += "; recovery: injection to the first acknowledged " + orAny(slo.RecoveryOp) + " op invoked after it, per fault window"
	unknownWhy := func(why string) {
		if res.Outcome != Invalid && len(res.Anomalies) == 0 {
			res.Outcome = Unknown
		}
		res.Reason = appendReason(res.Reason, why)
	}
	if len(windows) == 0 {
		unknownWhy("recovery bound not measured: the run has no injected fault window")
		return res
	}
	var last int64
	for i := range ops {
		last = max(last, ops[i].InvokeTS)
		if ops[i].CompleteTS != nil {
			last = max(last, *ops[i].CompleteTS)
		}
	}
	for _, w := range windows {
		first := int64(math.MaxInt64)
		for i := range ops {
			o := &ops[i]
			if o.InvokeTS >= w.Injected && ok(o) && recoveryKind(o, slo.RecoveryOp) {
				first = min(first, *o.CompleteTS)
			}
		}
		if first == math.MaxInt64 {
			if time.Duration(last-w.Injected) > bound+u {
				res.Anomalies = append(res.Anomalies, Anomaly{Kind: "slo", FaultEpoch: w.Epoch, WindowStart: w.Injected, WindowEnd: last,
					Message: fmt.Sprintf("window %s: no acknowledged %s op in the %v after the injection (bound %s)", w.Epoch, orAny(slo.RecoveryOp), time.Duration(last-w.Injected).Round(time.Millisecond), slo.Recovery)})
				res.Outcome = Invalid
			} else {
				unknownWhy(fmt.Sprintf("window %s: the history ends %v after the injection, before the recovery bound %s", w.Epoch, time.Duration(last-w.Injected).Round(time.Millisecond), slo.Recovery))
			}
			continue
		}
		took := time.Duration(first - w.Injected)
		th := plan.Threshold{Op: slo.Recovery.Op, Value: float64(bound), Known: true}
		switch {
		case !th.Holds(float64(took - u)):
			res.Anomalies = append(res.Anomalies, Anomaly{Kind: "slo", FaultEpoch: w.Epoch, WindowStart: w.Injected, WindowEnd: first,
				Message: fmt.Sprintf("window %s: recovery %v breaks threshold %s", w.Epoch, took.Round(time.Millisecond), slo.Recovery)})
			res.Outcome = Invalid
		case !th.Holds(float64(took + u)):
			unknownWhy(fmt.Sprintf("window %s: recovery %v is within the window's clock uncertainty ±%v of the bound %s", w.Epoch, took.Round(time.Millisecond), u, slo.Recovery))
		default:
			res.Thresholds = append(res.Thresholds, fmt.Sprintf("window %s: recovered in %v", w.Epoch, took.Round(time.Millisecond)))
		}
	}
	return res
}

// recoveryKind: o is the kind of op a recovery bound names — a write for
// put/write/set/insert/append, a read for get/read, any op otherwise.
func recoveryKind(o *history.Op, kind string) bool {
	switch kind {
	case "put", "puts", "write", "writes", "set", "insert", "append":
		_, w := written(o)
		return w
	case "get", "gets", "read", "reads":
		return o.OpType == "read" || o.OpType == "get"
	}
	return true
}

func orAny(kind string) string {
	if kind == "" {
		return "any"
	}
	return kind
}
