package checker

import (
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
		a.list = append(a.list, Anomaly{Kind: "more", Message: fmt.Sprintf("%d more anomalies not listed", a.dropped)})
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

func runFinal(id string, spec Spec, ops []history.Op, f *FinalState) (Result, error) {
	switch id {
	case NoLostAck:
		return checkNoLostAck(ops, f), nil
	case ExactlyOnce:
		return checkExactlyOnce(ops, f, spec.Params)
	case Invariant:
		return checkInvariant(ops, f, spec.Params)
	default:
		return checkReconciliation(f), nil
	}
}
