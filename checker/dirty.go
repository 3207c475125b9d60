package checker

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"

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

// dirtyFacts is what the dirty scan needs of one op, noted while the op
// is converted so the scan reads no op again.
type dirtyFacts struct {
	wrote  string // the value the op tries to write, whatever its outcome
	isW    bool
	acked  bool   // an acknowledged write…
	ackAt  int64  // …completed then
	seen   string // the value an ok read returned or an ok cas expected (not null); "" none
	invoke int64
}

// Bits of a slot in the linearizability partitioning: whether its op is
// kept and open-ended, and what the dirty scan needs to know of it first.
const (
	slotKept uint8 = 1 << iota
	slotOpen
	dirtyWrite // tries to write a value
	dirtyAck   // an acknowledged write
	dirtySeen  // observed a value (not null)
)

// bits are f's dirty-scan bits.
func (f dirtyFacts) bits() uint8 {
	var b uint8
	if f.isW {
		b |= dirtyWrite
	}
	if f.acked {
		b |= dirtyAck
	}
	if f.seen != "" {
		b |= dirtySeen
	}
	return b
}

// keptBits are keptFacts' bits, from the conversion at hand.
func keptBits(g *porcupine.Operation, open bool) uint8 {
	return keptFacts(g, open).bits()
}

// factsOf notes the dirty facts of an op that was not converted (failed,
// timed out unread, or one the model rejects).
func factsOf(o *history.Op) dirtyFacts {
	f := dirtyFacts{invoke: o.InvokeTS}
	if o.OpType == "cas" {
		// A cas whose answer is false or unknown may still be the writer
		// of its new value as far as the history can tell; it is an
		// acknowledged write only when it did not answer false.
		var pair []json.RawMessage
		if json.Unmarshal(o.Input, &pair) == nil && len(pair) == 2 {
			f.wrote, f.isW = canon(pair[1]), true
			res := canon(o.Output)
			f.acked = res != "false" && ok(o)
			if v := canon(pair[0]); ok(o) && res == "true" && v != "null" {
				f.seen = v
			}
		}
	} else {
		f.wrote, f.isW = written(o)
		f.acked = f.isW && ok(o)
		if v := canon(o.Output); ok(o) && (o.OpType == "read" || o.OpType == "get") && v != "null" {
			f.seen = v
		}
	}
	if f.acked {
		f.ackAt = *o.CompleteTS
	}
	return f
}

// keptFacts are the same facts read from an op's conversion for a
// register model (open: its answer never came): a kept op that answered
// is an ok op, its return its completion, and the conversion holds the
// canonical values factsOf would decode.
func keptFacts(g *porcupine.Operation, open bool) dirtyFacts {
	in, out := g.Input.(*linIn), g.Output.(*linOut)
	f := dirtyFacts{invoke: g.Call}
	switch in.verb {
	case vWrite:
		f.wrote, f.isW, f.acked = in.a, true, !open
	case vCAS:
		f.wrote, f.isW, f.acked = in.b, true, !open && out.ok
		if !open && out.ok && in.a != "null" {
			f.seen = in.a
		}
	case vRead:
		if !open && out.s != "null" {
			f.seen = out.s
		}
	}
	if f.acked {
		f.ackAt = g.Return
	}
	return f
}

// dirtyScan finds, among one key's ops in history order, the first that
// observed a value no op of the key wrote before any acknowledged write to
// the key had completed: an ok read whose output is not null (the initial
// value), or a cas that succeeded expecting a value nobody wrote. Every
// write attempt counts as a writer, failed or timed out included, so only
// a value from outside the history is flagged. Only the models whose
// written values are unique (uniqueValueModel) may ask: elsewhere a value
// can be written twice and the rule says nothing.
func dirtyScan(facts []dirtyFacts) (at int, found bool) {
	var wrote map[string]bool
	// firstAck is when the key's first acknowledged write completed: from
	// then on left-over state is overwritten, so a value nobody wrote read
	// after it is a real anomaly for porcupine, not a dirty start.
	firstAck, acked, observed := int64(0), false, false
	for i := range facts {
		f := &facts[i]
		if f.isW {
			if wrote == nil {
				wrote = map[string]bool{}
			}
			wrote[f.wrote] = true
		}
		if f.acked && (!acked || f.ackAt < firstAck) {
			firstAck, acked = f.ackAt, true
		}
		observed = observed || f.seen != ""
	}
	if !observed {
		return 0, false
	}
	for i := range facts {
		f := &facts[i]
		if f.seen == "" || acked && f.invoke > firstAck || wrote[f.seen] {
			continue
		}
		return i, true
	}
	return 0, false
}

// dirtyRead is the evidence of the dirty op o, which observed value.
func dirtyRead(o *history.Op, value string) DirtyRead {
	return DirtyRead{Key: o.Key, Value: value, OpType: map[bool]string{true: "cas", false: "read"}[o.OpType == "cas"],
		OpID: o.OpID, ProcessID: o.ProcessID, Line: o.Line}
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
