package plan

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

// altForms is a change-scoped plan written with the alternative forms the
// docs/plan-format.md allows: §2 trailing §1c (no heading), hypotheses under sub-headings
// with bold ids, the plain-line §7.M heading, per-arm §7.M blocks, inline
// arms, "--" disclosure, Boundary claim/keys bullets.
const altForms = `# Test Plan: ` + "`alt-forms`" + `

- Date: 2026-01-02
- Plan mode: change-scoped
- SUT: demo
- Change under test: PR #12
- Plan author: someone
- Status: reviewed

## 0) Architecture
one line

## 1: Scope
scope text

## §1b Claims
| ID | Claim | Category | Source | Inferred? |
|----|-------|----------|--------|-----------|
| **C1** | "reads are linearizable" | Safety | docs | No |
| C2 | "tenants are separated" | ` + "`boundary`" + ` | docs | partial: silent |

## 1c — Missing claims
Docs and code appear aligned; no missing claims.

- **Tenancy / isolation:** prefix per tenant
- **Persistence:** fsync per write

## 4. Hypotheses

### Storage subsystem

- **H1.** Stale read — a follower serves an old value
  - Could falsify: C1, M7
  - Suspected because: lease math
* H2: Tenant leak - routing ignores prefix
  * Could falsify: C1–C2

Idempotency / replay: N/A because there is no retry path.

## 6. Techniques
#### 6.1 jepsen-and-elle
- Hypotheses it addresses: H1, H2
- Reference: ` + "`references/jepsen-and-elle.md`" + `
#### chaos-and-fault-injection
- Hypotheses it addresses: H2

## 6b. Env
| Requirement | Version floor | Used by scenarios | Install hint |
|---|---|---|---|
| iptables | any | S1/api, S1/admin | apt |

## 7. Scenarios

### Scenario S1 — ` + "`reads_linearizable_and_tenants_separated`" + `
* Falsifies if it FAILs: C1, C2 (claim IDs from §1b)
* Closes: H1, H2
* Technique: jepsen-and-elle
* Workload: 2 clients,
  continuing on the next line
* Faults: kill-9 once
* Oracle: linearizability checker per key
* Observability required: history
* Exit criteria: PASS if no anomaly
* Smoke budget: 1 node, 30 sec, 1 fault, 1 seed
* Hardening budget: 3 nodes, 1 hour, 10 faults, 5 seeds
* Release budget: Not provided -- no rig. Revisit when: Q3.

§7.M (model / history / checker discipline)
- **Model under test:** register
- **Operation history:** default schema, in-process + server-side
- **Checker:** linearizability
- **Nemesis + landing evidence:** kill-9; evidence = restart timestamp in log
- **Ambiguous outcomes:** default
- **Reduction plan:** fixed seed

#### §7.M.S — Surface decomposition
- **Boundary claim:** C2
- **Boundary keys:** tenant prefix
- **Surfaces:** api, admin, export
- **Operations:** get
- **Adversarial inputs:** acme vs acme-corp
- **Positive controls:** own keys readable
- **Negative controls:** other keys denied and absent from logs
- **Delayed / async paths:** nightly compaction
- **Observability paths:** metrics
- **Scenario arms:** ` + "`S1/api`" + ` — surface: api; oracle: denied

#### §7.M — S1/api
- **Model under test:** map
- **Operation history:** default
- **Checker:** linearizability
- **Nemesis + landing evidence:** none; evidence = log marker
- **Ambiguous outcomes:** default
- **Reduction plan:** fixed seed

## 7b. Adequacy
| Claim | Threats | Scenarios | Why |
|---|---|---|---|
| C1 | x | S1 | y |

## 7c. Residual
Nothing is left uncovered.

## 7d. Confidence
We have not observed stale reads.

## 8. Not covered
Everything else.

## 9. Open questions
- none — me, 2026-02-01
`

func TestAlternativeForms(t *testing.T) {
	p := mustParse(t, "alt.md", altForms)
	eq := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	eq("slug", p.Slug, "alt-forms")
	eq("mode", p.Mode, "change-scoped")
	eq("status", p.Status, "reviewed")
	eq("sections", len(p.Sections), 13)
	eq("C1 category normalised", p.Claim("C1").Category, CatSafety)
	eq("C1 inferred", p.Claim("C1").Inferred, "no")
	eq("C2 category", p.Claim("C2").Category, CatBoundary)
	eq("C2 inferred", []string{p.Claim("C2").Inferred, p.Claim("C2").InferredNote}, []string{"partial", "silent"})
	eq("missing text", p.MissingText, "Docs and code appear aligned; no missing claims.")
	if !strings.HasPrefix(p.SUTModel, "- **Tenancy / isolation:**") || p.SUTModelLine != 25 {
		t.Errorf("SUTModel (trailing §1c) at %d = %q", p.SUTModelLine, p.SUTModel)
	}
	eq("hypotheses", len(p.Hypotheses), 2)
	eq("H1", []string{p.Hypotheses[0].ID, p.Hypotheses[0].Title, p.Hypotheses[0].Description, p.Hypotheses[0].Group},
		[]string{"H1", "Stale read", "a follower serves an old value", "Storage subsystem"})
	eq("H1 falsify (C and M ids)", p.Hypotheses[0].CouldFalsify, []string{"C1", "M7"})
	eq("H2 title", p.Hypotheses[1].Title, "Tenant leak")
	eq("H2 range", p.Hypotheses[1].CouldFalsify, []string{"C1", "C2"})
	eq("N/A prose", p.HypothesesNA, "Idempotency / replay: N/A because there is no retry path.")
	eq("techniques", []string{p.Techniques[0].Name, p.Techniques[1].Name}, []string{"jepsen-and-elle", "chaos-and-fault-injection"})
	eq("env used by arms", p.EnvReqs[0].UsedBy, []string{"S1/api", "S1/admin"})

	s := p.Scenario("S1")
	if s == nil {
		t.Fatal("no S1")
	}
	eq("name", s.Name, "reads_linearizable_and_tenants_separated")
	eq("falsifies", s.Falsifies, []string{"C1", "C2"})
	eq("workload continuation", s.Workload, "2 clients, continuing on the next line")
	eq("release", []any{s.Release.NotProvided, s.Release.Reason, s.Release.RevisitWhen}, []any{true, "no rig", "Q3"})
	eq("smoke tier", s.Smoke.Tier, Tier{Nodes: Count{1, true}, Duration: Span{30 * time.Second, true}, Faults: Count{1, true}, Seeds: Count{1, true}})
	eq("serious", p.Serious(s), true)
	eq("needs surface", p.needsSurface(s), true)
	if s.M == nil || !s.M.filled() || s.M.Model != "register" {
		t.Errorf("plain-line §7.M not parsed: %+v", s.M)
	}
	if s.S == nil || s.S.BoundaryClaim != "C2" || s.S.BoundaryKeys != "tenant prefix" || s.S.Surfaces != "api, admin, export" {
		t.Errorf("§7.M.S = %+v", s.S)
	}
	eq("inline arm", len(s.Arms), 1)
	a := s.Arm("S1/api")
	if a == nil || a.Surface != "api" || a.Oracle != "denied" || a.M == nil || a.M.Model != "map" || a.M.Arm != "S1/api" {
		t.Errorf("arm = %+v", a)
	}
	if s.model("S1/api") != a.M || s.model("S1/other") != s.M {
		t.Error("Scenario.Model does not prefer the arm's block")
	}
	// Expected: H1 cites M7, absent from §1c; the env row names an undeclared arm.
	var rules []string
	for _, pr := range Lint(p) {
		rules = append(rules, pr.Rule+"@"+itoa(pr.Line))
	}
	eq("lint", rules, []string{"unknown-claim@32", "dangling-id@50"})
}

func TestParseErrors(t *testing.T) {
	fx := readFixture(t)
	for _, c := range []struct {
		name string
		data string
		line int
		msg  string
	}{
		{"empty", "  \n\n", 1, "empty plan"},
		{"nul byte", "# Test Plan: x\n\nab\x00c\n", 3, "NUL byte"},
		{"bad utf8", "# Test Plan: x\n\xff\xfe\n", 2, "invalid UTF-8"},
		{"not a plan", "hello\nworld\n", 1, "not a test plan"},
		{"unterminated fence", strings.Replace(fx, "  ```\n\n#### §7.M", "\n\n#### §7.M", 1), 152, "never closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseBytes("x.md", []byte(c.data))
			var pe *fileline.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *fileline.Error", err)
			}
			if pe.Line != c.line || !strings.Contains(pe.Reason(), c.msg) || pe.File != "x.md" {
				t.Errorf("err = %v, want line %d containing %q", err, c.line, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "x.md:"+itoa(c.line)+": ") {
				t.Errorf("Error() = %q", err.Error())
			}
			if p == nil {
				t.Error("partial plan not returned")
			}
		})
	}
	// Partial results survive an unterminated fence.
	p, _ := ParseBytes("x.md", []byte(strings.Replace(fx, "  ```\n\n#### §7.M", "\n\n#### §7.M", 1)))
	if p.Slug != "quorumkv-core-guarantees" || len(p.Claims) != 11 {
		t.Errorf("partial plan lost: slug %q, %d claims", p.Slug, len(p.Claims))
	}
	// Oversized input is refused before any work.
	if _, err := ParseBytes("big.md", make([]byte, MaxSize+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized: err = %v", err)
	}
	// File-level errors.
	if _, err := Parse(filepath.Join(t.TempDir(), "nope.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := Parse(t.TempDir()); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: err = %v", err)
	}
	// A device stats as size 0 yet never ends: the read must stop at the
	// limit instead of exhausting memory.
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := Parse("/dev/zero"); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("/dev/zero: err = %v, want the size limit", err)
		}
	}
}

func TestParseTier(t *testing.T) {
	for _, c := range []struct {
		text string
		want Tier
	}{
		{"3 nodes, 60 s, 0 faults, 1 seed", Tier{Nodes: Count{3, true}, Duration: Span{time.Minute, true}, Faults: Count{0, true}, Seeds: Count{1, true}}},
		{"5 nodes, 2 h, 40 faults, 10 seeds", Tier{Nodes: Count{5, true}, Duration: Span{2 * time.Hour, true}, Faults: Count{40, true}, Seeds: Count{10, true}}},
		{"4 tenants, 10min, 2 faults", Tier{Tenants: Count{4, true}, Duration: Span{10 * time.Minute, true}, Faults: Count{2, true}}},
		{"6 clients at 200 ops/s for 90s", Tier{Clients: Count{6, true}, Duration: Span{90 * time.Second, true}}},
		{"1.5 h, 1,000 keys", Tier{Keys: Count{1000, true}, Duration: Span{90 * time.Minute, true}}},
		{"T+120s isolate, 3 replicas", Tier{Nodes: Count{3, true}}},
		{"run it for a while", Tier{}},
		{"", Tier{}},
	} {
		got := ParseTier(c.text)
		if got != c.want {
			t.Errorf("ParseTier(%q) = %+v, want %+v", c.text, got, c.want)
		}
	}
	tr := ParseTier("3 nodes, 60 s")
	if n, unit, ok := tr.Size(); n != 3 || unit != "nodes" || !ok {
		t.Errorf("Size = %d %s %v", n, unit, ok)
	}
	if got := tr.unknown(); !reflect.DeepEqual(got, []string{"faults", "seeds"}) {
		t.Errorf("Unknown = %v", got)
	}
	if ParseTier("words only").Parsed() {
		t.Error("Parsed() true for no dimensions")
	}
	below, above := ParseTier("3 nodes, 30 s, 5 faults").Weaker(ParseTier("3 nodes, 60 s, 1 fault"))
	if !reflect.DeepEqual(below, []string{"duration"}) || !above {
		t.Errorf("Weaker = %v %v", below, above)
	}
	// Different size units are not compared.
	if below, _ := ParseTier("2 tenants").Weaker(ParseTier("5 nodes")); len(below) != 0 {
		t.Errorf("compared tenants with nodes: %v", below)
	}
}

func TestParseFairness(t *testing.T) {
	f, err := ParseFairness("group=shard; worst_group_p99/aggregate_p99 ≤ 1.5; min_group_throughput >= 10 ops/s; error_rate_by_group == 0; repeat_spread <= 0.2; extra_metric < 3")
	if err != nil {
		t.Fatal(err)
	}
	if f.Group != "shard" || f.WorstP99Ratio.Value != 1.5 || f.WorstP99Ratio.Op != "<=" || f.MinThroughput.Unit != "ops/s" || len(f.Other) != 1 {
		t.Errorf("parsed %+v", f)
	}
	for _, bad := range []string{
		"tenant; repeat_spread <= 1",
		"group=; repeat_spread <= 1",
		"group=tenant; repeat_spread about 1",
		"group=tenant; repeat_spread <= lots",
		"group=tenant; worst_group_p99 / aggregate_p99 <= 2.0",
	} {
		if _, err := ParseFairness(bad); err == nil {
			t.Errorf("ParseFairness(%q) accepted", bad)
		}
	}
}

func TestIDs(t *testing.T) {
	for _, c := range []struct {
		in     string
		prefix byte
		arms   bool
		want   []string
	}{
		{"C1, C3 (claim IDs from §1b)", 'C', false, []string{"C1", "C3"}},
		{"C1–C3, C2", 'C', false, []string{"C1", "C2", "C3"}},
		{"C1..C2 and C10-C11", 'C', false, []string{"C1", "C2", "C10", "C11"}},
		{"C1–C99999", 'C', false, []string{"C1", "C99999"}},
		{"CAS, TC1, C1a, C12", 'C', false, []string{"C12"}},
		{"S4/api (a), S4/admin (b), S1 (c).", 'S', true, []string{"S4/api", "S4/admin", "S1"}},
		{"`S4/export`—", 'S', true, []string{"S4/export"}},
		{"S4/api", 'S', false, []string{"S4"}},
	} {
		if got := ids(c.in, c.prefix, c.arms); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ids(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestHelpers(t *testing.T) {
	for _, c := range []struct {
		faults string
		want   bool
	}{
		{"none", false}, {"None.", false}, {"", false}, {"none — smoke only", false}, {"n/a", false},
		{"`none`", false}, {"No fault injected", false}, {"no faults", false},
		{"None: smoke only", false}, {"`none` (smoke only)", false}, {"n/a;", false},
		{"no-op restart", true}, {"non-leader kill", true},
		{"kill -9 leader", true}, {"nonexistent-node restart", true},
	} {
		if got := (&Scenario{Faults: c.faults}).FaultsPlanned(); got != c.want {
			t.Errorf("FaultsPlanned(%q) = %v", c.faults, got)
		}
	}
	p := mustParse(t, "fx", readFixture(t))
	if p.Scenario("S4/api") != p.Scenario("S4") || p.Scenario("S9") != nil || p.Claim("C12") != nil {
		t.Error("lookups wrong")
	}
	if s, a := p.arm("S4/nope"); s != nil || a != nil {
		t.Error("Arm found a missing arm")
	}
	if !GatedModel(CatOrdering) || GatedModel(CatBoundary) || !GatedSurface(CatFairness) || GatedSurface(CatSafety) {
		t.Error("gate sets wrong")
	}
}

func TestUnknownCategoryHint(t *testing.T) {
	text := strings.Replace(readFixture(t), "tenant B's keys\" | boundary |", "tenant B's keys\" | Tenancy |", 1)
	for _, pr := range Lint(mustParse(t, "x", text)) {
		if pr.Rule == "unknown-category" {
			if !strings.Contains(pr.Message, `did you mean "boundary"`) {
				t.Errorf("message %q lacks the boundary hint", pr.Message)
			}
			return
		}
	}
	t.Error("no unknown-category problem")
}

func TestParseBudgetDisclosure(t *testing.T) {
	for _, c := range []struct {
		text, reason, revisit string
		notProvided           bool
	}{
		{"not provided — no rig exists yet. Revisit when: dm-flakey is available.", "no rig exists yet", "dm-flakey is available", true},
		{"not provided – nightly only. Revisit when: on-demand trigger", "nightly only", "on-demand trigger", true},
		{"Not provided -- v1.2 lacks it. Revisit when: v1.3 ships.", "v1.2 lacks it", "v1.3 ships", true},
		{"not provided - no budget", "no budget", "", true},
		{"not provided", "", "", true},
		{"5 nodes, 2 h", "", "", false},
	} {
		b := parseBudget(c.text, 7)
		if b.NotProvided != c.notProvided || b.Reason != c.reason || b.RevisitWhen != c.revisit || b.Text != c.text || b.Line != 7 {
			t.Errorf("parseBudget(%q) = %+v", c.text, b)
		}
		if b.NotProvided && b.Tier.Parsed() {
			t.Errorf("disclosure %q parsed as a tier", c.text)
		}
	}
}

func TestEnvUsedByAll(t *testing.T) {
	text := strings.Replace(readFixture(t), "| Go toolchain | 1.22 | S1, S2, S5 |", "| Go toolchain | 1.22 | all scenarios |", 1)
	p := mustParse(t, "x", text)
	if got := p.EnvReqs[2].UsedBy; !reflect.DeepEqual(got, []string{"S1", "S2", "S3", "S4", "S5"}) {
		t.Errorf("UsedBy = %v", got)
	}
	if probs := Lint(p); len(probs) != 0 {
		t.Errorf("lint: %v", probs)
	}
}

// TestTableColumnsByHeader: reordered and extra columns are matched by
// header, and a lettered section written a level too deep is still a
// section.
func TestTableColumnsByHeader(t *testing.T) {
	fx := readFixture(t)
	text := strings.Replace(fx, "| ID | Claim | Category | Source | Inferred? |\n|---|---|---|---|---|",
		"| # | Category | ID | Claim | Inferred? | Source |\n|---|---|---|---|---|---|", 1)
	text = strings.Replace(text, `| C1 | "get/put/cas on a single key are linearizable" | safety | docs/consistency.md | no |`,
		`| 1 | safety | C1 | "get/put/cas on a single key are linearizable" | no | docs/consistency.md |`, 1)
	text = strings.Replace(text, "## 7b. Coverage adequacy argument", "### 7b. Coverage adequacy argument", 1)
	p := mustParse(t, "x", text)
	c := p.Claim("C1")
	if c == nil || c.Category != CatSafety || c.Source != "docs/consistency.md" || c.Inferred != "no" || !strings.Contains(c.Text, "linearizable") {
		t.Errorf("reordered claim row = %+v", c)
	}
	if len(p.Adequacy) != 2 || p.Sections["7b"] == 0 {
		t.Errorf("deeper §7b not a section: %d rows", len(p.Adequacy))
	}
	if len(p.Scenarios) != 5 || p.Scenario("S5").S == nil || p.Scenario("S5").S.Fairness == nil {
		t.Error("scenarios damaged by the deeper §7b")
	}
}

func TestTierMetBy(t *testing.T) {
	hard := ParseTier("3 nodes, 10 min, 4 faults, 3 seeds")
	for _, c := range []struct {
		run   Tier
		short []string
	}{
		{ParseTier("3 nodes, 10 min, 4 faults, 3 seeds"), nil},
		{ParseTier("5 nodes, 1 h, 9 faults, 4 seeds"), nil},
		{ParseTier("3 nodes, 9 min, 4 faults, 3 seeds"), []string{"duration"}},
		{ParseTier("3 nodes, 10 min, 4 faults"), []string{"seeds"}},
		{ParseTier("2 nodes, 10 min, 1 fault, 3 seeds"), []string{"nodes", "faults"}},
		{Tier{}, []string{"nodes", "faults", "seeds", "duration"}},
	} {
		if got := hard.metBy(c.run); !reflect.DeepEqual(got, c.short) {
			t.Errorf("metBy(%+v) = %v, want %v", c.run, got, c.short)
		}
	}
	if got := (Tier{}).metBy(Tier{}); got != nil {
		t.Errorf("empty tier not met: %v", got)
	}
}
