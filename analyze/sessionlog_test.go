package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/session"
)

func TestAppendSessionLog(t *testing.T) {
	r := &Report{PlanSlug: "kv", SessionVerdict: DoneWithConcerns, Scenarios: []ScenarioResult{
		{ID: "S1", Verdict: PassHardening, TierMet: TierHardening},
		{ID: "S4", Verdict: PartialSurface, TierMet: TierNone,
			Reasons: []Reason{{Step: "arms", From: PassHardening, To: PartialSurface, Text: "1 NOT-RUN arm | x"}},
			Arms:    []ScenarioResult{{ID: "S4/api", Verdict: NotRun}}},
	}}
	dir := t.TempDir()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ {
		if err := AppendSessionLog(r, dir, now); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, session.SessionLog))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{
		"# Session log: kv @ ",
		"| S1 | hardening | PASS-hardening | — |",
		`| S4 | — | PARTIAL-surface | PASS-hardening → PARTIAL-surface: 1 NOT-RUN arm \| x |`,
		"| S4/api | — | NOT-RUN | — |",
		"session verdict DONE_WITH_CONCERNS",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("session log lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "# Session log:"); n != 1 {
		t.Errorf("title written %d times, want once (append-only)", n)
	}
	if n := strings.Count(got, "## Scenario verdicts"); n != 2 {
		t.Errorf("%d verdict blocks after two analyses, want 2", n)
	}
}

func TestAppendSessionLogKeepsRunnerLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, session.SessionLog)
	runner := "# Session log: kv @ 20261129T090000Z\n\n## Toolbox discovered\n- `tools/x` — driver\n"
	if err := os.WriteFile(path, []byte(runner), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AppendSessionLog(&Report{PlanSlug: "kv", SessionVerdict: Done}, dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), runner) || strings.Count(string(data), "# Session log:") != 1 {
		t.Errorf("runner's log not kept verbatim:\n%s", data)
	}
}
