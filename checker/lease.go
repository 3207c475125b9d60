package checker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/history"
)

// LeaseSafety is the lease checker's id (docs/history-and-checkers.md
// §5.18): no two processes hold a valid lease at once, a holder is not
// served once its lease has expired, fencing tokens increase.
const LeaseSafety = "lease-safety"

// leaseParams are lease-safety's parameters: ttl (required) and
// uncertainty, each a Go duration ("10s") or integer nanoseconds, and
// guarded, the comma-separated op types a holder is served under its lease.
type leaseParams struct {
	ttl, uncertainty int64
	guarded          map[string]bool
}

func parseLeaseParams(p map[string]string) (leaseParams, error) {
	var lp leaseParams
	dur := func(name string, required bool) (int64, error) {
		v, set := p[name]
		if !set || strings.TrimSpace(v) == "" {
			if required {
				return 0, fmt.Errorf("lease-safety needs param %s (the lease TTL on the history's clock, e.g. --param %s=10s)", name, name)
			}
			return 0, nil
		}
		v = strings.TrimSpace(v)
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("lease-safety param %s=%q: want a duration (10s, 250ms) or integer nanoseconds, not negative", name, v)
		}
		return int64(d), nil
	}
	var err error
	if lp.ttl, err = dur("ttl", true); err != nil {
		return lp, err
	}
	if lp.ttl == 0 {
		return lp, fmt.Errorf("lease-safety param ttl must be positive")
	}
	if lp.uncertainty, err = dur("uncertainty", false); err != nil {
		return lp, err
	}
	lp.guarded = map[string]bool{}
	for _, t := range strings.Split(p["guarded"], ",") {
		if t = strings.TrimSpace(t); t != "" {
			if _, isLock := lockVerb(t, true); isLock {
				return lp, fmt.Errorf("lease-safety param guarded: %q is a lease op, not an op served under the lease", t)
			}
			lp.guarded[t] = true
		}
	}
	return lp, nil
}

// checkLease is the lease-safety checker (docs/history-and-checkers.md
// §5.18). On the history's clock, with the declared clock uncertainty u
// counted in the holder's favour:
//
//   - a definite grant or renew g makes its process a definite holder from
//     g's completion until g's invoke + ttl − u (the earliest the lease can
//     expire), or until the invoke of a release of its that may have taken
//     effect; two such windows of different processes that intersect are
//     overlapping leases;
//   - the latest a process's lease can last is the latest
//     completion + ttl + u over its grants and renews that may have taken
//     effect (a timed-out one: without bound), cut at the completion of a
//     definite release invoked after it; an ok renew or guarded op invoked
//     after that moment was served to a holder whose lease had expired;
//   - fencing tokens of definite acquires increase in grant order (as for
//     mutual-exclusion).
func checkLease(ctx context.Context, spec Spec, ops []history.Op) (Result, error) {
	b := newBudget(ctx)
	lp, err := parseLeaseParams(spec.Params)
	if err != nil {
		return Result{}, err
	}
	res := Result{OpsConsumed: len(ops),
		Thresholds: []string{"ttl=" + time.Duration(lp.ttl).String(), "uncertainty=" + time.Duration(lp.uncertainty).String()},
		Scope: fmt.Sprintf("per lease key on the history's clock, ttl %v, clock uncertainty %v given to the holder: overlaps of leases both valid for certain, ops served to a holder after its lease had certainly expired, fencing tokens increasing; a timed-out grant or renew may have extended a lease without bound and never convicts; overlaps shorter than the uncertainty and expiry enforced only at the protected resource are not seen",
			time.Duration(lp.ttl), time.Duration(lp.uncertainty))}
	keys, byKey, _, err := lockKeys(spec.History, ops, true, lp.guarded)
	if err != nil {
		return Result{}, err
	}
	maxTS := maxTimestamp(ops)
	var an anomalies
	for _, k := range keys {
		if b.spent() {
			break
		}
		ls := byKey[k]
		overlaps(b, k, "lease", definiteHolds(b, ls, lp.ttl-lp.uncertainty), maxTS, &an)
		tokenRegressions(b, k, ls, &an)
		servedAfterExpiry(b, k, ls, lp, &an)
	}
	return b.finish(res, &an), nil
}

// servedAfterExpiry flags ok renews and guarded ops invoked after every
// lease their process may have held had expired or been released.
func servedAfterExpiry(b *budget, key string, ls []lockOp, lp leaseParams, an *anomalies) {
	type grant struct {
		l      *lockOp
		expiry int64
		cut    *history.Op // the release that ended it early
	}
	byProc := map[int][]grant{}
	releases := map[int][]*lockOp{}
	var served []*lockOp
	for i := range ls {
		l := &ls[i]
		switch {
		case (l.kind == kAcquire || l.kind == kRenew) && l.state != gNo:
			byProc[l.proc] = append(byProc[l.proc], grant{l: l, expiry: satAdd(end(l.op), lp.ttl+lp.uncertainty)})
		case l.kind == kRelease && l.state == gYes:
			releases[l.proc] = append(releases[l.proc], l)
		}
		if (l.kind == kRenew || l.kind == kServed) && l.state == gYes {
			served = append(served, l)
		}
	}
	for p, gs := range byProc {
		rs := releases[p]
		sort.Slice(rs, func(i, j int) bool { return rs[i].op.InvokeTS < rs[j].op.InvokeTS })
		// sufMin[i]: the release with the earliest completion among rs[i:].
		sufMin := make([]*history.Op, len(rs)+1)
		for i := len(rs) - 1; i >= 0; i-- {
			sufMin[i] = sufMin[i+1]
			if sufMin[i] == nil || *rs[i].op.CompleteTS < *sufMin[i].CompleteTS {
				sufMin[i] = rs[i].op
			}
		}
		for i := range gs {
			e := end(gs[i].l.op)
			at := sort.Search(len(rs), func(j int) bool { return rs[j].op.InvokeTS > e })
			if r := sufMin[at]; r != nil && *r.CompleteTS < gs[i].expiry {
				gs[i].expiry, gs[i].cut = *r.CompleteTS, r
			}
		}
		sort.Slice(gs, func(i, j int) bool { return gs[i].l.op.InvokeTS < gs[j].l.op.InvokeTS })
		byProc[p] = gs
	}
	// best[p][i]: the grant with the latest expiry among byProc[p][:i].
	best := map[int][]int{}
	for p, gs := range byProc {
		bi := make([]int, len(gs)+1)
		bi[0] = -1
		for i := range gs {
			bi[i+1] = bi[i]
			if bi[i] < 0 || gs[i].expiry > gs[bi[i]].expiry {
				bi[i+1] = i
			}
		}
		best[p] = bi
	}
	for _, o := range served {
		if b.spent() {
			return
		}
		gs := byProc[o.proc]
		j := sort.Search(len(gs), func(i int) bool { return gs[i].l.op.InvokeTS >= *o.op.CompleteTS })
		self := -1
		for i := 0; i < j; i++ { // o's own place: gs is sorted by invoke
			if gs[i].l == o {
				self = i
				break
			}
			if gs[i].l.op.InvokeTS > o.op.InvokeTS {
				break
			}
		}
		top := -1
		if bi := best[o.proc]; bi != nil {
			top = bi[j]
		}
		if self >= 0 {
			top = best[o.proc][self]
			for i := self + 1; i < j; i++ { // grants concurrent with o: few
				if b.spent() {
					return
				}
				if top < 0 || gs[i].expiry > gs[top].expiry {
					top = i
				}
			}
		}
		if top >= 0 && gs[top].expiry >= o.op.InvokeTS {
			continue
		}
		a := Anomaly{Kind: "served-after-expiry", Key: key, OpIDs: []string{o.op.OpID},
			WindowEnd: *o.op.CompleteTS, WindowStart: o.op.InvokeTS, FaultEpoch: o.op.FaultEpoch}
		what := fmt.Sprintf("lease %q: %s op %s (line %d, process %s) was served at %d..%d as holder", key, o.op.OpType, o.op.OpID, o.op.Line, o.op.ProcessID, o.op.InvokeTS, *o.op.CompleteTS)
		switch {
		case top < 0:
			a.Message = what + ", but the process holds no lease in the history before it"
		case gs[top].cut != nil:
			g := gs[top]
			a.OpIDs = append([]string{g.l.op.OpID, g.cut.OpID}, a.OpIDs...)
			a.WindowStart = *g.cut.CompleteTS
			a.Message = what + fmt.Sprintf(", but its lease from op %s (line %d) was released by op %s, completed at %d", g.l.op.OpID, g.l.op.Line, g.cut.OpID, *g.cut.CompleteTS)
		default:
			g := gs[top]
			a.OpIDs = append([]string{g.l.op.OpID}, a.OpIDs...)
			a.WindowStart = g.expiry
			a.Message = what + fmt.Sprintf(", but its latest lease, op %s (line %d, completed at %d), had expired by %d (ttl %v + uncertainty %v)",
				g.l.op.OpID, g.l.op.Line, *g.l.op.CompleteTS, g.expiry, time.Duration(lp.ttl), time.Duration(lp.uncertainty))
		}
		an.add(a)
	}
}
