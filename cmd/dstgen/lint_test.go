package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const lintFixture = "../../plan/testdata/quorumkv-core-guarantees.md"

func writePlan(t *testing.T, name, old, repl string) string {
	t.Helper()
	b, err := os.ReadFile(lintFixture)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if old != "" {
		if !strings.Contains(s, old) {
			t.Fatalf("%q not in fixture", old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLintCommand(t *testing.T) {
	clean := writePlan(t, "clean.md", "", "")
	weak := writePlan(t, "weak.md", "Porcupine linearizability per key over the full history", "logs look fine")
	warn := writePlan(t, "warn.md", "election_completes_within_3s_under_one_way_loss", "three_node_chaos")
	empty := writePlan(t, "empty.md", "", "")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.md")

	for _, c := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings, in order
		stdoutNone bool
		stderr     string
	}{
		{"clean plan", []string{"lint", clean}, 0, []string{"plan=" + clean + " errors=0 warnings=0 claims=11 scenarios=5\n"}, false, ""},
		{"weak oracle", []string{"lint", weak}, 2, []string{weak + ":142: scenario S1: Oracle \"logs look fine\""}, false, "1 error(s)"},
		{"warnings only", []string{"lint", warn}, 0, []string{warn + ":200: warning: scenario S3: name \"three_node_chaos\"",
			"\nplan=" + warn + " errors=0 warnings=1 claims=11 scenarios=5\n"}, false, ""},
		{"warnings strict", []string{"lint", "--strict", warn}, 2, []string{":200: warning:"}, false, "--strict"},
		{"unreadable", []string{"lint", missing}, 2, nil, true, "no such file"},
		{"not a plan", []string{"lint", empty}, 2, nil, true, empty + ":1: empty plan"},
		{"no argument", []string{"lint"}, 2, nil, true, "accepts 1 arg"},
		{"stdin", []string{"lint", "-"}, 2, nil, true, "<stdin>:1: empty plan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
			if code != c.code {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, c.code, out.String(), errb.String())
			}
			if c.stdoutNone && out.Len() != 0 {
				t.Errorf("unexpected stdout %q", out.String())
			}
			rest := out.String()
			for _, s := range c.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("stdout %q lacks %q (after the previous match)", out.String(), s)
					continue
				}
				rest = rest[i+len(s):]
			}
			if c.code != 0 && strings.Contains(out.String(), "errors=") {
				t.Errorf("a failed lint printed the success summary: %q", out.String())
			}
			if c.stderr != "" && !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stderr %q lacks %q", errb.String(), c.stderr)
			}
			if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n > 0 {
				t.Errorf("stderr is not one line: %q", errb.String())
			}
		})
	}
}

// TestLintSummaryLine checks the success line is key=value and its counts
// follow the plan, for a file argument and for stdin.
func TestLintSummaryLine(t *testing.T) {
	small := "# Test Plan: tiny\n\n## 1b. Claims under test\n\n| ID | Claim | Category | Source | Inferred? |\n|---|---|---|---|---|\n" +
		"| C1 | \"x\" | liveness | docs | no |\n"
	dir := filepath.Join(t.TempDir(), "with space")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spaced := filepath.Join(dir, "fixture.md")
	b, err := os.ReadFile(lintFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spaced, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file, stdin string
		want              map[string]string
	}{
		{"stdin", "-", string(b), map[string]string{"plan": "-", "errors": "0", "warnings": "0", "claims": "11", "scenarios": "5"}},
		{"path with a space is quoted", spaced, "", map[string]string{"plan": strconv.Quote(spaced)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"lint", c.file}, strings.NewReader(c.stdin), &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			line := out.String()
			if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "plan=") {
				t.Fatalf("stdout %q is not one summary line", line)
			}
			if c.file == spaced {
				if !strings.HasPrefix(line, "plan="+strconv.Quote(spaced)+" errors=0 ") {
					t.Errorf("stdout %q: want the path quoted", line)
				}
				return
			}
			got := kvOf(line)
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s=%q, want %q (line %q)", k, got[k], v, line)
				}
			}
		})
	}
	// A plan with lint errors gets the error line on stderr, not the summary.
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"lint", "-"}, strings.NewReader(small), &out, &errb); code != 2 {
		t.Fatalf("tiny plan: exit %d, stdout %q", code, out.String())
	}
	if strings.Contains(out.String(), "plan=") {
		t.Errorf("tiny plan has errors, yet printed the success line: %q", out.String())
	}
}

func TestLintCommandJSON(t *testing.T) {
	weak := writePlan(t, "weak.md", "Porcupine linearizability per key over the full history", "logs look fine")
	clean := writePlan(t, "clean.md", "", "")
	empty := filepath.Join(t.TempDir(), "empty.md")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type problem struct {
		File, Severity, Rule, Message string
		Line                          int
	}
	type report struct {
		File      string
		Problems  []problem
		Errors    int
		Warnings  int
		Claims    int
		Scenarios int
	}
	for _, c := range []struct {
		name     string
		file     string
		code     int
		errors   int
		rule     string
		line     int
		problems int
		claims   int
		scens    int
	}{
		{"errors", weak, 2, 1, "oracle-weak", 142, 1, 11, 5},
		{"clean", clean, 0, 0, "", 0, 0, 11, 5},
		{"unparseable", empty, 2, 1, "parse", 1, 1, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"lint", "--json", c.file}, strings.NewReader(""), &out, &errb)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errb.String())
			}
			raw := out.String()
			var r report
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("stdout is not the lint JSON: %v", err)
			}
			if r.File != c.file || r.Errors != c.errors || r.Warnings != 0 || len(r.Problems) != c.problems ||
				r.Claims != c.claims || r.Scenarios != c.scens {
				t.Errorf("report = %+v", r)
			}
			if !strings.Contains(raw, `"problems": [`) {
				t.Errorf("problems must be a JSON array, got %s", raw)
			}
			if c.problems > 0 {
				p := r.Problems[0]
				if p.Rule != c.rule || p.Line != c.line || p.Severity != "error" || p.File != c.file || p.Message == "" {
					t.Errorf("problem = %+v", p)
				}
			}
		})
	}
}
