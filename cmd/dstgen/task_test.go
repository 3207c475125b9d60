package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskCommandRunsGeneratedTask generates testing/ and runs its harmless
// `info` task in-process through `dstgen task`, with a CLI variable.
func TestTaskCommandRunsGeneratedTask(t *testing.T) {
	sut := initCopySUT(t)
	if code, _, errs := runDstgen(t, "", "init", "--sut", sut); code != 0 {
		t.Fatalf("init: exit %d %s", code, errs)
	}
	dir := filepath.Join(sut, "testing")
	code, out, errs := runDstgen(t, "", "task", "info", "RUN_ID=20260101_120000", "--dir", dir)
	if code != 0 {
		t.Fatalf("task info: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"project=", "run_id=20260101_120000", "results_dir=results/run_20260101_120000"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// validate without env.yml fails with the task's own exit code 1.
	code, _, errs = runDstgen(t, "", "task", "validate", "--dir", dir)
	if code != 1 || !strings.Contains(errs, "env.yml not found") {
		t.Errorf("validate without env.yml: exit %d, stderr %q; want 1 and the reason", code, errs)
	}
	// The failing task is also named on dstgen's own one-line reason.
	if !strings.Contains(errs, "\ndstgen: ") || !strings.Contains(errs, `"validate"`) {
		t.Errorf("validate without env.yml: stderr %q lacks dstgen's one-line reason naming the task", errs)
	}
	// env.yml copied from the example still holds TODO values: refused.
	ex, _ := os.ReadFile(filepath.Join(dir, "env.example.yml"))
	if err := os.WriteFile(filepath.Join(dir, "env.yml"), ex, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runDstgen(t, "", "task", "validate", "--dir", dir)
	if code != 1 || !strings.Contains(errs, "TODO(") {
		t.Errorf("validate with TODOs: exit %d, stderr %q", code, errs)
	}
	// The example's documentation addresses (RFC 5737) are refused too:
	// they stand for hosts the user has not named yet.
	if !strings.Contains(errs, `env.yml:`) || !strings.Contains(errs, `address: "192.0.2.`) {
		t.Errorf("validate does not list the placeholder addresses: %q", errs)
	}
	code, out, _ = runDstgen(t, "", "task", "--list", "--dir", dir)
	if code != 0 || !strings.Contains(out, "bench:status\n") {
		t.Errorf("task --list: exit %d\n%s", code, out)
	}
}

func TestTaskCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	body := "version: '3'\ntasks:\n  hi:\n    desc: hi\n    cmds: [echo hi]\n"
	if err := os.WriteFile(filepath.Join(dir, "Taskfile.yml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown task", []string{"task", "nope", "--dir", dir}, "does not exist"},
		{"bad var", []string{"task", "hi", "NOEQUALS", "--dir", dir}, "not VAR=value"},
		{"no taskfile", []string{"task", "hi", "--dir", t.TempDir()}, "Taskfile.yml"},
		{"no name", []string{"task", "--dir", dir}, "NAME is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runDstgen(t, "", tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d stderr %q, want 2 and %q", code, errs, tc.want)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("reason is not one line: %q", errs)
			}
			if strings.Contains(out, "Available tasks") {
				t.Errorf("unknown task dumped the task list: %q", out)
			}
		})
	}
}

// TestTaskCommandQuotesHostileVars: a RUN_ID carrying shell syntax reaches
// the generated tasks as data, never as a command.
func TestTaskCommandQuotesHostileVars(t *testing.T) {
	sut := initCopySUT(t)
	if code, _, errs := runDstgen(t, "", "init", "--sut", sut); code != 0 {
		t.Fatalf("init: exit %d %s", code, errs)
	}
	dir := filepath.Join(sut, "testing")
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, evil := range []string{"$(touch " + marker + ")", "`touch " + marker + "`", "x; touch " + marker, "x' ; touch " + marker + " ; '"} {
		code, out, errs := runDstgen(t, "", "task", "info", "RUN_ID="+evil, "--dir", dir)
		if code != 0 {
			t.Fatalf("task info RUN_ID=%q: exit %d %s", evil, code, errs)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("RUN_ID=%q executed a command", evil)
		}
		if !strings.Contains(out, "run_id="+evil) {
			t.Errorf("RUN_ID=%q not printed verbatim:\n%s", evil, out)
		}
	}
}
