package checker

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/plan"
)

// maxAnomalies bounds the anomalies listed by the non-porcupine checkers;
// the count beyond it is summarised in one more anomaly.
const maxAnomalies = 100

func ok(o *history.Op) bool      { return !o.TimeoutMarker && o.CompleteTS != nil && o.Error == "" }
func unknown(o *history.Op) bool { return o.TimeoutMarker || o.CompleteTS == nil }

// failed is an op that definitely did not take effect: an error answer, as
// opposed to a timeout, which may have.
func failed(o *history.Op) bool { return o.Error != "" && !unknown(o) }

// end is an op's completion, +inf when unknown.
func end(o *history.Op) int64 {
	if unknown(o) {
		return math.MaxInt64
	}
	return *o.CompleteTS
}

// written returns the value a write-like op writes and whether it is one:
// write/put/append/enqueue/add/insert/credit/debit/join carry it in input; a
// cas in input[1] (only when it did not report false).
func written(o *history.Op) (string, bool) {
	switch o.OpType {
	case "write", "put", "append", "enqueue", "add", "insert", "credit", "debit", "join":
		return canon(o.Input), true
	case "cas":
		if canon(o.Output) == "false" {
			return "", false
		}
		var pair []json.RawMessage
		if json.Unmarshal(o.Input, &pair) != nil || len(pair) != 2 {
			return "", false
		}
		return canon(pair[1]), true
	}
	return "", false
}

type anomalies struct {
	list    []Anomaly
	dropped int
}

func (a *anomalies) add(x Anomaly) {
	if len(a.list) < maxAnomalies {
		a.list = append(a.list, x)
		return
	}
	a.dropped++
}

func (a *anomalies) done() []Anomaly {
	if a.dropped > 0 {
		a.list = append(a.list, Anomaly{Kind: "more", Message: fmt.Sprintf("%d more anomalies not listed", a.dropped)})
	}
	return a.list
}

func elements(raw json.RawMessage) ([]string, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) != nil {
		return nil, false
	}
	s := make([]string, len(arr))
	for i, e := range arr {
		s[i] = canon(e)
	}
	return s, true
}

func runFinal(id string, spec Spec, ops []history.Op, f *FinalState) (Result, error) {
	switch id {
	case NoLostAck:
		return checkNoLostAck(ops, f), nil
	case ExactlyOnce:
		return checkExactlyOnce(ops, f, spec.Params)
	case Invariant:
		return checkInvariant(ops, f, spec.Params)
	default:
		return checkReconciliation(f), nil
	}
}

// checkNoLostAck (spec §5.10): every acked write is in F. For a key whose
// final value is a JSON array (log, set, delivered queue items) membership
// is required; for a scalar the final value must be one a write could have
// left last: the last acked write or one not strictly before it.
func checkNoLostAck(ops []history.Op, f *FinalState) Result {
	res := Result{OpsConsumed: len(ops),
		Scope: "unknown (timed-out) writes are neither acked nor rejected; overwritten register values are judged only by the last possible writer; deletes are not modelled"}
	var an anomalies
	type w struct {
		op  *history.Op
		val string
	}
	byKey := map[string][]w{}
	var keys []string
	for i := range ops {
		o := &ops[i]
		v, isW := written(o)
		if !isW || failed(o) {
			continue
		}
		if _, seen := byKey[o.Key]; !seen {
			keys = append(keys, o.Key)
		}
		byKey[o.Key] = append(byKey[o.Key], w{o, v})
	}
	for _, k := range keys {
		ws := byKey[k]
		final, present := f.Keys[k]
		if elems, isArr := elements(final); present && isArr {
			in := map[string]bool{}
			for _, e := range elems {
				in[e] = true
			}
			for _, x := range ws {
				if ok(x.op) && !in[x.val] {
					an.add(Anomaly{Kind: "lost-ack", Key: k, OpIDs: []string{x.op.OpID}, FaultEpoch: x.op.FaultEpoch,
						WindowStart: x.op.InvokeTS, WindowEnd: end(x.op),
						Message: fmt.Sprintf("key %q: acked %s of %s (op %s, line %d) missing from the final state", k, x.op.OpType, x.val, x.op.OpID, x.op.Line)})
				}
			}
			continue
		}
		var acked []w
		for _, x := range ws {
			if ok(x.op) {
				acked = append(acked, x)
			}
		}
		if len(acked) == 0 {
			continue
		}
		if !present {
			last := acked[len(acked)-1]
			an.add(Anomaly{Kind: "lost-ack", Key: k, OpIDs: []string{last.op.OpID},
				Message: fmt.Sprintf("key %q: %d acked writes but the key is absent from the final state", k, len(acked))})
			continue
		}
		got := canon(final)
		var candidates []string
		match := false
		for _, x := range ws {
			later := false // some acked write started after x ended
			for _, y := range acked {
				if y.op.InvokeTS > end(x.op) {
					later = true
					break
				}
			}
			if !later {
				candidates = append(candidates, x.val)
				match = match || x.val == got
			}
		}
		if !match {
			var ids []string
			for _, x := range acked {
				ids = append(ids, x.op.OpID)
			}
			an.add(Anomaly{Kind: "lost-ack", Key: k, OpIDs: ids[max(0, len(ids)-3):],
				Message: fmt.Sprintf("key %q: final value %s is none of the values a last write could have left (%s)", k, got, strings.Join(candidates, ", "))})
		}
	}
	res.Anomalies = an.done()
	return res
}

func idemOf(raw json.RawMessage, field string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		if v, ok := m[field]; ok {
			return canon(v), true
		}
		return "", false
	}
	if len(raw) == 0 {
		return "", false
	}
	return canon(raw), true
}

// checkExactlyOnce (spec §5.11) groups write-like ops by the business
// idempotency key in input (param idem_field, default "idempotency_key";
// a scalar input is its own key) and counts committed effects in F: the
// elements of F.keys[effects_key] (param; default every array in F).
func checkExactlyOnce(ops []history.Op, f *FinalState, params map[string]string) (Result, error) {
	field := params["idem_field"]
	if field == "" {
		field = "idempotency_key"
	}
	res := Result{OpsConsumed: len(ops),
		Scope: "counts effects visible in the final state only; effects consumed before the dump are invisible; keyed on input." + field + ", never op_id"}
	type group struct {
		ops   []*history.Op
		acked bool
	}
	groups := map[string]*group{}
	var order []string
	for i := range ops {
		o := &ops[i]
		if _, isW := written(o); !isW {
			continue
		}
		id, found := idemOf(o.Input, field)
		if !found {
			continue
		}
		g := groups[id]
		if g == nil {
			g = &group{}
			groups[id] = g
			order = append(order, id)
		}
		g.ops = append(g.ops, o)
		g.acked = g.acked || ok(o)
	}
	if len(groups) == 0 {
		return res, fmt.Errorf("exactly-once: no write carries idempotency key %q in input (set param idem_field)", field)
	}
	var lists []string
	if k := params["effects_key"]; k != "" {
		lists = []string{k}
	} else {
		lists = slices.Sorted(maps.Keys(f.Keys))
	}
	effects := map[string]int{}
	for _, k := range lists {
		var arr []json.RawMessage
		if json.Unmarshal(f.Keys[k], &arr) != nil {
			if params["effects_key"] != "" {
				return res, fmt.Errorf("exactly-once: final state key %q is not a JSON array of effects", k)
			}
			continue
		}
		for _, e := range arr {
			if id, found := idemOf(e, field); found {
				effects[id]++
			}
		}
	}
	var an anomalies
	for _, id := range order {
		g := groups[id]
		ids := make([]string, len(g.ops))
		for i, o := range g.ops {
			ids[i] = o.OpID
		}
		switch n := effects[id]; {
		case n > 1:
			an.add(Anomaly{Kind: "duplicate-effect", Key: id, OpIDs: ids,
				Message: fmt.Sprintf("idempotency key %s: %d effects in the final state from %d requests", id, n, len(g.ops))})
		case n == 0 && g.acked:
			an.add(Anomaly{Kind: "lost-effect", Key: id, OpIDs: ids,
				Message: fmt.Sprintf("idempotency key %s: acknowledged but no effect in the final state", id)})
		}
	}
	res.Anomalies = an.done()
	return res, nil
}

// checkInvariant (spec §5.12) evaluates one predicate over F (param
// predicate): sum-zero (every number under F.keys, or under key, sums to
// 0), each-member-once (the array F.keys[key] lists every member joined and
// not left exactly once, no duplicates), count-equals (F.keys[key] has
// count elements, or equals count).
func checkInvariant(ops []history.Op, f *FinalState, params map[string]string) (Result, error) {
	res := Result{OpsConsumed: len(ops), Scope: "final state only: transient violations during the run are not seen; quiescence is assumed"}
	pred, key := params["predicate"], params["key"]
	var an anomalies
	switch pred {
	case "sum-zero":
		var sum float64
		for k, v := range f.Keys {
			if key != "" && k != key {
				continue
			}
			sum += sumNumbers(v)
		}
		if math.Abs(sum) > 1e-9 {
			an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("sum-zero: final values sum to %g", sum)})
		}
	case "each-member-once":
		if key == "" {
			return res, fmt.Errorf("invariant each-member-once: param key (the member list) is required")
		}
		elems, isArr := elements(f.Keys[key])
		if !isArr {
			return res, fmt.Errorf("invariant each-member-once: final state key %q is not a JSON array", key)
		}
		count := map[string]int{}
		for _, e := range elems {
			count[e]++
		}
		for e, n := range count {
			if n > 1 {
				an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("member %s listed %d times", e, n)})
			}
		}
		member := map[string]bool{}
		var joined []string
		for i := range ops {
			o := &ops[i]
			if !ok(o) {
				continue
			}
			switch o.OpType {
			case "join":
				if !member[canon(o.Input)] {
					joined = append(joined, canon(o.Input))
				}
				member[canon(o.Input)] = true
			case "leave":
				member[canon(o.Input)] = false
			}
		}
		for _, m := range joined {
			if member[m] && count[m] == 0 {
				an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("member %s joined (acked) but is not listed", m)})
			}
		}
	case "count-equals":
		want, err := strconv.ParseFloat(params["count"], 64)
		if err != nil || key == "" {
			return res, fmt.Errorf("invariant count-equals: params key and numeric count are required")
		}
		var got float64
		if elems, isArr := elements(f.Keys[key]); isArr {
			got = float64(len(elems))
		} else if got, err = strconv.ParseFloat(canon(f.Keys[key]), 64); err != nil {
			return res, fmt.Errorf("invariant count-equals: final state key %q is neither an array nor a number", key)
		}
		if got != want {
			an.add(Anomaly{Kind: "invariant", Key: key, Message: fmt.Sprintf("count-equals: %q has %g, want %g", key, got, want)})
		}
	default:
		return res, fmt.Errorf("invariant: unknown predicate %q (want sum-zero, each-member-once, count-equals)", pred)
	}
	res.Anomalies = an.done()
	return res, nil
}

func sumNumbers(raw json.RawMessage) float64 {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	var walk func(any) float64
	walk = func(v any) float64 {
		switch x := v.(type) {
		case float64:
			return x
		case []any:
			s := 0.0
			for _, e := range x {
				s += walk(e)
			}
			return s
		case map[string]any:
			s := 0.0
			for _, e := range x {
				s += walk(e)
			}
			return s
		}
		return 0
	}
	return walk(v)
}

// checkReconciliation (spec §5.13) diffs every replica's dump against the
// first (by name); all must be equal.
func checkReconciliation(f *FinalState) Result {
	res := Result{Scope: "compares dumps taken at quiescence; divergence that converged before the dump is not seen"}
	nodes := slices.Sorted(maps.Keys(f.Replicas))
	if len(nodes) < 2 {
		res.Outcome = Unknown
		res.Reason = fmt.Sprintf("reconciliation needs at least 2 replica dumps, have %d", len(nodes))
		return res
	}
	keys := map[string]bool{}
	for _, n := range nodes {
		for k := range f.Replicas[n] {
			keys[k] = true
		}
	}
	sorted := slices.Sorted(maps.Keys(keys))
	res.OpsConsumed = len(sorted) * len(nodes)
	var an anomalies
	ref := nodes[0]
	for _, k := range sorted {
		rv, rok := f.Replicas[ref][k]
		var diff []string
		for _, n := range nodes[1:] {
			v, vok := f.Replicas[n][k]
			if vok != rok || canon(v) != canon(rv) {
				diff = append(diff, n)
			}
		}
		if len(diff) > 0 {
			an.add(Anomaly{Kind: "replica-divergence", Key: k,
				Message: fmt.Sprintf("key %q: %s differs from %s (%s)", k, strings.Join(diff, ", "), ref, show(rv, rok))})
		}
	}
	res.Anomalies = an.done()
	return res
}

func show(v json.RawMessage, present bool) string {
	if !present {
		return "absent"
	}
	s := canon(v)
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// checkSession (spec §5.7, read-your-writes): an ok read in session s on
// key k must return the value of s's last write to k acknowledged before
// the read began, or a value some write not strictly before that one
// wrote. Values identify writes, so they should be unique per write.
func checkSession(ops []history.Op) (Result, error) {
	res := Result{OpsConsumed: len(ops),
		Scope: "read-your-writes per process_id by written value (values must be unique per write); no cross-session guarantee is checked; reconnects must be new process_ids"}
	writes := map[string][]*history.Op{}
	for i := range ops {
		o := &ops[i]
		if _, isW := written(o); isW && !failed(o) {
			writes[o.Key] = append(writes[o.Key], o)
		}
	}
	var an anomalies
	for i := range ops {
		r := &ops[i]
		if (r.OpType != "read" && r.OpType != "get") || !ok(r) {
			continue
		}
		var last *history.Op
		for _, w := range writes[r.Key] {
			if w.ProcessID == r.ProcessID && ok(w) && *w.CompleteTS < r.InvokeTS && (last == nil || *w.CompleteTS > *last.CompleteTS) {
				last = w
			}
		}
		if last == nil {
			continue
		}
		got := canon(r.Output)
		lv, _ := written(last)
		good := got == lv
		for _, w := range writes[r.Key] {
			if good {
				break
			}
			if v, _ := written(w); v == got && end(w) > last.InvokeTS && w.InvokeTS < *r.CompleteTS {
				good = true
			}
		}
		if !good {
			an.add(Anomaly{Kind: "read-your-writes", Key: r.Key, OpIDs: []string{r.OpID, last.OpID}, FaultEpoch: r.FaultEpoch,
				WindowStart: last.InvokeTS, WindowEnd: *r.CompleteTS,
				Message: fmt.Sprintf("session %s key %q: read %s (op %s, line %d) after its own acked write of %s (op %s)", r.ProcessID, r.Key, got, r.OpID, r.Line, lv, last.OpID)})
		}
	}
	res.Anomalies = an.done()
	return res, nil
}

// checkMonotonic (spec §5.8): per (process, key), ok reads in invoke order
// never go back in version. The version must be the SUT's own, so a plain
// read value counts as a version only for the counter model or with param
// version_from=value (sequence ids); an object output's field version_field
// (param, default "version") always does. Otherwise the only order known
// without the SUT is real time between the writes: a read that returns a
// value whose write completed before the previous read's write was invoked
// went back. Overlapping writes are left unjudged (their SUT order is
// unknown), so a history with concurrent writers is never flagged on the
// writers' value order.
func checkMonotonic(model string, ops []history.Op, params map[string]string) (Result, error) {
	field := params["version_field"]
	if field == "" {
		field = "version"
	}
	valueIsVersion := model == "counter" || params["version_from"] == "value"
	res := Result{OpsConsumed: len(ops),
		Scope: "versions come from read outputs (." + field + ", or the value itself for counters / version_from=value); without them, from real-time order between the writes, so reads of concurrently written values are not judged"}
	writer := map[string]map[string]*history.Op{}
	for i := range ops {
		w := &ops[i]
		v, isW := written(w)
		if !isW || w.Error != "" {
			continue
		}
		if writer[w.Key] == nil {
			writer[w.Key] = map[string]*history.Op{}
		}
		if _, seen := writer[w.Key][v]; !seen {
			writer[w.Key][v] = w
		}
	}
	// sutVersion is the SUT's own version of a read, when it has one.
	sutVersion := func(o *history.Op) (float64, bool) {
		var m map[string]json.RawMessage
		if json.Unmarshal(o.Output, &m) == nil {
			if n, err := strconv.ParseFloat(canon(m[field]), 64); err == nil {
				return n, true
			}
		}
		if valueIsVersion {
			if n, err := strconv.ParseFloat(canon(o.Output), 64); err == nil {
				return n, true
			}
		}
		return 0, false
	}
	// wentBack reports whether r's value is definitely older than prev's:
	// by the SUT's versions when both have one, else by real time between
	// the writes that produced them (null is the initial value, older than
	// any write).
	wentBack := func(prev, r *history.Op) bool {
		if pv, ok1 := sutVersion(prev); ok1 {
			if rv, ok2 := sutVersion(r); ok2 {
				return rv < pv
			}
		}
		if r.Output == nil || canon(r.Output) == "null" {
			return prev.Output != nil && canon(prev.Output) != "null"
		}
		wp, wr := writer[prev.Key][canon(prev.Output)], writer[r.Key][canon(r.Output)]
		if wp == nil || wr == nil || wp == wr {
			return false
		}
		return end(wr) < wp.InvokeTS
	}
	type pk struct{ p, k string }
	reads := map[pk][]*history.Op{}
	var order []pk
	for i := range ops {
		o := &ops[i]
		if (o.OpType == "read" || o.OpType == "get") && ok(o) {
			key := pk{o.ProcessID, o.Key}
			if _, seen := reads[key]; !seen {
				order = append(order, key)
			}
			reads[key] = append(reads[key], o)
		}
	}
	var an anomalies
	for _, key := range order {
		rs := reads[key]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].InvokeTS < rs[j].InvokeTS })
		for i := 1; i < len(rs); i++ {
			prev, r := rs[i-1], rs[i]
			if wentBack(prev, r) {
				an.add(Anomaly{Kind: "non-monotonic-read", Key: key.k, OpIDs: []string{prev.OpID, r.OpID}, FaultEpoch: r.FaultEpoch,
					WindowStart: prev.InvokeTS, WindowEnd: *r.CompleteTS,
					Message: fmt.Sprintf("process %s key %q: read %s (op %s) after %s (op %s): version went back", key.p, key.k, canon(r.Output), r.OpID, canon(prev.Output), prev.OpID)})
			}
		}
	}
	res.Anomalies = an.done()
	return res, nil
}

// checkPrefix (spec §5.9): the canonical order G is the producer ops
// (enqueue/append, not failed) by invoke time; each consumer's observed
// sequence must follow G with no insertions, duplicates, reorderings or
// skips more than window (param, default 0) positions apart, and only
// between producer ops ordered in real time (one completed before the
// other was invoked): concurrent enqueues have no order the history can
// prove, so flagging them would blame the SUT for the checker's guess. mode (param):
// broadcast (every consumer sees everything: log reads) or competing
// (consumers share the stream: queue dequeues); default by model.
func checkPrefix(model string, ops []history.Op, params map[string]string) (Result, error) {
	w := 0
	if s := params["window"]; s != "" {
		var err error
		if w, err = strconv.Atoi(s); err != nil || w < 0 {
			return Result{}, fmt.Errorf("prefix: window must be a non-negative integer, got %q", s)
		}
	}
	mode := params["mode"]
	if mode == "" {
		mode = "broadcast"
		if model == "queue" {
			mode = "competing"
		}
	}
	if mode != "broadcast" && mode != "competing" {
		return Result{}, fmt.Errorf("prefix: mode must be broadcast or competing, got %q", mode)
	}
	res := Result{OpsConsumed: len(ops),
		Scope: fmt.Sprintf("canonical order is producer real-time order (%s consumers, window %d): a reorder or skip is flagged only between producer ops that did not overlap, since the SUT may order concurrent ones either way", mode, w)}
	var prod []*history.Op
	for i := range ops {
		o := &ops[i]
		if (o.OpType == "enqueue" || o.OpType == "append") && !failed(o) {
			prod = append(prod, o)
		}
	}
	sort.SliceStable(prod, func(i, j int) bool { return prod[i].InvokeTS < prod[j].InvokeTS })
	pos := map[string]int{}
	for i, o := range prod {
		pos[canon(o.Input)] = i
	}
	type seq struct {
		proc string
		vals []string
		ops  []*history.Op
	}
	var seqs []*seq
	byProc := map[string]*seq{}
	for i := range ops {
		o := &ops[i]
		if !ok(o) {
			continue
		}
		switch {
		case o.OpType == "dequeue" && o.Output != nil:
			s := byProc[o.ProcessID]
			if s == nil {
				s = &seq{proc: o.ProcessID}
				byProc[o.ProcessID] = s
				seqs = append(seqs, s)
			}
			s.vals = append(s.vals, canon(o.Output))
			s.ops = append(s.ops, o)
		case o.OpType == "read" && (model == "log" || mode == "broadcast"):
			vals, isArr := elements(o.Output)
			if !isArr && o.Output != nil {
				return res, fmt.Errorf("line %d: log read output must be a JSON array", o.Line)
			}
			opsFor := make([]*history.Op, len(vals))
			for i := range opsFor {
				opsFor[i] = o
			}
			seqs = append(seqs, &seq{proc: o.ProcessID, vals: vals, ops: opsFor})
		}
	}
	var an anomalies
	consumed := map[string]bool{}
	maxPos := -1
	for _, s := range seqs {
		seen := map[string]bool{}
		hi := -1
		for i, v := range s.vals {
			o := s.ops[i]
			p, inG := pos[v]
			switch {
			case !inG:
				an.add(Anomaly{Kind: "insertion", Key: o.Key, OpIDs: []string{o.OpID},
					Message: fmt.Sprintf("consumer %s saw %s (op %s, line %d), which no producer sent", s.proc, v, o.OpID, o.Line)})
				continue
			case seen[v] || (mode == "competing" && consumed[v]):
				an.add(Anomaly{Kind: "duplicate", Key: o.Key, OpIDs: []string{o.OpID},
					Message: fmt.Sprintf("consumer %s received %s again (op %s, line %d)", s.proc, v, o.OpID, o.Line)})
			case p < hi-w && end(prod[p]) < prod[hi].InvokeTS:
				an.add(Anomaly{Kind: "reorder", Key: o.Key, OpIDs: []string{o.OpID, prod[hi].OpID},
					Message: fmt.Sprintf("consumer %s saw %s (producer position %d) after position %d (window %d)", s.proc, v, p, hi, w)})
			}
			seen[v], consumed[v] = true, true
			hi = max(hi, p)
		}
		if mode == "broadcast" {
			for q := 0; q < hi-w; q++ {
				if ok(prod[q]) && !seen[canon(prod[q].Input)] && end(prod[q]) < prod[hi].InvokeTS {
					an.add(Anomaly{Kind: "skip", Key: prod[q].Key, OpIDs: []string{prod[q].OpID},
						Message: fmt.Sprintf("consumer %s skipped %s (producer position %d) but saw position %d", s.proc, canon(prod[q].Input), q, hi)})
				}
			}
		}
		maxPos = max(maxPos, hi)
	}
	if mode == "competing" {
		for q := 0; q < maxPos-w; q++ {
			if ok(prod[q]) && !consumed[canon(prod[q].Input)] && end(prod[q]) < prod[maxPos].InvokeTS {
				an.add(Anomaly{Kind: "skip", Key: prod[q].Key, OpIDs: []string{prod[q].OpID},
					Message: fmt.Sprintf("%s (producer position %d) was never consumed though position %d was", canon(prod[q].Input), q, maxPos)})
			}
		}
	}
	res.Anomalies = an.done()
	return res, nil
}

func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// checkSLO (spec §5.4): thresholds come from the plan (slo, parsed by
// plan.ParseSLO) or, for a one-off check, from params p50, p95, p99
// (durations), error_rate (fraction), throughput (ops/s floor). Every window
// (param window, a duration; default the whole history) must meet every
// threshold. Latency counts ok ops (of slo.OpType when set); timeouts and
// errors count as errors.
func checkSLO(ops []history.Op, params map[string]string, slo *plan.SLO) (Result, error) {
	res := Result{OpsConsumed: len(ops), Scope: "latencies as the client saw them; windows with no ops are skipped; thresholds must be declared before the run"}
	if slo == nil {
		var err error
		if slo, err = sloFromParams(params); err != nil {
			return res, err
		}
	}
	type latBound struct {
		name  string
		p     float64
		th    plan.Threshold
		limit time.Duration
	}
	var lat []latBound
	for _, l := range []struct {
		name string
		p    float64
		th   plan.Threshold
	}{{"p50", 50, slo.P50}, {"p95", 95, slo.P95}, {"p99", 99, slo.P99}} {
		if !l.th.Known {
			continue
		}
		d, isTime := l.th.Duration()
		if !isTime {
			return res, fmt.Errorf("slo: %s: bound %q is not a duration", l.name, l.th)
		}
		lat = append(lat, latBound{l.name, l.p, l.th, d})
	}
	if len(lat) == 0 && !slo.ErrorRate.Known && !slo.Throughput.Known {
		return res, fmt.Errorf("slo: no threshold declared (params p50, p95, p99, error_rate, throughput)")
	}
	if slo.OpType != "" {
		res.Scope += "; latency bounds apply to " + slo.OpType + " ops only"
	}
	for _, th := range slo.Clauses() {
		res.Thresholds = append(res.Thresholds, th.String())
	}
	if len(ops) == 0 {
		res.Outcome, res.Reason = Unknown, "no ops: nothing measured"
		return res, nil
	}
	lo, hi := ops[0].InvokeTS, ops[0].InvokeTS
	for i := range ops {
		lo, hi = min(lo, ops[i].InvokeTS), max(hi, ops[i].InvokeTS)
	}
	win := hi - lo + 1
	if s := params["window"]; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return res, fmt.Errorf("slo: window: want a positive duration, got %q", s)
		}
		win = int64(d)
	}
	type bucket struct {
		lat       []int64
		n, errors int
	}
	buckets := map[int64]*bucket{}
	for i := range ops {
		o := &ops[i]
		b := (o.InvokeTS - lo) / win
		if buckets[b] == nil {
			buckets[b] = &bucket{}
		}
		bk := buckets[b]
		bk.n++
		switch {
		case !ok(o):
			bk.errors++
		case slo.OpType == "" || o.OpType == slo.OpType:
			bk.lat = append(bk.lat, *o.CompleteTS-o.InvokeTS)
		}
	}
	var an anomalies
	for _, b := range slices.Sorted(maps.Keys(buckets)) {
		bk := buckets[b]
		slices.Sort(bk.lat)
		ws, we := lo+b*win, lo+(b+1)*win
		for _, l := range lat {
			if len(bk.lat) == 0 {
				continue
			}
			if got := time.Duration(percentile(bk.lat, l.p)); !(plan.Threshold{Op: l.th.Op, Value: float64(l.limit), Known: true}).Holds(float64(got)) {
				an.add(Anomaly{Kind: "slo", WindowStart: ws, WindowEnd: we, Message: fmt.Sprintf("%s %v breaks threshold %s in window %d", l.name, got, l.th, b)})
			}
		}
		if rate := float64(bk.errors) / float64(bk.n); !slo.ErrorRate.Holds(rate) {
			an.add(Anomaly{Kind: "slo", WindowStart: ws, WindowEnd: we, Message: fmt.Sprintf("error rate %.4f breaks threshold %s in window %d", rate, slo.ErrorRate, b)})
		}
		span := min(we, hi+1) - ws
		if got := float64(bk.n-bk.errors) / (float64(span) / 1e9); !slo.Throughput.Holds(got) {
			an.add(Anomaly{Kind: "slo", WindowStart: ws, WindowEnd: we, Message: fmt.Sprintf("throughput %.1f ops/s breaks threshold %s in window %d", got, slo.Throughput, b)})
		}
	}
	res.Anomalies = an.done()
	return res, nil
}

// sloFromParams reads dstgen check's --param thresholds into the plan's
// SLO shape, so both paths are judged by one code path.
func sloFromParams(params map[string]string) (*plan.SLO, error) {
	slo := &plan.SLO{}
	for k, dst := range map[string]*plan.Threshold{"p50": &slo.P50, "p95": &slo.P95, "p99": &slo.P99} {
		if s := params[k]; s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("slo: %s: want a non-negative duration, got %q", k, s)
			}
			*dst = plan.Threshold{Metric: k, Op: "<=", Value: float64(d) / 1e6, Unit: "ms", Known: true}
		}
	}
	for k, op := range map[string]string{"error_rate": "<=", "throughput": ">="} {
		s := params[k]
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0) { // NaN or negative would silently disable the check
			return nil, fmt.Errorf("slo: %s: want a non-negative number, got %q", k, s)
		}
		th := plan.Threshold{Metric: k, Op: op, Value: v, Known: true}
		if k == "throughput" {
			th.Unit = "ops/s"
			slo.Throughput = th
		} else {
			slo.ErrorRate = th
		}
	}
	return slo, nil
}

// RepeatSpread is (max − min) / mean of one group's per-run p99s (spec
// §5.14); it needs repeated runs, so the analyzer computes it across
// sessions.
func RepeatSpread(p99s []float64) float64 {
	if len(p99s) == 0 {
		return 0
	}
	lo, hi, sum := p99s[0], p99s[0], 0.0
	for _, v := range p99s {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	if sum == 0 {
		return 0
	}
	return (hi - lo) / (sum / float64(len(p99s)))
}

func groupOf(o *history.Op, dim string) string {
	switch dim {
	case "process_id", "process", "client":
		return o.ProcessID
	case "key", "shard", "partition":
		return o.Key
	case "node_seen", "node", "region":
		return o.NodeSeen
	case "fault_epoch":
		return o.FaultEpoch
	case "op_type", "workload-class":
		return o.OpType
	}
	if f, found := strings.CutPrefix(dim, "input."); found {
		id, _ := idemOf(o.Input, f)
		return id
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(o.Input, &m) == nil {
		// A string group ("tenant":"t2") is named without its JSON quotes.
		var s string
		if json.Unmarshal(m[dim], &s) == nil {
			return s
		}
		return canon(m[dim])
	}
	return ""
}

// checkFairness (spec §5.14) over one history, with the formula the plan
// parsed (plan.ParseFairness: the one grammar). repeat_spread needs several
// runs and is left to the caller (RepeatSpread); the Scope says so when the
// formula asks for it, and names clauses it does not evaluate.
func checkFairness(ops []history.Op, f *plan.Fairness) (Result, error) {
	if f == nil {
		return Result{}, fmt.Errorf("fairness: no formula (the plan's §7.M.S Fairness formula, or --param formula=...)")
	}
	res := Result{OpsConsumed: len(ops), Scope: "per-group over one history; a group coarser than the starved one hides it"}
	if f.RepeatSpread.Known {
		res.Scope += "; repeat_spread needs repeated runs and is not evaluated here"
	}
	for _, o := range f.Other {
		res.Scope += "; clause " + o.String() + " is not a fairness metric dstgen computes"
	}
	for _, th := range []plan.Threshold{f.WorstP99Ratio, f.MinThroughput, f.ErrorRate} {
		if th.Known {
			res.Thresholds = append(res.Thresholds, fmt.Sprintf("group=%s: %s", f.Group, th))
		}
	}
	if len(ops) == 0 {
		res.Outcome, res.Reason = Unknown, "no ops"
		return res, nil
	}
	type g struct {
		lat     []int64
		n, errs int
	}
	groups := map[string]*g{}
	var all []int64
	lo, hi := ops[0].InvokeTS, ops[0].InvokeTS
	for i := range ops {
		o := &ops[i]
		name := groupOf(o, f.Group)
		x := groups[name]
		if x == nil {
			x = &g{}
			groups[name] = x
		}
		x.n++
		lo, hi = min(lo, o.InvokeTS), max(hi, o.InvokeTS)
		if ok(o) {
			d := *o.CompleteTS - o.InvokeTS
			x.lat = append(x.lat, d)
			all = append(all, d)
		} else {
			x.errs++
		}
	}
	slices.Sort(all)
	agg := percentile(all, 99)
	span := float64(hi-lo+1) / 1e9
	var an anomalies
	for _, n := range slices.Sorted(maps.Keys(groups)) {
		x := groups[n]
		slices.Sort(x.lat)
		if p := percentile(x.lat, 99); f.WorstP99Ratio.Known && agg > 0 && !f.WorstP99Ratio.Holds(float64(p)/float64(agg)) {
			an.add(Anomaly{Kind: "unfair", Key: n, Message: fmt.Sprintf("group %s=%s: p99 %v is %.2f× aggregate p99 %v (threshold %s)", f.Group, n, time.Duration(p), float64(p)/float64(agg), time.Duration(agg), f.WorstP99Ratio)})
		}
		if t := float64(x.n-x.errs) / span; !f.MinThroughput.Holds(t) {
			an.add(Anomaly{Kind: "unfair", Key: n, Message: fmt.Sprintf("group %s=%s: throughput %.1f ops/s (threshold %s)", f.Group, n, t, f.MinThroughput)})
		}
		if rate := float64(x.errs) / float64(x.n); !f.ErrorRate.Holds(rate) {
			an.add(Anomaly{Kind: "unfair", Key: n, Message: fmt.Sprintf("group %s=%s: %d of %d ops failed or timed out (threshold %s)", f.Group, n, x.errs, x.n, f.ErrorRate)})
		}
	}
	res.Anomalies = an.done()
	return res, nil
}
