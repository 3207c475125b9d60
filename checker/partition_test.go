package checker

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
)

// partitionsByAppend is the straightforward grouping buildPartitions must
// match: one pass in history order, a partition per key at its first kept
// op, clients numbered at their first kept op.
func partitionsByAppend(m *modelDef, ops []history.Op, infinity int64) []*partition {
	byKey := map[string]*partition{}
	var parts []*partition
	clients := map[string]int{}
	var slab opSlab
	for i := range ops {
		po, keep, err := m.convert(&ops[i], infinity, &slab)
		if err != nil || !keep {
			continue
		}
		p := byKey[ops[i].Key]
		if p == nil {
			p = &partition{key: ops[i].Key}
			byKey[ops[i].Key] = p
			parts = append(parts, p)
		}
		id, ok := clients[ops[i].ProcessID]
		if !ok {
			id = len(clients)
			clients[ops[i].ProcessID] = id
		}
		po.ClientId = id
		p.ops = append(p.ops, po)
		p.idx = append(p.idx, i)
	}
	for _, p := range parts {
		dropUnobserved(p)
	}
	return parts
}

// TestBuildPartitionsMatchesAppend checks the counting-sort grouping
// against the plain one on random kv histories with failed ops, timed-out
// writes and reads, and keys whose every op is dropped.
func TestBuildPartitionsMatchesAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	m := linModels["kv"]
	for round := 0; round < 100; round++ {
		n := 1 + rng.IntN(20_000)
		if round%10 != 0 {
			n = 1 + rng.IntN(300)
		}
		ops := make([]history.Op, n)
		var maxTS int64
		for i := range ops {
			inv := int64(i * 10)
			c := inv + int64(rng.IntN(50))
			op := history.Op{OpID: strconv.Itoa(i + 1), ProcessID: "p" + strconv.Itoa(rng.IntN(8)), InvokeTS: inv, CompleteTS: &c,
				Key: "k" + strconv.Itoa(rng.IntN(12)), OpType: "read", Output: []byte(strconv.Itoa(rng.IntN(5)))}
			if rng.IntN(2) == 0 {
				op.OpType, op.Input, op.Output = "write", []byte(strconv.Itoa(rng.IntN(5))), nil
			}
			switch rng.IntN(8) {
			case 0:
				op.Error, op.Output = "refused", nil
			case 1:
				op.CompleteTS, op.TimeoutMarker, op.Output = nil, true, nil
			}
			if op.Key == "k11" { // a key no kept op touches
				op.Error, op.Output = "refused", nil
			}
			ops[i] = op
			if op.CompleteTS != nil {
				maxTS = max(maxTS, *op.CompleteTS)
			}
			maxTS = max(maxTS, op.InvokeTS)
		}
		got, err := buildPartitions(m, ops, "h.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		want := partitionsByAppend(m, ops, maxTS+1)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d partitions, want %d", round, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.key != w.key || !reflect.DeepEqual(g.idx, w.idx) || len(g.ops) != len(w.ops) {
				t.Fatalf("round %d partition %d: key %q idx %v, want key %q idx %v", round, i, g.key, g.idx, w.key, w.idx)
			}
			for j := range w.ops {
				if !sameOp(g.ops[j], w.ops[j]) {
					t.Fatalf("round %d key %q op %d: %+v, want %+v", round, w.key, j, g.ops[j], w.ops[j])
				}
			}
		}
	}
}

func sameOp(a, b porcupine.Operation) bool {
	return a.ClientId == b.ClientId && a.Call == b.Call && a.Return == b.Return &&
		*a.Input.(*linIn) == *b.Input.(*linIn) && *a.Output.(*linOut) == *b.Output.(*linOut)
}
