package runner

import (
	"context"
	"fmt"

	"github.com/dstgen/dstgen/env"
)

// MeasureClock measures host's clock against this machine's over the
// pool's open connection, NTP-style (the same loop `dstgen probe` uses):
// samples round trips, the fastest one kept. samples ≤ 0 means
// ClockSamples; more than MaxClockSamples is capped. The orchestrator
// records the result in run.json timeline.hosts so fault windows and op
// timestamps land on one clock.
func MeasureClock(ctx context.Context, pool *Pool, host env.Host, samples int) (ClockSample, error) {
	if samples <= 0 {
		samples = ClockSamples
	}
	if samples > MaxClockSamples {
		samples = MaxClockSamples
	}
	cs, err := measurePoolClock(ctx, pool, host, samples)
	if err != nil {
		return cs, fmt.Errorf("measure clock of %s: %w", host.Name, err)
	}
	return cs, nil
}
