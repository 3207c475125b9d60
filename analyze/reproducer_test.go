package analyze

import (
	"strings"
	"testing"
)

// TestFailReproducerReduced: the FAIL fixture's linearizability violation
// gets a reduced reproducer ("reduced from N ops to k ops (keys …,
// window …)"), not "not minimised".
func TestFailReproducerReduced(t *testing.T) {
	rep := analyzeFixture(t, sessFail)
	s1 := findResult(rep, "S1")
	if len(s1.Findings) != 1 {
		t.Fatalf("S1 findings %v", s1.Findings)
	}
	f := findingByID(rep, s1.Findings[0])
	if !strings.Contains(f.Reproducer, "reduced from ") || !strings.Contains(f.Reproducer, " ops (keys ") ||
		strings.Contains(f.Reproducer, "Not minimised") || !strings.Contains(f.Reproducer, "seed 7") {
		t.Errorf("reproducer %q", f.Reproducer)
	}
	t.Log(f.Reproducer)
}
