package analyze

// Stage 6, report (continued): the plan-derived sections and the
// green-but-broken checklists of the document model.

import (
	"fmt"
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
			render.P(render.T("Red-flag checks (verdicts.md §6):")), redFlagList(s),
			render.P(render.T("Weak-oracle audit (verdicts.md §7):")), weakItemList(s))
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
