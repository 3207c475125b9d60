package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// benchCollected is a run as the generated collect task lays it out:
// benchmark/history.jsonl (dst-history/1), metrics/<host>/, logs/.
const benchCollected = "testdata/benchruns/collected/run_20261201_100000"

// editHistory copies the collected run and rewrites its history: insert
// lines after _meta, append lines at the end.
func editHistory(t *testing.T, insert, add []string) string {
	t.Helper()
	return rewriteHistory(t, func(lines []string) []string {
		return append(append(append([]string{lines[0]}, insert...), lines[1:]...), add...)
	})
}

// rewriteHistory copies the collected run and replaces its history's
// lines (the _meta line first) with what edit makes of them.
func rewriteHistory(t *testing.T, edit func([]string) []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run_20261201_100000")
	fixture.CopyDir(t, benchCollected, dir)
	h := filepath.Join(dir, "benchmark", "history.jsonl")
	b, err := os.ReadFile(h)
	if err != nil {
		t.Fatal(err)
	}
	lines := edit(strings.Split(strings.TrimRight(string(b), "\n"), "\n"))
	if err := os.WriteFile(h, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A collected benchmark history is a benchmark result: its figures are
// reported, and with a model named the checker's verdict decides; a dirty
// initial state is inconclusive, never a fail.
func TestBenchRunHistory(t *testing.T) {
	const leftover = `{"op_id":"0","process_id":"c9","invoke_ts":0,"complete_ts":1000000,"op_type":"read","key":"k7","input":null,"output":"from-last-run","error":null,"timeout_marker":false,"node_seen":"node1","fault_epoch":null}`
	// After every write to k0, a read returns its very first value: stale.
	const stale = `{"op_id":"999","process_id":"c1","invoke_ts":20000000000,"complete_ts":20001000000,"op_type":"read","key":"k0","input":null,"output":"v4","error":null,"timeout_marker":false,"node_seen":"node1","fault_epoch":null}`
	tests := []struct {
		name    string
		dir     string
		model   string
		verdict string
		status  string // report.md / report.html run result
		reason  string
	}{
		{"no model", benchCollected, "", Pass, "PASS", NoModelNote},
		{"kv valid", benchCollected, "kv", Pass, "PASS", "judged 1 of 1 histories valid"},
		{"dirty initial state", editHistory(t, []string{leftover}, nil), "kv", Inconclusive, "INCONCLUSIVE", "dirty initial state: run_20261201_100000/benchmark/history.jsonl:2"},
		{"stale read", editHistory(t, nil, []string{stale}), "kv", Fail, "FAIL", "checker found an anomaly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Analyze(context.Background(), tt.dir, Options{Model: tt.model, NoPrevious: true, MaxErrorRate: 0.05})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Benchmarks) != 1 {
				t.Fatalf("benchmarks %+v, problems %v", b.Benchmarks, b.Problems)
			}
			r := b.Benchmarks[0]
			// 200 ops: 3 failed writes, 2 timed-out writes (+1 op when edited).
			if r.Format != "dst-history/1" || r.Errors["fail"] != 3 || r.Errors["timeout"] != 2 || r.Failures != 5 ||
				r.Latency.P50 == nil || r.Latency.P95 == nil || r.Latency.P99 == nil || r.Latency.Max == nil || r.Throughput <= 0 {
				t.Errorf("figures %+v", r)
			}
			if tt.dir == benchCollected && (r.Ops != 200 || *r.Latency.Max != 8 || len(b.Hosts) != 1) {
				t.Errorf("ops %d max %v hosts %d", r.Ops, *r.Latency.Max, len(b.Hosts))
			}
			if b.Verdict != tt.verdict || !strings.Contains(b.VerdictReason, tt.reason) {
				t.Errorf("verdict %s (%s), want %s containing %q", b.Verdict, b.VerdictReason, tt.verdict, tt.reason)
			}
			if (tt.verdict == Fail) != b.Failed {
				t.Errorf("failed=%v for verdict %s", b.Failed, b.Verdict)
			}
			md := string(RenderMarkdown(b))
			mv, _ := mdSummary(t, md)
			hv, _ := htmlSummary(t, string(RenderHTML(b)))
			if mv != tt.status || hv != tt.status {
				t.Errorf("run result md %s html %s, want %s", mv, hv, tt.status)
			}
			if strings.Contains(md, "No benchmark results found") {
				t.Error("report says no benchmark results")
			}
			if tt.verdict == Inconclusive && !strings.Contains(md, "task clean:data") {
				t.Error("dirty report does not say how to clean")
			}
		})
	}
}

// The target rate of a history benchmark is the one `dstgen bench start`
// recorded for the run (bench.params), overrides included; without the
// record there is no target, never a guessed one.
func TestBenchHistoryTargetFromParams(t *testing.T) {
	for _, c := range []struct {
		params string
		want   float64
	}{
		{"", 0},
		{"run_id=r2\nrate=30\nduration_s=3\n", 30},
		{"rate=NaN\n", 0},
		{"rate=-5\n", 0},
		{"rate=Inf\n", 0},
	} {
		dir := editHistory(t, nil, nil)
		if c.params != "" {
			if err := os.WriteFile(filepath.Join(dir, "benchmark", "bench.params"), []byte(c.params), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := Analyze(context.Background(), dir, Options{NoPrevious: true, MaxErrorRate: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Benchmarks) != 1 || b.Benchmarks[0].TargetRate != c.want {
			t.Errorf("params %q: benchmarks %+v, want target %v", c.params, b.Benchmarks, c.want)
		}
	}
}

// A declared oracle must judge every history of the run, or the run is
// inconclusive with the reason — never a pass; and every verdict has one
// session-vocabulary name, the one `dstgen analyze` prints.
func TestBenchDeclaredOracleMustRun(t *testing.T) {
	noHistory := filepath.Join(t.TempDir(), "run_20261128_100000")
	fixture.CopyDir(t, benchPrev, noHistory)
	ghost := editHistory(t, nil, nil)
	if err := os.Symlink("/nonexistent/h.jsonl", filepath.Join(ghost, "benchmark", "ghost.jsonl")); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "run_20260101_000000")
	if err := os.MkdirAll(filepath.Join(empty, "benchmark"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		dir            string
		opts           Options
		verdict        string
		session        string
		reason         string
		oracleInReport string
	}{
		{"declared, no history", noHistory, Options{Model: "kv", OracleSource: "benchmark/bench.params"}, Inconclusive, "INCONCLUSIVE",
			"model kv declared in benchmark/bench.params but benchmark/ holds no dst-history/1 history", "declared in benchmark/bench.params"},
		{"declared, one history unreadable", ghost, Options{Model: "kv", MaxErrorRate: 0.05}, Inconclusive, "INCONCLUSIVE", "1 of 2 histories could not be read", "model kv"},
		{"checker without a model", benchCollected, Options{Checker: "linearizability", MaxErrorRate: 0.05}, Inconclusive, "INCONCLUSIVE", "declared without a model", "linearizability"},
		{"declared and judged", benchCollected, Options{Model: "kv", MaxErrorRate: 0.05}, Pass, "DONE", "judged 1 of 1 histories valid", "model kv"},
		{"nothing declared, a history", benchCollected, Options{MaxErrorRate: 0.05}, Pass, "DONE_WITH_CONCERNS", NoModelNote, "no checker declared"},
		{"nothing declared, no history", noHistory, Options{}, Pass, "DONE", "", "no checker declared"},
		{"error rate above the threshold", benchCollected, Options{Model: "kv"}, Fail, "FAIL", "", "model kv"},
		{"nothing ran", empty, Options{Model: "kv"}, Fail, "BLOCKED", "", "model kv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.NoPrevious = true
			b, err := Analyze(context.Background(), tc.dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Verdict != tc.verdict || string(b.SessionVerdict) != tc.session || !strings.Contains(b.VerdictReason, tc.reason) {
				t.Errorf("verdict %s session %s (%s), want %s %s containing %q", b.Verdict, b.SessionVerdict, b.VerdictReason, tc.verdict, tc.session, tc.reason)
			}
			md := string(RenderMarkdown(b))
			if !strings.Contains(md, "Session verdict: **"+tc.session+"**") || !strings.Contains(md, tc.oracleInReport) {
				t.Errorf("report.md does not state session verdict %s and %q", tc.session, tc.oracleInReport)
			}
		})
	}
}

// RecordedOracle reads what bench start recorded: an empty model= is a
// record (no oracle declared), a file without the key is none.
func TestRecordedOracle(t *testing.T) {
	for _, c := range []struct {
		params         string
		model, checker string
		ok             bool
	}{
		{"", "", "", false},
		{"run_id=r\nrate=5\n", "", "", false},
		{"model=\nchecker=\n", "", "", true},
		{"model=kv\nchecker=linearizability\n", "kv", "linearizability", true},
		{"model=kv\nmodel=register\n", "kv", "", true}, // the first wins
	} {
		dir := filepath.Join(t.TempDir(), "run_x")
		if err := os.MkdirAll(filepath.Join(dir, "benchmark"), 0o755); err != nil {
			t.Fatal(err)
		}
		if c.params != "" {
			if err := os.WriteFile(filepath.Join(dir, "benchmark", "bench.params"), []byte(c.params), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, ch, ok := RecordedOracle(dir)
		if m != c.model || ch != c.checker || ok != c.ok {
			t.Errorf("params %q: %q %q %v, want %q %q %v", c.params, m, ch, ok, c.model, c.checker, c.ok)
		}
	}
}

// A sampler dir missing iostat.log and mpstat.log (a host without sysstat)
// says what that costs, instead of reading as an idle disk.
func TestBenchMissingSamplerNamed(t *testing.T) {
	b, err := Analyze(context.Background(), benchCollected, Options{NoPrevious: true, MaxErrorRate: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(b.Problems, "\n")
	for _, want := range []string{"metrics/node1: no iostat.log", "disk utilisation and throughput (package sysstat) unknown", "metrics/node1: no mpstat.log"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "no vmstat.log") {
		t.Errorf("vmstat.log is there, but named missing:\n%s", all)
	}
}

// The report lists five anomalies and counts the rest, those a capped
// checker's "more" entry stands for included: 120 locks each held twice
// at once are 120 anomalies, listed by mutual-exclusion as 100 and one
// "20 more" entry, so the rest is 115, not the 96 entries after the fifth.
func TestBenchAnomalyListCountsTheRest(t *testing.T) {
	const locks = 120
	op := func(id int, proc string, inv, end int64, key string) string {
		return fmt.Sprintf(`{"op_id":"%d","process_id":"%s","invoke_ts":%d,"complete_ts":%d,"op_type":"acquire","key":"%s","input":null,"output":true,"error":null,"timeout_marker":false,"node_seen":"node1","fault_epoch":null}`, id, proc, inv, end, key)
	}
	dir := rewriteHistory(t, func(lines []string) []string {
		out := lines[:1] // _meta
		for i := range locks {
			key := fmt.Sprintf("L%d", i)
			base := int64(i) * 100_000_000
			out = append(out, op(2*i+1, "p", base, base+10_000_000, key), op(2*i+2, "q", base+40_000_000, base+50_000_000, key))
		}
		return out
	})
	run, err := Analyze(context.Background(), dir, Options{Model: "lock", Checker: "mutual-exclusion", NoPrevious: true, MaxErrorRate: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Benchmarks) != 1 || run.Benchmarks[0].Check == nil {
		t.Fatalf("benchmarks %+v, problems %v", run.Benchmarks, run.Problems)
	}
	// The checker capped its list: the "more" path is the one taken.
	_, ops, _, err := history.ReadFile(filepath.Join(dir, "benchmark", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := checker.Run(context.Background(), checker.Spec{Model: "lock", Checker: "mutual-exclusion"}, ops, nil)
	if err != nil || len(res.Anomalies) >= locks || res.Anomalies[len(res.Anomalies)-1].Kind != "more" {
		t.Fatalf("the checker listed %d of %d anomalies (%v), want a capped list ending in a more entry", len(res.Anomalies), locks, err)
	}
	c := run.Benchmarks[0].Check
	if c.Outcome != "invalid" || len(c.Anomalies) != 6 {
		t.Fatalf("check %s with %d anomalies listed, want invalid with 5 and a count: %q", c.Outcome, len(c.Anomalies), c.Anomalies)
	}
	if want := fmt.Sprintf("%d more anomalies", locks-5); c.Anomalies[5] != want {
		t.Errorf("the rest reads %q, want %q", c.Anomalies[5], want)
	}
	if md := string(RenderMarkdown(run)); !strings.Contains(md, fmt.Sprintf("%d more anomalies", locks-5)) {
		t.Errorf("report.md does not count the rest:\n%s", md)
	}
}
