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
	if len(lat) == 0 && !slo.ErrorRate.Known && !slo.Throughput.Known {
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
