// Package reduce shrinks a history with an anomaly to a small reproducer:
// the fewest keys, processes, the shortest time window and then the fewest
// ops in which the same checker still finds an anomaly of the same class
// (delta debugging, in that order: keys, processes, window by halves,
// single ops while it still reproduces), the reduction procedure of
// docs/verdicts.md. It never reduces a history without an anomaly (a
// valid or undecided one is refused with the reason), every re-check runs
// under the caller's context, and a reduction cut short by it says so and
// returns the smallest reproducer found so far.
package reduce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/session"
)

// ErrNoAnomaly is returned (wrapped, with the checker's outcome) when the
// history has no anomaly to reduce: reduction of a valid or undecided
// history would make up a failure.
var ErrNoAnomaly = errors.New("no anomaly to reduce")

// defaultCheckTimeout bounds one re-check when spec.Timeout is 0: a
// re-check that runs out of time counts as not reproducing.
const defaultCheckTimeout = 10 * time.Second

// Result is a reduced history and how it was found.
type Result struct {
	Ops  []history.Op // the reduced history, in the original order
	From int          // ops in the original history
	// Class is the anomaly kind that had to keep reproducing (e.g.
	// "nonlinearizable").
	Class     string
	Keys      []string
	Processes []string
	// WindowStart and WindowEnd span the reduced ops (history ns): the
	// first invoke to the last completion (or invoke, for a timeout).
	WindowStart, WindowEnd int64
	Checks                 int    // checker runs made
	Stopped                string // why it stopped before every op was shown necessary; "" when it finished
	Anomaly                checker.Anomaly
}

// Reduce shrinks ops (a history spec's checker finds an anomaly in) to a
// smaller history with an anomaly of the same class. It returns an error
// wrapping ErrNoAnomaly when the checker finds none in ops, and the
// checker's error for bad input. When ctx ends first, Result.Stopped says
// so and Result holds the smallest reproducer found.
func Reduce(ctx context.Context, spec checker.Spec, ops []history.Op, final *checker.FinalState) (Result, error) {
	return reduce(ctx, spec, ops, final, nil)
}

// reduce is Reduce with a hook called before every re-check with the
// count so far (a test's way to end the context at a known point).
func reduce(ctx context.Context, spec checker.Spec, ops []history.Op, final *checker.FinalState, hook func(checks int)) (Result, error) {
	if spec.Timeout <= 0 {
		spec.Timeout = defaultCheckTimeout
	}
	first, err := checker.Run(ctx, spec, ops, final)
	if err != nil {
		return Result{}, fmt.Errorf("check the history before reducing it: %w", err)
	}
	if first.Outcome != checker.Invalid || len(first.Anomalies) == 0 {
		why := first.Reason
		if why == "" {
			why = "the checker found no anomaly"
		}
		return Result{}, fmt.Errorf("%w: %s outcome %s (%s)", ErrNoAnomaly, first.Checker, first.Outcome, why)
	}
	r := &reducer{ctx: ctx, spec: spec, final: final, class: first.Anomalies[0].Kind, checks: 1, hook: hook}
	r.index(ops)
	cur := slices.Clone(ops)
	res := Result{From: len(ops), Class: r.class, Anomaly: first.Anomalies[0]}

	// Keys: the anomaly's own key first (per-key checkers fail on one key),
	// then delta debugging over the keys left.
	if k := first.Anomalies[0].Key; k != "" {
		if only := filter(cur, func(o *history.Op) bool { return r.within(o, map[string]bool{k: true}) }); len(only) < len(cur) && r.repro(only) {
			cur = only
		}
	}
	cur = r.byKeys(cur)
	cur = r.byGroup(cur, func(o *history.Op) string { return o.ProcessID })
	cur = r.window(cur)
	cur = ddmin(r, cur)

	res.Ops, res.Checks = cur, r.checks
	if r.stopped {
		res.Stopped = fmt.Sprintf("stopped early: %v after %d checks; not every remaining op is shown necessary", context.Cause(ctx), r.checks)
	}
	res.Keys = r.keyUnion(cur)
	res.Processes = distinct(cur, func(o *history.Op) string { return o.ProcessID })
	res.WindowStart, res.WindowEnd = span(cur)
	// The reduced history's own anomaly (its message names the reduced
	// ops), even when ctx has ended: it is small, and bounded by the
	// per-check limit.
	lastCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spec.Timeout)
	defer cancel()
	if last, err := checker.Run(lastCtx, spec, cur, final); err == nil && len(last.Anomalies) > 0 {
		res.Anomaly = last.Anomalies[0]
	}
	return res, nil
}

// Summary is the Reproducer line: "reduced from N ops to k ops (keys …,
// window …)", plus that it stopped early when it did.
func (r Result) Summary() string { return r.Describe(nil) }

// Describe is Summary naming the fault windows the reduced window overlaps
// (from FaultWindows) inside the parentheses: "…, window …, fault windows
// f1 (partition))".
func (r Result) Describe(faultWindows []string) string {
	keys := strings.Join(quoteAll(r.Keys), ", ")
	if keys == "" {
		keys = "none"
	}
	fw := ""
	if len(faultWindows) > 0 {
		fw = ", fault windows " + strings.Join(faultWindows, ", ")
	}
	s := fmt.Sprintf("reduced from %d ops to %d ops (keys %s, window %d..%d ns%s)", r.From, len(r.Ops), keys, r.WindowStart, r.WindowEnd, fw)
	if r.Stopped != "" {
		s += "; " + r.Stopped
	}
	return s
}

// FaultWindows names the fault windows of a run (run.json) that the
// reduced window overlaps, and those an op of the reduced history ran in
// (its fault_epoch), in the run's order: what a person needs to replay it.
// A window not yet reverted runs to the end of time.
func (r Result) FaultWindows(windows []session.FaultWindow) []string {
	epochs := map[string]bool{}
	for i := range r.Ops {
		if e := r.Ops[i].FaultEpoch; e != "" {
			epochs[e] = true
		}
	}
	var out []string
	for _, w := range windows {
		start := w.ScheduledAtNS
		if w.InjectedAtNS != nil {
			start = *w.InjectedAtNS
		}
		end := int64(1<<63 - 1)
		if w.RevertedAtNS != nil {
			end = *w.RevertedAtNS
		}
		if epochs[w.FaultEpoch] || len(r.Ops) > 0 && start <= r.WindowEnd && r.WindowStart <= end {
			name := w.FaultEpoch
			if w.Nemesis != "" {
				name += " (" + w.Nemesis + ")"
			}
			out = append(out, name)
		}
	}
	return out
}

// reducer re-runs the checker on candidate histories.
type reducer struct {
	ctx     context.Context
	spec    checker.Spec
	final   *checker.FinalState
	class   string
	checks  int
	stopped bool
	hook    func(checks int)
	// writers maps a written value to the ids of the ops that wrote it;
	// observed maps a read-like op's id to the values it returned.
	writers  map[string][]string
	observed map[string][]string
	txnKeys  map[string][]string // op id → keys of its micro-ops (keysOf)
}

// index records who wrote and who observed each value, so that no
// candidate drops the writer of a value a kept op read: the checker would
// then see a read of a value nobody wrote, an anomaly the reduction made
// up rather than the one it was given. A read-like op is one without
// input (read, get, dequeue); a cas writes its new value; any other op
// with input writes its input.
func (r *reducer) index(ops []history.Op) {
	r.writers, r.observed = map[string][]string{}, map[string][]string{}
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Input == nil && o.Output != nil:
			r.observed[o.OpID] = values(o.Output)
		case o.Input != nil && o.OpType == "cas":
			var pair []json.RawMessage
			if json.Unmarshal(o.Input, &pair) == nil && len(pair) == 2 {
				r.writers[compact(pair[1])] = append(r.writers[compact(pair[1])], o.OpID)
			}
		case o.Input != nil:
			v := compact(o.Input)
			r.writers[v] = append(r.writers[v], o.OpID)
		}
	}
}

// closed reports whether every value a kept op observed still has a
// writer among the kept ops (when the original history had one).
func (r *reducer) closed(ops []history.Op) bool {
	kept := make(map[string]bool, len(ops))
	for i := range ops {
		kept[ops[i].OpID] = true
	}
	for i := range ops {
		for _, v := range r.observed[ops[i].OpID] {
			ws := r.writers[v]
			if len(ws) > 0 && !slices.ContainsFunc(ws, func(id string) bool { return kept[id] }) {
				return false
			}
		}
	}
	return true
}

// values is an output's value and, for an array (a log or set read), its
// elements, as compact JSON.
func values(raw json.RawMessage) []string {
	out := []string{compact(raw)}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) == nil {
		for _, e := range elems {
			out = append(out, compact(e))
		}
	}
	return out
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// repro reports whether ops still show an anomaly of the class; false
// once the context has ended (and then stopped is set).
func (r *reducer) repro(ops []history.Op) bool {
	if r.ctx.Err() != nil {
		r.stopped = true
		return false
	}
	if len(ops) == 0 || !r.closed(ops) {
		return false
	}
	r.checks++
	if r.hook != nil {
		r.hook(r.checks)
	}
	res, err := checker.Run(r.ctx, r.spec, ops, r.final)
	if r.ctx.Err() != nil {
		r.stopped = true
		return false
	}
	if err != nil || res.Outcome != checker.Invalid {
		return false
	}
	for _, a := range res.Anomalies {
		if a.Kind == r.class {
			return true
		}
	}
	return false
}

// byGroup runs delta debugging over the groups (keys, processes) of ops.
func (r *reducer) byGroup(ops []history.Op, group func(*history.Op) string) []history.Op {
	names := distinct(ops, group)
	if len(names) < 2 {
		return ops
	}
	keep := ddminSet(r, names, func(sub []string) []history.Op {
		in := make(map[string]bool, len(sub))
		for _, s := range sub {
			in[s] = true
		}
		return filter(ops, func(o *history.Op) bool { return in[group(o)] })
	})
	in := make(map[string]bool, len(keep))
	for _, s := range keep {
		in[s] = true
	}
	return filter(ops, func(o *history.Op) bool { return in[group(o)] })
}

// keysOf is the keys an op touches: its key, or for a transaction the
// keys of its micro-ops (docs/history-and-checkers.md §2.5), parsed once
// per op id. A transaction that does not parse touches the key "" only,
// so it stays with the ops it came with.
func (r *reducer) keysOf(o *history.Op) []string {
	if o.OpType != history.OpTxn {
		return []string{o.Key}
	}
	if ks, ok := r.txnKeys[o.OpID]; ok {
		return ks
	}
	var ks []string
	if micro, err := history.ParseTxn(o); err == nil {
		for _, m := range micro {
			if !slices.Contains(ks, m.Key) {
				ks = append(ks, m.Key)
			}
		}
	}
	if len(ks) == 0 {
		ks = []string{""}
	}
	if r.txnKeys == nil {
		r.txnKeys = map[string][]string{}
	}
	r.txnKeys[o.OpID] = ks
	return ks
}

// within reports whether every key op o touches is in keys.
func (r *reducer) within(o *history.Op, keys map[string]bool) bool {
	for _, k := range r.keysOf(o) {
		if !keys[k] {
			return false
		}
	}
	return true
}

func (r *reducer) keyUnion(ops []history.Op) []string {
	seen := map[string]bool{}
	var out []string
	for i := range ops {
		for _, k := range r.keysOf(&ops[i]) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// byKeys is delta debugging over the keys: a kept subset keeps the ops
// whose keys all lie in it, so a transaction over several keys goes as a
// whole (its micro-ops are never split: that would change what it read
// and wrote).
func (r *reducer) byKeys(ops []history.Op) []history.Op {
	names := r.keyUnion(ops)
	if len(names) < 2 {
		return ops
	}
	pick := func(sub []string) []history.Op {
		in := make(map[string]bool, len(sub))
		for _, s := range sub {
			in[s] = true
		}
		return filter(ops, func(o *history.Op) bool { return r.within(o, in) })
	}
	return pick(ddminSet(r, names, pick))
}

// window narrows the time window by halves: the latest first op (by
// invoke) that still reproduces, then the earliest last op.
func (r *reducer) window(ops []history.Op) []history.Op {
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpInt(ops[a].InvokeTS, ops[b].InvokeTS) })
	pick := func(lo, hi int) []history.Op { // ops order[lo:hi], in history order
		in := make([]bool, len(ops))
		for _, i := range order[lo:hi] {
			in[i] = true
		}
		var out []history.Op
		for i := range ops {
			if in[i] {
				out = append(out, ops[i])
			}
		}
		return out
	}
	lo, hi := 0, len(ops)
	// The largest lo that still reproduces, by halving the step.
	for step := (hi - lo) / 2; step > 0 && !r.stopped; step /= 2 {
		for lo+step < hi && r.repro(pick(lo+step, hi)) {
			lo += step
		}
	}
	for step := (hi - lo) / 2; step > 0 && !r.stopped; step /= 2 {
		for hi-step > lo && r.repro(pick(lo, hi-step)) {
			hi -= step
		}
	}
	return pick(lo, hi)
}

// ddmin removes ops (chunks, then single ops) while the anomaly still
// reproduces.
func ddmin(r *reducer, ops []history.Op) []history.Op {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	keep := ddminSet(r, idx, func(sub []int) []history.Op {
		out := make([]history.Op, len(sub))
		for j, i := range sub {
			out[j] = ops[i]
		}
		return out
	})
	out := make([]history.Op, len(keep))
	for j, i := range keep {
		out[j] = ops[i]
	}
	return out
}

// ddminSet is Zeller's ddmin over items: try each chunk alone, then each
// complement, and refine the granularity until single items; what it
// returns is 1-minimal unless the reducer stopped. build turns a subset
// (in the original order) into the history to re-check.
func ddminSet[T any](r *reducer, items []T, build func([]T) []history.Op) []T {
	n := 2
	for len(items) >= 2 && !r.stopped {
		chunks := split(items, n)
		reduced := false
		for _, c := range chunks {
			if len(c) < len(items) && r.repro(build(c)) {
				items, n, reduced = c, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				if r.repro(build(comp)) {
					items, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(items) {
				break
			}
			n = min(2*n, len(items))
		}
	}
	return items
}

func split[T any](items []T, n int) [][]T {
	var out [][]T
	for i := 0; i < n; i++ {
		lo, hi := len(items)*i/n, len(items)*(i+1)/n
		if hi > lo {
			out = append(out, items[lo:hi])
		}
	}
	return out
}

func complement[T any](chunks [][]T, skip int) []T {
	var out []T
	for i, c := range chunks {
		if i != skip {
			out = append(out, c...)
		}
	}
	return out
}

func filter(ops []history.Op, keep func(*history.Op) bool) []history.Op {
	var out []history.Op
	for i := range ops {
		if keep(&ops[i]) {
			out = append(out, ops[i])
		}
	}
	return out
}

func distinct(ops []history.Op, f func(*history.Op) string) []string {
	seen := map[string]bool{}
	var out []string
	for i := range ops {
		if v := f(&ops[i]); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func span(ops []history.Op) (int64, int64) {
	if len(ops) == 0 {
		return 0, 0
	}
	lo, hi := ops[0].InvokeTS, ops[0].InvokeTS
	for i := range ops {
		lo, hi = min(lo, ops[i].InvokeTS), max(hi, ops[i].InvokeTS)
		if c := ops[i].CompleteTS; c != nil {
			hi = max(hi, *c)
		}
	}
	return lo, hi
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
