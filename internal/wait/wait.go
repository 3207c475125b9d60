// Package wait is the one context-aware sleep of dstgen: every poll loop
// (a job's end, a victim signal, quiesce, health) waits through Sleep, so
// SIGINT/SIGTERM or a deadline ends the wait at once.
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever is first; it returns ctx's
// error when ctx ended first (or had ended already), nil otherwise.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
