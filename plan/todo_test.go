package plan

import (
	"strings"
	"testing"
)

// TestLintTODO: every TODO(...) marker outside code is one todo-left error
// at its line, and the line's other findings are folded into it.
func TestLintTODO(t *testing.T) {
	orig := readFixture(t)
	const oracle = "- **Oracle:** Porcupine linearizability per key over the full history"
	cases := []struct {
		name   string
		edits  []edit
		want   int    // todo-left problems
		at     string // line they point at ("" = none expected)
		silent string // a rule that must not fire on that line
		named  string // the marker as the message names it
	}{
		{"oracle TODO", []edit{rep("", oracle, "- **Oracle:** TODO(oracle: a machine-checkable property)")}, 1, "- **Oracle:** TODO", "oracle-weak", "TODO(oracle) "},
		{"budget TODO", []edit{rep("", "- **Smoke budget:** 3 nodes, 60 s", "- **Smoke budget:** TODO(smoke-budget) 3 nodes, 60 s")}, 1, "- **Smoke budget:** TODO", "budget-missing", ""},
		{"two on one line", []edit{rep("", oracle, "- **Oracle:** TODO(a) and TODO(b)")}, 2, "- **Oracle:** TODO(a)", "oracle-weak", ""},
		{"unclosed marker", []edit{rep("", oracle, oracle+" TODO(left open")}, 1, oracle + " TODO(", "", "TODO(left open "},
		{"inline code is prose", []edit{rep("", oracle, oracle+" (`TODO(x)` is not a marker)")}, 0, "", "", ""},
		{"fenced code is exempt", []edit{rep("", "      // TODO", "      // TODO(workload)")}, 0, "", "", ""},
		{"no marker", nil, 0, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := orig
			for _, e := range tc.edits {
				src = e(t, src)
			}
			p, err := ParseBytes("plan.md", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			line := 0
			if tc.at != "" {
				line = lineOf(t, src, "", tc.at)
			}
			n := 0
			for _, pr := range Lint(p) {
				if pr.Rule == RuleTODO {
					n++
					if pr.Line != line || pr.Severity != SevError || !strings.Contains(pr.Message, "TODO(") || !strings.Contains(pr.Message, tc.named) {
						t.Errorf("todo problem %v, want an error at line %d", pr, line)
					}
				}
				if tc.silent != "" && pr.Rule == tc.silent && pr.Line == line {
					t.Errorf("%s fired on the TODO line: %v", tc.silent, pr)
				}
			}
			if n != tc.want {
				t.Errorf("%d todo-left problems, want %d", n, tc.want)
			}
		})
	}
}
