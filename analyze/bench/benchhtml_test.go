package bench

import (
	"context"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mdSummary reads the verdict and the summary table rows of report.md.
func mdSummary(t *testing.T, md string) (string, [][]string) {
	t.Helper()
	m := regexp.MustCompile(`Run result: \*\*(\w+)\*\*`).FindStringSubmatch(md)
	if m == nil {
		t.Fatal("report.md states no run result")
	}
	_, sec, _ := strings.Cut(md, "## Summary table\n")
	sec, _, _ = strings.Cut(sec, "\n## ")
	var rows [][]string
	for i, l := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "| ---") {
			continue
		}
		if i <= 2 && strings.Contains(l, "Benchmark") { // header
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return m[1], rows
}

// htmlSummary reads the verdict and the summary table rows of report.html.
func htmlSummary(t *testing.T, page string) (string, [][]string) {
	t.Helper()
	m := regexp.MustCompile(`<p class="verdict[^"]*">Run result: (\w+)</p>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("report.html states no run result")
	}
	_, sec, _ := strings.Cut(page, "<h2>Summary table</h2>")
	sec, _, _ = strings.Cut(sec, "</table>")
	var rows [][]string
	for _, tr := range regexp.MustCompile(`<tr>(.*?)</tr>`).FindAllStringSubmatch(sec, -1) {
		var cells []string
		for _, td := range regexp.MustCompile(`<td>(.*?)</td>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, html.UnescapeString(td[1]))
		}
		if len(cells) > 0 {
			rows = append(rows, cells)
		}
	}
	return m[1], rows
}

// report.html shows the same run result and summary rows as report.md.
func TestBenchHTMLMatchesMarkdown(t *testing.T) {
	for _, dir := range []string{benchCur, "testdata/benchruns/results/run_20261128_100000"} {
		b, err := Analyze(context.Background(), dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mv, mrows := mdSummary(t, string(RenderMarkdown(b)))
		hv, hrows := htmlSummary(t, string(RenderHTML(b)))
		if mv != hv {
			t.Errorf("%s: report.md says %s, report.html says %s", dir, mv, hv)
		}
		if len(mrows) == 0 || len(mrows) != len(hrows) {
			t.Fatalf("%s: %d markdown rows, %d html rows", dir, len(mrows), len(hrows))
		}
		for i := range mrows {
			if strings.Join(mrows[i], "|") != strings.Join(hrows[i], "|") {
				t.Errorf("%s row %d:\n md   %v\n html %v", dir, i, mrows[i], hrows[i])
			}
		}
	}
	b, _ := Analyze(context.Background(), benchCur, Options{})
	if v, _ := htmlSummary(t, string(RenderHTML(b))); v != "FAIL" || !b.Failed {
		t.Errorf("failing run shows %s in html", v)
	}
}

// The cpu chart's axis stops at 100 %, and no point is drawn above it.
func TestBenchHTMLCPUAxisCapped(t *testing.T) {
	b, err := Analyze(context.Background(), benchCur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := string(RenderHTML(b))
	charts := regexp.MustCompile(`(?s)<svg class="chart" data-scenario="host [^"]*".*?</svg>`).FindAllString(page, -1)
	if len(charts) == 0 {
		t.Fatal("no cpu chart")
	}
	top := regexp.MustCompile(`<text x="4" y="[0-9.]+" font-size="11">cpu busy %</text><text x="[0-9.]+" y="[0-9.]+" font-size="10" text-anchor="end">([^<]+)</text>`)
	for _, c := range charts {
		m := top.FindStringSubmatch(c)
		if m == nil {
			t.Fatalf("no y axis label in %s", c[:80])
		}
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || v != 100 {
			t.Errorf("cpu axis top %q, want 100", m[1])
		}
	}
}
