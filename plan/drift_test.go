package plan

import (
	"reflect"
	"strings"
	"testing"
)

// readmePlan is a small plan written the way the design skill's README
// example writes one; scenario is substituted for {{S1}}.
const readmePlan = `# Test Plan: wal-append-guarantees

**Date:** 2026-03-01
**Plan mode:** change-scoped
**SUT:** wal
**Change under test:** PR #7
**Plan author:** someone
**Status:** draft

## 0. Architectural summary
one log, three replicas

## 1. Scope
the append path

## 1b. Claims under test

| ID | Claim | Category | Source | Inferred? |
|---|---|---|---|---|
| C1 | "every acknowledged append is durable and linearisable" | durability | docs | no |
| C5 | "an append is acknowledged within 2s" | liveness | docs | no |

## 1c. Missing claims discovered
Docs and code appear aligned.

## 2. SUT model
- **Persistence:** fsync before ack

## 4. Failure-mode hypotheses

H1. **Lost append** — an append is acked before fsync.
   - Could falsify: C1
   - Suspected because: ack races fsync
   - Subsystem: storage

## 6. Technique selection

### jepsen-and-elle
- **Hypotheses it addresses:** H1
- **What it would catch that other techniques miss:** lost acks
- **Reference:** ` + "`references/jepsen-and-elle.md`" + `
- **Cost / wall-clock estimate:** 1 day

### chaos-and-fault-injection
- **Hypotheses it addresses:** H1
- **What it would catch that other techniques miss:** real partitions
- **Reference:** ` + "`references/chaos-and-fault-injection.md`" + `
- **Cost / wall-clock estimate:** root on 3 VMs

## 6b. Environment requirements

| Requirement | Version floor | Used by scenarios | Install hint |
|---|---|---|---|
| iptables | any | S1 | apt |

## 7. Scenarios

### Scenario S1: acked_append_durable_under_leader_partition
{{S1}}

## 7b. Coverage adequacy argument

| Claim | Threat model (how it could fail) | Scenarios that exercise the threats | Why these are sufficient |
|---|---|---|---|
| C1 | lost ack | S1 | forces the path |

## 7c. Residual uncertainty
None: every claim is exercised.

## 7d. Confidence statement
If S1 passes at the hardening tier we have not observed a lost append under a leader partition. Nothing here speaks to upgrades. The smoke tier proves only the harness. The release tier is a longer repeat.

## 8. What this plan does NOT cover
- upgrades

## 9. Open questions / followups
- none yet — owner, 2026-04-01
`

// readmeS1 is S1 with the canonical labels; the cases below rewrite it.
const readmeS1 = `- **Falsifies if it FAILs:** C1, C5
- **Closes:** H1
- **Technique:** jepsen-and-elle
- **Workload:** 3 clients, 100% append at 100 ops/s
- **Faults:** asymmetric partition isolating current leader at T+30s for 20s
- **Oracle:** no-lost-ack over the full history; p99 ack latency <= 2s
- **Observability required:** op history, raft metrics
- **Exit criteria:** PASS if no acked append is lost; FAIL otherwise
- **Smoke budget:** 3 nodes, 60 s, 1 fault, 1 seed
- **Hardening budget:** 3 nodes, 10 min, 10 faults, 3 seeds
- **Release budget:** 3 nodes, 1 h, 60 faults, 5 seeds

#### §7.M — Model / history / checker discipline
- **Model under test:** log
- **Operation history:** default schema, in-process + server-side audit
- **Checker:** no-lost-ack
- **Nemesis + landing evidence:** partition-asym; evidence = log marker "leader-lost; starting election" AND raft_term_total rises
- **Ambiguous outcomes:** default
- **Reduction plan:** fixed seed, 1 client; classify blame`

func readme(t *testing.T, edits ...[2]string) *Plan {
	t.Helper()
	s1 := readmeS1
	for _, e := range edits {
		if !strings.Contains(s1, e[0]) {
			t.Fatalf("%q not in the S1 fixture", e[0])
		}
		s1 = strings.Replace(s1, e[0], e[1], 1)
	}
	return mustParse(t, "readme.md", strings.Replace(readmePlan, "{{S1}}", s1, 1))
}

func lintRules(p *Plan) []string {
	var out []string
	for _, pr := range Lint(p) {
		out = append(out, pr.Rule+"@"+itoa(pr.Line)+": "+pr.Message)
	}
	return out
}

// TestReadmeStylePlanBaseline: the canonical form of the small plan lints
// clean, so the drift cases below fail only for what they change.
func TestReadmeStylePlanBaseline(t *testing.T) {
	p := readme(t)
	if r := lintRules(p); len(r) != 0 {
		t.Fatalf("baseline plan lints with %q", r)
	}
}

// TestFieldLabelDrift: labels drift the way headings do (prefix,
// abbreviation, case, punctuation) and are still read; unrelated labels
// are not.
func TestFieldLabelDrift(t *testing.T) {
	const nem = "- **Nemesis + landing evidence:**"
	for _, c := range []struct {
		name, old, new string
		field          string // canonical label expected to hold the value
		ok             bool
	}{
		{"README short form", nem, "- **Nemesis + landing:**", FieldNemesis, true},
		{"upper case", nem, "- **NEMESIS + LANDING EVIDENCE:**", FieldNemesis, true},
		{"and instead of plus", nem, "- **Nemesis and landing evidence:**", FieldNemesis, true},
		{"ampersand, abbreviated", nem, "- **Nemesis & landing evid.:**", FieldNemesis, true},
		{"slash", nem, "- **Nemesis / landing evidence**:", FieldNemesis, true},
		{"plain label", nem, "- Nemesis+landing:", FieldNemesis, true},
		{"exit abbreviated", "- **Exit criteria:**", "- **Exit crit.:**", FieldExit, true},
		{"observability abbreviated", "- **Observability required:**", "- **Obs. required:**", FieldObservability, true},
		{"reduction singular", "- **Reduction plan:**", "- **Reduction:**", FieldReduction, true},
		{"unrelated label", nem, "- **Notes:**", FieldNemesis, false},
		{"extra word", nem, "- **Nemesis owner:**", FieldNemesis, false},
		{"too short to abbreviate", "- **Exit criteria:**", "- **Ex:**", FieldExit, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := readme(t, [2]string{c.old, c.new})
			s := p.Scenario("S1")
			_, inScenario := s.Fields[c.field]
			inModel := false
			if s.M != nil {
				_, inModel = s.M.Fields[c.field]
			}
			if got := inScenario || inModel; got != c.ok {
				t.Fatalf("label %q read as %s: %v, want %v (lint %q)", c.new, c.field, got, c.ok, lintRules(p))
			}
			if r := lintRules(p); c.ok && len(r) != 0 {
				t.Errorf("drifted label %q still lints: %q", c.new, r)
			} else if !c.ok && len(r) == 0 {
				t.Errorf("unrelated label %q filled %s silently", c.new, c.field)
			}
		})
	}
}

// TestWrappedIDLists: an id list that wraps over several lines keeps every
// id, glosses included, whether the continuation is indented or not.
func TestWrappedIDLists(t *testing.T) {
	const f = "- **Falsifies if it FAILs:** C1, C5"
	for _, c := range []struct{ name, new string }{
		{"indented", "- **Falsifies if it FAILs:** C1 (every acknowledged append is durable\n  and linearisable), C5 (an append is acknowledged within 2s)"},
		{"lazy", "- **Falsifies if it FAILs:** C1 (every acknowledged append is durable\nand linearisable), C5 (an append is acknowledged within 2s)"},
		{"three lines", "- **Falsifies if it FAILs:** C1 (every acknowledged\n  append is durable and\n  linearisable), C5"},
		{"one id per line", "- **Falsifies if it FAILs:**\n  C1,\n  C5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := readme(t, [2]string{f, c.new})
			if got := p.Scenario("S1").Falsifies; !reflect.DeepEqual(got, []string{"C1", "C5"}) {
				t.Errorf("Falsifies = %q, want [C1 C5]", got)
			}
			if r := lintRules(p); len(r) != 0 {
				t.Errorf("lint %q", r)
			}
		})
	}
	// Closes wraps the same way; a blank line ends the list.
	p := readme(t, [2]string{"- **Closes:** H1", "- **Closes:** H1 (lost append,\n  see §4), H2"})
	if got := p.Scenario("S1").Closes; !reflect.DeepEqual(got, []string{"H1", "H2"}) {
		t.Errorf("Closes = %q, want [H1 H2]", got)
	}
	p = readme(t, [2]string{f, f + "\n\nC9 is mentioned in later prose"})
	if got := p.Scenario("S1").Falsifies; !reflect.DeepEqual(got, []string{"C1", "C5"}) {
		t.Errorf("after a blank line: Falsifies = %q, want [C1 C5]", got)
	}
	// The hypothesis list wraps too.
	text := strings.Replace(strings.Replace(readmePlan, "{{S1}}", readmeS1, 1),
		"   - Could falsify: C1\n", "   - Could falsify: C1 (the durable half\n     of the claim), C5\n", 1)
	if h := mustParse(t, "h.md", text).hypothesis("H1"); h == nil || !reflect.DeepEqual(h.CouldFalsify, []string{"C1", "C5"}) {
		t.Errorf("H1 = %+v, want CouldFalsify [C1 C5]", h)
	}
}

func TestDriftLabel(t *testing.T) {
	for _, c := range []struct {
		label string
		canon []string
		want  string
	}{
		{"nemesis+landing", ModelFields(), FieldNemesis},
		{"skel", scenarioFields, FieldSkeleton}, // fewest words left out wins
		{"skel lang", scenarioFields, FieldSkelLang},
		{"oracles", scenarioFields, FieldOracle},
		{"oracle type", scenarioFields, ""},
		{"target hosts", scenarioFields, ""},
		{"model checker", ModelFields(), ""},
		{"", scenarioFields, ""},
		{"+ / &", scenarioFields, ""},
	} {
		if got := driftLabel(c.label, c.canon); got != c.want {
			t.Errorf("driftLabel(%q) = %q, want %q", c.label, got, c.want)
		}
	}
}
