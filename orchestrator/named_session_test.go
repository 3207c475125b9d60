package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Issue 23 item 6: runs of one scenario at a time that name one session
// go to one directory, results/<plan-slug>/<name>, so analyze judges them
// together; --out and --session together, a bad name, or a session a
// detached run is still writing are refused.
func TestPlanNamedSession(t *testing.T) {
	dir := t.TempDir()
	d := 5.0
	sf := &scenarios.File{Path: filepath.Join(dir, "scenarios.yml"), Scenarios: []scenarios.Scenario{
		{ID: "S1", Workload: scenarios.Workload{Command: "drive", DurationS: &d}},
		{ID: "S2", Workload: scenarios.Workload{Command: "drive", DurationS: &d}},
	}}
	e := &env.Env{Hosts: []env.Host{{Name: "h1", Address: "192.0.2.1"}}}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := filepath.Join(dir, "results", "scenarios", "nightly")
	for _, id := range []string{"S1", "S2"} {
		sr, err := Plan(sf, e, Options{ID: id, Session: "nightly"}, now.Add(time.Hour))
		if err != nil || sr.Dir != want {
			t.Fatalf("%s: dir %v, %v; want %s", id, sr, err, want)
		}
		if a := sr.units[0].Attempts[0]; a.Dir != filepath.Join(want, session.ArtifactsDir, id) {
			t.Errorf("%s: artifacts in %s", id, a.Dir)
		}
	}
	if sr, err := Plan(sf, e, Options{ID: "S1"}, now); err != nil || sr.Dir == want {
		t.Errorf("without --session: dir %v, %v; want a stamped one", sr, err)
	}
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{ID: "S1", Session: "x", Out: filepath.Join(dir, "o")}, "not both"},
		{Options{ID: "S1", Session: "../up"}, "session name"},
		{Options{ID: "S1", Session: ".hidden"}, "session name"},
	} {
		if _, err := Plan(sf, e, c.opt, now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.opt, err, c.want)
		}
	}
	// A detached run still writing the session: this process is alive.
	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := MarkChild(want); err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(sf, e, Options{ID: "S1", Session: "nightly"}, now); err == nil || !strings.Contains(err.Error(), "still writing") {
		t.Errorf("a running session: err = %v", err)
	}
}
