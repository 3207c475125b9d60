package history

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
)

// valueReturning reports op types whose output carries a value, for which
// docs/history-and-checkers.md §2.1 rule 4 forbids an output beside an error. A switch, not a map:
// no package-level state anyone could change.
func valueReturning(opType string) bool {
	switch opType {
	case "read", "get", "cas", "dequeue", "view", "balance", "inc", "add", "acquire":
		return true
	}
	return false
}

// Validate applies the record-level rules of docs/history-and-checkers.md §2.1
// (and, for op_type txn, the transaction shape of §2.5). A non-empty result
// means the recorder is broken (blame = harness), not the SUT. schedule,
// when non-nil, is the set of fault window ids the run declared; every
// fault_epoch must be one of them. name is the file name used in positions.
func Validate(name string, ops []Op, schedule []string) []error {
	v := NewValidator(name, schedule)
	v.all = ops // every op at hand: outputs compared, not hashed
	return v.Check(ops, nil)
}

// Validator applies Validate's rules to a history handed over in
// stretches (a block of ScanFile at a time), in order: the errors are
// Validate's for the whole history. It keeps, per op, only its line and a
// hash of its output (to word a repeated op_id), not the ops.
type Validator struct {
	name  string
	sched map[string]bool
	ids   idIndex
	lines []int
	outs  []uint64
	seed  maphash.Seed
	all   []Op // when set, the whole history (Validate): no hashes kept
}

// NewValidator starts validating a history; see Validate.
func NewValidator(name string, schedule []string) *Validator {
	v := &Validator{name: name, seed: maphash.MakeSeed()}
	if schedule != nil {
		v.sched = make(map[string]bool, len(schedule))
		for _, id := range schedule {
			v.sched[id] = true
		}
	}
	return v
}

// Check validates the next ops of the history. txnErr, when not nil,
// gives the result of the transaction-shape check (ParseTxn) for ops[i],
// made already by a caller that decodes every transaction anyway.
func (v *Validator) Check(ops []Op, txnErr func(i int) error) []error {
	var errs []error
	at := func(op *Op, format string, a ...any) {
		errs = append(errs, lineError(v.name, op.Line, fmt.Errorf(format, a...)))
	}
	for i := range ops {
		op := &ops[i]
		n := len(v.lines)
		var out uint64
		if v.all == nil {
			out = maphash.Bytes(v.seed, op.Output)
		}
		if j := v.ids.first(op.OpID, n); j != n {
			// Streamed, two outputs with one hash are taken for equal:
			// the message is then the plain repeat, an error all the same.
			same := v.all == nil && v.outs[j] == out || v.all != nil && bytes.Equal(v.all[j].Output, op.Output)
			if !same {
				at(op, "op_id %q repeats line %d with a different output (recorder bug: history invalid)", op.OpID, v.lines[j])
			} else {
				at(op, "op_id %q repeats line %d (op_id must be unique)", op.OpID, v.lines[j])
			}
		}
		v.lines = append(v.lines, op.Line)
		if v.all == nil {
			v.outs = append(v.outs, out)
		}
		if op.CompleteTS == nil {
			if !op.TimeoutMarker {
				at(op, "op %q: complete_ts is null but timeout_marker is false", op.OpID)
			}
			if op.Output != nil {
				at(op, "op %q: complete_ts is null but output is set (a timed-out op has no output)", op.OpID)
			}
		}
		if !op.TimeoutMarker && op.CompleteTS != nil && *op.CompleteTS < op.InvokeTS {
			at(op, "op %q: complete_ts %d before invoke_ts %d", op.OpID, *op.CompleteTS, op.InvokeTS)
		}
		if op.Error != "" && op.Output != nil && valueReturning(op.OpType) {
			at(op, "op %q: %s has both error and output", op.OpID, op.OpType)
		}
		if op.OpType == OpTxn {
			var err error
			if txnErr != nil {
				err = txnErr(i)
			} else {
				_, err = ParseTxn(op)
			}
			if err != nil {
				at(op, "op %q: %v", op.OpID, err)
			}
		}
		if v.sched != nil && op.FaultEpoch != "" && !v.sched[op.FaultEpoch] {
			at(op, "op %q: fault_epoch %q is not a window of the fault schedule", op.OpID, op.FaultEpoch)
		}
	}
	return errs
}

// firstIndex returns, for op i, the index of the first op with the same
// op_id (i itself when it is the first).
func firstIndex(ops []Op) []int {
	first := make([]int, len(ops))
	var x idIndex
	for i := range ops {
		first[i] = x.first(ops[i].OpID, i)
	}
	return first
}

// idIndex finds an op_id's first op. Recorders number ops 1, 2, 3…, so
// ids that are canonical decimals within a few times the op count so far
// go in a table indexed by value: a million-entry string map costs more
// than the rest of validation together (hashing, cache misses). A
// canonical decimal (no sign, no leading zero) names one number and each
// number has one such spelling, so string equality and numeric equality
// agree there; every other id goes through a map. An id is stored once,
// where it fits when first seen, and looked for in both.
type idIndex struct {
	table []int32 // id value → 1 + index of its first op; 0: not seen
	other map[string]int
}

// first returns the index of id's first op, recording i as it when id is
// new.
func (x *idIndex) first(id string, i int) int {
	n, numeric := canonicalID(id)
	if numeric && n < uint64(len(x.table)) {
		if t := x.table[n]; t != 0 {
			return int(t - 1)
		}
	}
	if t, dup := x.other[id]; dup {
		return t
	}
	limit := uint64(4*(i+1) + 64)
	if i >= math.MaxInt32-1 {
		limit = 0 // indexes would not fit the table: map only
	}
	if numeric && n < limit {
		if n >= uint64(len(x.table)) {
			// Grown to what the ids need, not to limit: a lone large id
			// among small ones does not allocate the whole range.
			x.table = slices.Grow(x.table, int(min(limit, max(2*n, uint64(i+1)))+1)-len(x.table))
			x.table = x.table[:cap(x.table)]
		}
		x.table[n] = int32(i + 1)
		return i
	}
	if x.other == nil {
		x.other = make(map[string]int)
	}
	x.other[id] = i
	return i
}

// canonicalID parses a canonical decimal op_id: digits only, no leading
// zero except "0" itself, at most 18 digits (no overflow).
func canonicalID(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 18 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + uint64(c)
	}
	return n, true
}

// Needs says which optional fields a checker or claim relies on (docs/history-and-checkers.md §2.2
// and §3); Weak reports a history that lacks them.
type Needs struct {
	Key      bool // per-key models: every op names its key
	NodeSeen bool // replication, leadership, membership claims; register/map models
	// FaultEpoch is set by the caller when a fault window overlapped the
	// workload: the checker cannot then place anomalies without it.
	FaultEpoch bool
	// MonotonicClock: the checker compares timestamps across processes.
	MonotonicClock bool
	// TimeoutMarkers: the checker treats unknown outcomes specially. An op
	// without a response and without a marker is weak for every checker;
	// this flag records the dependency for reports.
	TimeoutMarkers bool
}

// Weak returns the reasons (empty when complete) a history is too weak for
// a checker with needs need (docs/history-and-checkers.md §2.2). A weak history yields
// INCONCLUSIVE-oracle-too-weak.
func Weak(meta Meta, ops []Op, need Needs) []string {
	var w WeakCounter
	w.Add(ops)
	return w.Reasons(meta, need)
}

// WeakCounter counts what Weak looks at, over a history handed over in
// stretches.
type WeakCounter struct {
	ops, noComplete, noKey, noNode, withEpoch int
}

// Add counts the next ops.
func (w *WeakCounter) Add(ops []Op) {
	w.ops += len(ops)
	for i := range ops {
		op := &ops[i]
		if op.CompleteTS == nil && !op.TimeoutMarker {
			w.noComplete++
		}
		if op.Key == "" {
			w.noKey++
		}
		if op.NodeSeen == "" && op.CompleteTS != nil && op.Error == "" {
			w.noNode++
		}
		if op.FaultEpoch != "" {
			w.withEpoch++
		}
	}
}

// Reasons is Weak for the ops counted.
func (w *WeakCounter) Reasons(meta Meta, need Needs) []string {
	var reasons []string
	// docs/history-and-checkers.md §2.2 makes this weak for every checker: an op with no response
	// and no marker cannot be told from a lost record.
	if w.noComplete > 0 {
		reasons = append(reasons, fmt.Sprintf("%d ops have no complete_ts and no timeout_marker", w.noComplete))
	}
	if need.Key && w.noKey > 0 {
		reasons = append(reasons, fmt.Sprintf("%d ops lack key (per-key model)", w.noKey))
	}
	if need.NodeSeen && w.noNode > 0 {
		reasons = append(reasons, fmt.Sprintf("%d completed ops lack node_seen", w.noNode))
	}
	if need.FaultEpoch && w.ops > 0 && w.withEpoch == 0 {
		reasons = append(reasons, "a fault overlapped the workload but no op carries fault_epoch")
	}
	if need.MonotonicClock && meta.Clock != "" && meta.Clock != "monotonic" {
		reasons = append(reasons, fmt.Sprintf("_meta.clock is %q but the checker compares timestamps across processes", meta.Clock))
	}
	return reasons
}
