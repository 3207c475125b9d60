package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

// checkParse is the property every input must satisfy: no panic, a
// *fileline.Error when parsing fails, a plan always returned, every problem
// pointing inside the file, and time roughly linear in the input.
func checkParse(t *testing.T, data []byte, budget time.Duration) {
	t.Helper()
	start := time.Now()
	p, err := ParseBytes("fuzz.md", data)
	if err != nil {
		var pe *fileline.Error
		if !errors.As(err, &pe) {
			t.Fatalf("error is %T, want *fileline.Error: %v", err, err)
		}
	}
	if p == nil {
		t.Fatal("nil plan")
	}
	probs := Lint(p)
	if d := time.Since(start); d > budget {
		t.Fatalf("parse+lint of %d bytes took %v (budget %v)", len(data), d, budget)
	}
	if err != nil && len(data) > MaxSize {
		return
	}
	n := len(splitLines(string(data)))
	if n == 0 {
		n = 1
	}
	for _, pr := range probs {
		if pr.Line < 1 || pr.Line > n {
			t.Fatalf("problem outside the file (%d lines): %s [%s]", n, pr, pr.Rule)
		}
		if pr.Severity != SevError && pr.Severity != SevWarning || pr.Rule == "" || pr.Message == "" {
			t.Fatalf("malformed problem %+v", pr)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add([]byte(strings.ReplaceAll(string(b), "\n", "\r\n")))
	}
	f.Add([]byte(altForms))
	f.Add([]byte("# Test Plan: x\n## 7. Scenarios\n### Scenario S1: a\n- **Oracle:** \n```go\n"))
	f.Add([]byte("## 4.\nH1. **"))
	// README-style drift: short §7.M label, a wrapped claim list, a quoted
	// landing marker with ";" inside.
	f.Add([]byte(strings.Replace(readmePlan, "{{S1}}", strings.NewReplacer(
		"- **Nemesis + landing evidence:**", "- **Nemesis + landing:**",
		"- **Falsifies if it FAILs:** C1, C5", "- **Falsifies if it FAILs:** C1 (every acknowledged append is durable\n  and linearisable), C5 (…)",
	).Replace(readmeS1), 1)))
	f.Add([]byte("## 7. S\n### Scenario S1: a\n- **Falsifies:** C1 (\nC2\n- **Nemesis +:** x\n- **+ landing:**\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data, 5*time.Second)
	})
}

// TestPathologicalInputsFast feeds inputs built to trigger quadratic or
// backtracking behaviour; each must parse and lint quickly.
func TestPathologicalInputsFast(t *testing.T) {
	head := "# Test Plan: p\n**Plan mode:** project-wide\n"
	many := func(s string, n int) string { return strings.Repeat(s, n) }
	var claims strings.Builder
	claims.WriteString(head + "## 1b. Claims\n| ID | Claim | Category | Source | Inferred? |\n|---|---|---|---|---|\n")
	for i := 0; i < 10000; i++ {
		claims.WriteString("| C" + itoa(i+1) + " | x | safety | d | no |\n")
	}
	claims.WriteString("## 7. Scenarios\n")
	for i := 0; i < 1000; i++ {
		claims.WriteString("### Scenario S" + itoa(i+1) + ": x\n- **Falsifies if it FAILs:** " + many("C1–C200, ", 5) + "\n- **Closes:** H1\n")
	}
	cases := map[string]string{
		"bold run":          head + "## 7. S\n### Scenario S1: a\n- " + many("**", 300000) + "\n",
		"range run":         head + "## 7. S\n### Scenario S1: a\n- **Falsifies if it FAILs:** " + many("C1–", 200000) + "\n",
		"pipe run":          head + "## 1b. C\n" + many("|", 500000) + "\n" + many("| a ", 100000) + "\n",
		"continuations":     head + "## 7. S\n### Scenario S1: a\n- **Workload:** x\n" + many("  more words here\n", 100000),
		"scenario headings": head + "## 7. S\n" + many("### Scenario S1: a\n#### §7.M — S1/x\n", 20000),
		"arms":              head + "## 7. S\n### Scenario S1: a\n#### §7.M.S\n- **Scenario arms:**\n" + many("  - `S1/a` — surface: x; oracle: y\n#### §7.M — S1/a\n", 40000),
		"open fence":        head + "## 0. A\n```\n" + many("# not a heading\n", 200000),
		"hypotheses":        head + "## 4. H\n" + many("H1. **t** — d\n   - Could falsify: "+many("C9, ", 20)+"\n", 30000),
		"sentinels":         head + "## 7. S\n### Scenario S1: a\n" + many("§7.M: not applicable §7.M.S §7.M — S1/", 30000) + "\n",
		"many claims":       claims.String(),
		"long line":         head + "## 7d. C\n" + many("cannot guarantee ", 300000) + "\n",
	}
	// The budget scales with a baseline measured now (the fixture's cost
	// per byte), so a loaded machine does not fail the test but quadratic
	// behaviour (thousands of times the baseline) still does.
	fx := []byte(readFixture(t))
	start := time.Now()
	const reps = 20
	for i := 0; i < reps; i++ {
		p, _ := ParseBytes("fx", fx)
		Lint(p)
	}
	perByte := float64(time.Since(start)) / float64(reps*len(fx))
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			budget := max(5*time.Second, time.Duration(100*perByte*float64(len(text))))
			checkParse(t, []byte(text), budget)
		})
	}
}

func BenchmarkParseFixture(b *testing.B) {
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p, err := ParseBytes("fx", data)
		if err != nil {
			b.Fatal(err)
		}
		Lint(p)
	}
}

// BenchmarkContinuation compares the accumulator used for multi-line field
// values with the obvious `+=` concatenation, on a 5 000-line field.
func BenchmarkContinuation(b *testing.B) {
	lines := make([]string, 5000)
	for i := range lines {
		lines[i] = "a continuation line of ordinary length"
	}
	// The comparison only means something if both build the same value.
	var got string
	var a accum
	a.start(&got, "first")
	for _, l := range lines {
		a.add(l)
	}
	a.flush()
	if want := "first " + strings.Join(lines, " "); got != want {
		b.Fatalf("accum built %d bytes, concat %d: they differ", len(got), len(want))
	}
	b.Run("accum", func(b *testing.B) {
		for b.Loop() {
			var dst string
			var a accum
			a.start(&dst, "first")
			for _, l := range lines {
				a.add(l)
			}
			a.flush()
		}
	})
	b.Run("concat", func(b *testing.B) {
		for b.Loop() {
			dst := "first"
			for _, l := range lines {
				dst += " " + l
			}
			_ = dst
		}
	})
}
