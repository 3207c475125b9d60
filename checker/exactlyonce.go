package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/dstgen/dstgen/history"
)

// checkExactlyOnce (docs/history-and-checkers.md §5.11) groups write-like ops by the business
// idempotency key in input (param idem_field, default "idempotency_key";
// a scalar input is its own key) and counts committed effects in F: the
// elements of F.keys[effects_key] (param; default every array in F).
func checkExactlyOnce(ctx context.Context, ops []history.Op, f *FinalState, params map[string]string) (Result, error) {
	b := newBudget(ctx)
	field := params["idem_field"]
	if field == "" {
		field = "idempotency_key"
	}
	res := Result{OpsConsumed: len(ops),
		Scope: "counts effects visible in the final state only; effects consumed before the dump are invisible; keyed on input." + field + ", never op_id"}
	type group struct {
		ops   []*history.Op
		acked bool
	}
	var an anomalies
	groups := map[string]*group{}
	var order []string
	for i := range ops {
		if b.spent() {
			return b.finish(res, &an), nil
		}
		o := &ops[i]
		if _, isW := written(o); !isW {
			continue
		}
		id, found := idemOf(o.Input, field)
		if !found {
			continue
		}
		g := groups[id]
		if g == nil {
			g = &group{}
			groups[id] = g
			order = append(order, id)
		}
		g.ops = append(g.ops, o)
		g.acked = g.acked || ok(o)
	}
	if len(groups) == 0 {
		return res, fmt.Errorf("exactly-once: no write carries idempotency key %q in input (set param idem_field)", field)
	}
	var lists []string
	if k := params["effects_key"]; k != "" {
		lists = []string{k}
	} else {
		lists = slices.Sorted(maps.Keys(f.Keys))
	}
	effects := map[string]int{}
	for _, k := range lists {
		var arr []json.RawMessage
		if json.Unmarshal(f.Keys[k], &arr) != nil {
			if params["effects_key"] != "" {
				return res, fmt.Errorf("exactly-once: final state key %q is not a JSON array of effects", k)
			}
			continue
		}
		for _, e := range arr {
			if b.spent() {
				// Effects half counted would read as lost ones.
				return b.finish(res, &an), nil
			}
			if id, found := idemOf(e, field); found {
				effects[id]++
			}
		}
	}
	for _, id := range order {
		if b.spent() {
			break
		}
		g := groups[id]
		ids := make([]string, len(g.ops))
		for i, o := range g.ops {
			ids[i] = o.OpID
		}
		switch n := effects[id]; {
		case n > 1:
			an.add(Anomaly{Kind: "duplicate-effect", Key: id, OpIDs: ids,
				Message: fmt.Sprintf("idempotency key %s: %d effects in the final state from %d requests", id, n, len(g.ops))})
		case n == 0 && g.acked:
			an.add(Anomaly{Kind: "lost-effect", Key: id, OpIDs: ids,
				Message: fmt.Sprintf("idempotency key %s: acknowledged but no effect in the final state", id)})
		}
	}
	return b.finish(res, &an), nil
}
