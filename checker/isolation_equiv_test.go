package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// refRun is Run's isolation path over the reference checker
// (isolation_ref_test.go).
func refRun(spec Spec, ops []history.Op) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if spec.History == "" {
		spec.History = "history"
	}
	res, err := refCheckIsolation(ctx, spec, ops)
	if err != nil {
		return Result{}, err
	}
	res.Checker, res.Model = Serializability, spec.Model
	if res.Outcome == "" {
		res.Outcome = Valid
		if len(res.Anomalies) > 0 {
			res.Outcome = Invalid
		}
	}
	return res, nil
}

// edgeKey is an edge's key label in a cycle message: where two edges of a
// pair of transactions merge, which of their keys names the merged edge is
// the one thing the two checkers may choose differently.
var edgeKey = regexp.MustCompile(`(-(?:ww|wr|rw|rt|process))\[[^\]]*\]->`)

// sameIsolation compares two results of the isolation checker, all but
// the time taken and the key a merged edge is named by.
func sameIsolation(t *testing.T, name string, got, want Result) {
	t.Helper()
	norm := func(r Result) Result {
		r.Elapsed = 0
		r.Anomalies = slices.Clone(r.Anomalies)
		for i, a := range r.Anomalies {
			if edgeKey.MatchString(a.Message) {
				a.Message = edgeKey.ReplaceAllString(a.Message, "$1[]->")
				a.Key = ""
			}
			r.Anomalies[i] = a
		}
		return r
	}
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s %q %+v\nwant %s %q %+v\n got scope %s\nwant scope %s", name, g.Outcome, g.Reason, g.Anomalies, w.Outcome, w.Reason, w.Anomalies, g.Scope, w.Scope)
	}
}

// mutateTxns plants up to n faults in a transaction history: list reads
// cut short, missing, swapped or duplicated elements, values nobody
// wrote, register reads of another version, committed transactions
// turned aborted or unknown. Each can make a cycle, an aborted or
// intermediate read, an incompatible order or a dirty read; some change
// nothing. It reports whether it changed anything.
func mutateTxns(ops []history.Op, rng *rand.Rand, n int) bool {
	changed := false
	for try := 0; try < 20*n && n > 0; try++ {
		op := &ops[rng.IntN(len(ops))]
		if op.Output == nil {
			continue
		}
		var steps [][]any
		if json.Unmarshal(op.Output, &steps) != nil {
			continue
		}
		switch rng.IntN(9) {
		case 0:
			e := op.Error
			if e == "" {
				op.Error, op.Output = "aborted", nil
				changed, n = true, n-1
			}
			continue
		case 1:
			op.TimeoutMarker, op.CompleteTS, op.Output = true, nil, nil
			changed, n = true, n-1
			continue
		}
		j := rng.IntN(len(steps))
		if steps[j][0] != "r" {
			continue
		}
		switch v := steps[j][2].(type) {
		case []any:
			switch rng.IntN(6) {
			case 0:
				if len(v) == 0 {
					continue
				}
				v = v[:rng.IntN(len(v))]
			case 1:
				if len(v) < 2 {
					continue
				}
				i := rng.IntN(len(v) - 1)
				v = slices.Delete(slices.Clone(v), i, i+1)
			case 2:
				if len(v) < 2 {
					continue
				}
				v = slices.Clone(v)
				i := rng.IntN(len(v) - 1)
				v[i], v[i+1] = v[i+1], v[i]
			case 3:
				if len(v) == 0 {
					continue
				}
				v = append(slices.Clone(v), v[rng.IntN(len(v))])
			case 4:
				v = append(slices.Clone(v), json.Number("999999"+strconv.Itoa(rng.IntN(9))))
			case 5:
				v = append(slices.Clone(v), json.Number(strconv.Itoa(1+rng.IntN(len(ops)*2))))
			}
			steps[j][2] = v
		default:
			switch rng.IntN(3) {
			case 0:
				steps[j][2] = nil
			default:
				steps[j][2] = json.Number(strconv.Itoa(1 + rng.IntN(len(ops)*2)))
			}
		}
		b, err := json.Marshal(steps)
		if err != nil {
			panic(err)
		}
		op.Output, changed, n = b, true, n-1
	}
	return changed
}

// respell rewrites every transaction's micro-ops in another spelling of
// the same values, so both the compact decoder's fast path and its
// fallback are compared: mode 1 puts spaces between tokens, 2 writes
// values as strings, 3 as integers past 2^31, 4 escapes the keys' first
// letter (the same key, spelled otherwise in some transactions only).
func respell(ops []history.Op, mode int, rng *rand.Rand) {
	conv := func(v any) any {
		n, ok := v.(json.Number)
		if !ok {
			return v
		}
		switch mode {
		case 2:
			return "v" + n.String()
		case 3:
			i, _ := n.Int64()
			return json.Number(strconv.FormatInt(i+3_000_000_000, 10))
		}
		return v
	}
	do := func(raw json.RawMessage, escape bool) json.RawMessage {
		if raw == nil {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var steps [][]any
		if dec.Decode(&steps) != nil {
			return raw
		}
		for _, st := range steps {
			if l, ok := st[2].([]any); ok {
				for i := range l {
					l[i] = conv(l[i])
				}
			} else {
				st[2] = conv(st[2])
			}
		}
		b, _ := json.Marshal(steps)
		switch {
		case mode == 1:
			b = bytes.ReplaceAll(b, []byte(","), []byte(", "))
		case mode == 4 && escape:
			b = bytes.ReplaceAll(b, []byte(`","k`), []byte(`","\u006b`))
		}
		return b
	}
	for i := range ops {
		escape := rng.IntN(2) == 0
		ops[i].Input, ops[i].Output = do(ops[i].Input, escape), do(ops[i].Output, escape)
	}
}

// TestIsolationAgreesWithReference: the isolation checker gives the
// reference checker's result — outcome, reason, every anomaly with its
// message, the dirty reads, the scope line — on thousands of generated
// histories (serializable stores with lists and registers, key rotation
// or not; snapshot-isolation stores with write skew), as they are and
// with faults planted, at every level, and the same error on bad input.
func TestIsolationAgreesWithReference(t *testing.T) {
	seeds := uint64(150)
	if testing.Short() {
		seeds = 30
	}
	outcomes := map[Outcome]int{}
	classes := map[string]int{}
	for seed := uint64(0); seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 23))
		var ops []history.Op
		switch seed % 3 {
		case 0:
			ops = fixture.Txns(seed, 40+rng.IntN(200), 2+rng.IntN(8), 1+rng.IntN(5), int(seed%4)*4, seed%2 == 0)
		case 1:
			ops = fixture.Txns(seed, 40+rng.IntN(200), 2+rng.IntN(8), 1+rng.IntN(5), 0, false)
		default:
			ops = genSnapshot(seed, 40+rng.IntN(150), 2+rng.IntN(6), 2+rng.IntN(5))
		}
		if seed%5 == 4 {
			// After the generated transactions: lost updates, on a
			// register and on a list (whose read's text is then
			// compared); an intermediate read (G1b); a G1c and a G0
			// cycle.
			last := ops[len(ops)-1].InvokeTS
			for i, m := range []string{`[["r","lx",null],["w","lx",1]]`, `[["r","lx",null],["w","lx",2]]`,
				`[["r","ly",[]],["append","ly",3]]`, `[["r","ly",[]],["append","ly",4]]`,
				`[["append","lz",5],["append","lz",6]]`, `[["r","lz",[5]]]`,
				`[["append","gx",7],["r","gy",[8]]]`, `[["append","gy",8],["r","gx",[7]]]`,
				`[["append","hx",9],["append","hy",9]]`, `[["append","hx",10],["append","hy",10]]`, `[["r","hx",[9,10]],["r","hy",[10,9]]]`} {
				// Keys of their own: values need only be unique per key.
				out := m
				in := regexp.MustCompile(`"r","(\w+)",(\[[^\]]*\]|null)`).ReplaceAllString(out, `"r","$1",null`)
				c := last + int64(100*i) + 50
				ops = append(ops, history.Op{OpID: "planted" + strconv.Itoa(i), ProcessID: "pl", InvokeTS: last + int64(100*i) + 10, CompleteTS: &c,
					OpType: history.OpTxn, Input: json.RawMessage(in), Output: json.RawMessage(out), Line: len(ops) + 1})
			}
		}
		if mode := int(seed % 6); mode > 0 && mode < 5 {
			respell(ops, mode, rng)
		}
		for variant := 0; variant < 3; variant++ {
			h := slices.Clone(ops)
			if variant > 0 && !mutateTxns(h, rng, variant*2) {
				continue
			}
			for _, level := range IsolationLevels() {
				spec := Spec{Model: "txn", Checker: Serializability, History: "h.jsonl", Params: map[string]string{"level": level}}
				want, werr := refRun(spec, h)
				got, gerr := Run(context.Background(), spec, h, nil)
				name := fmt.Sprintf("seed %d variant %d level %s", seed, variant, level)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Fatalf("%s: error %v, want %v", name, gerr, werr)
				}
				if werr != nil {
					continue
				}
				sameIsolation(t, name, got, want)
				outcomes[want.Outcome]++
				for _, a := range want.Anomalies {
					classes[a.Kind]++
				}
			}
		}
	}
	t.Logf("outcomes %v; classes %v", outcomes, classes)
	for _, o := range []Outcome{Valid, Invalid, Unknown} {
		if outcomes[o] == 0 {
			t.Errorf("no history judged %s: the comparison does not cover it", o)
		}
	}
	for _, c := range []string{classG0, classG1a, classG1b, classG1c, classGSingle, classG2Item, classIncompat, classDuplicate, classLostUpdate} {
		if classes[c] == 0 {
			t.Errorf("no %s found: the comparison does not cover it", c)
		}
	}
}

// TestIsolationBadInputAgreesWithReference: the same error, with the same
// file:line, for each kind of bad input, wherever in the history it is.
func TestIsolationBadInputAgreesWithReference(t *testing.T) {
	good := fixture.Txns(5, 60, 4, 3, 0, true)
	bads := map[string]func(op *history.Op){
		"not a txn":      func(op *history.Op) { op.OpType = "write" },
		"bad micro-op":   func(op *history.Op) { op.Input = json.RawMessage(`[["cas","k",1]]`) },
		"not a list":     func(op *history.Op) { op.Input = json.RawMessage(`{"r":1}`) },
		"empty txn":      func(op *history.Op) { op.Input = json.RawMessage(`[]`) },
		"read in input":  func(op *history.Op) { op.Input = json.RawMessage(`[["r","k1_0",1]]`) },
		"output differs": func(op *history.Op) { op.Output = json.RawMessage(`[["w","zz",1]]`) },
		"w and append": func(op *history.Op) {
			op.Input, op.Output, op.Error = json.RawMessage(`[["w","k0_0",123456]]`), json.RawMessage(`[["w","k0_0",123456]]`), ""
		},
		// The first write of the history, done again.
		"value written twice": func(op *history.Op) {
			for i := range good {
				if w := &good[i]; w.Error == "" && w.Output != nil && w != op && bytes.Contains(w.Input, []byte(`["append"`)) && !bytes.Contains(w.Input, []byte(`["r"`)) {
					op.Input, op.Output, op.Error, op.TimeoutMarker, op.CompleteTS = w.Input, w.Output, "", false, w.CompleteTS
					return
				}
			}
			panic("no write to repeat")
		},
	}
	for name, bad := range bads {
		for _, at := range []int{0, 17, 59} {
			h := slices.Clone(good)
			bad(&h[at])
			spec := Spec{Model: "txn", Checker: Serializability, History: "h.jsonl"}
			_, werr := refRun(spec, h)
			_, gerr := Run(context.Background(), spec, h, nil)
			if werr == nil || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("%s at op %d: error %v, want %v (never nil)", name, at, gerr, werr)
			}
		}
	}
}
