// Package stats is the arithmetic every per-interval series of dstgen
// shares — the run record's throughput, the report's charts, benchmark
// runs — so that a percentile or an interval edge means the same thing
// wherever it is printed.
package stats

import "math"

// Percentile is the nearest-rank percentile (q in [0, 1]) of sorted values: the
// value at rank ceil(q·n), so every reported percentile is an observed
// sample. The run record, session metrics and benchmark runs share it.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// FloorTo rounds v down to a multiple of step (also for negative v): the
// start of the interval v falls in, for every per-interval series (the
// run record's throughput, the report's charts).
func FloorTo(v, step int64) int64 {
	r := v % step
	if r < 0 {
		r += step
	}
	return v - r
}
