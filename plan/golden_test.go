package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/testsupport/golden"
)

// TestGoldenLintOutput pins the full lint output of a plan that breaks many
// rules at once: messages, lines, severities and order.
func TestGoldenLintOutput(t *testing.T) {
	p, err := Parse("testdata/bad-plan.md")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, pr := range Lint(p) {
		b.WriteString(pr.String() + "  [" + pr.Rule + "]\n")
	}
	golden.Check(t, "testdata/bad-plan.lint.golden", []byte(b.String()))
}

// TestGoldenFixtureJSON pins the complete parse of the §14 fixture, so any
// change to what the generator and analyzer receive shows up in review.
func TestGoldenFixtureJSON(t *testing.T) {
	p, err := Parse(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/quorumkv-core-guarantees.json.golden", append(b, '\n'))
}
