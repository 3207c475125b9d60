package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// initCopySUT copies the goservice fixture into a temp dir.
func initCopySUT(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "generator", "testdata", "sut", "goservice")
	dst := filepath.Join(t.TempDir(), "goservice")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Skipf("fixture not available: %v", err)
	}
	return dst
}

func runDstgen(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestInitCommand(t *testing.T) {
	sut := initCopySUT(t)
	// Not a terminal (a strings.Reader): never waits, writes TODOs.
	code, out, errs := runDstgen(t, "", "init", "--sut", sut)
	if code != 0 {
		t.Fatalf("init exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"Mode:", "Plan: docs/testing-plans/", "create", "Taskfile.yml", "never written", "TODO(<id>)"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runDstgen(t, "", "init", "--sut", sut, "--dry-run")
	if code != 0 || !strings.Contains(out, "unchanged") || strings.Contains(out, "create ") {
		t.Errorf("dry-run re-run: exit %d\n%s", code, out)
	}
	// A hand-edited generated file is kept, and the summary says how to
	// overwrite it; with nothing edited that hint must not appear.
	if strings.Contains(out, "--force overwrites") {
		t.Errorf("re-run with nothing edited mentions --force:\n%s", out)
	}
	readme := filepath.Join(sut, "testing", "README.md")
	if err := os.WriteFile(readme, []byte("my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runDstgen(t, "", "init", "--sut", sut)
	if code != 0 || !strings.Contains(out, "skip (edited)") || !strings.Contains(out, "1 edited file(s) kept; --force overwrites them") {
		t.Errorf("re-run after editing README.md: exit %d\n%s", code, out)
	}
	if got, _ := os.ReadFile(readme); string(got) != "my notes\n" {
		t.Errorf("edited README.md overwritten: %q", got)
	}
}

func TestInitCommandBadInput(t *testing.T) {
	sut := initCopySUT(t)
	plans, _ := filepath.Glob(filepath.Join(sut, "docs", "testing-plans", "*.md"))
	data, _ := os.ReadFile(plans[0])
	bad := filepath.Join(t.TempDir(), "bad.md")
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, "**Oracle:**") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(bad, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing SUT", []string{"init", "--sut", filepath.Join(t.TempDir(), "nope")}, "does not exist"},
		{"lint-failing plan", []string{"init", "--sut", sut, "--plan", bad}, "bad.md:"},
		{"unwritable out", []string{"init", "--sut", sut, "--out", filepath.Join(file, "testing")}, "not writable"},
		{"stray argument", []string{"init", "extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runDstgen(t, "", tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q lacks %q", errs, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(sut, "testing")); err == nil {
		t.Error("a failed init wrote testing/")
	}
}

// TestInitNextStepKeepsExistingEnv: once env.yml exists, the printed next
// step must not tell the user to copy env.example.yml over it.
func TestInitNextStepKeepsExistingEnv(t *testing.T) {
	sut := initCopySUT(t)
	for _, tc := range []struct {
		name     string
		haveEnv  bool
		wantCp   bool
		wantNote string
	}{
		{"fresh", false, true, "env.yml (cp env.example.yml env.yml)"},
		{"env.yml present", true, false, "env.yml (yours, kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.haveEnv {
				if err := os.WriteFile(filepath.Join(sut, "testing", "env.yml"), []byte("hosts: []\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errs := runDstgen(t, "", "init", "--sut", sut)
			if code != 0 {
				t.Fatalf("init exit %d: %s", code, errs)
			}
			next := out[strings.LastIndex(out, "Next:"):]
			if got := strings.Contains(next, "cp env.example.yml env.yml"); got != tc.wantCp {
				t.Errorf("next step %q: suggests cp = %v, want %v", next, got, tc.wantCp)
			}
			if !strings.Contains(out, tc.wantNote) {
				t.Errorf("summary lacks %q:\n%s", tc.wantNote, out)
			}
		})
	}
}

// TestInitAgentsFlag: --agents writes the agent files at the SUT root and
// lists them in the summary (dry run first: listed, nothing written); an
// unknown name is exit 2 with one line naming the known ones.
func TestInitAgentsFlag(t *testing.T) {
	sut := initCopySUT(t)
	claude := filepath.Join(sut, ".claude", "agents", "test-runner.md")
	agentsMD := filepath.Join(sut, "AGENTS.md")
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		stdout   []string // each must appear
		stderr   string
		written  bool // the agent files exist afterwards
	}{
		{"unknown name", []string{"--agents", "nonsense"}, 2, nil,
			`init: unknown agent "nonsense" for --agents (known: claude, agents-md)`, false},
		{"one unknown among known", []string{"--agents", "claude,nonsense"}, 2, nil, `unknown agent "nonsense"`, false},
		{"dry run", []string{"--agents", "claude,agents-md", "--dry-run"}, 0,
			[]string{"(--agents):", "create                     .claude/agents/test-runner.md", "create                     AGENTS.md"}, "", false},
		{"write", []string{"--agents", "claude", "--agents", "agents-md"}, 0,
			[]string{"Wrote " + sut + " (--agents):", "create                     .claude/agents/test-runner.md", "create                     AGENTS.md"}, "", true},
		{"re-run", []string{"--agents", "claude,agents-md"}, 0,
			[]string{"unchanged                  .claude/agents/test-runner.md", "unchanged                  AGENTS.md"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runDstgen(t, "", append([]string{"init", "--sut", sut}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.wantCode, errs)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.stderr != "" && (!strings.Contains(errs, tc.stderr) || strings.Count(strings.TrimSpace(errs), "\n") != 0) {
				t.Errorf("stderr %q, want one line with %q", errs, tc.stderr)
			}
			for _, p := range []string{claude, agentsMD} {
				if _, err := os.Stat(p); (err == nil) != tc.written {
					t.Errorf("%s exists: %t, want %t", p, err == nil, tc.written)
				}
			}
			if tc.wantCode != 0 {
				if _, err := os.Stat(filepath.Join(sut, "testing")); err == nil {
					t.Errorf("a rejected --agents wrote testing/")
				}
			}
		})
	}
}
