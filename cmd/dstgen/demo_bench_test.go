package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// demoRunStats is what one scenario run's run.json says about run overhead
// and fault timing (issue 21, rows 2 and 3).
type demoRunStats struct {
	path     string
	wall     time.Duration // ended_at − started_at
	workload time.Duration // throughput buckets × interval
	lags     []time.Duration
}

func readDemoRuns(tb testing.TB, dir string) []demoRunStats {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "testing", "results", "*", "*", "artifacts", "*", "run.json"))
	re, _ := filepath.Glob(filepath.Join(dir, "testing", "results", "*", "*", "artifacts", "*", "rerun-*", "run.json"))
	var out []demoRunStats
	for _, p := range append(paths, re...) {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		var r struct {
			StartedAt time.Time `json:"started_at"`
			EndedAt   time.Time `json:"ended_at"`
			Workload  struct {
				IntervalNS int64             `json:"interval_ns"`
				Throughput []json.RawMessage `json:"throughput"`
			} `json:"workload"`
			FaultWindows []struct {
				ScheduledAtNS int64 `json:"scheduled_at_ns"`
				InjectedAtNS  int64 `json:"injected_at_ns"`
			} `json:"fault_windows"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		s := demoRunStats{path: p, wall: r.EndedAt.Sub(r.StartedAt),
			workload: time.Duration(int64(len(r.Workload.Throughput)) * r.Workload.IntervalNS)}
		for _, w := range r.FaultWindows {
			s.lags = append(s.lags, time.Duration(w.InjectedAtNS-w.ScheduledAtNS))
		}
		out = append(out, s)
	}
	return out
}

// BenchmarkDemo runs `dstgen demo` (the README's path: the real binary,
// its four in-process hosts) once per iteration and reports its wall time
// (goal ≤ 60 s), each scenario run's wall time minus its workload's
// duration (goal ≤ 5 s) and the worst injected − scheduled of a fault
// window (goal ≤ 100 ms). The headline must carry the same verdicts as
// TestREADMECommands wants (checkDemoHeadline). Run with -benchtime=1x;
// it takes about a minute.
func BenchmarkDemo(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b)
	if out, err := exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(bin), "dstgen-task"), "../dstgen-task").CombinedOutput(); err != nil {
		b.Fatalf("go build dstgen-task: %v\n%s", err, out)
	}
	var wall time.Duration
	var overheads, lags []time.Duration
	b.ResetTimer()
	for i := range b.N {
		ddir := filepath.Join(dir, fmt.Sprint(i))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		start := time.Now()
		out, err := exec.CommandContext(ctx, bin, "demo", "--keep", "--dir", ddir).CombinedOutput()
		wall += time.Since(start)
		cancel()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			b.Fatalf("dstgen demo: %v\n%s", err, tail(string(out), 30))
		}
		checkDemoHeadline(b, string(out))
		for _, r := range readDemoRuns(b, ddir) {
			overheads = append(overheads, r.wall-r.workload)
			lags = append(lags, r.lags...)
			fmt.Fprintf(os.Stderr, "%s: wall %s, workload %s, overhead %s, inject lag %v\n",
				r.path[len(ddir)+1:], r.wall.Round(time.Millisecond), r.workload, (r.wall - r.workload).Round(time.Millisecond), r.lags)
		}
	}
	b.StopTimer()
	if len(overheads) == 0 || len(lags) == 0 {
		b.Fatal("no scenario run or no fault window found in the demo's sessions")
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "demo-wall-s")
	b.ReportMetric(slices.Max(overheads).Seconds(), "max-run-overhead-s")
	slices.Sort(lags)
	b.ReportMetric(float64(lags[(len(lags)*99)/100].Microseconds())/1000, "p99-inject-lag-ms")
	b.ReportMetric(0, "ns/op")
}
