package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// A read of a value no op wrote is a dirty initial state (left-over data),
// never a SUT anomaly; a clean key that violates still fails; a clean
// linearizable history is unchanged.
func TestDirtyInitialState(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		rows      []string
		want      Outcome
		dirtyKeys []string
		badKey    string // the key of the one anomaly, when Invalid
	}{
		{"leftover read", "kv", []string{
			`p 0 10 read a _ "old-run"`,
			`p 20 30 write a "v1" _`,
			`q 40 50 read a _ "v1"`,
		}, Unknown, []string{"a"}, ""},
		{"leftover read on one key, stale read on another", "kv", []string{
			`p 0 10 read a _ "old-run"`,
			`p 20 30 write b "v1" _`,
			`p 40 50 write b "v2" _`,
			`q 60 70 read b _ "v1"`,
		}, Invalid, []string{"a"}, "b"},
		{"cas expecting a value nobody wrote", "register", []string{
			`p 0 10 cas r ["gone","v1"] true`,
			`q 20 30 read r _ "v1"`,
		}, Unknown, []string{"r"}, ""},
		{"clean linearizable", "kv", []string{
			`p 0 10 read a _ null`,
			`p 20 30 write a "v1" _`,
			`q 25 50 read a _ "v1"`,
		}, Valid, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Model: tt.model, Checker: Linearizability}, h(t, tt.rows...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s (%s) %+v", res.Outcome, tt.want, res.Reason, res.Anomalies)
			}
			var keys []string
			for _, d := range res.Dirty {
				keys = append(keys, d.Key)
				if d.Line == 0 || d.ProcessID == "" || d.Value == "" {
					t.Errorf("dirty evidence lacks process/value/line: %+v", d)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tt.dirtyKeys, ",") {
				t.Errorf("dirty keys %v, want %v", keys, tt.dirtyKeys)
			}
			if tt.want == Unknown && (!strings.HasPrefix(res.Reason, "dirty initial state: ") || !strings.Contains(res.Reason, "task clean:data") || !strings.Contains(res.Reason, "line 1")) {
				t.Errorf("reason %q does not name the dirty state, its line and the fix", res.Reason)
			}
			if tt.want == Invalid {
				for _, a := range res.Anomalies {
					if a.Key != tt.badKey {
						t.Errorf("anomaly on %q, want only %q: %+v", a.Key, tt.badKey, a)
					}
				}
			}
		})
	}
}

// findDirtyWhole is the dirty scan as one pass over the whole history
// (before the per-key one): the reference dirtyKey and the per-key
// partitioning must agree with.
// findDirty lists, per key in first-seen order, the first op that observed
// a value no op of the history wrote before any acknowledged write to its
// key had completed: an ok read whose output is not null (the initial
// value), or a cas that succeeded (output true) with an expected value
// nobody wrote. Every write attempt counts as a writer, failed or timed out
// included, so only a value from outside the history is flagged. Models
// without unique written values return nil.
func findDirtyWhole(model string, ops []history.Op) []DirtyRead {
	if !uniqueValueModel(model) {
		return nil
	}
	wrote := map[string]map[string]bool{}
	for i := range ops {
		o := &ops[i]
		v, isW := written(o)
		if o.OpType == "cas" {
			// A cas whose answer is false or unknown may still be the
			// writer of its new value as far as the history can tell.
			var pair []json.RawMessage
			if json.Unmarshal(o.Input, &pair) == nil && len(pair) == 2 {
				v, isW = canon(pair[1]), true
			}
		}
		if !isW {
			continue
		}
		if wrote[o.Key] == nil {
			wrote[o.Key] = map[string]bool{}
		}
		wrote[o.Key][v] = true
	}
	// firstAck is, per key, when the first acknowledged write completed:
	// from then on left-over state is overwritten, so a value nobody wrote
	// read after it is a real anomaly for porcupine, not a dirty start.
	firstAck := map[string]int64{}
	for i := range ops {
		o := &ops[i]
		if _, isW := written(o); isW && ok(o) {
			if t, seen := firstAck[o.Key]; !seen || *o.CompleteTS < t {
				firstAck[o.Key] = *o.CompleteTS
			}
		}
	}
	var out []DirtyRead
	seen := map[string]bool{}
	for i := range ops {
		o := &ops[i]
		if !ok(o) || seen[o.Key] {
			continue
		}
		if t, acked := firstAck[o.Key]; acked && o.InvokeTS > t {
			continue
		}
		var val string
		switch o.OpType {
		case "read", "get":
			val = canon(o.Output)
		case "cas":
			var pair []json.RawMessage
			if canon(o.Output) != "true" || json.Unmarshal(o.Input, &pair) != nil || len(pair) != 2 {
				continue
			}
			val = canon(pair[0])
		default:
			continue
		}
		if val == "" || val == "null" || wrote[o.Key][val] {
			continue
		}
		seen[o.Key] = true
		out = append(out, DirtyRead{Key: o.Key, Value: val, OpType: map[bool]string{true: "cas", false: "read"}[o.OpType == "cas"],
			OpID: o.OpID, ProcessID: o.ProcessID, Line: o.Line})
	}
	return out
}

// withoutKeysWhole drops the ops on the dirty keys.
func withoutKeysWhole(ops []history.Op, dirty []DirtyRead) []history.Op {
	bad := map[string]bool{}
	for _, d := range dirty {
		bad[d.Key] = true
	}
	return slices.DeleteFunc(slices.Clone(ops), func(o history.Op) bool { return bad[o.Key] })
}

// TestDirtyPerKeyMatchesWhole: on kv histories with left-over reads and
// cas planted on some keys, the per-key scan inside the partitioning
// lists the same dirty reads in the same order as the whole-history pass,
// and checks exactly the ops of the other keys.
func TestDirtyPerKeyMatchesWhole(t *testing.T) {
	errs, dirtyKeys := 0, 0
	for seed := uint64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		ops := fixture.KVTimeouts(2000, 30, 8, 0.1, seed)
		for i := range ops {
			if ops[i].OpType == "read" && ops[i].CompleteTS != nil && rng.IntN(200) == 0 {
				ops[i].Output = json.RawMessage(fmt.Sprintf(`"old-%d"`, i))
			}
			op := &ops[i]
			switch rng.IntN(300) {
			case 0, 1: // a cas that succeeded expecting a value nobody wrote
				op.OpType, op.Input, op.Output, op.Error = "cas", json.RawMessage(fmt.Sprintf(`["gone-%d","new-%d"]`, i, i)), json.RawMessage("true"), ""
				if op.CompleteTS == nil {
					c := op.InvokeTS + 5
					op.CompleteTS, op.TimeoutMarker = &c, false
				}
			case 2: // a cas that failed or timed out: still a possible writer
				op.OpType, op.Input, op.Output = "cas", json.RawMessage(fmt.Sprintf(`["x","new-%d"]`, i)), json.RawMessage("false")
				if op.CompleteTS == nil {
					op.Output = nil
				}
			case 3: // a write that failed: still a possible writer
				if op.OpType == "write" && op.CompleteTS != nil {
					op.Error = "refused"
				}
			case 4: // an op the model rejects (reported unless its key is dirty)
				if seed%4 == 0 {
					op.OpType = "append"
				}
			}
		}
		if seed%4 == 1 { // an op the model rejects, on a dirty key: not judged, no error
			last := ops[len(ops)-1]
			c := last.InvokeTS + 100
			ops = append(ops, history.Op{OpID: "r-fresh", ProcessID: "p0", InvokeTS: last.InvokeTS + 10, CompleteTS: &c, OpType: "read", Key: "fresh", Output: json.RawMessage(`"old"`)},
				history.Op{OpID: "a-fresh", ProcessID: "p1", InvokeTS: last.InvokeTS + 20, CompleteTS: &c, OpType: "append", Key: "fresh", Input: json.RawMessage(`1`)})
		}
		want := findDirtyWhole("kv", ops)
		clean := withoutKeysWhole(ops, want)
		pl, err := partitionOps(linModels["kv"], ops, "h", linOpts{prune: true, dirty: true})
		_, refErr := partitionOps(linModels["kv"], clean, "h", linOpts{prune: true})
		if fmt.Sprint(err) != fmt.Sprint(refErr) {
			t.Fatalf("seed %d: error %v, want %v", seed, err, refErr)
		}
		dirtyKeys += len(want)
		if err != nil {
			errs++
			continue
		}
		if !reflect.DeepEqual(pl.dirty, want) && (len(pl.dirty) > 0 || len(want) > 0) {
			t.Fatalf("seed %d: dirty %+v, want %+v", seed, pl.dirty, want)
		}
		if pl.consumed != len(clean) {
			t.Fatalf("seed %d: consumed %d, want %d", seed, pl.consumed, len(clean))
		}
		ref, err := partitionOps(linModels["kv"], clean, "h", linOpts{prune: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(ref.parts) != len(pl.parts) {
			t.Fatalf("seed %d: %d partitions, want %d", seed, len(pl.parts), len(ref.parts))
		}
		for i := range ref.parts {
			g, w := pl.parts[i], ref.parts[i]
			if g.key != w.key || len(g.ops) != len(w.ops) {
				t.Fatalf("seed %d partition %d: key %q %d ops, want %q %d", seed, i, g.key, len(g.ops), w.key, len(w.ops))
			}
			for j := range w.ops {
				if !sameOp(g.ops[j], w.ops[j]) || clean[w.idx[j]].OpID != ops[g.idx[j]].OpID {
					t.Fatalf("seed %d key %q op %d differs", seed, w.key, j)
				}
			}
		}
	}
	if errs != 10 || dirtyKeys < 20 {
		t.Fatalf("%d histories with a rejected op on a clean key (want the 10 that plant one), %d dirty keys: the comparison is not exercised", errs, dirtyKeys)
	}
}
