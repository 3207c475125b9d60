package analyze

// Stage 2, facts (continued): the latency and throughput figures of a
// unit, from its histories or its run.json series.

import (
	"math"
	"sort"
	"time"

	"github.com/dstgen/dstgen/internal/stats"
)

// metricsFor summarises a unit's workload from its histories (latency,
// errors) and run.json series. The per-interval series and fault windows
// come from the first attempted run, so a chart shows one real timeline
// rather than an average of several.
func metricsFor(u *unit) *Metrics {
	runs := attemptedRuns(u.runs)
	if len(runs) == 0 {
		return nil
	}
	m := &Metrics{PlannedRate: runs[0].run.Workload.PlannedRate}
	var lat []float64
	var span time.Duration
	for _, lr := range runs {
		r := lr.run
		if lr.hasHist {
			for i := range lr.ops {
				op := &lr.ops[i]
				m.Ops++
				switch {
				case op.TimeoutMarker:
					m.Timeouts++
				case op.Error != "":
					m.Errors++
				}
				if op.CompleteTS != nil {
					lat = append(lat, float64(*op.CompleteTS-op.InvokeTS)/1e6)
				}
			}
		} else {
			m.Ops += r.Workload.OpsProduced
			for _, iv := range r.Workload.Throughput {
				m.Errors += iv.Errors
			}
		}
		span += r.Duration()
	}
	if span > 0 {
		m.Throughput = float64(m.Ops) / span.Seconds()
	}
	if m.Ops > 0 {
		m.ErrorRate = float64(m.Errors+m.Timeouts) / float64(m.Ops)
	}
	sort.Float64s(lat)
	m.P50Ms, m.P95Ms, m.P99Ms = stats.Percentile(lat, 0.50), stats.Percentile(lat, 0.95), stats.Percentile(lat, 0.99)
	if len(lat) == 0 && len(runs[0].run.Workload.Throughput) > 0 {
		// No history: take the worst interval percentiles run.json reports.
		for _, iv := range runs[0].run.Workload.Throughput {
			m.P50Ms = math.Max(m.P50Ms, iv.P50Ms)
			m.P95Ms = math.Max(m.P95Ms, iv.P95Ms)
			m.P99Ms = math.Max(m.P99Ms, iv.P99Ms)
		}
	}
	lr := runs[0]
	m.Series = series(lr)
	for _, w := range lr.run.FaultWindows {
		ws := WindowSpan{Epoch: w.FaultEpoch, Nemesis: w.Nemesis, StartNS: w.ScheduledAtNS}
		if w.InjectedAtNS != nil {
			ws.StartNS = *w.InjectedAtNS
		}
		if w.RevertedAtNS != nil {
			ws.EndNS = *w.RevertedAtNS
		}
		ws.Landed, _ = windowLanded(w)
		m.FaultWindows = append(m.FaultWindows, ws)
	}
	return m
}

// series buckets one run's ops by measurement interval: from the history
// when there is one (latency percentiles need it), else run.json's series.
func series(lr *loadedRun) []MetricPoint {
	step := interval(lr.run)
	if !lr.hasHist || len(lr.ops) == 0 {
		var out []MetricPoint
		for _, iv := range lr.run.Workload.Throughput {
			p := MetricPoint{StartNS: iv.StartNS, EndNS: iv.StartNS + step, Ops: iv.Ops,
				Throughput: float64(iv.Ops) / (float64(step) / 1e9), P50Ms: iv.P50Ms, P95Ms: iv.P95Ms, P99Ms: iv.P99Ms}
			if iv.Ops > 0 {
				p.ErrorRate = float64(iv.Errors) / float64(iv.Ops)
			}
			out = append(out, p)
		}
		return out
	}
	var lo, hi int64 = math.MaxInt64, 0
	for i := range lr.ops {
		t := lr.ops[i].InvokeTS
		lo = min(lo, t)
		hi = max(hi, t)
	}
	// Timestamps this far from zero are recorder garbage (history
	// validation reports them); no chart is better than an overflow.
	const limit = int64(1) << 60
	if lo < -limit || hi > limit {
		return nil
	}
	if lo > 0 && lo < step {
		lo = 0
	}
	lo = stats.FloorTo(lo, step)
	const maxPoints = 2000
	if (hi-lo)/step >= maxPoints {
		step = (hi-lo)/maxPoints + 1
		lo = stats.FloorTo(lo, step)
	}
	n := int((hi-lo)/step) + 1
	lats := make([][]float64, n)
	ops := make([]int, n)
	errs := make([]int, n)
	for i := range lr.ops {
		op := &lr.ops[i]
		b := int((op.InvokeTS - lo) / step)
		ops[b]++
		if op.TimeoutMarker || op.Error != "" {
			errs[b]++
		}
		if op.CompleteTS != nil {
			lats[b] = append(lats[b], float64(*op.CompleteTS-op.InvokeTS)/1e6)
		}
	}
	out := make([]MetricPoint, n)
	for b := range out {
		sort.Float64s(lats[b])
		out[b] = MetricPoint{StartNS: lo + int64(b)*step, EndNS: lo + int64(b+1)*step, Ops: ops[b],
			Throughput: float64(ops[b]) / (float64(step) / 1e9),
			P50Ms:      stats.Percentile(lats[b], 0.5), P95Ms: stats.Percentile(lats[b], 0.95), P99Ms: stats.Percentile(lats[b], 0.99)}
		if ops[b] > 0 {
			out[b].ErrorRate = float64(errs[b]) / float64(ops[b])
		}
	}
	return out
}
