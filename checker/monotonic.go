package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/dstgen/dstgen/history"
)

// checkMonotonic (docs/history-and-checkers.md §5.8): per (process, key), ok reads in invoke order
// never go back in version. The version must be the SUT's own, so a plain
// read value counts as a version only for the counter model or with param
// version_from=value (sequence ids); an object output's field version_field
// (param, default "version") always does. Otherwise the only order known
// without the SUT is real time between the writes: a read that returns a
// value whose write completed before the previous read's write was invoked
// went back. Overlapping writes are left unjudged (their SUT order is
// unknown), so a history with concurrent writers is never flagged on the
// writers' value order.
func checkMonotonic(ctx context.Context, model string, ops []history.Op, params map[string]string) (Result, error) {
	b := newBudget(ctx)
	field := params["version_field"]
	if field == "" {
		field = "version"
	}
	valueIsVersion := model == "counter" || params["version_from"] == "value"
	res := Result{OpsConsumed: len(ops),
		Scope: "versions come from read outputs (." + field + ", or the value itself for counters / version_from=value); without them, from real-time order between the writes, so reads of concurrently written values are not judged"}
	writer := map[string]map[string]*history.Op{}
	for i := range ops {
		if b.spent() {
			return b.settle(res), nil
		}
		w := &ops[i]
		v, isW := written(w)
		if !isW || w.Error != "" {
			continue
		}
		if writer[w.Key] == nil {
			writer[w.Key] = map[string]*history.Op{}
		}
		if _, seen := writer[w.Key][v]; !seen {
			writer[w.Key][v] = w
		}
	}
	// sutVersion is the SUT's own version of a read, when it has one.
	sutVersion := func(o *history.Op) (float64, bool) {
		var m map[string]json.RawMessage
		if json.Unmarshal(o.Output, &m) == nil {
			if n, err := strconv.ParseFloat(canon(m[field]), 64); err == nil {
				return n, true
			}
		}
		if valueIsVersion {
			if n, err := strconv.ParseFloat(canon(o.Output), 64); err == nil {
				return n, true
			}
		}
		return 0, false
	}
	// wentBack reports whether r's value is definitely older than prev's:
	// by the SUT's versions when both have one, else by real time between
	// the writes that produced them (null is the initial value, older than
	// any write).
	wentBack := func(prev, r *history.Op) bool {
		if pv, ok1 := sutVersion(prev); ok1 {
			if rv, ok2 := sutVersion(r); ok2 {
				return rv < pv
			}
		}
		if r.Output == nil || canon(r.Output) == "null" {
			return prev.Output != nil && canon(prev.Output) != "null"
		}
		wp, wr := writer[prev.Key][canon(prev.Output)], writer[r.Key][canon(r.Output)]
		if wp == nil || wr == nil || wp == wr {
			return false
		}
		return end(wr) < wp.InvokeTS
	}
	type pk struct{ p, k string }
	reads := map[pk][]*history.Op{}
	var order []pk
	for i := range ops {
		if b.spent() {
			return b.settle(res), nil
		}
		o := &ops[i]
		if (o.OpType == "read" || o.OpType == "get") && ok(o) {
			key := pk{o.ProcessID, o.Key}
			if _, seen := reads[key]; !seen {
				order = append(order, key)
			}
			reads[key] = append(reads[key], o)
		}
	}
	var an anomalies
pairs:
	for _, key := range order {
		rs := reads[key]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].InvokeTS < rs[j].InvokeTS })
		for i := 1; i < len(rs); i++ {
			if b.spent() {
				break pairs
			}
			prev, r := rs[i-1], rs[i]
			if wentBack(prev, r) {
				an.add(Anomaly{Kind: "non-monotonic-read", Key: key.k, OpIDs: []string{prev.OpID, r.OpID}, FaultEpoch: r.FaultEpoch,
					WindowStart: prev.InvokeTS, WindowEnd: *r.CompleteTS,
					Message: fmt.Sprintf("process %s key %q: read %s (op %s) after %s (op %s): version went back", key.p, key.k, canon(r.Output), r.OpID, canon(prev.Output), prev.OpID)})
			}
		}
	}
	return b.finish(res, &an), nil
}
