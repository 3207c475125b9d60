// Package gcstart spares a short-lived command the garbage collections a
// fresh heap runs through while it grows to its working size: the
// collector's first goal is a few MiB, so a command that builds a 50 MiB
// structure collects five times or so while nearly nothing it allocated
// is garbage yet. The Go compiler does the same for its own start
// (cmd/compile's AdjustStartingHeap).
package gcstart

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Defer puts the first collection off until the heap reaches about goal
// bytes; from the first collection on, the collector runs at its usual
// pace again (GOGC's, 100 by default), so a large heap is collected as
// before and at most goal bytes of garbage ever wait for a first
// collection. A GOGC or GOMEMLIMIT set by the user is left alone.
func Defer(goal uint64) {
	if goal == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	now := s[0].Value.Uint64()
	if now == 0 || goal <= now {
		return
	}
	pct := int(min(goal/now*100, 1<<20))
	old := debug.SetGCPercent(pct)
	// The sentinel dies with the first collection; its finalizer then
	// puts the pace back. It holds a pointer, so the allocator does not
	// pack it with other small objects that would keep it alive.
	sentinel := &struct {
		p *int
		_ [16]byte
	}{p: new(int)}
	runtime.SetFinalizer(sentinel, func(any) { debug.SetGCPercent(old) })
}
