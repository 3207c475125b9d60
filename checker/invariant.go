package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/dstgen/dstgen/history"
)

// checkInvariant (docs/history-and-checkers.md §5.12) evaluates one predicate over F (param
// predicate): sum-zero (every number under F.keys, or under key, sums to
// 0), each-member-once (the array F.keys[key] lists every member joined and
// not left exactly once, no duplicates), count-equals (F.keys[key] has
// count elements, or equals count).
func checkInvariant(ctx context.Context, ops []history.Op, f *FinalState, params map[string]string) (Result, error) {
	b := newBudget(ctx)
	res := Result{OpsConsumed: len(ops), Scope: "final state only: transient violations during the run are not seen; quiescence is assumed"}
	pred, key := params["predicate"], params["key"]
	var an anomalies
	switch pred {
	case "sum-zero":
		var sum float64
		for k, v := range f.Keys {
			if b.spent() {
				return b.finish(res, &an), nil // a partial sum proves nothing
			}
			if key != "" && k != key {
				continue
			}
			sum += sumNumbers(v)
		}
		if math.Abs(sum) > 1e-9 {
			an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("sum-zero: final values sum to %g", sum)})
		}
	case "each-member-once":
		if key == "" {
			return res, fmt.Errorf("invariant each-member-once: param key (the member list) is required")
		}
		elems, isArr := elements(f.Keys[key])
		if !isArr {
			return res, fmt.Errorf("invariant each-member-once: final state key %q is not a JSON array", key)
		}
		count := map[string]int{}
		for _, e := range elems {
			if b.spent() {
				return b.finish(res, &an), nil
			}
			count[e]++
		}
		for e, n := range count {
			if n > 1 {
				an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("member %s listed %d times", e, n)})
			}
		}
		member := map[string]bool{}
		var joined []string
		for i := range ops {
			if b.spent() {
				// Membership half replayed would miss later leaves.
				return b.finish(res, &an), nil
			}
			o := &ops[i]
			if !ok(o) {
				continue
			}
			switch o.OpType {
			case "join":
				if !member[canon(o.Input)] {
					joined = append(joined, canon(o.Input))
				}
				member[canon(o.Input)] = true
			case "leave":
				member[canon(o.Input)] = false
			}
		}
		for _, m := range joined {
			if member[m] && count[m] == 0 {
				an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("member %s joined (acked) but is not listed", m)})
			}
		}
	case "count-equals":
		want, err := strconv.ParseFloat(params["count"], 64)
		if err != nil || key == "" {
			return res, fmt.Errorf("invariant count-equals: params key and numeric count are required")
		}
		if b.spent() {
			return b.finish(res, &an), nil // no loop to stop: judge nothing past the limit
		}
		var got float64
		if elems, isArr := elements(f.Keys[key]); isArr {
			got = float64(len(elems))
		} else if got, err = strconv.ParseFloat(canon(f.Keys[key]), 64); err != nil {
			return res, fmt.Errorf("invariant count-equals: final state key %q is neither an array nor a number", key)
		}
		if got != want {
			an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("count-equals: %q has %g, want %g", key, got, want)})
		}
	default:
		return res, fmt.Errorf("invariant: unknown predicate %q (want sum-zero, each-member-once, count-equals)", pred)
	}
	return b.finish(res, &an), nil
}

func sumNumbers(raw json.RawMessage) float64 {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	var walk func(any) float64
	walk = func(v any) float64 {
		switch x := v.(type) {
		case float64:
			return x
		case []any:
			s := 0.0
			for _, e := range x {
				s += walk(e)
			}
			return s
		case map[string]any:
			s := 0.0
			for _, e := range x {
				s += walk(e)
			}
			return s
		}
		return 0
	}
	return walk(v)
}
