package reduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/session"
)

// sequentialKV is a linearizable kv history of n ops: procs clients in
// turn, ops never overlapping, values unique; reads return the last write.
func sequentialKV(n, keys, procs int, seed uint64) []history.Op {
	rng := rand.New(rand.NewPCG(seed, 1))
	state := map[string]string{}
	ops := make([]history.Op, 0, n)
	for i := 0; i < n; i++ {
		inv := int64(i * 10)
		comp := inv + 5 + int64(rng.IntN(4))
		op := history.Op{OpID: strconv.Itoa(i + 1), ProcessID: "p" + strconv.Itoa(i%procs), InvokeTS: inv, CompleteTS: &comp,
			Key: "k" + strconv.Itoa(rng.IntN(keys)), Line: i + 1}
		if rng.IntN(2) == 0 {
			op.OpType = "write"
			op.Input = json.RawMessage(strconv.Itoa(i + 1))
			state[op.Key] = string(op.Input)
		} else {
			op.OpType = "read"
			if v, ok := state[op.Key]; ok {
				op.Output = json.RawMessage(v)
			}
		}
		ops = append(ops, op)
	}
	return ops
}

// plantStale makes one read in the middle of ops stale: it returns the
// value of the write before the last write of its key. The minimal
// reproducer is those three ops: the older write, the newer write, the
// read. It returns their op ids.
func plantStale(t *testing.T, ops []history.Op) []string {
	t.Helper()
	last := map[string][2]int{} // key -> indexes of the last two writes
	for i := len(ops) / 2; i < len(ops); i++ {
		o := &ops[i]
		switch o.OpType {
		case "write":
			w := last[o.Key]
			last[o.Key] = [2]int{w[1], i}
			if w[1] == 0 {
				last[o.Key] = [2]int{-1, i}
			}
		case "read":
			w, ok := last[o.Key]
			if !ok || w[0] < 0 {
				continue
			}
			o.Output = ops[w[0]].Input
			return []string{ops[w[0]].OpID, ops[w[1]].OpID, o.OpID}
		}
	}
	t.Fatal("no read to make stale")
	return nil
}

func ids(ops []history.Op) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.OpID)
	}
	slices.Sort(out)
	return out
}

// TestReducePlantedStaleRead: one stale read on one key in a 100k-op
// history reduces to exactly the three ops that form it.
func TestReducePlantedStaleRead(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	ops := sequentialKV(n, 1000, 16, 7)
	want := plantStale(t, ops)
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Reduce(ctx, checker.Spec{Model: "kv", Checker: checker.Linearizability}, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Ops); !slices.Equal(got, want) {
		t.Fatalf("reduced to %v, want the planted %v (%s)", got, want, res.Summary())
	}
	if res.Stopped != "" || res.Class != "nonlinearizable" || len(res.Keys) != 1 {
		t.Errorf("result %+v", res)
	}
	sum := res.Summary()
	if !strings.HasPrefix(sum, fmt.Sprintf("reduced from %d ops to 3 ops (keys %q, window ", n, res.Keys[0])) {
		t.Errorf("summary %q", sum)
	}
	t.Logf("%s in %d checks", sum, res.Checks)
}

// TestReduceRefusesWithoutAnomaly: a valid history, and one the checker
// cannot decide in time, are never reduced.
func TestReduceRefusesWithoutAnomaly(t *testing.T) {
	valid := sequentialKV(2000, 10, 4, 1)
	tests := []struct {
		name string
		ops  []history.Op
		ctx  func() (context.Context, context.CancelFunc)
		want string
	}{
		{"valid", valid, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, "outcome valid"},
		{"undecided", valid, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, "outcome unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			_, err := Reduce(ctx, checker.Spec{Model: "kv", Checker: checker.Linearizability}, tt.ops, nil)
			if !errors.Is(err, ErrNoAnomaly) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrNoAnomaly with %q", err, tt.want)
			}
		})
	}
}

// TestReduceTimeBound: a reduction whose context ends mid-way stops at
// the next re-check with a reproducer that still fails, and says it
// stopped early.
func TestReduceTimeBound(t *testing.T) {
	ops := sequentialKV(20_000, 200, 16, 3)
	plantStale(t, ops)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	spec := checker.Spec{Model: "kv", Checker: checker.Linearizability}
	const bound = 3
	res, err := reduce(ctx, spec, ops, nil, func(checks int) {
		if checks == bound {
			cancel(errors.New("time bound of the test"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped == "" || !strings.Contains(res.Summary(), "stopped early: time bound of the test") {
		t.Fatalf("summary %q does not say it stopped early", res.Summary())
	}
	if res.Checks != bound {
		t.Errorf("%d checks, want it to stop at the check the bound ended (%d)", res.Checks, bound)
	}
	again, err := checker.Run(context.Background(), spec, res.Ops, nil)
	if err != nil || again.Outcome != checker.Invalid {
		t.Errorf("the partial reproducer (%d ops) no longer fails: %s %v", len(res.Ops), again.Outcome, err)
	}
	if len(res.Ops) == len(ops) {
		t.Logf("nothing reduced before the bound (allowed): %s", res.Summary())
	}
}

func TestFaultWindows(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	windows := []session.FaultWindow{
		{FaultEpoch: "f1", Nemesis: "partition", ScheduledAtNS: 0, InjectedAtNS: p(10), RevertedAtNS: p(50)},
		{FaultEpoch: "f2", Nemesis: "kill", ScheduledAtNS: 100, RevertedAtNS: p(150)},
		{FaultEpoch: "f3", Nemesis: "clock", ScheduledAtNS: 500},
		{FaultEpoch: "f4", Nemesis: "pause", ScheduledAtNS: 900, RevertedAtNS: p(950)},
	}
	tests := []struct {
		name   string
		lo, hi int64
		epoch  string
		want   []string
	}{
		{"inside one", 20, 30, "", []string{"f1 (partition)"}},
		{"spans two", 40, 120, "", []string{"f1 (partition)", "f2 (kill)"}},
		{"none", 60, 90, "", nil},
		{"open-ended window", 600, 700, "", []string{"f3 (clock)"}},
		{"by the op's epoch", 60, 90, "f4", []string{"f4 (pause)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Result{Ops: []history.Op{{OpID: "1", FaultEpoch: tt.epoch}}, WindowStart: tt.lo, WindowEnd: tt.hi}
			got := r.FaultWindows(windows)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			line := r.Describe(got)
			if len(got) > 0 && !strings.HasSuffix(line, ", fault windows "+strings.Join(tt.want, ", ")+")") {
				t.Errorf("line %q does not name the fault windows", line)
			}
		})
	}
}

// TestReduceTxnWriteSkew: a write skew (G2-item) between two transactions
// over keys x and y, hidden among serializable single-key transactions on
// other keys, reduces to exactly those two: key reduction reads the keys
// of each transaction's micro-ops and never splits a transaction.
func TestReduceTxnWriteSkew(t *testing.T) {
	var ops []history.Op
	add := func(proc, micro, out string) {
		i := len(ops)
		inv := int64(i * 10)
		comp := inv + 5
		ops = append(ops, history.Op{OpID: strconv.Itoa(i + 1), ProcessID: proc, InvokeTS: inv, CompleteTS: &comp,
			OpType: history.OpTxn, Input: json.RawMessage(micro), Output: json.RawMessage(out), Line: i + 1})
	}
	for i := 0; i < 200; i++ {
		k := "k" + strconv.Itoa(i%20)
		if i%2 == 0 {
			add("p"+strconv.Itoa(i%4), fmt.Sprintf(`[["w",%q,%d]]`, k, i), fmt.Sprintf(`[["w",%q,%d]]`, k, i))
		} else {
			add("p"+strconv.Itoa(i%4), fmt.Sprintf(`[["r",%q,null]]`, k), fmt.Sprintf(`[["r",%q,%d]]`, k, i-1-((i-1)%2)))
		}
		if i == 100 {
			add("p0", `[["r","x",null],["r","y",null],["w","x",1]]`, `[["r","x",null],["r","y",null],["w","x",1]]`)
			add("p1", `[["r","x",null],["r","y",null],["w","y",2]]`, `[["r","x",null],["r","y",null],["w","y",2]]`)
		}
	}
	spec := checker.Spec{Model: "txn", Checker: checker.Serializability, Params: map[string]string{"level": checker.Serializable}}
	res, err := Reduce(context.Background(), spec, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != "G2-item" {
		t.Fatalf("class %q, want G2-item", res.Class)
	}
	if got := ids(res.Ops); !slices.Equal(got, []string{"102", "103"}) {
		t.Errorf("reduced to ops %v, want the two write-skew transactions [102 103]", got)
	}
	if !slices.Equal(res.Keys, []string{"x", "y"}) {
		t.Errorf("keys %v, want [x y]", res.Keys)
	}
}
