package plan

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (run go test ./plan -run %s -update after checking):\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
}

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
	golden(t, "bad-plan.lint.golden", []byte(b.String()))
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
	golden(t, "quorumkv-core-guarantees.json.golden", append(b, '\n'))
}
