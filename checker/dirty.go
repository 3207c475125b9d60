package checker

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/history"
)

// DirtyRead is evidence that the SUT did not start empty: an op observed a
// value no op in the history wrote. For models whose written values are
// unique (kv, register) that value was left by an earlier run (a second
// benchmark on the same cluster, keys reused), so it says nothing about
// the SUT's consistency: it is a harness/environment problem.
type DirtyRead struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	OpType    string `json:"op_type"` // "read" (observed it) or "cas" (succeeded expecting it)
	OpID      string `json:"op_id"`
	ProcessID string `json:"process_id"`
	Line      int    `json:"line"` // line in the history file
}

// String renders the evidence with the op's history line.
func (d DirtyRead) String() string {
	verb := "read"
	if d.OpType == "cas" {
		verb = "cas succeeded expecting"
	}
	return fmt.Sprintf("process %s key %q %s %s, which no op in the history wrote (op %s, line %d)", d.ProcessID, d.Key, verb, d.Value, d.OpID, d.Line)
}

// DirtyAdvice is what to do about a dirty initial state.
const DirtyAdvice = "start from an empty SUT: clean its data dir (task clean:data) before the run, or namespace keys per run (e.g. prefix them with the run id)"

// uniqueValueModel reports models whose written values identify their
// write, so a value nobody wrote can only be left-over state.
func uniqueValueModel(model string) bool {
	switch normalizeModel(model) {
	case "kv", "map", "register":
		return true
	}
	return false
}

// dirtyKey finds the first op of one key (kops: its ops' indexes in ops,
// in history order) that observed a value no op of the key wrote before
// any acknowledged write to the key had completed: an ok read whose output
// is not null (the initial value), or a cas that succeeded (output true)
// with an expected value nobody wrote. Every write attempt counts as a
// writer, failed or timed out included, so only a value from outside the
// history is flagged. at is the op's index in ops. Only the models whose
// written values are unique (uniqueValueModel) may call it: elsewhere a
// value can be written twice and the rule says nothing.
func dirtyKey(ops []history.Op, kops []int) (d DirtyRead, at int, found bool) {
	var wrote map[string]bool
	// firstAck is when the key's first acknowledged write completed: from
	// then on left-over state is overwritten, so a value nobody wrote read
	// after it is a real anomaly for porcupine, not a dirty start.
	firstAck, acked := int64(0), false
	var candidates bool
	for _, i := range kops {
		o := &ops[i]
		v, isW := written(o)
		if o.OpType == "cas" {
			// A cas whose answer is false or unknown may still be the
			// writer of its new value as far as the history can tell.
			var pair []json.RawMessage
			if json.Unmarshal(o.Input, &pair) == nil && len(pair) == 2 {
				v, isW = canon(pair[1]), true
			}
		}
		if isW {
			if wrote == nil {
				wrote = map[string]bool{}
			}
			wrote[v] = true
		}
		if _, w := written(o); w && ok(o) {
			if !acked || *o.CompleteTS < firstAck {
				firstAck, acked = *o.CompleteTS, true
			}
		}
		if ok(o) && (o.OpType == "read" || o.OpType == "get" || o.OpType == "cas") {
			candidates = true
		}
	}
	if !candidates {
		return d, 0, false
	}
	for _, i := range kops {
		o := &ops[i]
		if !ok(o) {
			continue
		}
		if acked && o.InvokeTS > firstAck {
			continue
		}
		var val string
		switch o.OpType {
		case "read", "get":
			val = canon(o.Output)
		case "cas":
			var pair []json.RawMessage
			if canon(o.Output) != "true" || json.Unmarshal(o.Input, &pair) != nil || len(pair) != 2 {
				continue
			}
			val = canon(pair[0])
		default:
			continue
		}
		if val == "" || val == "null" || wrote[val] {
			continue
		}
		return DirtyRead{Key: o.Key, Value: val, OpType: map[bool]string{true: "cas", false: "read"}[o.OpType == "cas"],
			OpID: o.OpID, ProcessID: o.ProcessID, Line: o.Line}, i, true
	}
	return d, 0, false
}

// dirtyReason is the Unknown reason of a check whose only findings are
// dirty keys.
func dirtyReason(dirty []DirtyRead) string {
	var s []string
	for _, d := range dirty[:min(len(dirty), 3)] {
		s = append(s, d.String())
	}
	more := ""
	if len(dirty) > 3 {
		more = fmt.Sprintf(" and %d more keys", len(dirty)-3)
	}
	return fmt.Sprintf("dirty initial state: %s%s; those keys are excluded from the check; %s", strings.Join(s, "; "), more, DirtyAdvice)
}
