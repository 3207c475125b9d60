package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/dstgen/dstgen/history"
)

// maxAnomalies bounds the anomalies listed by the non-porcupine checkers;
// the count beyond it is summarised in one more anomaly.
const maxAnomalies = 100

func ok(o *history.Op) bool      { return !o.TimeoutMarker && o.CompleteTS != nil && o.Error == "" }
func unknown(o *history.Op) bool { return o.TimeoutMarker || o.CompleteTS == nil }

// failed is an op that definitely did not take effect: an error answer, as
// opposed to a timeout, which may have.
func failed(o *history.Op) bool { return o.Error != "" && !unknown(o) }

// end is an op's completion, +inf when unknown.
func end(o *history.Op) int64 {
	if unknown(o) {
		return math.MaxInt64
	}
	return *o.CompleteTS
}

// written returns the value a write-like op writes and whether it is one:
// write/put/append/enqueue/add/insert/credit/debit/join carry it in input; a
// cas in input[1] (only when it did not report false).
func written(o *history.Op) (string, bool) {
	switch o.OpType {
	case "write", "put", "append", "enqueue", "add", "insert", "credit", "debit", "join":
		return canon(o.Input), true
	case "cas":
		if canon(o.Output) == "false" {
			return "", false
		}
		var pair []json.RawMessage
		if json.Unmarshal(o.Input, &pair) != nil || len(pair) != 2 {
			return "", false
		}
		return canon(pair[1]), true
	}
	return "", false
}

type anomalies struct {
	list    []Anomaly
	dropped int
}

func (a *anomalies) add(x Anomaly) {
	if len(a.list) < maxAnomalies {
		a.list = append(a.list, x)
		return
	}
	a.dropped++
}

func (a *anomalies) done() []Anomaly {
	if a.dropped > 0 {
		a.list = append(a.list, Anomaly{Kind: "more", Count: a.dropped, Message: fmt.Sprintf("%d more anomalies not listed", a.dropped)})
	}
	return a.list
}

func elements(raw json.RawMessage) ([]string, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) != nil {
		return nil, false
	}
	s := make([]string, len(arr))
	for i, e := range arr {
		s[i] = canon(e)
	}
	return s, true
}

// runFinal runs the checkers that judge a final state.
func runFinal(ctx context.Context, id string, spec Spec, ops []history.Op, f *FinalState) (Result, error) {
	switch id {
	case NoLostAck:
		return checkNoLostAck(ctx, ops, f), nil
	case ExactlyOnce:
		return checkExactlyOnce(ctx, ops, f, spec.Params)
	case Invariant:
		return checkInvariant(ctx, ops, f, spec.Params)
	default:
		return checkReconciliation(ctx, f), nil
	}
}

// pollEvery is how many loop steps a checker takes between looks at its
// time limit: ctx.Err takes a lock, and the inner loops run millions of
// steps on a large history.
const pollEvery = 1 << 10

// budget is a checker's time limit, polled from its loops (the limit the
// package doc promises: over time is Unknown, never a pass). Once spent it
// stays spent, so every loop after the first to notice stops at once.
type budget struct {
	ctx   context.Context
	steps int
	over  bool
}

// newBudget starts a budget; a limit already spent is spent from the
// first step, so nothing is decided past it.
func newBudget(ctx context.Context) *budget {
	return &budget{ctx: ctx, over: ctx.Err() != nil}
}

// spent counts one loop step and reports whether the limit has passed.
func (b *budget) spent() bool {
	if b.over {
		return true
	}
	b.steps++
	if b.steps%pollEvery == 0 && b.ctx.Err() != nil {
		b.over = true
	}
	return b.over
}

// settle gives a check the time limit cut short its outcome: the
// anomalies found in time stand (Invalid), and with none it is Unknown,
// never Valid. A check that ended after its limit counts as cut short, as
// in the linearizability checker.
func (b *budget) settle(res Result) Result {
	if !b.over && b.ctx.Err() == nil {
		return res
	}
	b.over = true
	if len(res.Anomalies) > 0 {
		res.Outcome = Invalid
		res.Reason = appendReason(res.Reason, "time limit reached before the check finished; the anomalies listed were found in time")
		return res
	}
	res.Outcome = Unknown
	res.Reason = appendReason(res.Reason, "time limit reached before the check finished")
	return res
}

// finish closes a check: the anomalies found, then settle.
func (b *budget) finish(res Result, an *anomalies) Result {
	res.Anomalies = an.done()
	return b.settle(res)
}
