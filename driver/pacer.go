package driver

// Stage 2a: when each op starts. An open-loop, constant-arrival-rate
// schedule shared by every client: slot k is due at start + k/rate
// whatever the SUT's latency, so a stall (GC, a slow op, clients blocked
// by a fault) leaves slots owed, and the clients issue them as soon as
// they are free: the run catches up to the planned average. The owed
// slots are bounded, so a long stall is never answered with an unbounded
// burst.

import (
	"context"
	"math"
	"sync"
	"time"
)

// maxLag is how far behind its schedule the pacer may fall and still
// catch up: at most rate × maxLag slots are owed after a stall. One
// second is the analyzer's default measurement interval
// (docs/verdicts.md §6 check 1): a shorter stall is made up within about
// an interval, a longer one shows as the dip it is.
const maxLag = time.Second

// pacer hands out the schedule's slots. It is safe for concurrent clients.
type pacer struct {
	mu      sync.Mutex
	start   time.Time
	rate    float64 // slots per second, > 0
	next    int64   // index of the next slot to hand out
	maxOwed int64   // slots that may be overdue at once (≥ 1)
}

func newPacer(rate float64, start time.Time) *pacer {
	return &pacer{start: start, rate: rate, maxOwed: max(1, int64(math.Ceil(rate*maxLag.Seconds())))}
}

// slot is the due time of slot k. Computed from k rather than summed, so
// the average rate carries no rounding drift over a long run.
func (p *pacer) slot(k int64) time.Time {
	return p.start.Add(time.Duration(float64(k) / p.rate * float64(time.Second)))
}

// reserve takes the next slot and returns when it is due; a slot in the
// past is due at once (catching up). When more than maxOwed slots are due
// by now, the oldest of them are dropped.
func (p *pacer) reserve(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Slots 0..due-1 are due at or before now.
	due := int64(math.Floor(now.Sub(p.start).Seconds()*p.rate)) + 1
	if due-p.next > p.maxOwed {
		p.next = due - p.maxOwed
	}
	t := p.slot(p.next)
	p.next++
	return t
}

// wait blocks until the caller's slot is due. It returns an error when
// ctx ends first or the slot lies past ctx's deadline (the run would end
// before it), so pacing never stretches a run.
func (p *pacer) wait(ctx context.Context) error {
	t := p.reserve(time.Now())
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && t.After(dl) {
		return context.DeadlineExceeded
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
