package plan

import (
	"strings"
	"testing"
)

// edit rewrites the fixture; it fails the test when its anchor is absent so
// a drifting fixture cannot make a case pass vacuously.
type edit func(t *testing.T, s string) string

// rep replaces the first occurrence of old after the first occurrence of
// after ("" = from the start).
func rep(after, old, repl string) edit {
	return func(t *testing.T, s string) string {
		t.Helper()
		base := 0
		if after != "" {
			base = strings.Index(s, after)
			if base < 0 {
				t.Fatalf("anchor %q not in fixture", after)
			}
		}
		i := strings.Index(s[base:], old)
		if i < 0 {
			t.Fatalf("%q not in fixture after %q", old, after)
		}
		i += base
		return s[:i] + repl + s[i+len(old):]
	}
}

// cut removes the text from the first `from` up to (not including) the
// next `to`.
func cut(from, to string) edit {
	return func(t *testing.T, s string) string {
		t.Helper()
		i := strings.Index(s, from)
		if i < 0 {
			t.Fatalf("%q not in fixture", from)
		}
		j := strings.Index(s[i:], to)
		if j < 0 {
			t.Fatalf("%q not after %q", to, from)
		}
		return s[:i] + s[i+j:]
	}
}

// lineOf returns the 1-based line of the first `at` after `after`.
func lineOf(t *testing.T, s, after, at string) int {
	t.Helper()
	base := 0
	if after != "" {
		base = strings.Index(s, after)
		if base < 0 {
			t.Fatalf("anchor %q not in plan", after)
		}
	}
	i := strings.Index(s[base:], at)
	if i < 0 {
		t.Fatalf("%q not in plan after %q", at, after)
	}
	return 1 + strings.Count(s[:base+i], "\n")
}

const (
	s1M     = "#### §7.M — Model / history / checker discipline\n- **Model under test:** register"
	s2Head  = "### Scenario S2"
	s3Head  = "### Scenario S3"
	s4Head  = "### Scenario S4"
	s5Head  = "### Scenario S5"
	sentinl = "§7.M: not applicable (no gated claim category falsified)"
	fullM   = "#### §7.M — Model / history / checker discipline\n- **Model under test:** register\n- **Operation history:** default schema, in-process + server-side\n- **Checker:** linearizability (Porcupine)\n- **Nemesis + landing evidence:** kill-9; evidence = restart timestamp in node log\n- **Ambiguous outcomes:** default\n- **Reduction plan:** fixed seed, 1 key"
)

// TestLintRules: one bad plan per rule, asserting the rule, its severity
// and the line it points at.
func TestLintRules(t *testing.T) {
	orig := readFixture(t)
	cases := []struct {
		name      string
		edits     []edit
		rule, sev string
		after, at string // where the problem must point
	}{
		// §13 hard errors and the list.
		{"no oracle", []edit{rep(s3Head, "- **Oracle:** time from fault start to first successful put ≤ 3s in every window\n", "")},
			"oracle-missing", SevError, "", s3Head},
		{"logs look fine", []edit{rep(s3Head, "time from fault start to first successful put ≤ 3s in every window", "logs look fine")},
			"oracle-weak", SevError, s3Head, "- **Oracle:**"},
		{"no errors in logs", []edit{rep("", "Porcupine linearizability per key over the full history", "no errors in logs")},
			"oracle-weak", SevError, "", "- **Oracle:** no errors"},
		{"health check ok", []edit{rep(s4Head, "every cross-tenant read/list/export is denied and no `acme` key or count appears in any `acme-corp` artefact", "health check ok on every node")},
			"oracle-weak", SevError, s4Head, "- **Oracle:**"},
		{"no exit criteria", []edit{rep(s2Head, "- **Exit criteria:** PASS if every acked put is present once; FAIL otherwise\n", "")},
			"exit-criteria-missing", SevError, "", s2Head},
		{"no hardening budget", []edit{rep(s3Head, "- **Hardening budget:** 3 nodes, 5 min, 5 faults, 3 seeds\n", "")},
			"budget-missing", SevError, "", s3Head},
		{"smoke TBD", []edit{rep(s3Head, "- **Smoke budget:** 3 nodes, 60 s, 1 fault, 1 seed", "- **Smoke budget:** TBD")},
			"budget-missing", SevError, s3Head, "- **Smoke budget:**"},
		{"release TBD", []edit{rep("", "- **Release budget:** 5 nodes, 2 h, 40 faults, 10 seeds", "- **Release budget:** TBD")},
			"release-empty", SevError, "", "- **Release budget:** TBD"},
		{"release empty", []edit{rep(s3Head, "- **Release budget:** 3 nodes, 1 h, 60 faults, 5 seeds", "- **Release budget:**")},
			"release-empty", SevError, s3Head, "- **Release budget:**"},
		{"release disclosure without revisit", []edit{rep(s4Head, " Revisit when: the exporter gains an on-demand trigger.", "")},
			"release-disclosure", SevError, s4Head, "- **Release budget:**"},
		{"driver command without backticks", []edit{rep(s3Head, "- **Workload:** 2 clients", "- **Driver command:** workload -clients 2\n- **Workload:** 2 clients")},
			"wiring-no-command", SevError, s3Head, "- **Driver command:**"},
		{"header leader query without backticks", []edit{rep("", "**Status:** draft", "**Status:** draft\n**Leader query:** ask every member")},
			"wiring-no-command", SevError, "", "**Leader query:**"},
		{"quiesce runs on this machine", []edit{rep(s3Head, "- **Workload:** 2 clients", "- **Quiesce:** `curl localhost:2379/health` within 30s\n- **Workload:** 2 clients")},
			"wiring-local", SevWarning, s3Head, "- **Quiesce:**"},
		{"driver command is go run", []edit{rep(s3Head, "- **Workload:** 2 clients", "- **Driver command:** `go run ./workload -clients 2`\n- **Workload:** 2 clients")},
			"wiring-local", SevWarning, s3Head, "- **Driver command:**"},
		{"serious without §7.M", []edit{cut(s1M, s2Head)},
			"model-missing", SevError, "", "### Scenario S1"},
		{"§7.M field empty", []edit{rep(s2Head, "- **Reduction plan:** bisect kill schedule with fixed seed; classify blame", "- **Reduction plan:**")},
			"model-field-empty", SevError, s2Head, "- **Reduction plan:**"},
		{"§7.M field absent", []edit{rep("", "- **Checker:** linearizability (Porcupine) per key\n", "")},
			"model-field-empty", SevError, "", "#### §7.M —"},
		{"sentinel on serious scenario", []edit{cut(s1M, s2Head), rep("", s2Head, sentinl+"\n\n"+s2Head)},
			"model-sentinel-serious", SevError, "", sentinl},
		{"model invented for ungated scenario", []edit{rep(s3Head, sentinl, fullM)},
			"model-not-gated", SevError, s3Head, "#### §7.M"},
		{"boundary without §7.M.S", []edit{cut("#### §7.M.S — Surface decomposition\n- **Surfaces:** public API, admin API", s5Head)},
			"surface-missing", SevError, "", s4Head},
		{"§7.M.S field empty", []edit{rep(s4Head, "- **Observability paths:** per-tenant metrics labels, admin audit log", "- **Observability paths:**")},
			"surface-field-empty", SevError, s4Head, "- **Observability paths:**"},
		{"fairness without formula", []edit{rep(s5Head, "- **Fairness formula:** group=tenant; worst_group_p99 / aggregate_p99 <= 2.0; min_group_throughput >= 190 ops/s; error_rate_by_group == 0; repeat_spread <= 0.15\n", "")},
			"fairness-formula", SevError, s5Head, "#### §7.M.S"},
		{"malformed fairness formula", []edit{rep(s5Head, "group=tenant; worst_group_p99", "tenant; worst_group_p99")},
			"fairness-formula", SevError, s5Head, "- **Fairness formula:**"},
		{"injector reported success", []edit{rep("", "leader-isolation via iptables; evidence = DROP counter on the isolated node rises from 0 AND raft_leader_changes_total increments within 5s", "leader-isolation; injector reported success")},
			"nemesis-evidence", SevError, "", "- **Nemesis + landing evidence:** leader-isolation;"},
		{"nemesis without signal", []edit{rep(s2Head, "hard-kill; evidence = exit/restart timestamps in node logs and raft term change after the leader kill", "kill-9 a follower")},
			"nemesis-evidence", SevError, s2Head, "- **Nemesis + landing evidence:**"},
		{"scenario names unknown claim", []edit{rep(s3Head, "- **Falsifies if it FAILs:** C3", "- **Falsifies if it FAILs:** C3, C42")},
			"unknown-claim", SevError, s3Head, "- **Falsifies if it FAILs:**"},
		{"scenario falsifies a missing claim", []edit{rep(s3Head, "- **Falsifies if it FAILs:** C3", "- **Falsifies if it FAILs:** C3, M1")},
			"unknown-claim", SevError, s3Head, "- **Falsifies if it FAILs:**"},
		{"hypothesis names unknown claim", []edit{rep("H4.", "Could falsify: C7", "Could falsify: C7, C99")},
			"unknown-claim", SevError, "", "H4."},
		{"untethered hypothesis", []edit{rep("H3.", "   - Could falsify: C3\n", "")},
			"untethered-hypothesis", SevError, "", "H3."},
		{"closes unknown hypothesis", []edit{rep(s3Head, "- **Closes:** H3", "- **Closes:** H3, H9")},
			"dangling-id", SevError, s3Head, "- **Closes:**"},
		{"§6b names unknown scenario", []edit{rep("", "| tc / netem | any | S3, S5 |", "| tc / netem | any | S3, S9 |")},
			"dangling-id", SevError, "", "| tc / netem"},
		{"§7b names unknown arm", []edit{rep("## 7b.", "S4/export (c)", "S4/web (c)")},
			"dangling-id", SevError, "## 7b.", "| C7 |"},
		{"§7.M names undeclared arm", []edit{rep(s4Head, sentinl, sentinl+"\n\n"+strings.Replace(fullM, "Model / history / checker discipline", "S4/nope", 1))},
			"dangling-id", SevError, s4Head, "#### §7.M — S4/nope"},
		{"serious arms need own §7.M", []edit{rep(s4Head, "- **Falsifies if it FAILs:** C7", "- **Falsifies if it FAILs:** C7, C1"), rep(s4Head, sentinl, fullM)},
			"model-missing", SevError, s4Head, "  - `S4/admin`"},
		{"duplicate claim id", []edit{rep("", "| C2 | \"an acknowledged put", "| C1 | \"an acknowledged put")},
			"duplicate-id", SevError, "", "| C1 | \"an acknowledged put"},
		{"duplicate scenario id", []edit{rep("", "### Scenario S3:", "### Scenario S2:")},
			"duplicate-id", SevError, "", "### Scenario S2: election"},
		{"unknown category", []edit{rep("", "tenant B's keys\" | boundary |", "tenant B's keys\" | tenancy |")},
			"unknown-category", SevError, "", "| C7 |"},
		{"missing header", []edit{rep("", "**Status:** draft\n", "")},
			"header-missing", SevError, "", "# Test Plan:"},
		{"bad plan mode", []edit{rep("", "**Plan mode:** project-wide", "**Plan mode:** whole-system")},
			"header-value", SevError, "", "**Plan mode:**"},
		{"§1c omitted", []edit{cut("## 1c. Missing claims discovered", "## 2. SUT model")},
			"section-missing", SevError, "", "## 2. SUT model"},
		{"§3 omitted in project-wide plan", []edit{cut("## 3. Existing test inventory", "## 4.")},
			"section-missing", SevError, "", "## 4."},
		{"§9 omitted", []edit{cut("## 9. Open questions", "- Should request-id")},
			"section-missing", SevError, "", "## 8."},
		{"nemesis id only", []edit{rep("", "leader-isolation via iptables; evidence = DROP counter on the isolated node rises from 0 AND raft_leader_changes_total increments within 5s", "leader-isolation via iptables")},
			"nemesis-evidence", SevError, "", "- **Nemesis + landing evidence:** leader-isolation via"},
		{"required field missing", []edit{rep(s3Head, "- **Workload:** 2 clients, 100% put at 50 ops/s, 5 min\n", "")},
			"field-missing", SevError, "", s3Head},
		{"scenario heading without id", []edit{rep("", "### Scenario S3: election", "### Scenario election")},
			"scenario-id", SevError, "", "### Scenario election"},
		{"bad claim id", []edit{rep("", "| C11 |", "| X11 |")},
			"claim-id", SevError, "", "| X11 |"},
		{"empty §7d", []edit{cut("If S1–S5 pass", "## 8.")},
			"confidence-empty", SevError, "", "## 7d."},

		// Warnings.
		{"hypothesis without scenario", []edit{rep(s3Head, "- **Closes:** H3", "- **Closes:** H1")},
			"hypothesis-unclosed", SevWarning, "", "H3."},
		{"claim nowhere", []edit{rep("", "| C11 |", "| C12 | \"compaction finishes within 1h\" | liveness | docs/ops.md | no |\n| C11 |")},
			"claim-unargued", SevWarning, "", "| C12 |"},
		{"§7c empty without sentence", []edit{cut("| Uncertainty |", "## 7d.")},
			"residual-empty", SevWarning, "", "## 7c."},
		{"§1c empty without sentence", []edit{cut("| ID | Behavior the code relies on |", "## 2.")},
			"missing-claims-empty", SevWarning, "", "## 1c."},
		{"one technique", []edit{cut("### chaos-and-fault-injection", "## 6b.")},
			"technique-count", SevWarning, "", "## 6. Technique"},
		{"absolute phrasing", []edit{rep("## 7d.", "tested rates.", "tested rates. Stale reads cannot happen.")},
			"absolute-phrasing", SevWarning, "", "Stale reads cannot"},
		{"§6b row used by nobody", []edit{rep("", "| MinIO / S3-compatible | any | S4 |", "| MinIO / S3-compatible | any |  |")},
			"envreq-unused", SevWarning, "", "| MinIO"},
		{"hardening weaker than smoke", []edit{rep(s3Head, "- **Hardening budget:** 3 nodes, 5 min, 5 faults, 3 seeds", "- **Hardening budget:** 3 nodes, 30 s, 5 faults, 3 seeds")},
			"tier-not-stronger", SevWarning, s3Head, "- **Hardening budget:**"},
		{"hardening equal to smoke", []edit{rep(s3Head, "- **Hardening budget:** 3 nodes, 5 min, 5 faults, 3 seeds", "- **Hardening budget:** 3 nodes, 60 s, 1 fault, 1 seed")},
			"tier-not-stronger", SevWarning, s3Head, "- **Hardening budget:**"},
		{"unparseable tier", []edit{rep(s3Head, "- **Smoke budget:** 3 nodes, 60 s, 1 fault, 1 seed", "- **Smoke budget:** a small quick run")},
			"tier-unparsed", SevWarning, s3Head, "- **Smoke budget:**"},
		{"name shares nothing with claims", []edit{rep("", "### Scenario S3: election_completes_within_3s_under_one_way_loss", "### Scenario S3: three_node_chaos")},
			"scenario-name", SevWarning, "", "### Scenario S3"},
		{"skeleton without marker", []edit{rep("", "// AUTO-GENERATED from test plan", "// generated from test plan")},
			"skeleton-marker", SevWarning, "", "  ```go"},
		{"skeleton with two TODOs", []edit{rep("// 3. Oracle", "// TODO", "// (later)")},
			"skeleton-todo", SevWarning, "", "  ```go"},
		{"skeleton language mismatch", []edit{rep("", "  ```go", "  ```python")},
			"skeleton-lang", SevWarning, "", "  ```python"},
		{"technique not selected in §6", []edit{rep(s3Head, "- **Technique:** chaos-and-fault-injection", "- **Technique:** formal-methods-tla")},
			"technique-unselected", SevWarning, s3Head, "- **Technique:**"},
		{"ungated scenario without sentinel", []edit{rep(s3Head, sentinl+"\n", "")},
			"sentinel-missing", SevWarning, "", s3Head},
		{"coverage verdict out of enum", []edit{rep("## 5.", "| partial | shallow test |", "| mostly | shallow test |")},
			"coverage-value", SevWarning, "## 5.", "| C3 | H3 |"},
		{"open question without owner", []edit{rep("", "install? — storage team, 2026-06-30", "install?")},
			"open-question-form", SevWarning, "", "- Should request-id"},
		{"§0 too long", []edit{rep("", "- **kvnode** (x3)", strings.Repeat("- filler line\n", 30)+"- **kvnode** (x3)")},
			"summary-long", SevWarning, "", "## 0."},
		{"arm without oracle", []edit{rep(s4Head, "  - `S4/admin` — surface: admin API; oracle: snapshot of tenant A contains no tenant B keys", "  - `S4/admin` — surface: admin API")},
			"arm-oracle-missing", SevWarning, s4Head, "  - `S4/admin`"},
		{"arm with weak oracle", []edit{rep(s4Head, "oracle: snapshot of tenant A contains no tenant B keys", "oracle: admin logs look fine")},
			"oracle-weak", SevError, s4Head, "  - `S4/admin`"},
		{"negative controls without observability", []edit{rep(s4Head, "- **Negative controls:** `acme-corp` gets 403 AND gateway_denied_total is tagged only with `acme-corp` AND no `acme` key names in logs", "- **Negative controls:** `acme-corp` gets 403")},
			"negative-controls", SevWarning, s4Head, "- **Negative controls:**"},
		{"async path skipped", []edit{rep(s4Head, "- **Delayed / async paths:** nightly exporter (runs without request auth context)", "- **Delayed / async paths:** none")},
			"negative-controls", SevWarning, s4Head, "- **Delayed / async paths:**"},
		{"field given twice", []edit{rep(s3Head, "- **Observability required:**", "- **Oracle:** again\n- **Observability required:**")},
			"duplicate-field", SevWarning, s3Head, "- **Oracle:** again"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := orig
			for _, e := range c.edits {
				text = e(t, text)
			}
			p, err := ParseBytes("bad.md", []byte(text))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			want := lineOf(t, text, c.after, c.at)
			probs := Lint(p)
			for _, pr := range probs {
				if pr.Rule == c.rule && pr.Line == want && pr.Severity == c.sev && pr.File == "bad.md" {
					return
				}
			}
			t.Errorf("want %s %q at line %d; got:", c.sev, c.rule, want)
			for _, pr := range probs {
				t.Logf("  %s [%s %s]", pr, pr.Severity, pr.Rule)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	for _, c := range []struct {
		p    Problem
		want string
	}{
		{Problem{File: "a.md", Line: 3, Severity: SevError, Message: "boom"}, "a.md:3: boom"},
		{Problem{File: "a.md", Line: 9, Severity: SevWarning, Message: "hmm"}, "a.md:9: warning: hmm"},
		{Problem{Line: 1, Severity: SevError, Message: "x"}, "<plan>:1: x"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestWeakOracle(t *testing.T) {
	for _, c := range []struct {
		oracle string
		weak   bool
	}{
		{"logs look fine", true},
		{"No errors in logs", true},
		{"health check ok", true},
		{"the cluster looks healthy", true},
		{"Porcupine linearizability per key over the full history", false},
		{"p99 put latency <= 20ms and no errors in logs", false},
		{"every acked put is present exactly once in the final state", false},
	} {
		if got := weakOracle(c.oracle); got != c.weak {
			t.Errorf("weakOracle(%q) = %v, want %v", c.oracle, got, c.weak)
		}
	}
}

// TestGateSetsByCategory: §7.M is required exactly for the six gated
// categories (docs/plan-format.md §4.3) and §7.M.S exactly for boundary and fairness;
// every other category needs neither. S1 falsifies only C1, so changing
// C1's category and removing S1's blocks isolates the gate.
func TestGateSetsByCategory(t *testing.T) {
	orig := readFixture(t)
	const c1 = `| C1 | "get/put/cas on a single key are linearizable" | safety |`
	for _, tc := range []struct {
		cat          string
		model, surfc bool
	}{
		{"safety", true, false}, {"durability", true, false}, {"idempotency", true, false},
		{"isolation", true, false}, {"ordering", true, false}, {"membership", true, false},
		{"boundary", false, true}, {"fairness", false, true},
		{"liveness", false, false}, {"performance-SLO", false, false}, {"operational", false, false},
	} {
		t.Run(tc.cat, func(t *testing.T) {
			text := rep("", c1, strings.Replace(c1, "| safety |", "| "+tc.cat+" |", 1))(t, orig)
			text = cut(s1M, s2Head)(t, text)
			p, err := ParseBytes("g.md", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, pr := range Lint(p) {
				if pr.Rule == "unknown-category" {
					t.Fatalf("%q is not a category: %s", tc.cat, pr)
				}
				if pr.Line == lineOf(t, text, "", "### Scenario S1") && pr.Severity == SevError {
					got[pr.Rule] = true
				}
			}
			if got["model-missing"] != tc.model || got["surface-missing"] != tc.surfc {
				t.Errorf("C1 %s without §7.M/§7.M.S: model-missing=%v surface-missing=%v, want %v %v",
					tc.cat, got["model-missing"], got["surface-missing"], tc.model, tc.surfc)
			}
		})
	}
}
