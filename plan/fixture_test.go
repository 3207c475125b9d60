package plan

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const fixturePath = "testdata/quorumkv-core-guarantees.md"

func readFixture(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustParse(t testing.TB, name, text string) *Plan {
	t.Helper()
	p, err := ParseBytes(name, []byte(text))
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return p
}

func scenarioIDs(ss []Scenario, pred func(*Scenario) bool) []string {
	var out []string
	for i := range ss {
		if pred(&ss[i]) {
			out = append(out, ss[i].ID)
		}
	}
	return out
}

// TestFixtureExpectedParse asserts every row of docs/plan-format.md §14.1.
func TestFixtureExpectedParse(t *testing.T) {
	p, err := Parse(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	eq := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	// header
	eq("slug", p.Slug, "quorumkv-core-guarantees")
	eq("mode", p.Mode, "project-wide")
	eq("status", p.Status, "draft")
	eq("date", p.Date, "2026-05-20")
	eq("sut", p.SUT, "quorumkv")
	eq("change", p.ChangeUnderTest, "N/A — project-wide")
	eq("author", p.Author, "dstgen fixture")

	// claims: 11, one per category; inferred flags
	eq("claims", len(p.Claims), 11)
	cats := map[string]int{}
	for i, c := range p.Claims {
		eq("claim id", c.ID, "C"+itoa(i+1))
		cats[c.Category]++
		want := "no"
		switch c.ID {
		case "C3", "C8":
			want = "yes"
		case "C5", "C6":
			want = "partial"
		}
		eq(c.ID+" inferred", c.Inferred, want)
	}
	for _, c := range Categories {
		eq("claims in category "+c, cats[c], 1)
	}
	eq("C6 inferred note", p.Claim("C6").InferredNote, "docs are silent")
	eq("C1 line", p.Claim("C1").Line, 35)

	eq("missing", len(p.Missing), 1)
	eq("missing id", p.Missing[0].ID, "M1")

	eq("hypotheses", len(p.Hypotheses), 5)
	for i, h := range p.Hypotheses {
		eq("hypothesis id", h.ID, "H"+itoa(i+1))
	}
	eq("H2 falsifies", p.hypothesis("H2").CouldFalsify, []string{"C2", "C6"})
	eq("H2 title", p.hypothesis("H2").Title, "Lost ack on fsync batching")
	eq("H2 subsystem", p.hypothesis("H2").Subsystem, "storage")
	if !strings.Contains(p.HypothesesNA, "N/A because this plan pins one version") {
		t.Errorf("HypothesesNA = %q", p.HypothesesNA)
	}

	eq("coverage rows", len(p.Coverage), 5)
	eq("inventory rows", len(p.Inventory), 2)
	eq("techniques", len(p.Techniques), 3)
	eq("technique 1", p.Techniques[0].Name, "jepsen-and-elle")
	eq("technique 1 hypotheses", p.Techniques[0].Hypotheses, []string{"H1", "H2"})

	eq("env requirements", len(p.EnvReqs), 4)
	for _, e := range p.EnvReqs {
		eq(e.Requirement+" brought up by SUT", e.BroughtUpBySUT, strings.HasPrefix(e.Requirement, "MinIO"))
	}
	eq("Go toolchain used by", p.EnvReqs[2].UsedBy, []string{"S1", "S2", "S5"})

	eq("scenarios", len(p.Scenarios), 5)
	eq("serious", scenarioIDs(p.Scenarios, p.Serious), []string{"S1", "S2"})
	eq("S1 model", p.Scenario("S1").M != nil && p.Scenario("S1").M.filled(), true)
	eq("S2 model", p.Scenario("S2").M != nil && p.Scenario("S2").M.filled(), true)
	eq("sentinel", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return s.MNotApplicable && s.M == nil }), []string{"S3", "S4", "S5"})
	eq("§7.M.S present", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return s.S != nil }), []string{"S4", "S5"})
	eq("needs surface", scenarioIDs(p.Scenarios, p.needsSurface), []string{"S4", "S5"})
	var arms []string
	for _, s := range p.Scenarios {
		for _, a := range s.Arms {
			arms = append(arms, a.ID)
		}
	}
	eq("arms", arms, []string{"S4/api", "S4/admin", "S4/export", "S5/api"})
	_, admin := p.arm("S4/admin")
	if admin == nil || admin.Surface != "admin API" || admin.Oracle != "snapshot of tenant A contains no tenant B keys" {
		t.Errorf("arm S4/admin = %+v", admin)
	}

	eq("release not provided", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return s.Release.NotProvided }), []string{"S2", "S4"})
	s2 := p.Scenario("S2").Release
	eq("S2 reason", s2.Reason, "no power-loss (fsync-drop) rig exists yet")
	eq("S2 revisit", s2.RevisitWhen, "dm-flakey is available on the test hosts")
	eq("S2 text verbatim", s2.Text, "not provided — no power-loss (fsync-drop) rig exists yet. Revisit when: dm-flakey is available on the test hosts.")
	eq("concrete release", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return !s.Release.NotProvided && s.Release.Tier.Parsed() }), []string{"S1", "S3", "S5"})

	eq("skeleton", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return s.Skeleton != "" }), []string{"S1"})
	s1 := p.Scenario("S1")
	eq("S1 skeleton language", s1.SkeletonLang, "go")
	eq("S1 skeleton tag", s1.SkeletonTag, "go")
	if !strings.Contains(s1.Skeleton, "AUTO-GENERATED") || strings.Count(s1.Skeleton, "TODO") != 3 {
		t.Errorf("S1 skeleton lacks marker or 3 TODOs:\n%s", s1.Skeleton)
	}
	if !strings.HasPrefix(s1.Skeleton, "// AUTO-GENERATED") {
		t.Errorf("skeleton not dedented: %q", s1.Skeleton[:20])
	}
	eq("author mode", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return s.authorMode() }), []string{"S1"})

	// seriousness: S2 by C2 durability + C6 idempotency; S5 not serious
	eq("S2 categories", p.Categories(p.Scenario("S2")), []string{CatDurability, CatIdempotency})
	eq("S5 serious", p.Serious(p.Scenario("S5")), false)
	eq("S5 fairness", p.fairness(p.Scenario("S5")), true)
	f := p.Scenario("S5").S.Fairness
	if f == nil {
		t.Fatal("S5 fairness formula not parsed")
	}
	eq("fairness group", f.Group, "tenant")
	eq("fairness T1", f.WorstP99Ratio, Threshold{Metric: "worst_group_p99/aggregate_p99", Op: "<=", Value: 2.0, Known: true})
	eq("fairness T2", f.MinThroughput, Threshold{Metric: "min_group_throughput", Op: ">=", Value: 190, Unit: "ops/s", Known: true})
	eq("fairness err", f.ErrorRate, Threshold{Metric: "error_rate_by_group", Op: "==", Value: 0, Known: true})
	eq("fairness T3", f.RepeatSpread, Threshold{Metric: "repeat_spread", Op: "<=", Value: 0.15, Known: true})

	eq("faults planned", scenarioIDs(p.Scenarios, func(s *Scenario) bool { return s.FaultsPlanned() }), []string{"S1", "S2", "S3", "S4"})
	eq("S1 hardening tier", p.Scenario("S1").Hardening.Tier, Tier{
		Nodes: Count{3, true}, Duration: Span{10 * time.Minute, true}, Faults: Count{4, true}, Seeds: Count{3, true}})

	// §2 as its own heading, §7b/§7c/§7d/§8/§9
	if !strings.Contains(p.SUTModel, "Tenancy / isolation") {
		t.Errorf("SUTModel = %q", p.SUTModel)
	}
	eq("adequacy rows", len(p.Adequacy), 2)
	eq("adequacy S4 arms", p.Adequacy[1].ScenarioIDs, []string{"S4/api", "S4/admin", "S4/export"})
	eq("residual rows", len(p.Residual), 2)
	eq("residual claims", p.Residual[0].ClaimIDs, []string{"C9", "C10", "C11"})
	if !strings.HasPrefix(p.Confidence, "If S1–S5 pass") || p.ConfLine != 286 {
		t.Errorf("Confidence at %d = %q", p.ConfLine, p.Confidence)
	}
	eq("not covered", p.NotCovered, []string{"The Go client SDK", "Version upgrades and mixed-version clusters"})
	eq("open questions", len(p.OpenQuestions), 1)

	// lint: no hard errors and no warnings
	if probs := Lint(p); len(probs) != 0 {
		for _, pr := range probs {
			t.Errorf("unexpected lint problem: %s [%s]", pr, pr.Rule)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// blankVerbatim clears the fields that keep source text verbatim (and so
// legitimately differ between markup variants) and the file name.
func blankVerbatim(p *Plan) *Plan {
	q := *p
	q.Path, q.Summary, q.Scope, q.SUTModel, q.Confidence = "", "", "", "", ""
	return &q
}

// TestFixtureVariantsParseTheSame rewrites the fixture the ways people
// really write plans and requires the same parse.
func TestFixtureVariantsParseTheSame(t *testing.T) {
	orig := readFixture(t)
	base := blankVerbatim(mustParse(t, "base", orig))
	boldLabel := regexp.MustCompile(`\*\*([^*\n]+?):\*\*`)
	bulletDash := regexp.MustCompile(`(?m)^(\s*)- `)
	headingRe := regexp.MustCompile(`(?m)^(##+) `)
	tableEnd := regexp.MustCompile(`(?m)^(\|.*?)[ \t]*\|[ \t]*$`)
	labelSpace := regexp.MustCompile(`(?m)^(\s*)- \*\*([^*\n]+?):\*\* `)
	variants := []struct {
		name string
		f    func(string) string
	}{
		{"crlf", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }},
		{"plain labels", func(s string) string { return boldLabel.ReplaceAllString(s, "$1:") }},
		{"bold label colon outside", func(s string) string { return boldLabel.ReplaceAllString(s, "**$1**:") }},
		{"star bullets", func(s string) string { return bulletDash.ReplaceAllString(s, "$1* ") }},
		{"deeper headings", func(s string) string { return headingRe.ReplaceAllString(s, "#$1 ") }},
		{"no trailing table pipe", func(s string) string { return tableEnd.ReplaceAllString(s, "$1") }},
		{"extra spaces", func(s string) string { return labelSpace.ReplaceAllString(s, "$1-   **$2:**    ") }},
		{"all at once", func(s string) string {
			s = boldLabel.ReplaceAllString(s, "$1:")
			s = bulletDash.ReplaceAllString(s, "$1* ")
			s = headingRe.ReplaceAllString(s, "#$1 ")
			s = tableEnd.ReplaceAllString(s, "$1")
			return strings.ReplaceAll(s, "\n", "\r\n")
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			text := v.f(orig)
			if text == orig {
				t.Fatal("variant did not change the fixture")
			}
			p := mustParse(t, v.name, text)
			got := blankVerbatim(p)
			if !reflect.DeepEqual(got, base) {
				diffPlans(t, got, base)
			}
			if p.Summary == "" || p.SUTModel == "" || p.Confidence == "" {
				t.Error("verbatim sections lost")
			}
			if probs := Lint(p); len(probs) != 0 {
				t.Errorf("lint: %v", probs)
			}
		})
	}
}

// diffPlans reports the first differing top-level fields, to keep failures
// readable.
func diffPlans(t *testing.T, got, want *Plan) {
	t.Helper()
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for i := 0; i < gv.NumField(); i++ {
		if !gv.Type().Field(i).IsExported() {
			continue
		}
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("field %s differs:\n got %+v\nwant %+v", gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
		}
	}
	if !reflect.DeepEqual(got.notes, want.notes) {
		t.Errorf("notes differ: %v vs %v", got.notes, want.notes)
	}
}

// TestMissingTrailingCells: short rows parse with empty trailing cells
// instead of failing or shifting columns.
func TestMissingTrailingCells(t *testing.T) {
	text := strings.Replace(readFixture(t), "| MinIO / S3-compatible | any | S4 | brought up by SUT |", "| MinIO / S3-compatible | any | S4", 1)
	text = strings.Replace(text, `| C11 | "a removed node disappears from /members within 10s" | membership | docs/ops.md | no |`, `| C11 | "a removed node disappears from /members within 10s" | membership |`, 1)
	p := mustParse(t, "short", text)
	e := p.EnvReqs[3]
	if e.Requirement != "MinIO / S3-compatible" || e.InstallHint != "" || e.BroughtUpBySUT || len(e.UsedBy) != 1 {
		t.Errorf("short env row = %+v", e)
	}
	c := p.Claim("C11")
	if c == nil || c.Category != CatMembership || c.Source != "" || c.Inferred != "" {
		t.Errorf("short claim row = %+v", c)
	}
}
