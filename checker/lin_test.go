package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

// h builds a history from compact rows: "proc inv comp type key input output [error]".
// comp "-" is a timeout (complete_ts null); "_" stands for null.
func h(t testing.TB, rows ...string) []history.Op {
	t.Helper()
	var ops []history.Op
	for i, r := range rows {
		f := strings.Fields(r)
		if len(f) < 7 {
			t.Fatalf("row %q", r)
		}
		op := history.Op{OpID: fmt.Sprint(i + 1), ProcessID: f[0], OpType: f[3], Line: i + 1}
		fmt.Sscan(f[1], &op.InvokeTS)
		if f[2] == "-" {
			op.TimeoutMarker = true
		} else {
			var c int64
			fmt.Sscan(f[2], &c)
			op.CompleteTS = &c
		}
		if f[4] != "_" {
			op.Key = f[4]
		}
		if f[5] != "_" {
			op.Input = json.RawMessage(f[5])
		}
		if f[6] != "_" {
			op.Output = json.RawMessage(f[6])
		}
		if len(f) > 7 {
			op.Error = f[7]
		}
		ops = append(ops, op)
	}
	return ops
}

func TestLinearizabilityHandWritten(t *testing.T) {
	tests := []struct {
		name  string
		model string
		rows  []string
		want  Outcome
	}{
		{"register sequential", "register", []string{
			"p1 0 10 write _ 1 _", "p2 20 30 read _ _ 1"}, Valid},
		{"register initial null", "register", []string{"p1 0 10 read _ _ null"}, Valid},
		{"register stale read", "register", []string{
			"p1 0 10 write _ 1 _", "p1 20 30 write _ 2 _", "p2 40 50 read _ _ 1"}, Invalid},
		{"register concurrent either", "register", []string{
			"p1 0 100 write _ 1 _", "p2 10 20 read _ _ 1", "p3 30 40 read _ _ null"}, Invalid},
		{"register concurrent ok", "register", []string{
			"p1 0 100 write _ 1 _", "p3 10 20 read _ _ null", "p2 30 40 read _ _ 1"}, Valid},
		{"timed-out write later read is fine", "register", []string{
			"p1 0 - write _ 7 _ deadline", "p2 50 60 read _ _ 7"}, Valid},
		{"timed-out write never seen is fine", "register", []string{
			"p1 0 - write _ 7 _", "p2 50 60 read _ _ null"}, Valid},
		{"timed-out write cannot take effect before invoke", "register", []string{
			"p2 0 10 read _ _ 7", "p1 20 - write _ 7 _"}, Invalid},
		{"failed write read is a violation", "register", []string{
			"p1 0 10 write _ 7 _ rejected", "p2 50 60 read _ _ 7"}, Invalid},
		{"cas success", "register", []string{
			"p1 0 10 write _ 1 _", "p2 20 30 cas _ [1,2] true", "p3 40 50 read _ _ 2"}, Valid},
		{"cas false but took effect", "register", []string{
			"p1 0 10 write _ 1 _", "p2 20 30 cas _ [1,2] false", "p3 40 50 read _ _ 2"}, Invalid},
		{"cas true on wrong value", "register", []string{
			"p1 0 10 write _ 1 _", "p2 20 30 cas _ [5,2] true"}, Invalid},
		{"cas timeout may apply", "register", []string{
			"p1 0 10 write _ 1 _", "p2 20 - cas _ [1,2] _", "p3 40 50 read _ _ 2", "p3 60 70 read _ _ 2"}, Valid},
		{"kv keys independent", "kv", []string{
			"p1 0 10 write a 1 _", "p1 20 30 write b 2 _", "p2 40 50 read a _ 1", "p2 60 70 read b _ 2"}, Valid},
		{"kv stale on one key", "map", []string{
			"p1 0 10 write a 1 _", "p1 20 30 write b 2 _", "p2 40 50 read a _ 1", "p2 60 70 read b _ null"}, Invalid},
		{"counter ok", "counter", []string{
			"p1 0 10 inc _ 2 2", "p2 5 15 inc _ 3 5", "p3 20 30 read _ _ 5"}, Valid},
		{"counter lost increment", "counter", []string{
			"p1 0 10 inc _ 2 _", "p2 20 30 inc _ 3 _", "p3 40 50 read _ _ 3"}, Invalid},
		{"counter timed-out inc may count", "counter", []string{
			"p1 0 - inc _ 2 _", "p3 40 50 read _ _ 2"}, Valid},
		{"log ok", "log", []string{
			"p1 0 10 append _ \"a\" 0", "p2 20 30 append _ \"b\" _", "p3 40 50 read _ _ [\"a\",\"b\"]"}, Valid},
		{"log lost append", "log", []string{
			"p1 0 10 append _ \"a\" _", "p2 20 30 append _ \"b\" _", "p3 40 50 read _ _ [\"b\"]"}, Invalid},
		{"log wrong offset", "log", []string{
			"p1 0 10 append _ \"a\" 1"}, Invalid},
		{"set ok any order", "set", []string{
			"p1 0 10 add _ 1 _", "p2 20 30 add _ 2 _", "p3 40 50 read _ _ [2,1]"}, Valid},
		{"set missing", "set", []string{
			"p1 0 10 add _ 1 _", "p2 20 30 add _ 2 _", "p3 40 50 read _ _ [2]"}, Invalid},
		{"queue fifo", "queue", []string{
			"p1 0 10 enqueue _ 1 _", "p1 20 30 enqueue _ 2 _", "p2 40 50 dequeue _ _ 1", "p2 60 70 dequeue _ _ 2", "p2 80 90 dequeue _ _ null"}, Valid},
		{"queue out of order", "fifo", []string{
			"p1 0 10 enqueue _ 1 _", "p1 20 30 enqueue _ 2 _", "p2 40 50 dequeue _ _ 2"}, Invalid},
		{"queue timed-out dequeue may consume", "queue", []string{
			"p1 0 10 enqueue _ 1 _", "p1 20 30 enqueue _ 2 _", "p2 40 - dequeue _ _ _", "p3 60 70 dequeue _ _ 2"}, Valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Model: tt.model, Checker: Linearizability}, h(t, tt.rows...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s (%+v)", res.Outcome, tt.want, res.Anomalies)
			}
			if res.OpsConsumed != len(tt.rows) {
				t.Errorf("ops consumed %d, want %d", res.OpsConsumed, len(tt.rows))
			}
			if tt.want == Invalid && (len(res.Anomalies) == 0 || res.Anomalies[0].Kind != "nonlinearizable") {
				t.Errorf("no anomaly reported: %+v", res)
			}
		})
	}
}

func TestLinearizabilityBadInput(t *testing.T) {
	tests := []struct {
		name, model string
		rows        []string
		want        string
		line        int // the history line a *fileline.Error names; 0: none
	}{
		{"unknown model", "tree", []string{"p 0 1 read _ _ 1"}, "no linearizability model", 0},
		{"wrong op type", "register", []string{"p 0 1 enqueue _ 1 _"}, `h.jsonl:1: op_type "enqueue"`, 1},
		{"cas input", "register", []string{"p 0 1 cas _ 1 true"}, "cas input must be", 1},
		{"cas output", "register", []string{"p 0 1 cas _ [1,2] 3"}, "cas output must be", 1},
		{"counter delta", "counter", []string{"p 0 1 inc _ \"x\" _"}, "inc input", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Spec{Model: tt.model, Checker: Linearizability, History: "h.jsonl"}, h(t, tt.rows...), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			var fe *fileline.Error
			if isFL := errors.As(err, &fe); isFL != (tt.line > 0) || (isFL && (fe.File != "h.jsonl" || fe.Line != tt.line)) {
				t.Errorf("err %#v, want a *fileline.Error at h.jsonl:%d (none for 0)", err, tt.line)
			}
		})
	}
}

func TestViolationDetails(t *testing.T) {
	ops := h(t, "p1 0 10 write a 1 _", "p1 20 30 write a 2 _", "p2 40 50 read a _ 1", "p3 0 10 write b 1 _")
	ops[2].FaultEpoch = "w1"
	html := filepath.Join(t.TempDir(), "v.html")
	res, err := Run(context.Background(), Spec{Model: "kv", Checker: Linearizability, HTMLPath: html}, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Invalid || len(res.Anomalies) != 1 {
		t.Fatalf("%+v", res)
	}
	a := res.Anomalies[0]
	if a.Key != "a" || a.WindowStart != 40 || a.WindowEnd != 50 || !slices.Contains(a.OpIDs, "3") || a.FaultEpoch != "w1" {
		t.Errorf("anomaly %+v: want key a, window 40..50 naming op 3 under fault w1", a)
	}
	if res.HTML != html || res.HTMLCapped {
		t.Errorf("html %q capped %v", res.HTML, res.HTMLCapped)
	}
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualization not written: %v", err)
	}

	// A cap just below the whole partition: the cut to the failing window
	// (ops invoked by its end) is written and flagged as capped.
	long := append([]history.Op(nil), ops...)
	for i := 0; i < 300; i++ {
		c := int64(1000 + 20*i + 10)
		long = append(long, history.Op{OpID: fmt.Sprint("w", i), ProcessID: "p4", InvokeTS: int64(1000 + 20*i), CompleteTS: &c,
			OpType: "write", Key: "a", Input: json.RawMessage(fmt.Sprint(i + 100))})
	}
	full := filepath.Join(t.TempDir(), "full.html")
	if res, _ = Run(context.Background(), Spec{Model: "kv", Checker: Linearizability, HTMLPath: full}, long, nil); res.HTML != full {
		t.Fatalf("full visualization not written: %+v", res)
	}
	st, _ := os.Stat(full)
	cut := filepath.Join(t.TempDir(), "cut.html")
	res, _ = Run(context.Background(), Spec{Model: "kv", Checker: Linearizability, HTMLPath: cut, HTMLMaxBytes: st.Size() - 1}, long, nil)
	if res.HTML != cut || !res.HTMLCapped {
		t.Fatalf("cut visualization: html %q capped %v", res.HTML, res.HTMLCapped)
	}
	if st2, _ := os.Stat(cut); st2.Size() >= st.Size() {
		t.Errorf("cut visualization %d bytes, full %d", st2.Size(), st.Size())
	}

	// A cap below the size of any visualization: nothing written, said so.
	html2 := filepath.Join(t.TempDir(), "capped.html")
	res, _ = Run(context.Background(), Spec{Model: "kv", Checker: Linearizability, HTMLPath: html2, HTMLMaxBytes: 100}, ops, nil)
	if !res.HTMLCapped || res.HTML != "" {
		t.Errorf("cap not reported: %+v", res)
	}
	if _, err := os.Stat(html2); err == nil {
		t.Error("over-cap visualization written")
	}
}

// pathological: n fully overlapping writes, then two sequential reads
// that disagree; porcupine must try every order of the writes before it
// can say Illegal, which it cannot finish for n = 40.
func pathological(n int) []history.Op {
	var ops []history.Op
	for i := 0; i < n; i++ {
		c := int64(1000 + i)
		ops = append(ops, history.Op{OpID: fmt.Sprint(i), ProcessID: fmt.Sprint(i), InvokeTS: int64(i), CompleteTS: &c,
			OpType: "write", Input: json.RawMessage(fmt.Sprint(i))})
	}
	c1, c2 := int64(5000), int64(7000)
	ops = append(ops,
		history.Op{OpID: "x", ProcessID: "x", InvokeTS: 4000, CompleteTS: &c1, OpType: "read", Output: json.RawMessage("0")},
		history.Op{OpID: "y", ProcessID: "x", InvokeTS: 6000, CompleteTS: &c2, OpType: "read", Output: json.RawMessage("1")})
	return ops
}

func TestTimeLimitIsUnknown(t *testing.T) {
	start := time.Now()
	res, err := Run(context.Background(), Spec{Model: "register", Checker: Linearizability, Timeout: 50 * time.Millisecond}, pathological(40), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Unknown || res.Reason == "" {
		t.Fatalf("outcome %s (%q), want unknown", res.Outcome, res.Reason)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("time limit not enforced: %v", el)
	}
	// Cancelling the caller's context is the same: Unknown, promptly.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	start = time.Now()
	res, _ = Run(ctx, Spec{Model: "register", Checker: Linearizability}, pathological(40), nil)
	if res.Outcome != Unknown {
		t.Fatalf("cancelled check: %s", res.Outcome)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("cancel not honoured: %v", el)
	}
}

// TestExpiredLimitNeverPasses: even a history the cheap sequential path
// decides instantly is Unknown when the time limit is already spent, so a
// verdict never rests on a check that ran over time.
func TestExpiredLimitNeverPasses(t *testing.T) {
	var ops []history.Op
	for i := 0; i < 60; i++ {
		inv, done := int64(i*10), int64(i*10+5)
		ops = append(ops, history.Op{OpID: fmt.Sprint(i), ProcessID: "p", InvokeTS: inv, CompleteTS: &done,
			OpType: "write", Key: fmt.Sprint("k", i%3), Input: json.RawMessage(fmt.Sprint(i))})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Spec{Model: "kv", Checker: Linearizability}, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Unknown {
		t.Fatalf("outcome %s after the limit expired, want unknown", res.Outcome)
	}
	// The same history within its limit is valid: the test can fail both ways.
	res, err = Run(context.Background(), Spec{Model: "kv", Checker: Linearizability, Timeout: time.Minute}, ops, nil)
	if err != nil || res.Outcome != Valid {
		t.Fatalf("in-time check: %s %v, want valid", res.Outcome, err)
	}
}

// --- generated histories -------------------------------------------------

// genOp is a simulated op: its real-time interval and the point inside it
// where the sequential object applied it.
type genOp struct {
	op      history.Op
	lp      int64
	applied bool
}

// simulate runs clients against a sequential object of model and records a
// concurrent history: each op gets an interval, a linearization point
// inside it, and its output from the object in linearization-point order.
// Some ops time out (applied or not, at random) or fail (not applied).
func simulate(model string, seed uint64) []history.Op {
	rng := rand.New(rand.NewPCG(seed, 99))
	clients, per := 2+rng.IntN(4), 4+rng.IntN(8)
	keys := []string{""}
	if model == "kv" {
		keys = []string{"a", "b", "c"}
	}
	var g []*genOp
	next := 0
	for c := 0; c < clients; c++ {
		t := int64(rng.IntN(20))
		for i := 0; i < per; i++ {
			inv := t + int64(rng.IntN(10))
			dur := int64(1 + rng.IntN(40))
			next++
			op := history.Op{OpID: fmt.Sprint(next), ProcessID: fmt.Sprint("c", c), InvokeTS: inv, Key: keys[rng.IntN(len(keys))]}
			comp := inv + dur
			op.CompleteTS = &comp
			op.OpType, op.Input = genInput(model, rng, next)
			x := &genOp{op: op, lp: inv + int64(rng.IntN(int(dur))), applied: true}
			switch r := rng.IntN(20); {
			case r == 0 && op.OpType != "read":
				x.op.Error, x.applied = "rejected", false
			case r == 1:
				x.op.TimeoutMarker, x.op.CompleteTS, x.op.Error = true, nil, "timeout"
				x.applied = rng.IntN(2) == 0
			}
			g = append(g, x)
			t = comp + 1 // a client has one op in flight at a time
		}
	}
	slices.SortFunc(g, func(a, b *genOp) int { return int(a.lp - b.lp) })
	state := map[string]*seqObj{}
	for _, x := range g {
		if !x.applied {
			continue
		}
		if state[x.op.Key] == nil {
			state[x.op.Key] = &seqObj{reg: "null"}
		}
		out := state[x.op.Key].apply(model, &x.op)
		if x.op.CompleteTS != nil {
			x.op.Output = out
		}
	}
	ops := make([]history.Op, len(g))
	for i, x := range g {
		ops[i] = x.op
		ops[i].Line = i + 1
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return int(a.InvokeTS - b.InvokeTS) })
	return ops
}

func genInput(model string, rng *rand.Rand, n int) (string, json.RawMessage) {
	read := rng.IntN(3) == 0
	if model == "queue" {
		// Keep the queue short: every order of concurrent enqueues still
		// queued is a distinct state, and a long backlog makes the search
		// factorial (a property of FIFO checking, not of this generator).
		read = rng.IntN(2) == 0
	}
	v := json.RawMessage(fmt.Sprint(n)) // unique per op, so mutations are unambiguous
	switch model {
	case "register", "kv":
		switch {
		case read:
			return "read", nil
		case rng.IntN(4) == 0:
			return "cas", json.RawMessage(fmt.Sprintf("[%d,%d]", n-1-rng.IntN(3), n))
		}
		return "write", v
	case "counter":
		if read {
			return "read", nil
		}
		return "inc", json.RawMessage(fmt.Sprint(1 + rng.IntN(5)))
	case "log":
		if read {
			return "read", nil
		}
		return "append", v
	case "set":
		if read {
			return "read", nil
		}
		return "add", v
	default: // queue
		if read {
			return "dequeue", nil
		}
		return "enqueue", v
	}
}

type seqObj struct {
	reg  string
	n    int64
	list []string
}

func (s *seqObj) apply(model string, op *history.Op) json.RawMessage {
	switch op.OpType {
	case "write":
		s.reg = string(op.Input)
	case "cas":
		var p []json.RawMessage
		_ = json.Unmarshal(op.Input, &p)
		if s.reg == string(p[0]) {
			s.reg = string(p[1])
			return json.RawMessage("true")
		}
		return json.RawMessage("false")
	case "inc":
		var d int64
		_ = json.Unmarshal(op.Input, &d)
		s.n += d
		return json.RawMessage(fmt.Sprint(s.n))
	case "append":
		// Logs hand back the offset (docs/history-and-checkers.md §3): it pins the order of
		// concurrent appends, without which the search is factorial.
		s.list = append(s.list, string(op.Input))
		return json.RawMessage(fmt.Sprint(len(s.list) - 1))
	case "add", "enqueue":
		s.list = append(s.list, string(op.Input))
	case "dequeue":
		if len(s.list) == 0 {
			return json.RawMessage("null")
		}
		head := s.list[0]
		s.list = s.list[1:]
		return json.RawMessage(head)
	case "read":
		switch model {
		case "register", "kv":
			return json.RawMessage(s.reg)
		case "counter":
			return json.RawMessage(fmt.Sprint(s.n))
		default:
			return json.RawMessage("[" + strings.Join(s.list, ",") + "]")
		}
	}
	return nil
}

// mutate changes one completed read-like op so that no linearization can
// exist (the doc of each case says why), and returns false when the history has none to change. The new
// output is one the object could never have produced at that point: a
// value nobody wrote, or (register) a value overwritten before the read
// began, or (log/set) a read missing an element whose append completed
// before the read began, or (counter) less than the increments completed
// before it began.
func mutate(model string, ops []history.Op, rng *rand.Rand) bool {
	var reads []int
	for i, o := range ops {
		if (o.OpType == "read" || o.OpType == "dequeue") && o.CompleteTS != nil && o.Error == "" {
			reads = append(reads, i)
		}
	}
	if len(reads) == 0 {
		return false
	}
	r := &ops[reads[rng.IntN(len(reads))]]
	before := func(o *history.Op) bool {
		return o.Key == r.Key && o.CompleteTS != nil && o.Error == "" && !o.TimeoutMarker && *o.CompleteTS < r.InvokeTS
	}
	switch model {
	case "register", "kv":
		// Stale: w1 finished before w2 began, w2 finished before r began.
		for i := range ops {
			w1 := &ops[i]
			v1, isW := written(w1)
			if !isW || !before(w1) {
				continue
			}
			for j := range ops {
				w2 := &ops[j]
				if _, isW2 := written(w2); isW2 && before(w2) && w2.InvokeTS > *w1.CompleteTS && rng.IntN(2) == 0 {
					r.Output = json.RawMessage(v1)
					return true
				}
			}
		}
		r.Output = json.RawMessage("-7")
	case "counter":
		var sum int64
		for i := range ops {
			if o := &ops[i]; o.OpType == "inc" && before(o) {
				var d int64
				_ = json.Unmarshal(o.Input, &d)
				sum += d
			}
		}
		if sum > 0 && rng.IntN(2) == 0 {
			r.Output = json.RawMessage(fmt.Sprint(sum - 1))
		} else {
			r.Output = json.RawMessage("-1")
		}
	case "log", "set":
		var elems []string
		_ = json.Unmarshal(r.Output, &elems)
		var raw []json.RawMessage
		_ = json.Unmarshal(r.Output, &raw)
		for i := range ops {
			if o := &ops[i]; (o.OpType == "append" || o.OpType == "add") && before(o) && rng.IntN(2) == 0 {
				var keep []string
				for _, e := range raw {
					if string(e) != string(o.Input) {
						keep = append(keep, string(e))
					}
				}
				r.Output = json.RawMessage("[" + strings.Join(keep, ",") + "]")
				return true
			}
		}
		raw = append(raw, json.RawMessage("-5"))
		b, _ := json.Marshal(raw)
		r.Output = b
	default:
		// Deliver another dequeue's value a second time (values are
		// unique, each enqueued once), or a value nobody enqueued.
		for _, i := range reads {
			if o := &ops[i]; o != r && o.Output != nil && string(o.Output) != "null" && string(o.Output) != string(r.Output) && rng.IntN(2) == 0 {
				r.Output = o.Output
				return true
			}
		}
		r.Output = json.RawMessage("-3")
	}
	return true
}

func TestGeneratedHistories(t *testing.T) {
	const seeds = 250
	for _, model := range []string{"register", "kv", "counter", "log", "set", "queue"} {
		t.Run(model, func(t *testing.T) {
			caught := 0
			for seed := uint64(0); seed < seeds; seed++ {
				ops := simulate(model, seed)
				if errs := history.Validate("gen", ops, nil); len(errs) > 0 {
					t.Fatalf("seed %d: generator made an invalid history: %v", seed, errs[0])
				}
				res, err := Run(context.Background(), Spec{Model: model, Checker: Linearizability, Timeout: time.Minute}, ops, nil)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if res.Outcome != Valid {
					t.Fatalf("seed %d: unmutated history judged %s: %+v", seed, res.Outcome, res.Anomalies)
				}
				if !mutate(model, ops, rand.New(rand.NewPCG(seed, 7))) {
					continue
				}
				res, err = Run(context.Background(), Spec{Model: model, Checker: Linearizability, Timeout: time.Minute}, ops, nil)
				if err != nil {
					t.Fatalf("seed %d mutated: %v", seed, err)
				}
				// A read of a value nobody wrote before any write was acked
				// is indistinguishable from left-over state: it must be
				// flagged as a dirty initial state, never judged valid.
				if res.Outcome != Invalid && (res.Outcome != Unknown || len(res.Dirty) == 0) {
					t.Fatalf("seed %d: mutation not caught (%s)", seed, res.Outcome)
				}
				caught++
			}
			if caught < seeds*9/10 {
				t.Errorf("only %d of %d seeds had a read to mutate", caught, seeds)
			}
		})
	}
}

// TestSequentialFastPath pins when the O(n) replay decides and when it
// must leave the partition to porcupine.
func TestSequentialFastPath(t *testing.T) {
	tests := []struct {
		name    string
		rows    []string
		decided bool
		want    string
	}{
		{"sequential ok", []string{"p 0 10 write _ 1 _", "q 20 30 read _ _ 1"}, true, "Ok"},
		{"sequential stale", []string{"p 0 10 write _ 1 _", "p 20 30 write _ 2 _", "q 40 50 read _ _ 1"}, true, "Illegal"},
		{"out of order rows", []string{"q 20 30 read _ _ 1", "p 0 10 write _ 1 _"}, true, "Ok"},
		{"overlap", []string{"p 0 30 write _ 1 _", "q 20 40 read _ _ 1"}, false, ""},
		{"touching is overlap", []string{"p 0 20 write _ 1 _", "q 20 40 read _ _ 1"}, false, ""},
		{"timeout last", []string{"p 0 10 write _ 1 _", "q 20 - cas _ [1,2] _"}, true, "Ok"},
		{"timeout not last", []string{"q 0 - cas _ [1,2] _", "p 20 30 write _ 1 _"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, err := buildPartitions(linModels["register"], h(t, tt.rows...), "h.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			r, ok := replaySequential(linModels["register"], parts[0].ops)
			if ok != tt.decided || string(r) != tt.want {
				t.Errorf("replay = %q, %v; want %q, %v", r, ok, tt.want, tt.decided)
			}
		})
	}
}
