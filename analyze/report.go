package analyze

// Stage 6, report: the findings files written into the findings
// directory. report.md, report.html and findings/<ID>.md come from one
// document model (reportdoc.go); report.json, verdicts.json and junit.xml
// from the Report (json.go, junit.go).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
)

// Report file names inside the findings directory.
const (
	ReportMarkdownFile = render.MarkdownFile
	ReportJSONFile     = render.JSONFile
	ReportJUnitFile    = "junit.xml"
	ReportHTMLFile     = render.HTMLFile
	VerdictsJSONFile   = "verdicts.json"
)

// WriteReport writes findings/<ID>.md for every scenario, report.md,
// report.json, verdicts.json, junit.xml and report.html into dir (the
// findings directory). It writes every file it can and returns the joined
// errors of those it could not; callers then fall back to printing
// RenderMarkdown (docs/report-format.md §1 write-failure rule).
// WriteReport writes the report files, with the "Changes since" section
// filled from a comparison with the previous session (nil when there is
// none).
func WriteReport(r *Report, cmp *Comparison, dir string) error {
	if r == nil {
		return errors.New("write report: nil report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: create %s: %w", dir, err)
	}
	var errs []error
	write := func(name string, data []byte, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", name, err))
			return
		}
		if err := render.WriteFileAtomic(filepath.Join(dir, name), data); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range r.Scenarios {
		write(ScenarioFileName(s.ID), RenderScenarioMarkdown(r, s), nil)
	}
	write(ReportMarkdownFile, RenderMarkdown(r, cmp), nil)
	js, err := RenderJSON(r, cmp)
	write(ReportJSONFile, js, err)
	vj, err := RenderVerdictsJSON(r)
	write(VerdictsJSONFile, vj, err)
	ju, err := RenderJUnit(r)
	write(ReportJUnitFile, ju, err)
	write(ReportHTMLFile, RenderHTML(r, cmp), nil)
	return errors.Join(errs...)
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ScenarioFileName is the per-scenario findings file for id; ids come from
// the plan, so anything outside [A-Za-z0-9._-] is replaced to keep the
// file inside the findings directory.
func ScenarioFileName(id string) string {
	s := strings.Trim(unsafeFileChars.ReplaceAllString(id, "_"), "._")
	if s == "" {
		s = "scenario"
	}
	return s + ".md"
}

// sessionStamp is the <UTC_timestamp> of the title: the session directory's
// own name, which is the timestamp by layout.
func sessionStamp(r *Report) string {
	if r.SessionDir == "" {
		return "unknown"
	}
	return filepath.Base(filepath.Clean(r.SessionDir))
}

// resultColumns are the docs/report-format.md §3.2 scenario-results columns, verbatim.
var resultColumns = []string{"ID", "Scenario", "Verdict", "Oracle", "Oracle execution evidence", "Nemesis landing evidence", "Artifact link"}

// verdictCell shows the state plus its one-line reason when it is not a
// clean PASS, so INCONCLUSIVE / NOT-RUN / PARTIAL never appear without why.
func verdictCell(s ScenarioResult) string {
	v := string(s.Verdict)
	if s.Verdict == PassHardening && s.Release {
		v += " (release)"
	}
	if !s.Verdict.IsPass() {
		if why := lastReason(s); why != "" {
			v += " — " + why
		}
	}
	return v
}

func countsLine(r *Report) string {
	var parts []string
	n := 0
	for _, v := range Verdicts {
		if c := r.Counts[v]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, v))
			n += c
		}
	}
	if n == 0 {
		return fmt.Sprintf("%d scenarios in the plan", len(r.Scenarios))
	}
	return fmt.Sprintf("%d verdicts: %s", n, strings.Join(parts, ", "))
}

func joinOr(xs []string, empty string) string {
	if len(xs) == 0 {
		return empty
	}
	return strings.Join(xs, "; ")
}

// yesNo renders a surface-table flag; the aggregate row leaves it blank as
// in docs/report-format.md §3.4.
func yesNo(v bool, surface string) string {
	if surface == "(aggregate)" {
		return ""
	}
	if v {
		return "yes"
	}
	return "no"
}

func tierText(s ScenarioResult) string {
	t := string(s.TierMet)
	if t == "" {
		t = string(TierNone)
	}
	if s.Release && s.TierMet != TierRelease {
		t += " (release)"
	}
	return t
}
