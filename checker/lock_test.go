package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

type exclusionCase struct {
	name   string
	rows   []string
	want   Outcome
	kind   string   // the anomaly kind expected when invalid
	opIDs  []string // the ops the anomaly must name, when set
	params map[string]string
}

// lockCases are mutual-exclusion's good and bad histories: every bad one
// next to its smallest good variant.
var lockCases = []exclusionCase{
	{name: "hand-off after release", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 20 30 release L _ true", "q 40 50 acquire L _ true"}},
	{name: "second holder without release", want: Invalid, kind: "overlapping-locks", opIDs: []string{"1", "2"}, rows: []string{
		"p 0 10 acquire L _ true", "q 40 50 acquire L _ true"}},
	{name: "release concurrent with the next grant", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 20 40 release L _ true", "q 30 50 acquire L _ true"}},
	{name: "release after the next grant", want: Invalid, kind: "overlapping-locks", rows: []string{
		"p 0 10 acquire L _ true", "q 20 30 acquire L _ true", "p 40 50 release L _ true"}},
	{name: "refused acquire while held", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "q 15 20 acquire L _ false", "q 25 30 acquire L _ {\"granted\":false}"}},
	{name: "error answer is a refusal", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "q 15 20 acquire L _ _ busy"}},
	{name: "blocking acquire answers null", want: Invalid, kind: "overlapping-locks", rows: []string{
		"p 0 10 lock L _ _", "q 15 20 lock L _ _"}},
	{name: "separate keys are separate locks", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "q 15 20 acquire M _ true"}},
	{name: "re-entrant grant to the holder", want: Valid, rows: []string{
		"p 0 10 acquire L _ 3", "p 15 20 acquire L _ 3", "p 25 30 unlock L _ _", "q 35 40 acquire L _ 4"}},
	// Timed-out ops may have happened: both ways.
	{name: "timed-out acquire may not have happened", want: Valid, rows: []string{
		"p 0 - acquire L _ _", "q 10 20 acquire L _ true"}},
	{name: "timed-out acquire then the holder's release", want: Valid, rows: []string{
		"p 0 - acquire L _ _", "p 5 8 release L _ true", "q 10 20 acquire L _ true"}},
	{name: "timed-out release may have happened", want: Valid, rows: []string{
		"p 0 10 acquire L _ true", "p 20 - release L _ _", "q 30 40 acquire L _ true"}},
	{name: "timed-out release by a non-holder frees nothing", want: Invalid, kind: "overlapping-locks", rows: []string{
		"p 0 10 acquire L _ true", "q 12 - release L _ _", "q 30 40 acquire L _ true"}},
	{name: "refused release frees nothing", want: Invalid, kind: "overlapping-locks", rows: []string{
		"p 0 10 acquire L _ true", "p 20 25 release L _ false", "q 30 40 acquire L _ true"}},
	// Fencing tokens.
	{name: "tokens increase", want: Valid, rows: []string{
		"p 0 10 acquire L _ {\"granted\":true,\"token\":5}", "p 20 30 release L _ true", "q 40 50 acquire L _ {\"granted\":true,\"token\":6}"}},
	{name: "token goes back", want: Invalid, kind: "fencing-token-regression", opIDs: []string{"1", "3"}, rows: []string{
		"p 0 10 acquire L _ {\"granted\":true,\"token\":5}", "p 20 30 release L _ true", "q 40 50 acquire L _ {\"granted\":true,\"token\":4}"}},
	{name: "token handed out twice", want: Invalid, kind: "fencing-token-regression", rows: []string{
		"p 0 10 acquire L _ 5", "p 20 30 release L _ true", "q 40 50 acquire L _ 5"}},
	{name: "token order forced through the releases", want: Invalid, kind: "no-exclusive-order", rows: []string{
		"p 0 10 acquire L _ 2", "q 5 15 acquire L _ 1", "p 11 12 release L _ true", "q 16 17 release L _ true"}},
	{name: "same history with increasing tokens", want: Valid, rows: []string{
		"p 0 10 acquire L _ 1", "q 5 15 acquire L _ 2", "p 11 12 release L _ true", "q 16 17 release L _ true"}},
	{name: "timed-out grant before a re-entrant token", want: Valid, rows: []string{
		"p 0 10 acquire L _ 5", "p 20 30 release L _ true", "q 35 - acquire L _ _", "q 40 50 acquire L _ 5"}},
}

func runCase(t *testing.T, checkerID string, tt exclusionCase) Result {
	t.Helper()
	res, err := Run(context.Background(), Spec{Model: "lock", Checker: checkerID, Params: tt.params}, h(t, tt.rows...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != tt.want {
		t.Fatalf("outcome %s, want %s; anomalies %+v", res.Outcome, tt.want, res.Anomalies)
	}
	if res.OpsConsumed != len(tt.rows) || res.Scope == "" {
		t.Fatalf("evidence: %d ops consumed of %d, scope %q", res.OpsConsumed, len(tt.rows), res.Scope)
	}
	if tt.want == Invalid {
		a := res.Anomalies[0]
		if a.Kind != tt.kind || a.Key == "" || a.Message == "" || len(a.OpIDs) == 0 || a.WindowEnd < a.WindowStart {
			t.Fatalf("anomaly %+v, want kind %s with key, ops and window", a, tt.kind)
		}
		if tt.opIDs != nil && !slices.Equal(a.OpIDs, tt.opIDs) {
			t.Fatalf("anomaly names ops %v, want %v", a.OpIDs, tt.opIDs)
		}
	}
	return res
}

func TestMutualExclusionTable(t *testing.T) {
	for _, tt := range lockCases {
		t.Run(tt.name, func(t *testing.T) { runCase(t, MutualExclusion, tt) })
	}
}

func TestMutualExclusionEvidenceNamesBothHolders(t *testing.T) {
	res := runCase(t, MutualExclusion, lockCases[1])
	a := res.Anomalies[0]
	for _, want := range []string{"process p", "process q", "op 1 (line 1", "op 2 (line 2", "never released"} {
		if !strings.Contains(a.Message, want) {
			t.Errorf("message %q lacks %q", a.Message, want)
		}
	}
	if a.WindowStart != 50 || a.WindowEnd != 50 {
		t.Errorf("window %d..%d, want 50..50 (q's grant to the end of the history)", a.WindowStart, a.WindowEnd)
	}
}

func TestLockBadInput(t *testing.T) {
	tests := []struct {
		name, checker string
		rows          []string
		params        map[string]string
		want          string
		fileLine      bool // the reason names the op's file:line
	}{
		{"read in a lock history", MutualExclusion, []string{"p 0 10 acquire L _ true", "p 20 30 read L _ 1"}, nil, `op_type "read" is not a lock op`, true},
		{"renew is a lease op", MutualExclusion, []string{"p 0 10 renew L _ true"}, nil, `op_type "renew"`, true},
		{"string grant", MutualExclusion, []string{`p 0 10 acquire L _ "yes"`}, nil, "want true, false, null", true},
		{"object without granted or token", MutualExclusion, []string{`p 0 10 acquire L _ {"x":1}`}, nil, "want true, false, null", true},
		{"release output", MutualExclusion, []string{`p 0 10 release L _ 7`}, nil, "release output 7", true},
		{"lease without ttl", LeaseSafety, []string{"p 0 10 acquire L _ true"}, nil, "needs param ttl", false},
		{"lease bad ttl", LeaseSafety, []string{"p 0 10 acquire L _ true"}, map[string]string{"ttl": "soon"}, "param ttl", false},
		{"lease bad uncertainty", LeaseSafety, []string{"p 0 10 acquire L _ true"}, map[string]string{"ttl": "10", "uncertainty": "-1s"}, "param uncertainty", false},
		{"guarded lease op", LeaseSafety, []string{"p 0 10 acquire L _ true"}, map[string]string{"ttl": "10", "guarded": "write,renew"}, "param guarded", false},
		{"unguarded op in a lease history", LeaseSafety, []string{"p 0 10 acquire L _ true", "p 11 12 write L 1 _"}, map[string]string{"ttl": "10"}, `op_type "write" is not a lock op`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Spec{Model: "lock", Checker: tt.checker, History: "h.jsonl", Params: tt.params}, h(t, tt.rows...), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line containing %q", err, tt.want)
			}
			var fe *fileline.Error
			if tt.fileLine && (!errors.As(err, &fe) || fe.File != "h.jsonl" || fe.Line == 0) {
				t.Fatalf("err %v is not a file:line error at h.jsonl", err)
			}
		})
	}
}

// lockSim is a simulated lock service: effects happen one at a time at
// increasing times, each op's invoke and response jittered around its
// effect, some ops timing out (with or without effect). bug plants
// double grants or stale tokens the history makes definite, counted in
// planted.
type lockSim struct {
	rng     *rand.Rand
	ops     []history.Op
	planted int
}

const (
	bugNone = iota
	bugDoubleGrant
	bugStaleToken
)

func (s *lockSim) run(n, procs int, bug int) []history.Op {
	const d = 20 // jitter bound around an effect
	holder, token := -1, int64(0)
	definite := false                  // the holder's grant was answered and it has not tried to release since
	lostRelease := make([]bool, procs) // a timed-out release may still take effect at any time
	lastGrantEnd := int64(-1)          // completion of the latest definite new grant
	busy := make([]int64, procs)
	noRelease := make([]int64, procs)   // a planted overlap holds until then
	afterTimeout := make([]bool, procs) // the next op is a clean-up release
	e := int64(1000)
	for len(s.ops) < n {
		e += 1 + s.rng.Int64N(2*d)
		p := s.rng.IntN(procs)
		inv := e - s.rng.Int64N(d)
		if inv <= busy[p] {
			continue
		}
		comp := e + s.rng.Int64N(d)
		timedOut := s.rng.IntN(10) == 0
		effect := !timedOut || s.rng.IntN(2) == 0
		op := history.Op{OpID: fmt.Sprint(len(s.ops) + 1), ProcessID: fmt.Sprint("p", p), Key: "L", InvokeTS: inv, Line: len(s.ops) + 1}
		release := afterTimeout[p] || (holder == p && s.rng.IntN(2) == 0) || s.rng.IntN(8) == 0
		if release && e < noRelease[p] {
			continue
		}
		afterTimeout[p] = false
		var out any
		if release {
			op.OpType = "release"
			out = false
			if holder == p {
				definite = false
			}
			if timedOut {
				lostRelease[p] = true
			}
			if holder == p && effect {
				holder, out = -1, true
			}
		} else {
			op.OpType = "acquire"
			granted := false
			switch {
			case holder == p:
				granted = true
			case holder == -1:
				granted = true
				if effect {
					token++
					if bug == bugStaleToken && !timedOut && token > 2 && lastGrantEnd >= 0 && lastGrantEnd < inv {
						token -= 2 // hands out a token older than the last grant's
						s.planted++
					}
				}
			case bug == bugDoubleGrant && !timedOut && s.rng.IntN(4) == 0 && definite && !lostRelease[holder] && busy[holder] < inv:
				// The holder's grant completed before this one began, and
				// it does not release before this one completes.
				granted = true
				noRelease[holder] = comp + d + 1
				token++
				s.planted++
			}
			if granted && effect {
				if holder != p {
					definite = !timedOut
				}
				holder = p
				if !timedOut {
					lastGrantEnd = comp
				}
			}
			out = map[string]any{"granted": granted, "token": token}
			if !granted {
				out = map[string]any{"granted": false}
			}
		}
		if timedOut {
			op.TimeoutMarker = true
			afterTimeout[p] = true
			busy[p] = e
		} else {
			c := comp
			op.CompleteTS = &c
			op.Output, _ = json.Marshal(out)
			busy[p] = comp
		}
		s.ops = append(s.ops, op)
	}
	return s.ops
}

func TestMutualExclusionSimulated(t *testing.T) {
	kinds := map[int]string{bugDoubleGrant: "overlapping-locks", bugStaleToken: "fencing-token-regression"}
	caught := map[int]int{}
	const seeds = 300
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, bug := range []int{bugNone, bugDoubleGrant, bugStaleToken} {
			s := &lockSim{rng: rand.New(rand.NewPCG(seed, uint64(bug)))}
			ops := s.run(200, 4, bug)
			res, err := Run(context.Background(), Spec{Model: "lock", Checker: MutualExclusion}, ops, nil)
			if err != nil {
				t.Fatalf("seed %d bug %d: %v", seed, bug, err)
			}
			switch {
			case bug == bugNone && res.Outcome != Valid:
				t.Fatalf("seed %d: correct lock service judged %s: %+v", seed, res.Outcome, res.Anomalies)
			case bug != bugNone && s.planted > 0 && res.Outcome != Invalid:
				t.Fatalf("seed %d bug %d: %d planted, outcome %s", seed, bug, s.planted, res.Outcome)
			case bug != bugNone && s.planted > 0 && !hasKind(res, kinds[bug]):
				t.Fatalf("seed %d bug %d: anomalies %+v lack %s", seed, bug, res.Anomalies, kinds[bug])
			case bug != bugNone && s.planted == 0 && res.Outcome != Valid:
				t.Fatalf("seed %d bug %d: nothing planted, outcome %s: %+v", seed, bug, res.Outcome, res.Anomalies)
			}
			if s.planted > 0 {
				caught[bug]++
			}
		}
	}
	// The planted runs must be most of them, or the test proves little.
	for _, bug := range []int{bugDoubleGrant, bugStaleToken} {
		if caught[bug] < seeds*8/10 {
			t.Errorf("bug %d planted (and caught) in only %d of %d seeds", bug, caught[bug], seeds)
		}
	}
	t.Logf("planted and caught: double grant %d/%d seeds, stale token %d/%d", caught[bugDoubleGrant], seeds, caught[bugStaleToken], seeds)
}

func hasKind(res Result, kind string) bool {
	for _, a := range res.Anomalies {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

func TestLockLeaseRegistration(t *testing.T) {
	fields := []struct {
		text string
		want []string
	}{
		{"mutual exclusion with fencing tokens", []string{MutualExclusion}},
		{"mutex checker", []string{MutualExclusion}},
		{"lease-safety (ttl 10s)", []string{LeaseSafety}},
		{"final-state invariant", []string{Invariant}},
	}
	for _, f := range fields {
		if got := ParseCheckerField(f.text); !slices.Equal(got, f.want) {
			t.Errorf("ParseCheckerField(%q) = %v, want %v", f.text, got, f.want)
		}
	}
	mismatch := []struct {
		model, checker string
		want           bool
	}{
		{"lock", MutualExclusion, false},
		{"mutex", MutualExclusion, false},
		{"lease", LeaseSafety, false},
		{"lease", MutualExclusion, true}, // a lock never expires: every expiry hand-off would look like an overlap
		{"register", MutualExclusion, true},
		{"lock", LeaseSafety, true},
	}
	for _, m := range mismatch {
		if got := Mismatched(m.model, m.checker); got != m.want {
			t.Errorf("Mismatched(%q, %q) = %v, want %v", m.model, m.checker, got, m.want)
		}
	}
	for _, c := range []string{MutualExclusion, LeaseSafety} {
		if n := Needs(c, "lock"); !n.MonotonicClock || !n.TimeoutMarkers {
			t.Errorf("Needs(%s) = %+v: holds are compared across processes, so the clock must be monotonic and timeouts marked", c, n)
		}
	}
}

// TestMutexOpenAcquiresPassExact: checking first without the timed-out
// acquires gives porcupine's answer on the whole history, on correct and
// broken simulated services alike.
func TestMutexOpenAcquiresPassExact(t *testing.T) {
	counts := map[bool]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		for _, bug := range []int{bugNone, bugDoubleGrant, bugStaleToken} {
			s := &lockSim{rng: rand.New(rand.NewPCG(seed, 100+uint64(bug)))}
			_, byKey, _, err := lockKeys("h", s.run(120, 3, bug), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _, ok1 := checkMutex(context.Background(), byKey["L"])
			want, ok2 := runMutex(context.Background(), mutexOps(byKey["L"], true))
			if !ok1 || !ok2 || got != want {
				t.Fatalf("seed %d bug %d: two-phase %v (decided %v), whole history %v (decided %v)", seed, bug, got, ok1, want, ok2)
			}
			counts[want == porcupine.Ok]++
		}
	}
	if counts[true] == 0 || counts[false] == 0 {
		t.Fatalf("verdicts %v: the comparison needs both legal and illegal histories", counts)
	}
}
