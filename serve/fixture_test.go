package serve

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dstgen/dstgen/analyze"
	"github.com/dstgen/dstgen/plan"
)

// The fixture RESULTS tree: two sessions analyzed by the real analyzer
// (one DONE, one INCONCLUSIVE with a FAIL-nondeterministic scenario and its
// porcupine visualization) and one not analyzed.
const (
	relDone         = "mini/20260610T100000Z"
	relInconclusive = "quorumkv-core-guarantees/20260606T100000Z"
	relRaw          = "quorumkv-core-guarantees/20260605T100000Z"
)

// buildResults copies fixture sessions of package analyze into a fresh
// RESULTS directory and runs analyze on two of them, writing their
// findings/ as `dstgen analyze` does.
func buildResults(t testing.TB) string {
	t.Helper()
	src := filepath.Join("..", "analyze", "testdata")
	results := filepath.Join(t.TempDir(), "results")
	for _, rel := range []string{relDone, relInconclusive, relRaw} {
		dst := filepath.Join(results, filepath.FromSlash(rel))
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(src, "sessions", filepath.FromSlash(rel)))); err != nil {
			t.Fatalf("copy fixture session %s: %v", rel, err)
		}
	}
	for rel, planFile := range map[string]string{relDone: "plan-mini.md", relInconclusive: "plan.md"} {
		p, err := plan.Parse(filepath.Join(src, planFile))
		if err != nil {
			t.Fatalf("parse plan %s: %v", planFile, err)
		}
		dir := filepath.Join(results, filepath.FromSlash(rel))
		out := filepath.Join(dir, "findings")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), analyzeBound)
		rep, err := analyze.Analyze(ctx, dir, p, analyze.Options{HTMLDir: out})
		cancel()
		if err != nil {
			t.Fatalf("analyze %s: %v", rel, err)
		}
		if err := analyze.WriteReport(rep, nil, out); err != nil {
			t.Fatalf("write report of %s: %v", rel, err)
		}
	}
	return results
}
