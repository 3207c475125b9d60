package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An isolation FAIL gets a reduced reproducer too: the write skew between
// two transactions, hidden among serializable ones, is reduced to those
// two, named by their keys.
func TestIsolationFailReproducerReduced(t *testing.T) {
	planText := isolationPlan("txn", "serializability at serializable")
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
	rep := analyzeOne(t, planText, baseAudit("S1"), func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "artifacts", "S1", "history.jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	s := findResult(rep, "S1")
	if s == nil || !strings.HasPrefix(string(s.Verdict), "FAIL") || len(s.Findings) == 0 {
		t.Fatalf("S1: %+v", s)
	}
	f := findingByID(rep, s.Findings[0])
	if !strings.Contains(f.Reproducer, "reduced from 42 ops to 2 ops (keys \"x\", \"y\"") {
		t.Errorf("reproducer %q, want the write skew reduced to its 2 transactions over x and y", f.Reproducer)
	}
}
