package analyze

// Stage 6, report — 6.2 blocks: the sections of the document model
// (docs/report-format.md §3) as render blocks, one function each.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
)

func table(cols []string, rows [][]render.Inline) render.Block {
	return render.Block{Kind: render.TableBlock, Table: &render.Table{Cols: cols, Rows: rows}}
}

func coverageBlocks(r *Report) []render.Block {
	out := []render.Block{render.H(2, render.T("Coverage summary"))}
	if len(r.Hypotheses) == 0 {
		return append(out, render.P(render.T("The plan states no hypotheses.")))
	}
	var rows [][]render.Inline
	for _, h := range r.Hypotheses {
		var vs []string
		for _, v := range h.Verdicts {
			vs = append(vs, string(v))
		}
		result := strings.Join(vs, ", ")
		if !h.Exercised {
			result = "not exercised"
		}
		rows = append(rows, cells(h.ID, h.Title, strings.Join(h.Scenarios, ", "), result, h.Reason))
	}
	return append(out, table([]string{"Hypothesis", "Title", "Exercised by", "Result", "Reason if unexercised"}, rows))
}

func surfaceBlocks(r *Report) []render.Block {
	out := []render.Block{render.H(2, render.T("Surface coverage (boundary and fairness scenarios)"))}
	if len(r.Surfaces) == 0 {
		return append(out, render.P(render.T("No boundary or fairness scenarios in this plan.")))
	}
	var rows [][]render.Inline
	for _, s := range r.Surfaces {
		rows = append(rows, cells(s.ID, s.Surface, yesNo(s.Planned, s.Surface), yesNo(s.Executed, s.Surface), string(s.Verdict), s.DowngradeReason))
	}
	out = append(out, table([]string{"Scenario / arm", "Surface", "Planned", "Executed", "Verdict", "Downgrade reason"}, rows))
	if len(r.MissingSurfaces) == 0 {
		return append(out, render.P(render.T("All planned surfaces were executed.")))
	}
	return append(out, render.Block{Kind: render.Para, Text: label("Missing surfaces this run did not cover", render.OneLine(strings.Join(r.MissingSurfaces, "; ")))})
}

func disclosureBlocks(r *Report) []render.Block {
	out := []render.Block{render.H(2, render.T("Release-budget disclosures"))}
	if len(r.Disclosures) == 0 {
		return append(out, render.P(render.T("All scenarios declared a concrete release budget.")))
	}
	var rows [][]render.Inline
	for _, d := range r.Disclosures {
		rows = append(rows, cells(d.Scenario, d.Reason, d.RevisitWhen))
	}
	return append(out, table([]string{"Scenario", "Reason release budget was not provided", "Revisit when"}, rows))
}

func adequacyBlocks(r *Report) []render.Block {
	out := []render.Block{render.H(2, render.T("Adequacy assessment vs the plan's coverage argument"))}
	if len(r.Adequacy) == 0 {
		return append(out, render.P(render.T("The plan has no §7b adequacy rows to assess.")))
	}
	var rows [][]render.Inline
	called := 0
	for _, a := range r.Adequacy {
		adq := render.Inline{render.T(a.Adequacy)}
		if a.CalledOut {
			adq = render.Inline{render.B("Called out:"), render.T(" " + a.Adequacy)}
			called++
		}
		rows = append(rows, append(cells(a.Claim, a.PlanArgument, a.WhatRan), adq))
	}
	out = append(out, table([]string{"Claim", "Plan's adequacy argument", "What actually ran", "Adequacy after this run"}, rows))
	if called > 0 {
		out = append(out, render.P(render.T(fmt.Sprintf("%d row(s) called out: what ran is weaker than the plan argued, so the residual uncertainty is now larger than the plan declared. The reviewer must decide whether to accept the gap or re-run.", called))))
	}
	return out
}

func confidenceBlocks(r *Report) []render.Block {
	out := []render.Block{render.H(2, render.T("Confidence delta"))}
	if p := strings.TrimSpace(r.Confidence.Plan); p != "" {
		out = append(out, render.P(render.T("Relative to the plan's §7d statement: "+render.OneLine(p))))
	}
	return append(out, render.Block{Kind: render.List, Items: []render.Inline{
		label("More", render.OneLine(joinOr(r.Confidence.More, "none"))),
		label("Less", render.OneLine(joinOr(r.Confidence.Less, "none"))),
		label("Unchanged", render.OneLine(joinOr(r.Confidence.Unchanged, "none"))),
	}})
}

// checklistBlocks is the docs/report-format.md §3.8 block of one scenario
// or arm at heading level, followed by its arms' one level down.
func checklistBlocks(s ScenarioResult, level int) []render.Block {
	head := s.ID
	if s.Name != "" {
		head += " — " + render.OneLine(s.Name)
	}
	out := []render.Block{render.H(level, render.T(head+" ("+string(s.Verdict)+")"))}
	if len(s.Arms) == 0 || len(s.RedFlags) > 0 || len(s.WeakOracle) > 0 {
		out = append(out,
			render.P(render.T("Red-flag checks (`dstgen help verdicts` §6):")), redFlagList(s),
			render.P(render.T("Weak-oracle audit (`dstgen help verdicts` §7):")), weakItemList(s))
	} else {
		out = append(out, render.P(render.T("Aggregate of its arms (§5); each arm's checks follow.")))
	}
	for _, a := range s.Arms {
		out = append(out, checklistBlocks(a, level+1)...)
	}
	return out
}

func redFlagList(s ScenarioResult) render.Block {
	byN := map[int]Check{}
	for _, c := range s.RedFlags {
		byN[c.N] = c
	}
	var checks []render.Check
	for n := 1; n <= 10; n++ {
		c, ok := byN[n]
		if !ok {
			c = Check{N: n, Name: redFlagNames[n], Status: CheckUnknown, Evidence: "not evaluated"}
		}
		name := c.Name
		if name == "" {
			name = redFlagNames[n]
		}
		ev := render.OneLine(c.Evidence)
		var text string
		switch c.Status {
		case CheckPass:
			text = fmt.Sprintf("%d. %s — %s", n, name, ev)
		case CheckNA:
			text = fmt.Sprintf("%d. %s — N/A — %s", n, name, ev)
		case CheckFail:
			text = fmt.Sprintf("%d. %s — %s", n, name, ev)
		default:
			text = fmt.Sprintf("%d. %s — unknown (blocks PASS): %s", n, name, ev)
		}
		checks = append(checks, render.Check{Done: c.Status == CheckPass || c.Status == CheckNA, Text: render.Inline{render.T(text)}})
	}
	return render.Block{Kind: render.Checklist, Checks: checks}
}

func weakItemList(s ScenarioResult) render.Block {
	items := map[int]WeakItem{}
	for _, w := range s.WeakOracle {
		items[w.N] = w
	}
	var checks []render.Check
	for n := 1; n <= 14; n++ {
		w, ok := items[n]
		if !ok {
			// A missing item on a serious scenario blocks PASS-hardening
			// (docs/verdicts.md §4.2), so it shows unchecked; elsewhere it does not apply.
			w = WeakItem{N: n, Status: ItemNA, Reason: "not audited: not a serious scenario (§7.M sentinel)"}
			switch {
			case len(s.Arms) > 0:
				w.Reason = "aggregate row: audited per arm below"
			case s.Serious:
				w.Status, w.Reason = ItemUnchecked, "not audited"
			}
		}
		name := w.Name
		if name == "" {
			name = weakItems[n].name
		}
		text := fmt.Sprintf("%d. %s — %s", n, name, render.OneLine(w.Reason))
		if w.Status == ItemNA {
			text = fmt.Sprintf("%d. %s — N/A — %s", n, name, render.OneLine(w.Reason))
		}
		checks = append(checks, render.Check{Done: w.Status == ItemChecked || w.Status == ItemNA, Text: render.Inline{render.T(text)}})
	}
	return render.Block{Kind: render.Checklist, Checks: checks}
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
		render.P(render.T("Verdict values are the ten states of the verdict taxonomy (`dstgen help verdicts` §2); an armed scenario's row is the aggregate of its arms (§5 downgrade rule)."))}
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
