package checker

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

// checkPrefix (docs/history-and-checkers.md §5.9): the canonical order G is the producer ops
// (enqueue/append, not failed) by invoke time; each consumer's observed
// sequence must follow G with no insertions, duplicates, reorderings or
// skips more than window (param, default 0) positions apart, and only
// between producer ops ordered in real time (one completed before the
// other was invoked): concurrent enqueues have no order the history can
// prove, so flagging them would blame the SUT for the checker's guess. mode (param):
// broadcast (every consumer sees everything: log reads) or competing
// (consumers share the stream: queue dequeues); default by model.
func checkPrefix(ctx context.Context, file, model string, ops []history.Op, params map[string]string) (Result, error) {
	b := newBudget(ctx)
	w := 0
	if s := params["window"]; s != "" {
		var err error
		if w, err = strconv.Atoi(s); err != nil || w < 0 {
			return Result{}, fmt.Errorf("prefix: window must be a non-negative integer, got %q", s)
		}
	}
	mode := params["mode"]
	if mode == "" {
		mode = "broadcast"
		if model == "queue" {
			mode = "competing"
		}
	}
	if mode != "broadcast" && mode != "competing" {
		return Result{}, fmt.Errorf("prefix: mode must be broadcast or competing, got %q", mode)
	}
	res := Result{OpsConsumed: len(ops),
		Scope: fmt.Sprintf("canonical order is producer real-time order (%s consumers, window %d): a reorder or skip is flagged only between producer ops that did not overlap, since the SUT may order concurrent ones either way", mode, w)}
	var prod []*history.Op
	for i := range ops {
		if b.spent() {
			return b.settle(res), nil
		}
		o := &ops[i]
		if (o.OpType == "enqueue" || o.OpType == "append") && !failed(o) {
			prod = append(prod, o)
		}
	}
	sort.SliceStable(prod, func(i, j int) bool { return prod[i].InvokeTS < prod[j].InvokeTS })
	pos := map[string]int{}
	for i, o := range prod {
		pos[canon(o.Input)] = i
	}
	type seq struct {
		proc string
		vals []string
		ops  []*history.Op
	}
	var seqs []*seq
	byProc := map[string]*seq{}
	for i := range ops {
		if b.spent() {
			return b.settle(res), nil
		}
		o := &ops[i]
		if !ok(o) {
			continue
		}
		switch {
		case o.OpType == "dequeue" && o.Output != nil:
			s := byProc[o.ProcessID]
			if s == nil {
				s = &seq{proc: o.ProcessID}
				byProc[o.ProcessID] = s
				seqs = append(seqs, s)
			}
			s.vals = append(s.vals, canon(o.Output))
			s.ops = append(s.ops, o)
		case o.OpType == "read" && (model == "log" || mode == "broadcast"):
			vals, isArr := elements(o.Output)
			if !isArr && o.Output != nil {
				return res, fileline.Errorf(file, o.Line, "log read output must be a JSON array")
			}
			opsFor := make([]*history.Op, len(vals))
			for i := range opsFor {
				opsFor[i] = o
			}
			seqs = append(seqs, &seq{proc: o.ProcessID, vals: vals, ops: opsFor})
		}
	}
	var an anomalies
	consumed := map[string]bool{}
	maxPos := -1
	// A consumer half judged would read as skips: on time out the
	// anomalies found so far stand and nothing more is judged.
seqs:
	for _, s := range seqs {
		seen := map[string]bool{}
		hi := -1
		for i, v := range s.vals {
			if b.spent() {
				break seqs
			}
			o := s.ops[i]
			p, inG := pos[v]
			switch {
			case !inG:
				an.add(Anomaly{Kind: "insertion", Key: o.Key, OpIDs: []string{o.OpID},
					Message: fmt.Sprintf("consumer %s saw %s (op %s, line %d), which no producer sent", s.proc, v, o.OpID, o.Line)})
				continue
			case seen[v] || (mode == "competing" && consumed[v]):
				an.add(Anomaly{Kind: "duplicate", Key: o.Key, OpIDs: []string{o.OpID},
					Message: fmt.Sprintf("consumer %s received %s again (op %s, line %d)", s.proc, v, o.OpID, o.Line)})
			case p < hi-w && end(prod[p]) < prod[hi].InvokeTS:
				an.add(Anomaly{Kind: "reorder", Key: o.Key, OpIDs: []string{o.OpID, prod[hi].OpID},
					Message: fmt.Sprintf("consumer %s saw %s (producer position %d) after position %d (window %d)", s.proc, v, p, hi, w)})
			}
			seen[v], consumed[v] = true, true
			hi = max(hi, p)
		}
		if mode == "broadcast" {
			for q := 0; q < hi-w; q++ {
				if b.spent() {
					break seqs
				}
				if ok(prod[q]) && !seen[canon(prod[q].Input)] && end(prod[q]) < prod[hi].InvokeTS {
					an.add(Anomaly{Kind: "skip", Key: prod[q].Key, OpIDs: []string{prod[q].OpID},
						Message: fmt.Sprintf("consumer %s skipped %s (producer position %d) but saw position %d", s.proc, canon(prod[q].Input), q, hi)})
				}
			}
		}
		maxPos = max(maxPos, hi)
	}
	if mode == "competing" && !b.over {
		for q := 0; q < maxPos-w; q++ {
			if b.spent() {
				break
			}
			if ok(prod[q]) && !consumed[canon(prod[q].Input)] && end(prod[q]) < prod[maxPos].InvokeTS {
				an.add(Anomaly{Kind: "skip", Key: prod[q].Key, OpIDs: []string{prod[q].OpID},
					Message: fmt.Sprintf("%s (producer position %d) was never consumed though position %d was", canon(prod[q].Input), q, maxPos)})
			}
		}
	}
	return b.finish(res, &an), nil
}
