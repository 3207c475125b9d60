package analyze

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dstgen/dstgen/plan"
)

// FuzzAnalyze feeds arbitrary run.json and history bytes through the whole
// pipeline: bad input must become Problems or verdicts, never a panic, and
// every plan scenario must still be in the report.
func FuzzAnalyze(f *testing.F) {
	for _, rel := range []string{"artifacts/S1/run.json", "artifacts/S1/history.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", sessFail, rel))
		if err != nil {
			f.Fatal(err)
		}
		if filepath.Ext(rel) == ".json" {
			f.Add(data, []byte(`{"op_id":"1","process_id":"p","invoke_ts":1,"complete_ts":2,"op_type":"read","key":"k","input":null,"output":null,"error":null,"timeout_marker":false,"node_seen":"n","fault_epoch":null}`))
		} else {
			f.Add([]byte(`{"schema":"dst-run/1","scenario":"S1","attempted":true,"fault_windows":[{"fault_epoch":"w","nemesis":"kill-9","injected_at_ns":5}]}`), data)
		}
	}
	p, err := plan.Parse("testdata/plan-mini.md")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, run, hist []byte) {
		dir := filepath.Join(t.TempDir(), "mini", "20260101T000000Z")
		adir := filepath.Join(dir, "artifacts", "S1")
		if err := os.MkdirAll(adir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(adir, "run.json"), run, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(adir, "history.jsonl"), hist, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Analyze(context.Background(), dir, p, Options{CheckTimeout: 2e9})
		if err != nil {
			t.Fatalf("with a plan the analysis must go on: %v", err)
		}
		if len(rep.Scenarios) < 2 || !rep.Scenarios[0].Verdict.valid() || rep.SessionVerdict == "" {
			t.Fatalf("report %+v", rep)
		}
	})
}
