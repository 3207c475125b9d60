package analyze

// Stage 6, report — 6.3 documents: report.md, report.html and
// findings/<ID>.md are one document model each, built once from the Report
// by reportDoc and scenarioDoc and written by render.Markdown and
// render.HTML. report.json, verdicts.json (json.go) and junit.xml
// (junit.go) are written from the Report itself.

import (
	"fmt"

	"github.com/dstgen/dstgen/analyze/render"
)

// reportDoc is findings/report.md and report.html: every section of
// docs/report-format.md §3.1 in order, with the explicit-empty forms. cmp
// adds the "Changes since" section right after Summary (dstgen decision:
// what changed is the second thing a reviewer of a re-run wants).
func reportDoc(r *Report, cmp *Comparison) *render.Doc {
	title := "Findings: " + render.OneLine(r.PlanSlug) + " @ " + render.OneLine(sessionStamp(r))
	d := &render.Doc{Title: title}
	d.Add(render.H(1, render.T(title)), headerLines(r))
	d.Add(render.H(2, render.T("Summary")), summaryPara(r))
	if cmp != nil {
		d.Add(changesBlocks(cmp)...)
	}
	d.Add(render.H(2, render.T("Scenario results")))
	if len(r.Scenarios) == 0 {
		d.Add(render.P(render.T("No scenarios in this plan.")))
	} else {
		d.Add(resultsBlocks(r.Scenarios)...)
	}
	d.Add(render.H(2, render.T("Findings")))
	d.Add(findingsBlocks(r.Findings)...)
	d.Add(chartBlocks(r)...)
	d.Add(coverageBlocks(r)...)
	d.Add(surfaceBlocks(r)...)
	d.Add(disclosureBlocks(r)...)
	d.Add(adequacyBlocks(r)...)
	d.Add(confidenceBlocks(r)...)
	d.Add(render.H(2, render.T("Green-but-broken check")))
	if len(r.Scenarios) == 0 {
		d.Add(render.P(render.T("No scenarios in this plan.")))
	}
	for _, s := range r.Scenarios {
		d.Add(render.Block{Kind: render.Group, Summary: render.Inline{render.T(s.ID + " — " + string(s.Verdict))}, Blocks: checklistBlocks(s, 3)})
	}
	if len(r.Scenarios) > 0 {
		d.Add(render.Block{Kind: render.Blank})
	}
	if len(r.Problems) > 0 || len(r.Warnings) > 0 {
		var items []render.Inline
		for _, p := range r.Problems {
			items = append(items, render.Inline{render.T(render.OneLine(p.String()))})
		}
		for _, w := range r.Warnings {
			items = append(items, render.Inline{render.T("warning: " + render.OneLine(w))})
		}
		d.Add(render.H(2, render.T("Input problems")), render.Block{Kind: render.List, Items: items})
	}
	return d
}

// RenderMarkdown renders findings/report.md from the document model.
func RenderMarkdown(r *Report, cmp *Comparison) []byte { return render.Markdown(reportDoc(r, cmp)) }

// RenderHTML renders report.html from the same document model as
// report.md, with the latency and throughput charts added.
func RenderHTML(r *Report, cmp *Comparison) []byte { return render.HTML(reportDoc(r, cmp)) }

// RenderScenarioMarkdown renders findings/<ID>.md (docs/report-format.md
// §4) from the document model.
func RenderScenarioMarkdown(r *Report, s ScenarioResult) []byte {
	return render.Markdown(scenarioDoc(r, s))
}

// scenarioDoc is findings/<ID>.md (docs/report-format.md §4): the
// scenario's results rows, tier met, verdict reasons, the checklists and
// its findings.
func scenarioDoc(r *Report, s ScenarioResult) *render.Doc {
	title := "Scenario " + s.ID
	if s.Name != "" {
		title += ": " + render.OneLine(s.Name)
	}
	d := &render.Doc{Title: title}
	d.Add(render.H(1, render.T(title)), render.Block{Kind: render.Lines, Lines: []render.Inline{
		label("Verdict", string(s.Verdict)), label("Tier met", tierText(s)), label("Session dir", render.OneLine(r.SessionDir)),
	}})
	d.Add(render.H(2, render.T("Result")))
	d.Add(resultsBlocks([]ScenarioResult{s})...)
	var reasons []render.Inline
	for _, x := range append([]ScenarioResult{s}, s.Arms...) {
		if len(x.Reasons) == 0 {
			reasons = append(reasons, render.Inline{render.T(x.ID + ": no reason recorded")})
		}
		for _, rs := range x.Reasons {
			reasons = append(reasons, render.Inline{render.T(fmt.Sprintf("%s [%s]: %s", x.ID, rs.Step, render.OneLine(rs.String())))})
		}
	}
	d.Add(render.H(2, render.T("Verdict reasons")), render.Block{Kind: render.List, Items: reasons})
	d.Add(render.H(2, render.T("Green-but-broken check")))
	d.Add(checklistBlocks(s, 3)...)
	d.Add(render.Block{Kind: render.Blank}, render.H(2, render.T("Findings")))
	ids := map[string]bool{s.ID: true}
	for _, a := range s.Arms {
		ids[a.ID] = true
	}
	var fs []Finding
	for _, f := range r.Findings {
		if ids[f.Scenario] {
			fs = append(fs, f)
		}
	}
	d.Add(findingsBlocks(fs)...)
	return d
}
