package orchestrator

import (
	"testing"

	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Every attempt of a session gets its own key namespace: another seed and
// a re-run (same seed, same schedule) must not read the keys an earlier
// attempt wrote, which would be a dirty initial state, or worse, the same
// values.
func TestRunIDPerAttempt(t *testing.T) {
	u := scenarios.Unit{Scenario: &scenarios.Scenario{ID: "S1"}}
	cases := []struct {
		a    attempt
		want string
	}{
		{attempt{RunFile: "run.json", Dir: "/s/artifacts/S1"}, "20261201T000000Z-S1"},
		{attempt{RunFile: "run-seed-2.json", Dir: "/s/artifacts/S1"}, "20261201T000000Z-S1-seed-2"},
		{attempt{RunFile: "run.json", Dir: "/s/artifacts/S1/rerun-1", ReRunOf: &session.RunRef{File: "run.json", Seed: 1}}, "20261201T000000Z-S1-rerun-1"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		got := runID("20261201T000000Z", u, c.a)
		if got != c.want || seen[got] {
			t.Errorf("runID(%+v) = %q, want %q (and unique)", c.a, got, c.want)
		}
		seen[got] = true
	}
}
