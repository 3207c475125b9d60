package bench

// Parsers for what a Real Env Test run leaves under results/run_<ts>/:
// benchmark summaries (dstgen-native, fio, k6) and the raw sampler logs of
// collect-metrics.sh (vmstat, iostat -x, mpstat -P ALL, top -bn1) or
// metrics CSV. Every parser is total: bad lines become problems with
// file:line, never a panic, and whatever parsed is kept.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/internal/stats"
)

// benchLatency holds latency figures in milliseconds; nil means the source
// did not report that figure (k6 omits p99 unless asked), which the report
// shows as "—" rather than as a made-up zero.
type benchLatency struct {
	Mean *float64 `json:"mean_ms,omitempty"`
	P50  *float64 `json:"p50_ms,omitempty"`
	P95  *float64 `json:"p95_ms,omitempty"`
	P99  *float64 `json:"p99_ms,omitempty"`
	Max  *float64 `json:"max_ms,omitempty"`
}

// Point is one measurement interval of a benchmark's time series.
type Point struct {
	T      float64 `json:"t"` // seconds since the benchmark started
	Ops    int64   `json:"ops"`
	Errors int64   `json:"errors"`
	P99    float64 `json:"p99_ms"`
}

// Result is one benchmark summary normalised from any accepted shape.
type Result struct {
	File       string           `json:"file"`
	Name       string           `json:"name"`
	Format     string           `json:"format"` // dstgen | fio | k6
	TargetRate float64          `json:"target_rate,omitempty"`
	DurationS  float64          `json:"duration_s,omitempty"`
	Ops        int64            `json:"ops"`
	Failures   int64            `json:"failures"`
	Errors     map[string]int64 `json:"errors,omitempty"`
	Latency    benchLatency     `json:"latency"`
	Throughput float64          `json:"throughput"` // achieved ops/s
	Series     []Point          `json:"series,omitempty"`
	// Check is the checker's verdict on a dst-history/1 benchmark history
	// when a model was named (env.yml benchmark.model or --model).
	Check *Check `json:"check,omitempty"`
}

// ErrorRate is failures over ops (0 when nothing ran).
func (b Result) ErrorRate() float64 {
	if b.Ops <= 0 {
		return 0
	}
	return float64(b.Failures) / float64(b.Ops)
}

func fptr(v float64) *float64 { return &v }

// parseBenchJSON recognises the shape of one benchmark/*.json file and
// normalises it. fio emits one result per job and direction, so it can
// return several.
func parseBenchJSON(name string, data []byte) ([]Result, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s:%d: not a JSON object: %w", name, render.JSONErrorLine(data, err), err)
	}
	base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	_, fioVer := top["fio version"]
	_, jobs := top["jobs"]
	switch {
	case fioVer || jobs:
		return parseFio(name, base, data)
	case top["metrics"] != nil:
		r, err := parseK6(name, base, data)
		if err != nil {
			return nil, err
		}
		return []Result{r}, nil
	case top["ops"] != nil || top["latency_ms"] != nil || top["samples_ms"] != nil || top["series"] != nil:
		r, err := parseNativeBench(name, base, data)
		if err != nil {
			return nil, err
		}
		return []Result{r}, nil
	}
	return nil, fmt.Errorf("%s:1: unrecognised benchmark JSON: expected the dstgen shape (\"ops\", \"latency_ms\", \"samples_ms\" or \"series\"), fio (\"jobs\") or k6 --summary-export (\"metrics\")", name)
}

type nativeBench struct {
	Name       string           `json:"name"`
	TargetRate float64          `json:"target_rate"`
	DurationS  float64          `json:"duration_s"`
	Ops        int64            `json:"ops"`
	Errors     map[string]int64 `json:"errors"`
	LatencyMS  *struct {
		Mean *float64 `json:"mean"`
		P50  *float64 `json:"p50"`
		P95  *float64 `json:"p95"`
		P99  *float64 `json:"p99"`
	} `json:"latency_ms"`
	SamplesMS []float64 `json:"samples_ms"`
	Series    []struct {
		T      float64 `json:"t"`
		Ops    int64   `json:"ops"`
		Errors int64   `json:"errors"`
		P99MS  float64 `json:"p99_ms"`
	} `json:"series"`
}

func parseNativeBench(name, base string, data []byte) (Result, error) {
	var nb nativeBench
	if err := json.Unmarshal(data, &nb); err != nil {
		return Result{}, fmt.Errorf("%s:%d: dstgen benchmark JSON: %w", name, render.JSONErrorLine(data, err), err)
	}
	r := Result{File: name, Name: nb.Name, Format: "dstgen", TargetRate: nb.TargetRate,
		DurationS: nb.DurationS, Ops: nb.Ops, Errors: map[string]int64{}}
	if r.Name == "" {
		r.Name = base
	}
	if nb.Ops < 0 || nb.DurationS < 0 || nb.TargetRate < 0 {
		return r, fmt.Errorf("%s:1: negative ops, duration_s or target_rate", name)
	}
	for cat, n := range nb.Errors {
		if n < 0 {
			return r, fmt.Errorf("%s:1: negative error count for category %q", name, cat)
		}
		r.Errors[cat] += n
		r.Failures += n
	}
	if nb.LatencyMS != nil {
		r.Latency = benchLatency{Mean: nb.LatencyMS.Mean, P50: nb.LatencyMS.P50, P95: nb.LatencyMS.P95, P99: nb.LatencyMS.P99}
	}
	if len(nb.SamplesMS) > 0 {
		s := append([]float64(nil), nb.SamplesMS...)
		sort.Float64s(s)
		// Explicit summary figures win; samples fill the gaps.
		if r.Latency.Mean == nil {
			r.Latency.Mean = fptr(benchMean(s))
		}
		if r.Latency.P50 == nil {
			r.Latency.P50 = fptr(stats.Percentile(s, 0.50))
		}
		if r.Latency.P95 == nil {
			r.Latency.P95 = fptr(stats.Percentile(s, 0.95))
		}
		if r.Latency.P99 == nil {
			r.Latency.P99 = fptr(stats.Percentile(s, 0.99))
		}
	}
	var seriesOps int64
	for _, p := range nb.Series {
		r.Series = append(r.Series, Point{T: p.T, Ops: p.Ops, Errors: p.Errors, P99: p.P99MS})
		seriesOps += p.Ops
	}
	if r.Ops == 0 && seriesOps > 0 {
		r.Ops = seriesOps
	}
	if r.DurationS == 0 && len(r.Series) > 0 {
		r.DurationS = r.Series[len(r.Series)-1].T + seriesStep(r.Series)
	}
	if r.DurationS > 0 {
		r.Throughput = float64(r.Ops) / r.DurationS
	}
	return r, nil
}

// seriesStep is the measurement interval of a series (1 s when it cannot be
// told), used to turn per-interval counts into rates.
func seriesStep(s []Point) float64 {
	if len(s) >= 2 && s[1].T > s[0].T {
		return s[1].T - s[0].T
	}
	return 1
}

type fioDir struct {
	IOPS     float64 `json:"iops"`
	TotalIOs int64   `json:"total_ios"`
	Runtime  float64 `json:"runtime"` // ms
	ClatNS   *struct {
		Mean       float64            `json:"mean"`
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

type fioOut struct {
	GlobalOptions map[string]string `json:"global options"`
	Jobs          []struct {
		JobName    string            `json:"jobname"`
		Error      int               `json:"error"`
		TotalErr   int64             `json:"total_err"`
		JobOptions map[string]string `json:"job options"`
		Read       *fioDir           `json:"read"`
		Write      *fioDir           `json:"write"`
	} `json:"jobs"`
}

func parseFio(name, base string, data []byte) ([]Result, error) {
	var f fioOut
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s:%d: fio JSON: %w", name, render.JSONErrorLine(data, err), err)
	}
	var out []Result
	for i, j := range f.Jobs {
		jn := j.JobName
		if jn == "" {
			jn = fmt.Sprintf("%s-job%d", base, i)
		}
		rate := j.JobOptions["rate_iops"]
		if rate == "" {
			rate = f.GlobalOptions["rate_iops"]
		}
		rr, wr := splitRate(rate)
		var dirs []Result
		for _, d := range []struct {
			name   string
			dir    *fioDir
			target float64
		}{{"read", j.Read, rr}, {"write", j.Write, wr}} {
			if d.dir == nil || d.dir.TotalIOs <= 0 {
				continue
			}
			r := Result{File: name, Name: jn + "/" + d.name, Format: "fio", TargetRate: d.target,
				DurationS: d.dir.Runtime / 1000, Ops: d.dir.TotalIOs, Throughput: d.dir.IOPS, Errors: map[string]int64{}}
			if c := d.dir.ClatNS; c != nil {
				r.Latency.Mean = fptr(c.Mean / 1e6)
				for k, v := range c.Percentile {
					p, err := strconv.ParseFloat(k, 64)
					if err != nil {
						continue
					}
					switch p {
					case 50:
						r.Latency.P50 = fptr(v / 1e6)
					case 95:
						r.Latency.P95 = fptr(v / 1e6)
					case 99:
						r.Latency.P99 = fptr(v / 1e6)
					}
				}
			}
			dirs = append(dirs, r)
		}
		// fio counts errors per job, not per direction; charge them to the
		// job's first direction so totals stay right.
		if len(dirs) > 0 {
			if j.TotalErr > 0 {
				dirs[0].Errors["io error"] += j.TotalErr
				dirs[0].Failures += j.TotalErr
			}
			if j.Error != 0 {
				dirs[0].Errors[fmt.Sprintf("job errno %d", j.Error)]++
				dirs[0].Failures++
			}
		}
		out = append(out, dirs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s:1: fio JSON has no job with completed I/O", name)
	}
	return out, nil
}

// splitRate reads fio's rate_iops "r[,w]" syntax.
func splitRate(s string) (read, write float64) {
	if s == "" {
		return 0, 0
	}
	parts := strings.SplitN(s, ",", 2)
	read, _ = strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	write = read
	if len(parts) == 2 {
		write, _ = strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
	}
	return read, write
}

func parseK6(name, base string, data []byte) (Result, error) {
	var k struct {
		Metrics map[string]json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal(data, &k); err != nil {
		return Result{}, fmt.Errorf("%s:%d: k6 JSON: %w", name, render.JSONErrorLine(data, err), err)
	}
	// --summary-export writes metric values flat; handleSummary() data nests
	// them under "values". Accept both.
	metric := func(m string) map[string]float64 {
		raw, ok := k.Metrics[m]
		if !ok {
			return nil
		}
		var flat map[string]json.RawMessage
		if json.Unmarshal(raw, &flat) != nil {
			return nil
		}
		if v, ok := flat["values"]; ok {
			if json.Unmarshal(v, &flat) != nil {
				return nil
			}
		}
		out := map[string]float64{}
		for key, v := range flat {
			var f float64
			if json.Unmarshal(v, &f) == nil {
				out[key] = f
			}
		}
		return out
	}
	reqs := metric("http_reqs")
	if reqs == nil {
		return Result{}, fmt.Errorf("%s:1: k6 summary has no metrics.http_reqs", name)
	}
	r := Result{File: name, Name: base, Format: "k6", Ops: int64(reqs["count"]), Throughput: reqs["rate"], Errors: map[string]int64{}}
	if r.Throughput > 0 {
		r.DurationS = float64(r.Ops) / r.Throughput
	}
	if d := metric("http_req_duration"); d != nil {
		get := func(key string) *float64 {
			if v, ok := d[key]; ok {
				return fptr(v)
			}
			return nil
		}
		r.Latency = benchLatency{Mean: get("avg"), P50: get("med"), P95: get("p(95)"), P99: get("p(99)")}
	}
	// http_req_failed is a Rate whose "passes" are the failed requests
	// (k6 counts true values as passes).
	if f := metric("http_req_failed"); f != nil {
		n := int64(f["passes"])
		if _, ok := f["passes"]; !ok {
			n = int64(math.Round(f["rate"] * float64(r.Ops)))
		}
		if n > 0 {
			r.Errors["http_req_failed"] = n
			r.Failures = n
		}
	}
	return r, nil
}

func benchMean(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	var t float64
	for _, v := range s {
		t += v
	}
	return t / float64(len(s))
}

// hostSample is one resource sample. Negative fields mean "not measured by
// this source".
type hostSample struct {
	T      time.Time // zero when the source carries no timestamp
	CPU    float64   // % busy
	IOWait float64   // %
	Mem    float64   // % used
	Disk   float64   // % util, busiest device
	DiskKB float64   // kB/s read+write, busiest device
	Net    float64   // bytes/s as the CSV states it
}

func blankSample() hostSample {
	return hostSample{CPU: -1, IOWait: -1, Mem: -1, Disk: -1, DiskKB: -1, Net: -1}
}

// lineScanner yields lines with 1-based numbers; long lines are tolerated
// up to 1 MiB so a garbage line cannot stop the scan.
func lineScanner(data []byte) *bufio.Scanner {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return sc
}

func atofs(fields []string) ([]float64, bool) {
	out := make([]float64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(strings.Replace(f, ",", ".", 1), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// parseVmstat reads `vmstat <i>` output. The first data line is the average
// since boot, not a sample of the run, so it is dropped.
func parseVmstat(name string, data []byte) ([]hostSample, []string) {
	var out []hostSample
	var probs []string
	col := map[string]int{}
	ncol := 0 // header width; duplicate names make len(col) smaller
	seenData := false
	sc := lineScanner(data)
	for ln := 1; sc.Scan(); ln++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "procs") {
			continue
		}
		if f[0] == "r" {
			col, ncol = columns(f), len(f)
			continue
		}
		idI, okID := col["id"]
		waI, okWA := col["wa"]
		if !okID || len(f) < ncol {
			probs = append(probs, fmt.Sprintf("%s:%d: vmstat line not understood (no header seen or too few columns)", name, ln))
			continue
		}
		nums, ok := atofs(f[:ncol])
		if !ok {
			probs = append(probs, fmt.Sprintf("%s:%d: vmstat line has a non-numeric field", name, ln))
			continue
		}
		if !seenData {
			seenData = true
			continue
		}
		s := blankSample()
		s.CPU = clampPct(100 - nums[idI])
		if okWA {
			s.IOWait = clampPct(nums[waI])
		}
		// vmstat -t appends a date and time after the numeric columns.
		if len(f) >= ncol+2 {
			if t, err := time.Parse("2006-01-02 15:04:05", f[ncol]+" "+f[ncol+1]); err == nil {
				s.T = t
			}
		}
		out = append(out, s)
	}
	return out, probs
}

// columns indexes a header row by name; of duplicate names the last wins.
func columns(header []string) map[string]int {
	col := make(map[string]int, len(header))
	for i, h := range header {
		col[h] = i
	}
	return col
}

func clampPct(v float64) float64 { return math.Max(0, math.Min(100, v)) }

// parseIostat reads `iostat -x <i>` output: reports made of an avg-cpu block
// and a device table. The first report is the average since boot and is
// dropped.
func parseIostat(name string, data []byte) ([]hostSample, []string) {
	var out []hostSample
	var probs []string
	var cur *hostSample
	reports := 0
	var devCol map[string]int
	devN := 0 // header width; duplicate names make len(devCol) smaller
	state := ""
	flush := func() {
		if cur != nil {
			if reports > 1 {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	sc := lineScanner(data)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			if state == "dev" {
				state = ""
			}
			continue
		case strings.HasPrefix(f[0], "avg-cpu:"):
			flush()
			reports++
			s := blankSample()
			cur = &s
			state = "cpu"
			continue
		case strings.HasPrefix(f[0], "Device"):
			devCol, devN = columns(f), len(f)
			if cur == nil {
				// iostat -d: no avg-cpu block, a device header starts a report.
				reports++
				s := blankSample()
				cur = &s
			}
			state = "dev"
			continue
		case strings.HasPrefix(line, "Linux "):
			continue
		}
		switch state {
		case "cpu":
			nums, ok := atofs(f)
			if !ok || len(nums) < 6 {
				probs = append(probs, fmt.Sprintf("%s:%d: iostat avg-cpu line not understood", name, ln))
				state = ""
				continue
			}
			// %user %nice %system %iowait %steal %idle
			cur.IOWait = clampPct(nums[3])
			cur.CPU = clampPct(100 - nums[5])
			state = ""
		case "dev":
			if _, ok := devCol["%util"]; !ok || len(f) != devN {
				probs = append(probs, fmt.Sprintf("%s:%d: iostat device line does not match its header", name, ln))
				continue
			}
			nums, ok := atofs(f[1:])
			if !ok {
				probs = append(probs, fmt.Sprintf("%s:%d: iostat device line has a non-numeric field", name, ln))
				continue
			}
			val := func(h string) float64 {
				if i, ok := devCol[h]; ok && i >= 1 {
					return nums[i-1]
				}
				return 0
			}
			cur.Disk = math.Max(cur.Disk, clampPct(val("%util")))
			cur.DiskKB = math.Max(cur.DiskKB, val("rkB/s")+val("wkB/s"))
		default:
			probs = append(probs, fmt.Sprintf("%s:%d: iostat line outside any report block", name, ln))
		}
	}
	flush()
	return out, probs
}

// parseMpstat reads `mpstat -P ALL <i>`: one sample per "all" row; the
// "Average:" rows summarise and are skipped.
func parseMpstat(name string, data []byte) ([]hostSample, []string) {
	var out []hostSample
	var probs []string
	var col map[string]int
	ncol := 0 // header width; duplicate names make len(col) smaller
	sc := lineScanner(data)
	for ln := 1; sc.Scan(); ln++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "Linux") || f[0] == "Average:" {
			continue
		}
		// The time may carry an AM/PM token, shifting every column by one.
		off := 1
		if len(f) > 1 && (f[1] == "AM" || f[1] == "PM") {
			off = 2
		}
		if len(f) <= off {
			probs = append(probs, fmt.Sprintf("%s:%d: mpstat line not understood", name, ln))
			continue
		}
		if f[off] == "CPU" {
			col, ncol = columns(f[off:]), len(f)-off
			continue
		}
		if f[off] != "all" {
			continue
		}
		idle, ok1 := col["%idle"]
		iow, ok2 := col["%iowait"]
		if col == nil || !ok1 || len(f)-off != ncol || idle < 1 || (ok2 && iow < 1) {
			probs = append(probs, fmt.Sprintf("%s:%d: mpstat line does not match its header", name, ln))
			continue
		}
		nums, ok := atofs(f[off+1:])
		if !ok {
			probs = append(probs, fmt.Sprintf("%s:%d: mpstat line has a non-numeric field", name, ln))
			continue
		}
		s := blankSample()
		s.CPU = clampPct(100 - nums[idle-1])
		if ok2 {
			s.IOWait = clampPct(nums[iow-1])
		}
		out = append(out, s)
	}
	return out, probs
}

// parseTopLog reads the collect-metrics.sh top loop: an ISO-8601 timestamp
// line (optionally decorated, e.g. "=== 2026-11-29T09:43:35Z ===") followed
// by `top -bn1 | head -20`. Each "top -" header starts a sample; its
// %Cpu(s) and Mem lines give cpu and memory.
func parseTopLog(name string, data []byte) ([]hostSample, []string) {
	var out []hostSample
	var probs []string
	var cur *hostSample
	var stamp time.Time
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := lineScanner(data)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "top -"):
			flush()
			s := blankSample()
			s.T = stamp
			cur = &s
		case strings.HasPrefix(line, "%Cpu(s):"):
			if cur == nil {
				probs = append(probs, fmt.Sprintf("%s:%d: %%Cpu(s) line before any \"top -\" header", name, ln))
				continue
			}
			idle, ok := topField(line[len("%Cpu(s):"):], "id")
			if !ok {
				probs = append(probs, fmt.Sprintf("%s:%d: %%Cpu(s) line has no idle figure", name, ln))
				continue
			}
			cur.CPU = clampPct(100 - idle)
			if wa, ok := topField(line[len("%Cpu(s):"):], "wa"); ok {
				cur.IOWait = clampPct(wa)
			}
		case strings.Contains(line, "Mem :") || strings.HasPrefix(line, "KiB Mem") || strings.HasPrefix(line, "MiB Mem") || strings.HasPrefix(line, "GiB Mem"):
			if cur == nil {
				probs = append(probs, fmt.Sprintf("%s:%d: Mem line before any \"top -\" header", name, ln))
				continue
			}
			i := strings.Index(line, ":")
			total, ok1 := topField(line[i+1:], "total")
			used, ok2 := topField(line[i+1:], "used")
			if !ok1 || !ok2 || total <= 0 {
				probs = append(probs, fmt.Sprintf("%s:%d: Mem line has no total/used figures", name, ln))
				continue
			}
			cur.Mem = clampPct(100 * used / total)
		default:
			if t, ok := findISOTime(line); ok {
				flush()
				stamp = t
			}
		}
	}
	flush()
	return out, probs
}

// topField finds "<number> <label>" in a comma-separated top summary line.
func topField(s, label string) (float64, bool) {
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		if len(f) >= 2 && strings.TrimRight(f[1], ".") == label {
			v, err := strconv.ParseFloat(f[0], 64)
			if err == nil {
				return v, true
			}
		}
	}
	return 0, false
}

func findISOTime(line string) (time.Time, bool) {
	for _, tok := range strings.Fields(strings.Trim(line, "=-# ")) {
		// Cheap shape test first: failed time.Parse calls allocate, and
		// most top.log lines are process rows.
		if len(tok) < 19 || tok[4] != '-' || tok[10] != 'T' {
			continue
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05-0700"} {
			if t, err := time.Parse(layout, tok); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// metricsCSVRow is a sample from a metrics CSV, keyed by host.
type metricsCSVRow struct {
	Host string
	hostSample
}

// parseMetricsCSV reads `timestamp,host,cpu,mem,disk_io,net` samples
// (header required, columns in any order, extra columns ignored). cpu and
// mem are percent; disk_io is percent device utilisation; net is bytes/s.
// timestamp is RFC 3339 or Unix seconds.
func parseMetricsCSV(name string, data []byte) ([]metricsCSVRow, []string) {
	var out []metricsCSVRow
	var probs []string
	var col map[string]int
	ncol := 0 // header width; duplicate names make len(col) smaller
	sc := lineScanner(data)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if col == nil {
			col = map[string]int{}
			for i, h := range f {
				col[strings.ToLower(h)] = i
			}
			ncol = len(f)
			for _, need := range []string{"timestamp", "host", "cpu"} {
				if _, ok := col[need]; !ok {
					probs = append(probs, fmt.Sprintf("%s:%d: metrics CSV header lacks %q (want timestamp,host,cpu,mem,disk_io,net)", name, ln, need))
					return nil, probs
				}
			}
			continue
		}
		if len(f) != ncol {
			probs = append(probs, fmt.Sprintf("%s:%d: %d fields, header has %d", name, ln, len(f), ncol))
			continue
		}
		row := metricsCSVRow{Host: f[col["host"]], hostSample: blankSample()}
		ts := f[col["timestamp"]]
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			row.T = t
		} else if sec, err := strconv.ParseFloat(ts, 64); err == nil && sec >= 0 && sec < 1e11 {
			row.T = time.Unix(0, int64(sec*1e9)).UTC()
		} else {
			probs = append(probs, fmt.Sprintf("%s:%d: timestamp %q is neither RFC 3339 nor Unix seconds", name, ln, ts))
			continue
		}
		bad := false
		for _, c := range []struct {
			name string
			dst  *float64
			pct  bool
		}{{"cpu", &row.CPU, true}, {"mem", &row.Mem, true}, {"disk_io", &row.Disk, true}, {"net", &row.Net, false}} {
			i, ok := col[c.name]
			if !ok || f[i] == "" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (c.pct && v > 100) {
				probs = append(probs, fmt.Sprintf("%s:%d: %s value %q out of range", name, ln, c.name, f[i]))
				bad = true
				break
			}
			*c.dst = v
		}
		if bad || row.Host == "" {
			if !bad {
				probs = append(probs, fmt.Sprintf("%s:%d: empty host", name, ln))
			}
			continue
		}
		out = append(out, row)
	}
	return out, probs
}
