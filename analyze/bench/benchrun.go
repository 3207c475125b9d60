// Package bench analyses benchmark runs without a plan: the Real Env
// Test flow (bench:start … collect) leaves results/run_<YYYYMMDD_HHMMSS>/ with
//
//	benchmark/*.json   summaries, in any of three shapes:
//	    dstgen-native  {"name","target_rate","duration_s","ops":N,
//	                    "errors":{category:N},
//	                    "latency_ms":{"mean","p50","p95","p99"} and/or "samples_ms":[...],
//	                    "series":[{"t","ops","errors","p99_ms"}]}
//	                   (target_rate ops/s; series t = seconds since start, ops and
//	                   errors counted per interval)
//	    fio            fio --output-format=json (jobs[].read|write: iops, total_ios,
//	                   runtime, clat_ns.mean and percentile; job options rate_iops)
//	    k6             k6 --summary-export (metrics.http_reqs count/rate,
//	                   http_req_duration avg/med/p(95)/p(99), http_req_failed)
//	metrics/           raw vmstat.log, iostat.log, mpstat.log, top.log,
//	                   start_time, end_time (docs/real-env-test.md §8), flat for one host or
//	                   one sub-directory per host; and/or *.csv samples
//	                   timestamp,host,cpu,mem,disk_io,net
//	logs/              not parsed; listed so the reader knows where to look
//
// and Analyze turns it into totals, latency percentiles,
// throughput against target, error categories, peak resources per host,
// named saturation and error patterns, a comparison with the previous
// run_<ts> beside it, and recommendations drawn from those figures.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/session"
)

// Thresholds for the named patterns. They are fixed (not flags) so two
// runs are always judged by the same yardstick; the report states them.
const (
	benchCPUSaturated    = 90.0 // % busy
	benchIOWaitHigh      = 20.0 // % iowait
	benchDiskSaturated   = 90.0 // % device utilisation
	benchMemPressure     = 90.0 // % used
	benchSustained       = 3    // consecutive samples that make a level "sustained"
	benchTargetShortfall = 0.90 // achieved < 90% of target ⇒ below target
	benchBurstFactor     = 3.0  // interval error ratio ≥ 3× the run's ⇒ burst
	benchBurstMinRatio   = 0.01 // … and ≥ 1% of that interval's ops
	benchPlateauGrowth   = 0.05 // throughput grew < 5% between halves …
	benchLatencyClimb    = 1.5  // … while p99 rose ≥ 1.5×
	benchRegression      = 0.20 // ±20% vs the previous run is worth naming
)

// DefaultMaxErrorRate is the error-rate threshold above which a benchmark
// run fails (`dstgen analyze` exits 1).
const DefaultMaxErrorRate = 0.01

// Options tunes Analyze.
type Options struct {
	// MaxErrorRate is the failure threshold (fraction); 0 means
	// DefaultMaxErrorRate.
	MaxErrorRate float64
	// NoPrevious skips the comparison with the previous run.
	NoPrevious bool
	// Model and Checker name the oracle for dst-history/1 histories found
	// under benchmark/ (what `dstgen bench start` recorded in
	// benchmark/bench.params, see RecordedOracle; "" checker = the model's
	// default); "" model = not checked. A declared oracle that could not
	// run on a history is inconclusive, never a pass.
	Model, Checker string
	// OracleSource says where Model and Checker came from (bench.params,
	// --env, --model), for the report.
	OracleSource string
	// CheckTimeout bounds each checker run (0: the checker's default); a
	// check that runs out is inconclusive, never a pass.
	CheckTimeout time.Duration
}

// HostUsage is one host's peak resource use over the run. A peak of -1
// means no source measured it.
type HostUsage struct {
	Host       string   `json:"host"`
	Samples    int      `json:"samples"`
	Sources    []string `json:"sources"`
	PeakCPU    float64  `json:"peak_cpu_pct"`
	MeanCPU    float64  `json:"mean_cpu_pct"`
	PeakIOWait float64  `json:"peak_iowait_pct"`
	PeakMem    float64  `json:"peak_mem_pct"`
	PeakDisk   float64  `json:"peak_disk_util_pct"`
	PeakDiskKB float64  `json:"peak_disk_kb_s"`
	PeakNet    float64  `json:"peak_net_bytes_s"`
	// CPU is the cpu series used for saturation detection (chart input).
	CPU []float64 `json:"cpu_series,omitempty"`
}

// Pattern is a named saturation or error pattern with the figures
// that show it.
type Pattern struct {
	Kind   string `json:"kind"`   // cpu-saturation, iowait-high, disk-saturation, memory-pressure, throughput-below-target, throughput-plateau-latency-climb, error-burst, generator-stall, error-rate-high
	Target string `json:"target"` // host or benchmark name
	Detail string `json:"detail"`
}

// Totals sums every benchmark of the run.
type Totals struct {
	Ops       int64            `json:"ops"`
	Failures  int64            `json:"failures"`
	ErrorRate float64          `json:"error_rate"`
	Errors    map[string]int64 `json:"errors"`
}

// Change compares one benchmark with the previous run's same-named one.
type Change struct {
	Name             string   `json:"name"`
	ThroughputBefore *float64 `json:"throughput_before,omitempty"`
	ThroughputAfter  *float64 `json:"throughput_after,omitempty"`
	P99Before        *float64 `json:"p99_ms_before,omitempty"`
	P99After         *float64 `json:"p99_ms_after,omitempty"`
	ErrRateBefore    *float64 `json:"error_rate_before,omitempty"`
	ErrRateAfter     *float64 `json:"error_rate_after,omitempty"`
}

// Comparison is the diff with the previous run.
type Comparison struct {
	Previous string   `json:"previous_run"`
	Changes  []Change `json:"benchmarks"`
	// HostCPU is peak cpu before → after per host.
	HostCPU map[string][2]float64 `json:"host_peak_cpu,omitempty"`
}

// Run is the analysis of one run_<ts> directory; report.json for a
// benchmark run is its JSON encoding.
type Run struct {
	Schema          string      `json:"schema"`
	Dir             string      `json:"dir"`
	ID              string      `json:"id"`
	Start           *time.Time  `json:"start,omitempty"`
	End             *time.Time  `json:"end,omitempty"`
	Benchmarks      []Result    `json:"benchmarks"`
	Totals          Totals      `json:"totals"`
	Hosts           []HostUsage `json:"hosts"`
	Patterns        []Pattern   `json:"patterns"`
	Recommendations []string    `json:"recommendations"`
	Previous        *Comparison `json:"previous,omitempty"`
	Logs            []string    `json:"logs,omitempty"`
	MaxErrorRate    float64     `json:"max_error_rate"`
	Failed          bool        `json:"failed"` // error rate above MaxErrorRate, nothing ran, or a checker found an anomaly
	// Verdict is pass, fail or inconclusive (a history's check could not
	// decide: dirty initial state, time limit, a declared checker that did
	// not run); VerdictReason says why.
	Verdict       string `json:"verdict"`
	VerdictReason string `json:"verdict_reason,omitempty"`
	// SessionVerdict is Verdict in the session vocabulary of
	// docs/verdicts.md §8, the one `dstgen analyze` prints for every kind
	// of result (session_verdict=): DONE, DONE_WITH_CONCERNS (a history no
	// checker judged), INCONCLUSIVE, FAIL, BLOCKED (nothing ran).
	SessionVerdict analyze.SessionVerdict `json:"session_verdict"`
	// Oracle is the checker the run was judged with and where it was
	// declared; nil when none was.
	Oracle   *Oracle  `json:"oracle,omitempty"`
	Headline string   `json:"headline"`
	Problems []string `json:"problems"`

	// histories counts the *.jsonl files found under benchmark/, read or
	// not: a declared checker must have judged every one.
	histories int
}

// Oracle is the declared checker of a benchmark run.
type Oracle struct {
	Model   string `json:"model"`
	Checker string `json:"checker,omitempty"`
	Source  string `json:"source,omitempty"`
}

// Schema identifies a benchmark-run report.json.
const Schema = "dst-benchrun/1"

var runDirRe = lazyre.New(`^run_\d{8}_\d{6}$`)

// IsRunDir reports whether dir looks like a Real Env Test run
// directory: named run_<YYYYMMDD_HHMMSS> or holding benchmark/ or
// metrics/ without a session's artifacts/.
func IsRunDir(dir string) bool {
	if runDirRe.MatchString(filepath.Base(filepath.Clean(dir))) {
		return true
	}
	if benchIsDir(filepath.Join(dir, session.ArtifactsDir)) {
		return false
	}
	return benchIsDir(filepath.Join(dir, session.BenchmarkDir))
}

func benchIsDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Analyze analyses one run directory. It fails only when dir is
// not a readable directory; every other defect becomes a problem line and
// the analysis goes on with what parsed.
func Analyze(ctx context.Context, dir string, opts Options) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("benchmark run: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("benchmark run: %s is not a directory", dir)
	}
	if opts.MaxErrorRate <= 0 {
		opts.MaxErrorRate = DefaultMaxErrorRate
	}
	b := &Run{Schema: Schema, Dir: dir, ID: filepath.Base(filepath.Clean(dir)), MaxErrorRate: opts.MaxErrorRate,
		Benchmarks: []Result{}, Hosts: []HostUsage{}, Patterns: []Pattern{}, Recommendations: []string{}, Problems: []string{}}
	if opts.Model != "" || opts.Checker != "" {
		b.Oracle = &Oracle{Model: opts.Model, Checker: opts.Checker, Source: opts.OracleSource}
	}
	b.Totals.Errors = map[string]int64{}
	if err := b.loadBenchmarks(ctx); err != nil {
		return nil, err
	}
	if err := b.loadHistories(ctx, opts); err != nil {
		return nil, err
	}
	if len(b.Benchmarks) == 0 {
		b.Problems = append(b.Problems, filepath.Join(b.ID, session.BenchmarkDir)+": no benchmark/*.json summaries or dst-history/1 *.jsonl histories found")
	}
	if err := b.loadMetrics(ctx); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(filepath.Join(dir, session.LogsDir)); err == nil {
		for _, e := range ents {
			b.Logs = append(b.Logs, filepath.Join(session.LogsDir, e.Name()))
		}
	}
	for _, r := range b.Benchmarks {
		b.Totals.Ops += r.Ops
		b.Totals.Failures += r.Failures
		for k, v := range r.Errors {
			b.Totals.Errors[k] += v
		}
	}
	if b.Totals.Ops > 0 {
		b.Totals.ErrorRate = float64(b.Totals.Failures) / float64(b.Totals.Ops)
	}
	if !opts.NoPrevious {
		// session.Previous already knows run_<ts> siblings apart from
		// plan sessions; it never fails, only answers "".
		if prev, _ := session.Previous(dir); prev != "" {
			p, err := Analyze(ctx, prev, Options{MaxErrorRate: opts.MaxErrorRate, NoPrevious: true})
			if err != nil {
				b.Problems = append(b.Problems, fmt.Sprintf("%s: previous run not analysed: %v", prev, err))
			} else {
				b.Previous = compareBenchRuns(p, b)
			}
		}
	}
	b.findPatterns()
	b.recommend()
	b.Failed = b.Totals.ErrorRate > b.MaxErrorRate || b.Totals.Ops == 0
	b.Verdict, b.VerdictReason = b.benchVerdict()
	b.Failed = b.Failed || b.Verdict == Fail
	b.SessionVerdict = b.sessionVerdict()
	b.Headline = b.headline()
	if b.VerdictReason != "" {
		b.Headline += "; " + b.VerdictReason
	}
	return b, nil
}

func (b *Run) loadBenchmarks(ctx context.Context) error {
	files, _ := filepath.Glob(filepath.Join(b.Dir, session.BenchmarkDir, "*.json"))
	sort.Strings(files)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("benchmark run: %w", err)
		}
		rel := filepath.Join(b.ID, session.BenchmarkDir, filepath.Base(f))
		data, err := os.ReadFile(f)
		if err != nil {
			b.Problems = append(b.Problems, fmt.Sprintf("%s: %v", rel, err))
			continue
		}
		rs, err := parseBenchJSON(rel, data)
		if err != nil {
			b.Problems = append(b.Problems, err.Error())
		}
		b.Benchmarks = append(b.Benchmarks, rs...)
	}
	return nil
}

// readEpoch reads the start_time / end_time files (epoch seconds).
func (b *Run) readEpoch(dir, name string) *time.Time {
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || sec <= 0 {
		rel, _ := filepath.Rel(filepath.Dir(b.Dir), p)
		b.Problems = append(b.Problems, fmt.Sprintf("%s:1: not epoch seconds: %q", rel, strings.TrimSpace(string(data))))
		return nil
	}
	t := time.Unix(sec, 0).UTC()
	return &t
}

func (b *Run) loadMetrics(ctx context.Context) error {
	mdir := filepath.Join(b.Dir, session.MetricsDir)
	if !benchIsDir(mdir) {
		b.Problems = append(b.Problems, filepath.Join(b.ID, session.MetricsDir)+": no metrics directory; host resources unknown")
		return nil
	}
	b.Start, b.End = b.readEpoch(mdir, "start_time"), b.readEpoch(mdir, "end_time")
	hosts := map[string]*HostUsage{}
	// One host per sub-directory; flat files belong to the run's single
	// host, named after the directory it was collected from.
	dirs := map[string]string{mdir: "run-host"}
	if ents, err := os.ReadDir(mdir); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				dirs[filepath.Join(mdir, e.Name())] = e.Name()
			}
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("benchmark run: %w", err)
		}
		b.loadRawHost(d, dirs[d], hosts)
		csvs, _ := filepath.Glob(filepath.Join(d, "*.csv"))
		sort.Strings(csvs)
		for _, f := range csvs {
			rel, _ := filepath.Rel(filepath.Dir(b.Dir), f)
			data, err := os.ReadFile(f)
			if err != nil {
				b.Problems = append(b.Problems, fmt.Sprintf("%s: %v", rel, err))
				continue
			}
			rows, probs := parseMetricsCSV(rel, data)
			b.Problems = append(b.Problems, probs...)
			byHost := map[string][]hostSample{}
			var order []string
			for _, r := range rows {
				if _, ok := byHost[r.Host]; !ok {
					order = append(order, r.Host)
				}
				byHost[r.Host] = append(byHost[r.Host], r.hostSample)
			}
			for _, h := range order {
				addSamples(hosts, h, "csv", byHost[h], true)
			}
		}
	}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		u := hosts[h]
		if len(u.CPU) > 0 {
			u.MeanCPU = benchMean(u.CPU)
		}
		b.Hosts = append(b.Hosts, *u)
	}
	return nil
}

func (b *Run) loadRawHost(dir, host string, hosts map[string]*HostUsage) {
	parsers := []struct {
		file string
		fn   func(string, []byte) ([]hostSample, []string)
		// cpuSeries: this source feeds the saturation series; mpstat is
		// preferred (per-interval, no since-boot line), then vmstat, then top.
		cpuSeries int
	}{{"mpstat.log", parseMpstat, 3}, {"vmstat.log", parseVmstat, 2}, {"top.log", parseTopLog, 1}, {"iostat.log", parseIostat, 0}}
	best := 0
	var absent []string
	for _, p := range parsers {
		f := filepath.Join(dir, p.file)
		data, err := os.ReadFile(f)
		if err != nil {
			absent = append(absent, p.file)
			continue
		}
		rel, _ := filepath.Rel(filepath.Dir(b.Dir), f)
		s, probs := p.fn(rel, data)
		b.Problems = append(b.Problems, probs...)
		if len(s) == 0 {
			if len(probs) == 0 {
				b.Problems = append(b.Problems, rel+": no samples (the first vmstat/iostat report is the since-boot average and is not counted)")
			}
			continue
		}
		series := p.cpuSeries > best && hasCPU(s)
		if series {
			best = p.cpuSeries
		}
		addSamples(hosts, host, strings.TrimSuffix(p.file, ".log"), s, series)
	}
	if len(absent) < len(parsers) {
		// A sampler dir with some logs missing: say what that costs, so a
		// host without sysstat (iostat, mpstat) reads as a gap, not as idle.
		rel, _ := filepath.Rel(filepath.Dir(b.Dir), dir)
		for _, f := range absent {
			b.Problems = append(b.Problems, fmt.Sprintf("%s: no %s (%s not installed on the host?): %s unknown", rel, f, strings.TrimSuffix(f, ".log"), samplerCovers[f]))
		}
	}
}

// samplerCovers is what each raw sampler log measures, for the note on a
// missing one (docs/real-env-test.md §8).
var samplerCovers = map[string]string{
	"mpstat.log": "per-CPU busy and iowait (package sysstat)",
	"iostat.log": "disk utilisation and throughput (package sysstat)",
	"vmstat.log": "cpu, memory and iowait (package procps)",
	"top.log":    "cpu and memory from top (package procps)",
}

func hasCPU(s []hostSample) bool {
	for _, x := range s {
		if x.CPU >= 0 {
			return true
		}
	}
	return false
}

func addSamples(hosts map[string]*HostUsage, host, source string, s []hostSample, cpuSeries bool) {
	u, ok := hosts[host]
	if !ok {
		u = &HostUsage{Host: host, PeakCPU: -1, PeakIOWait: -1, PeakMem: -1, PeakDisk: -1, PeakDiskKB: -1, PeakNet: -1}
		hosts[host] = u
	}
	u.Sources = append(u.Sources, source)
	if len(s) > u.Samples {
		u.Samples = len(s)
	}
	if cpuSeries {
		u.CPU = u.CPU[:0]
	}
	for _, x := range s {
		u.PeakCPU = math.Max(u.PeakCPU, x.CPU)
		u.PeakIOWait = math.Max(u.PeakIOWait, x.IOWait)
		u.PeakMem = math.Max(u.PeakMem, x.Mem)
		u.PeakDisk = math.Max(u.PeakDisk, x.Disk)
		u.PeakDiskKB = math.Max(u.PeakDiskKB, x.DiskKB)
		u.PeakNet = math.Max(u.PeakNet, x.Net)
		if cpuSeries && x.CPU >= 0 {
			u.CPU = append(u.CPU, x.CPU)
		}
	}
}

// longestRun is the longest streak of consecutive values ≥ threshold.
func longestRun(vs []float64, threshold float64) int {
	best, cur := 0, 0
	for _, v := range vs {
		if v >= threshold {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

func (b *Run) add(kind, target, format string, a ...any) {
	b.Patterns = append(b.Patterns, Pattern{Kind: kind, Target: target, Detail: fmt.Sprintf(format, a...)})
}

// findPatterns names what the figures show, host by host and benchmark by
// benchmark, in a fixed order so reports of two runs line up.
func (b *Run) findPatterns() {
	for _, h := range b.Hosts {
		if n := longestRun(h.CPU, benchCPUSaturated); n >= benchSustained {
			b.add("cpu-saturation", h.Host, "cpu ≥ %.0f%% for %d consecutive samples (peak %.1f%%, mean %.1f%%)", benchCPUSaturated, n, h.PeakCPU, h.MeanCPU)
		}
		if h.PeakIOWait >= benchIOWaitHigh {
			b.add("iowait-high", h.Host, "iowait peaked at %.1f%% (threshold %.0f%%)", h.PeakIOWait, benchIOWaitHigh)
		}
		if h.PeakDisk >= benchDiskSaturated {
			kb := ""
			if h.PeakDiskKB >= 0 {
				kb = fmt.Sprintf(", peak %.0f kB/s", h.PeakDiskKB)
			}
			b.add("disk-saturation", h.Host, "busiest device at %.1f%% utilisation%s", h.PeakDisk, kb)
		}
		if h.PeakMem >= benchMemPressure {
			b.add("memory-pressure", h.Host, "memory use peaked at %.1f%%", h.PeakMem)
		}
	}
	for _, r := range b.Benchmarks {
		if r.TargetRate > 0 && r.Throughput < benchTargetShortfall*r.TargetRate {
			b.add("throughput-below-target", r.Name, "achieved %.1f ops/s of %.1f target (%.0f%%)", r.Throughput, r.TargetRate, 100*r.Throughput/r.TargetRate)
		}
		if rate := r.ErrorRate(); rate > b.MaxErrorRate {
			b.add("error-rate-high", r.Name, "%.2f%% of %d ops failed (threshold %.2f%%); top category %s", 100*rate, r.Ops, 100*b.MaxErrorRate, topCategory(r.Errors))
		}
		s := r.Series
		if len(s) == 0 {
			continue
		}
		step := seriesStep(s)
		var stalls []string
		for i, p := range s {
			if p.Ops == 0 && i < len(s)-1 {
				stalls = append(stalls, fmt.Sprintf("t=%gs", p.T))
			}
		}
		if len(stalls) > 0 {
			b.add("generator-stall", r.Name, "%d interval(s) with 0 ops: %s", len(stalls), strings.Join(stalls, ", "))
		}
		if len(s) >= 4 {
			h := len(s) / 2
			t1, t2 := seriesRate(s[:h], step), seriesRate(s[h:], step)
			l1, l2 := seriesP99(s[:h]), seriesP99(s[h:])
			// A run held at its target rate is flat by design: flat
			// throughput there says nothing about capacity.
			atTarget := r.TargetRate > 0 && math.Max(t1, t2) >= benchTargetShortfall*r.TargetRate
			if !atTarget && t1 > 0 && l1 > 0 && t2 < t1*(1+benchPlateauGrowth) && l2 >= benchLatencyClimb*l1 {
				b.add("throughput-plateau-latency-climb", r.Name, "throughput %.1f → %.1f ops/s between halves while mean interval p99 rose %.1f → %.1f ms (×%.1f): saturation point near %.0f ops/s",
					t1, t2, l1, l2, l2/l1, math.Max(t1, t2))
			}
		}
		var tOps, tErr int64
		for _, p := range s {
			tOps += p.Ops
			tErr += p.Errors
		}
		if tOps > 0 && tErr > 0 {
			base := float64(tErr) / float64(tOps)
			var bursts []string
			for i := 0; i < len(s); i++ {
				j := i
				for j < len(s) && isBurst(s[j], base) {
					j++
				}
				if j > i {
					var e int64
					for _, p := range s[i:j] {
						e += p.Errors
					}
					bursts = append(bursts, fmt.Sprintf("t=%g–%gs (%d errors)", s[i].T, s[j-1].T+step, e))
					i = j - 1
				}
			}
			if len(bursts) > 0 {
				b.add("error-burst", r.Name, "errors cluster in %s; run-wide error rate %.2f%%", strings.Join(bursts, ", "), 100*base)
			}
		}
	}
}

func isBurst(p Point, base float64) bool {
	if p.Ops <= 0 {
		return p.Errors > 0
	}
	ratio := float64(p.Errors) / float64(p.Ops)
	return ratio >= benchBurstMinRatio && ratio >= benchBurstFactor*base
}

func seriesRate(s []Point, step float64) float64 {
	var ops int64
	for _, p := range s {
		ops += p.Ops
	}
	return float64(ops) / (float64(len(s)) * step)
}

func seriesP99(s []Point) float64 {
	var v []float64
	for _, p := range s {
		if p.P99 > 0 {
			v = append(v, p.P99)
		}
	}
	return benchMean(v)
}

func topCategory(m map[string]int64) string {
	best, n := "none", int64(-1)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	if n < 0 {
		return best
	}
	return fmt.Sprintf("%q (%d)", best, n)
}

func (b *Run) patternsOf(kind string) []Pattern {
	var out []Pattern
	for _, p := range b.Patterns {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// recommend turns each pattern (and each regression against the previous
// run) into one actionable sentence citing its figure.
func (b *Run) recommend() {
	rec := func(format string, a ...any) {
		b.Recommendations = append(b.Recommendations, fmt.Sprintf(format, a...))
	}
	cpuBound := map[string]bool{}
	for _, p := range b.patternsOf("cpu-saturation") {
		cpuBound[p.Target] = true
		rec("%s is CPU-bound (%s): profile the hottest process in %s/top.log, or add cores before raising the target rate — throughput measured past this point is the host's ceiling, not the SUT's.", p.Target, p.Detail, "metrics")
	}
	for _, p := range b.patternsOf("iowait-high") {
		rec("%s waits on storage (%s): check the device in iostat.log, move data to faster storage or reduce fsync frequency before attributing latency to the SUT.", p.Target, p.Detail)
	}
	for _, p := range b.patternsOf("disk-saturation") {
		rec("%s's disk is saturated (%s): the run is I/O-bound; spread data over more devices or lower the write rate.", p.Target, p.Detail)
	}
	for _, p := range b.patternsOf("memory-pressure") {
		rec("%s is short of memory (%s): check for swapping and cache eviction; give the SUT more memory or shrink the working set.", p.Target, p.Detail)
	}
	for _, p := range b.patternsOf("throughput-plateau-latency-climb") {
		rec("%s saturates (%s): run latency-SLO tests below that rate and treat it as the capacity figure for this host size.", p.Target, p.Detail)
	}
	for _, p := range b.patternsOf("throughput-below-target") {
		why := "no host was saturated, so suspect the load generator (client threads, connection pool, rate limiter) first"
		if len(cpuBound) > 0 || len(b.patternsOf("disk-saturation")) > 0 || len(b.patternsOf("iowait-high")) > 0 {
			why = "a host was saturated (see above), so the target exceeds this setup's capacity"
		}
		rec("%s missed its target (%s): %s.", p.Target, p.Detail, why)
	}
	for _, p := range b.patternsOf("generator-stall") {
		rec("%s's generator stalled (%s): the load was not continuous, so averages understate the SUT; check the client logs for pauses before trusting this run.", p.Target, p.Detail)
	}
	for _, p := range b.patternsOf("error-rate-high") {
		rec("%s failed too often (%s): fix the dominant error category before reading any latency figure from this run.", p.Target, p.Detail)
	}
	for _, p := range b.patternsOf("error-burst") {
		rec("%s had error bursts (%s): correlate those windows with logs/ and dmesg for restarts, GC pauses or connection resets.", p.Target, p.Detail)
	}
	if b.Previous != nil {
		for _, c := range b.Previous.Changes {
			if c.P99Before != nil && c.P99After != nil && *c.P99Before > 0 && *c.P99After > *c.P99Before*(1+benchRegression) {
				rec("%s p99 regressed %.1f → %.1f ms (%+.0f%%) since %s: bisect what changed between the runs (build, config, host).", c.Name, *c.P99Before, *c.P99After, 100*(*c.P99After / *c.P99Before - 1), b.Previous.Previous)
			}
			if c.ThroughputBefore != nil && c.ThroughputAfter != nil && *c.ThroughputBefore > 0 && *c.ThroughputAfter < *c.ThroughputBefore*(1-benchRegression) {
				rec("%s throughput dropped %.1f → %.1f ops/s (%+.0f%%) since %s: bisect what changed between the runs.", c.Name, *c.ThroughputBefore, *c.ThroughputAfter, 100*(*c.ThroughputAfter / *c.ThroughputBefore - 1), b.Previous.Previous)
			}
		}
	}
	if len(b.Hosts) == 0 {
		rec("No host metrics were collected: run collect-metrics.sh start/stop around the benchmark so saturation can be told from SUT limits.")
	}
	if len(b.Benchmarks) == 0 {
		rec("No benchmark summary was found: make the benchmark write JSON into benchmark/ (shapes listed in the report).")
	}
	if len(b.Recommendations) == 0 {
		rec("No saturation or error pattern: this run can serve as the baseline; raise the target rate until a pattern appears to find the capacity limit.")
	}
}

func (b *Run) headline() string {
	if len(b.Benchmarks) == 0 {
		return "no benchmark results found"
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%d benchmark(s), %d ops, %d failures (%.2f%% errors)", len(b.Benchmarks), b.Totals.Ops, b.Totals.Failures, 100*b.Totals.ErrorRate))
	if b.Totals.ErrorRate > b.MaxErrorRate {
		parts = append(parts, fmt.Sprintf("error rate above the %.2f%% threshold", 100*b.MaxErrorRate))
	}
	kinds := map[string]bool{}
	var ks []string
	for _, p := range b.Patterns {
		if !kinds[p.Kind] {
			kinds[p.Kind] = true
			ks = append(ks, p.Kind)
		}
	}
	if len(ks) > 0 {
		parts = append(parts, "patterns: "+strings.Join(ks, ", "))
	} else {
		parts = append(parts, "no saturation or error pattern")
	}
	return strings.Join(parts, "; ")
}

func compareBenchRuns(prev, cur *Run) *Comparison {
	c := &Comparison{Previous: prev.ID, HostCPU: map[string][2]float64{}}
	before := map[string]Result{}
	for _, r := range prev.Benchmarks {
		before[r.Name] = r
	}
	seen := map[string]bool{}
	figs := func(r Result) (t, p, e *float64) {
		return fptr(r.Throughput), r.Latency.P99, fptr(r.ErrorRate())
	}
	for _, r := range cur.Benchmarks {
		seen[r.Name] = true
		ch := Change{Name: r.Name}
		ch.ThroughputAfter, ch.P99After, ch.ErrRateAfter = figs(r)
		if p, ok := before[r.Name]; ok {
			ch.ThroughputBefore, ch.P99Before, ch.ErrRateBefore = figs(p)
		}
		c.Changes = append(c.Changes, ch)
	}
	for _, r := range prev.Benchmarks {
		if !seen[r.Name] {
			ch := Change{Name: r.Name}
			ch.ThroughputBefore, ch.P99Before, ch.ErrRateBefore = figs(r)
			c.Changes = append(c.Changes, ch)
		}
	}
	pc := map[string]float64{}
	for _, h := range prev.Hosts {
		pc[h.Host] = h.PeakCPU
	}
	for _, h := range cur.Hosts {
		if p, ok := pc[h.Host]; ok {
			c.HostCPU[h.Host] = [2]float64{p, h.PeakCPU}
		}
	}
	return c
}

func optMS(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f", *p)
}

func benchPct(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}

// benchCheckLines is the consistency-check section of both reports: one
// line per checked history, or the note that no model was named.
func benchCheckLines(b *Run) []string {
	var out []string
	histories := 0
	for _, r := range b.Benchmarks {
		if r.Format == history.Schema {
			histories++
		}
		c := r.Check
		if c == nil {
			continue
		}
		l := fmt.Sprintf("%s: %s (model %s) %s — %s", r.Name, c.Checker, c.Model, c.Outcome, c.Evidence)
		if len(c.Dirty) > 0 {
			l += "; dirty initial state (not a SUT anomaly): " + strings.Join(render.FirstN(c.Dirty, 3), "; ") + "; " + checker.DirtyAdvice
		} else if c.Reason != "" {
			l += "; " + c.Reason
		}
		if len(c.Anomalies) > 0 {
			l += "; anomalies: " + strings.Join(c.Anomalies, "; ")
		}
		out = append(out, l)
	}
	if histories > 0 && len(out) == 0 {
		out = append(out, NoModelNote)
	}
	return out
}

// benchNoResults is what both reports say when benchmark/ held nothing.
const benchNoResults = "No benchmark results found in benchmark/ (accepted shapes: dstgen-native JSON, dst-history/1 history.jsonl, fio --output-format=json, k6 --summary-export)."

// benchStatus is the run result both reports show: FAIL or PASS.
func benchStatus(b *Run) string {
	switch {
	case b.Failed:
		return "FAIL"
	case b.Verdict == Inconclusive:
		return "INCONCLUSIVE"
	}
	return "PASS"
}

// benchStatusRule says what makes a run FAIL.
func benchStatusRule(b *Run) string {
	return fmt.Sprintf("fails when the error rate exceeds %.2f%%, nothing ran or a history's checker found an anomaly; inconclusive when a check could not decide", 100*b.MaxErrorRate)
}

// benchSummary is the summary table of both reports: one row per benchmark
// and a total row; "—" where a figure is not reported.
func benchSummary(b *Run) (cols []string, rows [][]string) {
	cols = []string{"Benchmark", "Source", "Ops", "Failures", "Error rate %", "Throughput (ops/s)", "Target (ops/s)", "Achieved vs target", "Mean (ms)", "p50 (ms)", "p95 (ms)", "p99 (ms)", "Max (ms)"}
	if len(b.Benchmarks) == 0 {
		return cols, nil
	}
	for _, r := range b.Benchmarks {
		target, vs := "—", "—"
		if r.TargetRate > 0 {
			target = fmt.Sprintf("%.1f", r.TargetRate)
			vs = fmt.Sprintf("%.0f%%", 100*r.Throughput/r.TargetRate)
		}
		rows = append(rows, []string{r.Name, r.Format, strconv.FormatInt(r.Ops, 10), strconv.FormatInt(r.Failures, 10), fmt.Sprintf("%.2f", 100*r.ErrorRate()),
			fmt.Sprintf("%.1f", r.Throughput), target, vs, optMS(r.Latency.Mean), optMS(r.Latency.P50), optMS(r.Latency.P95), optMS(r.Latency.P99), optMS(r.Latency.Max)})
	}
	rows = append(rows, []string{"total", "—", strconv.FormatInt(b.Totals.Ops, 10), strconv.FormatInt(b.Totals.Failures, 10), fmt.Sprintf("%.2f", 100*b.Totals.ErrorRate), "—", "—", "—", "—", "—", "—", "—", "—"})
	return cols, rows
}

func meanOrNeg(h HostUsage) float64 {
	if len(h.CPU) == 0 {
		return -1
	}
	return h.MeanCPU
}

func pctPtr(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f", 100**p)
}

// RenderJSON renders a benchmark run's report.json (indented,
// trailing newline).
func RenderJSON(b *Run) ([]byte, error) {
	js, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(js, '\n'), nil
}

// WriteReport writes report.md, report.json and report.html into dir
// (normally run_<ts>/findings), joining the errors of files it could not
// write.
func WriteReport(b *Run, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write benchmark report: create %s: %w", dir, err)
	}
	js, err := RenderJSON(b)
	if err != nil {
		return fmt.Errorf("write benchmark report: %w", err)
	}
	return errors.Join(
		atomicfile.Write(filepath.Join(dir, render.MarkdownFile), RenderMarkdown(b), 0o644),
		atomicfile.Write(filepath.Join(dir, render.JSONFile), js, 0o644),
		atomicfile.Write(filepath.Join(dir, render.HTMLFile), RenderHTML(b), 0o644),
	)
}
