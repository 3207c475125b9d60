package analyze

// report.html: one self-contained page (inline CSS, inline SVG drawn here,
// no scripts, no external assets) so it can be attached to a CI run or
// mailed and still render offline.

import (
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
)

func verdictClass(v Verdict) string {
	switch {
	case v.IsPass():
		return "v-pass"
	case v.IsFail():
		return "v-fail"
	case v.IsInconclusive():
		return "v-inc"
	case v.IsPartial():
		return "v-part"
	}
	return "v-nr"
}

// RenderHTML renders report.html for a session report.
func RenderHTML(r *Report, cmp *Comparison) []byte {
	var b strings.Builder
	title := fmt.Sprintf("Findings: %s @ %s", r.PlanSlug, sessionStamp(r))
	render.HTMLHead(&b, title)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p><b>Plan:</b> %s<br/><b>Commit under test:</b> %s<br/><b>Session dir:</b> %s</p>\n",
		render.Esc(title), render.Esc(r.PlanPath), render.Esc(r.Commit), render.Esc(r.SessionDir))
	fmt.Fprintf(&b, "<h2>Summary</h2>\n<p>%s</p><p class=\"verdict\">Session verdict: %s</p>\n", render.Esc(r.Headline), render.Esc(string(r.SessionVerdict)))

	if cmp != nil {
		fmt.Fprintf(&b, "<h2>Changes since %s</h2>\n", render.Esc(cmp.Previous))
		var rows [][]string
		for _, ch := range cmp.Changes {
			rows = append(rows, []string{ch.ID, arrow(string(ch.Before), string(ch.After)),
				render.FmtOpt(ch.ThroughputBefore, "") + " → " + render.FmtOpt(ch.ThroughputAfter, ""),
				render.FmtOpt(ch.P99Before, "") + " → " + render.FmtOpt(ch.P99After, "")})
		}
		render.HTMLTable(&b, []string{"Scenario", "Verdict before → after", "Throughput (ops/s) before → after", "p99 (ms) before → after"}, rows, nil)
	}

	b.WriteString("<h2>Scenario results</h2>\n")
	all := flattenResults(r.Scenarios)
	var rows [][]string
	for _, s := range all {
		rows = append(rows, []string{s.ID, s.Name, verdictCell(s), s.Oracle, s.OracleEvidence, s.LandingEvidence, strings.Join(s.Artifacts, "\n")})
	}
	render.HTMLTable(&b, resultColumns, rows, func(i int) string { return verdictClass(all[i].Verdict) })

	b.WriteString("<h2>Findings</h2>\n")
	if len(r.Findings) == 0 {
		b.WriteString("<p>No findings.</p>\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "<h3>Finding %s: %s</h3>\n<ul>", render.Esc(f.ID), render.Esc(f.Title))
		for _, kv := range [][2]string{{"Scenario", f.Scenario}, {"Hypothesis addressed", f.Hypothesis}, {"What happened", f.WhatHappened},
			{"Reproducer", f.Reproducer}, {"Reduction classification", f.Reduction}, {"Classification", f.Classification},
			{"Severity", f.Severity}, {"Tags", strings.Join(f.Tags, ", ")}, {"Evidence", strings.Join(f.Evidence, "; ")},
			{"Hypothesised root cause", f.RootCause}, {"Suggested next action", f.NextAction}} {
			fmt.Fprintf(&b, "<li><b>%s:</b> %s</li>", render.Esc(kv[0]), render.Esc(kv[1]))
		}
		b.WriteString("</ul>\n")
	}

	b.WriteString("<h2>Latency and throughput over time</h2>\n<p>Shaded bands are fault windows (red: landing evidence captured; grey: not proven).</p>\n")
	for _, s := range all {
		if len(s.Arms) > 0 && s.Metrics == nil {
			continue // the aggregate row has no workload of its own; its arms do
		}
		fmt.Fprintf(&b, "<h3>%s %s</h3>\n", render.Esc(s.ID), render.Esc(s.Name))
		b.WriteString(scenarioChart(s))
	}

	b.WriteString("<h2>Coverage summary</h2>\n")
	rows = nil
	for _, h := range r.Hypotheses {
		var vs []string
		for _, v := range h.Verdicts {
			vs = append(vs, string(v))
		}
		res := strings.Join(vs, ", ")
		if !h.Exercised {
			res = "not exercised"
		}
		rows = append(rows, []string{h.ID, h.Title, strings.Join(h.Scenarios, ", "), res, h.Reason})
	}
	render.HTMLTable(&b, []string{"Hypothesis", "Title", "Exercised by", "Result", "Reason if unexercised"}, rows, nil)

	b.WriteString("<h2>Surface coverage (boundary and fairness scenarios)</h2>\n")
	if len(r.Surfaces) == 0 {
		b.WriteString("<p>No boundary or fairness scenarios in this plan.</p>\n")
	} else {
		rows = nil
		for _, s := range r.Surfaces {
			rows = append(rows, []string{s.ID, s.Surface, yesNo(s.Planned, s.Surface), yesNo(s.Executed, s.Surface), string(s.Verdict), s.DowngradeReason})
		}
		render.HTMLTable(&b, []string{"Scenario / arm", "Surface", "Planned", "Executed", "Verdict", "Downgrade reason"}, rows, nil)
		if len(r.MissingSurfaces) == 0 {
			b.WriteString("<p>All planned surfaces were executed.</p>\n")
		} else {
			fmt.Fprintf(&b, "<p><b>Missing surfaces this run did not cover:</b> %s</p>\n", render.Esc(strings.Join(r.MissingSurfaces, "; ")))
		}
	}

	b.WriteString("<h2>Release-budget disclosures</h2>\n")
	if len(r.Disclosures) == 0 {
		b.WriteString("<p>All scenarios declared a concrete release budget.</p>\n")
	} else {
		rows = nil
		for _, d := range r.Disclosures {
			rows = append(rows, []string{d.Scenario, d.Reason, d.RevisitWhen})
		}
		render.HTMLTable(&b, []string{"Scenario", "Reason release budget was not provided", "Revisit when"}, rows, nil)
	}

	b.WriteString("<h2>Adequacy assessment vs the plan's coverage argument</h2>\n")
	rows = nil
	for _, a := range r.Adequacy {
		adq := a.Adequacy
		if a.CalledOut {
			adq = "Called out: " + adq
		}
		rows = append(rows, []string{a.Claim, a.PlanArgument, a.WhatRan, adq})
	}
	render.HTMLTable(&b, []string{"Claim", "Plan's adequacy argument", "What actually ran", "Adequacy after this run"}, rows, nil)

	fmt.Fprintf(&b, "<h2>Confidence delta</h2>\n<ul><li><b>More:</b> %s</li><li><b>Less:</b> %s</li><li><b>Unchanged:</b> %s</li></ul>\n",
		render.Esc(joinOr(r.Confidence.More, "none")), render.Esc(joinOr(r.Confidence.Less, "none")), render.Esc(joinOr(r.Confidence.Unchanged, "none")))

	// The checklists are long; reuse the markdown rendering verbatim in a
	// <pre> so the two files cannot drift.
	b.WriteString("<h2>Green-but-broken check</h2>\n")
	for _, s := range r.Scenarios {
		var md strings.Builder
		writeChecklists(&md, s, "###")
		fmt.Fprintf(&b, "<details><summary>%s — %s</summary><pre>%s</pre></details>\n", render.Esc(s.ID), render.Esc(string(s.Verdict)), render.Esc(md.String()))
	}
	if len(r.Problems) > 0 {
		b.WriteString("<h2>Input problems</h2>\n<ul>")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "<li><code>%s</code></li>", render.Esc(p.String()))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func scenarioChart(s ScenarioResult) string {
	var lat, p50, tput render.Series
	lat = render.Series{Name: "p99 ms", Color: "#c0392b"}
	p50 = render.Series{Name: "p50 ms", Color: "#2980b9"}
	tput = render.Series{Name: "ops/s", Color: "#27ae60"}
	var bands []render.Band
	if m := s.Metrics; m != nil {
		for _, p := range m.Series {
			x := float64(p.StartNS+p.EndNS) / 2 / 1e9
			lat.X, lat.Y = append(lat.X, x), append(lat.Y, p.P99Ms)
			p50.X, p50.Y = append(p50.X, x), append(p50.Y, p.P50Ms)
			tput.X, tput.Y = append(tput.X, x), append(tput.Y, p.Throughput)
		}
		for _, w := range m.FaultWindows {
			bands = append(bands, render.Band{X0: float64(w.StartNS) / 1e9, X1: float64(w.EndNS) / 1e9, Label: w.Nemesis, Landed: w.Landed})
		}
	}
	return render.Chart(s.ID, "seconds since run start", []render.Panel{
		{YLabel: "latency (ms)", Series: []render.Series{lat, p50}},
		{YLabel: "throughput (ops/s)", Series: []render.Series{tput}},
	}, bands)
}
