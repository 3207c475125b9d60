package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/session"
)

// AppendSessionLog appends the "Scenario verdicts" table of report-format
// docs/report-format.md §2 (one row per scenario and arm: budget tier met, verdict, notes) to
// <sessionDir>/session-log.md, creating the log with its title when the
// runner left none (a real-env-test run_<ts>/ has no log of its own). The
// log is append-only: each analysis adds a dated block and rewrites nothing,
// so an earlier verdict stays readable beside a later one.
func AppendSessionLog(r *Report, sessionDir string, now time.Time) error {
	path := filepath.Join(sessionDir, session.SessionLog)
	var b strings.Builder
	if _, err := os.Stat(path); os.IsNotExist(err) {
		slug := r.PlanSlug
		if slug == "" {
			slug = "(no plan)"
		}
		fmt.Fprintf(&b, "# Session log: %s @ %s\n\n**Session dir:** %s\n", slug, filepath.Base(sessionDir), sessionDir)
	}
	fmt.Fprintf(&b, "\n## Scenario verdicts\n\n_dstgen analyze at %s — session verdict %s_\n\n",
		now.UTC().Format(session.StampLayout), r.SessionVerdict)
	render.MDHeader(&b, "Scenario / arm", "Budget tier met", "Verdict", "Notes")
	var row func(s ScenarioResult)
	row = func(s ScenarioResult) {
		tier := string(s.TierMet)
		if s.TierMet == TierNone {
			tier = "" // mdCell shows it as —
		}
		note := ""
		if n := len(s.Reasons); n > 0 {
			note = s.Reasons[n-1].String()
		}
		render.MDRow(&b, s.ID, tier, string(s.Verdict), note)
		for _, a := range s.Arms {
			row(a)
		}
	}
	for _, s := range r.Scenarios {
		row(s)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("append session log: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("append session log %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append session log %s: %w", path, err)
	}
	return nil
}
