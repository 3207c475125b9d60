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

// partitionOps groups the ops per key and converts them for porcupine in
// two passes on the worker pool. The first walks the history in order
// (each worker a stretch of it, so the ops and the file are read
// sequentially) and converts every op into its key's slot of one shared
// array, noting what the dirty scan needs; the second works key by key on
// those slots only: the dirty scan, the compaction of dropped ops, the
// pruning pass. Only numbering keys and clients runs on one core.
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
	idx := make([]int, len(ops))     // history index per slot
	posOf := make([]int32, len(ops)) // slot per history index
	slot := slices.Clone(start[:len(keys)])
	for i, k := range keyOf {
		idx[slot[k]], posOf[i] = i, int32(slot[k])
		slot[k]++
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(ops)/4096))
	pool := func(n int, f func(w, i int)) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < min(workers, n); w++ {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					f(w, i)
				}
			})
		}
		wg.Wait()
	}

	// Pass 1, in history order: convert, with the return of an op whose
	// answer never came left open (its "infinity" is after every event of
	// the keys that are checked, known only after the dirty scan).
	grouped := make([]porcupine.Operation, len(ops))
	flags := make([]uint8, len(ops)) // per slot: slotKept, slotOpen and the dirty scan's bits
	// The dirty scan reads a converted op's facts from its conversion;
	// only the others (a failed write, an op the model rejects) are
	// noted here, with their slot.
	type extraFacts struct {
		slot int32
		f    dirtyFacts
	}
	extras := make([][]extraFacts, workers)
	type badOp struct {
		i   int
		err error
	}
	bads := make([][]badOp, workers)
	keyMax := make([][]int64, workers) // per worker, per key: the latest timestamp
	for w := range keyMax {
		keyMax[w] = make([]int64, len(keys))
	}
	const stretch = 4096
	pool((len(ops)+stretch-1)/stretch, func(w, c int) {
		slab := opSlab{pairs: make([]linPair, 0, stretch)}
		km := keyMax[w]
		for i := c * stretch; i < min(len(ops), (c+1)*stretch); i++ {
			op := &ops[i]
			k, s := keyOf[i], posOf[i]
			km[k] = max(km[k], op.InvokeTS)
			if op.CompleteTS != nil {
				km[k] = max(km[k], *op.CompleteTS)
			}
			po, kp, err := m.convert(op, 0, &slab)
			if o.dirty && (!kp || err != nil) {
				// Also for an op the model rejects: its key may be
				// dirty, and then the op is not judged at all.
				if f := factsOf(op); f.isW || f.seen != "" {
					extras[w] = append(extras[w], extraFacts{s, f})
					flags[s] = f.bits()
				}
			}
			if err != nil {
				bads[w] = append(bads[w], badOp{i, err})
				continue
			}
			if !kp {
				continue
			}
			flags[s] = slotKept
			if unknown(op) {
				flags[s] |= slotOpen
			}
			if o.dirty {
				flags[s] |= keptBits(&po, flags[s]&slotOpen != 0)
			}
			// Field by field: a whole-struct copy into this pointerful
			// array is a bulk write barrier while the GC runs, which it
			// does during a large load.
			g := &grouped[s]
			g.Input, g.Output, g.Call, g.Return = po.Input, po.Output, po.Call, po.Return
		}
	})

	// Pass 2, per key: the dirty scan.
	var extra []extraFacts
	for _, e := range extras {
		extra = append(extra, e...)
	}
	slices.SortFunc(extra, func(a, b extraFacts) int { return cmp.Compare(a.slot, b.slot) })
	dirtyAt := make([]int, len(keys)) // history index of the key's dirty op; -1: clean
	dirty := make([]DirtyRead, len(keys))
	bufs := make([][]dirtyFacts, workers)
	pool(len(keys), func(w, k int) {
		dirtyAt[k] = -1
		if !o.dirty {
			return
		}
		lo, hi := start[k], start[k+1]
		e0, _ := slices.BinarySearchFunc(extra, int32(lo), func(x extraFacts, s int32) int { return cmp.Compare(x.slot, s) })
		// The scan's answer is "clean" unless some op observed a value
		// while no acknowledged write had completed: settled from the
		// bits and times alone for almost every key.
		firstAck, acked, suspect := int64(0), false, false
		for pass := 0; pass < 2 && !suspect; pass++ {
			e := e0
			for j := lo; j < hi; j++ {
				f := flags[j]
				call, ret := grouped[j].Call, grouped[j].Return
				if f&slotKept == 0 && f != 0 {
					call, ret = extra[e].f.invoke, extra[e].f.ackAt
					e++
				}
				switch {
				case pass == 0 && f&dirtyAck != 0 && (!acked || ret < firstAck):
					firstAck, acked = ret, true
				case pass == 1 && f&dirtySeen != 0 && !(acked && call > firstAck):
					suspect = true
				}
			}
		}
		if !suspect {
			return
		}
		buf := bufs[w][:0]
		e := e0
		for j := lo; j < hi; j++ {
			var f dirtyFacts
			switch {
			case flags[j]&slotKept != 0:
				f = keptFacts(&grouped[j], flags[j]&slotOpen != 0)
			case flags[j] != 0:
				f = extra[e].f
				e++
			}
			buf = append(buf, f)
		}
		bufs[w] = buf
		if at, found := dirtyScan(buf); found {
			i := idx[lo+at]
			dirtyAt[k], dirty[k] = i, dirtyRead(&ops[i], buf[at].seen)
		}
	})
	var maxTS int64
	out.consumed = len(ops)
	var dirtyKeys []int
	for k := range keys {
		if dirtyAt[k] >= 0 {
			dirtyKeys = append(dirtyKeys, k)
			out.consumed -= int(count[k])
			continue
		}
		for w := range keyMax {
			maxTS = max(maxTS, keyMax[w][k])
		}
	}
	// Dirty keys in the order of their dirty op, as one pass would list them.
	slices.SortFunc(dirtyKeys, func(a, b int) int { return cmp.Compare(dirtyAt[a], dirtyAt[b]) })
	for _, k := range dirtyKeys {
		out.dirty = append(out.dirty, dirty[k])
	}
	// The error of the first bad op, in history order, on a key that is
	// checked, as a single pass would report it.
	var first *badOp
	for w := range bads {
		for b := range bads[w] {
			if bo := &bads[w][b]; dirtyAt[keyOf[bo.i]] < 0 && (first == nil || bo.i < first.i) {
				first = bo
			}
		}
	}
	if first != nil {
		return out, &fileline.Error{File: file, Line: ops[first.i].Line, Err: first.err}
	}
	infinity := maxTS + 1 // after every other event: an open-ended return

	// Pass 3, per clean key: close the open returns, compact out the
	// dropped ops, prune.
	parts := make([]*partition, len(keys))
	kept := make([]bool, len(ops)) // per history index
	pool(len(keys), func(_, k int) {
		if dirtyAt[k] >= 0 {
			return
		}
		lo, hi, n := start[k], start[k+1], start[k]
		for j := lo; j < hi; j++ {
			if flags[j]&slotKept == 0 {
				continue
			}
			if flags[j]&slotOpen != 0 {
				grouped[j].Return = infinity
			}
			if n != j {
				g, s := &grouped[n], &grouped[j]
				g.Input, g.Output, g.Call, g.Return = s.Input, s.Output, s.Call, s.Return
				idx[n] = idx[j]
			}
			kept[idx[n]] = true
			n++
		}
		if n > lo { // else every op of the key dropped: nothing to check
			parts[k] = &partition{key: keys[k], ops: grouped[lo:n:n], idx: idx[lo:n:n]}
		}
	})
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
	pool(len(parts), func(_, i int) {
		p := parts[i]
		for j := range p.ops {
			p.ops[j].ClientId = int(renum[clientOf[p.idx[j]]])
		}
		if o.prune {
			dropUnobserved(p)
		}
	})
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
