package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

func final(t *testing.T, doc string) *FinalState {
	t.Helper()
	f, err := parseFinalState([]byte(doc), "final.json")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// otherCase is one row of the non-porcupine checkers' table.
type otherCase struct {
	name    string
	spec    Spec
	rows    []string
	final   string
	want    Outcome
	anomaly string // kind of the first anomaly when Invalid
}

// otherCases holds, per non-porcupine checker, histories known to be good
// and known to be bad.
func otherCases() []otherCase {
	return []otherCase{
		// no-lost-ack (docs/history-and-checkers.md §5.10)
		{"lost-ack log good", Spec{Model: "log", Checker: NoLostAck},
			[]string{"p 0 1 append k 1 _", "p 2 - append k 2 _", "p 4 5 append k 3 _ rejected"},
			`{"keys":{"k":[1]}}`, Valid, ""},
		{"lost-ack log lost", Spec{Model: "log", Checker: NoLostAck},
			[]string{"p 0 1 append k 1 _", "p 2 3 append k 2 _"},
			`{"keys":{"k":[2]}}`, Invalid, "lost-ack"},
		{"lost-ack register last write", Spec{Model: "register", Checker: NoLostAck},
			[]string{"p 0 1 write k 1 _", "p 2 3 write k 2 _"}, `{"keys":{"k":2}}`, Valid, ""},
		{"lost-ack register concurrent either", Spec{Model: "register", Checker: NoLostAck},
			[]string{"p 0 10 write k 1 _", "q 2 3 write k 2 _"}, `{"keys":{"k":1}}`, Valid, ""},
		{"lost-ack register overwritten by older", Spec{Model: "register", Checker: NoLostAck},
			[]string{"p 0 1 write k 1 _", "p 2 3 write k 2 _"}, `{"keys":{"k":1}}`, Invalid, "lost-ack"},
		{"lost-ack key absent", Spec{Model: "map", Checker: NoLostAck},
			[]string{"p 0 1 write k 1 _"}, `{"keys":{}}`, Invalid, "lost-ack"},
		{"lost-ack timeout not counted", Spec{Model: "map", Checker: NoLostAck},
			[]string{"p 0 - write k 1 _"}, `{"keys":{}}`, Valid, ""},

		// exactly-once (docs/history-and-checkers.md §5.11)
		{"exactly-once good", Spec{Model: "ledger", Checker: ExactlyOnce},
			[]string{`p 0 1 credit a {"idempotency_key":"r1","amt":5} _`, `p 2 3 credit a {"idempotency_key":"r1","amt":5} _`},
			`{"keys":{"entries":[{"idempotency_key":"r1","amt":5}]}}`, Valid, ""},
		{"exactly-once duplicate", Spec{Model: "ledger", Checker: ExactlyOnce},
			[]string{`p 0 1 credit a {"idempotency_key":"r1"} _`, `p 2 3 credit a {"idempotency_key":"r1"} _`},
			`{"keys":{"entries":[{"idempotency_key":"r1"},{"idempotency_key":"r1"}]}}`, Invalid, "duplicate-effect"},
		{"exactly-once lost", Spec{Model: "ledger", Checker: ExactlyOnce},
			[]string{`p 0 1 credit a {"idempotency_key":"r1"} _`},
			`{"keys":{"entries":[]}}`, Invalid, "lost-effect"},
		{"exactly-once timed out may be absent", Spec{Model: "ledger", Checker: ExactlyOnce},
			[]string{`p 0 - credit a {"idempotency_key":"r1"} _`},
			`{"keys":{"entries":[]}}`, Valid, ""},
		{"exactly-once op_id ignored", Spec{Model: "ledger", Checker: ExactlyOnce, Params: map[string]string{"idem_field": "req"}},
			[]string{`p 0 1 credit a {"req":"x"} _`, `q 0 1 credit a {"req":"x"} _`},
			`{"keys":{"entries":[{"req":"x"},{"req":"x"}]}}`, Invalid, "duplicate-effect"},

		// invariants (docs/history-and-checkers.md §5.12)
		{"sum-zero good", Spec{Checker: Invariant, Params: map[string]string{"predicate": "sum-zero"}},
			nil, `{"keys":{"a":5,"b":-5}}`, Valid, ""},
		{"sum-zero bad", Spec{Checker: Invariant, Params: map[string]string{"predicate": "sum-zero"}},
			nil, `{"keys":{"a":5,"b":-4}}`, Invalid, "invariant"},
		{"each-member-once good", Spec{Checker: Invariant, Params: map[string]string{"predicate": "each-member-once", "key": "m"}},
			[]string{`p 0 1 join _ "n1" _`, `p 2 3 join _ "n2" _`, `p 4 5 leave _ "n2" _`}, `{"keys":{"m":["n1"]}}`, Valid, ""},
		{"each-member-once duplicate", Spec{Checker: Invariant, Params: map[string]string{"predicate": "each-member-once", "key": "m"}},
			[]string{`p 0 1 join _ "n1" _`}, `{"keys":{"m":["n1","n1"]}}`, Invalid, "invariant"},
		{"each-member-once missing", Spec{Checker: Invariant, Params: map[string]string{"predicate": "each-member-once", "key": "m"}},
			[]string{`p 0 1 join _ "n1" _`, `p 0 1 join _ "n2" _`}, `{"keys":{"m":["n1"]}}`, Invalid, "invariant"},
		{"count-equals good", Spec{Checker: Invariant, Params: map[string]string{"predicate": "count-equals", "key": "m", "count": "2"}},
			nil, `{"keys":{"m":[1,2]}}`, Valid, ""},
		{"count-equals bad", Spec{Checker: Invariant, Params: map[string]string{"predicate": "count-equals", "key": "m", "count": "3"}},
			nil, `{"keys":{"m":[1,2]}}`, Invalid, "invariant"},

		// reconciliation (docs/history-and-checkers.md §5.13)
		{"replicas equal", Spec{Checker: Reconciliation}, nil,
			`{"replicas":{"n1":{"a":1,"b":[1, 2]},"n2":{"a":1,"b":[1,2]}}}`, Valid, ""},
		{"replicas diverge", Spec{Checker: Reconciliation}, nil,
			`{"replicas":{"n1":{"a":1},"n2":{"a":2},"n3":{"a":1,"b":0}}}`, Invalid, "replica-divergence"},
		{"one replica unknown", Spec{Checker: Reconciliation}, nil, `{"replicas":{"n1":{}}}`, Unknown, ""},

		// session / read-your-writes (docs/history-and-checkers.md §5.7)
		{"ryw good", Spec{Model: "session", Checker: Session},
			[]string{"s1 0 1 write k 1 _", "s1 2 3 read k _ 1", "s2 0 1 read k _ null"}, "", Valid, ""},
		{"ryw newer value from other session", Spec{Model: "session", Checker: Session},
			[]string{"s1 0 1 write k 1 _", "s2 2 3 write k 2 _", "s1 4 5 read k _ 2"}, "", Valid, ""},
		{"ryw violated", Spec{Model: "session", Checker: Session},
			[]string{"s1 0 1 write k 1 _", "s1 2 3 write k 2 _", "s1 4 5 read k _ 1"}, "", Invalid, "read-your-writes"},
		{"ryw other session stale is allowed", Spec{Model: "session", Checker: Session},
			[]string{"s1 0 1 write k 1 _", "s2 4 5 read k _ null"}, "", Valid, ""},

		// monotonic reads (docs/history-and-checkers.md §5.8)
		{"monotonic good", Spec{Model: "session", Checker: MonotonicReads},
			[]string{`p 0 1 read k _ {"version":1}`, `p 2 3 read k _ {"version":3}`}, "", Valid, ""},
		{"monotonic back", Spec{Model: "session", Checker: MonotonicReads},
			[]string{`p 0 1 read k _ {"version":3}`, `p 2 3 read k _ {"version":2}`}, "", Invalid, "non-monotonic-read"},
		{"monotonic by write order", Spec{Model: "register", Checker: MonotonicReads},
			[]string{"w 0 1 write k 10 _", "w 2 3 write k 20 _", "p 4 5 read k _ 20", "p 6 7 read k _ 10"}, "", Invalid, "non-monotonic-read"},
		// A value is not a version: 20 was written before 10, so reading 20
		// then 10 moves forward (a real etcd history was flagged like this).
		{"monotonic values decreasing by write order", Spec{Model: "register", Checker: MonotonicReads},
			[]string{"w 0 1 write k 20 _", "w 2 3 write k 10 _", "p 4 5 read k _ 20", "p 6 7 read k _ 10"}, "", Valid, ""},
		// Overlapping writes have no known SUT order: either read order is legal.
		{"monotonic concurrent writers", Spec{Model: "kv", Checker: MonotonicReads},
			[]string{"a 0 10 write k 500 _", "b 1 9 write k 100 _", "p 11 12 read k _ 500", "p 13 14 read k _ 100", "p 15 16 read k _ 500"}, "", Valid, ""},
		{"monotonic back to initial", Spec{Model: "register", Checker: MonotonicReads},
			[]string{"w 0 1 write k 7 _", "p 2 3 read k _ 7", "p 4 5 read k _ null"}, "", Invalid, "non-monotonic-read"},
		{"monotonic counter value is the version", Spec{Model: "counter", Checker: MonotonicReads},
			[]string{"p 0 1 read c _ 5", "p 2 3 read c _ 4"}, "", Invalid, "non-monotonic-read"},
		{"monotonic version_from=value", Spec{Model: "kv", Checker: MonotonicReads, Params: map[string]string{"version_from": "value"}},
			[]string{"p 0 1 read k _ 9", "p 2 3 read k _ 8"}, "", Invalid, "non-monotonic-read"},

		// prefix / order (docs/history-and-checkers.md §5.9)
		{"queue order good", Spec{Model: "queue", Checker: Prefix},
			[]string{"p 0 1 enqueue q 1 _", "p 2 3 enqueue q 2 _", "c 4 5 dequeue q _ 1", "d 6 7 dequeue q _ 2"}, "", Valid, ""},
		{"queue reorder", Spec{Model: "queue", Checker: Prefix},
			[]string{"p 0 1 enqueue q 1 _", "p 2 3 enqueue q 2 _", "c 4 5 dequeue q _ 2", "c 6 7 dequeue q _ 1"}, "", Invalid, "reorder"},
		{"queue reorder in window", Spec{Model: "queue", Checker: Prefix, Params: map[string]string{"window": "1"}},
			[]string{"p 0 1 enqueue q 1 _", "p 2 3 enqueue q 2 _", "c 4 5 dequeue q _ 2", "c 6 7 dequeue q _ 1"}, "", Valid, ""},
		// Overlapping enqueues have no provable order: either delivery order
		// is legal, and a consumer that has not yet seen one of them skipped
		// nothing.
		{"queue concurrent producers either order", Spec{Model: "queue", Checker: Prefix},
			[]string{"p 0 10 enqueue q 1 _", "r 1 9 enqueue q 2 _", "c 11 12 dequeue q _ 2", "c 13 14 dequeue q _ 1"}, "", Valid, ""},
		{"log concurrent appends either order", Spec{Model: "log", Checker: Prefix},
			[]string{"p 0 10 append l 1 _", "r 1 9 append l 2 _", "c 11 12 read l _ [2]", "c 13 14 read l _ [2,1]"}, "", Valid, ""},
		{"log skip of a real-time earlier append", Spec{Model: "log", Checker: Prefix},
			[]string{"p 0 1 append l 1 _", "r 2 3 append l 2 _", "c 4 5 read l _ [2]"}, "", Invalid, "skip"},
		{"queue duplicate", Spec{Model: "queue", Checker: Prefix},
			[]string{"p 0 1 enqueue q 1 _", "c 4 5 dequeue q _ 1", "d 6 7 dequeue q _ 1"}, "", Invalid, "duplicate"},
		{"queue skip", Spec{Model: "queue", Checker: Prefix},
			[]string{"p 0 1 enqueue q 1 _", "p 2 3 enqueue q 2 _", "p 4 5 enqueue q 3 _", "c 6 7 dequeue q _ 3"}, "", Invalid, "skip"},
		{"log insertion", Spec{Model: "log", Checker: Prefix},
			[]string{"p 0 1 append l 1 _", "c 2 3 read l _ [1,9]"}, "", Invalid, "insertion"},
		{"log prefix good", Spec{Model: "log", Checker: Prefix},
			[]string{"p 0 1 append l 1 _", "p 2 3 append l 2 _", "c 4 5 read l _ [1]", "c 6 7 read l _ [1,2]"}, "", Valid, ""},

		// SLO (docs/history-and-checkers.md §5.4)
		{"slo good", Spec{Checker: SLO, Params: map[string]string{"p99": "20ns", "error_rate": "0"}},
			[]string{"p 0 10 read k _ 1", "p 20 30 read k _ 1"}, "", Valid, ""},
		{"slo p99", Spec{Checker: SLO, Params: map[string]string{"p99": "5ns"}},
			[]string{"p 0 10 read k _ 1"}, "", Invalid, "slo"},
		{"slo errors", Spec{Checker: SLO, Params: map[string]string{"error_rate": "0.1"}},
			[]string{"p 0 10 read k _ _ boom", "p 20 - read k _ _"}, "", Invalid, "slo"},

		// fairness (docs/history-and-checkers.md §5.14)
		{"fair", Spec{Checker: Fairness, Fairness: fairness("group=key; worst_group_p99 / aggregate_p99 <= 1.5; error_rate_by_group == 0")},
			[]string{"p 0 10 read a _ 1", "p 20 30 read b _ 1"}, "", Valid, ""},
		{"unfair p99", Spec{Checker: Fairness, Fairness: fairness("group=key; worst_group_p99 / aggregate_p99 <= 1.5")},
			append(slices.Repeat([]string{"p 0 10 read a _ 1"}, 100), "p 20 100 read b _ 1"), "", Invalid, "unfair"},
		{"unfair errors", Spec{Checker: Fairness, Fairness: fairness("group=process_id; error_rate_by_group == 0")},
			[]string{"p 0 10 read a _ 1", "q 20 30 read b _ _ err"}, "", Invalid, "unfair"},
	}
}

// TestOtherCheckers runs every non-porcupine checker on a history known to
// be good and one known to be bad.
func TestOtherCheckers(t *testing.T) {
	for _, tt := range otherCases() {
		t.Run(tt.name, func(t *testing.T) {
			var f *FinalState
			if tt.final != "" {
				f = final(t, tt.final)
			}
			res, err := Run(context.Background(), tt.spec, h(t, tt.rows...), f)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s: %+v", res.Outcome, tt.want, res.Anomalies)
			}
			if tt.want == Invalid && res.Anomalies[0].Kind != tt.anomaly {
				t.Errorf("anomaly %+v, want kind %s", res.Anomalies[0], tt.anomaly)
			}
			if res.Scope == "" {
				t.Error("no scope statement")
			}
			if len(tt.rows) > 0 && res.OpsConsumed != len(tt.rows) {
				t.Errorf("ops consumed %d, want %d", res.OpsConsumed, len(tt.rows))
			}
		})
	}
}

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		fin  *FinalState
		want string
	}{
		{"unknown checker", Spec{Model: "register", Checker: "elle"}, nil, "unknown checker"},
		{"needs final", Spec{Model: "log", Checker: NoLostAck}, nil, "needs a final state"},
		{"no default", Spec{Model: "weird"}, nil, "no default checker"},
		{"slo without thresholds", Spec{Checker: SLO}, nil, "no threshold"},
		{"slo NaN threshold", Spec{Checker: SLO, Params: map[string]string{"error_rate": "NaN"}}, nil, "non-negative number"},
		{"slo negative threshold", Spec{Checker: SLO, Params: map[string]string{"throughput": "-1"}}, nil, "non-negative number"},
		{"bad predicate", Spec{Checker: Invariant, Params: map[string]string{"predicate": "x"}}, &FinalState{}, "unknown predicate"},
		{"fairness without formula", Spec{Checker: Fairness}, nil, "no formula"},
		{"exactly-once vacuous", Spec{Checker: ExactlyOnce}, &FinalState{}, "no write carries"},
	}
	ops := h(t, `p 0 1 write k {"x":1} _`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.spec, ops, tt.fin)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPick(t *testing.T) {
	tests := []struct {
		model, category, want string
		ok                    bool
	}{
		{"register", "safety", Linearizability, true},
		{"log", "durability", NoLostAck, true},
		{"session", "safety", Session, true},
		{"ledger", "idempotency", ExactlyOnce, true},
		{"membership-table", "membership", Reconciliation, true},
		{"queue", "ordering", Prefix, true},
		{"queue", "durability", NoLostAck, true},
		{"queue", "idempotency", ExactlyOnce, true},
		{"register", "durability", Linearizability, false},
		{"counter", "safety", Linearizability, true},
		{"anything", "fairness", Fairness, true},
		{"map", "isolation", Serializability, true},
		{"kv", "", Linearizability, true},
		{"lock", "safety", MutualExclusion, true},
		{"mutex", "", MutualExclusion, true},
		{"lease", "safety", LeaseSafety, true},
		{"other(x)", "safety", "", false},
	}
	for _, tt := range tests {
		got, ok := Pick(tt.model, tt.category)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Pick(%q, %q) = %q, %v; want %q, %v", tt.model, tt.category, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMismatched(t *testing.T) {
	tests := []struct {
		model, checker string
		want           bool
	}{
		{"register", Linearizability, false},
		{"session", Linearizability, true},
		{"ledger", Linearizability, true},
		{"queue", Prefix, false},
		{"register", Prefix, true},
		{"map", Session, false},
		{"ledger", ExactlyOnce, false},
		{"register", "bogus", true},
	}
	for _, tt := range tests {
		if got := Mismatched(tt.model, tt.checker); got != tt.want {
			t.Errorf("Mismatched(%q, %q) = %v", tt.model, tt.checker, got)
		}
	}
}

func TestNeeds(t *testing.T) {
	n := Needs(Linearizability, "map")
	if !n.Key || !n.NodeSeen || !n.MonotonicClock || !n.TimeoutMarkers {
		t.Errorf("map linearizability needs %+v", n)
	}
	if n := Needs(Session, "session"); n.NodeSeen || n.MonotonicClock || !n.TimeoutMarkers {
		t.Errorf("session needs %+v", n)
	}
	if n := Needs(NoLostAck, "register"); !n.NodeSeen || n.Key || n.MonotonicClock || !n.TimeoutMarkers {
		t.Errorf("register no-lost-ack needs %+v", n)
	}
	if n := Needs(Reconciliation, "membership-table"); !n.NodeSeen || n.Key || n.TimeoutMarkers {
		t.Errorf("membership-table reconciliation needs %+v", n)
	}
}

func TestParseCheckerField(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"linearizability (Porcupine) per key", []string{Linearizability}},
		{"no-lost-ack + exactly-once dedup checker on the business request-id", []string{NoLostAck, ExactlyOnce}},
		{"session-consistency / monotonic-read", []string{Session, MonotonicReads}},
		{"serializability (Elle), per-key and cross-key", []string{Serializability}},
		{"Elle-style cycle checker at repeatable read", []string{Serializability}},
		{"repeatable-read isolation", []string{Serializability}},
		{"prefix / order checker", []string{Prefix}},
		{"reconciliation-across-replicas at quiescence", []string{Reconciliation}},
		{"exclusion property + invariant-over-final-state", []string{MutualExclusion, Invariant}},
		{"SLO thresholds on p99", []string{SLO}},
		// The etcd example's S2: "final state" is what no-lost-ack reads.
		{"no-lost-ack against the final state, plus reconciliation across replicas at quiescence", []string{NoLostAck, Reconciliation}},
		{"sum-zero over the final balances", []string{Invariant}},
		{"no checker", nil},
	}
	for _, tt := range tests {
		if got := ParseCheckerField(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCheckerField(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestParseFinalStateErrors(t *testing.T) {
	for _, doc := range []string{"{\n\"keys\": [1]}", `{"keyz":{}}`, `{"keys":{}} x`, ``} {
		if _, err := parseFinalState([]byte(doc), "f.json"); err == nil || !strings.HasPrefix(err.Error(), "f.json") {
			t.Errorf("%q: err %v, want f.json:line", doc, err)
		}
	}
	if _, err := parseFinalState([]byte("{\n\"keys\": [1]}"), "f.json"); !strings.HasPrefix(err.Error(), "f.json:2:") {
		t.Errorf("line not named: %v", err)
	}
}

func TestRepeatSpread(t *testing.T) {
	if got := repeatSpread([]float64{90, 100, 110}); got < 0.199 || got > 0.201 {
		t.Errorf("repeatSpread = %v, want 0.2", got)
	}
}

func FuzzFinalState(f *testing.F) {
	f.Add([]byte(`{"keys":{"k":[1,2]},"replicas":{"n1":{"k":1}}}`))
	f.Add([]byte(`{"keys":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := parseFinalState(data, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		// Whatever loads must be usable by the final-state checkers.
		ops := h(t, "p 0 1 write k 1 _")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := Run(ctx, Spec{Model: "log", Checker: NoLostAck}, ops, fs); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(ctx, Spec{Checker: Reconciliation}, ops, fs); err != nil {
			t.Fatal(err)
		}
		_, _ = json.Marshal(fs)
	})
}

// TestMonotonicReadsPassesLinearizableHistories: a linearizable history is
// monotonic per process, so the checker must pass every generated one
// (their written values are not in time order, which caught a checker that
// took values for versions), and still catch a read sent back in time.
func TestMonotonicReadsPassesLinearizableHistories(t *testing.T) {
	for _, model := range []string{"register", "kv"} {
		for seed := uint64(0); seed < 250; seed++ {
			ops := simulate(model, seed)
			res, err := Run(context.Background(), Spec{Model: model, Checker: MonotonicReads}, ops, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Valid {
				t.Fatalf("%s seed %d: linearizable history judged %s: %+v", model, seed, res.Outcome, res.Anomalies)
			}
		}
	}
}

// fairness parses a formula with the plan's grammar (the only one), taking
// a partial formula as dstgen check does.
func fairness(formula string) *plan.Fairness {
	f, err := plan.ParseFairness(formula)
	if err != nil && !errors.Is(err, plan.ErrIncomplete) {
		panic(err)
	}
	return f
}

// The repository's own fixture formula ("min_group_throughput >= 190
// ops/s", with a unit) reaches the checker as the plan parsed it, and its
// throughput threshold is applied.
func TestFairnessFixtureFormula(t *testing.T) {
	p, err := plan.Parse("../plan/testdata/quorumkv-core-guarantees.md")
	if err != nil {
		t.Fatal(err)
	}
	f := p.Scenario("S5").S.Fairness
	if f == nil {
		t.Fatal("fixture S5 fairness formula not parsed")
	}
	// Two tenants over 1 s: t1 does 200 ok ops, t2 only 100 (< 190 ops/s).
	var rows []string
	for i := 0; i < 200; i++ {
		rows = append(rows, fmt.Sprintf(`p %d %d put k {"tenant":"t1"} _`, i*5_000_000, i*5_000_000+1000))
	}
	for i := 0; i < 100; i++ {
		rows = append(rows, fmt.Sprintf(`q %d %d put k {"tenant":"t2"} _`, i*10_000_000, i*10_000_000+1000))
	}
	res, err := Run(context.Background(), Spec{Checker: Fairness, Fairness: f}, h(t, rows...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Invalid || len(res.Anomalies) != 1 || res.Anomalies[0].Key != "t2" ||
		!strings.Contains(res.Anomalies[0].Message, "min_group_throughput >= 190 ops/s") {
		t.Fatalf("outcome %s anomalies %+v, want one throughput anomaly for t2 citing the threshold", res.Outcome, res.Anomalies)
	}
}

// SLO thresholds typed by the plan reach the checker: "p99 put ≤ 20ms"
// judges put latency only.
func TestSLOFromPlan(t *testing.T) {
	slo, ok := plan.ParseSLO("per-tenant fairness formula below, plus p99 put ≤ 20ms overall")
	if !ok {
		t.Fatal("no SLO parsed")
	}
	rows := []string{"p 0 30000000 put k 1 _", "p 40000000 40001000 put k 2 _", "p 50000000 99000000 read k _ 2"}
	res, err := Run(context.Background(), Spec{Checker: SLO, SLO: slo}, h(t, rows[1:]...), nil)
	if err != nil || res.Outcome != Valid {
		t.Fatalf("slow read judged against a put bound: %v %s %+v", err, res.Outcome, res.Anomalies)
	}
	res, err = Run(context.Background(), Spec{Checker: SLO, SLO: slo}, h(t, rows...), nil)
	if err != nil || res.Outcome != Invalid || !strings.Contains(res.Anomalies[0].Message, "p99 <= 20ms") {
		t.Fatalf("slow put: %v %s %+v, want an anomaly citing p99 <= 20ms", err, res.Outcome, res.Anomalies)
	}
}

// TestExpiredLimitIsUnknownForEveryChecker: every row of the checkers'
// table that its checker decides in time (valid or invalid) is Unknown,
// never a pass nor a finding, once the time limit has already passed, as
// for linearizability (TestExpiredLimitNeverPasses).
func TestExpiredLimitIsUnknownForEveryChecker(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	covered := map[string]bool{}
	for _, tt := range otherCases() {
		if tt.want == Unknown {
			continue // not decided even in time
		}
		t.Run(tt.name, func(t *testing.T) {
			var f *FinalState
			if tt.final != "" {
				f = final(t, tt.final)
			}
			ops := h(t, tt.rows...)
			res, err := Run(context.Background(), tt.spec, ops, f)
			if err != nil || res.Outcome != tt.want {
				t.Fatalf("in time: %s %v, want %s", res.Outcome, err, tt.want) // the test can fail both ways
			}
			res, err = Run(expired, tt.spec, ops, f)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Unknown || !strings.Contains(res.Reason, "time limit") {
				t.Fatalf("expired limit: outcome %s (%q), want unknown citing the time limit", res.Outcome, res.Reason)
			}
		})
		covered[tt.spec.Checker] = true
	}
	for _, c := range []string{NoLostAck, ExactlyOnce, Invariant, Reconciliation, Session, MonotonicReads, Prefix, SLO, Fairness} {
		if !covered[c] {
			t.Errorf("checker %s has no decidable row in the table", c)
		}
	}
}

// cutCtx is a limit that passes at the n-th look (Err call) after the
// first: a check cut short in its middle, without timing.
type cutCtx struct {
	context.Context
	n int
}

func (c *cutCtx) Err() error {
	c.n--
	if c.n < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// TestLimitMidCheckIsUnknown: a limit that passes while a checker is
// still in its loops over a long valid history stops it, and the answer
// is Unknown, never the pass it would have reached in time.
func TestLimitMidCheckIsUnknown(t *testing.T) {
	const n = 5 * pollEvery
	var appends, queue, credits []string
	finalLog, effects := []string{}, []string{}
	keys, replica := map[string]int{}, map[string]int{}
	for i := 0; i < n; i++ {
		appends = append(appends, fmt.Sprintf("p %d %d append l %d _", 2*i, 2*i+1, i))
		finalLog = append(finalLog, fmt.Sprint(i))
		queue = append(queue, fmt.Sprintf("p %d %d enqueue q %d _", 4*i, 4*i+1, i), fmt.Sprintf("c %d %d dequeue q _ %d", 4*i+2, 4*i+3, i))
		credits = append(credits, fmt.Sprintf(`p %d %d credit a {"idempotency_key":"r%d"} _`, 2*i, 2*i+1, i))
		effects = append(effects, fmt.Sprintf(`{"idempotency_key":"r%d"}`, i))
		keys[fmt.Sprint("a", i)], keys[fmt.Sprint("b", i)] = 1, -1
		replica[fmt.Sprint("k", i)] = i
	}
	kv := fixture.KV(n, 50, 4, 1)
	doc := func(v any) *FinalState {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return final(t, string(data))
	}
	logFinal := doc(map[string]any{"keys": map[string]any{"l": json.RawMessage("[" + strings.Join(finalLog, ",") + "]")}})
	effFinal := doc(map[string]any{"keys": map[string]any{"entries": json.RawMessage("[" + strings.Join(effects, ",") + "]")}})
	sumFinal := doc(map[string]any{"keys": keys})
	repFinal := doc(map[string]any{"replicas": map[string]any{"n1": replica, "n2": replica}})

	tests := []struct {
		name  string
		check func(ctx context.Context) (Result, error)
	}{
		{NoLostAck, func(ctx context.Context) (Result, error) { return checkNoLostAck(ctx, h(t, appends...), logFinal), nil }},
		{ExactlyOnce, func(ctx context.Context) (Result, error) {
			return checkExactlyOnce(ctx, h(t, credits...), effFinal, nil)
		}},
		{Invariant, func(ctx context.Context) (Result, error) {
			return checkInvariant(ctx, nil, sumFinal, map[string]string{"predicate": "sum-zero"})
		}},
		{Reconciliation, func(ctx context.Context) (Result, error) { return checkReconciliation(ctx, repFinal), nil }},
		{Session, func(ctx context.Context) (Result, error) { return checkSession(ctx, kv) }},
		{MonotonicReads, func(ctx context.Context) (Result, error) { return checkMonotonic(ctx, "kv", kv, nil) }},
		{Prefix, func(ctx context.Context) (Result, error) { return checkPrefix(ctx, "h", "queue", h(t, queue...), nil) }},
		{SLO, func(ctx context.Context) (Result, error) {
			return checkSLO(ctx, kv, map[string]string{"p99": "1h"}, nil)
		}},
		{Fairness, func(ctx context.Context) (Result, error) {
			return checkFairness(ctx, kv, fairness("group=key; error_rate_by_group == 0"))
		}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.check(context.Background())
			if err != nil || res.Outcome != "" || len(res.Anomalies) > 0 {
				t.Fatalf("in time: outcome %q anomalies %+v err %v, want a pass", res.Outcome, res.Anomalies, err)
			}
			res, err = tt.check(&cutCtx{Context: context.Background(), n: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Unknown || !strings.Contains(res.Reason, "time limit") {
				t.Fatalf("limit passed mid-check: outcome %q (%q), want unknown", res.Outcome, res.Reason)
			}
		})
	}
}

// Errors caused by the named model are ErrModel (the plan's "Model under
// test" is at fault), and errors of the checker are not; the text is
// unchanged either way.
func TestErrModel(t *testing.T) {
	badOp := []history.Op{{OpID: "1", ProcessID: "p", OpType: "enqueue", Key: "k", CompleteTS: new(int64)}}
	for _, c := range []struct {
		name  string
		spec  Spec
		ops   []history.Op
		model bool
	}{
		{"op the model has no operation for", Spec{Model: "register", Checker: "linearizability", History: "h.jsonl"}, badOp, true},
		{"no linearizability model", Spec{Model: "txn", Checker: "linearizability"}, nil, true},
		{"unknown checker", Spec{Model: "register", Checker: "no-such-checker"}, nil, false},
	} {
		_, err := Run(context.Background(), c.spec, c.ops, nil)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if got := errors.Is(err, ErrModel); got != c.model {
			t.Errorf("%s: errors.Is(%v, ErrModel) = %v, want %v", c.name, err, got, c.model)
		}
	}
}

// The recovery bound of an SLO: per fault window, the injection to the
// first acknowledged op of the named kind invoked after it — judged on
// histories that recover in time, too late, never (long enough to tell,
// or not), within the windows' clock uncertainty, and with no window.
func TestSLORecovery(t *testing.T) {
	slo, ok := plan.ParseSLO("the time from the kill to the first acknowledged put issued after it is <= 5s")
	if !ok {
		t.Fatal("no SLO parsed")
	}
	const s = int64(time.Second)
	row := func(inv, done int64, typ string) string {
		c := fmt.Sprint(done)
		if done < 0 {
			c = "-"
		}
		return fmt.Sprintf("p %d %s %s k 1 _", inv, c, typ)
	}
	win := []Window{{Epoch: "S3-w1", Injected: 10 * s}}
	before := row(9*s, 9*s+1000, "put") // acked before the kill: does not count
	for _, tc := range []struct {
		name    string
		rows    []string
		windows []Window
		u       time.Duration
		want    Outcome
	}{
		{"recovers in 2s", []string{before, row(10*s, -1, "put"), row(11*s, 12*s, "put"), row(20*s, 20*s+1, "put")}, win, 0, Valid},
		{"recovers in 6s", []string{before, row(11*s, -1, "put"), row(15*s, 16*s, "put")}, win, 0, Invalid},
		{"a read is not a put", []string{before, row(10*s+1, 11*s, "read"), row(15*s, 16*s, "put")}, win, 0, Invalid},
		{"never, history long enough", []string{before, row(10*s, -1, "put"), row(19*s, -1, "put")}, win, 0, Invalid},
		{"never, history too short", []string{before, row(10*s, -1, "put"), row(12*s, -1, "put")}, win, 0, Unknown},
		{"within the uncertainty", []string{before, row(11*s, 15*s-int64(20*time.Millisecond), "put"), row(20*s, 20*s+1, "put")}, win, 50 * time.Millisecond, Unknown},
		{"no window", []string{before, row(11*s, 12*s, "put")}, nil, 0, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Checker: SLO, SLO: slo, Windows: tc.windows, WindowUncertainty: tc.u}, h(t, tc.rows...), nil)
			if err != nil || res.Outcome != tc.want {
				t.Fatalf("%v %s (%s) %+v; want %s", err, res.Outcome, res.Reason, res.Anomalies, tc.want)
			}
			if tc.want == Invalid && (len(res.Anomalies) == 0 || res.Anomalies[0].FaultEpoch != "S3-w1") {
				t.Errorf("anomaly does not name the window: %+v", res.Anomalies)
			}
		})
	}
}

// A capped anomaly list still counts every anomaly: the evidence sentence
// of 150 lost acks says 150, not the 100 listed plus the entry that
// summarises the rest.
func TestEvidenceCountsAnomaliesBeyondTheCap(t *testing.T) {
	for _, n := range []int{1, maxAnomalies, maxAnomalies + 50} {
		var rows []string
		for i := range n {
			rows = append(rows, fmt.Sprintf("c1 %d %d write k%d %d _", 2*i+1, 2*i+2, i, i))
		}
		res := checkNoLostAck(context.Background(), h(t, rows...), &FinalState{Keys: map[string]json.RawMessage{}})
		word := "anomalies"
		if n == 1 {
			word = "anomaly"
		}
		if got, want := res.Evidence(), fmt.Sprintf("%d ops consumed, %d %s", n, n, word); got != want {
			t.Errorf("%d lost acks: evidence %q, want %q", n, got, want)
		}
	}
}
