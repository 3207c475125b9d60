package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze"
	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/stats"
	"github.com/dstgen/dstgen/session"
)

// maxProblemsPerFile keeps a garbage file from drowning the report (the
// session analysis uses the same bound).
const maxProblemsPerFile = 20

// Benchmark run verdicts (Run.Verdict).
const (
	Pass         = "pass"
	Fail         = "fail"
	Inconclusive = "inconclusive"
)

// NoModelNote is said when a benchmark history was found but no model was
// named, so its consistency was not judged.
const NoModelNote = "no model named: linearizability not checked (set benchmark.model in env.yml)"

// Bounds on the walk of benchmark/ for histories: a run dir is the
// operator's, and a stray tree must not make the analysis unbounded.
const (
	benchMaxHistories  = 64
	benchMaxWalkDepth  = 4
	benchMaxSeriesSize = 600
)

// Check is the checker's verdict on one benchmark history.
type Check struct {
	Checker   string   `json:"checker"`
	Model     string   `json:"model"`
	Outcome   string   `json:"outcome"` // valid | invalid | unknown
	Evidence  string   `json:"evidence"`
	Reason    string   `json:"reason,omitempty"`
	Anomalies []string `json:"anomalies,omitempty"`
	// Dirty cites reads of values no op in the history wrote
	// ("benchmark/history.jsonl:2: …"): left-over state, never a FAIL.
	Dirty []string `json:"dirty_initial_state,omitempty"`
}

// benchHistoryFiles lists the *.jsonl files under benchmark/ (recursively,
// bounded in depth and count), sorted.
func (b *Run) benchHistoryFiles(ctx context.Context) ([]string, error) {
	root := filepath.Join(b.Dir, session.BenchmarkDir)
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable subdir is skipped, not fatal
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && strings.Count(rel, string(filepath.Separator)) >= benchMaxWalkDepth-1 {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".jsonl") {
			if len(out) == benchMaxHistories {
				b.Problems = append(b.Problems, fmt.Sprintf("%s: more than %d *.jsonl files; the rest not read", filepath.Join(b.ID, session.BenchmarkDir), benchMaxHistories))
				return fs.SkipAll
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("benchmark run: %w", ctx.Err())
	}
	sort.Strings(out)
	return out, nil
}

// loadHistories reads every dst-history/1 file under benchmark/ as a
// benchmark result: ops, throughput, latency percentiles, fail/timeout
// counts, a throughput series and, when a model is named, the checker's
// verdict on it.
func (b *Run) loadHistories(ctx context.Context, opts Options) error {
	files, err := b.benchHistoryFiles(ctx)
	if err != nil {
		return err
	}
	b.histories = len(files)
	for _, f := range files {
		rel := filepath.ToSlash(filepath.Join(b.ID, session.BenchmarkDir, mustRel(filepath.Join(b.Dir, session.BenchmarkDir), f)))
		meta, ops, bad, err := history.ReadFile(f)
		if err != nil {
			b.Problems = append(b.Problems, fmt.Sprintf("%s: %v", rel, err))
			continue
		}
		for i, e := range bad {
			if i == maxProblemsPerFile {
				b.Problems = append(b.Problems, fmt.Sprintf("%s: %d more bad lines not listed", rel, len(bad)-i))
				break
			}
			b.Problems = append(b.Problems, e.Error())
		}
		for i, e := range history.Validate(rel, ops, nil) {
			if i == maxProblemsPerFile {
				break
			}
			b.Problems = append(b.Problems, e.Error())
		}
		r := historyBench(rel, meta, ops)
		if rate := benchParamRate(filepath.Dir(f)); rate > 0 {
			r.TargetRate = rate
		}
		if opts.Model != "" {
			r.Check = b.checkHistory(ctx, rel, ops, opts)
		}
		b.Benchmarks = append(b.Benchmarks, r)
	}
	return nil
}

// benchParamRate is the target rate `dstgen bench start` recorded for the
// run beside its history (session.BenchParamsFile), 0 when there is none:
// the rate the run really had, overrides included.
func benchParamRate(dir string) float64 {
	v, ok := readBenchParams(dir)["rate"]
	if !ok {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
		return f
	}
	return 0
}

// readBenchParams reads the key=value lines of dir/bench.params (nil when
// there is none, or it is over 64 KiB: not a file bench start wrote).
func readBenchParams(dir string) map[string]string {
	data, err := os.ReadFile(filepath.Join(dir, session.BenchParamsFile))
	if err != nil || len(data) > 64<<10 {
		return nil
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && k != "" {
			if _, dup := m[k]; !dup {
				m[k] = v
			}
		}
	}
	return m
}

// RecordedOracle is the oracle `dstgen bench start` recorded for the run
// in runDir/benchmark/bench.params (env.yml's benchmark.model and
// benchmark.checker when the run started): ok is false for a run that
// recorded none (no bench.params, or one from before the oracle was
// recorded), so every way of analyzing the run judges it the same.
func RecordedOracle(runDir string) (model, checker string, ok bool) {
	p := readBenchParams(filepath.Join(runDir, session.BenchmarkDir))
	model, ok = p["model"]
	return model, p["checker"], ok
}

func mustRel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return filepath.Base(p)
}

// historyBench reduces one history to a benchmark summary. Failures are
// error answers ("fail") and timed-out ops ("timeout"); latency is over ok
// ops; the duration runs from the first invoke to the last completion.
func historyBench(rel string, meta history.Meta, ops []history.Op) Result {
	name := strings.TrimSuffix(strings.TrimPrefix(rel, ""), ".jsonl")
	if i := strings.Index(name, "/"+session.BenchmarkDir+"/"); i >= 0 {
		name = name[i+len(session.BenchmarkDir)+2:]
	}
	if meta.Scenario != "" {
		name = meta.Scenario + " (" + name + ")"
	}
	r := Result{File: rel, Name: name, Format: history.Schema, Ops: int64(len(ops)), Errors: map[string]int64{}}
	if len(ops) == 0 {
		return r
	}
	lo, hi := ops[0].InvokeTS, ops[0].InvokeTS
	var lat []float64
	for i := range ops {
		o := &ops[i]
		lo, hi = min(lo, o.InvokeTS), max(hi, o.InvokeTS)
		switch {
		case o.TimeoutMarker || o.CompleteTS == nil:
			r.Errors["timeout"]++
			r.Failures++
		case o.Error != "":
			r.Errors["fail"]++
			r.Failures++
			hi = max(hi, *o.CompleteTS)
		default:
			hi = max(hi, *o.CompleteTS)
			lat = append(lat, float64(*o.CompleteTS-o.InvokeTS)/1e6)
		}
	}
	span := float64(hi-lo) / 1e9
	r.DurationS = span
	if span > 0 {
		r.Throughput = float64(len(lat)) / span
	}
	if len(lat) > 0 {
		sort.Float64s(lat)
		r.Latency = benchLatency{Mean: fptr(benchMean(lat)), P50: fptr(stats.Percentile(lat, 0.50)), P95: fptr(stats.Percentile(lat, 0.95)), P99: fptr(stats.Percentile(lat, 0.99)), Max: fptr(lat[len(lat)-1])}
	}
	// Series: one point per interval of at least a second, at most
	// benchMaxSeriesSize points.
	step := max(int64(time.Second), (hi-lo)/benchMaxSeriesSize+1)
	n := int((hi-lo)/step) + 1
	pts := make([]Point, n)
	buckets := make([][]float64, n)
	for i := range pts {
		pts[i].T = float64(int64(i)*step) / 1e9
	}
	for i := range ops {
		o := &ops[i]
		k := int((o.InvokeTS - lo) / step)
		pts[k].Ops++
		if o.TimeoutMarker || o.CompleteTS == nil || o.Error != "" {
			pts[k].Errors++
			continue
		}
		buckets[k] = append(buckets[k], float64(*o.CompleteTS-o.InvokeTS)/1e6)
	}
	for i := range pts {
		if len(buckets[i]) > 0 {
			sort.Float64s(buckets[i])
			pts[i].P99 = stats.Percentile(buckets[i], 0.99)
		}
	}
	if n > 1 {
		r.Series = pts
	}
	return r
}

// checkHistory runs the named model's checker on a benchmark history.
func (b *Run) checkHistory(ctx context.Context, rel string, ops []history.Op, opts Options) *Check {
	spec := checker.Spec{Model: opts.Model, Checker: opts.Checker, Timeout: opts.CheckTimeout}
	if spec.Checker == "" {
		c, ok := checker.Pick(opts.Model, "")
		if !ok {
			why := fmt.Sprintf("no default checker for model %q; name benchmark.checker in env.yml (or --checker)", opts.Model)
			b.Problems = append(b.Problems, rel+": "+why)
			// A model was named but nothing judged it: not a pass.
			return &Check{Model: opts.Model, Outcome: string(checker.Unknown), Reason: why}
		}
		spec.Checker = c
	}
	res, err := checker.Run(ctx, spec, ops, nil)
	if err != nil {
		b.Problems = append(b.Problems, fmt.Sprintf("%s: checker %s: %v", rel, spec.Checker, err))
		return &Check{Checker: spec.Checker, Model: opts.Model, Outcome: string(checker.Unknown), Reason: err.Error()}
	}
	c := &Check{Checker: res.Checker, Model: opts.Model, Outcome: string(res.Outcome), Evidence: res.Evidence(), Reason: res.Reason}
	for i, a := range res.Anomalies {
		if i == 5 {
			// The rest, counting those a capped list's "more" entry stands for.
			c.Anomalies = append(c.Anomalies, fmt.Sprintf("%d more anomalies", res.AnomalyCount()-i))
			break
		}
		c.Anomalies = append(c.Anomalies, a.Message)
	}
	for _, d := range res.Dirty {
		c.Dirty = append(c.Dirty, fmt.Sprintf("%s:%d: %s", rel, d.Line, d))
	}
	return c
}

// benchVerdict judges the run: fail on a real anomaly (or the error-rate
// rule), inconclusive when a check could not decide (dirty initial state,
// time limit), pass otherwise. A dirty initial state is never a fail.
func (b *Run) benchVerdict() (verdict, reason string) {
	var unknown, invalid, names []string
	checked, histories := 0, 0
	for _, r := range b.Benchmarks {
		if r.Format == history.Schema {
			histories++
		}
		c := r.Check
		if c == nil {
			continue
		}
		checked++
		if !slices.Contains(names, c.Checker) {
			names = append(names, c.Checker)
		}
		switch c.Outcome {
		case string(checker.Invalid):
			invalid = append(invalid, fmt.Sprintf("%s: %s %s: %s", r.Name, c.Checker, c.Evidence, strings.Join(render.FirstN(c.Anomalies, 2), "; ")))
		case string(checker.Unknown):
			why := c.Reason
			if len(c.Dirty) > 0 {
				why = "dirty initial state: " + strings.Join(render.FirstN(c.Dirty, 2), "; ") + "; " + checker.DirtyAdvice
			}
			unknown = append(unknown, fmt.Sprintf("%s: %s", r.Name, why))
		}
	}
	// A declared oracle must have judged every history (docs/real-env-test.md
	// §12): one that could not run is no pass.
	if o := b.Oracle; o != nil {
		switch {
		case o.Model == "":
			unknown = append(unknown, fmt.Sprintf("checker %s declared without a model (benchmark.model): not run", o.Checker))
		case b.histories == 0:
			unknown = append(unknown, fmt.Sprintf("model %s declared%s but benchmark/ holds no dst-history/1 history (*.jsonl): its checker did not run", o.Model, o.from()))
		case checked < b.histories:
			unknown = append(unknown, fmt.Sprintf("model %s declared%s but %d of %d histories could not be read: not checked", o.Model, o.from(), b.histories-checked, b.histories))
		}
	}
	switch {
	case len(invalid) > 0:
		return Fail, "checker found an anomaly: " + strings.Join(invalid, "; ")
	case b.Failed:
		return Fail, "" // the headline already says why (error rate, nothing ran)
	case len(unknown) > 0:
		return Inconclusive, strings.Join(unknown, "; ")
	case histories > 0 && checked == 0:
		return Pass, NoModelNote
	case checked > 0:
		// Name the checker: "valid" means nothing until one knows for what.
		return Pass, fmt.Sprintf("%s judged %d of %d histories valid", strings.Join(names, ", "), checked, histories)
	}
	return Pass, ""
}

// from names where the oracle was declared (" in bench.params"), or "".
func (o *Oracle) from() string {
	if o.Source == "" {
		return ""
	}
	return " in " + o.Source
}

// sessionVerdict maps the run's verdict onto the session vocabulary
// (docs/verdicts.md §8), so `dstgen analyze` prints one verdict line for a
// plan session and a benchmark run alike: nothing ran is BLOCKED; a
// history no checker judged (no model declared) is a concern, never DONE.
func (b *Run) sessionVerdict() analyze.SessionVerdict {
	switch {
	case b.Totals.Ops == 0:
		return analyze.Blocked
	case b.Verdict == Fail:
		return analyze.Fail
	case b.Verdict == Inconclusive:
		return analyze.Inconclusive
	case b.VerdictReason == NoModelNote:
		return analyze.DoneWithConcerns
	}
	return analyze.Done
}
