package scenarios

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

// maxSeconds bounds every time in the file (30 days): longer than any
// soak a plan states, and far from time.Duration's overflow, so a typo of
// a few extra digits is an error rather than a wrapped-around schedule.
const maxSeconds = 30 * 24 * 3600

// ParseSeconds reads a time of scenarios.yml: a Go duration ("30s",
// "1m30s", "0s", "250ms") or a bare number of seconds ("45", "1.5"), as
// hand-written files and YAML numbers give them. Negative times and times
// over 30 days are errors.
func ParseSeconds(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("want a duration like 30s or 1m30s")
	}
	var d time.Duration
	if v, err := strconv.ParseFloat(t, 64); err == nil && !strings.ContainsAny(t, "xXpP_") {
		// ParseFloat also takes "0x1p4", "Inf" and "1_0"; seconds here
		// are plain decimals, so those fall through to the error below.
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxSeconds {
			return 0, fmt.Errorf("want seconds between 0 and %d", maxSeconds)
		}
		d = time.Duration(v * float64(time.Second))
	} else if pd, err := time.ParseDuration(t); err == nil {
		d = pd
	} else {
		return 0, errors.New("want a duration like 30s or 1m30s")
	}
	if d < 0 {
		return 0, errors.New("want a duration ≥ 0")
	}
	if d > maxSeconds*time.Second {
		return 0, fmt.Errorf("longer than %s", maxSeconds*time.Second)
	}
	return d, nil
}

// Duration is how long the scenario's workload runs at tier: the
// Workload's own duration_s when the plan states one, else the tier's
// duration_s. Neither set (or the tier unknown) is an error naming what
// to set, at the scenario's line.
func (s *Scenario) Duration(tier string) (time.Duration, error) {
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	if s.Workload.DurationS != nil {
		return secs(*s.Workload.DurationS), nil
	}
	t, ok := s.Tiers[tier]
	if !ok {
		return 0, s.errf("%s has no tier %s: set workload.duration_s or tiers.%s.duration_s", s.ID, shown(tier), tier)
	}
	if t.NotProvided {
		return 0, s.errf("%s tiers.%s is not provided (%s): set workload.duration_s or run another tier", s.ID, tier, t.Reason)
	}
	if t.DurationS == nil {
		return 0, s.errf("%s states no run length for tier %s: set workload.duration_s or tiers.%s.duration_s", s.ID, tier, tier)
	}
	return secs(*t.DurationS), nil
}

// Seeds is the number of distinct seeds the tier asks for (tiers.<tier>.seeds),
// 1 when it states none.
func (s *Scenario) Seeds(tier string) int {
	if t, ok := s.Tiers[tier]; ok && t.Seeds != nil && *t.Seeds >= 1 && *t.Seeds <= math.MaxInt32 {
		return int(*t.Seeds)
	}
	return 1
}

// errf is an error at the scenario's line; the file is not known to a
// Scenario, so it is "scenarios.yml" unless path was set by Load.
func (s *Scenario) errf(format string, args ...any) error {
	file := s.file
	if file == "" {
		file = "scenarios.yml"
	}
	return fileline.Errorf(file, s.Line, format, args...)
}
