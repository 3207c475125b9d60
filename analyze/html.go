package analyze

// Stage 6, report (continued): what only report.html has — verdict row
// classes and the latency/throughput charts (inline SVG, no scripts, no
// external assets, so the page renders offline).

import (
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
