package checker

// The isolation checker as it was before issue 21 made it stream
// (whole-history []history.Op in, one decode per transaction, string
// values): the reference the compact checker must agree with on every
// generated history (isolation_equiv_test.go). Kept verbatim but for the
// names.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

type refTxn struct {
	op     *history.Op
	status txnStatus
	micro  []history.MicroOp
}

type refWkey struct{ k, v string }

// refWriteRef is who wrote a value to a key: the transaction, and whether it
// was that transaction's last write to the key (else a read of it is an
// intermediate read).
type refWriteRef struct {
	t     int32
	final bool
}

// iso is one isolation check in progress.
type refIso struct {
	spec    Spec
	level   string
	b       *budget
	txns    []refTxn
	keys    []string
	keyIdx  map[string]int32
	kind    map[string]string // key → "append" or "w"
	writers map[refWkey]refWriteRef
	// installs lists, per register key, the transactions whose last
	// write to it is a version (aborted ones included; filtered on use).
	installs map[string][]int32
	edges    []edge
	an       anomalies
	allowed  map[string]int
	dirty    []DirtyRead
	micro    int
	cycles   []cycle
}

func refCheckIsolation(ctx context.Context, spec Spec, ops []history.Op) (Result, error) {
	level := Serializable
	if l, set := spec.Params["level"]; set {
		var ok bool
		if level, ok = IsolationLevel(l); !ok {
			return Result{}, fmt.Errorf("checker %s: level %q: want one of %s", Serializability, l, strings.Join(IsolationLevels(), ", "))
		}
	}
	s := &refIso{spec: spec, level: level, b: newBudget(ctx), keyIdx: map[string]int32{}, kind: map[string]string{},
		writers: map[refWkey]refWriteRef{}, installs: map[string][]int32{}, allowed: map[string]int{}}
	if err := s.load(ops); err != nil {
		return Result{}, err
	}
	res := Result{OpsConsumed: len(ops)}
	s.infer()
	if level == StrictSerializable {
		s.realtime()
	}
	if sessionBase(level) != "" {
		s.processOrder()
	}
	s.findCycles()
	res.Anomalies = s.an.done()
	res.Dirty = s.dirty
	var com, abo, ind int
	for i := range s.txns {
		switch s.txns[i].status {
		case committed:
			com++
		case aborted:
			abo++
		default:
			ind++
		}
	}
	res.Scope = fmt.Sprintf("level %s forbids %s; %d transactions (%d committed, %d aborted, %d unknown), %d micro-ops, %d keys, %d dependency edges; "+
		"item-level only: predicate reads and phantoms are not modelled, so G2 is judged as G2-item; version orders are only what reads reveal (list prefixes, the initial state, a read before a write in one transaction), so an anomaly no read exposes is not seen; %s",
		level, forbiddenList(level), len(s.txns), com, abo, ind, s.micro, len(s.keys), len(s.edges), orderScope(level))
	if len(s.allowed) > 0 {
		var names []string
		for c, n := range s.allowed {
			names = append(names, fmt.Sprintf("%s ×%d", c, n))
		}
		sort.Strings(names)
		res.Scope += "; found but allowed at " + level + ": " + strings.Join(names, ", ")
	}
	res = s.b.settle(res)
	if res.Outcome == "" && len(s.dirty) > 0 && len(res.Anomalies) == 0 {
		res.Outcome, res.Reason = Unknown, dirtyReason(s.dirty)
	}
	if len(res.Anomalies) > 0 && spec.HTMLPath != "" && len(s.cycles) > 0 {
		capped, err := s.writePicture(spec.HTMLPath, spec.HTMLMaxBytes)
		if err != nil {
			return Result{}, err
		}
		res.HTML, res.HTMLCapped = spec.HTMLPath, capped
	}
	return res, nil
}

// report files an anomaly of class, or counts it as allowed at the level.
func (s *refIso) report(class string, a Anomaly) {
	if !forbidden(s.level, class) {
		s.allowed[class]++
		return
	}
	a.Kind = class
	s.an.add(a)
}

func (s *refIso) key(k string) int32 {
	if i, ok := s.keyIdx[k]; ok {
		return i
	}
	i := int32(len(s.keys))
	s.keys = append(s.keys, k)
	s.keyIdx[k] = i
	return i
}

// load parses every transaction and indexes the writes. Bad input (an op
// that is not a txn, a malformed txn, a key used both as a list and as a
// register, a value written twice) is a *fileline.Error at the op's line.
func (s *refIso) load(ops []history.Op) error {
	s.txns = make([]refTxn, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		if op.OpType != history.OpTxn {
			return fileline.Errorf(s.spec.History, op.Line, "op %q: op_type %q: the txn model takes only op_type txn", op.OpID, op.OpType)
		}
		ms, err := history.ParseTxn(op)
		if err != nil {
			return fileline.Errorf(s.spec.History, op.Line, "op %q: %w", op.OpID, err)
		}
		st := committed
		switch {
		case unknown(op):
			st = indeterminate
		case op.Error != "":
			st = aborted
		}
		t := int32(len(s.txns))
		s.txns = append(s.txns, refTxn{op: op, status: st, micro: ms})
		s.micro += len(ms)
		for j, m := range ms {
			if m.F == history.MicroRead {
				continue
			}
			if k, seen := s.kind[m.Key]; !seen {
				s.kind[m.Key] = m.F
				s.key(m.Key)
			} else if k != m.F {
				return fileline.Errorf(s.spec.History, op.Line, "op %q: key %q is written with both w and append (a key is a register or a list, not both)", op.OpID, m.Key)
			}
			wk := refWkey{m.Key, canon(m.Value)}
			if prev, dup := s.writers[wk]; dup && prev.t != t {
				return fileline.Errorf(s.spec.History, op.Line, "op %q: %s of %s to key %q repeats op %q (line %d): written values must be unique per key",
					op.OpID, m.F, wk.v, m.Key, s.txns[prev.t].op.OpID, s.txns[prev.t].op.Line)
			}
			final := true
			for _, later := range ms[j+1:] {
				if later.F == m.F && later.Key == m.Key {
					final = false
					break
				}
			}
			s.writers[wk] = refWriteRef{t: t, final: final}
			if final && m.F == history.MicroWrite {
				s.installs[m.Key] = append(s.installs[m.Key], t)
			}
		}
	}
	return nil
}

func (s *refIso) opIDs(ts ...int32) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = s.txns[t].op.OpID
	}
	return ids
}

func (s *refIso) describe(t int32) string {
	op := s.txns[t].op
	return fmt.Sprintf("T%s (line %d)", op.OpID, op.Line)
}

func (s *refIso) addEdge(from, to int32, mask uint8, key int32) {
	if from == to || s.txns[from].status == aborted || s.txns[to].status == aborted {
		return
	}
	s.edges = append(s.edges, edge{from, to, mask, key})
}

// read is one external read: a transaction's read of a key before any
// write of its own to that key.
type refRead struct {
	t    int32
	at   int // micro-op index
	val  json.RawMessage
	list []string
}

// infer walks every transaction's micro-ops: internal consistency, aborted
// and intermediate reads, then per key the version order and the ww, wr
// and rw edges it implies.
func (s *refIso) infer() {
	reads := map[string][]refRead{}
	for t := range s.txns {
		if s.b.spent() {
			return
		}
		tx := &s.txns[t]
		if tx.status != committed {
			continue
		}
		s.internal(int32(t), reads)
	}
	keys := make([]string, 0, len(s.kind)+len(reads))
	for k := range reads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s.b.spent() {
			return
		}
		if s.kind[k] == history.MicroWrite || s.kind[k] == "" && !slices.ContainsFunc(reads[k], func(r refRead) bool { return r.list != nil }) {
			s.inferRegister(k, reads[k])
		} else {
			s.inferList(k, reads[k])
		}
	}
}

// internal checks that each read in a transaction agrees with what the
// transaction itself did before it, and collects its external reads.
func (s *refIso) internal(t int32, reads map[string][]refRead) {
	tx := &s.txns[t]
	type state struct {
		known    bool // a read fixed the whole value
		list     []string
		appended []string
		reg      string
		wrote    bool
	}
	// A few micro-ops per transaction: a slice searched linearly beats a
	// map allocated per transaction.
	type keyed struct {
		k string
		c *state
	}
	var st []keyed
	for j, m := range tx.micro {
		var c *state
		for _, e := range st {
			if e.k == m.Key {
				c = e.c
				break
			}
		}
		if c == nil {
			c = &state{}
			st = append(st, keyed{m.Key, c})
		}
		// A key nobody writes is a list when its reads are lists.
		isList := s.kind[m.Key] == history.MicroAppend || s.kind[m.Key] == "" && len(m.Value) > 0 && m.Value[0] == '['
		switch m.F {
		case history.MicroAppend:
			v := canon(m.Value)
			c.appended = append(c.appended, v)
			if c.known {
				c.list = append(c.list, v)
			}
		case history.MicroWrite:
			c.reg, c.wrote, c.known = canon(m.Value), true, true
		case history.MicroRead:
			var list []string
			if isList && m.Value != nil {
				if list = m.List; list == nil {
					list = []string{canon(m.Value)}
				}
			}
			bad := ""
			switch {
			case isList && c.known && !slices.Equal(list, c.list):
				bad = fmt.Sprintf("read %v after reading %v and appending since", list, c.list)
			case isList && !c.known && len(c.appended) > 0 && (len(list) < len(c.appended) || !slices.Equal(list[len(list)-len(c.appended):], c.appended)):
				bad = fmt.Sprintf("read %v, which does not end with its own appends %v", list, c.appended)
			case !isList && c.known && canon(m.Value) != c.reg:
				bad = fmt.Sprintf("read %s after %s %s", canon(m.Value), map[bool]string{true: "writing", false: "reading"}[c.wrote], c.reg)
			}
			if bad != "" {
				s.report(classInternal, Anomaly{Key: m.Key, OpIDs: s.opIDs(t), WindowStart: tx.op.InvokeTS, WindowEnd: end(tx.op),
					Message: fmt.Sprintf("%s key %q: micro-op %d %s", s.describe(t), m.Key, j, bad)})
			}
			if !c.known && len(c.appended) == 0 {
				reads[m.Key] = append(reads[m.Key], refRead{t: t, at: j, val: m.Value, list: list})
			}
			if isList {
				c.list, c.known = list, true
			} else {
				c.reg, c.known = canon(m.Value), true
			}
		}
	}
}

// checkSource reports a read of a value written by an aborted transaction
// (G1a), an intermediate value of another transaction (G1b), or by no one
// (a dirty initial state). It returns the writer when the read may be
// used for edges.
func (s *refIso) checkSource(r refRead, k, v string) (int32, bool) {
	tx := s.txns[r.t].op
	w, found := s.writers[refWkey{k, v}]
	if !found {
		if len(s.dirty) < maxAnomalies {
			s.dirty = append(s.dirty, DirtyRead{Key: k, Value: v, OpType: "read", OpID: tx.OpID, ProcessID: tx.ProcessID, Line: tx.Line})
		}
		return 0, false
	}
	if w.t == r.t {
		return w.t, true
	}
	wo := s.txns[w.t].op
	if s.txns[w.t].status == aborted {
		s.report(classG1a, Anomaly{Key: k, OpIDs: s.opIDs(r.t, w.t), WindowStart: min(tx.InvokeTS, wo.InvokeTS), WindowEnd: max(end(tx), end(wo)),
			Message: fmt.Sprintf("%s read %s of key %q, written by %s, which aborted (%s)", s.describe(r.t), v, k, s.describe(w.t), wo.Error)})
		return 0, false
	}
	if !w.final {
		s.report(classG1b, Anomaly{Key: k, OpIDs: s.opIDs(r.t, w.t), WindowStart: min(tx.InvokeTS, wo.InvokeTS), WindowEnd: max(end(tx), end(wo)),
			Message: fmt.Sprintf("%s read %s of key %q, an intermediate value of %s, which wrote the key again later", s.describe(r.t), v, k, s.describe(w.t))})
	}
	return w.t, true
}

// inferList infers a list-append key's version order from its reads: the
// longest read is the order, every other read must be a prefix of it.
func (s *refIso) inferList(k string, rs []refRead) {
	ki := s.key(k)
	var longest []string
	var lt int32 = -1
	for _, r := range rs {
		if len(r.list) > len(longest) {
			longest, lt = r.list, r.t
		}
	}
	seen := make(map[string]int, len(longest))
	for i, v := range longest {
		if j, dup := seen[v]; dup {
			s.report(classDuplicate, Anomaly{Key: k, OpIDs: s.opIDs(lt), Message: fmt.Sprintf("%s read key %q with %s at positions %d and %d", s.describe(lt), k, v, j, i)})
			return
		}
		seen[v] = i
	}
	for _, r := range rs {
		if s.b.spent() {
			return
		}
		if len(r.list) > len(longest) || !slices.Equal(r.list, longest[:len(r.list)]) {
			s.report(classIncompat, Anomaly{Key: k, OpIDs: s.opIDs(r.t, lt),
				Message: fmt.Sprintf("key %q: %s read %v and %s read %v: neither is a prefix of the other, so no single order of appends explains both", k, s.describe(r.t), r.list, s.describe(lt), longest)})
			return
		}
	}
	// Writers along the order; ww between consecutive distinct writers.
	wr := make([]int32, len(longest))
	for i, v := range longest {
		w, found := s.writers[refWkey{k, v}]
		if !found || s.txns[w.t].status == aborted {
			wr[i] = -1
			continue
		}
		wr[i] = w.t
		if i > 0 && wr[i-1] >= 0 {
			s.addEdge(wr[i-1], w.t, edgeWW, ki)
		}
	}
	for _, r := range rs {
		for i, v := range r.list {
			if i == len(r.list)-1 {
				if w, usable := s.checkSource(r, k, v); usable {
					s.addEdge(w, r.t, edgeWR, ki)
				}
			} else if w, found := s.writers[refWkey{k, v}]; found && s.txns[w.t].status == aborted {
				s.checkSource(r, k, v)
			}
		}
		if n := len(r.list); n < len(longest) && wr[n] >= 0 {
			s.addEdge(r.t, wr[n], edgeRW, ki)
		}
	}
	s.lostUpdates(k, rs)
}

// inferRegister infers a register key's version order: the initial state
// (null) precedes every version, and a transaction that read v and then
// wrote the key installed its version right after v.
func (s *refIso) inferRegister(k string, rs []refRead) {
	ki := s.key(k)
	// next: version → versions known to follow it directly; hasPrev marks
	// versions with a known non-initial predecessor.
	next := map[string][]int32{}
	hasPrev := map[int32]bool{}
	for _, r := range rs {
		tx := &s.txns[r.t]
		for _, m := range tx.micro[r.at+1:] {
			if m.F == history.MicroWrite && m.Key == k {
				v := canon(r.val)
				next[v] = append(next[v], r.t)
				if r.val != nil {
					hasPrev[r.t] = true
				}
				break
			}
		}
	}
	var roots []int32 // installed versions with no known predecessor but the initial state
	for _, t := range s.installs[k] {
		if s.txns[t].status != aborted && !hasPrev[t] {
			roots = append(roots, t)
		}
	}
	for _, r := range rs {
		if s.b.spent() {
			return
		}
		v := canon(r.val)
		if r.val != nil {
			w, usable := s.checkSource(r, k, v)
			if !usable {
				continue
			}
			s.addEdge(w, r.t, edgeWR, ki)
			for _, u := range next[v] {
				s.addEdge(w, u, edgeWW, ki)
				s.addEdge(r.t, u, edgeRW, ki)
			}
			continue
		}
		for _, u := range roots {
			s.addEdge(r.t, u, edgeRW, ki)
		}
	}
	s.lostUpdates(k, rs)
}

// lostUpdates reports two or more committed transactions that read the
// same version of k and both wrote k: one write is lost (P4).
func (s *refIso) lostUpdates(k string, rs []refRead) {
	by := map[string][]int32{}
	var order []string
	for _, r := range rs {
		tx := &s.txns[r.t]
		for _, m := range tx.micro[r.at+1:] {
			if m.Key == k && m.F != history.MicroRead {
				v := canon(r.val)
				if by[v] == nil {
					order = append(order, v)
				}
				by[v] = append(by[v], r.t)
				break
			}
		}
	}
	for _, v := range order {
		if ts := by[v]; len(ts) > 1 {
			var names []string
			for _, t := range ts {
				names = append(names, s.describe(t))
			}
			s.report(classLostUpdate, Anomaly{Key: k, OpIDs: s.opIDs(ts...),
				Message: fmt.Sprintf("key %q: %s all read %s and then wrote the key: all but one write is lost", k, strings.Join(names, ", "), v)})
		}
	}
}

// processOrder adds an edge from each committed transaction to the next
// committed one of the same process (by invocation; a process runs one
// at a time, so this is its program order). Consecutive pairs suffice:
// the graph is searched for paths, and order is transitive.
func (s *refIso) processOrder() {
	last := map[string]int32{}
	idx := make([]int32, 0, len(s.txns))
	for t := range s.txns {
		if s.txns[t].status == committed {
			idx = append(idx, int32(t))
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return s.txns[idx[i]].op.InvokeTS < s.txns[idx[j]].op.InvokeTS })
	for _, t := range idx {
		if s.b.spent() {
			return
		}
		p := s.txns[t].op.ProcessID
		if prev, ok := last[p]; ok {
			s.addEdge(prev, t, edgeProc, -1)
		}
		last[p] = t
	}
}

// realtime adds real-time edges between committed transactions: T1 → T2
// when T1 completed before T2 was invoked. Only the frontier is linked (a
// transaction whose successor completed before T2 began reaches T2
// through it), so the edges grow with transactions × concurrency, not
// quadratically.
func (s *refIso) realtime() {
	type ev struct {
		ts     int64
		t      int32
		invoke bool
	}
	evs := make([]ev, 0, 2*len(s.txns))
	for t := range s.txns {
		op := s.txns[t].op
		if s.txns[t].status != committed {
			continue
		}
		evs = append(evs, ev{op.InvokeTS, int32(t), true}, ev{*op.CompleteTS, int32(t), false})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].ts != evs[j].ts {
			return evs[i].ts < evs[j].ts
		}
		// Equal times are not ordered (real time needs complete < invoke):
		// the invoke goes first, before the completion joins the frontier.
		return evs[i].invoke && !evs[j].invoke
	})
	var frontier []int32
	for _, e := range evs {
		if s.b.spent() {
			return
		}
		if e.invoke {
			for _, f := range frontier {
				s.addEdge(f, e.t, edgeRT, -1)
			}
			continue
		}
		inv := s.txns[e.t].op.InvokeTS
		kept := frontier[:0]
		for _, f := range frontier {
			if *s.txns[f].op.CompleteTS >= inv {
				kept = append(kept, f)
			}
		}
		frontier = append(kept, e.t)
	}
}

// build merges parallel edges (their type bits OR-ed) into a graph.
func (s *refIso) build() *graph {
	es := s.edges
	slices.SortFunc(es, func(a, b edge) int {
		if a.from != b.from {
			return int(a.from - b.from)
		}
		return int(a.to - b.to)
	})
	n := len(s.txns)
	g := &graph{off: make([]int32, n+1)}
	for i := 0; i < len(es); {
		j := i
		var m uint8
		key := int32(-1)
		for ; j < len(es) && es[j].from == es[i].from && es[j].to == es[i].to; j++ {
			if key < 0 {
				key = es[j].key
			}
			m |= es[j].mask
		}
		g.dst = append(g.dst, es[i].to)
		g.mask = append(g.mask, m)
		g.key = append(g.key, key)
		g.off[es[i].from+1]++
		i = j
	}
	for v := 1; v <= n; v++ {
		g.off[v] += g.off[v-1]
	}
	s.edges = es
	return g
}

// sccs computes the strongly connected components (Tarjan, iterative:
// histories reach millions of transactions, far past the stack a
// recursion would need) over the edges with a type in allow, from the
// roots given (nil: every node), not leaving in (nil: no limit). It
// returns each node's component in st.comp (valid until the next call on
// st) and the components with more than one node.
func (s *refIso) sccs(g *graph, st *sccState, allow uint8, roots []int32, in func(int32) bool) (comp []int32, multi [][]int32) {
	for _, v := range st.touched {
		st.index[v], st.comp[v], st.onStack[v] = -1, -1, false
	}
	st.touched = st.touched[:0]
	index, low, onStack := st.index, st.low, st.onStack
	comp = st.comp
	var stack []int32
	type frame struct{ v, e int32 }
	var call []frame
	next := int32(0)
	nc := int32(0)
	n := int32(len(g.off) - 1)
	for ri := int32(0); ; ri++ {
		var root int32
		if roots == nil {
			if ri >= n {
				break
			}
			root = ri
		} else {
			if int(ri) >= len(roots) {
				break
			}
			root = roots[ri]
		}
		if index[root] >= 0 {
			continue
		}
		call = append(call[:0], frame{root, g.off[root]})
		index[root], low[root] = next, next
		next++
		st.touched = append(st.touched, root)
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			if s.b.spent() {
				return comp, multi
			}
			f := &call[len(call)-1]
			v := f.v
			if f.e < g.off[v+1] {
				e := f.e
				f.e++
				w := g.dst[e]
				if g.mask[e]&allow == 0 || (in != nil && !in(w)) {
					continue
				}
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					st.touched = append(st.touched, w)
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, g.off[w]})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				var members []int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = nc
					members = append(members, w)
					if w == v {
						break
					}
				}
				if len(members) > 1 {
					multi = append(multi, members)
				}
				nc++
			}
		}
	}
	return comp, multi
}

// path returns the shortest path from a to b (BFS) over edges with a type
// in allow inside component c, or nil. a == b finds the shortest cycle
// through a.
func (s *refIso) path(g *graph, comp []int32, c int32, a, b int32, allow uint8, prev map[int32]int32) []step {
	clear(prev)
	queue := []int32{a}
	found := false
	for qi := 0; qi < len(queue) && !found; qi++ {
		if s.b.spent() {
			return nil
		}
		v := queue[qi]
		for e := g.off[v]; e < g.off[v+1]; e++ {
			w := g.dst[e]
			if g.mask[e]&allow == 0 || comp[w] != c {
				continue
			}
			if _, seen := prev[w]; seen {
				continue
			}
			prev[w] = e
			if w == b {
				found = true
				break
			}
			queue = append(queue, w)
		}
	}
	if !found {
		return nil
	}
	var steps []step
	for w := b; ; {
		e := prev[w]
		from := s.edgeFrom(g, e)
		steps = append(steps, step{from, w, g.mask[e] & allow, g.key[e]})
		w = from
		if w == a || len(steps) > len(g.dst) {
			break
		}
	}
	slices.Reverse(steps)
	return steps
}

// edgeFrom finds the source node of edge e (binary search on off).
func (s *refIso) edgeFrom(g *graph, e int32) int32 {
	lo, hi := 0, len(g.off)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if g.off[mid] <= e {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return int32(lo)
}

// findCycles searches each strongly connected component for cycles of each
// class, weakest (G0) first, and reports one shortest cycle per class.
func (s *refIso) findCycles() {
	if s.b.spent() {
		return
	}
	g := s.build()
	all := edgeData
	if s.level == StrictSerializable {
		all |= edgeRT
	}
	if sessionBase(s.level) != "" {
		all |= edgeProc
	}
	n := len(s.txns)
	comp, multi := s.sccs(g, newSCCState(n), all, nil, nil)
	comp = slices.Clone(comp)
	scratch := newSCCState(n)
	prev := map[int32]int32{}
	for _, members := range multi {
		if s.b.spent() {
			return
		}
		c := comp[members[0]]
		found := map[string]bool{}
		try := func(steps []step) {
			if steps == nil {
				return
			}
			cl := classify(steps)
			if found[cl] || len(found) >= maxCycleClasses {
				return
			}
			found[cl] = true
			s.reportCycle(cl, steps)
		}
		inC := func(v int32) bool { return comp[v] == c }
		// G0 and G1c: cycles over ww, then ww+wr, inside sub-components.
		for _, allow := range []uint8{edgeWW, edgeWW | edgeWR} {
			sub, subs := s.sccs(g, scratch, allow, members, inC)
			for _, sm := range subs {
				try(s.path(g, sub, sub[sm[0]], sm[0], sm[0], allow, prev))
			}
		}
		// G-single: one rw edge a→b closed by a ww/wr path b→a.
		tried := 0
		for _, a := range members {
			for e := g.off[a]; e < g.off[a+1] && tried < maxRWStarts && !found[classGSingle]; e++ {
				b := g.dst[e]
				if g.mask[e]&edgeRW == 0 || comp[b] != c {
					continue
				}
				tried++
				back := s.path(g, comp, c, b, a, edgeWW|edgeWR, prev)
				if back != nil {
					try(append([]step{{a, b, edgeRW, g.key[e]}}, back...))
				}
			}
		}
		// Any data cycle (G2-item), then with real-time or process order.
		for _, allow := range []uint8{edgeData, all} {
			if allow == edgeData || all != edgeData {
				sub, subs := s.sccs(g, scratch, allow, members, inC)
				for _, sm := range subs {
					try(s.path(g, sub, sub[sm[0]], sm[0], sm[0], allow, prev))
				}
			}
		}
	}
}

func (s *refIso) reportCycle(class string, steps []step) {
	var b strings.Builder
	ids := make([]int32, 0, len(steps))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	key := ""
	for i, st := range steps {
		if i == 0 {
			b.WriteString(s.describe(st.from))
		}
		k := ""
		if st.key >= 0 {
			k = "[" + s.keys[st.key] + "]"
			if key == "" {
				key = s.keys[st.key]
			}
		}
		fmt.Fprintf(&b, " -%s%s-> %s", edgeName(st.mask), k, s.describe(st.to))
		ids = append(ids, st.from)
		op := s.txns[st.from].op
		lo, hi = min(lo, op.InvokeTS), max(hi, end(op))
	}
	if hi == math.MaxInt64 {
		hi = 0
	}
	if forbidden(s.level, class) && len(s.cycles) < maxPictureCycles {
		s.cycles = append(s.cycles, cycle{class, steps})
	}
	s.report(class, Anomaly{Key: key, OpIDs: s.opIDs(ids...), WindowStart: lo, WindowEnd: hi,
		Message: fmt.Sprintf("cycle of %d transactions: %s", len(steps), b.String())})
}

// writePicture writes an HTML page with one SVG drawing per cycle (nodes
// on a circle, edges labelled with type and key). It stops before the
// page would pass maxBytes (0: DefaultHTMLMaxBytes) and reports whether
// cycles were left out.
func (s *refIso) writePicture(path string, maxBytes int64) (bool, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultHTMLMaxBytes
	}
	var b strings.Builder
	b.WriteString("<!doctype html><meta charset=utf-8><title>isolation anomalies</title><style>body{font-family:sans-serif}svg{border:1px solid #ccc;margin:8px}</style>\n")
	fmt.Fprintf(&b, "<h1>Isolation anomalies at %s</h1>\n", html.EscapeString(s.level))
	capped := false
	for _, c := range s.cycles {
		var one strings.Builder
		n := len(c.steps)
		const size, r = 360.0, 130.0
		pos := func(i int) (float64, float64) {
			a := 2*math.Pi*float64(i)/float64(n) - math.Pi/2
			return size/2 + r*math.Cos(a), size/2 + r*math.Sin(a)
		}
		fmt.Fprintf(&one, "<h2>%s</h2>\n<svg width=%d height=%d viewBox=\"0 0 %d %d\"><defs><marker id=a viewBox=\"0 0 10 10\" refX=10 refY=5 markerWidth=6 markerHeight=6 orient=auto><path d=\"M0 0L10 5L0 10z\"/></marker></defs>\n",
			html.EscapeString(c.class), int(size), int(size), int(size), int(size))
		for i, st := range c.steps {
			x1, y1 := pos(i)
			x2, y2 := pos((i + 1) % n)
			label := edgeName(st.mask)
			if st.key >= 0 {
				label += " " + s.keys[st.key]
			}
			fmt.Fprintf(&one, "<line x1=%.0f y1=%.0f x2=%.0f y2=%.0f stroke=black marker-end=\"url(#a)\"/><text x=%.0f y=%.0f font-size=12 fill=#a00>%s</text>\n",
				x1, y1, x2+(x1-x2)*0.15, y2+(y1-y2)*0.15, (x1+x2)/2, (y1+y2)/2, html.EscapeString(label))
			fmt.Fprintf(&one, "<circle cx=%.0f cy=%.0f r=18 fill=#def stroke=#346/><text x=%.0f y=%.0f font-size=11 text-anchor=middle>T%s</text>\n",
				x1, y1, x1, y1+4, html.EscapeString(s.txns[st.from].op.OpID))
		}
		one.WriteString("</svg>\n")
		if int64(b.Len()+one.Len()) > maxBytes {
			capped = true
			break
		}
		b.WriteString(one.String())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return false, fmt.Errorf("write isolation picture: %w", err)
	}
	return capped, nil
}
