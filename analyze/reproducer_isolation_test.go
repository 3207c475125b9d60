package analyze

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/plan"
)

// An isolation FAIL gets a reduced reproducer too: the write skew between
// two transactions, hidden among serializable ones, is reduced to those
// two, named by their keys.
func TestIsolationFailReproducerReduced(t *testing.T) {
	root := t.TempDir()
	planText := strings.Replace(auditPlanHeader,
		`| C1 | "get/put on a single key are linearizable" | safety |`,
		`| C1 | "multi-key transactions are serializable" | isolation |`, 1) +
		seriousScenarioChecker("S1", "kv_isolation", "txn", "serializability at serializable")
	planPath := filepath.Join(root, "plan.md")
	if err := os.WriteFile(planPath, []byte(planText), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse(planPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "audit", "20260601T100000Z")
	sessionLog(t, dir, "audit", "../../plan.md")
	baseAudit("S1").build(t, dir)
	var b strings.Builder
	line := func(id int, proc, in string) {
		fmt.Fprintf(&b, `{"op_id":"%d","process_id":%q,"invoke_ts":%d,"complete_ts":%d,"op_type":"txn","key":null,"input":%s,"output":%s,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":null}`+"\n",
			id, proc, int64(id)*1e8, int64(id)*1e8+5e6, strings.ReplaceAll(in, "READ", "null"), in)
	}
	id := 1
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("k%d", i%8)
		line(id, fmt.Sprintf("p%d", i%3), fmt.Sprintf(`[["w",%q,%d]]`, k, i))
		id++
		if i == 20 {
			line(id, "p0", `[["r","x",null],["r","y",null],["w","x",1]]`)
			line(id+1, "p1", `[["r","x",null],["r","y",null],["w","y",2]]`)
			id += 2
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "artifacts", "S1", "history.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), dir, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := findResult(rep, "S1")
	if s == nil || !strings.HasPrefix(string(s.Verdict), "FAIL") || len(s.Findings) == 0 {
		t.Fatalf("S1: %+v", s)
	}
	f := findingByID(rep, s.Findings[0])
	if !strings.Contains(f.Reproducer, "reduced from 42 ops to 2 ops (keys \"x\", \"y\"") {
		t.Errorf("reproducer %q, want the write skew reduced to its 2 transactions over x and y", f.Reproducer)
	}
}
