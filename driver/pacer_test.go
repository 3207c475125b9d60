package driver

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// simulate runs clients against lim on a fake clock: a client reserves a
// slot when it is free, starts its op when the slot is due and is then
// busy for latency(start). It returns the ops started in each second of
// [0, dur). No sleeps: time is whatever the simulation says it is.
func simulate(lim *rate.Limiter, clients int, dur time.Duration, latency func(start time.Duration) time.Duration) []int {
	free := make([]time.Duration, clients) // when each client is next free
	counts := make([]int, dur/time.Second)
	for {
		i := 0
		for j := range free {
			if free[j] < free[i] {
				i = j
			}
		}
		now := free[i]
		start := now + lim.ReserveN(t0.Add(now), 1).DelayFrom(t0.Add(now))
		if start >= dur {
			return counts
		}
		counts[start/time.Second]++
		free[i] = start + latency(start)
	}
}

// stall makes every op started in [from, from+50ms) take d — so every one
// of the 4 clients, 10 ms apart, is caught — and the others 1 ms.
func stall(from, d time.Duration) func(time.Duration) time.Duration {
	return func(start time.Duration) time.Duration {
		if start >= from && start < from+50*time.Millisecond {
			return d
		}
		return time.Millisecond
	}
}

// After a stall the clients issue the owed ops at once, so the run keeps
// the planned average, and a second in which the stall began and ended
// still holds the planned number of op starts; a limiter that owes nothing
// (burst 1: what the drivers had) loses them, which shows this measure
// can fail.
func TestPacerCatchesUpAfterAStall(t *testing.T) {
	const r, clients = 100, 4
	cases := []struct {
		name    string
		latency func(time.Duration) time.Duration
		noOwed  bool
		want    []int // op starts per second (±1); -1: fewer than 90% of the rate; -2: any
		total   int   // op starts in the 5 s (±1); -1: fewer than 470
	}{
		{"no stall", stall(time.Hour, 0), false, []int{100, 100, 100, 100, 100}, 500},
		{"a 400 ms stall of every client", stall(2*time.Second, 400*time.Millisecond), false, []int{100, 100, 100, 100, 100}, 500},
		// Owed in second 2, issued in second 3: the average holds.
		{"a stall across a second's end", stall(2800*time.Millisecond, 400*time.Millisecond), false, []int{100, 100, -1, -2, 100}, 500},
		{"the same stall without catch-up", stall(2*time.Second, 400*time.Millisecond), true, []int{100, 100, -1, 100, 100}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := newPacer(r, t0)
			if c.noOwed {
				lim = rate.NewLimiter(r, 1)
			}
			got := simulate(lim, clients, 5*time.Second, c.latency)
			total := 0
			for s, n := range got {
				total += n
				// ±1: the bucket's fractional tokens may move an op start
				// across a second's end.
				if w := c.want[s]; (w >= 0 && (n < w-1 || n > w+1)) || (w == -1 && n >= r*9/10) {
					t.Errorf("second %d: %d op starts, want %d (all: %v)", s, n, w, got)
				}
			}
			if (c.total >= 0 && (total < c.total-1 || total > c.total+1)) || (c.total < 0 && total >= 470) {
				t.Errorf("%d op starts in 5 s (%v), want %d", total, got, c.total)
			}
		})
	}
}

// The burst after a long stall is bounded: at most rate × maxLag ops are
// due at once, the older ones are dropped, and the schedule goes on from
// there.
func TestPacerBurstIsBounded(t *testing.T) {
	cases := []struct {
		rate  float64
		stall time.Duration
		want  int // ops due at once when the clients come back
	}{
		{100, 300 * time.Millisecond, 30}, // the 30 owed (10 ms apart)
		{100, 5 * time.Second, 100},       // capped at rate × maxLag
		{100, time.Hour, 100},
		{0.5, 10 * time.Second, 1}, // below 1 op/s: never less than one
	}
	for _, c := range cases {
		lim := newPacer(c.rate, t0)
		if d := lim.ReserveN(t0, 1).DelayFrom(t0); d != 0 {
			t.Errorf("rate %v: the first op waits %v, want none", c.rate, d)
		}
		now := t0.Add(c.stall)
		due := 0
		for lim.ReserveN(now, 1).DelayFrom(now) == 0 {
			due++
		}
		if due != c.want {
			t.Errorf("rate %v, stall %v: %d ops due at once, want %d", c.rate, c.stall, due, c.want)
		}
	}
}

// An hour at 3 ops/s (333.33… ms apart) starts 3 × 3600 ops: the schedule
// does not drift.
func TestPacerScheduleDoesNotDrift(t *testing.T) {
	got := simulate(newPacer(3, t0), 1, time.Hour, func(time.Duration) time.Duration { return 0 })
	total := 0
	for _, n := range got {
		total += n
	}
	if total < 3*3600-1 || total > 3*3600+1 {
		t.Errorf("%d op starts in an hour at 3 ops/s, want 10800", total)
	}
}
