package checker

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/testsupport/fixture"
)

// BenchmarkPrunePaired checks generated kv read/write histories (16
// processes, 20k ops over 20 keys) with a share of the writes timed out,
// good and with one stale read, with dstgen, with dstgen without the
// pruning pass, and with raw porcupine on the same ops, back to back in
// every iteration, and reports the ratios of the summed times (noise hits
// all alike). All must give the same verdict. Each gets limit per
// history; one that hits it is reported, and its ratio is a lower bound.
func BenchmarkPrunePaired(b *testing.B) {
	const limit = 60 * time.Second
	for _, bad := range []bool{false, true} {
		for _, frac := range []float64{0, 0.1, 0.2, 0.4} {
			b.Run(fmt.Sprintf("bad=%v/timeouts=%d%%", bad, int(frac*100)), func(b *testing.B) {
				ops := fixture.KVTimeouts(20_000, 20, 16, frac, 42)
				want, wantRaw := Valid, porcupine.Ok
				if bad {
					if !fixture.StaleRead(ops) {
						b.Fatal("no read to make stale")
					}
					want, wantRaw = Invalid, porcupine.Illegal
				}
				raw := fixture.PorcupineOps(ops)
				var ours, noPass, theirs time.Duration
				noPassCapped, rawCapped := false, false
				for i := 0; i < b.N; i++ {
					runtime.GC()
					t0 := time.Now()
					res, err := Run(context.Background(), Spec{Model: "kv", Checker: Linearizability, Timeout: limit}, ops, nil)
					if err != nil || res.Outcome != want {
						b.Fatal(err, res.Outcome, res.Reason)
					}
					ours += time.Since(t0)
					runtime.GC()
					t0 = time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), limit)
					res, err = checkLin(ctx, Spec{Model: "kv", Checker: Linearizability}, linModels["kv"], ops, linOpts{})
					cancel()
					switch {
					case err != nil:
						b.Fatal(err)
					case res.Outcome == Unknown:
						noPassCapped = true
					case res.Outcome != want:
						b.Fatalf("without the pass: %s, with: %s", res.Outcome, want)
					}
					noPass += time.Since(t0)
					runtime.GC()
					t0 = time.Now()
					switch r := porcupine.CheckOperationsTimeout(fixture.PorcupineKV, raw, limit); r {
					case wantRaw:
					case porcupine.Unknown:
						rawCapped = true
					default:
						b.Fatalf("porcupine: %s, dstgen: %s", r, want)
					}
					theirs += time.Since(t0)
				}
				b.ReportMetric(float64(theirs)/float64(ours), "x-faster-than-porcupine")
				b.ReportMetric(float64(noPass)/float64(ours), "x-faster-than-no-pass")
				b.ReportMetric(float64(ours.Microseconds())/1000/float64(b.N), "dstgen-ms/op")
				if noPassCapped {
					b.ReportMetric(1, "no-pass-hit-limit")
				}
				if rawCapped {
					b.ReportMetric(1, "porcupine-hit-limit")
				}
			})
		}
	}
}
