package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// At the CLI the refusal is exit 2 with its file:line, before env.yml is
// read; --allow-fault-drift turns it into a warning.
func TestRunRefusesFaultDrift(t *testing.T) {
	planPath, _ := filepath.Abs(filepath.Join("..", "..", "examples", "etcd", "docs", "testing-plans", "etcd-kv-guarantees.md"))
	dir := t.TempDir()
	p := filepath.Join(dir, "subst.yml")
	text := "version: 1\nplan: " + planPath + "\nscenarios:\n  - id: S1\n    name: x\n    workload: {command: drive, duration_s: 5}\n" +
		"    faults:\n      - {nemesis: partition-full, targets: random, at: 1s, for: 1s}\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runDstgen(t, "", "run", "S1", "--scenarios", p, "--env", filepath.Join(dir, "none.yml"))
	if code != 2 || !strings.Contains(errs, "subst.yml:4: drift: S1 injects partition-full") || !strings.Contains(errs, "--allow-fault-drift") {
		t.Errorf("exit %d stderr %q; want 2 and the drift at subst.yml:4", code, errs)
	}
	// Accepted on request: the warning is printed, then env.yml is read.
	code, _, errs = runDstgen(t, "", "run", "S1", "--scenarios", p, "--env", filepath.Join(dir, "none.yml"), "--allow-fault-drift")
	if !strings.Contains(errs, "warning: ") || !strings.Contains(errs, "drift: S1 injects partition-full") || !strings.Contains(errs, "none.yml") {
		t.Errorf("--allow-fault-drift: exit %d stderr %q", code, errs)
	}
}
