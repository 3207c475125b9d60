package render

// HTML pieces: one self-contained page (inline CSS, inline SVG, no
// scripts, no external assets) so a report can be attached to a CI run or
// mailed and still render offline.

import (
	"fmt"
	"html"
	"math"
	"strings"
)

const css = `body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em;width:100%}th,td{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.v-pass{background:#e3f6e3}.v-fail{background:#fbe0e0}.v-inc{background:#fff4d6}.v-part{background:#e8eefb}.v-nr{background:#eee}
.verdict{font-weight:bold;font-size:1.1em}ul.check{list-style:none;padding-left:1em}svg{background:#fff;border:1px solid #ddd;margin:.3em 0}
code{background:#f5f5f5;padding:0 3px}`

// Esc escapes s for HTML text and attribute values.
func Esc(s string) string { return html.EscapeString(s) }

// HTMLTable writes one table; rowClass (may be nil) names a CSS class per row and empty cells show an em dash.
func HTMLTable(b *strings.Builder, cols []string, rows [][]string, rowClass func(i int) string) {
	b.WriteString("<table><thead><tr>")
	for _, c := range cols {
		fmt.Fprintf(b, "<th>%s</th>", Esc(c))
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
			fmt.Fprintf(b, "<td>%s</td>", strings.ReplaceAll(Esc(c), "\n", "<br/>"))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
}

// HTMLHead writes the doctype, the title and the inline stylesheet.
func HTMLHead(b *strings.Builder, title string) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>%s</title><style>%s</style></head><body>\n", Esc(title), css)
}

// Series is one line on a chart panel.
type Series struct {
	Name, Color string
	X, Y        []float64
}

// Panel is one y axis of a chart; panels share the x axis.
type Panel struct {
	YLabel string
	Series []Series
	// YMax fixes the top of the y axis (100 for a percentage); 0 fits the
	// data with 10 % headroom. Values above a fixed top are drawn at it.
	YMax float64
}

// Band is a shaded x range (a fault window).
type Band struct {
	X0, X1 float64
	Label  string
	Landed bool
}

// Chart draws stacked panels over a shared x axis with bands shaded
// across all panels. It always returns one <svg>, with a note when there
// is no data, so every scenario visibly has its chart slot.
func Chart(id, xLabel string, panels []Panel, bands []Band) string {
	const w, ph, left, right, top, gap = 760.0, 150.0, 70.0, 20.0, 20.0, 40.0
	h := top + float64(len(panels))*(ph+gap) + 10
	xmin, xmax := math.Inf(1), math.Inf(-1)
	points := 0
	for _, p := range panels {
		for _, s := range p.Series {
			for _, x := range s.X {
				if finite(x) {
					xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
					points++
				}
			}
		}
	}
	for _, bd := range bands {
		if finite(bd.X0) && finite(bd.X1) {
			xmin, xmax = math.Min(xmin, bd.X0), math.Max(xmax, bd.X1)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-scenario="%s" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`,
		Esc(id), w, h, w, h, Esc(id+" latency and throughput over time"))
	b.WriteString("\n")
	if math.IsInf(xmin, 1) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13">No metrics series or fault windows recorded for %s.</text></svg>`+"\n", left, top+20, Esc(id))
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
			if !finite(bd.X0) || !finite(bd.X1) {
				continue
			}
			fill := "#e74c3c"
			if !bd.Landed {
				fill = "#7f8c8d"
			}
			x0, x1 := sx(bd.X0), sx(math.Max(bd.X0, bd.X1))
			fmt.Fprintf(&b, `<rect class="fault-window" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.18"><title>%s</title></rect>`+"\n",
				x0, y0, math.Max(1, x1-x0), ph, fill, Esc(fmt.Sprintf("fault window %s %.1fs–%.1fs", bd.Label, bd.X0, bd.X1)))
		}
		ymax := 0.0
		for _, s := range p.Series {
			for _, y := range s.Y {
				if finite(y) {
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
			y0-6, Esc(p.YLabel), left-4, y0+10, fmtAxis(ymax), left-4, y0+ph)
		lx := left + pw - 70*float64(len(p.Series)) // legend above the panel, right-aligned
		for _, s := range p.Series {
			var pts []string
			for j := range s.X {
				if j < len(s.Y) && finite(s.X[j]) && finite(s.Y[j]) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(s.X[j]), sy(s.Y[j])))
				}
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`+"\n", s.Color, strings.Join(pts, " "), Esc(s.Name))
			}
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", lx, y0-6, s.Color, Esc(s.Name))
			lx += 70
		}
		if points == 0 {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="11">no series recorded</text>`+"\n", left+pw/2-50, y0+ph/2)
		}
	}
	yb := top + float64(len(panels))*(ph+gap) - gap + 14
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="10">%s</text><text x="%.0f" y="%.1f" font-size="10" text-anchor="end">%s</text><text x="%.0f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`+"\n",
		left, yb, fmtAxis(xmin), w-right, yb, fmtAxis(xmax), left+pw/2, yb, Esc(xLabel))
	b.WriteString("</svg>\n")
	return b.String()
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func fmtAxis(v float64) string {
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
