package analyze

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// golden compares got with testdata/golden/<name>, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s (run with -update to create): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (run go test -update to accept):\n--- got ---\n%s", name, got)
	}
}

func allChecks(status string, except map[int]Check) []Check {
	var cs []Check
	for n := 1; n <= 10; n++ {
		if c, ok := except[n]; ok {
			cs = append(cs, c)
			continue
		}
		cs = append(cs, Check{N: n, Name: redFlagNames[n], Status: status, Evidence: "evidence " + redFlagNames[n]})
	}
	return cs
}

func allItems(except map[int]WeakItem) []WeakItem {
	var ws []WeakItem
	for n := 1; n <= 14; n++ {
		if w, ok := except[n]; ok {
			ws = append(ws, w)
			continue
		}
		ws = append(ws, WeakItem{N: n, Name: weakItems[n].name, Kind: KindBreadth, Status: ItemChecked, Reason: "history consumed"})
	}
	return ws
}

func testSeries(n int, tput, p99 float64) *Metrics {
	m := &Metrics{Ops: n * 100, Throughput: tput, P50Ms: p99 / 4, P95Ms: p99 / 2, P99Ms: p99}
	for i := range n {
		m.Series = append(m.Series, MetricPoint{StartNS: int64(i) * 1e9, EndNS: int64(i+1) * 1e9, Ops: 100,
			Throughput: tput, P50Ms: p99 / 4, P99Ms: p99 + float64(i%3)})
	}
	m.FaultWindows = []WindowSpan{{Epoch: "1", Nemesis: "partition-leader", StartNS: 3e9, EndNS: 6e9, Landed: true}}
	return m
}

// fullReport exercises every section in its non-empty form, including
// arms, a FAIL finding, escaping hazards and input problems.
func fullReport() *Report {
	return &Report{
		Schema: ReportSchema, PlanSlug: "kv-store", PlanPath: "docs/testing-plans/kv-store.md",
		SessionDir: "testing/results/kv-store/20261129T094500Z", Commit: "abc1234",
		GeneratedAt:    time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		SessionVerdict: Fail,
		Headline:       "1 oracle violation found in S2 (reproduced)",
		Counts:         map[Verdict]int{PassHardening: 1, FailReproducible: 1, PartialSurface: 1, PassSmoke: 1, NotRun: 1},
		Scenarios: []ScenarioResult{
			{ID: "S1", Name: "linearizable_get", Serious: true, Verdict: PassHardening, TreeVerdict: PassHardening, TierMet: TierRelease, Release: true,
				Reasons: []Reason{{Step: "tree:7", To: PassHardening, Text: "checker consumed 4217/4217 ops, 0 anomalies; fault landed"}},
				Oracle:  "porcupine kv linearizability", OracleEvidence: "4217 ops consumed, 0 anomalies",
				LandingEvidence: "iptables counter 0→14,712 over the window", Artifacts: []string{"artifacts/S1/history.jsonl", "artifacts/S1/run.json"},
				RedFlags:   allChecks(CheckPass, map[int]Check{9: {N: 9, Name: redFlagNames[9], Status: CheckNA, Evidence: "no baseline compared"}}),
				WeakOracle: allItems(map[int]WeakItem{12: {N: 12, Name: weakItems[12].name, Status: ItemNA, Reason: "not a boundary claim"}}),
				Metrics:    testSeries(10, 420, 12.5), Hypotheses: []string{"H1"}, Claims: []string{"C1"}},
			{ID: "S2", Name: "cas | pipes\nand newlines", Serious: true, Verdict: FailReproducible, TreeVerdict: FailReproducible, TierMet: TierHardening,
				Reasons: []Reason{{Step: "tree:2", To: FailReproducible, Text: "violation reproduced by re-run seed 42"}},
				Oracle:  "porcupine register", OracleEvidence: "980 ops consumed, 1 anomaly",
				LandingEvidence: "SIGKILL delivered; leader-lost in raft log", Artifacts: []string{"artifacts/S2/history.jsonl"},
				Checkers:   []checker.Result{{Checker: "linearizable", Model: "register", Outcome: checker.Invalid, OpsConsumed: 980}},
				RedFlags:   allChecks(CheckPass, map[int]Check{7: {N: 7, Name: redFlagNames[7], Status: CheckFail, Evidence: "2 panics in node2.log not accounted for"}}),
				WeakOracle: allItems(map[int]WeakItem{4: {N: 4, Name: weakItems[4].name, Status: ItemUnchecked, Reason: "only 1 failover"}}),
				Findings:   []string{"F1"}, Metrics: testSeries(8, 300, 40)},
			{ID: "S3", Name: "health_smoke", Verdict: PassSmoke, TreeVerdict: PassSmoke, TierMet: TierSmoke,
				Reasons: []Reason{{Step: "tree:3.2", To: PassSmoke, Text: "oracle ran; no fault"}},
				Oracle:  "HTTP 200 + final read", OracleEvidence: "assertion fired 1000/1000", LandingEvidence: "n/a — no fault (PASS-smoke)",
				RedFlags: allChecks(CheckPass, map[int]Check{3: {N: 3, Name: redFlagNames[3], Status: CheckNA, Evidence: "no fault scheduled"}, 6: {N: 6, Name: redFlagNames[6], Status: CheckUnknown, Evidence: "no end stamp"}})},
			{ID: "S4", Name: "tenant_boundary", Serious: true, Verdict: PartialSurface, TreeVerdict: PassHardening, TierMet: TierHardening,
				Reasons: []Reason{{Step: "arms", From: PassHardening, To: PartialSurface, Text: "1 NOT-RUN arm"}},
				Arms: []ScenarioResult{
					{ID: "S4/api", Parent: "S4", Surface: "api", Serious: true, Verdict: PassHardening, TierMet: TierHardening,
						Reasons: []Reason{{Step: "tree:7", To: PassHardening, Text: "clean"}}, OracleEvidence: "512 denied-access checks, 0 leaks",
						RedFlags: allChecks(CheckPass, nil), WeakOracle: allItems(nil), Metrics: testSeries(5, 100, 8)},
					{ID: "S4/export", Parent: "S4", Surface: "export", Serious: true, Verdict: NotRun,
						Reasons: []Reason{{Step: "tree:0", To: NotRun, Text: "export harness not built"}}},
				}},
			{ID: "S5", Name: "release_soak", Verdict: NotRun, TreeVerdict: NotRun, TierMet: TierNone,
				Reasons: []Reason{{Step: "tree:0", To: NotRun, Text: "no run.json: time ran out"}}},
		},
		Findings: []Finding{{ID: "F1", Title: "Stale read after leader kill", Scenario: "S2", Verdict: FailReproducible, Hypothesis: "H2",
			WhatHappened: "A read returned v3 after a successful CAS to v4 had been acknowledged.",
			Reproducer:   "kill leader at t=3s, CAS, read — reduced from 40 events to 3 events over 6 re-runs",
			Reduction:    "SUT", Classification: "crash-recovery", Tags: []string{"safety", "leadership/election"}, Severity: "P0",
			Evidence:  []string{"artifacts/S2/history.jsonl:812", "artifacts/S2/linear.html"},
			RootCause: "Lease not revoked on leader step-down (raft/lease.go).", NextAction: "Add a lease-revocation test and fix step-down."}},
		Hypotheses: []HypothesisCoverage{
			{ID: "H1", Title: "Reads stay linearizable across leader isolation", Scenarios: []string{"S1"}, Verdicts: []Verdict{PassHardening}, Exercised: true},
			{ID: "H2", Title: "CAS survives leader kill", Scenarios: []string{"S2"}, Verdicts: []Verdict{FailReproducible}, Exercised: true},
			{ID: "H3", Title: "Clock skew", Exercised: false, Reason: "blocked by tooling: libfaketime does not reach Go"},
		},
		Surfaces: []SurfaceRow{
			{ID: "S4/api", Surface: "api", Planned: true, Executed: true, Verdict: PassHardening},
			{ID: "S4/export", Surface: "export", Planned: true, Executed: false, Verdict: NotRun, DowngradeReason: "export harness not built"},
			{ID: "S4", Surface: "(aggregate)", Verdict: PartialSurface, DowngradeReason: "1 NOT-RUN arm"},
		},
		MissingSurfaces: []string{"export (S4/export): export harness not built"},
		Disclosures: []Disclosure{{Scenario: "S5", Reason: "no 24h soak host yet", RevisitWhen: "the soak rig is provisioned",
			Text: "not provided — no 24h soak host yet. Revisit when: the soak rig is provisioned."}},
		Adequacy: []AdequacyRow{
			{Claim: "C1", PlanArgument: "S1 isolates the leader under load", WhatRan: "S1 PASS-hardening (release)", Adequacy: "as argued"},
			{Claim: "C4", PlanArgument: "S4 covers api and export", WhatRan: "api only", Adequacy: "export surface unverified", CalledOut: true},
		},
		Confidence: ConfidenceDelta{Plan: "High confidence in C1 after S1 at hardening.",
			More: []string{"C1: linearizable reads held under isolation at release tier"},
			Less: []string{"C2: CAS durability violated (F1)", "C4: export path untested"}},
		Problems: []Problem{{File: "artifacts/S2/history.jsonl", Line: 977, Scenario: "S2", Message: "truncated line"}},
	}
}

// emptyReport takes every explicit-empty form of docs/report-format.md §3.
func emptyReport() *Report {
	return &Report{Schema: ReportSchema, PlanSlug: "empty-plan", SessionDir: "results/empty-plan/20261129T100000Z",
		SessionVerdict: Blocked, Headline: "nothing ran: the plan declares no scenarios", Counts: map[Verdict]int{}}
}

func TestRenderMarkdownGolden(t *testing.T) {
	prev := fullReport()
	prev.SessionDir = "testing/results/kv-store/20261128T080000Z"
	prev.SessionVerdict = DoneWithConcerns
	prev.Scenarios[1].Verdict = PassHardening
	prev.Scenarios[1].Metrics = testSeries(8, 310, 25)
	prev.Scenarios = prev.Scenarios[:4]
	for _, tc := range []struct {
		name string
		r    *Report
		cmp  *Comparison
	}{
		{"report_full.md", fullReport(), nil},
		{"report_empty.md", emptyReport(), nil},
		{"report_compared.md", fullReport(), Compare(prev, fullReport())},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, RenderMarkdown(tc.r, tc.cmp)) })
	}
}

func TestScenarioMarkdownGolden(t *testing.T) {
	r := fullReport()
	for _, i := range []int{1, 3} { // a FAIL with a finding; an armed scenario
		s := r.Scenarios[i]
		t.Run(s.ID, func(t *testing.T) { golden(t, "scenario_"+ScenarioFileName(s.ID), RenderScenarioMarkdown(r, s)) })
	}
}

var wantSections = []string{
	"## Summary",
	"## Scenario results",
	"## Findings",
	"## Coverage summary",
	"## Surface coverage (boundary and fairness scenarios)",
	"## Release-budget disclosures",
	"## Adequacy assessment vs the plan's coverage argument",
	"## Confidence delta",
	"## Green-but-broken check",
}

func headings(md string) []string {
	var hs []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "## ") {
			hs = append(hs, l)
		}
	}
	return hs
}

func TestReportSectionsInSpecOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Report
		want []string
	}{
		{"full", fullReport(), append(append([]string{}, wantSections...), "## Input problems")},
		{"empty", emptyReport(), wantSections},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := string(RenderMarkdown(tc.r, nil))
			if !strings.HasPrefix(md, "# Findings: "+tc.r.PlanSlug+" @ ") {
				t.Errorf("title line wrong: %q", strings.SplitN(md, "\n", 2)[0])
			}
			for _, lbl := range []string{"**Plan:**", "**Commit under test:**", "**Session dir:**"} {
				if !strings.Contains(md, "\n"+lbl+" ") {
					t.Errorf("header lacks %s", lbl)
				}
			}
			if got := headings(md); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("sections:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// Headline first in Summary, then the session verdict.
			sum := md[strings.Index(md, "## Summary\n\n")+len("## Summary\n\n"):]
			if !strings.HasPrefix(sum, strings.TrimSuffix(tc.r.Headline, ".")) {
				t.Errorf("summary does not lead with the headline: %q", firstLine(sum))
			}
			if !strings.Contains(firstLine(sum), "Session verdict: **"+string(tc.r.SessionVerdict)+"**") {
				t.Errorf("summary lacks session verdict: %q", firstLine(sum))
			}
		})
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func TestChangesSectionFollowsSummary(t *testing.T) {
	prev := fullReport()
	prev.SessionDir = "results/kv-store/20261128T080000Z"
	prev.Scenarios[1].Verdict = PassHardening
	md := string(RenderMarkdown(fullReport(), Compare(prev, fullReport())))
	hs := headings(md)
	if len(hs) < 3 || hs[0] != "## Summary" || hs[1] != "## Changes since 20261128T080000Z" || hs[2] != "## Scenario results" {
		t.Fatalf("Changes section not between Summary and Scenario results: %v", hs)
	}
	if !strings.Contains(md, "| S2 | PASS-hardening → FAIL-reproducible |") {
		t.Errorf("verdict change for S2 not shown")
	}
	if !strings.Contains(md, "| S1 | PASS-hardening (unchanged) |") {
		t.Errorf("unchanged S1 row not shown")
	}
}

func TestExplicitEmptyForms(t *testing.T) {
	md := string(RenderMarkdown(emptyReport(), nil))
	for _, want := range []string{
		"No boundary or fairness scenarios in this plan.",
		"All scenarios declared a concrete release budget.",
		"No findings.",
		"- **More:** none", "- **Less:** none", "- **Unchanged:** none",
	} {
		if !strings.Contains(md, "\n"+want+"\n") {
			t.Errorf("empty report lacks %q", want)
		}
	}
	r := fullReport()
	r.MissingSurfaces = nil
	md = string(RenderMarkdown(r, nil))
	if !strings.Contains(md, "\nAll planned surfaces were executed.\n") {
		t.Errorf("no-missing-surface line absent")
	}
	if strings.Contains(md, "Missing surfaces this run did not cover") {
		t.Errorf("missing-surfaces line present although none missing")
	}
	md = string(RenderMarkdown(fullReport(), nil))
	if !strings.Contains(md, "\n**Missing surfaces this run did not cover:** export (S4/export): export harness not built\n") {
		t.Errorf("missing-surfaces line absent")
	}
}

var tableRow = regexp.MustCompile(`^\|.*\|$`)

// cellCount counts unescaped pipes, i.e. the columns a markdown renderer sees.
func cellCount(row string) int {
	n := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n - 1
}

func TestTableCellsEscaped(t *testing.T) {
	md := string(RenderMarkdown(fullReport(), nil))
	lines := strings.Split(md, "\n")
	cols := 0
	for i, l := range lines {
		if !tableRow.MatchString(l) {
			cols = 0
			continue
		}
		if cols == 0 {
			cols = cellCount(l)
			continue
		}
		if got := cellCount(l); got != cols {
			t.Errorf("line %d has %d cells, header has %d: %s", i+1, got, cols, l)
		}
	}
	if !strings.Contains(md, `cas \| pipes<br>and newlines`) {
		t.Errorf("pipe/newline in scenario name not escaped")
	}
}

func TestChecklistsCompleteForEveryScenarioAndArm(t *testing.T) {
	md := string(RenderMarkdown(fullReport(), nil))
	gbb := md[strings.Index(md, "## Green-but-broken check"):]
	for _, id := range []string{"S1", "S2", "S3", "S4/api", "S4/export", "S5"} {
		start := regexp.MustCompile(`(?m)^#{3,4} ` + regexp.QuoteMeta(id) + ` `).FindStringIndex(gbb)
		if start == nil {
			t.Errorf("no checklist heading for %s", id)
			continue
		}
		block := gbb[start[1]:]
		if end := regexp.MustCompile(`(?m)^#{3,4} S`).FindStringIndex(block); end != nil {
			block = block[:end[0]]
		}
		red := regexp.MustCompile(`(?m)^- \[[x ]\] (\d+)\. `).FindAllStringSubmatch(block, -1)
		if len(red) != 24 {
			t.Errorf("%s: %d checklist lines, want 10 red flags + 14 weak-oracle items", id, len(red))
		}
	}
	for _, want := range []string{
		"- [x] 9. Baseline comparison is fair — N/A — no baseline compared",
		"- [ ] 7. No silent error suppression — 2 panics in node2.log not accounted for",
		"- [ ] 6. Run duration met the exit criterion / claimed tier — unknown (blocks PASS): no end stamp",
		"- [ ] 4. Failover exercised more than once — only 1 failover",
		"- [x] 12. Not single-surface only — N/A — not a boundary claim",
	} {
		if !strings.Contains(gbb, want+"\n") {
			t.Errorf("checklist lacks %q", want)
		}
	}
}

func TestFindingBlockFieldOrder(t *testing.T) {
	md := string(RenderMarkdown(fullReport(), nil))
	want := []string{"### Finding F1: Stale read after leader kill", "- **Scenario:** S2", "- **Hypothesis addressed:** H2",
		"- **What happened:**", "- **Reproducer:**", "- **Reduction classification:** SUT", "- **Classification:** crash-recovery",
		"- **Severity:** P0", "- **Tags:** safety, leadership/election", "- **Evidence:**", "- **Hypothesised root cause:**", "- **Suggested next action:**"}
	pos := 0
	for _, w := range want {
		i := strings.Index(md[pos:], w)
		if i < 0 {
			t.Fatalf("finding block lacks %q after offset %d", w, pos)
		}
		pos += i + len(w)
	}
	r := fullReport()
	r.Findings[0].Reduction = ""
	if md := string(RenderMarkdown(r, nil)); !strings.Contains(md, "- **Reduction classification:** unknown — pending re-run on alternative harness/host\n") {
		t.Errorf("empty reduction class not rendered as the allowed interim value")
	}
}

func TestJUnitGoldenAndParsesBack(t *testing.T) {
	out, err := RenderJUnit(fullReport())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "junit_full.xml", out)
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if doc.Tests != 7 || doc.Failures != 1 || doc.Skipped != 3 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 7 {
		t.Fatalf("tests=%d failures=%d skipped=%d suites=%d", doc.Tests, doc.Failures, doc.Skipped, len(doc.Suites))
	}
	want := map[string]string{"S1": "pass", "S2": "fail", "S3": "pass", "S4": "skip", "S4/api": "pass", "S4/export": "skip", "S5": "skip"}
	for _, c := range doc.Suites[0].Cases {
		id := strings.Fields(c.Name)[0]
		got := "pass"
		if c.Failure != nil {
			got = "fail"
		}
		if c.Skipped != nil {
			got = "skip"
			if !strings.Contains(c.Skipped.Message, ":") {
				t.Errorf("%s skipped without a reason: %q", id, c.Skipped.Message)
			}
		}
		if got != want[id] {
			t.Errorf("%s: %s, want %s", id, got, want[id])
		}
	}
}

func TestJUnitSurvivesControlCharacters(t *testing.T) {
	r := emptyReport()
	r.Scenarios = []ScenarioResult{{ID: "S1", Name: "bad\x00name <&>", Verdict: InconclusiveEnv,
		Reasons: []Reason{{Step: "tree:1", To: InconclusiveEnv, Text: "no iptables \x1b[31m"}}}}
	out, err := RenderJUnit(r)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(out))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("junit with control characters is not well-formed XML: %v\n%s", err, out)
		}
	}
}

func TestRenderJSONHasVerdictsShape(t *testing.T) {
	out, err := RenderJSON(fullReport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema         string `json:"schema"`
		SessionVerdict string `json:"session_verdict"`
		Verdicts       struct {
			SessionVerdict string `json:"session_verdict"`
			Scenarios      []struct {
				ID              string            `json:"id"`
				Verdict         string            `json:"verdict"`
				DowngradeReason string            `json:"downgrade_reason"`
				RedFlags        map[string]string `json:"red_flags"`
				WeakOracle      map[string]string `json:"weak_oracle"`
				Arms            []struct {
					ID     string `json:"id"`
					Reason string `json:"reason"`
				} `json:"arms"`
			} `json:"scenarios"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != ReportSchema || got.SessionVerdict != "FAIL" || got.Verdicts.SessionVerdict != "FAIL" {
		t.Fatalf("schema/verdict: %+v", got)
	}
	if len(got.Verdicts.Scenarios) != 5 {
		t.Fatalf("%d scenarios in verdicts block", len(got.Verdicts.Scenarios))
	}
	s1, s2, s4 := got.Verdicts.Scenarios[0], got.Verdicts.Scenarios[1], got.Verdicts.Scenarios[3]
	if s1.RedFlags["9"] != "n/a" || s1.RedFlags["1"] != "pass" || s2.RedFlags["7"] != "fail" || s2.WeakOracle["4"] != "fail" || s2.WeakOracle["1"] != "pass" {
		t.Errorf("red flag / weak oracle maps wrong: %v %v %v", s1.RedFlags, s2.RedFlags, s2.WeakOracle)
	}
	if s4.DowngradeReason != "1 NOT-RUN arm" || len(s4.Arms) != 2 || s4.Arms[1].Reason != "export harness not built" {
		t.Errorf("armed scenario: %+v", s4)
	}
	// report.json round-trips into a Report for the next session's comparison.
	dir := t.TempDir()
	p := filepath.Join(dir, "report.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadReportJSON(p)
	if err != nil {
		t.Fatal(err)
	}
	if back.Scenarios[1].Verdict != FailReproducible || back.Scenarios[0].Metrics.P99Ms != 12.5 {
		t.Errorf("round trip lost data: %+v", back.Scenarios[1])
	}
}

func TestLoadReportJSONBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"garbage.json", "{\n\"schema\": \"dst-report/1\",\n oops}", "garbage.json:3:"},
		{"schema.json", `{"schema":"other/9"}`, `schema "other/9"`},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadReportJSON(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadReportJSON(filepath.Join(dir, "absent.json")); err == nil {
		t.Errorf("missing file accepted")
	}
}

func TestHTMLSelfContainedWithCharts(t *testing.T) {
	page := RenderHTML(fullReport(), nil)
	fixture.CheckWellFormed(t, page)
	if m := fixture.ExternalRef.Find(page); m != nil {
		t.Errorf("report.html references external content: %q", m)
	}
	if bytes.Contains(page, []byte("http://")) || bytes.Contains(page, []byte("https://")) {
		t.Errorf("report.html contains a URL")
	}
	// One chart per scenario with a workload (S4's aggregate is drawn
	// through its arms).
	for _, id := range []string{"S1", "S2", "S3", "S4/api", "S4/export", "S5"} {
		re := regexp.MustCompile(`<svg class="chart" data-scenario="` + regexp.QuoteMeta(id) + `"[^>]*>([\s\S]*?)</svg>`)
		m := re.FindSubmatch(page)
		if m == nil {
			t.Errorf("no chart for %s", id)
			continue
		}
		hasData := id == "S1" || id == "S2" || id == "S4/api"
		if got := bytes.Count(m[1], []byte(`class="fault-window"`)); hasData && got != 2 {
			t.Errorf("%s: %d shaded fault-window rects, want 2 (one per panel)", id, got)
		}
		if got := bytes.Count(m[1], []byte("<polyline")); hasData && got != 3 {
			t.Errorf("%s: %d polylines, want p99, p50 and throughput", id, got)
		}
	}
	if n := bytes.Count(page, []byte(`<svg class="chart"`)); n != 6 {
		t.Errorf("%d charts, want 6", n)
	}
}

func TestWriteReportWritesEveryFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "findings")
	if err := WriteReport(fullReport(), nil, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "report.json", "verdicts.json", "junit.xml", "report.html", "S1.md", "S2.md", "S3.md", "S4.md", "S5.md"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !bytes.Equal(md, RenderMarkdown(fullReport(), nil)) {
		t.Errorf("report.md on disk differs from RenderMarkdown")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteReportFailureIsReported(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteReport(fullReport(), nil, filepath.Join(blocker, "findings"))
	if err == nil {
		t.Fatal("writing under a regular file succeeded")
	}
	var pe *os.PathError
	if !errors.As(err, &pe) {
		t.Errorf("error does not carry the path: %v", err)
	}
}

func TestScenarioFileNameStaysInDir(t *testing.T) {
	for in, want := range map[string]string{"S1": "S1.md", "S4/api": "S4_api.md", "../../etc/passwd": "etc_passwd.md", "": "scenario.md", "..": "scenario.md"} {
		if got := ScenarioFileName(in); got != want {
			t.Errorf("ScenarioFileName(%q) = %q, want %q", in, got, want)
		}
	}
}
