package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/dstgen/dstgen/history"
)

// checkNoLostAck (docs/history-and-checkers.md §5.10): every acked write is in F. For a key whose
// final value is a JSON array (log, set, delivered queue items) membership
// is required; for a scalar the final value must be one a write could have
// left last: the last acked write or one not strictly before it.
func checkNoLostAck(ctx context.Context, ops []history.Op, f *FinalState) Result {
	b := newBudget(ctx)
	res := Result{OpsConsumed: len(ops),
		Scope: "unknown (timed-out) writes are neither acked nor rejected; overwritten register values are judged only by the last possible writer; deletes are not modelled"}
	var an anomalies
	type w struct {
		op  *history.Op
		val string
	}
	byKey := map[string][]w{}
	var keys []string
	for i := range ops {
		if b.spent() {
			return b.finish(res, &an)
		}
		o := &ops[i]
		v, isW := written(o)
		if !isW || failed(o) {
			continue
		}
		if _, seen := byKey[o.Key]; !seen {
			keys = append(keys, o.Key)
		}
		byKey[o.Key] = append(byKey[o.Key], w{o, v})
	}
keys:
	for _, k := range keys {
		ws := byKey[k]
		final, present := f.Keys[k]
		if elems, isArr := elements(final); present && isArr {
			in := map[string]bool{}
			for _, e := range elems {
				in[e] = true
			}
			for _, x := range ws {
				if b.spent() {
					break keys
				}
				if ok(x.op) && !in[x.val] {
					an.add(Anomaly{Kind: "lost-ack", Key: k, OpIDs: []string{x.op.OpID}, FaultEpoch: x.op.FaultEpoch,
						WindowStart: x.op.InvokeTS, WindowEnd: end(x.op),
						Message: fmt.Sprintf("key %q: acked %s of %s (op %s, line %d) missing from the final state", k, x.op.OpType, x.val, x.op.OpID, x.op.Line)})
				}
			}
			continue
		}
		var acked []w
		lastInvoke := int64(math.MinInt64) // the latest invoke of an acked write
		for _, x := range ws {
			if ok(x.op) {
				acked = append(acked, x)
				lastInvoke = max(lastInvoke, x.op.InvokeTS)
			}
		}
		if len(acked) == 0 {
			continue
		}
		if !present {
			last := acked[len(acked)-1]
			an.add(Anomaly{Kind: "lost-ack", Key: k, OpIDs: []string{last.op.OpID},
				Message: fmt.Sprintf("key %q: %d acked writes but the key is absent from the final state", k, len(acked))})
			continue
		}
		got := canon(final)
		var candidates []string
		match := false
		for _, x := range ws {
			if b.spent() {
				break keys
			}
			// x could have been last unless some acked write started
			// after x ended.
			if lastInvoke <= end(x.op) {
				candidates = append(candidates, x.val)
				match = match || x.val == got
			}
		}
		if !match {
			var ids []string
			for _, x := range acked {
				ids = append(ids, x.op.OpID)
			}
			an.add(Anomaly{Kind: "lost-ack", Key: k, OpIDs: ids[max(0, len(ids)-3):],
				Message: fmt.Sprintf("key %q: final value %s is none of the values a last write could have left (%s)", k, got, strings.Join(candidates, ", "))})
		}
	}
	return b.finish(res, &an)
}

func idemOf(raw json.RawMessage, field string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		if v, ok := m[field]; ok {
			return canon(v), true
		}
		return "", false
	}
	if len(raw) == 0 {
		return "", false
	}
	return canon(raw), true
}
