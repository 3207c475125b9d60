package orchestrator

import (
	"time"

	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Schedule expands a scenario's faults into windows: a pure function of
// (scenario, seed, run length), so a re-run replays it exactly.
func Schedule(unit string, faults []scenarios.Fault, seed int64, dur time.Duration, maxFaults int) ([]session.ScheduledFault, error) {
	return nil, nil
}
