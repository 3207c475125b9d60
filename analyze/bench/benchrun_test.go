package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/internal/stats"
	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

const (
	benchFixtures = "testdata/benchruns/results"
	benchCur      = benchFixtures + "/run_20261129_100000"
	benchPrev     = benchFixtures + "/run_20261128_100000"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func findBench(t *testing.T, b *Run, name string) Result {
	t.Helper()
	for _, r := range b.Benchmarks {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("benchmark %q not found", name)
	return Result{}
}

func findHost(t *testing.T, b *Run, name string) HostUsage {
	t.Helper()
	for _, h := range b.Hosts {
		if h.Host == name {
			return h
		}
	}
	t.Fatalf("host %q not found", name)
	return HostUsage{}
}

func optEq(p *float64, want float64) bool { return p != nil && near(*p, want) }

// TestAnalyzeBenchRunFigures checks every figure of the current fixture run
// against values worked out by hand from the fixture files (fio output and
// vmstat/iostat/mpstat/top logs are real captures from this machine under
// a two-core `yes` load).
func TestAnalyzeBenchRunFigures(t *testing.T) {
	b, err := Analyze(context.Background(), benchCur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Totals.Ops != 7960+600+300+3000 || b.Totals.Failures != 111+30 {
		t.Errorf("totals ops=%d failures=%d", b.Totals.Ops, b.Totals.Failures)
	}
	if !near(b.Totals.ErrorRate, 141.0/11860) || !b.Failed {
		t.Errorf("error rate %.5f failed=%v, want 1.19%% and failed", b.Totals.ErrorRate, b.Failed)
	}
	if b.Totals.Errors["timeout"] != 95 || b.Totals.Errors["conn_reset"] != 16 || b.Totals.Errors["http_req_failed"] != 30 {
		t.Errorf("error categories %v", b.Totals.Errors)
	}

	kv := findBench(t, b, "kv-put-get")
	if kv.Format != "dstgen" || !near(kv.Throughput, 796) || kv.TargetRate != 1000 || !optEq(kv.Latency.P99, 150) || !optEq(kv.Latency.P50, 21) || len(kv.Series) != 10 {
		t.Errorf("kv: %+v", kv)
	}
	rd := findBench(t, b, "randrw/read")
	if rd.Format != "fio" || rd.Ops != 600 || rd.TargetRate != 200 || !optEq(rd.Latency.P99, 11.993088) || !near(rd.Throughput, 199.866755) {
		t.Errorf("fio read: %+v p99=%v", rd, rd.Latency.P99)
	}
	if wr := findBench(t, b, "randrw/write"); wr.Ops != 300 || wr.TargetRate != 100 {
		t.Errorf("fio write: %+v", wr)
	}
	k6 := findBench(t, b, "http")
	if k6.Format != "k6" || k6.Ops != 3000 || k6.Failures != 30 || !optEq(k6.Latency.P95, 210) || k6.Latency.P99 != nil || !near(k6.DurationS, 60) {
		t.Errorf("k6: %+v", k6)
	}

	n1 := findHost(t, b, "node1")
	if !near(n1.PeakCPU, 100) || n1.Samples != 6 || len(n1.CPU) != 6 || !slices.Contains(n1.Sources, "mpstat") {
		t.Errorf("node1: %+v", n1)
	}
	// top.log: 1378.9 MiB used of 24105.6 total at most → ~5.7%.
	if n1.PeakMem < 1 || n1.PeakMem > 20 {
		t.Errorf("node1 peak mem %.1f, want the few %% top.log shows", n1.PeakMem)
	}
	n2 := findHost(t, b, "node2")
	if !near(n2.PeakDisk, 99) || !near(n2.PeakCPU, 41) || n2.Samples != 5 {
		t.Errorf("node2: %+v", n2)
	}

	var got []string
	for _, p := range b.Patterns {
		got = append(got, p.Kind+"@"+p.Target)
	}
	want := []string{"cpu-saturation@node1", "disk-saturation@node2", "throughput-below-target@kv-put-get", "error-rate-high@kv-put-get",
		"throughput-plateau-latency-climb@kv-put-get", "error-burst@kv-put-get"}
	if !slices.Equal(got, want) {
		t.Errorf("patterns\n got %v\nwant %v", got, want)
	}
	for _, p := range b.Patterns {
		if p.Kind == "error-burst" && !strings.Contains(p.Detail, "t=6–8s (105 errors)") {
			t.Errorf("burst window: %s", p.Detail)
		}
	}

	for _, want := range []string{"run_20261129_100000/benchmark/broken.json:5:", "run_20261129_100000/metrics/node2.csv:6:"} {
		if !slices.ContainsFunc(b.Problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("problems %v lack %s", b.Problems, want)
		}
	}

	if b.Previous == nil || b.Previous.Previous != "run_20261128_100000" {
		t.Fatalf("no comparison with the previous run: %+v", b.Previous)
	}
	var kvc *Change
	for i := range b.Previous.Changes {
		if b.Previous.Changes[i].Name == "kv-put-get" {
			kvc = &b.Previous.Changes[i]
		}
	}
	if kvc == nil || !optEq(kvc.P99Before, 99) || !optEq(kvc.P99After, 150) || !optEq(kvc.ThroughputBefore, 800) {
		t.Errorf("kv change: %+v", kvc)
	}
	if v := b.Previous.HostCPU["node1"]; !near(v[0], 55.5) || !near(v[1], 100) {
		t.Errorf("node1 cpu before/after %v", v)
	}

	recs := strings.Join(b.Recommendations, "\n")
	for _, want := range []string{"node1 is CPU-bound", "node2's disk is saturated", "saturation point near 798 ops/s",
		"kv-put-get missed its target", "a host was saturated", "kv-put-get p99 regressed 99.0 → 150.0 ms (+52%)", "t=6–8s"} {
		if !strings.Contains(recs, want) {
			t.Errorf("recommendations lack %q:\n%s", want, recs)
		}
	}
}

func TestAnalyzeBenchRunHealthyBaseline(t *testing.T) {
	b, err := Analyze(context.Background(), benchPrev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kv := findBench(t, b, "kv-put-get")
	// samples_ms holds 1..100: nearest rank gives exactly these.
	if !optEq(kv.Latency.P50, 50) || !optEq(kv.Latency.P95, 95) || !optEq(kv.Latency.P99, 99) || !optEq(kv.Latency.Mean, 50.5) {
		t.Errorf("percentiles from samples: %+v", kv.Latency)
	}
	if b.Failed || len(b.Patterns) != 0 || b.Previous != nil {
		t.Errorf("healthy run: failed=%v patterns=%v previous=%v", b.Failed, b.Patterns, b.Previous)
	}
	if len(b.Recommendations) != 1 || !strings.Contains(b.Recommendations[0], "baseline") {
		t.Errorf("recommendations %v", b.Recommendations)
	}
	md := string(RenderMarkdown(b))
	for _, want := range []string{"No saturation or error pattern detected.", "No earlier run_<timestamp> directory", "Run result: **PASS**"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestBenchRunMaxErrorRateOption(t *testing.T) {
	b, err := Analyze(context.Background(), benchCur, Options{MaxErrorRate: 0.05, NoPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Failed || b.Previous != nil {
		t.Errorf("1.19%% errors under a 5%% threshold failed=%v previous=%v", b.Failed, b.Previous)
	}
}

func TestAnalyzeBenchRunBadDir(t *testing.T) {
	if _, err := Analyze(context.Background(), filepath.Join(t.TempDir(), "absent"), Options{}); err == nil {
		t.Error("missing dir accepted")
	}
	empty := filepath.Join(t.TempDir(), "run_20260101_000000")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Analyze(context.Background(), empty, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Failed || len(b.Problems) < 2 || b.Headline != "no benchmark results found" {
		t.Errorf("empty run: failed=%v problems=%v headline=%q", b.Failed, b.Problems, b.Headline)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Analyze(ctx, benchCur, Options{}); err == nil {
		t.Error("cancelled context ignored")
	}
}

func TestWriteBenchReport(t *testing.T) {
	b, err := Analyze(context.Background(), benchCur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "findings")
	if err := WriteReport(b, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{render.MarkdownFile, render.JSONFile, render.HTMLFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, render.HTMLFile))
	fixture.CheckWellFormed(t, page)
	if fixture.ExternalRef.Match(page) {
		t.Error("benchmark html references external content")
	}
	// kv-put-get has a series; node1 and node2 have cpu series.
	if n := strings.Count(string(page), `<svg class="chart"`); n != 3 {
		t.Errorf("%d charts, want 3", n)
	}
	md := string(RenderMarkdown(b))
	for _, h := range []string{"## Summary\n", "## Summary table\n", "## Errors by category\n", "## Host resources\n",
		"## Saturation and error patterns\n", "## Changes since run_20261128_100000\n", "## Recommendations\n", "## Input problems\n"} {
		if !strings.Contains(md, h) {
			t.Errorf("benchmark report lacks %q", h)
		}
	}
	if !strings.Contains(md, "| kv-put-get | dstgen | 7960 | 111 | 1.39 | 796.0 | 1000.0 | 80% | 38.40 | 21.00 | 96.00 | 150.00 |") {
		t.Errorf("kv summary row wrong")
	}
}

func TestIsBenchRunDir(t *testing.T) {
	sess := t.TempDir()
	os.MkdirAll(filepath.Join(sess, "artifacts"), 0o755)
	os.MkdirAll(filepath.Join(sess, "benchmark"), 0o755)
	plain := t.TempDir()
	os.MkdirAll(filepath.Join(plain, "benchmark"), 0o755)
	for dir, want := range map[string]bool{benchCur: true, benchFixtures: false, sess: false, plain: true} {
		if got := IsRunDir(dir); got != want {
			t.Errorf("IsRunDir(%s) = %v", dir, got)
		}
	}
	if got, err := session.Find(benchFixtures); err != nil || filepath.Base(got) != "run_20261129_100000" {
		t.Errorf("session.Find(bench results) = %q, %v", got, err)
	}
	if got, _ := session.Previous(benchPrev); got != "" {
		t.Errorf("oldest run has a previous: %q", got)
	}
	if got, _ := session.Previous(benchCur); filepath.Clean(got) != filepath.Clean(benchPrev) {
		t.Errorf("previous of newest run = %q, want %q", got, benchPrev)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	for _, tc := range []struct {
		s    []float64
		p    float64
		want float64
	}{
		{[]float64{5}, 99, 5},
		{[]float64{1, 2, 3, 4}, 50, 2},
		{[]float64{1, 2, 3, 4}, 75, 3},
		{[]float64{1, 2, 3, 4}, 100, 4},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{nil, 50, 0},
	} {
		if got := stats.Percentile(tc.s, tc.p/100); got != tc.want {
			t.Errorf("p%.0f of %v = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}

func pts(ops, errs []int64, p99 []float64) []Point {
	var s []Point
	for i := range ops {
		s = append(s, Point{T: float64(i), Ops: ops[i], Errors: errs[i], P99: p99[i]})
	}
	return s
}

func TestSeriesPatterns(t *testing.T) {
	flat := []float64{10, 10, 10, 10, 10, 10}
	zero := []int64{0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		name string
		r    Result
		want []string
	}{
		{"clean", Result{Name: "a", Ops: 600, Series: pts([]int64{100, 100, 100, 100, 100, 100}, zero, flat)}, nil},
		{"plateau with climbing p99", Result{Name: "a", Ops: 600, Series: pts([]int64{100, 100, 100, 100, 100, 100}, zero, []float64{10, 10, 10, 30, 30, 30})},
			[]string{"throughput-plateau-latency-climb"}},
		{"growing throughput is not a plateau", Result{Name: "a", Ops: 900, Series: pts([]int64{100, 100, 100, 200, 200, 200}, zero, []float64{10, 10, 10, 30, 30, 30})}, nil},
		// A driver throttled to its target is flat by design (bench.params
		// gives the target): not a saturation point.
		{"flat at the target rate is not a plateau", Result{Name: "a", Ops: 600, TargetRate: 100, Throughput: 100, Series: pts([]int64{100, 100, 100, 100, 100, 100}, zero, []float64{10, 10, 10, 30, 30, 30})}, nil},
		{"flat well below the target is a plateau", Result{Name: "a", Ops: 600, TargetRate: 1000, Throughput: 100, Series: pts([]int64{100, 100, 100, 100, 100, 100}, zero, []float64{10, 10, 10, 30, 30, 30})},
			[]string{"throughput-below-target", "throughput-plateau-latency-climb"}},
		{"stall", Result{Name: "a", Ops: 500, Series: pts([]int64{100, 100, 0, 100, 100, 100}, zero, flat)}, []string{"generator-stall"}},
		{"burst", Result{Name: "a", Ops: 600, Failures: 42, Series: pts([]int64{100, 100, 100, 100, 100, 100}, []int64{0, 1, 40, 0, 1, 0}, flat)},
			[]string{"error-rate-high", "error-burst"}},
		{"even errors are no burst", Result{Name: "a", Ops: 600, Failures: 6, Series: pts([]int64{100, 100, 100, 100, 100, 100}, []int64{1, 1, 1, 1, 1, 1}, flat)}, nil},
		{"below target", Result{Name: "a", Ops: 600, TargetRate: 200, Throughput: 100}, []string{"throughput-below-target"}},
		{"at target", Result{Name: "a", Ops: 600, TargetRate: 100, Throughput: 95}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Run{MaxErrorRate: DefaultMaxErrorRate, Benchmarks: []Result{tc.r}}
			b.findPatterns()
			var got []string
			for _, p := range b.Patterns {
				got = append(got, p.Kind)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("patterns %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHostPatterns(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    HostUsage
		want []string
	}{
		{"brief spike is not saturation", HostUsage{Host: "h", CPU: []float64{95, 95, 50, 95}, PeakCPU: 95, PeakIOWait: -1, PeakMem: -1, PeakDisk: -1}, nil},
		{"sustained", HostUsage{Host: "h", CPU: []float64{50, 92, 95, 99, 40}, PeakCPU: 99, PeakIOWait: -1, PeakMem: -1, PeakDisk: -1}, []string{"cpu-saturation"}},
		{"iowait and memory", HostUsage{Host: "h", PeakIOWait: 35, PeakMem: 93, PeakDisk: 10}, []string{"iowait-high", "memory-pressure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Run{MaxErrorRate: DefaultMaxErrorRate, Hosts: []HostUsage{tc.h}}
			b.findPatterns()
			var got []string
			for _, p := range b.Patterns {
				got = append(got, p.Kind)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("patterns %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseBenchJSONShapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		wantErr    string
		check      func(t *testing.T, rs []Result)
	}{
		{"native", `{"name":"n","target_rate":10,"duration_s":2,"ops":20,"errors":{"x":2},"samples_ms":[3,1,2]}`, "", func(t *testing.T, rs []Result) {
			r := rs[0]
			if r.Throughput != 10 || r.Failures != 2 || !optEq(r.Latency.P50, 2) || !optEq(r.Latency.P99, 3) {
				t.Errorf("%+v", r)
			}
		}},
		{"native ops from series", `{"series":[{"t":0,"ops":5},{"t":2,"ops":7}]}`, "", func(t *testing.T, rs []Result) {
			if rs[0].Ops != 12 || rs[0].DurationS != 4 || rs[0].Throughput != 3 || rs[0].Name != "native ops from series" {
				t.Errorf("%+v", rs[0])
			}
		}},
		{"k6 handleSummary nesting", `{"metrics":{"http_reqs":{"values":{"count":10,"rate":5}},"http_req_duration":{"values":{"p(99)":7}},"http_req_failed":{"values":{"rate":0.2}}}}`, "", func(t *testing.T, rs []Result) {
			if rs[0].Ops != 10 || rs[0].Failures != 2 || !optEq(rs[0].Latency.P99, 7) {
				t.Errorf("%+v", rs[0])
			}
		}},
		{"fio job error", `{"fio version":"fio-3","jobs":[{"jobname":"j","error":5,"read":{"iops":1,"total_ios":3,"runtime":3000}}]}`, "", func(t *testing.T, rs []Result) {
			if rs[0].Failures != 1 || rs[0].Errors["job errno 5"] != 1 {
				t.Errorf("%+v", rs[0])
			}
		}},
		{"fio no io", `{"jobs":[{"jobname":"j"}]}`, "no job with completed I/O", nil},
		{"k6 without http_reqs", `{"metrics":{}}`, "no metrics.http_reqs", nil},
		{"unknown", `{"hello":1}`, ":1: unrecognised benchmark JSON", nil},
		{"syntax", "{\n\"ops\": 1,\n]", "syntax:3:", nil},
		{"negative", `{"ops":-1}`, "negative", nil},
		{"not object", `[1,2]`, "not a JSON object", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := parseBenchJSON(tc.name, []byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(rs) == 0 {
				t.Fatalf("err %v, %d results", err, len(rs))
			}
			tc.check(t, rs)
		})
	}
}

func TestParseRawMetrics(t *testing.T) {
	vm := "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n" +
		" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n" +
		" 1  0      0 24056676  21168 470256    0    0  1067  4015  748 1205 28 10 61  1  0\n" +
		" 2  0      0 24056676  21168 470256    0    0     0  4268  213  312 70 20  5  5  0\n" +
		"garbage line here\n" +
		" 1  0      0 24056676  21168 470256    0    0  2828     4  452  725  3  5 92  0  0\n"
	s, probs := parseVmstat("vmstat.log", []byte(vm))
	if len(s) != 2 || s[0].CPU != 95 || s[0].IOWait != 5 || s[1].CPU != 8 {
		t.Errorf("vmstat samples %+v (the since-boot line must be dropped)", s)
	}
	if len(probs) != 1 || !strings.HasPrefix(probs[0], "vmstat.log:5:") {
		t.Errorf("vmstat problems %v", probs)
	}

	io := "Linux 6.18 (vm) \t11/29/26 \t_x86_64_\t(2 CPU)\n\navg-cpu:  %user   %nice %system %iowait  %steal   %idle\n          28.27    0.00    9.91    0.72    0.27   60.82\n\n" +
		"Device            r/s     rkB/s     w/s     wkB/s  %util\nvda            156.76   2473.52   27.41   7814.82   3.44\n\n\n" +
		"avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n          10.00    0.00   10.00   30.00    0.00   50.00\n\n" +
		"Device            r/s     rkB/s     w/s     wkB/s  %util\nvda            1.0   100.0   2.0   50.0   97.5\nvdb            1.0   400.0   2.0   50.0   10.0\n\n"
	s, probs = parseIostat("iostat.log", []byte(io))
	if len(s) != 1 || s[0].IOWait != 30 || s[0].CPU != 50 || s[0].Disk != 97.5 || s[0].DiskKB != 450 || len(probs) != 0 {
		t.Errorf("iostat samples %+v problems %v (first report must be dropped)", s, probs)
	}

	mp := "Linux 6.18 (vm) \t11/29/26 \t_x86_64_\t(2 CPU)\n\n" +
		"09:43:33 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n" +
		"09:43:34 AM  all   80.00    0.00   10.00    4.00    0.00    0.00    0.00    0.00    0.00    6.00\n" +
		"09:43:34 AM    0    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00  100.00\n" +
		"09:43:35 AM  all   x    0.00   10.00    4.00    0.00    0.00    0.00    0.00    0.00    6.00\n" +
		"Average:     all    0.00    0.00    0.50    0.00    0.00    0.00    0.00    0.00    0.00   99.50\n"
	s, probs = parseMpstat("mpstat.log", []byte(mp))
	if len(s) != 1 || s[0].CPU != 94 || s[0].IOWait != 4 || len(probs) != 1 || !strings.HasPrefix(probs[0], "mpstat.log:6:") {
		t.Errorf("mpstat samples %+v problems %v", s, probs)
	}

	top := "=== 2026-11-29T09:43:35Z ===\ntop - 09:43:35 up 6 min,  0 user,  load average: 0.54, 0.80, 0.43\n" +
		"%Cpu(s): 60.0 us,  10.0 sy,  0.0 ni, 25.0 id,  5.0 wa,  0.0 hi,  0.0 si,  0.0 st\n" +
		"MiB Mem :  1000.0 total,  100.0 free,    800.0 used,    100.0 buff/cache\n" +
		"%Cpu(s): nonsense\n"
	s, probs = parseTopLog("top.log", []byte(top))
	if len(s) != 1 || s[0].CPU != 75 || s[0].IOWait != 5 || s[0].Mem != 80 || s[0].T.IsZero() {
		t.Errorf("top samples %+v", s)
	}
	if len(probs) != 1 || !strings.HasPrefix(probs[0], "top.log:5:") {
		t.Errorf("top problems %v", probs)
	}

	csv := "timestamp,host,cpu,mem,disk_io,net\n2026-11-29T10:00:00Z,a,50,60,70,80\n1795945812,b,10,,,\nbad,a,1,1,1,1\n2026-11-29T10:00:00Z,a,150,1,1,1\n2026-11-29T10:00:00Z,a,1\n"
	rows, probs := parseMetricsCSV("m.csv", []byte(csv))
	if len(rows) != 2 || rows[0].Disk != 70 || rows[1].Host != "b" || rows[1].Mem != -1 || rows[1].T.Unix() != 1795945812 {
		t.Errorf("csv rows %+v", rows)
	}
	if len(probs) != 3 || !strings.HasPrefix(probs[0], "m.csv:4:") || !strings.HasPrefix(probs[1], "m.csv:5:") || !strings.HasPrefix(probs[2], "m.csv:6:") {
		t.Errorf("csv problems %v", probs)
	}
	if _, probs := parseMetricsCSV("h.csv", []byte("time,cpu\n1,2\n")); len(probs) != 1 || !strings.HasPrefix(probs[0], "h.csv:1:") {
		t.Errorf("bad header problems %v", probs)
	}
}

func checkSamples(t *testing.T, s []hostSample) {
	for _, x := range s {
		for _, v := range []float64{x.CPU, x.IOWait, x.Mem, x.Disk} {
			if v != -1 && (v < 0 || v > 100 || math.IsNaN(v)) {
				t.Fatalf("percentage out of range: %+v", x)
			}
		}
	}
}

func fuzzSeeds(f *testing.F, files ...string) {
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(""))
	f.Add([]byte("\x00\xff\n\n|"))
}

func FuzzParseBenchJSON(f *testing.F) {
	fuzzSeeds(f, benchCur+"/benchmark/kv.json", benchCur+"/benchmark/fio.json", benchCur+"/benchmark/http.json", benchPrev+"/benchmark/kv.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := parseBenchJSON("x.json", data)
		if err != nil && !strings.HasPrefix(err.Error(), "x.json:") {
			t.Fatalf("error without file:line: %v", err)
		}
		for _, r := range rs {
			_ = r.ErrorRate()
		}
	})
}

func FuzzParseVmstat(f *testing.F) {
	fuzzSeeds(f, benchCur+"/metrics/node1/vmstat.log")
	f.Fuzz(func(t *testing.T, data []byte) { s, _ := parseVmstat("v", data); checkSamples(t, s) })
}

func FuzzParseIostat(f *testing.F) {
	fuzzSeeds(f, benchCur+"/metrics/node1/iostat.log")
	f.Fuzz(func(t *testing.T, data []byte) { s, _ := parseIostat("i", data); checkSamples(t, s) })
}

func FuzzParseMpstat(f *testing.F) {
	fuzzSeeds(f, benchCur+"/metrics/node1/mpstat.log")
	f.Fuzz(func(t *testing.T, data []byte) { s, _ := parseMpstat("m", data); checkSamples(t, s) })
}

func FuzzParseTopLog(f *testing.F) {
	fuzzSeeds(f, benchCur+"/metrics/node1/top.log")
	f.Fuzz(func(t *testing.T, data []byte) { s, _ := parseTopLog("t", data); checkSamples(t, s) })
}

func FuzzParseMetricsCSV(f *testing.F) {
	fuzzSeeds(f, benchCur+"/metrics/node2.csv", benchPrev+"/metrics/node1.csv")
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, _ := parseMetricsCSV("c", data)
		for _, r := range rows {
			checkSamples(t, []hostSample{r.hostSample})
		}
	})
}
