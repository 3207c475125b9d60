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
	pl, err := partitionOps(m, ops, file, linOpts{prune: true})
	return pl.parts, err
}

// linOpts are the optional passes of a linearizability check: the pruning
// pass (prune.go), off only where a test compares the verdicts with and
// without it; and the dirty-initial-state scan (dirty.go), on for the
// models whose written values are unique.
type linOpts struct{ prune, dirty bool }

// partitioned is a history split per key: the partitions to check, the
// keys left out because they start dirty, and the ops on the other keys.
type partitioned struct {
	parts    []*partition
	dirty    []DirtyRead
	consumed int
}

// partitionOps groups the ops per key, then works key by key on the
// worker pool: the dirty scan, the conversion for porcupine and the
// pruning pass each look at one key's ops only, so no pass over the whole
// history runs on one core beyond numbering keys and clients.
func partitionOps(m *modelDef, ops []history.Op, file string, o linOpts) (partitioned, error) {
	var out partitioned
	if len(ops) >= math.MaxInt32 {
		return out, fmt.Errorf("%d ops: more than a check can index", len(ops))
	}
	// Number keys and clients in one sequential pass (the only map
	// lookups per op) and size every key's range exactly: a counting
	// sort, so each key's ops keep history order.
	keyOf := make([]int32, len(ops))
	clientOf := make([]int32, len(ops))
	keyIDs := make(map[string]int32)
	clientIDs := make(map[string]int32)
	var keys []string
	var count []int32
	lastKey, lastK := "", int32(-1)
	for i := range ops {
		op := &ops[i]
		k := lastK
		// Interned keys repeat as the same string: a comparison of equal
		// pointers and lengths is cheaper than the map.
		if k < 0 || op.Key != lastKey {
			var ok bool
			if k, ok = keyIDs[op.Key]; !ok {
				k = int32(len(keys))
				keyIDs[op.Key] = k
				keys = append(keys, op.Key)
				count = append(count, 0)
			}
			lastKey, lastK = op.Key, k
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
	idx := make([]int, len(ops)) // history index per slot; -1 once dropped
	slot := slices.Clone(start[:len(keys)])
	for i, k := range keyOf {
		idx[slot[k]] = i
		slot[k]++
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(keys), len(ops)/4096))
	eachKey := func(f func(k int)) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Go(func() {
				for {
					k := int(next.Add(1) - 1)
					if k >= len(keys) {
						return
					}
					f(k)
				}
			})
		}
		wg.Wait()
	}

	// Pass 1, per key: the dirty scan and the latest timestamp.
	type keyInfo struct {
		dirty    *DirtyRead
		dirtyAt  int // history index of the dirty op
		maxTS    int64
		firstBad int // history index of the first op the model rejects; -1: none
		err      error
	}
	info := make([]keyInfo, len(keys))
	eachKey(func(k int) {
		in := &info[k]
		in.firstBad = -1
		kops := idx[start[k]:start[k+1]]
		if o.dirty {
			if d, at, found := dirtyKey(ops, kops); found {
				in.dirty, in.dirtyAt = &d, at
				return
			}
		}
		for _, i := range kops {
			in.maxTS = max(in.maxTS, ops[i].InvokeTS)
			if c := ops[i].CompleteTS; c != nil {
				in.maxTS = max(in.maxTS, *c)
			}
		}
	})
	var maxTS int64
	var dirtyAt []int
	out.consumed = len(ops)
	for k := range info {
		if d := info[k].dirty; d != nil {
			out.dirty = append(out.dirty, *d)
			dirtyAt = append(dirtyAt, info[k].dirtyAt)
			out.consumed -= int(count[k])
			continue
		}
		maxTS = max(maxTS, info[k].maxTS)
	}
	// Dirty keys in the order of their dirty op, as one pass would list them.
	order := make([]int, len(out.dirty))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(dirtyAt[a], dirtyAt[b]) })
	sorted := make([]DirtyRead, len(order))
	for i, j := range order {
		sorted[i] = out.dirty[j]
	}
	out.dirty = sorted
	infinity := maxTS + 1 // after every other event: an open-ended return

	// Pass 2, per clean key: convert into the key's own range of one
	// shared array (no per-partition growth, no second copy), compact
	// out the dropped ops, prune.
	grouped := make([]porcupine.Operation, len(ops))
	kept := make([]bool, len(ops))
	parts := make([]*partition, len(keys))
	eachKey(func(k int) {
		in := &info[k]
		if in.dirty != nil {
			return
		}
		// One block for the key's ops, not 1024 per key.
		slab := opSlab{pairs: make([]linPair, 0, count[k])}
		lo, hi, n := start[k], start[k+1], start[k]
		for j := lo; j < hi; j++ {
			i := idx[j]
			po, keep, err := m.convert(&ops[i], infinity, &slab)
			if err != nil {
				in.firstBad, in.err = i, err
				return
			}
			if !keep {
				continue
			}
			kept[i] = true
			// Field by field: a whole-struct copy into this pointerful
			// array is a bulk write barrier while the GC runs, which it
			// does during a large load.
			g := &grouped[n]
			g.Input, g.Output, g.Call, g.Return = po.Input, po.Output, po.Call, po.Return
			idx[n] = i
			n++
		}
		if n == lo {
			return // every op of the key dropped: nothing to check
		}
		parts[k] = &partition{key: keys[k], ops: grouped[lo:n:n], idx: idx[lo:n:n]}
	})
	// The error of the first bad op in history order, as a single pass
	// would report it.
	bad := -1
	for k := range info {
		if info[k].firstBad >= 0 && (bad < 0 || info[k].firstBad < info[bad].firstBad) {
			bad = k
		}
	}
	if bad >= 0 {
		return out, &fileline.Error{File: file, Line: ops[info[bad].firstBad].Line, Err: info[bad].err}
	}
	parts = slices.DeleteFunc(parts, func(p *partition) bool { return p == nil })
	// Partitions in order of their first kept op, and clients numbered the
	// same way (the visualization shows a row per process), as a single
	// sequential pass over the history would.
	slices.SortFunc(parts, func(a, b *partition) int { return cmp.Compare(a.idx[0], b.idx[0]) })
	renum := make([]int32, len(clientIDs))
	for i := range renum {
		renum[i] = -1
	}
	next := int32(0)
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
	}
	if o.prune {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= len(parts) {
						return
					}
					dropUnobserved(parts[i])
				}
			})
		}
		wg.Wait()
	}
	out.parts = parts
	return out, nil
}

// checkLinearizable runs porcupine per partition on a bounded worker pool.
// ctx carries the hard time limit; a partition cut short is Unknown. Keys
// with a dirty initial state are judged by no one: they are in
// Result.Dirty, the clean ones are checked as usual.
func checkLinearizable(ctx context.Context, spec Spec, m *modelDef, ops []history.Op) (Result, error) {
	return checkLin(ctx, spec, m, ops, linOpts{prune: true, dirty: uniqueValueModel(m.name)})
}

// checkLin is checkLinearizable with the optional passes of o.
func checkLin(ctx context.Context, spec Spec, m *modelDef, ops []history.Op, o linOpts) (Result, error) {
	res := Result{Checker: Linearizability, Model: spec.Model,
		Scope: "per-key linearizability (P-compositionality): cross-key anomalies (serializability, G2) are not detected; " +
			"timed-out ops may take effect at any point after their invoke or not at all; failed ops are dropped"}
	pl, err := partitionOps(m, ops, spec.History, o)
	if err != nil {
		return res, err
	}
	parts := pl.parts
	res.OpsConsumed, res.Dirty = pl.consumed, pl.dirty
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
