package analyze

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// A read of a value no op in the history wrote is left-over state from an
// earlier run: INCONCLUSIVE-env with a finding citing the op's history
// line, never a FAIL of the SUT; a clean key's stale read still FAILs; a
// clean history is judged as before.
func TestDirtyInitialStateVerdict(t *testing.T) {
	p, err := plan.Parse("testdata/plan-mini.md")
	if err != nil {
		t.Fatal(err)
	}
	const src = "testdata/sessions/mini/20260610T100000Z"
	// Line 2 of every history: key "left" holds 99 from the previous run.
	const leftover = `{"op_id":"0","process_id":"p9","invoke_ts":100000000,"complete_ts":104000000,"op_type":"read","key":"left","input":null,"output":99,"error":null,"timeout_marker":false,"node_seen":"kvnode-1","fault_epoch":null}`
	// After write 58 completed, a read of k returns 0: stale on a clean key.
	const stale = `{"op_id":"61","process_id":"p2","invoke_ts":59600000000,"complete_ts":59604000000,"op_type":"read","key":"k","input":null,"output":0,"error":null,"timeout_marker":false,"node_seen":"kvnode-1","fault_epoch":null}`
	clean, err := Analyze(context.Background(), src, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		insert []string // lines inserted after _meta
		append []string // lines appended
		want   Verdict
	}{
		{"leftover read", []string{leftover}, nil, InconclusiveEnv},
		{"leftover read and a stale read on a clean key", []string{leftover}, []string{stale}, FailNondeterministic},
		{"clean", nil, nil, verdictOf(clean, "S1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fixture.CopyDir(t, src, dir)
			hs, _ := filepath.Glob(filepath.Join(dir, "artifacts", "S1", "history*.jsonl"))
			for _, h := range hs {
				b, err := os.ReadFile(h)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
				lines = append(append(append([]string{lines[0]}, tt.insert...), lines[1:]...), tt.append...)
				if err := os.WriteFile(h, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := Analyze(context.Background(), dir, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := scenarioOf(rep, "S1")
			if s == nil {
				t.Fatal("no S1")
			}
			if s.Verdict != tt.want {
				t.Fatalf("S1 verdict %s, want %s: %+v", s.Verdict, tt.want, s.Reasons)
			}
			var dirty *Finding
			for i := range rep.Findings {
				if strings.HasPrefix(rep.Findings[i].Title, "Dirty initial state") {
					dirty = &rep.Findings[i]
				}
			}
			if len(tt.insert) == 0 {
				if dirty != nil {
					t.Errorf("clean history raised %+v", dirty)
				}
				if tt.want == clean.Scenarios[0].Verdict && s.OracleEvidence != scenarioOf(clean, "S1").OracleEvidence {
					t.Errorf("clean history evidence changed: %q vs %q", s.OracleEvidence, scenarioOf(clean, "S1").OracleEvidence)
				}
				return
			}
			if dirty == nil {
				t.Fatalf("no dirty-initial-state finding: %+v", rep.Findings)
			}
			all := dirty.WhatHappened + " " + strings.Join(dirty.Evidence, " ") + " " + dirty.NextAction
			for _, want := range []string{"artifacts/S1/history.jsonl:2", "process p9", `key "left"`, "99", "task clean:data"} {
				if !strings.Contains(all, want) {
					t.Errorf("dirty finding lacks %q: %s", want, all)
				}
			}
			if dirty.Reduction != "environment" {
				t.Errorf("dirty finding blamed %q, want environment", dirty.Reduction)
			}
			if tt.want == InconclusiveEnv && !strings.Contains(s.Reasons[0].Text, "dirty initial state: ") {
				t.Errorf("reason %q does not say dirty initial state", s.Reasons[0].Text)
			}
			if tt.want.IsFail() {
				for _, f := range rep.Findings {
					if f.Verdict.IsFail() && f.Title != dirty.Title && strings.Contains(strings.Join(f.Evidence, " ")+f.WhatHappened, `"left"`) {
						t.Errorf("FAIL finding blames the dirty key: %+v", f)
					}
				}
			}
		})
	}
}

func scenarioOf(rep *Report, id string) *ScenarioResult {
	for i := range rep.Scenarios {
		if rep.Scenarios[i].ID == id {
			return &rep.Scenarios[i]
		}
	}
	return nil
}

func verdictOf(rep *Report, id string) Verdict {
	if s := scenarioOf(rep, id); s != nil {
		return s.Verdict
	}
	return ""
}
