package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// checkReconciliation (docs/history-and-checkers.md §5.13) diffs every replica's dump against the
// first (by name); all must be equal.
func checkReconciliation(ctx context.Context, f *FinalState) Result {
	b := newBudget(ctx)
	res := Result{Scope: "compares dumps taken at quiescence; divergence that converged before the dump is not seen"}
	nodes := slices.Sorted(maps.Keys(f.Replicas))
	if len(nodes) < 2 {
		res.Outcome = Unknown
		res.Reason = fmt.Sprintf("reconciliation needs at least 2 replica dumps, have %d", len(nodes))
		return res
	}
	keys := map[string]bool{}
	for _, n := range nodes {
		for k := range f.Replicas[n] {
			if b.spent() {
				return b.settle(res)
			}
			keys[k] = true
		}
	}
	sorted := slices.Sorted(maps.Keys(keys))
	res.OpsConsumed = len(sorted) * len(nodes)
	var an anomalies
	ref := nodes[0]
	for _, k := range sorted {
		if b.spent() {
			break
		}
		rv, rok := f.Replicas[ref][k]
		var diff []string
		for _, n := range nodes[1:] {
			v, vok := f.Replicas[n][k]
			if vok != rok || canon(v) != canon(rv) {
				diff = append(diff, n)
			}
		}
		if len(diff) > 0 {
			an.add(Anomaly{Kind: "replica-divergence", Key: k,
				Message: fmt.Sprintf("key %q: %s differs from %s (%s)", k, strings.Join(diff, ", "), ref, show(rv, rok))})
		}
	}
	return b.finish(res, &an)
}

func show(v json.RawMessage, present bool) string {
	if !present {
		return "absent"
	}
	s := canon(v)
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
