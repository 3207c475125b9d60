package orchestrator

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// maxWindowsPerFault bounds the expansion of one repeating fault, so a
// tiny `every` over a long run is refused rather than allocating without
// limit.
const maxWindowsPerFault = 10000

// expandSchedule expands a scenario's faults into windows: a pure function of
// (scenario, seed, run length), so a re-run replays it exactly. Epochs are
// "<unit>-w<n>" in time order (unit = scenario or arm id with "/" → ".").
//
// Per fault: the first window opens at `at` (without `at`, after one
// `every`; without either, at 0) and lasts `for`. With `every` it repeats
// every period until `times` windows exist, or until a window would not
// end (at+for) strictly before dur. Each repeat after the first is shifted
// later by a jitter drawn from the seed in [0, jitter]; the first window
// keeps the plan's `at`. A shifted repeat never starts before the previous
// window of the same fault entry has ended, so windows of one entry never
// overlap. Pick is a seed-derived non-negative int64 per window for the
// nemesis's own choices (random targets, partition shapes).
//
// maxFaults > 0 keeps only the first maxFaults windows in time order (the
// tier's fault budget). A fault entry whose first window does not fit in
// dur is left out and named in unfit — a shorter tier runs the plan's early
// faults only — unless no window fits at all, which is an error. A time
// that does not parse, a TODO, a repeat without `every`, `every` shorter
// than `for`, or an unbounded repeat is an error naming the fault's line.
func expandSchedule(unit string, faults []scenarios.Fault, seed int64, dur time.Duration, maxFaults int) (_ []session.ScheduledFault, unfit []string, _ error) {
	type win struct {
		sf    session.ScheduledFault
		fault int
		rep   int
	}
	var all []win
	for i, f := range faults {
		where := fmt.Sprintf("faults[%d] (%s, line %d)", i, f.Nemesis, f.Line)
		ft, err := timesOf(f, dur)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		at, length, every, jitter := ft.at, ft.length, ft.every, ft.jitter
		n := f.Times
		if n == 0 {
			n = 1
			if every > 0 {
				n = maxWindowsPerFault + 1 // bounded by dur below
			}
		}
		// One stream per fault entry: adding a fault to scenarios.yml does
		// not change the draws of the faults before it.
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
		prevEnd := time.Duration(-1)
		for k := 0; k < n; k++ {
			start := at + time.Duration(k)*every
			shift := time.Duration(0)
			if jitter > 0 {
				shift = time.Duration(rng.Int64N(int64(jitter) + 1))
			}
			pick := rng.Int64()
			if k > 0 {
				start += shift
				if start < prevEnd {
					start = prevEnd
				}
			}
			end := start + length
			if dur > 0 && end >= dur {
				if k == 0 {
					unfit = append(unfit, fmt.Sprintf("%s: the window at %s for %s does not end before the run's %s", where, start, length, dur))
				}
				break
			}
			if k == maxWindowsPerFault {
				return nil, nil, fmt.Errorf("%s: every %s makes more than %d windows in %s", where, every, maxWindowsPerFault, dur)
			}
			prevEnd = end
			all = append(all, win{sf: session.ScheduledFault{
				Nemesis: f.Nemesis, Targets: f.Targets,
				AtNS: int64(start), ForNS: int64(length),
				Params: maps.Clone(f.Params), Pick: pick,
			}, fault: i, rep: k})
		}
	}
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].sf.AtNS != all[b].sf.AtNS {
			return all[a].sf.AtNS < all[b].sf.AtNS
		}
		if all[a].fault != all[b].fault {
			return all[a].fault < all[b].fault
		}
		return all[a].rep < all[b].rep
	})
	if len(all) == 0 && len(unfit) > 0 {
		return nil, nil, errors.New(unfit[0])
	}
	if maxFaults > 0 && len(all) > maxFaults {
		all = all[:maxFaults]
	}
	prefix := strings.ReplaceAll(unit, "/", ".")
	out := make([]session.ScheduledFault, len(all))
	for i, w := range all {
		w.sf.FaultEpoch = fmt.Sprintf("%s-w%d", prefix, i+1)
		out[i] = w.sf
	}
	return out, unfit, nil
}

// faultTime parses one of a fault's times ("120s", "1m30s"); "" is 0.
func faultTime(s, field string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if strings.Contains(s, "TODO") {
		return 0, fmt.Errorf("%s is still %q: write the time", field, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration like \"120s\" or \"1m30s\"", field, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %s is negative", field, d)
	}
	return d, nil
}

// faultTimes are one fault's at, for, every and jitter.
type faultTimes struct{ at, length, every, jitter time.Duration }

// timesOf parses a fault's times and refuses the combinations Schedule
// cannot expand: a negative times, a repeat without every, every shorter
// than for, an unbounded repeat without a run length, too many windows.
func timesOf(f scenarios.Fault, dur time.Duration) (faultTimes, error) {
	var ft faultTimes
	for _, t := range []struct {
		v    string
		name string
		into *time.Duration
	}{{f.At, "at", &ft.at}, {f.For, "for", &ft.length}, {f.Every, "every", &ft.every}, {f.Jitter, "jitter", &ft.jitter}} {
		d, err := faultTime(t.v, t.name)
		if err != nil {
			return ft, err
		}
		*t.into = d
	}
	if strings.TrimSpace(f.At) == "" && ft.every > 0 {
		ft.at = ft.every
	}
	switch {
	case f.Times < 0:
		return ft, fmt.Errorf("times %d is negative", f.Times)
	case f.Times > 1 && ft.every == 0:
		return ft, fmt.Errorf("times %d needs every (the repeat period)", f.Times)
	case ft.every > 0 && ft.every < ft.length:
		return ft, fmt.Errorf("every %s is shorter than for %s: windows of one fault would overlap", ft.every, ft.length)
	case ft.every > 0 && f.Times == 0 && dur <= 0:
		return ft, fmt.Errorf("every %s without times needs a run length to stop at", ft.every)
	case f.Times > maxWindowsPerFault:
		return ft, fmt.Errorf("times %d is over the limit of %d windows per fault", f.Times, maxWindowsPerFault)
	}
	return ft, nil
}
