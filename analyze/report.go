package analyze

// Markdown rendering of docs/report-format.md §3 (findings/report.md) and docs/report-format.md §4
// (findings/<ID>.md). Both are rendered from the same per-scenario helpers,
// so a scenario file and its part of the report can never disagree.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
)

// Report file names inside the findings directory.
const (
	ReportMarkdownFile = render.MarkdownFile
	ReportJSONFile     = render.JSONFile
	ReportJUnitFile    = "junit.xml"
	ReportHTMLFile     = render.HTMLFile
	VerdictsJSONFile   = "verdicts.json"
)

// WriteReport writes findings/<ID>.md for every scenario, report.md,
// report.json, verdicts.json, junit.xml and report.html into dir (the
// findings directory). It writes every file it can and returns the joined
// errors of those it could not; callers then fall back to printing
// RenderMarkdown (docs/report-format.md §1 write-failure rule).
// WriteReport writes the report files, with the "Changes since" section
// filled from a comparison with the previous session (nil when there is
// none).
func WriteReport(r *Report, cmp *Comparison, dir string) error {
	if r == nil {
		return errors.New("write report: nil report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: create %s: %w", dir, err)
	}
	var errs []error
	write := func(name string, data []byte, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", name, err))
			return
		}
		if err := render.WriteFileAtomic(filepath.Join(dir, name), data); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range r.Scenarios {
		write(ScenarioFileName(s.ID), RenderScenarioMarkdown(r, s), nil)
	}
	write(ReportMarkdownFile, RenderMarkdown(r, cmp), nil)
	js, err := RenderJSON(r, cmp)
	write(ReportJSONFile, js, err)
	vj, err := RenderVerdictsJSON(r)
	write(VerdictsJSONFile, vj, err)
	ju, err := RenderJUnit(r)
	write(ReportJUnitFile, ju, err)
	write(ReportHTMLFile, RenderHTML(r, cmp), nil)
	return errors.Join(errs...)
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

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
		if why := lastReason(s); why != "" {
			v += " — " + why
		}
	}
	return v
}

// artifactCell links artefacts relative to findings/ (paths in the model
// are relative to the session directory) and always names the session log.
func artifactCell(s ScenarioResult) string {
	links := []string{"[session-log](../session-log.md)"}
	for _, a := range s.Artifacts {
		p := a
		if !filepath.IsAbs(p) && !strings.Contains(p, "://") {
			p = "../" + filepath.ToSlash(p)
		}
		links = append(links, fmt.Sprintf("[%s](%s)", a, strings.ReplaceAll(p, " ", "%20")))
	}
	return strings.Join(links, ", ")
}

func scenarioRow(b *strings.Builder, s ScenarioResult) {
	name := s.Name
	if s.Surface != "" {
		name = strings.TrimSpace(name + " (surface: " + s.Surface + ")")
	}
	render.MDRow(b, s.ID, name, verdictCell(s), s.Oracle, s.OracleEvidence, s.LandingEvidence, artifactCell(s))
}

func writeResultsTable(b *strings.Builder, scs []ScenarioResult) {
	render.MDHeader(b, resultColumns...)
	for _, s := range scs {
		scenarioRow(b, s)
		for _, a := range s.Arms {
			scenarioRow(b, a)
		}
	}
	b.WriteString("\nVerdict values are the ten states of the verdict taxonomy (verdicts.md §2); an armed scenario's row is the aggregate of its arms (§5 downgrade rule).\n")
}

func writeFinding(b *strings.Builder, f Finding) {
	fmt.Fprintf(b, "### Finding %s: %s\n", f.ID, render.MDLine(f.Title))
	fmt.Fprintf(b, "- **Scenario:** %s\n", render.MDLine(f.Scenario))
	fmt.Fprintf(b, "- **Hypothesis addressed:** %s\n", render.MDLine(f.Hypothesis))
	fmt.Fprintf(b, "- **What happened:** %s\n", render.MDLine(f.WhatHappened))
	fmt.Fprintf(b, "- **Reproducer:** %s\n", render.MDLine(f.Reproducer))
	red := f.Reduction
	if strings.TrimSpace(red) == "" {
		// A guess is not allowed (docs/verdicts.md §9); the interim value is.
		red = BlamePending
	}
	fmt.Fprintf(b, "- **Reduction classification:** %s\n", render.MDLine(red))
	fmt.Fprintf(b, "- **Classification:** %s\n", render.MDLine(f.Classification))
	fmt.Fprintf(b, "- **Severity:** %s\n", render.MDLine(f.Severity))
	tags := "none"
	if len(f.Tags) > 0 {
		tags = strings.Join(f.Tags, ", ")
	}
	fmt.Fprintf(b, "- **Tags:** %s\n", render.MDLine(tags))
	fmt.Fprintf(b, "- **Evidence:** %s\n", render.MDLine(strings.Join(f.Evidence, "; ")))
	fmt.Fprintf(b, "- **Hypothesised root cause:** %s\n", render.MDLine(f.RootCause))
	fmt.Fprintf(b, "- **Suggested next action:** %s\n", render.MDLine(f.NextAction))
}

// writeChecklists renders the docs/report-format.md §3.8 block of one scenario or arm.
func writeChecklists(b *strings.Builder, s ScenarioResult, level string) {
	fmt.Fprintf(b, "%s %s", level, s.ID)
	if s.Name != "" {
		fmt.Fprintf(b, " — %s", render.MDLine(s.Name))
	}
	fmt.Fprintf(b, " (%s)\n\n", s.Verdict)
	if len(s.Arms) > 0 && len(s.RedFlags) == 0 && len(s.WeakOracle) == 0 {
		b.WriteString("Aggregate of its arms (§5); each arm's checks follow.\n\n")
		for _, a := range s.Arms {
			writeChecklists(b, a, level+"#")
		}
		return
	}
	b.WriteString("Red-flag checks (verdicts.md §6):\n\n")
	byN := map[int]Check{}
	for _, c := range s.RedFlags {
		byN[c.N] = c
	}
	for n := 1; n <= 10; n++ {
		c, ok := byN[n]
		if !ok {
			c = Check{N: n, Name: redFlagNames[n], Status: CheckUnknown, Evidence: "not evaluated"}
		}
		name := c.Name
		if name == "" {
			name = redFlagNames[n]
		}
		ev := render.MDLine(c.Evidence)
		switch c.Status {
		case CheckPass:
			fmt.Fprintf(b, "- [x] %d. %s — %s\n", n, name, ev)
		case CheckNA:
			fmt.Fprintf(b, "- [x] %d. %s — N/A — %s\n", n, name, ev)
		case CheckFail:
			fmt.Fprintf(b, "- [ ] %d. %s — %s\n", n, name, ev)
		default:
			fmt.Fprintf(b, "- [ ] %d. %s — unknown (blocks PASS): %s\n", n, name, ev)
		}
	}
	b.WriteString("\nWeak-oracle audit (verdicts.md §7):\n\n")
	items := map[int]WeakItem{}
	for _, w := range s.WeakOracle {
		items[w.N] = w
	}
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
		switch w.Status {
		case ItemChecked:
			fmt.Fprintf(b, "- [x] %d. %s — %s\n", n, name, render.MDLine(w.Reason))
		case ItemNA:
			fmt.Fprintf(b, "- [x] %d. %s — N/A — %s\n", n, name, render.MDLine(w.Reason))
		default:
			fmt.Fprintf(b, "- [ ] %d. %s — %s\n", n, name, render.MDLine(w.Reason))
		}
	}
	b.WriteString("\n")
	for _, a := range s.Arms {
		writeChecklists(b, a, level+"#")
	}
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

// RenderMarkdown renders findings/report.md: every section of
// docs/report-format.md §3.1 in order, with the explicit-empty forms. cmp adds the
// "Changes since" section right after Summary (dstgen decision: what
// changed is the second thing a reviewer of a re-run wants).
func RenderMarkdown(r *Report, cmp *Comparison) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Findings: %s @ %s\n\n", render.MDLine(r.PlanSlug), render.MDLine(sessionStamp(r)))
	plan := r.PlanPath
	if plan == "" {
		plan = r.PlanSlug
	}
	commit := r.Commit
	if commit == "" {
		commit = "not recorded"
	}
	fmt.Fprintf(&b, "**Plan:** %s\n", render.MDLine(plan))
	fmt.Fprintf(&b, "**Commit under test:** %s\n", render.MDLine(commit))
	fmt.Fprintf(&b, "**Session dir:** %s\n", render.MDLine(r.SessionDir))
	if !r.GeneratedAt.IsZero() {
		fmt.Fprintf(&b, "**Generated:** %s\n", r.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}

	b.WriteString("\n## Summary\n\n")
	headline := strings.TrimSuffix(render.MDLine(r.Headline), ".")
	fmt.Fprintf(&b, "%s. Session verdict: **%s**. %s.", headline, r.SessionVerdict, countsLine(r))
	if len(r.Problems) > 0 {
		fmt.Fprintf(&b, " %d input problem(s) did not stop the analysis; see Input problems.", len(r.Problems))
	}
	b.WriteString("\n")

	if cmp != nil {
		writeChanges(&b, cmp)
	}

	b.WriteString("\n## Scenario results\n\n")
	if len(r.Scenarios) == 0 {
		b.WriteString("No scenarios in this plan.\n")
	} else {
		writeResultsTable(&b, r.Scenarios)
	}

	b.WriteString("\n## Findings\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("No findings.\n")
	}
	for i, f := range r.Findings {
		if i > 0 {
			b.WriteString("\n")
		}
		writeFinding(&b, f)
	}

	b.WriteString("\n## Coverage summary\n\n")
	if len(r.Hypotheses) == 0 {
		b.WriteString("The plan states no hypotheses.\n")
	} else {
		render.MDHeader(&b, "Hypothesis", "Title", "Exercised by", "Result", "Reason if unexercised")
		for _, h := range r.Hypotheses {
			var vs []string
			for _, v := range h.Verdicts {
				vs = append(vs, string(v))
			}
			result := strings.Join(vs, ", ")
			if !h.Exercised {
				result = "not exercised"
			}
			render.MDRow(&b, h.ID, h.Title, strings.Join(h.Scenarios, ", "), result, h.Reason)
		}
	}

	b.WriteString("\n## Surface coverage (boundary and fairness scenarios)\n\n")
	if len(r.Surfaces) == 0 {
		b.WriteString("No boundary or fairness scenarios in this plan.\n")
	} else {
		render.MDHeader(&b, "Scenario / arm", "Surface", "Planned", "Executed", "Verdict", "Downgrade reason")
		for _, s := range r.Surfaces {
			render.MDRow(&b, s.ID, s.Surface, yesNo(s.Planned, s.Surface), yesNo(s.Executed, s.Surface), string(s.Verdict), s.DowngradeReason)
		}
		b.WriteString("\n")
		if len(r.MissingSurfaces) == 0 {
			b.WriteString("All planned surfaces were executed.\n")
		} else {
			fmt.Fprintf(&b, "**Missing surfaces this run did not cover:** %s\n", render.MDLine(strings.Join(r.MissingSurfaces, "; ")))
		}
	}

	b.WriteString("\n## Release-budget disclosures\n\n")
	if len(r.Disclosures) == 0 {
		b.WriteString("All scenarios declared a concrete release budget.\n")
	} else {
		render.MDHeader(&b, "Scenario", "Reason release budget was not provided", "Revisit when")
		for _, d := range r.Disclosures {
			render.MDRow(&b, d.Scenario, d.Reason, d.RevisitWhen)
		}
	}

	b.WriteString("\n## Adequacy assessment vs the plan's coverage argument\n\n")
	if len(r.Adequacy) == 0 {
		b.WriteString("The plan has no §7b adequacy rows to assess.\n")
	} else {
		render.MDHeader(&b, "Claim", "Plan's adequacy argument", "What actually ran", "Adequacy after this run")
		called := 0
		for _, a := range r.Adequacy {
			adq := a.Adequacy
			if a.CalledOut {
				adq = "**Called out:** " + adq
				called++
			}
			render.MDRow(&b, a.Claim, a.PlanArgument, a.WhatRan, adq)
		}
		if called > 0 {
			fmt.Fprintf(&b, "\n%d row(s) called out: what ran is weaker than the plan argued, so the residual uncertainty is now larger than the plan declared. The reviewer must decide whether to accept the gap or re-run.\n", called)
		}
	}

	b.WriteString("\n## Confidence delta\n\n")
	if p := strings.TrimSpace(r.Confidence.Plan); p != "" {
		fmt.Fprintf(&b, "Relative to the plan's §7d statement: %s\n\n", render.MDLine(p))
	}
	fmt.Fprintf(&b, "- **More:** %s\n", render.MDLine(joinOr(r.Confidence.More, "none")))
	fmt.Fprintf(&b, "- **Less:** %s\n", render.MDLine(joinOr(r.Confidence.Less, "none")))
	fmt.Fprintf(&b, "- **Unchanged:** %s\n", render.MDLine(joinOr(r.Confidence.Unchanged, "none")))

	b.WriteString("\n## Green-but-broken check\n\n")
	if len(r.Scenarios) == 0 {
		b.WriteString("No scenarios in this plan.\n")
	}
	for _, s := range r.Scenarios {
		writeChecklists(&b, s, "###")
	}

	if len(r.Problems) > 0 || len(r.Warnings) > 0 {
		b.WriteString("\n## Input problems\n\n")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "- %s\n", render.MDLine(p.String()))
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- warning: %s\n", render.MDLine(w))
		}
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
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

// RenderScenarioMarkdown renders findings/<ID>.md (docs/report-format.md §4): the
// scenario's results rows, tier met, verdict reasons, the checklists and
// its findings.
func RenderScenarioMarkdown(r *Report, s ScenarioResult) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Scenario %s", s.ID)
	if s.Name != "" {
		fmt.Fprintf(&b, ": %s", render.MDLine(s.Name))
	}
	fmt.Fprintf(&b, "\n\n**Verdict:** %s\n**Tier met:** %s\n**Session dir:** %s\n", s.Verdict, tierText(s), render.MDLine(r.SessionDir))
	b.WriteString("\n## Result\n\n")
	writeResultsTable(&b, []ScenarioResult{s})
	b.WriteString("\n## Verdict reasons\n\n")
	writeReasons(&b, s)
	for _, a := range s.Arms {
		writeReasons(&b, a)
	}
	b.WriteString("\n## Green-but-broken check\n\n")
	writeChecklists(&b, s, "###")
	b.WriteString("\n## Findings\n\n")
	n := 0
	ids := map[string]bool{s.ID: true}
	for _, a := range s.Arms {
		ids[a.ID] = true
	}
	for _, f := range r.Findings {
		if ids[f.Scenario] {
			if n > 0 {
				b.WriteString("\n")
			}
			writeFinding(&b, f)
			n++
		}
	}
	if n == 0 {
		b.WriteString("No findings.\n")
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
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

func writeReasons(b *strings.Builder, s ScenarioResult) {
	if len(s.Reasons) == 0 {
		fmt.Fprintf(b, "- %s: no reason recorded\n", s.ID)
		return
	}
	for _, rs := range s.Reasons {
		fmt.Fprintf(b, "- %s [%s]: %s\n", s.ID, rs.Step, render.MDLine(rs.String()))
	}
}
