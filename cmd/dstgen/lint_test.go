package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
		{"clean plan", []string{"lint", clean}, 0, nil, true, ""},
		{"weak oracle", []string{"lint", weak}, 2, []string{weak + ":142: scenario S1: Oracle \"logs look fine\""}, false, "1 error(s)"},
		{"warnings only", []string{"lint", warn}, 0, []string{warn + ":200: warning: scenario S3: name \"three_node_chaos\""}, false, ""},
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
			for _, s := range c.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout %q lacks %q", out.String(), s)
				}
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
		File     string
		Problems []problem
		Errors   int
		Warnings int
	}
	for _, c := range []struct {
		name     string
		file     string
		code     int
		errors   int
		rule     string
		line     int
		problems int
	}{
		{"errors", weak, 2, 1, "oracle-weak", 142, 1},
		{"clean", clean, 0, 0, "", 0, 0},
		{"unparseable", empty, 2, 1, "parse", 1, 1},
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
			if r.File != c.file || r.Errors != c.errors || r.Warnings != 0 || len(r.Problems) != c.problems {
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
