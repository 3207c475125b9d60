package analyze

// report.html: one self-contained page (inline CSS, inline SVG drawn here,
// no scripts, no external assets) so it can be attached to a CI run or
// mailed and still render offline.

import (
	"fmt"
	"html"
	"math"
	"strings"
)

const htmlCSS = `body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em;width:100%}th,td{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.v-pass{background:#e3f6e3}.v-fail{background:#fbe0e0}.v-inc{background:#fff4d6}.v-part{background:#e8eefb}.v-nr{background:#eee}
.verdict{font-weight:bold;font-size:1.1em}ul.check{list-style:none;padding-left:1em}svg{background:#fff;border:1px solid #ddd;margin:.3em 0}
code{background:#f5f5f5;padding:0 3px}`

func esc(s string) string { return html.EscapeString(s) }

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

func htmlTable(b *strings.Builder, cols []string, rows [][]string, rowClass func(i int) string) {
	b.WriteString("<table><thead><tr>")
	for _, c := range cols {
		fmt.Fprintf(b, "<th>%s</th>", esc(c))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for i, r := range rows {
		cls := ""
		if rowClass != nil {
			if c := rowClass(i); c != "" {
				cls = fmt.Sprintf(` class="%s"`, c)
			}
		}
		fmt.Fprintf(b, "<tr%s>", cls)
		for _, c := range r {
			if c == "" {
				c = "—"
			}
			fmt.Fprintf(b, "<td>%s</td>", strings.ReplaceAll(esc(c), "\n", "<br/>"))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
}

func htmlHead(b *strings.Builder, title string) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>%s</title><style>%s</style></head><body>\n", esc(title), htmlCSS)
}

// RenderHTML renders report.html for a session report.
func RenderHTML(r *Report, cmp *Comparison) []byte {
	var b strings.Builder
	title := fmt.Sprintf("Findings: %s @ %s", r.PlanSlug, sessionStamp(r))
	htmlHead(&b, title)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p><b>Plan:</b> %s<br/><b>Commit under test:</b> %s<br/><b>Session dir:</b> %s</p>\n",
		esc(title), esc(r.PlanPath), esc(r.Commit), esc(r.SessionDir))
	fmt.Fprintf(&b, "<h2>Summary</h2>\n<p>%s</p><p class=\"verdict\">Session verdict: %s</p>\n", esc(r.Headline), esc(string(r.SessionVerdict)))

	if cmp != nil {
		fmt.Fprintf(&b, "<h2>Changes since %s</h2>\n", esc(cmp.Previous))
		var rows [][]string
		for _, ch := range cmp.Changes {
			rows = append(rows, []string{ch.ID, arrow(string(ch.Before), string(ch.After)),
				fmtOpt(ch.ThroughputBefore, "") + " → " + fmtOpt(ch.ThroughputAfter, ""),
				fmtOpt(ch.P99Before, "") + " → " + fmtOpt(ch.P99After, "")})
		}
		htmlTable(&b, []string{"Scenario", "Verdict before → after", "Throughput (ops/s) before → after", "p99 (ms) before → after"}, rows, nil)
	}

	b.WriteString("<h2>Scenario results</h2>\n")
	all := flattenResults(r.Scenarios)
	var rows [][]string
	for _, s := range all {
		rows = append(rows, []string{s.ID, s.Name, verdictCell(s), s.Oracle, s.OracleEvidence, s.LandingEvidence, strings.Join(s.Artifacts, "\n")})
	}
	htmlTable(&b, resultColumns, rows, func(i int) string { return verdictClass(all[i].Verdict) })

	b.WriteString("<h2>Findings</h2>\n")
	if len(r.Findings) == 0 {
		b.WriteString("<p>No findings.</p>\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "<h3>Finding %s: %s</h3>\n<ul>", esc(f.ID), esc(f.Title))
		for _, kv := range [][2]string{{"Scenario", f.Scenario}, {"Hypothesis addressed", f.Hypothesis}, {"What happened", f.WhatHappened},
			{"Reproducer", f.Reproducer}, {"Reduction classification", f.Reduction}, {"Classification", f.Classification},
			{"Severity", f.Severity}, {"Tags", strings.Join(f.Tags, ", ")}, {"Evidence", strings.Join(f.Evidence, "; ")},
			{"Hypothesised root cause", f.RootCause}, {"Suggested next action", f.NextAction}} {
			fmt.Fprintf(&b, "<li><b>%s:</b> %s</li>", esc(kv[0]), esc(kv[1]))
		}
		b.WriteString("</ul>\n")
	}

	b.WriteString("<h2>Latency and throughput over time</h2>\n<p>Shaded bands are fault windows (red: landing evidence captured; grey: not proven).</p>\n")
	for _, s := range all {
		if len(s.Arms) > 0 && s.Metrics == nil {
			continue // the aggregate row has no workload of its own; its arms do
		}
		fmt.Fprintf(&b, "<h3>%s %s</h3>\n", esc(s.ID), esc(s.Name))
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
	htmlTable(&b, []string{"Hypothesis", "Title", "Exercised by", "Result", "Reason if unexercised"}, rows, nil)

	b.WriteString("<h2>Surface coverage (boundary and fairness scenarios)</h2>\n")
	if len(r.Surfaces) == 0 {
		b.WriteString("<p>No boundary or fairness scenarios in this plan.</p>\n")
	} else {
		rows = nil
		for _, s := range r.Surfaces {
			rows = append(rows, []string{s.ID, s.Surface, yesNo(s.Planned, s.Surface), yesNo(s.Executed, s.Surface), string(s.Verdict), s.DowngradeReason})
		}
		htmlTable(&b, []string{"Scenario / arm", "Surface", "Planned", "Executed", "Verdict", "Downgrade reason"}, rows, nil)
		if len(r.MissingSurfaces) == 0 {
			b.WriteString("<p>All planned surfaces were executed.</p>\n")
		} else {
			fmt.Fprintf(&b, "<p><b>Missing surfaces this run did not cover:</b> %s</p>\n", esc(strings.Join(r.MissingSurfaces, "; ")))
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
		htmlTable(&b, []string{"Scenario", "Reason release budget was not provided", "Revisit when"}, rows, nil)
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
	htmlTable(&b, []string{"Claim", "Plan's adequacy argument", "What actually ran", "Adequacy after this run"}, rows, nil)

	fmt.Fprintf(&b, "<h2>Confidence delta</h2>\n<ul><li><b>More:</b> %s</li><li><b>Less:</b> %s</li><li><b>Unchanged:</b> %s</li></ul>\n",
		esc(joinOr(r.Confidence.More, "none")), esc(joinOr(r.Confidence.Less, "none")), esc(joinOr(r.Confidence.Unchanged, "none")))

	// The checklists are long; reuse the markdown rendering verbatim in a
	// <pre> so the two files cannot drift.
	b.WriteString("<h2>Green-but-broken check</h2>\n")
	for _, s := range r.Scenarios {
		var md strings.Builder
		writeChecklists(&md, s, "###")
		fmt.Fprintf(&b, "<details><summary>%s — %s</summary><pre>%s</pre></details>\n", esc(s.ID), esc(string(s.Verdict)), esc(md.String()))
	}
	if len(r.Problems) > 0 {
		b.WriteString("<h2>Input problems</h2>\n<ul>")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "<li><code>%s</code></li>", esc(p.String()))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func scenarioChart(s ScenarioResult) string {
	var lat, p50, tput svgSeries
	lat = svgSeries{Name: "p99 ms", Color: "#c0392b"}
	p50 = svgSeries{Name: "p50 ms", Color: "#2980b9"}
	tput = svgSeries{Name: "ops/s", Color: "#27ae60"}
	var bands []svgBand
	if m := s.Metrics; m != nil {
		for _, p := range m.Series {
			x := float64(p.StartNS+p.EndNS) / 2 / 1e9
			lat.X, lat.Y = append(lat.X, x), append(lat.Y, p.P99Ms)
			p50.X, p50.Y = append(p50.X, x), append(p50.Y, p.P50Ms)
			tput.X, tput.Y = append(tput.X, x), append(tput.Y, p.Throughput)
		}
		for _, w := range m.FaultWindows {
			bands = append(bands, svgBand{X0: float64(w.StartNS) / 1e9, X1: float64(w.EndNS) / 1e9, Label: w.Nemesis, Landed: w.Landed})
		}
	}
	return svgChart(s.ID, "seconds since run start", []svgPanel{
		{YLabel: "latency (ms)", Series: []svgSeries{lat, p50}},
		{YLabel: "throughput (ops/s)", Series: []svgSeries{tput}},
	}, bands)
}

// svgSeries is one line on a chart panel.
type svgSeries struct {
	Name, Color string
	X, Y        []float64
}

// svgPanel is one y axis of a chart; panels share the x axis.
type svgPanel struct {
	YLabel string
	Series []svgSeries
	// YMax fixes the top of the y axis (100 for a percentage); 0 fits the
	// data with 10 % headroom. Values above a fixed top are drawn at it.
	YMax float64
}

// svgBand is a shaded x range (a fault window).
type svgBand struct {
	X0, X1 float64
	Label  string
	Landed bool
}

// svgChart draws stacked panels over a shared x axis with bands shaded
// across all panels. It always returns one <svg>, with a note when there
// is no data, so every scenario visibly has its chart slot.
func svgChart(id, xLabel string, panels []svgPanel, bands []svgBand) string {
	const w, ph, left, right, top, gap = 760.0, 150.0, 70.0, 20.0, 20.0, 40.0
	h := top + float64(len(panels))*(ph+gap) + 10
	xmin, xmax := math.Inf(1), math.Inf(-1)
	points := 0
	for _, p := range panels {
		for _, s := range p.Series {
			for _, x := range s.X {
				if svgFinite(x) {
					xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
					points++
				}
			}
		}
	}
	for _, bd := range bands {
		if svgFinite(bd.X0) && svgFinite(bd.X1) {
			xmin, xmax = math.Min(xmin, bd.X0), math.Max(xmax, bd.X1)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-scenario="%s" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`,
		esc(id), w, h, w, h, esc(id+" latency and throughput over time"))
	b.WriteString("\n")
	if math.IsInf(xmin, 1) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13">No metrics series or fault windows recorded for %s.</text></svg>`+"\n", left, top+20, esc(id))
		return b.String()
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	pw := w - left - right
	sx := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*pw }
	for i, p := range panels {
		y0 := top + float64(i)*(ph+gap)
		// Bands first so lines draw over them.
		for _, bd := range bands {
			if !svgFinite(bd.X0) || !svgFinite(bd.X1) {
				continue
			}
			fill := "#e74c3c"
			if !bd.Landed {
				fill = "#7f8c8d"
			}
			x0, x1 := sx(bd.X0), sx(math.Max(bd.X0, bd.X1))
			fmt.Fprintf(&b, `<rect class="fault-window" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.18"><title>%s</title></rect>`+"\n",
				x0, y0, math.Max(1, x1-x0), ph, fill, esc(fmt.Sprintf("fault window %s %.1fs–%.1fs", bd.Label, bd.X0, bd.X1)))
		}
		ymax := 0.0
		for _, s := range p.Series {
			for _, y := range s.Y {
				if svgFinite(y) {
					ymax = math.Max(ymax, y)
				}
			}
		}
		if ymax <= 0 {
			ymax = 1
		}
		ymax *= 1.1
		if p.YMax > 0 {
			ymax = p.YMax
		}
		sy := func(y float64) float64 { return y0 + ph - math.Min(y, ymax)/ymax*ph }
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, y0, pw, ph)
		fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="11">%s</text><text x="%.0f" y="%.1f" font-size="10" text-anchor="end">%s</text><text x="%.0f" y="%.1f" font-size="10" text-anchor="end">0</text>`+"\n",
			y0-6, esc(p.YLabel), left-4, y0+10, fmtAxis(ymax), left-4, y0+ph)
		lx := left + pw - 70*float64(len(p.Series)) // legend above the panel, right-aligned
		for _, s := range p.Series {
			var pts []string
			for j := range s.X {
				if j < len(s.Y) && svgFinite(s.X[j]) && svgFinite(s.Y[j]) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(s.X[j]), sy(s.Y[j])))
				}
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`+"\n", s.Color, strings.Join(pts, " "), esc(s.Name))
			}
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", lx, y0-6, s.Color, esc(s.Name))
			lx += 70
		}
		if points == 0 {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="11">no series recorded</text>`+"\n", left+pw/2-50, y0+ph/2)
		}
	}
	yb := top + float64(len(panels))*(ph+gap) - gap + 14
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="10">%s</text><text x="%.0f" y="%.1f" font-size="10" text-anchor="end">%s</text><text x="%.0f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`+"\n",
		left, yb, fmtAxis(xmin), w-right, yb, fmtAxis(xmax), left+pw/2, yb, esc(xLabel))
	b.WriteString("</svg>\n")
	return b.String()
}

func svgFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func fmtAxis(v float64) string {
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
