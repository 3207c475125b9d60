package checker

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkMutualExclusionPaired runs the whole mutual-exclusion check
// (decode, overlap and token finders, porcupine without the open acquires
// first) and plain porcupine over all the decoded mutex ops back to back
// in every iteration, and reports the ratio of their summed times.
func BenchmarkMutualExclusionPaired(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(map[int]string{100_000: "100k", 1_000_000: "1M"}[n], func(b *testing.B) {
			s := &lockSim{rng: rand.New(rand.NewPCG(42, 0))}
			ops := s.run(n, 8, bugNone)
			_, byKey, _, err := lockKeys("h", ops, false, nil)
			if err != nil {
				b.Fatal(err)
			}
			var ours, theirs time.Duration
			for i := 0; i < b.N; i++ {
				runtime.GC()
				t0 := time.Now()
				if res, err := Run(context.Background(), Spec{Model: "lock", Checker: MutualExclusion}, ops, nil); err != nil || res.Outcome != Valid {
					b.Fatal(err, res.Outcome)
				}
				t1 := time.Now()
				runtime.GC()
				t2 := time.Now()
				if _, decided := runMutex(context.Background(), mutexOps(byKey["L"], true)); !decided {
					b.Fatal("porcupine undecided")
				}
				ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t2)
			}
			b.ReportMetric(float64(ours)/float64(theirs), "check/plain-porcupine")
			b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "check-ms/op")
			b.ReportMetric(float64(theirs.Milliseconds())/float64(b.N), "plain-porcupine-ms/op")
		})
	}
}

// naiveOverlaps is the obvious overlap finder: every pair of holds.
func naiveOverlaps(hs []hold) int {
	n := 0
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			a, h := hs[i], hs[j]
			if a.grant.proc != h.grant.proc && max(a.start, h.start) < min(a.end, h.end) {
				n++
			}
		}
	}
	return n
}

// BenchmarkLeaseSafetyPaired times the whole lease-safety check of a
// 100k-op history, and the overlap sweep against the naive all-pairs scan
// over the same definite holds, back to back in every iteration.
func BenchmarkLeaseSafetyPaired(b *testing.B) {
	s := &leaseSim{rng: rand.New(rand.NewPCG(42, 0))}
	ops := s.run(100_000, 8, 400, 20, bugNone)
	params := map[string]string{"ttl": "400", "uncertainty": "20", "guarded": "write"}
	_, byKey, _, err := lockKeys("h", ops, true, map[string]bool{"write": true})
	if err != nil {
		b.Fatal(err)
	}
	bud := newBudget(context.Background())
	hs := definiteHolds(bud, byKey["L"], 380)
	var check, sweep, naive time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if res, err := Run(context.Background(), Spec{Model: "lease", Checker: LeaseSafety, Params: params}, ops, nil); err != nil || res.Outcome != Valid {
			b.Fatal(err, res.Outcome)
		}
		t1 := time.Now()
		var an anomalies
		overlaps(bud, "L", "lease", hs, 0, &an)
		t2 := time.Now()
		if naiveOverlaps(hs) != 0 || len(an.list) != 0 {
			b.Fatal("an overlap in a correct history")
		}
		check, sweep, naive = check+t1.Sub(t0), sweep+t2.Sub(t1), naive+time.Since(t2)
	}
	b.ReportMetric(float64(naive)/float64(sweep), "naive/sweep")
	b.ReportMetric(float64(check.Milliseconds())/float64(b.N), "check-ms/op")
	b.ReportMetric(float64(len(hs)), "holds")
}
