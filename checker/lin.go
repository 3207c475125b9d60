package checker

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

// DefaultHTMLMaxBytes caps a visualization when Spec.HTMLMaxBytes is 0.
const DefaultHTMLMaxBytes = 5 << 20

// maxDetailed bounds how many failing partitions get a verbose re-check
// (window + visualization); the rest are listed by key only.
const maxDetailed = 10

// partition is one key's ops, with the history index of each op so
// anomalies can name op ids.
type partition struct {
	key string
	ops []porcupine.Operation
	idx []int
}

type partResult struct {
	res     porcupine.CheckResult
	aborted bool
	phantom int // index of an op that observed a value nobody wrote, or -1
}

// buildPartitions splits ops per key (P-compositionality: the history is
// linearizable iff every key's is) and converts them for porcupine.
//
// file names the history in the *fileline.Error of an op the model cannot
// interpret.
func buildPartitions(m *modelDef, ops []history.Op, file string) ([]*partition, error) {
	return partitionOps(m, ops, file, true)
}

// partitionOps is buildPartitions with the pruning pass (prune.go) on or
// off; off only where a test compares the verdicts with and without it.
func partitionOps(m *modelDef, ops []history.Op, file string, prune bool) ([]*partition, error) {
	var maxTS int64
	for i := range ops {
		if ops[i].InvokeTS > maxTS {
			maxTS = ops[i].InvokeTS
		}
		if c := ops[i].CompleteTS; c != nil && *c > maxTS {
			maxTS = *c
		}
	}
	infinity := maxTS + 1 // after every other event: an open-ended return

	if len(ops) >= math.MaxInt32 {
		return nil, fmt.Errorf("%d ops: more than a check can index", len(ops))
	}
	// Number keys and clients in one sequential pass (the only map lookups
	// per op), size every partition exactly, then convert in parallel
	// straight into each op's slot of one shared array: no per-partition
	// append growth, no second copy of the converted ops.
	keyOf := make([]int32, len(ops))
	clientOf := make([]int32, len(ops))
	keyIDs := make(map[string]int32)
	clientIDs := make(map[string]int32)
	var keys []string
	var count []int32
	for i := range ops {
		op := &ops[i]
		k, ok := keyIDs[op.Key]
		if !ok {
			k = int32(len(keys))
			keyIDs[op.Key] = k
			keys = append(keys, op.Key)
			count = append(count, 0)
		}
		c, ok := clientIDs[op.ProcessID]
		if !ok {
			c = int32(len(clientIDs))
			clientIDs[op.ProcessID] = c
		}
		keyOf[i], clientOf[i] = k, c
		count[k]++
	}
	start := make([]int, len(keys)+1)
	for k, c := range count {
		start[k+1] = start[k] + int(c)
	}
	slot := slices.Clone(start[:len(keys)]) // next free slot per key
	pos := make([]int32, len(ops))
	for i, k := range keyOf {
		pos[i] = int32(slot[k])
		slot[k]++
	}
	grouped := make([]porcupine.Operation, len(ops))
	idx := make([]int, len(ops)) // history index per slot; -1: dropped
	kept := make([]bool, len(ops))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(ops)/4096))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var slab opSlab
			for i := len(ops) * w / workers; i < len(ops)*(w+1)/workers; i++ {
				po, keep, err := m.convert(&ops[i], infinity, &slab)
				if err != nil {
					errs[w] = &fileline.Error{File: file, Line: ops[i].Line, Err: err} // the first bad op of this chunk
					return
				}
				idx[pos[i]], kept[i] = -1, keep
				if keep {
					// Field by field: a whole-struct copy into this
					// pointerful array is a bulk write barrier while the
					// GC runs, which it does during a large load.
					g := &grouped[pos[i]]
					g.Input, g.Output, g.Call, g.Return = po.Input, po.Output, po.Call, po.Return
					idx[pos[i]] = i
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// One client numbering for all partitions, in order of first kept op
	// (the visualization shows a row per process); renumbering through a
	// slice costs no lookups.
	renum := make([]int32, len(clientIDs))
	for i := range renum {
		renum[i] = -1
	}
	next := int32(0)
	parts := make([]*partition, 0, len(keys))
	for k := range keys {
		p := &partition{key: keys[k]}
		// Compact out dropped ops within the key's own range.
		lo, hi, n := start[k], start[k+1], start[k]
		for j := lo; j < hi; j++ {
			if idx[j] >= 0 {
				if n != j {
					g, o := &grouped[n], &grouped[j]
					g.Input, g.Output, g.Call, g.Return = o.Input, o.Output, o.Call, o.Return
					idx[n] = idx[j]
				}
				n++
			}
		}
		if n == lo {
			continue // every op of the key dropped: nothing to check
		}
		p.ops, p.idx = grouped[lo:n:n], idx[lo:n:n]
		parts = append(parts, p)
	}
	// Partitions in order of their first kept op, and clients numbered the
	// same way, as a single sequential pass over the history would.
	slices.SortFunc(parts, func(a, b *partition) int { return cmp.Compare(a.idx[0], b.idx[0]) })
	for i, k := range kept {
		if c := clientOf[i]; k && renum[c] < 0 {
			renum[c] = next
			next++
		}
	}
	for _, p := range parts {
		for j := range p.ops {
			p.ops[j].ClientId = int(renum[clientOf[p.idx[j]]])
		}
		if prune {
			dropUnobserved(p)
		}
	}
	return parts, nil
}

// checkLinearizable runs porcupine per partition on a bounded worker pool.
// ctx carries the hard time limit; a partition cut short is Unknown.
func checkLinearizable(ctx context.Context, spec Spec, m *modelDef, ops []history.Op) (Result, error) {
	return checkLin(ctx, spec, m, ops, true)
}

// checkLin is checkLinearizable with the pruning pass on or off.
func checkLin(ctx context.Context, spec Spec, m *modelDef, ops []history.Op, prune bool) (Result, error) {
	res := Result{Checker: Linearizability, Model: spec.Model, OpsConsumed: len(ops),
		Scope: "per-key linearizability (P-compositionality): cross-key anomalies (serializability, G2) are not detected; " +
			"timed-out ops may take effect at any point after their invoke or not at all; failed ops are dropped"}
	parts, err := partitionOps(m, ops, spec.History, prune)
	if err != nil {
		return res, err
	}
	// Largest first, so a long partition does not start last.
	sort.SliceStable(parts, func(i, j int) bool { return len(parts[i].ops) > len(parts[j].ops) })

	results := make([]partResult, len(parts))
	workers := min(runtime.GOMAXPROCS(0), len(parts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(parts) {
					return
				}
				if ctx.Err() != nil {
					// Past the time limit nothing more is decided, not
					// even by the cheap paths: an over-time check is
					// Unknown, never a pass.
					results[i] = partResult{res: porcupine.Unknown, aborted: true, phantom: -1}
					continue
				}
				if r, ok := replaySequential(m, parts[i].ops); ok {
					results[i] = partResult{res: r, phantom: -1}
					continue
				}
				if linearizableBySegments(ctx, m, parts[i].ops) {
					results[i] = partResult{res: porcupine.Ok, phantom: -1}
					continue
				}
				// Most partitions settle in microseconds. Only one that
				// outlives a short first try gets the phantom scan: a value
				// nobody wrote is a violation found without search, where
				// the search could be exponential (ordered states explode)
				// before failing.
				results[i] = checkPart(ctx, m, parts[i].ops, quickTry)
				results[i].phantom = -1
				if results[i].res != porcupine.Unknown || results[i].aborted {
					continue
				}
				if ph := phantom(parts[i]); ph >= 0 {
					results[i] = partResult{res: porcupine.Illegal, phantom: ph}
					continue
				}
				results[i] = checkPart(ctx, m, parts[i].ops, 0)
				results[i].phantom = -1
			}
		}()
	}
	wg.Wait()

	var failing []int
	unknown := 0
	for i, r := range results {
		switch {
		case r.aborted || r.res == porcupine.Unknown:
			unknown++
		case r.res == porcupine.Illegal:
			failing = append(failing, i)
		}
	}
	switch {
	case len(failing) > 0:
		res.Outcome = Invalid
	case unknown > 0:
		res.Outcome = Unknown
		res.Reason = fmt.Sprintf("time limit reached: %d of %d keys not decided", unknown, len(parts))
		return res, nil
	case ctx.Err() != nil:
		res.Outcome = Unknown
		res.Reason = "time limit reached before the check finished"
		return res, nil
	default:
		res.Outcome = Valid
		return res, nil
	}
	if unknown > 0 {
		res.Reason = fmt.Sprintf("%d of %d keys not decided before the time limit", unknown, len(parts))
	}
	// Report failing keys in key order for stable output.
	slices.SortFunc(failing, func(a, b int) int { return cmp.Compare(parts[a].key, parts[b].key) })
	htmlDone := spec.HTMLPath == ""
	for n, i := range failing {
		p := parts[i]
		a := Anomaly{Kind: "nonlinearizable", Key: p.key,
			Message: fmt.Sprintf("key %q: no linearization of its %d ops exists", p.key, len(p.ops))}
		if n < maxDetailed && ctx.Err() == nil {
			info, ok := detail(ctx, m, p, results[i].phantom, ops, &a)
			if ok && !htmlDone {
				htmlDone = true
				writeHTML(ctx, spec, m, p, info, &a, &res)
			}
		}
		res.Anomalies = append(res.Anomalies, a)
	}
	return res, nil
}

// quickTry is the first porcupine budget per partition (see the worker).
const quickTry = 50 * time.Millisecond

// checkPart runs porcupine on one partition until ctx ends or, when limit
// is positive, for at most limit.
func checkPart(ctx context.Context, m *modelDef, ops []porcupine.Operation, limit time.Duration) partResult {
	if ctx.Err() != nil {
		return partResult{aborted: true}
	}
	// ctx.Err() takes a lock; a flag set once by AfterFunc is cheap enough
	// to poll on every step.
	var stop, aborted atomic.Bool
	cancel := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer cancel()
	pm := m.porcupineModel(func() bool {
		if stop.Load() {
			aborted.Store(true)
			return true
		}
		return false
	})
	budget := time.Duration(0)
	if dl, ok := ctx.Deadline(); ok {
		if budget = time.Until(dl); budget <= 0 {
			return partResult{aborted: true}
		}
	}
	if limit > 0 && (budget == 0 || limit < budget) {
		budget = limit
	}
	r := porcupine.CheckOperationsTimeout(pm, ops, budget)
	return partResult{res: r, aborted: aborted.Load()}
}

// timeLeft is the time until ctx's deadline, or def when it has none:
// porcupine takes a duration, not a context.
func timeLeft(ctx context.Context, def time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return def
}

// detail re-checks a failing partition verbosely and names the shortest
// failing window: the op, outside the longest linearizable prefix, whose
// response came first — no order of the ops before it can explain it.
func detail(ctx context.Context, m *modelDef, p *partition, ph int, ops []history.Op, a *Anomaly) (porcupine.LinearizationInfo, bool) {
	budget := timeLeft(ctx, 30*time.Second)
	if ph >= 0 {
		o, hop := p.ops[ph], &ops[p.idx[ph]]
		a.OpIDs = []string{hop.OpID}
		a.FaultEpoch = hop.FaultEpoch
		a.WindowStart, a.WindowEnd = o.Call, o.Return
		a.Message = fmt.Sprintf("key %q: op %s %s (line %d) observed a value no op wrote; window %d..%d ns",
			p.key, hop.OpID, describeOp(o.Input, o.Output), hop.Line, o.Call, o.Return)
		budget = min(budget, 2*time.Second) // only for the visualization
	}
	if budget <= 0 {
		return porcupine.LinearizationInfo{}, false
	}
	r, info := porcupine.CheckOperationsVerbose(m.porcupineModel(nil), p.ops, budget)
	if ph >= 0 {
		return info, r == porcupine.Illegal
	}
	if r != porcupine.Illegal {
		return info, false
	}
	parts := info.PartialLinearizations()
	if len(parts) == 0 {
		return info, false
	}
	var longest []int
	for _, seq := range parts[0] {
		if len(seq) > len(longest) {
			longest = seq
		}
	}
	in := make([]bool, len(p.ops))
	for _, id := range longest {
		in[id] = true
	}
	blocker := -1
	for i, o := range p.ops {
		if !in[i] && (blocker < 0 || o.Return < p.ops[blocker].Return) {
			blocker = i
		}
	}
	if blocker < 0 {
		return info, true
	}
	b := p.ops[blocker]
	bop := &ops[p.idx[blocker]]
	a.OpIDs = append(a.OpIDs, bop.OpID)
	a.FaultEpoch = bop.FaultEpoch
	if len(longest) > 0 {
		last := &ops[p.idx[longest[len(longest)-1]]]
		a.OpIDs = append(a.OpIDs, last.OpID)
	}
	a.WindowStart, a.WindowEnd = b.Call, b.Return
	a.Message = fmt.Sprintf("key %q: op %s %s (line %d) cannot be linearized after the longest linearizable prefix (%d of %d ops); window %d..%d ns",
		p.key, bop.OpID, describeOp(b.Input, b.Output), bop.Line, len(longest), len(p.ops), b.Call, b.Return)
	return info, true
}

// writeHTML writes porcupine's visualization of one failing partition. When
// it exceeds the cap, it retries with the ops invoked up to the end of the
// failing window (still failing: later ops cannot repair an earlier
// contradiction); if that is still too large, nothing is written and
// HTMLCapped says so.
func writeHTML(ctx context.Context, spec Spec, m *modelDef, p *partition, info porcupine.LinearizationInfo, a *Anomaly, res *Result) {
	limit := spec.HTMLMaxBytes
	if limit <= 0 {
		limit = DefaultHTMLMaxBytes
	}
	pm := m.porcupineModel(nil)
	var buf bytes.Buffer
	if err := porcupine.Visualize(pm, info, &buf); err != nil {
		a.Message += fmt.Sprintf(" (visualization failed: %v)", err)
		return
	}
	if int64(buf.Len()) > limit {
		res.HTMLCapped = true
		buf.Reset()
		var cut []porcupine.Operation
		for _, o := range p.ops {
			if o.Call <= a.WindowEnd {
				cut = append(cut, o)
			}
		}
		r, info2 := porcupine.CheckOperationsVerbose(pm, cut, timeLeft(ctx, 10*time.Second))
		if r != porcupine.Illegal || porcupine.Visualize(pm, info2, &buf) != nil || int64(buf.Len()) > limit {
			return
		}
	}
	if err := os.WriteFile(spec.HTMLPath, buf.Bytes(), 0o644); err != nil {
		a.Message += fmt.Sprintf(" (visualization not written: %v)", err)
		return
	}
	res.HTML = spec.HTMLPath
}

// phantom finds the earliest-returning op that observed a value no
// non-failed op of the partition wrote (a read, dequeue, or log/set
// element); the initial null and empty reads are allowed.
func phantom(p *partition) int {
	wrote := make(map[string]bool, len(p.ops)/2+1)
	wrote["null"] = true
	for _, o := range p.ops {
		in := *o.Input.(*linIn)
		switch in.verb {
		case vWrite, vAppend, vAdd, vEnqueue:
			wrote[in.a] = true
		case vCAS:
			wrote[in.b] = true
		}
	}
	best := -1
	for i, o := range p.ops {
		in, out := *o.Input.(*linIn), *o.Output.(*linOut)
		if !out.known || (in.verb != vRead && in.verb != vDequeue) || in.verb == vRead && out.n >= 0 && out.s == "" {
			continue
		}
		bad := false
		if strings.HasSuffix(out.s, sep) || out.s == "" { // a log or set read
			for _, e := range strings.Split(strings.TrimSuffix(out.s, sep), sep) {
				if e != "" && !wrote[e] {
					bad = true
				}
			}
		} else {
			bad = !wrote[out.s]
		}
		if bad && (best < 0 || o.Return < p.ops[best].Return) {
			best = i
		}
	}
	return best
}

// replaySequential decides a partition whose ops do not overlap in real
// time: the only order respecting real time is invoke order, so replaying
// it is the whole check, in O(n) instead of porcupine's search. ok is false
// when two ops overlap (including any open-ended timed-out op that is not
// last), and porcupine must decide.
func replaySequential(m *modelDef, ops []porcupine.Operation) (porcupine.CheckResult, bool) {
	order := make([]int32, len(ops))
	sorted := true
	for i := range ops {
		order[i] = int32(i)
		if i > 0 && ops[i].Call < ops[i-1].Call {
			sorted = false
		}
	}
	if !sorted {
		slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	}
	for i := 1; i < len(order); i++ {
		if ops[order[i-1]].Return >= ops[order[i]].Call {
			return "", false
		}
	}
	st := m.init
	for _, i := range order {
		ok, next := m.step(st, *ops[i].Input.(*linIn), *ops[i].Output.(*linOut))
		if !ok {
			return porcupine.Illegal, true
		}
		st = next
	}
	return porcupine.Ok, true
}
