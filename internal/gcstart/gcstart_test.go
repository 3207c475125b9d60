package gcstart

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestDeferThenUsualPace: the pace is raised until the first collection
// and is back to what it was after it.
func TestDeferThenUsualPace(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	Defer(1 << 40)
	if p := gcPercent(); p <= before {
		t.Fatalf("GC percent %d after Defer, was %d: not raised", p, before)
	}
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != before {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after collections, want %d back", gcPercent(), before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDeferLeavesUserSettings: a GOGC the user set is theirs.
func TestDeferLeavesUserSettings(t *testing.T) {
	t.Setenv("GOGC", "50")
	before := gcPercent()
	Defer(1 << 40)
	if p := gcPercent(); p != before {
		t.Fatalf("GC percent %d with GOGC set, want %d untouched", p, before)
	}
}
