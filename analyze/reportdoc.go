package analyze

// Stage 6, report: the one document model of findings/report.md,
// report.html and findings/<ID>.md (docs/report-format.md §3, §4), built
// once from the Report; render.Markdown and render.HTML write it.
// report.json, verdicts.json and junit.xml are written from the Report
// itself (json.go, junit.go).

import (
	"fmt"
	"path/filepath"
	"strings"

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

// label is a bold "Label:" followed by its value.
func label(name, value string) render.Inline {
	return render.Inline{render.B(name + ":"), render.T(" " + value)}
}

func headerLines(r *Report) render.Block {
	plan := r.PlanPath
	if plan == "" {
		plan = r.PlanSlug
	}
	commit := r.Commit
	if commit == "" {
		commit = "not recorded"
	}
	lines := []render.Inline{
		label("Plan", render.OneLine(plan)),
		label("Commit under test", render.OneLine(commit)),
		label("Session dir", render.OneLine(r.SessionDir)),
	}
	if !r.GeneratedAt.IsZero() {
		lines = append(lines, label("Generated", r.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z")))
	}
	return render.Block{Kind: render.Lines, Lines: lines}
}

func summaryPara(r *Report) render.Block {
	headline := strings.TrimSuffix(render.OneLine(r.Headline), ".")
	tail := ". " + countsLine(r) + "."
	if len(r.Problems) > 0 {
		tail += fmt.Sprintf(" %d input problem(s) did not stop the analysis; see Input problems.", len(r.Problems))
	}
	return render.P(render.T(headline+". Session verdict: "), render.B(string(r.SessionVerdict)), render.T(tail))
}

func changesBlocks(c *Comparison) []render.Block {
	out := []render.Block{
		render.H(2, render.T("Changes since "+render.OneLine(c.Previous))),
		render.P(render.T(fmt.Sprintf("Session verdict: %s. %d scenario verdict(s) changed.", arrow(string(c.VerdictBefore), string(c.VerdictAfter)), c.ChangedVerdicts))),
	}
	if len(c.Changes) == 0 {
		return append(out, render.P(render.T("Neither session has scenarios to compare.")))
	}
	t := &render.Table{Cols: []string{"Scenario", "Verdict before → after", "Throughput (ops/s) before → after", "p99 (ms) before → after"}}
	for _, ch := range c.Changes {
		bv, av := string(ch.Before), string(ch.After)
		if bv == "" {
			bv = "(new)"
		}
		if av == "" {
			av = "(removed)"
		}
		t.Rows = append(t.Rows, cells(ch.ID, arrow(bv, av),
			render.FmtOpt(ch.ThroughputBefore, "")+" → "+render.FmtOpt(ch.ThroughputAfter, "")+render.DeltaPct(ch.ThroughputBefore, ch.ThroughputAfter),
			render.FmtOpt(ch.P99Before, "")+" → "+render.FmtOpt(ch.P99After, "")+render.DeltaPct(ch.P99Before, ch.P99After)))
	}
	return append(out, render.Block{Kind: render.TableBlock, Table: t})
}

// cells makes a table row of plain-text cells.
func cells(cs ...string) []render.Inline {
	out := make([]render.Inline, len(cs))
	for i, c := range cs {
		out[i] = render.Inline{render.T(c)}
	}
	return out
}

// resultsBlocks is the docs/report-format.md §3.2 table (every scenario
// followed by its arms) and the note under it.
func resultsBlocks(scs []ScenarioResult) []render.Block {
	t := &render.Table{Cols: resultColumns}
	for _, s := range flattenResults(scs) {
		name := s.Name
		if s.Surface != "" {
			name = strings.TrimSpace(name + " (surface: " + s.Surface + ")")
		}
		row := cells(s.ID, name, verdictCell(s), s.Oracle, s.OracleEvidence, s.LandingEvidence)
		t.Rows = append(t.Rows, append(row, artifactLinks(s)))
		t.RowClass = append(t.RowClass, verdictClass(s.Verdict))
	}
	return []render.Block{{Kind: render.TableBlock, Table: t},
		render.P(render.T("Verdict values are the ten states of the verdict taxonomy (verdicts.md §2); an armed scenario's row is the aggregate of its arms (§5 downgrade rule)."))}
}

// artifactLinks links artefacts relative to findings/ (paths in the model
// are relative to the session directory) and always names the session log.
func artifactLinks(s ScenarioResult) render.Inline {
	in := render.Inline{{Text: "session-log", Href: "../session-log.md"}}
	for _, a := range s.Artifacts {
		p := a
		if !filepath.IsAbs(p) && !strings.Contains(p, "://") {
			p = "../" + filepath.ToSlash(p)
		}
		in = append(in, render.T(", "), render.Span{Text: a, Href: strings.ReplaceAll(p, " ", "%20")})
	}
	return in
}

// findingsBlocks is one docs/report-format.md §3.3 block per finding.
func findingsBlocks(fs []Finding) []render.Block {
	if len(fs) == 0 {
		return []render.Block{render.P(render.T("No findings."))}
	}
	var out []render.Block
	for _, f := range fs {
		red := f.Reduction
		if strings.TrimSpace(red) == "" {
			// A guess is not allowed (docs/verdicts.md §9); the interim value is.
			red = BlamePending
		}
		tags := "none"
		if len(f.Tags) > 0 {
			tags = strings.Join(f.Tags, ", ")
		}
		h := render.H(3, render.T("Finding "+f.ID+": "+render.OneLine(f.Title)))
		h.Tight = true
		out = append(out, h, render.Block{Kind: render.List, Items: []render.Inline{
			label("Scenario", render.OneLine(f.Scenario)),
			label("Hypothesis addressed", render.OneLine(f.Hypothesis)),
			label("What happened", render.OneLine(f.WhatHappened)),
			label("Reproducer", render.OneLine(f.Reproducer)),
			label("Reduction classification", render.OneLine(red)),
			label("Classification", render.OneLine(f.Classification)),
			label("Severity", render.OneLine(f.Severity)),
			label("Tags", render.OneLine(tags)),
			label("Evidence", render.OneLine(strings.Join(f.Evidence, "; "))),
			label("Hypothesised root cause", render.OneLine(f.RootCause)),
			label("Suggested next action", render.OneLine(f.NextAction)),
		}})
	}
	return out
}

// chartBlocks draws latency and throughput over time per scenario or arm
// with a workload, fault windows shaded (report.html only).
func chartBlocks(r *Report) []render.Block {
	out := []render.Block{
		{Kind: render.Heading, Level: 2, Text: render.Inline{render.T("Latency and throughput over time")}, HTMLOnly: true},
		{Kind: render.Para, Text: render.Inline{render.T("Shaded bands are fault windows (red: landing evidence captured; grey: not proven).")}, HTMLOnly: true},
	}
	for _, s := range flattenResults(r.Scenarios) {
		if len(s.Arms) > 0 && s.Metrics == nil {
			continue // the aggregate row has no workload of its own; its arms do
		}
		out = append(out,
			render.Block{Kind: render.Heading, Level: 3, Text: render.Inline{render.T(s.ID + " " + s.Name)}, HTMLOnly: true},
			render.Block{Kind: render.Figure, SVG: scenarioChart(s), HTMLOnly: true})
	}
	return out
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
