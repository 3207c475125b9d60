package checker

import (
	"context"
	"fmt"

	"github.com/dstgen/dstgen/history"
)

// checkSession (docs/history-and-checkers.md §5.7, read-your-writes): an ok read in session s on
// key k must return the value of s's last write to k acknowledged before
// the read began, or a value some write not strictly before that one
// wrote. Values identify writes, so they should be unique per write.
func checkSession(ctx context.Context, ops []history.Op) (Result, error) {
	b := newBudget(ctx)
	res := Result{OpsConsumed: len(ops),
		Scope: "read-your-writes per process_id by written value (values must be unique per write); no cross-session guarantee is checked; reconnects must be new process_ids"}
	writes := map[string][]*history.Op{}
	for i := range ops {
		if b.spent() {
			return b.settle(res), nil
		}
		o := &ops[i]
		if _, isW := written(o); isW && !failed(o) {
			writes[o.Key] = append(writes[o.Key], o)
		}
	}
	var an anomalies
reads:
	for i := range ops {
		r := &ops[i]
		if (r.OpType != "read" && r.OpType != "get") || !ok(r) {
			continue
		}
		var last *history.Op
		for _, w := range writes[r.Key] {
			if b.spent() {
				break reads // a read half compared is not judged
			}
			if w.ProcessID == r.ProcessID && ok(w) && *w.CompleteTS < r.InvokeTS && (last == nil || *w.CompleteTS > *last.CompleteTS) {
				last = w
			}
		}
		if last == nil {
			continue
		}
		got := canon(r.Output)
		lv, _ := written(last)
		good := got == lv
		for _, w := range writes[r.Key] {
			if good {
				break
			}
			if b.spent() {
				break reads
			}
			if v, _ := written(w); v == got && end(w) > last.InvokeTS && w.InvokeTS < *r.CompleteTS {
				good = true
			}
		}
		if !good {
			an.add(Anomaly{Kind: "read-your-writes", Key: r.Key, OpIDs: []string{r.OpID, last.OpID}, FaultEpoch: r.FaultEpoch,
				WindowStart: last.InvokeTS, WindowEnd: *r.CompleteTS,
				Message: fmt.Sprintf("session %s key %q: read %s (op %s, line %d) after its own acked write of %s (op %s)", r.ProcessID, r.Key, got, r.OpID, r.Line, lv, last.OpID)})
		}
	}
	return b.finish(res, &an), nil
}
