package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The holder-unavailable warning is said once per process group (one
// `task` call chain of many dstgen calls); every other diagnostic, and
// the warning of another call chain, passes.
func TestHolderWarnOnce(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "cache", "dstgen", "holder-warned")
	warn := holderUnavailable + " (holder dial: connection refused); connecting directly\n"
	other := "dstgen: host h1: connection lost, reconnecting\n"
	var out bytes.Buffer
	first := &holderWarnOnce{w: &out, marker: marker, pgid: 4242}
	second := &holderWarnOnce{w: &out, marker: marker, pgid: 4242}
	later := &holderWarnOnce{w: &out, marker: marker, pgid: 4343}
	for _, step := range []struct {
		w    *holderWarnOnce
		line string
	}{{first, warn}, {first, warn}, {first, other}, {second, warn}, {second, other}, {later, warn}, {later, warn}} {
		if n, err := step.w.Write([]byte(step.line)); err != nil || n != len(step.line) {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	if got := strings.Count(out.String(), holderUnavailable); got != 2 {
		t.Errorf("the warning was said %d times, want once per process group and once per process (2):\n%s", got, out.String())
	}
	// Without a marker (no cache dir) a process still says it once.
	var solo bytes.Buffer
	nomark := &holderWarnOnce{w: &solo, pgid: 1}
	for range 3 {
		_, _ = nomark.Write([]byte(warn))
	}
	if got := strings.Count(solo.String(), holderUnavailable); got != 1 {
		t.Errorf("without a marker the warning was said %d times by one process, want 1", got)
	}
	if got := strings.Count(out.String(), other); got != 2 {
		t.Errorf("another diagnostic was dropped:\n%s", out.String())
	}
	if fi, err := os.Stat(marker); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("marker: %v %v", fi, err)
	}
	// The pool says exactly this words (runner/transport.go): drift would
	// make the filter a no-op.
	src, err := os.ReadFile(filepath.Join("..", "..", "runner", "transport.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `p.logf("`+strings.TrimPrefix(holderUnavailable, "dstgen: ")) {
		t.Errorf("runner/transport.go no longer logs %q", strings.TrimPrefix(holderUnavailable, "dstgen: "))
	}
}
