package driver

// Stage 2a: when each op starts. An open-loop, constant-arrival-rate
// schedule shared by every client — a token bucket (golang.org/x/time/rate)
// filled at the rate — so a stall (GC, a slow op, clients blocked by a
// fault) leaves ops owed as tokens, and the clients issue them as soon as
// they are free: the run catches up to the planned average. The bucket's
// size bounds what is owed, so a long stall is never answered with an
// unbounded burst.

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// maxLag is how far behind its schedule the pacer may fall and still
// catch up: at most rate × maxLag ops are owed after a stall. One second
// is the analyzer's default measurement interval (docs/verdicts.md §6
// check 1): a shorter stall is made up within about an interval, a longer
// one shows as the dip it is.
const maxLag = time.Second

// newPacer is the schedule at r ops/s from start. Its bucket starts with
// one token, not full: the first op goes at once, and no burst opens the
// run (the burst is for catching up, and at the start nothing is owed).
func newPacer(r float64, start time.Time) *rate.Limiter {
	burst := max(1, int(math.Ceil(r*maxLag.Seconds())))
	lim := rate.NewLimiter(rate.Limit(r), burst)
	lim.AllowN(start, burst-1)
	return lim
}
