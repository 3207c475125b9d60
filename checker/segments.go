package checker

import (
	"cmp"
	"context"
	"slices"

	"github.com/anishathalye/porcupine"
)

// Bounds of the segment fast path: past them porcupine decides.
const (
	maxSegmentOps    = 8  // ops in one group of mutually overlapping ops
	maxSegmentStates = 32 // states a prefix of the partition may end in
)

// linearizableBySegments decides, without porcupine's search, that a
// partition whose ops overlap only in small groups is linearizable.
//
// Sorted by invoke, the ops split at quiescent points (every op before
// returned before any op after was invoked) into segments. Real-time order
// puts every op of a segment before every op of the next in any
// linearization, so the partition is linearizable iff some chain of
// per-segment linearizations connects through states: the set of states
// each prefix may end in is computed exactly, segment by segment, trying
// every order of a segment's ops that real time allows (porcupine's rule:
// an op may go next unless another pending op returned before it was
// invoked; equal times count as concurrent, as porcupine orders a call
// before a return at the same instant).
//
// It only ever answers "linearizable": when a prefix admits no state, or a
// bound is exceeded, it returns false and porcupine runs as before, so
// every violation is still found and explained by porcupine. It also
// returns false once ctx is done, so the caller's time limit holds.
func linearizableBySegments(ctx context.Context, m *modelDef, ops []porcupine.Operation) bool {
	order := make([]int32, len(ops))
	for i := range ops {
		if ops[i].Return < ops[i].Call {
			return false
		}
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	states := []seqState{m.init}
	var next []seqState
	seg := make([]*porcupine.Operation, 0, maxSegmentOps)
	for i, n := 0, 0; i < len(order); n++ {
		if n%64 == 63 && ctx.Err() != nil {
			return false
		}
		end := ops[order[i]].Return
		seg = seg[:0]
		for ; i < len(order) && (len(seg) == 0 || ops[order[i]].Call <= end); i++ {
			if len(seg) == maxSegmentOps {
				return false
			}
			o := &ops[order[i]]
			seg = append(seg, o)
			end = max(end, o.Return)
		}
		next = next[:0]
		for _, st := range states {
			if next = segmentEnds(m, seg, st, next); len(next) > maxSegmentStates {
				return false
			}
		}
		if len(next) == 0 {
			return false // no linearization: porcupine confirms and explains
		}
		states, next = next, states
	}
	return true
}

// segmentEnds adds to ends every state in which some real-time-respecting
// order of seg's ops, each step legal, can leave the model from st.
func segmentEnds(m *modelDef, seg []*porcupine.Operation, st seqState, ends []seqState) []seqState {
	if len(seg) == 1 {
		ok, s := m.step(st, *seg[0].Input.(*linIn), *seg[0].Output.(*linOut))
		if ok && !slices.Contains(ends, s) {
			ends = append(ends, s)
		}
		return ends
	}
	full := uint32(1)<<len(seg) - 1
	type visit struct {
		done uint32
		st   seqState
	}
	// Memo of (ops done, state) pairs already explored; a group of three
	// or fewer has at most six orders, cheaper to walk than to remember.
	var seen map[visit]bool
	if len(seg) > 3 {
		seen = map[visit]bool{}
	}
	var walk func(done uint32, st seqState)
	walk = func(done uint32, st seqState) {
		if done == full {
			if !slices.Contains(ends, st) {
				ends = append(ends, st)
			}
			return
		}
		if seen != nil {
			if seen[visit{done, st}] {
				return
			}
			seen[visit{done, st}] = true
		}
		for k, o := range seg {
			if done&(1<<k) != 0 || !mayGoNext(seg, done, k) {
				continue
			}
			if ok, s := m.step(st, *o.Input.(*linIn), *o.Output.(*linOut)); ok {
				walk(done|1<<k, s)
			}
		}
	}
	walk(0, st)
	return ends
}

// mayGoNext reports whether op k can be linearized before every other op
// of seg not yet in done: none of them returned before k was invoked.
func mayGoNext(seg []*porcupine.Operation, done uint32, k int) bool {
	for r, o := range seg {
		if r != k && done&(1<<r) == 0 && o.Return < seg[k].Call {
			return false
		}
	}
	return true
}
