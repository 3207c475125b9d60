// Package checker judges operation histories: linearizability through
// porcupine for the models of docs/history-and-checkers.md §3, and the
// other oracle patterns of docs/history-and-checkers.md §5, one file each
// (no-lost-ack, exactly-once, session, monotonic reads, prefix/order, SLO,
// final-state invariants, reconciliation, fairness).
//
// Every checker reports execution evidence (ops consumed, anomalies) and a
// scope statement. Every checker runs under the context Run gives it, with
// Spec.Timeout as its hard limit: one that runs out of time reports
// Unknown, never Valid (anomalies it found in time still make it Invalid).
// An error about one op of the history is a *fileline.Error naming
// Spec.History and the op's line.
//
// # Pruning
//
// Before the search, each key's ops go through one pass that removes what
// provably cannot change the answer. Rule: a timed-out write W of value v
// (it may take effect at any point after its invoke, or never) is dropped
// when no completed read of the key returned v, and the key either has no
// cas or every cas of the key returned true and none expects v. Proof:
// without W linearizable ⇒ with W linearizable: put W last; a write is
// always legal and W's return is open-ended, so real time holds. With W
// linearizable ⇒ without W linearizable: in a linearization L, look at the
// op right after W. A read there returns v (excluded); a successful cas
// there expects v (excluded); a cas that returned false or timed out could
// sit there without naming v, which is why every cas must have returned
// true. So it is a write (or nothing), which ignores the state: removing W
// from L leaves every op's state as it was, and a subsequence keeps real
// time. The same argument drops a timed-out add (set) or enqueue (queue)
// whose element no read or dequeue returned, and a timed-out append (log)
// whose element no read returned when no append returned its offset. Values
// need not be unique for soundness (the rule is by value: any read of v
// keeps every write of v); unique values only make more writes droppable.
// Limits: never applied to increments (a counter read shows them without
// their value), to writes on a key with a cas that returned false or timed
// out (a failed cas can hold only because W made the state differ from
// its expected value: write 1; W = write 2, timed out; cas 1→3 returned
// false is linearizable only with W), nor to appends on a log that returns
// offsets. Completed ops are never dropped.
package checker

import (
	"fmt"
	"time"
)

// Outcome is a checker's answer.
type Outcome string

// Outcomes.
const (
	Valid   Outcome = "valid"
	Invalid Outcome = "invalid"
	Unknown Outcome = "unknown" // time limit hit or not decidable; never a pass
)

// Result is what one checker run found.
type Result struct {
	Checker     string        `json:"checker"`
	Model       string        `json:"model,omitempty"`
	Outcome     Outcome       `json:"outcome"`
	OpsConsumed int           `json:"ops_consumed"`
	Anomalies   []Anomaly     `json:"anomalies,omitempty"`
	Scope       string        `json:"scope"` // what this checker cannot detect
	Elapsed     time.Duration `json:"elapsed_ns"`
	Reason      string        `json:"reason,omitempty"` // why Unknown
	HTML        string        `json:"html,omitempty"`   // visualization path, when written
	HTMLCapped  bool          `json:"html_capped,omitempty"`
	// Thresholds lists the bounds a threshold checker (SLO, fairness)
	// applied, as the plan states them, so a reader sees what was judged.
	Thresholds []string `json:"thresholds,omitempty"`
	// Dirty lists ops that observed a value no op in the history wrote
	// (left-over state); their keys were not checked, and with no other
	// anomaly the outcome is Unknown, never Valid or Invalid.
	Dirty []DirtyRead `json:"dirty_initial_state,omitempty"`
}

// Anomaly is one violation with what a reviewer needs to find it.
type Anomaly struct {
	Kind    string   `json:"kind"`          // e.g. "nonlinearizable", "lost-ack", "duplicate-effect"
	Key     string   `json:"key,omitempty"` // failing key / partition
	Message string   `json:"message"`
	OpIDs   []string `json:"op_ids,omitempty"`
	// Window is the shortest failing window named, in history timestamps (ns).
	WindowStart int64 `json:"window_start_ns,omitempty"`
	WindowEnd   int64 `json:"window_end_ns,omitempty"`
	// FaultEpoch is the fault window the blamed op ran in ("" = none or
	// unknown), so a reviewer can tell an anomaly under fault from one
	// without.
	FaultEpoch string `json:"fault_epoch,omitempty"`
	// Count is, for the entry of kind "more" that ends a capped list, how
	// many anomalies it stands for; 0 for an anomaly of its own.
	Count int `json:"count,omitempty"`
}

// AnomalyCount is how many anomalies the checker found: the listed ones
// plus those a capped list summarises in its "more" entry, which is no
// anomaly of its own.
func (r Result) AnomalyCount() int {
	n := 0
	for _, a := range r.Anomalies {
		if a.Kind == "more" && a.Count > 0 {
			n += a.Count
			continue
		}
		n++
	}
	return n
}

// Evidence renders the execution-evidence sentence of
// docs/history-and-checkers.md §5, e.g.
// "4217 ops consumed, 0 anomalies".
func (r Result) Evidence() string {
	n, word := r.AnomalyCount(), "anomalies"
	if n == 1 {
		word = "anomaly"
	}
	return fmt.Sprintf("%d ops consumed, %d %s", r.OpsConsumed, n, word)
}
