package history

import (
	"bytes"
	"fmt"
)

// valueReturning lists op types whose output carries a value, for which
// spec §2.1 rule 4 forbids an output beside an error.
var valueReturning = map[string]bool{
	"read": true, "get": true, "cas": true, "dequeue": true, "view": true,
	"balance": true, "inc": true, "add": true, "acquire": true,
}

// Validate applies the record-level rules of spec §2.1. A non-empty result
// means the recorder is broken (blame = harness), not the SUT. schedule,
// when non-nil, is the set of fault window ids the run declared; every
// fault_epoch must be one of them. name is the file name used in positions.
func Validate(name string, ops []Op, schedule []string) []error {
	var errs []error
	at := func(op *Op, format string, a ...any) {
		errs = append(errs, &LineError{File: name, Line: op.Line, Err: fmt.Errorf(format, a...)})
	}
	var sched map[string]bool
	if schedule != nil {
		sched = make(map[string]bool, len(schedule))
		for _, id := range schedule {
			sched[id] = true
		}
	}
	first := make(map[string]int, len(ops))
	for i := range ops {
		op := &ops[i]
		if j, dup := first[op.OpID]; dup {
			prev := &ops[j]
			if !bytes.Equal(prev.Output, op.Output) {
				at(op, "op_id %q repeats line %d with a different output (recorder bug: history invalid)", op.OpID, prev.Line)
			} else {
				at(op, "op_id %q repeats line %d (op_id must be unique)", op.OpID, prev.Line)
			}
		} else {
			first[op.OpID] = i
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
		if op.Error != "" && op.Output != nil && valueReturning[op.OpType] {
			at(op, "op %q: %s has both error and output", op.OpID, op.OpType)
		}
		if sched != nil && op.FaultEpoch != "" && !sched[op.FaultEpoch] {
			at(op, "op %q: fault_epoch %q is not a window of the fault schedule", op.OpID, op.FaultEpoch)
		}
	}
	return errs
}

// Needs says which optional fields a checker or claim relies on (spec §2.2
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
// a checker with needs need (spec §2.2). A weak history yields
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
	// Spec §2.2 makes this weak for every checker: an op with no response
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
