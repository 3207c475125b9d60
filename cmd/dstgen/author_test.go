package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/testsupport/fixture"
)

const authorPlan = "docs/testing-plans/kv.md"

func authorSUT(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	fixture.CopyDir(t, filepath.Join("..", "..", "author", "testdata", "gosut"), dst)
	return dst
}

func editAuthorPlan(t *testing.T, sut, old, new string) {
	t.Helper()
	p := filepath.Join(sut, authorPlan)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("plan has no %q", old)
	}
	if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

func dstgen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestAuthorCmdExitCodes: 0 written or skipped, 1 a compile failure, 2 a
// refused target, a plan failing lint, a bad flag value.
func TestAuthorCmdExitCodes(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not installed")
	}
	for _, tc := range []struct {
		name     string
		edit     [2]string
		args     []string
		code     int
		out, err string
	}{
		{"written", [2]string{}, nil, 0, "scenario=S1 action=written path=kv/s1_linearizable_get_test.go format=gofmt compile=ok staged=false", ""},
		{"diff", [2]string{}, nil, 0, "+++ b/kv/s1_linearizable_get_test.go", ""},
		{"no-author-mode", [2]string{}, nil, 0, "scenario=S2 action=no-author-mode", ""},
		{"no-diff", [2]string{}, []string{"--no-diff", "--scenario", "S1"}, 0, "scenarios=1 written=1", ""},
		{"compile-failed", [2]string{"kv.New()", "kv.Nope()"}, nil, 1, "compile=failed", "do not compile"},
		{"refused", [2]string{"`kv/s1_linearizable_get_test.go`", "`../x_test.go`"}, nil, 2, "action=refused", "refused"},
		{"lint", [2]string{"- **Oracle:** p99 get latency <= 10ms\n", ""}, nil, 2, "", "fails lint"},
		{"on-exists", [2]string{}, []string{"--on-exists", "clobber"}, 2, "", `"clobber"`},
		{"scenario", [2]string{}, []string{"--scenario", "S7"}, 2, "", "S7: no such scenario"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sut := authorSUT(t)
			if tc.edit[0] != "" {
				editAuthorPlan(t, sut, tc.edit[0], tc.edit[1])
			}
			code, out, errs := dstgen(t, append([]string{"author", "--sut", sut}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, want %d\nstdout (want %q):\n%s\nstderr (want %q):\n%s", code, tc.code, tc.out, out, tc.err, errs)
			}
			if tc.code == 2 && tc.name != "lint" && strings.Contains(strings.TrimSpace(errs), "\n") {
				t.Errorf("exit 2 reason is not one line:\n%s", errs)
			}
		})
	}
}

// TestAuthorCmdSecondRunSkips: the second run keeps the file.
func TestAuthorCmdSecondRunSkips(t *testing.T) {
	sut := authorSUT(t)
	if code, _, errs := dstgen(t, "author", "--sut", sut, "--dry-run"); code != 0 {
		t.Fatalf("dry run exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(sut, "kv/s1_linearizable_get_test.go")); err == nil {
		t.Fatal("dry run wrote the target")
	}
	if code, _, errs := dstgen(t, "author", "--sut", sut, "--compile-timeout", "2m"); code != 0 {
		t.Fatalf("first run exit %d: %s", code, errs)
	}
	code, out, _ := dstgen(t, "author", "--plan", filepath.Join(sut, authorPlan))
	if code != 0 || !strings.Contains(out, "scenario=S1 action=skipped") || strings.Contains(out, "diff --git") {
		t.Errorf("second run (SUT found above the plan): exit %d\n%s", code, out)
	}
}

// TestLintDrift: lint --drift is quiet right after author, reports the
// file and scenario (exit 1) once the plan changed.
func TestLintDrift(t *testing.T) {
	sut := authorSUT(t)
	planPath := filepath.Join(sut, authorPlan)
	if code, _, errs := dstgen(t, "author", "--sut", sut, "--no-diff"); code != 0 {
		t.Fatalf("author exit %d: %s", code, errs)
	}
	if code, out, errs := dstgen(t, "lint", "--drift", planPath); code != 0 || !strings.Contains(out, "drift=0") {
		t.Fatalf("fresh: exit %d\n%s%s", code, out, errs)
	}
	editAuthorPlan(t, sut, "4 keys, 60 s", "8 keys, 60 s")
	code, out, errs := dstgen(t, "lint", "--drift", "--sut", sut, planPath)
	if code != 1 || !strings.Contains(out, "kv/s1_linearizable_get_test.go:1: drift: scenario S1") || !strings.Contains(errs, "1 authored test file(s) drifted") {
		t.Errorf("after edit: exit %d\n%s%s", code, out, errs)
	}
	// --json: lint's document, then the drift document.
	code, out, _ = dstgen(t, "lint", "--drift", "--json", planPath)
	dec := json.NewDecoder(strings.NewReader(out))
	var lint map[string]any
	var drift struct {
		Drift []struct{ File, Scenario string }
	}
	if err := dec.Decode(&lint); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&drift); err != nil {
		t.Fatal(err)
	}
	if code != 1 || len(drift.Drift) != 1 || drift.Drift[0].File != "kv/s1_linearizable_get_test.go" || drift.Drift[0].Scenario != "S1" {
		t.Errorf("--json: exit %d %+v", code, drift)
	}
	planData, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	var sout, serr bytes.Buffer
	if code := run(context.Background(), []string{"lint", "--drift", "-"}, bytes.NewReader(planData), &sout, &serr); code != 2 || !strings.Contains(serr.String(), "not standard input") {
		t.Errorf("stdin: exit %d %s", code, serr.String())
	}
}
