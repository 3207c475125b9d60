package checker

// The isolation checker (docs/history-and-checkers.md §5.16) is an
// Elle-style cycle checker over transactions (op_type txn,
// docs/history-and-checkers.md §2.5). It infers each key's version order
// from what the history shows — for list-append keys the longest observed
// list, of which every other read must be a prefix; for register keys the
// unique written values, the initial state before them, and a
// transaction's read of a key before its own write to it — then builds the
// dependency graph (ww, wr, rw; real-time order at strict-serializable,
// each process's own order at the strong-session levels),
// finds its strongly connected components and, in each, the shortest cycle
// through a node per anomaly class, and classifies it by its edges (Adya):
// only ww is G0; ww and wr G1c; exactly one rw G-single; two or more rw,
// no two of them adjacent, G-nonadjacent (snapshot isolation forbids it);
// any other G2-item; a cycle that needs a real-time edge gets the class of its data
// edges with "-realtime", one that needs a process-order edge
// "-process". G1a (aborted read), G1b (intermediate read),
// internal inconsistency, duplicate elements, incompatible orders and lost
// updates are found while inferring.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
)

// Isolation level ids, as --level and Spec.Params["level"] take them.
const (
	ReadCommitted     = "read-committed"
	SnapshotIsolation = "snapshot-isolation"
	// RepeatableRead is Adya's PL-2.99 at item level: it forbids G2-item
	// and every weaker cycle, but not predicate anti-dependencies. With
	// item-level histories there are none (docs/history-and-checkers.md
	// §5.16), so it forbids what Serializable does.
	RepeatableRead     = "repeatable-read"
	Serializable       = "serializable"
	StrictSerializable = "strict-serializable"
	// The strong-session levels are snapshot isolation and serializability
	// plus each process's own order: a process sees its own earlier
	// transactions (Elle's strong-session-*; docs/history-and-checkers.md
	// §5.16).
	StrongSessionSI           = "strong-session-snapshot-isolation"
	StrongSessionSerializable = "strong-session-serializable"
)

// Anomaly classes the isolation checker reports (Anomaly.Kind).
const (
	classG0          = "G0"
	classG1a         = "G1a"
	classG1b         = "G1b"
	classG1c         = "G1c"
	classGSingle     = "G-single"
	classG2Item      = "G2-item"
	classGNonadj     = "G-nonadjacent"
	classLostUpdate  = "lost-update"
	classInternal    = "internal"
	classDuplicate   = "duplicate-elements"
	classIncompat    = "incompatible-order"
	suffixRealtime   = "-realtime"
	suffixProcess    = "-process"
	maxCycleClasses  = 8   // classes searched per component
	maxRWStarts      = 128 // rw edges tried per component for G-single
	maxPictureCycles = 20
)

// IsolationLevels lists the level ids, weakest first, as --level and
// error messages name them (a new slice each call: no shared state).
func IsolationLevels() []string {
	return []string{ReadCommitted, SnapshotIsolation, RepeatableRead, Serializable,
		StrongSessionSI, StrongSessionSerializable, StrictSerializable}
}

// IsolationLevel maps a level as a plan or a user writes it ("serializable",
// "Snapshot Isolation", "SI", "read committed", "repeatable read", "strict
// serializability", …) to its level id; ok is false when text names none.
func IsolationLevel(text string) (level string, ok bool) {
	t := strings.ToLower(text)
	t = strings.NewReplacer("-", " ", "_", " ").Replace(t)
	switch {
	case strings.Contains(t, "repeatable read") || strings.TrimSpace(t) == "rr" || strings.Contains(t, "pl 2.99"):
		return RepeatableRead, true
	case strings.Contains(t, "session seriali"):
		return StrongSessionSerializable, true
	case strings.Contains(t, "session snapshot") || strings.Contains(t, "session si"):
		return StrongSessionSI, true
	case strings.Contains(t, "strict seriali") || strings.Contains(t, "strong seriali"):
		return StrictSerializable, true
	case strings.Contains(t, "snapshot isolation") || strings.Contains(t, "snapshot") || strings.TrimSpace(t) == "si":
		return SnapshotIsolation, true
	case strings.Contains(t, "read committed"):
		return ReadCommitted, true
	case strings.Contains(t, "seriali"):
		return Serializable, true
	}
	return "", false
}

// forbidden is the anomaly set each level forbids (Adya's PL-2, PL-SI,
// PL-2.99, PL-3 and PL-3 with real time, as Elle assigns them). The data anomalies
// that leave no single version order (duplicate elements, incompatible
// orders, internal inconsistency) are forbidden at every level.
func forbidden(level, class string) bool {
	if base, ok := strings.CutSuffix(class, suffixProcess); ok {
		// Process order is real-time order within one process, so the
		// strict level forbids these too (its real-time edges include it).
		return (level == StrictSerializable || sessionBase(level) != "") && forbidden(orBase(level), base)
	}
	level = orBase(level)
	switch class {
	case classG0, classG1a, classG1b, classG1c, classInternal, classDuplicate, classIncompat:
		return true
	case classGSingle, classGNonadj, classLostUpdate:
		return level != ReadCommitted
	case classG2Item:
		return level == RepeatableRead || level == Serializable || level == StrictSerializable
	}
	return level == StrictSerializable && strings.HasSuffix(class, suffixRealtime)
}

// sessionBase is the level a strong-session level adds process order to
// ("" for the others); orBase maps a level to the one its data anomalies
// are judged at.
func sessionBase(level string) string {
	switch level {
	case StrongSessionSI:
		return SnapshotIsolation
	case StrongSessionSerializable:
		return Serializable
	}
	return ""
}

func orBase(level string) string {
	if b := sessionBase(level); b != "" {
		return b
	}
	return level
}

func forbiddenList(level string) string {
	all := []string{classG0, classG1a, classG1b, classG1c, classGSingle, classGNonadj, classLostUpdate, classG2Item, "G2", "*" + suffixRealtime, "*" + suffixProcess}
	var out []string
	for _, c := range all {
		switch {
		// Repeatable read allows predicate G2 (phantoms): only its item
		// form is forbidden there.
		case c == "G2" && forbidden(level, classG2Item) && level != RepeatableRead, c != "G2" && forbidden(level, c),
			c == "*"+suffixRealtime && level == StrictSerializable,
			c == "*"+suffixProcess && sessionBase(level) != "":
			out = append(out, c)
		}
	}
	return strings.Join(out, ", ")
}

// Edge types of the dependency graph, as bits.
const (
	edgeWW uint8 = 1 << iota
	edgeWR
	edgeRW
	edgeRT
	edgeProc
	edgeData = edgeWW | edgeWR | edgeRW
)

func edgeName(m uint8) string {
	switch {
	case m&edgeWW != 0:
		return "ww"
	case m&edgeWR != 0:
		return "wr"
	case m&edgeRW != 0:
		return "rw"
	case m&edgeRT != 0:
		return "rt"
	}
	return "process"
}

type txnStatus uint8

const (
	committed txnStatus = iota
	aborted
	indeterminate
)

type txn struct {
	op     *history.Op
	status txnStatus
	micro  []history.MicroOp
}

type wkey struct{ k, v string }

// writeRef is who wrote a value to a key: the transaction, and whether it
// was that transaction's last write to the key (else a read of it is an
// intermediate read).
type writeRef struct {
	t     int32
	final bool
}

type edge struct {
	from, to int32
	mask     uint8
	key      int32 // index into iso.keys, -1 for real time
}

// iso is one isolation check in progress.
type iso struct {
	spec    Spec
	level   string
	b       *budget
	txns    []txn
	keys    []string
	keyIdx  map[string]int32
	kind    map[string]string // key → "append" or "w"
	writers map[wkey]writeRef
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

type step struct {
	from, to int32
	mask     uint8
	key      int32
}

type cycle struct {
	class string
	steps []step
}

func checkIsolation(ctx context.Context, spec Spec, ops []history.Op) (Result, error) {
	level := Serializable
	if l, set := spec.Params["level"]; set {
		var ok bool
		if level, ok = IsolationLevel(l); !ok {
			return Result{}, fmt.Errorf("checker %s: level %q: want one of %s", Serializability, l, strings.Join(IsolationLevels(), ", "))
		}
	}
	s := &iso{spec: spec, level: level, b: newBudget(ctx), keyIdx: map[string]int32{}, kind: map[string]string{},
		writers: map[wkey]writeRef{}, installs: map[string][]int32{}, allowed: map[string]int{}}
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
func (s *iso) report(class string, a Anomaly) {
	if !forbidden(s.level, class) {
		s.allowed[class]++
		return
	}
	a.Kind = class
	s.an.add(a)
}

func (s *iso) key(k string) int32 {
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
func (s *iso) load(ops []history.Op) error {
	s.txns = make([]txn, 0, len(ops))
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
		s.txns = append(s.txns, txn{op: op, status: st, micro: ms})
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
			wk := wkey{m.Key, canon(m.Value)}
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
			s.writers[wk] = writeRef{t: t, final: final}
			if final && m.F == history.MicroWrite {
				s.installs[m.Key] = append(s.installs[m.Key], t)
			}
		}
	}
	return nil
}

func (s *iso) opIDs(ts ...int32) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = s.txns[t].op.OpID
	}
	return ids
}

func (s *iso) describe(t int32) string {
	op := s.txns[t].op
	return fmt.Sprintf("T%s (line %d)", op.OpID, op.Line)
}

func (s *iso) addEdge(from, to int32, mask uint8, key int32) {
	if from == to || s.txns[from].status == aborted || s.txns[to].status == aborted {
		return
	}
	s.edges = append(s.edges, edge{from, to, mask, key})
}

// read is one external read: a transaction's read of a key before any
// write of its own to that key.
type read struct {
	t    int32
	at   int // micro-op index
	val  json.RawMessage
	list []string
}

// infer walks every transaction's micro-ops: internal consistency, aborted
// and intermediate reads, then per key the version order and the ww, wr
// and rw edges it implies.
func (s *iso) infer() {
	reads := map[string][]read{}
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
		if s.kind[k] == history.MicroWrite || s.kind[k] == "" && !slices.ContainsFunc(reads[k], func(r read) bool { return r.list != nil }) {
			s.inferRegister(k, reads[k])
		} else {
			s.inferList(k, reads[k])
		}
	}
}

// internal checks that each read in a transaction agrees with what the
// transaction itself did before it, and collects its external reads.
func (s *iso) internal(t int32, reads map[string][]read) {
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
				reads[m.Key] = append(reads[m.Key], read{t: t, at: j, val: m.Value, list: list})
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
func (s *iso) checkSource(r read, k, v string) (int32, bool) {
	tx := s.txns[r.t].op
	w, found := s.writers[wkey{k, v}]
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
func (s *iso) inferList(k string, rs []read) {
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
		w, found := s.writers[wkey{k, v}]
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
			} else if w, found := s.writers[wkey{k, v}]; found && s.txns[w.t].status == aborted {
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
func (s *iso) inferRegister(k string, rs []read) {
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
func (s *iso) lostUpdates(k string, rs []read) {
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

// orderScope says which order between transactions beyond their data the
// check used.
func orderScope(level string) string {
	switch {
	case level == StrictSerializable:
		return "real-time order used (it includes each process's own order)"
	case sessionBase(level) != "":
		return "each process's own order used, real-time order across processes not"
	}
	return "neither real-time nor process order is used"
}

// processOrder adds an edge from each committed transaction to the next
// committed one of the same process (by invocation; a process runs one
// at a time, so this is its program order). Consecutive pairs suffice:
// the graph is searched for paths, and order is transitive.
func (s *iso) processOrder() {
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
func (s *iso) realtime() {
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
