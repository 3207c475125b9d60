package driver

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// simulate runs clients against p on a fake clock: a client reserves a
// slot when it is free, starts its op when the slot is due and is then
// busy for latency(start). It returns the ops started in each second of
// [0, dur). No sleeps: time is whatever the simulation says it is.
func simulate(p *pacer, clients int, dur time.Duration, latency func(start time.Duration) time.Duration) []int {
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
		start := max(now, p.reserve(t0.Add(now)).Sub(t0))
		if start >= dur {
			return counts
		}
		counts[start/time.Second]++
		free[i] = start + latency(start)
	}
}

// stall makes every op started in [from, from+30ms) take d, the others 1 ms.
func stall(from, d time.Duration) func(time.Duration) time.Duration {
	return func(start time.Duration) time.Duration {
		if start >= from && start < from+30*time.Millisecond {
			return d
		}
		return time.Millisecond
	}
}

// After a stall the clients issue the owed slots at once, so every second
// still holds the planned number of op starts; a pacer that may owe
// nothing (the closed-loop limiter the drivers had) loses them, which
// shows this measure can fail.
func TestPacerCatchesUpAfterAStall(t *testing.T) {
	const rate, clients = 100, 4
	cases := []struct {
		name    string
		latency func(time.Duration) time.Duration
		noOwed  bool
		want    []int // ops started per second; -1: fewer than the rate
	}{
		{"no stall", stall(time.Hour, 0), false, []int{100, 100, 100, 100, 100}},
		{"a 400 ms stall of every client", stall(2*time.Second, 400*time.Millisecond), false, []int{100, 100, 100, 100, 100}},
		{"a stall across a second's end", stall(2800*time.Millisecond, 400*time.Millisecond), false, []int{100, 100, 100, 100, 100}},
		{"the same stall without catch-up", stall(2*time.Second, 400*time.Millisecond), true, []int{100, 100, -1, 100, 100}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPacer(rate, t0)
			if c.noOwed {
				p.maxOwed = 1
			}
			got := simulate(p, clients, 5*time.Second, c.latency)
			for s, n := range got {
				if w := c.want[s]; (w >= 0 && n != w) || (w < 0 && n >= rate*9/10) {
					t.Errorf("second %d: %d op starts, want %d (all: %v)", s, n, w, got)
				}
			}
		})
	}
}

// The burst after a long stall is bounded: at most rate × maxLag slots
// are due at once, the older ones are dropped, and the schedule goes on
// from there.
func TestPacerBurstIsBounded(t *testing.T) {
	cases := []struct {
		rate  float64
		stall time.Duration
		want  int // slots due at once when the clients come back
	}{
		{100, 300 * time.Millisecond, 30}, // slots 1..30 (10 ms apart) owed
		{100, 5 * time.Second, 100},       // capped at rate × maxLag
		{100, time.Hour, 100},
		{0.5, 10 * time.Second, 1}, // below 1 op/s: never less than one
	}
	for _, c := range cases {
		p := newPacer(c.rate, t0)
		p.reserve(t0) // slot 0, then nothing until the stall ends
		now := t0.Add(c.stall)
		due := 0
		for !p.reserve(now).After(now) {
			due++
		}
		if due != c.want {
			t.Errorf("rate %v, stall %v: %d slots due at once, want %d", c.rate, c.stall, due, c.want)
		}
	}
}

// Slot times come from the slot's index, so a long run at a rate that is
// not a whole number of nanoseconds apart does not drift.
func TestPacerScheduleDoesNotDrift(t *testing.T) {
	p := newPacer(3, t0) // 333.33… ms apart
	var last time.Time
	for k := 0; k < 3*3600; k++ {
		last = p.reserve(p.slot(int64(k)))
	}
	if want := t0.Add(time.Hour - time.Second/3); last.Sub(want).Abs() > time.Microsecond {
		t.Errorf("slot 10799 at %v, want %v", last.Sub(t0), want.Sub(t0))
	}
}
