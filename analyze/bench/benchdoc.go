package bench

// report.md and report.html of a benchmark run are one document model
// (render.Doc), built once by runDoc and written by render.Markdown and
// render.HTML, as the session reports are.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze/render"
)

func label(name, value string) render.Inline {
	return render.Inline{render.B(name + ":"), render.T(" " + value)}
}

func cells(cs ...string) []render.Inline {
	out := make([]render.Inline, len(cs))
	for i, c := range cs {
		out[i] = render.Inline{render.T(c)}
	}
	return out
}

func table(cols []string, rows [][]string) render.Block {
	t := &render.Table{Cols: cols}
	for _, r := range rows {
		t.Rows = append(t.Rows, cells(r...))
	}
	return render.Block{Kind: render.TableBlock, Table: t}
}

func list(items []string) render.Block {
	bl := render.Block{Kind: render.List}
	for _, it := range items {
		bl.Items = append(bl.Items, render.Inline{render.T(render.OneLine(it))})
	}
	return bl
}

// runDoc is the document of one benchmark run.
func runDoc(b *Run) *render.Doc {
	d := &render.Doc{Title: "Benchmark run: " + b.ID}
	d.Add(render.H(1, render.T("Benchmark run: "+render.OneLine(b.ID))), headerLines(b))
	d.Add(summaryBlocks(b)...)
	d.Add(render.H(2, render.T("Summary table")))
	if cols, rows := benchSummary(b); len(rows) == 0 {
		d.Add(render.P(render.T(benchNoResults)))
	} else {
		d.Add(table(cols, rows), render.P(render.T("Percentiles computed from samples use the nearest-rank method; \"—\" means the source did not report the figure.")))
	}
	if lines := benchCheckLines(b); len(lines) > 0 {
		d.Add(render.H(2, render.T("Consistency check")), list(lines))
	}
	d.Add(errorBlocks(b)...)
	d.Add(hostBlocks(b)...)
	d.Add(patternBlocks(b)...)
	d.Add(chartBlocks(b)...)
	d.Add(changesBlocks(b)...)
	d.Add(render.H(2, render.T("Recommendations")), list(b.Recommendations))
	if len(b.Logs) > 0 {
		d.Add(render.H(2, render.T("Logs")), render.P(render.T(render.OneLine(strings.Join(b.Logs, ", ")))))
	}
	if len(b.Problems) > 0 {
		d.Add(render.H(2, render.T("Input problems")), list(b.Problems))
	}
	return d
}

func headerLines(b *Run) render.Block {
	lines := []render.Inline{label("Run dir", render.OneLine(b.Dir))}
	if b.Start != nil {
		lines = append(lines, label("Start", b.Start.Format(time.RFC3339)))
	}
	if b.End != nil {
		lines = append(lines, label("End", b.End.Format(time.RFC3339)))
		if b.Start != nil {
			lines = append(lines, label("Duration", b.End.Sub(*b.Start).String()))
		}
	}
	return render.Block{Kind: render.Lines, Lines: lines}
}

// summaryBlocks state the run result: one sentence in report.md, a
// verdict badge with the rule in report.html — the two reports must never
// disagree on whether the run failed.
func summaryBlocks(b *Run) []render.Block {
	status := benchStatus(b)
	return []render.Block{
		render.H(2, render.T("Summary")),
		{Kind: render.Para, MarkdownOnly: true, Text: render.Inline{render.T(render.OneLine(b.Headline) + ". Run result: "), render.B(status), render.T(" (" + benchStatusRule(b) + ").")}},
		{Kind: render.Para, HTMLOnly: true, Text: render.Inline{render.T(b.Headline)}},
		{Kind: render.Para, HTMLOnly: true, Class: "verdict " + map[bool]string{true: "fail", false: "pass"}[b.Failed], Text: render.Inline{render.T("Run result: " + status)}},
		{Kind: render.Para, HTMLOnly: true, Text: render.Inline{render.T(benchStatusRule(b))}},
		render.P(render.T("Session verdict: "), render.B(string(b.SessionVerdict)), render.T(" (session_verdict= of dstgen analyze; "+oracleLine(b)+").")),
	}
}

// oracleLine says which checker judged the run's histories and where it
// was declared, or that none was.
func oracleLine(b *Run) string {
	o := b.Oracle
	if o == nil {
		return "no checker declared: benchmark.model was empty when the run started"
	}
	c := o.Checker
	if c == "" {
		c = "the model's default checker"
	}
	s := fmt.Sprintf("model %s, %s", o.Model, c)
	if o.Source != "" {
		s += ", declared in " + o.Source
	}
	return s
}

func errorBlocks(b *Run) []render.Block {
	out := []render.Block{render.H(2, render.T("Errors by category"))}
	if b.Totals.Failures == 0 {
		return append(out, render.P(render.T("No errors recorded.")))
	}
	var rows [][]string
	for _, r := range b.Benchmarks {
		for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
			rows = append(rows, []string{r.Name, k, strconv.FormatInt(r.Errors[k], 10), fmt.Sprintf("%.2f", 100*float64(r.Errors[k])/math.Max(1, float64(r.Ops)))})
		}
	}
	return append(out, table([]string{"Benchmark", "Category", "Count", "Share of ops %"}, rows))
}

func hostBlocks(b *Run) []render.Block {
	out := []render.Block{render.H(2, render.T("Host resources"))}
	if len(b.Hosts) == 0 {
		return append(out, render.P(render.T("No host metrics found in metrics/.")))
	}
	var rows [][]string
	for _, h := range b.Hosts {
		rows = append(rows, []string{h.Host, strconv.Itoa(h.Samples), benchPct(h.PeakCPU), benchPct(meanOrNeg(h)), benchPct(h.PeakIOWait), benchPct(h.PeakMem), benchPct(h.PeakDisk), benchPct(h.PeakDiskKB), strings.Join(h.Sources, ", ")})
	}
	return append(out, table([]string{"Host", "Samples", "Peak CPU %", "Mean CPU %", "Peak iowait %", "Peak memory %", "Peak disk util %", "Peak disk kB/s", "Sources"}, rows))
}

func patternBlocks(b *Run) []render.Block {
	out := []render.Block{render.H(2, render.T("Saturation and error patterns")),
		render.P(render.T(fmt.Sprintf("Thresholds: cpu ≥ %.0f%% for ≥ %d consecutive samples; iowait ≥ %.0f%%; disk util ≥ %.0f%%; memory ≥ %.0f%%; throughput < %.0f%% of target; plateau = throughput grew < %.0f%% between halves while p99 rose ≥ %.1f×; error burst = interval error ratio ≥ %.0f× the run's and ≥ %.0f%%.",
			benchCPUSaturated, benchSustained, benchIOWaitHigh, benchDiskSaturated, benchMemPressure, 100*benchTargetShortfall, 100*benchPlateauGrowth, benchLatencyClimb, benchBurstFactor, 100*benchBurstMinRatio)))}
	if len(b.Patterns) == 0 {
		return append(out, render.P(render.T("No saturation or error pattern detected.")))
	}
	bl := render.Block{Kind: render.List}
	for _, p := range b.Patterns {
		bl.Items = append(bl.Items, render.Inline{render.B(p.Kind), render.T(" (" + render.OneLine(p.Target) + "): " + render.OneLine(p.Detail))})
	}
	return append(out, bl)
}

func changesBlocks(b *Run) []render.Block {
	if b.Previous == nil {
		return []render.Block{render.H(2, render.T("Changes since the previous run")),
			render.P(render.T("No earlier run_<timestamp> directory beside this one to compare with."))}
	}
	var rows [][]string
	for _, c := range b.Previous.Changes {
		rows = append(rows, []string{c.Name, render.FmtOpt(c.ThroughputBefore, "") + " → " + render.FmtOpt(c.ThroughputAfter, "") + render.DeltaPct(c.ThroughputBefore, c.ThroughputAfter),
			optMS(c.P99Before) + " → " + optMS(c.P99After) + render.DeltaPct(c.P99Before, c.P99After),
			pctPtr(c.ErrRateBefore) + " → " + pctPtr(c.ErrRateAfter)})
	}
	out := []render.Block{render.H(2, render.T("Changes since "+render.OneLine(b.Previous.Previous))),
		table([]string{"Benchmark", "Throughput (ops/s) before → after", "p99 (ms) before → after", "Error rate % before → after"}, rows)}
	if len(b.Previous.HostCPU) > 0 {
		cpu := render.Block{Kind: render.Lines}
		for _, h := range slices.Sorted(maps.Keys(b.Previous.HostCPU)) {
			v := b.Previous.HostCPU[h]
			cpu.Lines = append(cpu.Lines, render.Inline{render.T(fmt.Sprintf("Peak CPU on %s: %s%% → %s%%.", render.OneLine(h), benchPct(v[0]), benchPct(v[1])))})
		}
		out = append(out, cpu)
	}
	return out
}

// chartBlocks are report.html's charts: throughput and p99 over time per
// benchmark with a series, and cpu per host (the axis stops at 100 %).
func chartBlocks(b *Run) []render.Block {
	out := []render.Block{{Kind: render.Heading, Level: 2, Text: render.Inline{render.T("Over time")}, HTMLOnly: true}}
	fig := func(title, svg string) {
		out = append(out, render.Block{Kind: render.Heading, Level: 3, Text: render.Inline{render.T(title)}, HTMLOnly: true},
			render.Block{Kind: render.Figure, SVG: svg, HTMLOnly: true})
	}
	for _, r := range b.Benchmarks {
		if len(r.Series) == 0 {
			continue
		}
		step := seriesStep(r.Series)
		tp := render.Series{Name: "ops/s", Color: "#27ae60"}
		lat := render.Series{Name: "p99 ms", Color: "#c0392b"}
		er := render.Series{Name: "errors", Color: "#8e44ad"}
		for _, p := range r.Series {
			tp.X, tp.Y = append(tp.X, p.T), append(tp.Y, float64(p.Ops)/step)
			lat.X, lat.Y = append(lat.X, p.T), append(lat.Y, p.P99)
			er.X, er.Y = append(er.X, p.T), append(er.Y, float64(p.Errors))
		}
		fig(r.Name, render.Chart(r.Name, "seconds since start", []render.Panel{{YLabel: "latency (ms)", Series: []render.Series{lat}}, {YLabel: "throughput (ops/s)", Series: []render.Series{tp, er}}}, nil))
	}
	for _, h := range b.Hosts {
		if len(h.CPU) == 0 {
			continue
		}
		cs := render.Series{Name: "cpu %", Color: "#d35400"}
		for i, v := range h.CPU {
			cs.X, cs.Y = append(cs.X, float64(i)), append(cs.Y, v)
		}
		fig(h.Host+" cpu", render.Chart("host "+h.Host, "sample", []render.Panel{{YLabel: "cpu busy %", Series: []render.Series{cs}, YMax: 100}}, nil))
	}
	return out
}

// RenderMarkdown renders run_<ts>/findings/report.md.
func RenderMarkdown(b *Run) []byte { return render.Markdown(runDoc(b)) }

// RenderHTML renders run_<ts>/findings/report.html: the same document as
// report.md with the verdict badge and the charts.
func RenderHTML(b *Run) []byte { return render.HTML(runDoc(b)) }
