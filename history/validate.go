package history

import (
	"bytes"
	"fmt"
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
	var errs []error
	at := func(op *Op, format string, a ...any) {
		errs = append(errs, lineError(name, op.Line, fmt.Errorf(format, a...)))
	}
	var sched map[string]bool
	if schedule != nil {
		sched = make(map[string]bool, len(schedule))
		for _, id := range schedule {
			sched[id] = true
		}
	}
	firstOf := firstIndex(ops)
	for i := range ops {
		op := &ops[i]
		if j := firstOf[i]; j != i {
			prev := &ops[j]
			if !bytes.Equal(prev.Output, op.Output) {
				at(op, "op_id %q repeats line %d with a different output (recorder bug: history invalid)", op.OpID, prev.Line)
			} else {
				at(op, "op_id %q repeats line %d (op_id must be unique)", op.OpID, prev.Line)
			}
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
			if _, err := ParseTxn(op); err != nil {
				at(op, "op %q: %v", op.OpID, err)
			}
		}
		if sched != nil && op.FaultEpoch != "" && !sched[op.FaultEpoch] {
			at(op, "op %q: fault_epoch %q is not a window of the fault schedule", op.OpID, op.FaultEpoch)
		}
	}
	return errs
}

// firstIndex returns, for op i, the index of the first op with the same
// op_id (i itself when it is the first). Recorders number ops 1, 2, 3…, so
// ids that are canonical decimals within a few times the op count go in a
// table indexed by value: a million-entry string map costs more than the
// rest of validation together (hashing, cache misses). A canonical decimal
// (no sign, no leading zero) names one number and each number has one
// such spelling, so string equality and numeric equality agree there;
// every other id goes through a map as before.
func firstIndex(ops []Op) []int {
	first := make([]int, len(ops))
	var table []int32 // id value → 1 + index of its first op; 0: not seen
	limit := uint64(4*len(ops) + 64)
	if len(ops) >= math.MaxInt32 {
		limit = 0 // indexes would not fit the table: map only
	}
	var other map[string]int
	for i := range ops {
		id := ops[i].OpID
		first[i] = i
		if n, ok := canonicalID(id); ok && n < limit {
			if n >= uint64(len(table)) {
				// Grown to what the ids need, not to limit: a lone large id
				// among small ones does not allocate the whole range.
				table = slices.Grow(table, int(min(limit, max(2*n, uint64(len(ops))))+1)-len(table))
				table = table[:cap(table)]
			}
			if t := table[n]; t != 0 {
				first[i] = int(t - 1)
			} else {
				table[n] = int32(i + 1)
			}
			continue
		}
		if other == nil {
			hint := 0
			if i == 0 { // not numbered from the start: likely none are
				hint = len(ops)
			}
			other = make(map[string]int, hint)
		}
		if t, dup := other[id]; dup {
			first[i] = t
		} else {
			other[id] = i
		}
	}
	return first
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
	var reasons []string
	var noComplete, noKey, noNode, withEpoch int
	for i := range ops {
		op := &ops[i]
		if op.CompleteTS == nil && !op.TimeoutMarker {
			noComplete++
		}
		if op.Key == "" {
			noKey++
		}
		if op.NodeSeen == "" && op.CompleteTS != nil && op.Error == "" {
			noNode++
		}
		if op.FaultEpoch != "" {
			withEpoch++
		}
	}
	// docs/history-and-checkers.md §2.2 makes this weak for every checker: an op with no response
	// and no marker cannot be told from a lost record.
	if noComplete > 0 {
		reasons = append(reasons, fmt.Sprintf("%d ops have no complete_ts and no timeout_marker", noComplete))
	}
	if need.Key && noKey > 0 {
		reasons = append(reasons, fmt.Sprintf("%d ops lack key (per-key model)", noKey))
	}
	if need.NodeSeen && noNode > 0 {
		reasons = append(reasons, fmt.Sprintf("%d completed ops lack node_seen", noNode))
	}
	if need.FaultEpoch && len(ops) > 0 && withEpoch == 0 {
		reasons = append(reasons, "a fault overlapped the workload but no op carries fault_epoch")
	}
	if need.MonotonicClock && meta.Clock != "" && meta.Clock != "monotonic" {
		reasons = append(reasons, fmt.Sprintf("_meta.clock is %q but the checker compares timestamps across processes", meta.Clock))
	}
	return reasons
}
