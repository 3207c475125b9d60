package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
)

// leaseParams100 is ttl 100 ns with 10 ns clock uncertainty: a definite
// grant answered at c after being sent at i holds certainly over
// [c, i+90) and at most until c+110.
var leaseParams100 = map[string]string{"ttl": "100", "uncertainty": "10ns", "guarded": "write"}

var leaseCases = []exclusionCase{
	{name: "hand-off after release", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 50 60 release L _ true", "q 70 80 acquire L _ true"}},
	{name: "hand-off after expiry", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "q 200 210 acquire L _ true"}},
	{name: "next grant within the uncertainty", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "q 85 95 acquire L _ true"}},
	{name: "granted while the lease is valid", want: Invalid, kind: "overlapping-leases", opIDs: []string{"1", "2"}, rows: []string{
		"p 0 10 acquire L _ true", "q 50 60 acquire L _ true"}},
	{name: "both answered inside each other's lease", want: Invalid, kind: "overlapping-leases", rows: []string{
		"p 0 10 acquire L _ true", "q 5 20 acquire L _ true"}},
	{name: "renew extends the lease", want: Invalid, kind: "overlapping-leases", rows: []string{
		"p 0 10 acquire L _ true", "p 80 85 renew L _ true", "q 120 130 acquire L _ true"}},
	{name: "next grant after the renewed lease", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 80 85 renew L _ true", "q 200 210 acquire L _ true"}},
	{name: "refused renew extends nothing", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 80 85 renew L _ false", "q 120 130 acquire L _ true"}},
	{name: "write served within the lease", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 100 110 write L 1 _"}},
	{name: "write served after expiry", want: Invalid, kind: "served-after-expiry", opIDs: []string{"1", "2"}, rows: []string{
		"p 0 10 acquire L _ true", "p 200 210 write L 1 _"}},
	{name: "write refused after expiry", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 200 210 write L 1 _ not-holder"}},
	{name: "renew served after expiry", want: Invalid, kind: "served-after-expiry", rows: []string{
		"p 0 10 acquire L _ true", "p 150 160 renew L _ true"}},
	{name: "renew refused after expiry", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 150 160 renew L _ false"}},
	{name: "renew served after release", want: Invalid, kind: "served-after-expiry", opIDs: []string{"1", "2", "3"}, rows: []string{
		"p 0 10 acquire L _ true", "p 20 30 release L _ true", "p 40 50 renew L _ true"}},
	{name: "write with no lease at all", want: Invalid, kind: "served-after-expiry", rows: []string{
		"p 0 10 write L 1 _"}},
	// Timed-out ops may have happened: both ways.
	{name: "timed-out renew may extend without bound", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 80 - renew L _ _", "p 300 310 write L 1 _"}},
	{name: "timed-out acquire may hold", want: Valid, rows: []string{
		"p 0 - acquire L _ _", "p 50 60 write L 1 _"}},
	{name: "timed-out acquire convicts no one", want: Valid, rows: []string{
		"p 0 - acquire L _ _", "q 50 60 acquire L _ true"}},
	{name: "timed-out release may have ended the lease", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 20 - release L _ _", "q 50 60 acquire L _ true"}},
	{name: "timed-out release by another process", want: Invalid, kind: "overlapping-leases", rows: []string{
		"p 0 10 acquire L _ true", "q 20 - release L _ _", "q 50 60 acquire L _ true"}},
	{name: "lease tokens go back", want: Invalid, kind: "fencing-token-regression", rows: []string{
		"p 0 10 acquire L _ 5", "q 200 210 acquire L _ 4"}},
	{name: "lease tokens increase", want: Valid, rows: []string{
		"p 0 10 acquire L _ 5", "q 200 210 acquire L _ 6"}},
}

func TestLeaseSafetyTable(t *testing.T) {
	for _, tt := range leaseCases {
		tt.params = leaseParams100
		t.Run(tt.name, func(t *testing.T) {
			res := runCase(t, LeaseSafety, tt)
			if !strings.Contains(res.Scope, "100ns") || len(res.Thresholds) != 2 {
				t.Fatalf("scope %q / thresholds %v do not state the ttl and uncertainty", res.Scope, res.Thresholds)
			}
		})
	}
}

// TestLeaseUncertaintyDecides: the same overlap is flagged with no clock
// uncertainty and not once the uncertainty covers it.
func TestLeaseUncertaintyDecides(t *testing.T) {
	rows := []string{"p 0 10 acquire L _ true", "q 85 95 acquire L _ true"}
	for _, tt := range []struct {
		u    string
		want Outcome
	}{{"0", Invalid}, {"4ns", Invalid}, {"10ns", Valid}} {
		res, err := Run(context.Background(), Spec{Model: "lease", Checker: LeaseSafety, Params: map[string]string{"ttl": "100ns", "uncertainty": tt.u}}, h(t, rows...), nil)
		if err != nil || res.Outcome != tt.want {
			t.Errorf("uncertainty %s: %s %v, want %s", tt.u, res.Outcome, err, tt.want)
		}
	}
}

func TestLockAndLeaseExpiredLimitIsUnknown(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tt := range []struct {
		checker string
		cases   []exclusionCase
	}{{MutualExclusion, lockCases}, {LeaseSafety, leaseCases}} {
		for _, c := range tt.cases {
			res, err := Run(expired, Spec{Model: "lock", Checker: tt.checker, Params: leaseParams100}, h(t, c.rows...), nil)
			if err != nil || res.Outcome != Unknown || !strings.Contains(res.Reason, "time limit") {
				t.Fatalf("%s %q with an expired limit: %s %q %v, want unknown citing the time limit", tt.checker, c.name, res.Outcome, res.Reason, err)
			}
		}
	}
}

// leaseSim is a simulated lease service (server clock = history clock):
// effects one at a time, ops jittered around them, some timing out.
// bug plants grants over a valid lease or writes served after expiry
// that the history makes definite, counted in planted.
type leaseSim struct {
	rng     *rand.Rand
	ops     []history.Op
	planted int
}

const (
	bugOverGrant = iota + 1
	bugLateWrite
)

func (s *leaseSim) run(n, procs int, ttl, u int64, bug int) []history.Op {
	const d = 20
	holder, expires, token := -1, int64(0), int64(0)
	busy := make([]int64, procs)
	noRelease := make([]int64, procs)
	// lastDef: the holder's latest answered grant or renew (invoke,
	// completion), valid while it has not tried to release since.
	type span struct{ inv, comp int64 }
	lastDef := make([]*span, procs)
	maxExp := make([]int64, procs)     // the latest the checker may think p's lease lasts
	lostRelease := make([]bool, procs) // a timed-out release may take effect at any time
	e := int64(1000)
	for len(s.ops) < n {
		e += 1 + s.rng.Int64N(4*d)
		p := s.rng.IntN(procs)
		inv := e - s.rng.Int64N(d)
		if inv <= busy[p] {
			continue
		}
		comp := e + s.rng.Int64N(d)
		timedOut := s.rng.IntN(10) == 0
		effect := !timedOut || s.rng.IntN(2) == 0
		op := history.Op{OpID: fmt.Sprint(len(s.ops) + 1), ProcessID: fmt.Sprint("p", p), Key: "L", InvokeTS: inv, Line: len(s.ops) + 1}
		valid := holder == p && e < expires
		var out any
		var errText string
		switch r := s.rng.IntN(10); {
		case r < 3:
			op.OpType = "acquire"
			granted := holder == -1 || e >= expires || holder == p
			if !granted && bug == bugOverGrant && !timedOut && lastDef[holder] != nil && !lostRelease[holder] &&
				inv > lastDef[holder].comp && comp < lastDef[holder].inv+ttl-u {
				granted = true
				noRelease[holder] = comp + d + 1
				s.planted++
			}
			out = map[string]any{"granted": false}
			if granted {
				if effect {
					if holder != p {
						token++
					}
					holder, expires = p, e+ttl
				}
				out = map[string]any{"granted": true, "token": token}
			}
		case r < 5:
			op.OpType = "renew"
			out = valid
			if valid && effect {
				expires = e + ttl
			}
		case r < 6:
			if e < noRelease[p] {
				continue
			}
			op.OpType = "release"
			out = holder == p
			if holder == p && effect {
				holder = -1
			}
			lastDef[p] = nil
			lostRelease[p] = lostRelease[p] || timedOut
		default:
			op.OpType = "write"
			op.Input = json.RawMessage("1")
			if !valid {
				errText = "not-holder"
				if bug == bugLateWrite && !timedOut && inv > maxExp[p] && s.rng.IntN(2) == 0 {
					errText = "" // served although the lease is gone
					s.planted++
				}
			}
		}
		granted := out == true || (op.OpType == "acquire" && out.(map[string]any)["granted"] == true)
		if timedOut && (op.OpType == "acquire" || op.OpType == "renew") {
			maxExp[p] = forever // the checker cannot know it was refused
		}
		if granted {
			if !timedOut {
				maxExp[p] = max(maxExp[p], comp+ttl+u)
				lastDef[p] = &span{inv, comp}
			}
		}
		if timedOut {
			op.TimeoutMarker = true
			busy[p] = e
		} else {
			c := comp
			op.CompleteTS = &c
			op.Error = errText
			if out != nil && errText == "" {
				op.Output, _ = json.Marshal(out)
			}
			busy[p] = comp
		}
		s.ops = append(s.ops, op)
	}
	return s.ops
}

func TestLeaseSafetySimulated(t *testing.T) {
	const seeds = 300
	const ttl, u = 400, 20
	params := map[string]string{"ttl": fmt.Sprint(ttl), "uncertainty": fmt.Sprint(u), "guarded": "write"}
	kinds := map[int]string{bugOverGrant: "overlapping-leases", bugLateWrite: "served-after-expiry"}
	caught := map[int]int{}
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, bug := range []int{bugNone, bugOverGrant, bugLateWrite} {
			s := &leaseSim{rng: rand.New(rand.NewPCG(seed, uint64(bug)))}
			ops := s.run(300, 4, ttl, u, bug)
			res, err := Run(context.Background(), Spec{Model: "lease", Checker: LeaseSafety, Params: params}, ops, nil)
			if err != nil {
				t.Fatalf("seed %d bug %d: %v", seed, bug, err)
			}
			switch {
			case s.planted == 0 && res.Outcome != Valid:
				t.Fatalf("seed %d bug %d: correct lease service judged %s: %+v", seed, bug, res.Outcome, res.Anomalies)
			case s.planted > 0 && !hasKind(res, kinds[bug]):
				t.Fatalf("seed %d bug %d: %d planted, outcome %s, anomalies %+v lack %s", seed, bug, s.planted, res.Outcome, res.Anomalies, kinds[bug])
			case s.planted > 0:
				caught[bug]++
			}
		}
	}
	for _, bug := range []int{bugOverGrant, bugLateWrite} {
		if caught[bug] < seeds*8/10 {
			t.Errorf("bug %d planted (and caught) in only %d of %d seeds", bug, caught[bug], seeds)
		}
	}
	t.Logf("planted and caught: grant over a valid lease %d/%d seeds, write after expiry %d/%d", caught[bugOverGrant], seeds, caught[bugLateWrite], seeds)
}

// TestLockAndLeaseCutShortNeverPass: a limit that passes in the middle of
// the check (at its first look after the start) leaves a correct history
// Unknown, never Valid.
func TestLockAndLeaseCutShortNeverPass(t *testing.T) {
	lock := (&lockSim{rng: rand.New(rand.NewPCG(7, 0))}).run(5000, 4, bugNone)
	lease := (&leaseSim{rng: rand.New(rand.NewPCG(7, 0))}).run(5000, 4, 400, 20, bugNone)
	params := map[string]string{"ttl": "400", "uncertainty": "20", "guarded": "write"}
	checks := map[string]func(ctx context.Context) (Result, error){
		MutualExclusion: func(ctx context.Context) (Result, error) { return checkLock(ctx, Spec{}, lock) },
		LeaseSafety:     func(ctx context.Context) (Result, error) { return checkLease(ctx, Spec{Params: params}, lease) },
	}
	for id, check := range checks {
		res, err := check(context.Background())
		if err != nil || res.Outcome != "" || len(res.Anomalies) != 0 {
			t.Fatalf("%s in time: %s %v %+v, want no anomaly", id, res.Outcome, err, res.Anomalies)
		}
		res, err = check(&cutCtx{Context: context.Background(), n: 1})
		if err != nil || res.Outcome != Unknown || !strings.Contains(res.Reason, "time limit") {
			t.Fatalf("%s cut short: %s %q %v, want unknown citing the time limit", id, res.Outcome, res.Reason, err)
		}
	}
}
