package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
)

// rawOpsTimeouts is rawOps for a history with timed-out writes: their
// return is after every other event, as a porcupine user would write it.
func rawOpsTimeouts(ops []history.Op) []porcupine.Operation {
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

// BenchmarkPrunePaired checks generated kv read/write histories (16
// processes, 20k ops over 200 keys) with a share of the writes timed out,
// with dstgen and with raw porcupine on the same ops, back to back in
// every iteration, and reports the ratio of the summed times (noise hits
// both alike). Both must give the same verdict (valid). Raw porcupine gets
// rawLimit per history; when it hits it, the ratio is a lower bound.
func BenchmarkPrunePaired(b *testing.B) {
	const rawLimit = 60 * time.Second
	for _, bad := range []bool{false, true} {
		for _, frac := range []float64{0, 0.1, 0.2, 0.4} {
			b.Run(fmt.Sprintf("bad=%v/timeouts=%d%%", bad, int(frac*100)), func(b *testing.B) {
				ops := genKVTimeouts(20_000, 20, 16, frac, 42)
				want, wantRaw := Valid, porcupine.Ok
				if bad {
					mutate("kv", ops, rand.New(rand.NewPCG(42, 7)))
					want, wantRaw = Invalid, porcupine.Illegal
				}
				raw := rawOpsTimeouts(ops)
				var ours, theirs time.Duration
				capped := false
				for i := 0; i < b.N; i++ {
					runtime.GC()
					t0 := time.Now()
					res, err := Run(context.Background(), Spec{Model: "kv", Checker: Linearizability}, ops, nil)
					if err != nil || res.Outcome != want {
						b.Fatal(err, res.Outcome, res.Reason)
					}
					t1 := time.Now()
					runtime.GC()
					t2 := time.Now()
					switch r := porcupine.CheckOperationsTimeout(rawKVModel, raw, rawLimit); r {
					case wantRaw:
					case porcupine.Unknown:
						capped = true
					default:
						b.Fatalf("porcupine: %s, dstgen: %s", r, want)
					}
					ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t2)
				}
				b.ReportMetric(float64(theirs)/float64(ours), "x-faster")
				b.ReportMetric(float64(ours.Microseconds())/1000/float64(b.N), "dstgen-ms/op")
				b.ReportMetric(float64(theirs.Microseconds())/1000/float64(b.N), "porcupine-ms/op")
				if capped {
					b.ReportMetric(1, "porcupine-hit-limit")
				}
			})
		}
	}
}
