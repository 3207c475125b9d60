package analyze

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

const benchPlan = `# Test Plan: bench

## 1b. Claims under test

| ID | Claim | Category | Source | Inferred? |
|---|---|---|---|---|
| C1 | "kv ops are linearizable per key" | safety | docs | no |

## 7. Scenarios

### Scenario S1: kv_linearizable
- **Falsifies if it FAILs:** C1
- **Workload:** 16 clients, 1000 keys
- **Faults:** none
- **Oracle:** Porcupine per key
- **Smoke budget:** 3 nodes, 1 s, 0 faults, 1 seed
- **Hardening budget:** 3 nodes, 10 s, 0 faults, 3 seeds
- **Release budget:** 3 nodes, 1 h, 0 faults, 5 seeds

#### §7.M — Model / history / checker discipline
- **Model under test:** kv
- **Operation history:** default 11-field schema, in-process
- **Checker:** linearizability (Porcupine) per key
- **Nemesis + landing evidence:** none
- **Ambiguous outcomes:** default
- **Reduction plan:** bisect
`

// kvHistory builds a linearizable n-op kv history over keys keys and 16
// processes: op i is invoked at 10i ns and returns at 10i+25 ns, so
// neighbouring ops overlap, and it takes effect in index order.
func kvHistory(n, keys int) []history.Op {
	rng := rand.New(rand.NewSource(1))
	vals := make([]int, keys)
	ops := make([]history.Op, n)
	for i := range ops {
		k := rng.Intn(keys)
		c := int64(i)*10 + 25
		op := history.Op{OpID: fmt.Sprint(i + 1), ProcessID: fmt.Sprintf("p%d", i%16), InvokeTS: int64(i) * 10,
			CompleteTS: &c, Key: fmt.Sprintf("k%d", k), NodeSeen: "n1"}
		if rng.Intn(2) == 0 {
			vals[k] = i + 1
			op.OpType, op.Input = "write", json.RawMessage(fmt.Sprint(i+1))
		} else {
			op.OpType, op.Output = "read", json.RawMessage(fmt.Sprint(vals[k]))
			if vals[k] == 0 {
				op.Output = json.RawMessage("null")
			}
		}
		ops[i] = op
	}
	return ops
}

func benchSession(b *testing.B, n int) (string, *plan.Plan, []history.Op) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "bench", "20260101T000000Z")
	ops := kvHistory(n, 1000)
	adir := fixture.ArtifactDir(dir, "S1")
	if err := os.MkdirAll(adir, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := session.Run{Schema: session.RunSchema, Scenario: "S1", Attempted: true, StartedAt: start, EndedAt: start.Add(time.Second),
		Seed: 1, Nodes: 3, Clock: "monotonic", LogScan: &session.LogScan{Markers: []string{"panic"}},
		Workload: session.Workload{OpsProduced: n, IntervalNS: int64(n) * 10, Throughput: []session.Interval{{StartNS: 0, Ops: n}}}}
	data, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(adir, "run.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(adir, "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	if err := fixture.WriteHistory(f, &history.Meta{Clock: "monotonic", Schema: history.Schema}, ops); err != nil {
		b.Fatal(err)
	}
	f.Close()
	p, err := plan.ParseBytes("bench.md", []byte(benchPlan))
	if err != nil {
		b.Fatal(err)
	}
	return dir, p, ops
}

type kvIn struct {
	write bool
	key   string
	val   string
}

// rawKV is the obvious hand-written porcupine kv model, partitioned by key.
var rawKV = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		m := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range h {
			k := op.Input.(kvIn).key
			if _, ok := m[k]; !ok {
				order = append(order, k)
			}
			m[k] = append(m[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, m[k])
		}
		return out
	},
	Init: func() any { return "null" },
	Step: func(st, in, out any) (bool, any) {
		i := in.(kvIn)
		if i.write {
			return true, i.val
		}
		return out.(string) == st.(string), st
	},
}

func rawOps(ops []history.Op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		in := kvIn{write: o.OpType == "write", key: o.Key, val: string(o.Input)}
		out[i] = porcupine.Operation{ClientId: i % 16, Input: in, Call: o.InvokeTS, Output: string(o.Output), Return: *o.CompleteTS}
	}
	return out
}

// BenchmarkAnalyzeVsPorcupine compares analyze end to end (read run.json,
// parse + validate the JSONL history, check per key, audits, verdicts)
// with raw porcupine CheckOperationsVerbose on pre-built operations of
// the same history, in one run.
func BenchmarkAnalyzeVsPorcupine(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		if n > 100_000 && testing.Short() {
			continue
		}
		dir, p, ops := benchSession(b, n)
		pops := rawOps(ops)
		b.Run(fmt.Sprintf("analyze/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Analyze(context.Background(), dir, p, Options{Workers: 2})
				if err != nil {
					b.Fatal(err)
				}
				if v := rep.Scenarios[0].Verdict; v != PassSmoke {
					b.Fatalf("verdict %s: %v", v, rep.Scenarios[0].Reasons)
				}
			}
		})
		b.Run(fmt.Sprintf("porcupine/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, _ := porcupine.CheckOperationsVerbose(rawKV, pops, time.Minute); res != porcupine.Ok {
					b.Fatalf("porcupine: %v", res)
				}
			}
		})
	}
}

// heapInuse is runtime.MemStats.HeapInuse read through runtime/metrics,
// which does not stop the world: sampling it every millisecond does not
// perturb what is being measured.
func heapInuse(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// measurePeak runs f and returns its wall time and the peak HeapInuse seen
// while it ran, above the level just before it started (the pre-built
// inputs both sides share are not counted).
func measurePeak(f func()) (time.Duration, uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	runtime.GC()
	base := heapInuse(s)
	peak := base
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		for {
			peak = max(peak, heapInuse(s))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	t0 := time.Now()
	f()
	d := time.Since(t0)
	close(done)
	wg.Wait()
	return d, peak - base
}

// BenchmarkAnalyzePaired is the headline figure of issue 4: analyze end to
// end (run.json, parse + validate the JSONL history, per-key check,
// audits, verdict) and raw porcupine CheckOperationsVerbose on the same
// pre-built operations are timed back to back in every iteration, in
// alternating order, so load on the shared machine hits both alike. It
// reports the ratio of summed times (analyze/porcupine), each side's mean
// time, and each side's peak heap in use above the shared inputs. The 1M
// run (skipped under -short) shows growth is linear in the op count.
func BenchmarkAnalyzePaired(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		if n > 100_000 && testing.Short() {
			continue
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir, p, ops := benchSession(b, n)
			pops := rawOps(ops)
			analyze := func() {
				rep, err := Analyze(context.Background(), dir, p, Options{Workers: 2})
				if err != nil {
					b.Fatal(err)
				}
				if v := rep.Scenarios[0].Verdict; v != PassSmoke {
					b.Fatalf("verdict %s: %v", v, rep.Scenarios[0].Reasons)
				}
			}
			raw := func() {
				if res, _ := porcupine.CheckOperationsVerbose(rawKV, pops, time.Minute); res != porcupine.Ok {
					b.Fatalf("porcupine: %v", res)
				}
			}
			var ours, theirs time.Duration
			var ourPeak, theirPeak uint64
			i := 0
			for b.Loop() {
				var d1, d2 time.Duration
				var p1, p2 uint64
				if i%2 == 0 {
					d1, p1 = measurePeak(analyze)
					d2, p2 = measurePeak(raw)
				} else {
					d2, p2 = measurePeak(raw)
					d1, p1 = measurePeak(analyze)
				}
				i++
				ours, theirs = ours+d1, theirs+d2
				ourPeak, theirPeak = max(ourPeak, p1), max(theirPeak, p2)
			}
			b.ReportMetric(float64(ours)/float64(theirs), "analyze/porcupine")
			b.ReportMetric(float64(ours.Milliseconds())/float64(i), "analyze-ms")
			b.ReportMetric(float64(theirs.Milliseconds())/float64(i), "porcupine-ms")
			b.ReportMetric(float64(ourPeak)/(1<<20), "analyze-peak-MB")
			b.ReportMetric(float64(theirPeak)/(1<<20), "porcupine-peak-MB")
			b.ReportMetric(0, "ns/op") // the pair's time is not a figure of either side
		})
	}
}
