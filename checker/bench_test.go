package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// peakHeap samples HeapAlloc while f runs and returns the maximum seen.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

func benchAnalyzeKV(b *testing.B, n, keys int) {
	ops := fixture.KV(n, keys, 16, 42)
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Scenario: "bench", Clock: "monotonic"}, ops); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	raw := fixture.PorcupineOps(ops)
	b.Run("dstgen", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		var peak uint64
		for i := 0; i < b.N; i++ {
			runtime.GC()
			peak = max(peak, peakHeap(func() {
				_, parsed, bad, err := history.ReadFile(path) // what analyze calls
				if err != nil || len(bad) != 0 || len(parsed) != n {
					b.Fatalf("read: %v %v %d", err, bad, len(parsed))
				}
				res, err := Run(context.Background(), Spec{Model: "kv", Checker: Linearizability}, parsed, nil)
				if err != nil || res.Outcome != Valid {
					b.Fatalf("check: %v %s", err, res.Outcome)
				}
				// No verdict step here: analyze.BenchmarkAnalyzePaired is
				// the headline end-to-end figure (run.json, parse,
				// validate, check, audits, verdict); this one isolates
				// parse + check.
			}))
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	})
	b.Run("porcupine", func(b *testing.B) {
		b.ReportAllocs()
		var peak uint64
		for i := 0; i < b.N; i++ {
			runtime.GC()
			peak = max(peak, peakHeap(func() {
				if r, _ := porcupine.CheckOperationsVerbose(fixture.PorcupineKV, raw, 0); r != porcupine.Ok {
					b.Fatalf("porcupine: %s", r)
				}
			}))
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	})
}

// BenchmarkAnalyzeKVPaired runs dstgen (parse + check) and raw porcupine
// back to back in every iteration and reports the ratio of their summed
// times: on a shared, noisy machine the load then hits both alike.
func BenchmarkAnalyzeKVPaired(b *testing.B) {
	ops := fixture.KV(100_000, 1000, 16, 42)
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Clock: "monotonic"}, ops); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	raw := fixture.PorcupineOps(ops)
	var ours, theirs time.Duration
	for i := 0; i < b.N; i++ {
		runtime.GC()
		t0 := time.Now()
		_, parsed, bad, err := history.ReadFile(path)
		if err != nil || len(bad) != 0 {
			b.Fatal(err, bad)
		}
		if res, err := Run(context.Background(), Spec{Model: "kv", Checker: Linearizability}, parsed, nil); err != nil || res.Outcome != Valid {
			b.Fatal(err, res.Outcome)
		}
		t1 := time.Now()
		parsed = nil
		runtime.GC()
		t2 := time.Now()
		if r, _ := porcupine.CheckOperationsVerbose(fixture.PorcupineKV, raw, 0); r != porcupine.Ok {
			b.Fatal(r)
		}
		ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t2)
	}
	b.ReportMetric(float64(ours)/float64(theirs), "dstgen/porcupine")
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "dstgen-ms/op")
	b.ReportMetric(float64(theirs.Milliseconds())/float64(b.N), "porcupine-ms/op")
}

// BenchmarkAnalyzeKV compares parse + check of a 100k-op kv history (1k
// keys, 16 processes) with raw porcupine on the same pre-built operations.
func BenchmarkAnalyzeKV(b *testing.B) { benchAnalyzeKV(b, 100_000, 1000) }

// BenchmarkAnalyzeKV1M is the same at 1M ops over the same 1k keys: ten
// times the ops per key, so the per-key search (porcupine's and ours)
// grows faster than the op count.
func BenchmarkAnalyzeKV1M(b *testing.B) { benchAnalyzeKV(b, 1_000_000, 1000) }

// BenchmarkAnalyzeKV1MSameDensity is 1M ops over 10k keys: the same ops
// per key as the 100k run, which isolates growth in the op count.
func BenchmarkAnalyzeKV1MSameDensity(b *testing.B) { benchAnalyzeKV(b, 1_000_000, 10_000) }

// BenchmarkRead isolates the history parser against encoding/json, the
// obvious alternative, on the same 100k lines.
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	_ = fixture.WriteHistory(&buf, nil, fixture.KV(100_000, 1000, 16, 1))
	data := buf.Bytes()
	b.Run("dstgen", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			if _, _, bad := history.ReadBytes(data, "b"); len(bad) > 0 {
				b.Fatal(bad[0])
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			for _, line := range bytes.Split(data, []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var op history.Op
				if err := jsonUnmarshal(line, &op); err != nil {
					b.Fatal(fmt.Errorf("decode: %w", err))
				}
			}
		}
	})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
