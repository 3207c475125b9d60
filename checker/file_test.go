package checker

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// writeFile writes ops as a history file, with extra raw lines appended.
func writeFile(t *testing.T, ops []history.Op, extra string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Scenario: "S", Clock: "monotonic"}, ops); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(extra)
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunFileAgreesWithSteps: RunFile gives what reading, validating and
// checking the file step by step gives — bad lines, invalid records,
// weak reasons, the result — for the streamed isolation checker and for
// one that reads the file whole, on good histories and ones with faults.
func TestRunFileAgreesWithSteps(t *testing.T) {
	txns := fixture.Txns(3, 3000, 20, 4, 8, true)
	mutateTxns(txns, rand.New(rand.NewPCG(3, 3)), 10)
	txns[7].OpID = txns[3].OpID // a repeated op id: an invalid record
	kv := fixture.KVTimeouts(3000, 10, 8, 0.1, 3)
	fixture.StaleRead(kv)
	for _, c := range []struct {
		name  string
		spec  Spec
		ops   []history.Op
		extra string
	}{
		{"isolation", Spec{Model: "txn", Checker: Serializability, Params: map[string]string{"level": StrictSerializable}}, txns, "garbage\n"},
		{"isolation, bad txn", Spec{Model: "txn", Checker: Serializability}, txns, `{"op_id":"z","process_id":"p","invoke_ts":1,"complete_ts":2,"op_type":"txn","key":null,"input":[["cas","x",1]],"output":null,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":null}` + "\n"},
		{"linearizability", Spec{Model: "kv", Checker: Linearizability}, kv, "garbage\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.ops, c.extra)
			meta, ops, bad, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			spec := c.spec
			spec.History = path
			wantRes, wantErr := Run(context.Background(), spec, ops, nil)
			got, gotErr := RunFile(context.Background(), c.spec, path, nil)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if (wantErr != nil) != (c.name == "isolation, bad txn") {
				t.Fatalf("error %v: only the bad transaction is an error", wantErr)
			}
			if wantErr != nil {
				return
			}
			if got.Meta != meta || got.OpsRead != len(ops) || fmt.Sprint(got.Bad) != fmt.Sprint(bad) {
				t.Fatalf("meta %+v ops %d bad %v; want %+v %d %v", got.Meta, got.OpsRead, got.Bad, meta, len(ops), bad)
			}
			if want := history.Validate(path, ops, nil); fmt.Sprint(got.Invalid) != fmt.Sprint(want) || len(want) == 0 && c.name == "isolation" {
				t.Fatalf("invalid %v, want %v (and some)", got.Invalid, want)
			}
			if want := history.Weak(meta, ops, Needs(c.spec.Checker, c.spec.Model)); !reflect.DeepEqual(got.Weak, want) {
				t.Fatalf("weak %v, want %v", got.Weak, want)
			}
			got.Result.Elapsed, wantRes.Elapsed = 0, 0
			sameIsolation(t, c.name, got.Result, wantRes)
			if got.Result.Outcome != Invalid {
				t.Fatalf("outcome %s: the faults planted were not found", got.Result.Outcome)
			}
		})
	}
}

// TestRunFileOutOfTime: a streamed check whose time is up is unknown,
// never valid.
func TestRunFileOutOfTime(t *testing.T) {
	path := writeFile(t, fixture.Txns(1, 2000, 10, 4, 8, false), "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := RunFile(ctx, Spec{Model: "txn", Checker: Serializability}, path, nil)
	if err != nil || rep.Result.Outcome != Unknown {
		t.Fatalf("outcome %s err %v, want unknown", rep.Result.Outcome, err)
	}
	// And the same history in time is valid: the limit made the difference.
	rep, err = RunFile(context.Background(), Spec{Model: "txn", Checker: Serializability}, path, nil)
	if err != nil || rep.Result.Outcome != Valid {
		t.Fatalf("in time: outcome %s err %v, want valid", rep.Result.Outcome, err)
	}
}
