package analyze

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/internal/lazyre"
)

// Stage 6, report — 6.0 cells: the file names and the small texts every
// report file shows (verdict cells, counts, tier, the chart of a
// scenario). Calls only stages 0–5.

// Report file names inside the findings directory.
const (
	ReportMarkdownFile = render.MarkdownFile
	ReportJSONFile     = render.JSONFile
	ReportJUnitFile    = "junit.xml"
	ReportHTMLFile     = render.HTMLFile
	VerdictsJSONFile   = "verdicts.json"
)

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
		if why := s.Why().Text; why != "" {
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

func arrow(before, after string) string {
	if before == after {
		return before + " (unchanged)"
	}
	return before + " → " + after
}

func flattenResults(scs []ScenarioResult) []ScenarioResult {
	var out []ScenarioResult
	for _, s := range scs {
		out = append(out, s)
		out = append(out, s.Arms...)
	}
	return out
}

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

var unsafeFileChars = lazyre.New(`[^A-Za-z0-9._-]+`)

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
