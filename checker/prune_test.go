package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// TestPruneRule pins which timed-out ops the pass drops and which it must
// keep; each "kept" row is a history whose verdict would change if the op
// were dropped, or one the proof does not cover.
func TestPruneRule(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		rows    []string
		dropped []string // op ids the pass removes
		want    Outcome  // the verdict, which the pass must not change
	}{
		{"unread timed-out write dropped", "register",
			[]string{"p 0 10 write _ 1 _", "q 5 - write _ 2 _", "p 20 30 read _ _ 1"}, []string{"2"}, Valid},
		{"read timed-out write kept", "register",
			[]string{"p 0 10 write _ 1 _", "q 5 - write _ 2 _", "p 20 30 read _ _ 2"}, nil, Valid},
		{"a read of the same value by another write keeps it", "register",
			[]string{"p 0 10 write _ 2 _", "q 5 - write _ 2 _", "p 20 30 read _ _ 2"}, nil, Valid},
		{"dropped on a stale read still fails", "register",
			[]string{"p 0 10 write _ 1 _", "p 11 20 write _ 3 _", "q 5 - write _ 2 _", "p 30 40 read _ _ 1"}, []string{"3"}, Invalid},
		{"failed cas keeps the write (it alone explains the false)", "register",
			[]string{"p 0 10 write _ 1 _", "q 20 - write _ 2 _", "p 30 40 cas _ [1,3] false"}, nil, Valid},
		{"timed-out cas keeps the write", "register",
			[]string{"p 0 10 write _ 1 _", "q 20 - write _ 2 _", "r 30 - cas _ [1,3] _", "p 30 40 read _ _ 1"}, nil, Valid},
		{"cas expecting the value keeps the write", "register",
			[]string{"p 0 10 write _ 1 _", "q 20 - write _ 2 _", "p 30 40 cas _ [2,3] true"}, nil, Valid},
		{"all cas true and none expects it: dropped", "register",
			[]string{"p 0 10 write _ 1 _", "q 20 - write _ 2 _", "p 30 40 cas _ [1,3] true", "p 50 60 read _ _ 3"}, []string{"2"}, Valid},
		{"completed write never dropped", "register",
			[]string{"p 0 10 write _ 1 _", "q 20 30 write _ 2 _", "p 40 50 read _ _ 2"}, nil, Valid},
		{"counter increments never dropped", "counter",
			[]string{"p 0 10 inc _ 1 1", "q 5 - inc _ 2 _", "p 20 30 read _ _ 3"}, nil, Valid},
		{"unread timed-out add dropped", "set",
			[]string{"p 0 10 add _ 1 _", "q 5 - add _ 2 _", "p 20 30 read _ _ [1]"}, []string{"2"}, Valid},
		{"unread timed-out enqueue dropped", "queue",
			[]string{"p 0 10 enqueue _ 1 _", "q 5 - enqueue _ 2 _", "p 20 30 dequeue _ _ 1"}, []string{"2"}, Valid},
		{"append kept where offsets are returned", "log",
			[]string{"p 0 10 append _ 1 0", "q 5 - append _ 2 _", "p 20 30 append _ 3 2"}, nil, Valid},
		{"append dropped without offsets", "log",
			[]string{"p 0 10 append _ 1 _", "q 5 - append _ 2 _", "p 20 30 read _ _ [1]"}, []string{"2"}, Valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := h(t, tt.rows...)
			m := linModels[tt.model]
			all, err := buildPartitionsNoPrune(m, ops)
			if err != nil {
				t.Fatal(err)
			}
			pruned, err := buildPartitions(m, ops, "h.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			for _, p := range pruned {
				for _, i := range p.idx {
					kept[ops[i].OpID] = true
				}
			}
			var dropped []string
			for _, p := range all {
				for _, i := range p.idx {
					if !kept[ops[i].OpID] {
						dropped = append(dropped, ops[i].OpID)
					}
				}
			}
			if !slices.Equal(dropped, tt.dropped) {
				t.Errorf("dropped %v, want %v", dropped, tt.dropped)
			}
			for _, prune := range []bool{true, false} {
				res, err := checkLin(context.Background(), Spec{Model: tt.model, Timeout: time.Minute}, m, ops, linOpts{prune: prune})
				if err != nil || res.Outcome != tt.want {
					t.Errorf("prune=%v: %s %v, want %s", prune, res.Outcome, err, tt.want)
				}
			}
		})
	}
}

// moreTimeouts turns a share of the completed effectful ops into timeouts
// with no answer. A linearizable history stays linearizable (each op keeps
// its linearization point; only its return becomes open-ended), so the
// verdict of a good history is known, and the pass has more to prune.
func moreTimeouts(ops []history.Op, rng *rand.Rand, frac float64) {
	for i := range ops {
		o := &ops[i]
		switch o.OpType {
		case "write", "add", "enqueue", "append":
		default:
			continue
		}
		if o.CompleteTS != nil && o.Error == "" && rng.Float64() < frac {
			o.CompleteTS, o.TimeoutMarker, o.Output, o.Error = nil, true, nil, "timeout"
		}
	}
}

// verdictsWithAndWithout checks ops with and without the pass, through the
// whole checker and through raw porcupine on each key's partition, and
// fails the test when any answer differs; it returns how many ops the pass
// dropped and the checker's verdict.
func verdictsWithAndWithout(t *testing.T, name, model string, ops []history.Op) (int, Outcome) {
	t.Helper()
	m := linModels[model]
	var outs [2]Outcome
	for i, prune := range []bool{true, false} {
		res, err := checkLin(context.Background(), Spec{Model: model, Timeout: time.Minute}, m, ops, linOpts{prune: prune})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Outcome == Unknown {
			t.Fatalf("%s: prune=%v: unknown: %s", name, prune, res.Reason)
		}
		outs[i] = res.Outcome
	}
	if outs[0] != outs[1] {
		t.Fatalf("%s: %s with the pass, %s without", name, outs[0], outs[1])
	}
	parts, err := buildPartitionsNoPrune(m, ops)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	pm := m.porcupineModel(nil)
	// A minute, like the checker's own budget above: unpruned, the
	// queue's seed 5 (20 ops) takes 2.4–6.7 s on a lightly loaded 2-core
	// machine, and a suite beside it once pushed it past 10 s.
	const rawBudget = time.Minute
	for _, p := range parts {
		full := porcupine.CheckOperationsTimeout(pm, p.ops, rawBudget)
		if full == porcupine.Unknown {
			t.Fatalf("%s: key %q: raw porcupine undecided in %v without the pass", name, p.key, rawBudget)
		}
		q := &partition{key: p.key, ops: slices.Clone(p.ops), idx: slices.Clone(p.idx)}
		dropUnobserved(q)
		dropped += len(p.ops) - len(q.ops)
		if got := porcupine.CheckOperationsTimeout(pm, q.ops, rawBudget); got != full {
			t.Fatalf("%s: key %q: porcupine says %v with the pass, %v without", name, p.key, got, full)
		}
	}
	return dropped, outs[0]
}

// TestPruneEquivalenceGenerated: the same verdict with and without the
// pass on thousands of generated histories of every model, good ones and
// ones mutated to be non-linearizable, with extra timed-out ops.
func TestPruneEquivalenceGenerated(t *testing.T) {
	seeds := uint64(300)
	if testing.Short() {
		seeds = 40
	}
	total, dropped := 0, 0
	for _, model := range []string{"register", "kv", "counter", "log", "set", "queue"} {
		frac := 0.3
		if model == "queue" {
			frac = 0 // every order of open enqueues is a state: unpruned, the search is factorial (the generator still times out 5%)
		}
		bad := 0
		start := time.Now()
		n := seeds
		if model == "queue" {
			n = max(5, seeds/10) // unpruned, a queue's open enqueues make porcupine's search factorial
		}
		for seed := uint64(0); seed < n; seed++ {
			for _, mutated := range []bool{false, true} {
				ops := simulate(model, seed)
				rng := rand.New(rand.NewPCG(seed, 11))
				if mutated && !mutate(model, ops, rng) {
					continue
				}
				moreTimeouts(ops, rng, frac)
				d, out := verdictsWithAndWithout(t, fmt.Sprintf("%s seed %d mutated=%v", model, seed, mutated), model, ops)
				if !mutated && out != Valid {
					t.Fatalf("%s seed %d: good history judged %s", model, seed, out)
				}
				if out == Invalid {
					bad++
				}
				total++
				dropped += d
			}
		}
		if bad < int(n)/2 {
			t.Errorf("%s: only %d invalid histories: the bad half is not exercised", model, bad)
		}
		t.Logf("%s: %v", model, time.Since(start))
	}
	// kv read/write without cas, where the pass applies most.
	for seed := uint64(0); seed < seeds*3; seed++ {
		for _, mutated := range []bool{false, true} {
			ops := fixture.KVTimeouts(60, 2, 6, 0.3, seed)
			if mutated {
				mutate("kv", ops, rand.New(rand.NewPCG(seed, 5)))
			}
			d, _ := verdictsWithAndWithout(t, fmt.Sprintf("rw seed %d mutated=%v", seed, mutated), "kv", ops)
			total++
			dropped += d
		}
	}
	t.Logf("%d histories, %d ops pruned, every verdict the same", total, dropped)
	if dropped == 0 {
		t.Fatal("the pass pruned nothing: the equivalence was not exercised")
	}
}

// jepsenDir is porcupine's Jepsen etcd test data in the module cache, or
// "" with the reason it is not there.
func jepsenDir(t *testing.T) (string, string) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Sprintf("go env GOMODCACHE: %v", err)
	}
	dirs, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "github.com", "anishathalye", "porcupine@*", "test_data", "jepsen"))
	if len(dirs) == 0 {
		return "", "porcupine's test_data/jepsen is not in the module cache"
	}
	return dirs[len(dirs)-1], ""
}

// parseJepsenEtcd reads a Jepsen etcd register log (porcupine's
// test_data/jepsen) as a register history: the line number is the clock,
// a cas that failed returned false, a read that timed out and every op
// still open at the end are timeouts.
func parseJepsenEtcd(t *testing.T, path string) []history.Op {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(read|write|cas)\s+(.*)$`)
	var ops []history.Op
	open := map[string]int{}
	for n, line := range strings.Split(string(data), "\n") {
		m := re.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		proc, kind, f, arg := m[1], m[2], m[3], m[4]
		ts := int64(n + 1)
		if kind == "invoke" {
			op := history.Op{OpID: strconv.Itoa(len(ops) + 1), ProcessID: proc, OpType: f, InvokeTS: ts, Line: n + 1}
			switch f {
			case "write":
				op.Input = json.RawMessage(arg)
			case "cas":
				op.Input = json.RawMessage("[" + strings.Join(strings.Fields(strings.Trim(arg, "[]")), ",") + "]")
			}
			open[proc] = len(ops)
			ops = append(ops, op)
			continue
		}
		i, ok := open[proc]
		if !ok {
			continue
		}
		delete(open, proc)
		op := &ops[i]
		switch {
		case kind == "ok" && f == "read":
			c := ts
			op.CompleteTS = &c
			if arg == "nil" {
				op.Output = json.RawMessage("null")
			} else {
				op.Output = json.RawMessage(arg)
			}
		case kind == "ok" && f == "write":
			c := ts
			op.CompleteTS = &c
		case f == "cas" && (kind == "ok" || kind == "fail"):
			c := ts
			op.CompleteTS = &c
			op.Output = json.RawMessage(strconv.FormatBool(kind == "ok"))
		default: // a timed-out read, or :info: may or may not have happened
			op.TimeoutMarker = true
		}
	}
	for _, i := range open {
		ops[i].TimeoutMarker = true
	}
	return ops
}

// TestPruneJepsenEtcd: on porcupine's 103 Jepsen etcd register histories
// the checker gives porcupine's own expected answer (its test file),
// with and without the pass.
func TestPruneJepsenEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 103 histories, some minutes of search")
	}
	dir, why := jepsenDir(t)
	if dir == "" {
		t.Skip(why)
	}
	src, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(dir)), "porcupine_test.go"))
	if err != nil {
		t.Skipf("porcupine's expected answers: %v", err)
	}
	want := map[int]bool{}
	for _, m := range regexp.MustCompile(`checkJepsen\(t, (\d+), (true|false)\)`).FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.Atoi(m[1])
		want[n] = m[2] == "true"
	}
	if len(want) < 100 {
		t.Fatalf("found %d expected answers in porcupine's tests", len(want))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "etcd_*.log"))
	checked, dropped := 0, 0
	for _, f := range files {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(f), "etcd_%03d.log", &n); err != nil {
			continue
		}
		exp, ok := want[n]
		if !ok {
			continue
		}
		ops := parseJepsenEtcd(t, f)
		d, out := verdictsWithAndWithout(t, filepath.Base(f), "register", ops)
		if (out == Valid) != exp {
			t.Errorf("%s: %s, porcupine expects linearizable=%v", filepath.Base(f), out, exp)
		}
		checked++
		dropped += d
	}
	t.Logf("%d Jepsen etcd histories, porcupine's answer on each; the pass dropped %d ops (all have cas that failed or timed out, where it must not apply to writes)", checked, dropped)
	if checked != len(want) {
		t.Errorf("checked %d of %d histories", checked, len(want))
	}
}

// buildPartitionsNoPrune is buildPartitions without the pruning pass.
func buildPartitionsNoPrune(m *modelDef, ops []history.Op) ([]*partition, error) {
	pl, err := partitionOps(m, ops, "h.jsonl", linOpts{})
	return pl.parts, err
}
