package analyze

// Stage 6, report — 6.4 files: WriteReport writes every findings file.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dstgen/dstgen/internal/atomicfile"
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
		if err := atomicfile.Write(filepath.Join(dir, name), data, 0o644); err != nil {
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
