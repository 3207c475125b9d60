package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// genKV records a linearizable kv history: procs clients, each with one op
// in flight, random read/write over keys, each op applied at a random
// point inside its interval.
func genKV(n, keys, procs int, seed uint64) []history.Op {
	rng := rand.New(rand.NewPCG(seed, 1))
	type g struct {
		op history.Op
		lp int64
	}
	all := make([]g, 0, n)
	clock := make([]int64, procs)
	for i := 0; i < n; i++ {
		p := i % procs
		inv := clock[p] + int64(rng.IntN(1000))
		dur := int64(100 + rng.IntN(5000))
		comp := inv + dur
		clock[p] = comp + 1
		op := history.Op{OpID: strconv.Itoa(i + 1), ProcessID: "p" + strconv.Itoa(p), InvokeTS: inv, CompleteTS: &comp,
			Key: "k" + strconv.Itoa(rng.IntN(keys)), NodeSeen: "n1"}
		if rng.IntN(2) == 0 {
			op.OpType = "read"
		} else {
			op.OpType, op.Input = "write", []byte(strconv.Itoa(i+1))
		}
		all = append(all, g{op, inv + int64(rng.IntN(int(dur)))})
	}
	slices.SortFunc(all, func(a, b g) int { return int(a.lp - b.lp) })
	state := map[string][]byte{}
	ops := make([]history.Op, n)
	for i, x := range all {
		if x.op.OpType == "write" {
			state[x.op.Key] = x.op.Input
		} else if v, ok := state[x.op.Key]; ok {
			x.op.Output = v
		}
		ops[i] = x.op
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return int(a.InvokeTS - b.InvokeTS) })
	return ops
}

// rawKV is the model a porcupine user would write for the same history:
// per-key partition, string state.
type rawIn struct {
	write bool
	key   string
	val   string
}

var rawKVModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		m := map[string][]porcupine.Operation{}
		var order []string
		for _, o := range h {
			k := o.Input.(rawIn).key
			if _, ok := m[k]; !ok {
				order = append(order, k)
			}
			m[k] = append(m[k], o)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, m[k])
		}
		return out
	},
	Init: func() any { return "null" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(rawIn)
		if in.write {
			return true, in.val
		}
		return output.(string) == state.(string), state
	},
}

// rawOps is the history as a porcupine user would hand it over: a
// timed-out op returns after every other event.
func rawOps(ops []history.Op) []porcupine.Operation {
	var end int64
	for i := range ops {
		end = max(end, ops[i].InvokeTS)
		if c := ops[i].CompleteTS; c != nil {
			end = max(end, *c)
		}
	}
	out := make([]porcupine.Operation, len(ops))
	ids := map[string]int{}
	for i, o := range ops {
		id, ok := ids[o.ProcessID]
		if !ok {
			id = len(ids)
			ids[o.ProcessID] = id
		}
		res := "null"
		if o.Output != nil {
			res = string(o.Output)
		}
		ret := end + 1
		if o.CompleteTS != nil {
			ret = *o.CompleteTS
		}
		out[i] = porcupine.Operation{ClientId: id, Input: rawIn{o.OpType == "write", o.Key, string(o.Input)}, Output: res,
			Call: o.InvokeTS, Return: ret}
	}
	return out
}

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
	ops := genKV(n, keys, 16, 42)
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Scenario: "bench", Clock: "monotonic"}, ops); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	raw := rawOps(ops)
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
				if r, _ := porcupine.CheckOperationsVerbose(rawKVModel, raw, 0); r != porcupine.Ok {
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
	ops := genKV(100_000, 1000, 16, 42)
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Clock: "monotonic"}, ops); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	raw := rawOps(ops)
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
		if r, _ := porcupine.CheckOperationsVerbose(rawKVModel, raw, 0); r != porcupine.Ok {
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
	_ = fixture.WriteHistory(&buf, nil, genKV(100_000, 1000, 16, 1))
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
