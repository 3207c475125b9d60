package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/generator"
)

func runScan(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"scan"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestScanCommand: the summary names each finding's file, the mode and the
// open questions; bad input exits 2 with a one-line reason.
func TestScanCommand(t *testing.T) {
	fixture := filepath.Join("..", "..", "generator", "testdata", "sut", "goservice")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderrRe string
	}{
		{name: "summary", args: []string{fixture}, code: 0, stdout: []string{
			"SUT profile: tallyd", "packaging/tallyd.service:10", "ExecStart=/usr/local/bin/tallyd --config /etc/tallyd/config.yaml",
			"config.yaml.example → config.yaml", "README.md:13  \"Install\"", "mode Fast", "[remote.host]", "default: standard",
		}},
		{name: "missing dir", args: []string{filepath.Join(t.TempDir(), "gone")}, code: 2, stderrRe: "no such file or directory"},
		{name: "missing plan", args: []string{fixture, "--plan", "/nonexistent.md"}, code: 2, stderrRe: "nonexistent.md"},
		{name: "two dirs", args: []string{fixture, fixture}, code: 2, stderrRe: "accepts at most 1 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runScan(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errs)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if tc.stderrRe != "" {
				if !strings.Contains(errs, tc.stderrRe) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
					t.Errorf("stderr = %q, want one line with %q", errs, tc.stderrRe)
				}
				if out != "" {
					t.Errorf("stdout on error: %q", out)
				}
			}
		})
	}
}

// TestScanCommandJSON: --json is the Profile, decodable by a program.
func TestScanCommandJSON(t *testing.T) {
	dir := filepath.Join("..", "..", "generator", "testdata", "sut", "chaostoolbox")
	code, out, errs := runScan(t, dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p generator.Profile
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if p.Name != "lockd" || p.Completeness.Mode != generator.ModeSemi || len(p.Toolbox) == 0 || len(p.Questions) == 0 {
		t.Errorf("profile = %+v", p)
	}
	// --plan given explicitly on a tree without one makes the intent clear.
	plan := filepath.Join(dir, "docs", "testing-plans", "lockd-mutual-exclusion.md")
	code, out, _ = runScan(t, t.TempDir(), "--json", "--plan", plan)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	p = generator.Profile{}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Completeness.IntentClear || p.Completeness.Mode != generator.ModeSemi || len(p.Plans) != 1 {
		t.Errorf("with --plan: completeness %+v plans %v", p.Completeness, p.Plans)
	}
}

// TestScanCommandDeployArtifacts: scan lists the deploy artifacts a
// repository carries with their file:line, for §6b and env.yml's sut:.
func TestScanCommandDeployArtifacts(t *testing.T) {
	dir := filepath.Join("..", "..", "generator", "testdata", "realrepo", "broker")
	code, out, errs := runScan(t, dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"\nDeploy artifacts:\n", "docker/Dockerfile.nightly:9", "deploy/helm/broker/Chart.yaml:2", "util/broker.service:6"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
