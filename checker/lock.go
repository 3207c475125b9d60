package checker

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

// MutualExclusion is the lock checker's id (docs/history-and-checkers.md
// §5.17): no two processes hold a lock at once in any linearization of the
// history, and fencing tokens increase in grant order.
const MutualExclusion = "mutual-exclusion"

// forever is the end of a hold or lease nothing in the history ends.
const forever = int64(math.MaxInt64)

// grantState is what an acquire, renew or release answered: it took
// effect, it did not, or nobody knows (timed out: may have taken effect).
type grantState byte

const (
	gYes grantState = iota
	gNo
	gMaybe
)

// lockOp is one op of a lock or lease history, decoded once.
type lockOp struct {
	op    *history.Op
	kind  byte // kAcquire, kRenew, kRelease, kServed
	state grantState
	token int64
	tok   bool // token is set
	proc  int  // index of op.ProcessID
}

const (
	kAcquire byte = iota
	kRenew
	kRelease
	kServed // an op a lease holder is served (lease-safety's guarded types)
)

// lockVerb maps an op_type onto a lock op kind; lease adds renew.
func lockVerb(opType string, lease bool) (byte, bool) {
	switch opType {
	case "acquire", "lock":
		return kAcquire, true
	case "release", "unlock":
		return kRelease, true
	case "renew":
		return kRenew, lease
	}
	return 0, false
}

// decodeGrant reads an acquire's or renew's answer: output true, null (a
// blocking call that returned) or a number (the fencing token) is a grant;
// false is a refusal; {"granted": bool, "token": n} says both. An error
// answer is a refusal, a timeout unknown.
func decodeGrant(o *history.Op, l *lockOp) error {
	if unknown(o) {
		l.state = gMaybe
		return nil
	}
	if o.Error != "" {
		l.state = gNo
		return nil
	}
	l.state = gYes
	switch out := canon(o.Output); out {
	case "null", "true":
		return nil
	case "false":
		l.state = gNo
		return nil
	}
	if n, err := strconv.ParseInt(canon(o.Output), 10, 64); err == nil {
		l.token, l.tok = n, true
		return nil
	}
	var obj struct {
		Granted *bool  `json:"granted"`
		Token   *int64 `json:"token"`
	}
	if err := json.Unmarshal(o.Output, &obj); err != nil || (obj.Granted == nil && obj.Token == nil) {
		return fmt.Errorf("%s output %s: want true, false, null, a fencing token (integer) or {\"granted\": bool, \"token\": n}", o.OpType, canon(o.Output))
	}
	if obj.Granted != nil && !*obj.Granted {
		l.state = gNo
	}
	if obj.Token != nil {
		l.token, l.tok = *obj.Token, true
	}
	return nil
}

// decodeRelease reads a release's answer: true or null took effect, false
// (not the holder) or an error did not, a timeout may have.
func decodeRelease(o *history.Op, l *lockOp) error {
	switch {
	case unknown(o):
		l.state = gMaybe
	case o.Error != "":
		l.state = gNo
	default:
		switch canon(o.Output) {
		case "null", "true":
			l.state = gYes
		case "false":
			l.state = gNo
		default:
			return fmt.Errorf("release output %s: want true, false or null", canon(o.Output))
		}
	}
	return nil
}

// lockKeys decodes ops into per-key lock ops, keys in first-seen order.
// served names the op types lease-safety counts as served to a holder.
func lockKeys(file string, ops []history.Op, lease bool, served map[string]bool) ([]string, map[string][]lockOp, map[string]int, error) {
	procs := map[string]int{}
	byKey := map[string][]lockOp{}
	var keys []string
	for i := range ops {
		o := &ops[i]
		l := lockOp{op: o}
		if _, seen := procs[o.ProcessID]; !seen {
			procs[o.ProcessID] = len(procs)
		}
		l.proc = procs[o.ProcessID]
		kind, isLock := lockVerb(o.OpType, lease)
		var err error
		switch {
		case isLock && kind == kRelease:
			l.kind = kind
			err = decodeRelease(o, &l)
		case isLock:
			l.kind = kind
			err = decodeGrant(o, &l)
		case served[o.OpType]:
			l.kind = kServed
			l.state = gNo
			if ok(o) {
				l.state = gYes
			} else if unknown(o) {
				l.state = gMaybe
			}
		default:
			want := "acquire (lock), release (unlock)"
			if lease {
				want = "acquire (lock), renew, release (unlock) or a type named in param guarded"
			}
			err = fmt.Errorf("op_type %q is not a lock op: want %s", o.OpType, want)
		}
		if err != nil {
			return nil, nil, nil, &fileline.Error{File: file, Line: o.Line, Err: fmt.Errorf("op %s: %w", o.OpID, err)}
		}
		if _, seen := byKey[o.Key]; !seen {
			keys = append(keys, o.Key)
		}
		byKey[o.Key] = append(byKey[o.Key], l)
	}
	return keys, byKey, procs, nil
}

// hold is a definite grant: the process held the lock from some moment in
// [grantFrom, start] (the grant op's invoke and completion) and certainly
// from start until end, the earliest moment anything in the history could
// have ended it (start >= end: only at the grant itself).
type hold struct {
	grant                 *lockOp
	grantFrom, start, end int64 // end: forever when nothing ends it
	ender                 *history.Op
}

// definiteHolds lists each definite grant's hold. The hold ends at the
// invoke of the holder's first release that may have taken effect after
// the grant (a definite or timed-out release completing after the grant's
// invoke), and, for a lease, at the grant's invoke plus lifetime (the
// earliest the lease can expire on the history's clock).
func definiteHolds(b *budget, ls []lockOp, lifetime int64) []hold {
	releases := map[int]*releaseHeap{}
	var grants []*lockOp
	for i := range ls {
		switch l := &ls[i]; {
		case l.kind == kRelease && l.state != gNo:
			if releases[l.proc] == nil {
				releases[l.proc] = &releaseHeap{}
			}
			releases[l.proc].ops = append(releases[l.proc].ops, l.op)
		case (l.kind == kAcquire || l.kind == kRenew) && l.state == gYes:
			grants = append(grants, l)
		}
	}
	for _, rh := range releases {
		heap.Init(rh)
	}
	// In invoke order, a release that ended before a grant's invoke ends no
	// later grant of its process either: the heap drops it for good, so
	// each grant's first ender is its process's top release.
	sort.SliceStable(grants, func(i, j int) bool { return grants[i].op.InvokeTS < grants[j].op.InvokeTS })
	hs := make([]hold, 0, len(grants))
	for _, g := range grants {
		if b.spent() {
			return hs
		}
		h := hold{grant: g, grantFrom: g.op.InvokeTS, start: *g.op.CompleteTS, end: forever}
		if lifetime >= 0 {
			h.end = satAdd(g.op.InvokeTS, lifetime)
		}
		if rh := releases[g.proc]; rh != nil {
			for rh.Len() > 0 && end(rh.ops[0]) <= g.op.InvokeTS {
				heap.Pop(rh)
			}
			if rh.Len() > 0 && rh.ops[0].InvokeTS < h.end {
				h.end, h.ender = rh.ops[0].InvokeTS, rh.ops[0]
			}
		}
		hs = append(hs, h)
	}
	return hs
}

// releaseHeap orders one process's releases by invoke, earliest first.
type releaseHeap struct{ ops []*history.Op }

func (r *releaseHeap) Len() int           { return len(r.ops) }
func (r *releaseHeap) Less(i, j int) bool { return r.ops[i].InvokeTS < r.ops[j].InvokeTS }
func (r *releaseHeap) Swap(i, j int)      { r.ops[i], r.ops[j] = r.ops[j], r.ops[i] }
func (r *releaseHeap) Push(x any)         { r.ops = append(r.ops, x.(*history.Op)) }
func (r *releaseHeap) Pop() any {
	x := r.ops[len(r.ops)-1]
	r.ops = r.ops[:len(r.ops)-1]
	return x
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return forever
	}
	return a + b
}

// overlaps finds pairs of definite holds of different processes that
// meet in every linearization: their certain windows intersect, or one
// grant began and ended inside the other's certain window (granted while
// the other certainly held it).
func overlaps(b *budget, key, noun string, hs []hold, maxTS int64, an *anomalies) {
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].grantFrom < hs[j].grantFrom })
	var active []hold
	for _, h := range hs {
		if b.spent() {
			return
		}
		kept := active[:0]
		for _, a := range active {
			if a.end > h.grantFrom {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			if b.spent() {
				return
			}
			if a.grant.proc == h.grant.proc {
				continue
			}
			from, to := max(a.start, h.start), min(a.end, h.end)
			inside := h.grantFrom > a.start && h.start < a.end
			if from >= to && !inside {
				continue
			}
			if inside && from >= to {
				from, to = h.grantFrom, h.start
			}
			shown := to
			if shown == forever {
				shown = maxTS
			}
			an.add(Anomaly{Kind: "overlapping-" + noun + "s", Key: key,
				OpIDs:       []string{a.grant.op.OpID, h.grant.op.OpID},
				WindowStart: from, WindowEnd: shown, FaultEpoch: h.grant.op.FaultEpoch,
				Message: fmt.Sprintf("%s %q held by process %s and process %s at once from %d to %s ns: %s; %s",
					noun, key, a.grant.op.ProcessID, h.grant.op.ProcessID, from, endText(to),
					holdText(a), holdText(h))})
		}
		active = append(active, h)
	}
}

func endText(t int64) string {
	if t == forever {
		return "the end of the history"
	}
	return strconv.FormatInt(t, 10)
}

func holdText(h hold) string {
	s := fmt.Sprintf("%s op %s (line %d, process %s) granted within %d..%d", h.grant.op.OpType, h.grant.op.OpID, h.grant.op.Line, h.grant.op.ProcessID, h.grantFrom, h.start)
	if h.ender != nil {
		return s + fmt.Sprintf(", held until release op %s was invoked at %d", h.ender.OpID, h.end)
	}
	if h.end == forever {
		return s + ", never released"
	}
	return s + fmt.Sprintf(", valid until %d", h.end)
}

// tokenRegressions finds definite grants whose fencing token does not
// increase in grant order: grant b began after grant a ended (so a was
// granted first in every linearization) yet b's token is smaller, or equal
// while b's process held nothing it could be re-entering.
func tokenRegressions(b *budget, key string, ls []lockOp, an *anomalies) {
	var grants []*lockOp
	for i := range ls {
		if l := &ls[i]; l.kind == kAcquire && l.state == gYes && l.tok {
			grants = append(grants, l)
		}
	}
	byEnd := append([]*lockOp(nil), grants...)
	sort.SliceStable(byEnd, func(i, j int) bool { return *byEnd[i].op.CompleteTS < *byEnd[j].op.CompleteTS })
	byInvoke := append([]*lockOp(nil), grants...)
	sort.SliceStable(byInvoke, func(i, j int) bool { return byInvoke[i].op.InvokeTS < byInvoke[j].op.InvokeTS })
	var best *lockOp // highest token among grants completed so far
	next := 0
	for _, g := range byInvoke {
		if b.spent() {
			return
		}
		for next < len(byEnd) && *byEnd[next].op.CompleteTS < g.op.InvokeTS {
			if best == nil || byEnd[next].token > best.token {
				best = byEnd[next]
			}
			next++
		}
		switch {
		case best == nil:
		case g.token < best.token:
			an.add(tokenAnomaly(key, best, g, "went back"))
		case g.token == best.token && g.proc != best.proc && !mayReenter(ls, g, best):
			an.add(tokenAnomaly(key, best, g, "was handed out twice"))
		}
	}
}

// mayReenter reports whether g's process may already have held the lock
// at g through another acquire after a's grant, so that g may be a
// re-entrant grant repeating the current token.
func mayReenter(ls []lockOp, g, a *lockOp) bool {
	for i := range ls {
		c := &ls[i]
		if c != g && c.kind == kAcquire && c.proc == g.proc && c.state != gNo &&
			c.op.InvokeTS < *g.op.CompleteTS && end(c.op) > a.op.InvokeTS {
			return true
		}
	}
	return false
}

func tokenAnomaly(key string, a, g *lockOp, what string) Anomaly {
	return Anomaly{Kind: "fencing-token-regression", Key: key, OpIDs: []string{a.op.OpID, g.op.OpID},
		WindowStart: a.op.InvokeTS, WindowEnd: *g.op.CompleteTS, FaultEpoch: g.op.FaultEpoch,
		Message: fmt.Sprintf("%q: fencing token %s: op %s (line %d, process %s) was granted token %d after op %s (line %d, process %s) had been granted token %d",
			key, what, g.op.OpID, g.op.Line, g.op.ProcessID, g.token, a.op.OpID, a.op.Line, a.op.ProcessID, a.token)}
}

// mutexIn is the porcupine input of a lock op; the outcome is in it too,
// so the output is unused.
type mutexIn struct {
	l *lockOp
}

// mutexState is the lock's holder (-1: free) and the last fencing token
// handed out (known only once a grant carried one).
type mutexState struct {
	holder int
	last   int64
	known  bool
}

// mutexModel is the sequential specification of a lock with fencing
// tokens. A definite grant needs the lock free (or held by the same
// process: re-entrant) and a token above the last one (equal when
// re-entering). A timed-out acquire takes a free lock and leaves a held
// one alone: had it not taken effect, placing it after every other op
// (its return is unknown, so porcupine may) is the same history. A release
// that may have taken effect frees the lock when its process holds it and
// is a no-op otherwise; a refused acquire or release is not in the
// history at all.
func mutexModel(stop func() bool) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return mutexState{holder: -1} },
		StepContext: func(_ context.Context, state, input, _ any) (bool, any) {
			if stop != nil && stop() {
				return false, state
			}
			st, l := state.(mutexState), input.(mutexIn).l
			switch {
			case l.kind == kRelease:
				if st.holder == l.proc {
					st.holder = -1
				}
				return true, st
			case l.state == gMaybe:
				if st.holder == -1 {
					st.holder = l.proc
				}
				return true, st
			case st.holder != -1 && st.holder != l.proc:
				return false, st
			}
			if l.tok {
				if st.known && (l.token < st.last || (l.token == st.last && st.holder == -1)) {
					return false, st
				}
				st.last, st.known = l.token, true
			}
			st.holder = l.proc
			return true, st
		},
		DescribeOperation: func(input, _ any) string {
			l := input.(mutexIn).l
			s := fmt.Sprintf("%s %s %s", l.op.ProcessID, l.op.OpType, l.op.OpID)
			if l.state == gMaybe {
				s += " (timed out)"
			}
			if l.tok {
				s += fmt.Sprintf(" token %d", l.token)
			}
			return s
		},
		DescribeState: func(state any) string {
			st := state.(mutexState)
			if st.holder < 0 {
				return "free"
			}
			return fmt.Sprintf("held by #%d", st.holder)
		},
	}
}

// checkMutex runs porcupine's mutex model over one key's ops; ok is false
// when the time limit stopped it. pops are all the ops that took or may
// have taken effect, for the caller's evidence.
//
// It first tries without the timed-out acquires, which stay open to the
// end of the history and multiply porcupine's search. That is exact when
// it passes: a timed-out op's step always succeeds and its return is after
// every other event, so any order of the rest extends to one of the whole
// history by placing the timed-out acquires last. When it fails, the
// whole history decides (a timed-out acquire can be what makes a later
// re-entrant grant with the same token legal).
func checkMutex(ctx context.Context, ls []lockOp) (res porcupine.CheckResult, pops []porcupine.Operation, ok bool) {
	pops = mutexOps(ls, true)
	if fewer := mutexOps(ls, false); len(fewer) < len(pops) {
		r, decided := runMutex(ctx, fewer)
		if !decided {
			return porcupine.Unknown, pops, false
		}
		if r == porcupine.Ok {
			return r, pops, true
		}
	}
	r, decided := runMutex(ctx, pops)
	return r, pops, decided
}

// mutexOps converts one key's lock ops for porcupine: those that did not
// take effect constrain nothing and are left out, and so are timed-out
// acquires unless withOpen.
func mutexOps(ls []lockOp, withOpen bool) []porcupine.Operation {
	var maxTS int64
	for i := range ls {
		maxTS = max(maxTS, ls[i].op.InvokeTS)
		if ls[i].op.CompleteTS != nil {
			maxTS = max(maxTS, *ls[i].op.CompleteTS)
		}
	}
	var pops []porcupine.Operation
	for i := range ls {
		l := &ls[i]
		if l.state == gNo || l.kind == kServed || (!withOpen && l.state == gMaybe && l.kind == kAcquire) {
			continue
		}
		ret := maxTS + 1
		if l.op.CompleteTS != nil && l.state != gMaybe {
			ret = *l.op.CompleteTS
		}
		pops = append(pops, porcupine.Operation{ClientId: l.proc, Input: mutexIn{l}, Call: l.op.InvokeTS, Return: ret})
	}
	return pops
}

// runMutex is one porcupine search under ctx's limit; decided is false
// when the limit stopped it.
func runMutex(ctx context.Context, pops []porcupine.Operation) (porcupine.CheckResult, bool) {
	var stop atomic.Bool
	cancel := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer cancel()
	limit := timeLeft(ctx, 0)
	if _, has := ctx.Deadline(); has && limit <= 0 {
		return porcupine.Unknown, false
	}
	r := porcupine.CheckOperationsTimeout(mutexModel(stop.Load), pops, limit)
	if stop.Load() || ctx.Err() != nil {
		return porcupine.Unknown, false
	}
	return r, r != porcupine.Unknown
}

// blocker names the op porcupine could not place: outside the longest
// partial linearization, the one whose response came first.
func blocker(ctx context.Context, key string, pops []porcupine.Operation) (Anomaly, bool) {
	limit := min(timeLeft(ctx, 10*time.Second), 10*time.Second)
	if limit <= 0 {
		return Anomaly{}, false
	}
	r, info := porcupine.CheckOperationsVerbose(mutexModel(nil), pops, limit)
	parts := info.PartialLinearizations()
	if r != porcupine.Illegal || len(parts) == 0 {
		return Anomaly{}, false
	}
	var longest []int
	for _, seq := range parts[0] {
		if len(seq) > len(longest) {
			longest = seq
		}
	}
	in := make([]bool, len(pops))
	for _, id := range longest {
		in[id] = true
	}
	bi := -1
	for i, o := range pops {
		if !in[i] && (bi < 0 || o.Return < pops[bi].Return) {
			bi = i
		}
	}
	if bi < 0 {
		return Anomaly{}, false
	}
	l := pops[bi].Input.(mutexIn).l
	return Anomaly{Kind: "no-exclusive-order", Key: key, OpIDs: []string{l.op.OpID},
		WindowStart: pops[bi].Call, WindowEnd: pops[bi].Return, FaultEpoch: l.op.FaultEpoch,
		Message: fmt.Sprintf("lock %q: no order of the acquires and releases keeps one holder at a time with increasing tokens: op %s (line %d, process %s) cannot follow the longest consistent prefix (%d of %d ops)",
			key, l.op.OpID, l.op.Line, l.op.ProcessID, len(longest), len(pops))}, true
}

// checkLock is the mutual-exclusion checker (docs/history-and-checkers.md
// §5.17). Per lock key, porcupine decides whether some linearization
// keeps one holder at a time with increasing fencing tokens; the overlap
// and token finders name the evidence (both holders, their ops and the
// window). A violation porcupine finds that neither finder can pin down is
// reported as the op it could not place.
func checkLock(ctx context.Context, spec Spec, ops []history.Op) (Result, error) {
	b := newBudget(ctx)
	res := Result{OpsConsumed: len(ops),
		Scope: "per lock key: one holder at a time in some order of the acquires and releases consistent with real time, fencing tokens increasing in grant order; a timed-out acquire or release may or may not have taken effect and never convicts on its own; cannot see a lock that expires on the server (use lease-safety) nor whether the protected resource enforces the tokens"}
	keys, byKey, _, err := lockKeys(spec.History, ops, false, nil)
	if err != nil {
		return Result{}, err
	}
	maxTS := maxTimestamp(ops)
	var an anomalies
	unknownKeys := 0
	for _, k := range keys {
		if b.spent() {
			break
		}
		ls := byKey[k]
		before := len(an.list) + an.dropped
		overlaps(b, k, "lock", definiteHolds(b, ls, -1), maxTS, &an)
		tokenRegressions(b, k, ls, &an)
		found := len(an.list)+an.dropped > before
		r, pops, decided := checkMutex(ctx, ls)
		switch {
		case !decided:
			if !found {
				unknownKeys++
			}
		case r == porcupine.Illegal && !found:
			a, named := blocker(ctx, k, pops)
			if !named {
				a = Anomaly{Kind: "no-exclusive-order", Key: k,
					Message: fmt.Sprintf("lock %q: no order of the acquires and releases keeps one holder at a time with increasing tokens", k)}
			}
			an.add(a)
		case r == porcupine.Ok && found:
			// The finders only report what holds in every order, so
			// porcupine must agree; a disagreement is a checker bug.
			return Result{}, errors.New("mutual-exclusion: internal error: porcupine found an order the overlap finder rules out")
		}
	}
	res = b.finish(res, &an)
	if unknownKeys > 0 && res.Outcome == "" && len(res.Anomalies) == 0 {
		res.Outcome = Unknown
		res.Reason = appendReason(res.Reason, fmt.Sprintf("time limit reached before %d lock keys were decided", unknownKeys))
	}
	return res, nil
}

func maxTimestamp(ops []history.Op) int64 {
	var m int64
	for i := range ops {
		m = max(m, ops[i].InvokeTS)
		if ops[i].CompleteTS != nil {
			m = max(m, *ops[i].CompleteTS)
		}
	}
	return m
}
