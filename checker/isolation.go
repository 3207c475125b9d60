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

// txn is one transaction: what the reports name it by, when it ran, and
// its micro-ops (iso.mops[micro : micro+n]).
type txn struct {
	id     string
	line   int
	inv    int64
	end    int64 // completion; math.MaxInt64 when unknown
	proc   int32 // index into iso.procs
	micro  int32
	n      int32
	status txnStatus
}

// mop is a micro-op: its key (index into iso.keys), function and value
// (a read's result; with fList, the index of its list in iso.lists).
type mop struct {
	key int32
	val vtok
	f   uint8
}

// listRef is a read's list: n elements at arena[blk][off:], and its JSON
// text when that is not its elements' texts joined by commas (tokNull:
// it is).
type listRef struct {
	blk, off, n uint32
	text        vtok
}

// arenaBlock is the size of a block of list elements: lists are copied
// into blocks, never grown, so no append copies the elements read so far.
const arenaBlock = 1 << 20

// wrec is one write as loaded: key, value, writer, function, and whether
// it was the writer's last write of that function to the key.
type wrec struct {
	k     int32
	v     vtok
	t     int32
	f     uint8
	final bool
}

// edgeBlock is the size of a block of edges.
const edgeBlock = 1 << 18

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

const (
	kindNone uint8 = iota
	kindW
	kindAppend
)

// iso is one isolation check in progress.
type iso struct {
	spec    Spec
	level   string
	b       *budget
	txns    []txn
	mops    []mop
	keys    []string
	keyIdx  map[string]int32
	kind    []uint8 // per key
	counted []bool  // per key: in the scope's key count (written, or read by a committed transaction)
	procs   []string
	procIdx map[string]int32
	texts   []string
	textIdx map[string]vtok
	arena   [][]vtok
	chains  [][]vtok // per key; see copyList
	lists   []listRef
	tmp     []vtok
	errText map[int32]string // an aborted transaction's error
	// wrecs are the writes in load order, until indexWrites turns them
	// into the per-key index below (wOff: a key's range of wVals/wRefs;
	// wBig: a map for a key with many values).
	wrecs []wrec
	wOff  []int32
	wVals []vtok
	wRefs []writeRef
	wBig  map[int32]map[vtok]int32
	// installs lists, per register key, the transactions whose last
	// write to it is a version (aborted ones included; filtered on use).
	installs [][]int32
	edges    [][]edge // in blocks of edgeBlock, never copied to grow
	nEdges   int
	an       anomalies
	allowed  map[string]int
	dirty    []DirtyRead
	cycles   []cycle
	// textOf and listOf translate a decoder's texts and lists while one
	// batch loads.
	textOf  []vtok
	listOf  []int32
	scratch []byte
	// onBatch, when set, sees each decoded batch before it is loaded.
	onBatch func(ops []history.Op, d *txnDecoder)
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

// newIso starts an isolation check at the level spec names.
func newIso(ctx context.Context, spec Spec) (*iso, error) {
	level := Serializable
	if l, set := spec.Params["level"]; set {
		var ok bool
		if level, ok = IsolationLevel(l); !ok {
			return nil, fmt.Errorf("checker %s: level %q: want one of %s", Serializability, l, strings.Join(IsolationLevels(), ", "))
		}
	}
	return &iso{spec: spec, level: level, b: newBudget(ctx), keyIdx: map[string]int32{}, procIdx: map[string]int32{},
		textIdx: map[string]vtok{}, errText: map[int32]string{}, allowed: map[string]int{}}, nil
}

func checkIsolation(ctx context.Context, spec Spec, ops []history.Op) (Result, error) {
	s, err := newIso(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	s.txns = make([]txn, 0, len(ops))
	if err := s.add(ops); err != nil {
		return Result{}, err
	}
	return s.check()
}

// add loads the next ops of the history (in order), decoding their
// transactions on the worker pool. Bad input (an op that is not a txn, a
// malformed txn, a key used both as a list and as a register, a value
// written twice) is a *fileline.Error at the op's line. The ops are not
// kept: add copies what the check needs.
func (s *iso) add(ops []history.Op) error {
	return decodeBatches(ops, s.load)
}

// reserve makes room for f times what is loaded so far: a guess at the
// whole from its start, so the big arrays rarely grow by copying.
func (s *iso) reserve(f float64) {
	grow := func(n int) int { return int(float64(n)*f*1.05) + 16 }
	s.txns = slices.Grow(s.txns, grow(len(s.txns))-len(s.txns))
	s.mops = slices.Grow(s.mops, grow(len(s.mops))-len(s.mops))
	s.lists = slices.Grow(s.lists, grow(len(s.lists))-len(s.lists))
	s.wrecs = slices.Grow(s.wrecs, grow(len(s.wrecs))-len(s.wrecs))
}

// check judges the transactions added.
func (s *iso) check() (Result, error) {
	if err := s.indexWrites(); err != nil {
		return Result{}, err
	}
	res := Result{OpsConsumed: len(s.txns)}
	micro := len(s.mops)
	s.infer()
	// What only inference reads goes before the graph is built.
	s.arena, s.chains, s.lists, s.mops, s.wVals, s.wRefs, s.wBig, s.installs = nil, nil, nil, nil, nil, nil, nil, nil
	if s.level == StrictSerializable {
		s.realtime()
	}
	if sessionBase(s.level) != "" {
		s.processOrder()
	}
	s.findCycles()
	res.Anomalies = s.an.done()
	res.Dirty = s.dirty
	var com, abo, ind, keys int
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
	for _, c := range s.counted {
		if c {
			keys++
		}
	}
	for _, b := range s.edges { // not built into a graph (the time limit came first)
		s.nEdges += len(b)
	}
	res.Scope = fmt.Sprintf("level %s forbids %s; %d transactions (%d committed, %d aborted, %d unknown), %d micro-ops, %d keys, %d dependency edges; "+
		"item-level only: predicate reads and phantoms are not modelled, so G2 is judged as G2-item; version orders are only what reads reveal (list prefixes, the initial state, a read before a write in one transaction), so an anomaly no read exposes is not seen; %s",
		s.level, forbiddenList(s.level), len(s.txns), com, abo, ind, micro, keys, s.nEdges, orderScope(s.level))
	if len(s.allowed) > 0 {
		var names []string
		for c, n := range s.allowed {
			names = append(names, fmt.Sprintf("%s ×%d", c, n))
		}
		sort.Strings(names)
		res.Scope += "; found but allowed at " + s.level + ": " + strings.Join(names, ", ")
	}
	res = s.b.settle(res)
	if res.Outcome == "" && len(s.dirty) > 0 && len(res.Anomalies) == 0 {
		res.Outcome, res.Reason = Unknown, dirtyReason(s.dirty)
	}
	if len(res.Anomalies) > 0 && s.spec.HTMLPath != "" && len(s.cycles) > 0 {
		capped, err := s.writePicture(s.spec.HTMLPath, s.spec.HTMLMaxBytes)
		if err != nil {
			return Result{}, err
		}
		res.HTML, res.HTMLCapped = s.spec.HTMLPath, capped
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

func (s *iso) key(k []byte) int32 {
	if i, ok := s.keyIdx[string(k)]; ok {
		return i
	}
	i := int32(len(s.keys))
	name := string(k)
	s.keys = append(s.keys, name)
	s.keyIdx[name] = i
	s.kind = append(s.kind, kindNone)
	s.counted = append(s.counted, false)
	s.installs = append(s.installs, nil)
	s.chains = append(s.chains, nil)
	return i
}

// intern is the token of a text.
func (s *iso) intern(text string) vtok {
	if v, ok := intToken([]byte(text)); ok {
		return v
	}
	if v, ok := s.textIdx[text]; ok {
		return v
	}
	v := tokText | vtok(len(s.texts))
	s.texts = append(s.texts, text)
	s.textIdx[text] = v
	return v
}

// text is a token's text, as the string-based checker printed values.
func (s *iso) text(v vtok) string {
	switch {
	case v == tokNull:
		return "null"
	case v&tokText != 0:
		return s.texts[v&^tokText]
	}
	return ftoa(v)
}

// list is the elements of list i.
func (s *iso) list(i int32) []vtok {
	l := s.lists[i]
	if l.blk&chainRef != 0 {
		return s.chains[l.blk&^chainRef][:l.n:l.n]
	}
	return s.arena[l.blk][l.off : l.off+l.n : l.off+l.n]
}

// listText is the token of list i's JSON text, for a read of a list from
// a register (its value is then that text).
func (s *iso) listText(i int32) vtok {
	l := &s.lists[i]
	if l.text != tokNull {
		return l.text
	}
	b := append(s.scratch[:0], '[')
	for j, e := range s.list(i) {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, s.text(e)...)
	}
	s.scratch = append(b, ']')
	l.text = s.intern(string(s.scratch))
	return l.text
}

// load indexes one decoded batch: the transactions, their micro-ops with
// the decoder's texts and lists given the check's own places, the writes.
func (s *iso) load(ops []history.Op, d *txnDecoder) error {
	if s.onBatch != nil {
		s.onBatch(ops, d)
	}
	s.textOf = s.textOf[:0]
	for range d.texts {
		s.textOf = append(s.textOf, tokNull) // interned on first use
	}
	s.listOf = s.listOf[:0]
	for range d.lists {
		s.listOf = append(s.listOf, -1)
	}
	tok := func(v vtok) vtok {
		if v == tokNull || v&tokText == 0 {
			return v
		}
		i := v &^ tokText
		if s.textOf[i] == tokNull {
			s.textOf[i] = s.intern(d.texts[i])
		}
		return s.textOf[i]
	}
	lastKey, lastID := []byte(nil), int32(-1)
	for i := range ops {
		op := &ops[i]
		dt := d.txns[i]
		if dt.err == errNotTxn {
			return s.loadErr(fileline.Errorf(s.spec.History, op.Line, "op %q: op_type %q: the txn model takes only op_type txn", op.OpID, op.OpType))
		}
		if dt.err != nil {
			return s.loadErr(fileline.Errorf(s.spec.History, op.Line, "op %q: %w", op.OpID, dt.err))
		}
		st := committed
		switch {
		case unknown(op):
			st = indeterminate
		case op.Error != "":
			st = aborted
		}
		t := int32(len(s.txns))
		p, ok := s.procIdx[op.ProcessID]
		if !ok {
			p = int32(len(s.procs))
			s.procs = append(s.procs, op.ProcessID)
			s.procIdx[op.ProcessID] = p
		}
		s.txns = append(s.txns, txn{id: op.OpID, line: op.Line, inv: op.InvokeTS, end: end(op), proc: p,
			micro: int32(len(s.mops)), n: dt.n, status: st})
		if st == aborted {
			s.errText[t] = op.Error
		}
		first := len(s.mops)
		for _, x := range d.mops[dt.off : dt.off+dt.n] {
			k := lastID
			if lastID < 0 || string(x.key) != string(lastKey) {
				k = s.key(x.key)
				lastKey, lastID = x.key, k
			}
			m := mop{key: k, f: x.f}
			if x.f&fList != 0 {
				m.val = vtok(s.copyList(d, x.val, k, tok))
			} else {
				m.val = tok(x.val)
			}
			s.mops = append(s.mops, m)
		}
		ms := s.mops[first:]
		for j, m := range ms {
			if m.f == fRead || m.f&fList != 0 {
				continue
			}
			kind := kindW
			if m.f == fAppend {
				kind = kindAppend
			}
			if k := s.kind[m.key]; k == kindNone {
				s.kind[m.key], s.counted[m.key] = kind, true
			} else if k != kind {
				return s.loadErr(fileline.Errorf(s.spec.History, op.Line, "op %q: key %q is written with both w and append (a key is a register or a list, not both)", op.OpID, s.keys[m.key]))
			}
			final := true
			for _, later := range ms[j+1:] {
				if later.f == m.f && later.key == m.key {
					final = false
					break
				}
			}
			// A value written twice is found by indexWrites, which
			// reports the first, as a check at each write would.
			s.wrecs = append(s.wrecs, wrec{k: m.key, v: m.val, t: t, f: m.f, final: final})
			if final && m.f == fWrite {
				s.installs[m.key] = append(s.installs[m.key], t)
			}
		}
	}
	return nil
}

// copyList stores a decoder's list, read of key k, and returns its index.
// Reads of a list-append key are mostly prefixes of one order, each a
// little longer than the last: such a list is kept as a length into the
// key's chain (the longest such read so far, extended as reads grow), so
// the elements of all of them take the room of the longest. A list that
// is neither prefix nor extension of the chain is copied into the arena.
func (s *iso) copyList(d *txnDecoder, i vtok, k int32, tok func(vtok) vtok) int32 {
	if j := s.listOf[i]; j >= 0 {
		return j
	}
	dl := d.lists[i]
	n := uint32(dl.n)
	els := s.tmp[:0]
	for _, e := range d.elems[dl.off : dl.off+dl.n] {
		els = append(els, tok(e))
	}
	s.tmp = els
	text := tokNull
	if dl.text != tokNull {
		text = tok(dl.text)
	}
	ref := listRef{text: text, n: n}
	if c := s.chains[k]; slices.Equal(els[:min(len(els), len(c))], c[:min(len(els), len(c))]) {
		if len(els) > len(c) {
			s.chains[k] = append(c, els[len(c):]...)
		}
		ref.blk = chainRef | uint32(k)
	} else {
		if len(s.arena) == 0 || uint32(cap(s.arena[len(s.arena)-1])-len(s.arena[len(s.arena)-1])) < n {
			s.arena = append(s.arena, make([]vtok, 0, max(arenaBlock, n)))
		}
		blk := len(s.arena) - 1
		ref.blk, ref.off = uint32(blk), uint32(len(s.arena[blk]))
		s.arena[blk] = append(s.arena[blk], els...)
	}
	s.lists = append(s.lists, ref)
	s.listOf[i] = int32(len(s.lists) - 1)
	return s.listOf[i]
}

// chainRef marks a listRef whose elements are a prefix of a key's chain
// (blk is then the key).
const chainRef = 1 << 31

func (s *iso) opIDs(ts ...int32) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = s.txns[t].id
	}
	return ids
}

func (s *iso) describe(t int32) string {
	return fmt.Sprintf("T%s (line %d)", s.txns[t].id, s.txns[t].line)
}

func (s *iso) addEdge(from, to int32, mask uint8, key int32) {
	if from == to || s.txns[from].status == aborted || s.txns[to].status == aborted {
		return
	}
	if n := len(s.edges); n == 0 || len(s.edges[n-1]) == cap(s.edges[n-1]) {
		s.edges = append(s.edges, make([]edge, 0, edgeBlock))
	}
	b := &s.edges[len(s.edges)-1]
	*b = append(*b, edge{from, to, mask, key})
}

// loadErr is the error a load stops at: a value written twice before it,
// if there is one, comes first.
func (s *iso) loadErr(err error) error {
	if dup := s.indexWrites(); dup != nil {
		return dup
	}
	return err
}

// indexWrites builds the per-key index of writers from the writes
// loaded, and returns the error of the first write (in load order) of a
// value another transaction wrote to the key already. Writes are grouped
// by key with a counting sort, so each key's writes sit together: an
// inference that looks up a key's writers reads one small range, not a
// map of every write of the history.
func (s *iso) indexWrites() error {
	if s.wrecs == nil && s.wOff != nil {
		return nil
	}
	ws := s.wrecs
	off := make([]int32, len(s.keys)+1)
	for _, w := range ws {
		off[w.k+1]++
	}
	for k := 1; k < len(off); k++ {
		off[k] += off[k-1]
	}
	order := make([]int32, len(ws)) // write indexes, by key, in load order within a key
	next := slices.Clone(off[:len(s.keys)])
	for i, w := range ws {
		order[next[w.k]] = int32(i)
		next[w.k]++
	}
	vals := make([]vtok, 0, len(ws))
	refs := make([]writeRef, 0, len(ws))
	wOff := make([]int32, len(s.keys)+1)
	var big map[int32]map[vtok]int32
	dup := -1 // index of the first write that repeats another transaction's
	for k := range s.keys {
		lo := int32(len(vals))
		var m map[vtok]int32
		find := func(v vtok) int32 {
			if m != nil {
				if j, ok := m[v]; ok {
					return j
				}
				return -1
			}
			for j := lo; j < int32(len(vals)); j++ {
				if vals[j] == v {
					return j
				}
			}
			return -1
		}
		for _, i := range order[off[k]:off[k+1]] {
			w := &ws[i]
			if j := find(w.v); j >= 0 {
				if refs[j].t != w.t {
					if dup < 0 || int(i) < dup {
						dup = int(i)
					}
					continue
				}
				refs[j].final = w.final // the writer's later write of it counts
				continue
			}
			vals = append(vals, w.v)
			refs = append(refs, writeRef{t: w.t, final: w.final})
			if m != nil {
				m[w.v] = int32(len(vals) - 1)
			} else if len(vals)-int(lo) > 16 {
				m = make(map[vtok]int32, 32)
				for j := lo; j < int32(len(vals)); j++ {
					m[vals[j]] = j
				}
				if big == nil {
					big = map[int32]map[vtok]int32{}
				}
				big[int32(k)] = m
			}
		}
		wOff[k+1] = int32(len(vals))
	}
	if dup >= 0 {
		w := &ws[dup]
		first := s.firstWriter(ws, w)
		tx, pt := &s.txns[w.t], &s.txns[first]
		return fileline.Errorf(s.spec.History, tx.line, "op %q: %s of %s to key %q repeats op %q (line %d): written values must be unique per key",
			tx.id, microF(w.f), s.text(w.v), s.keys[w.k], pt.id, pt.line)
	}
	s.wOff, s.wVals, s.wRefs, s.wBig, s.wrecs = wOff, vals, refs, big, nil
	return nil
}

// firstWriter is the transaction that first wrote w's value to w's key.
func (s *iso) firstWriter(ws []wrec, w *wrec) int32 {
	for i := range ws {
		if ws[i].k == w.k && ws[i].v == w.v {
			return ws[i].t
		}
	}
	return w.t
}

// writer is who wrote v to key k.
func (s *iso) writer(k int32, v vtok) (writeRef, bool) {
	if m := s.wBig[k]; m != nil {
		j, ok := m[v]
		if !ok {
			return writeRef{}, false
		}
		return s.wRefs[j], true
	}
	for j := s.wOff[k]; j < s.wOff[k+1]; j++ {
		if s.wVals[j] == v {
			return s.wRefs[j], true
		}
	}
	return writeRef{}, false
}

// read is one external read: a transaction's read of a key before any
// write of its own to that key. val is its value as a register holds it
// (null, a scalar, a list's text; for a list read of a list key, see
// value); li is its list when the key is read as a list: -1 none (null),
// -2 the one scalar val, else a list index.
type read struct {
	t   int32
	at  int32 // micro-op index within the transaction
	val vtok
	li  int32
}

// value is a read's value as one token: for a list, its text's.
func (s *iso) value(r read) vtok {
	if r.li >= 0 {
		return s.listText(r.li)
	}
	return r.val
}

// view is a read's list.
func (s *iso) view(r read, one *[1]vtok) []vtok {
	switch r.li {
	case -1:
		return nil
	case -2:
		one[0] = r.val
		return one[:]
	}
	return s.list(r.li)
}

func (s *iso) listString(l []vtok) string {
	b := []byte{'['}
	for i, v := range l {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, s.text(v)...)
	}
	return string(append(b, ']'))
}

// infer walks every transaction's micro-ops: internal consistency, aborted
// and intermediate reads, then per key the version order and the ww, wr
// and rw edges it implies.
func (s *iso) infer() {
	reads := make([][]read, len(s.keys))
	for t := range s.txns {
		if s.b.spent() {
			return
		}
		if s.txns[t].status != committed {
			continue
		}
		s.internal(int32(t), reads)
	}
	var keys []int32
	for k := range reads {
		if len(reads[k]) > 0 {
			keys = append(keys, int32(k))
		}
	}
	slices.SortFunc(keys, func(a, b int32) int { return strings.Compare(s.keys[a], s.keys[b]) })
	for _, k := range keys {
		if s.b.spent() {
			return
		}
		s.counted[k] = true
		if s.kind[k] == kindW || s.kind[k] == kindNone && !slices.ContainsFunc(reads[k], func(r read) bool { return r.li != -1 }) {
			s.inferRegister(k, reads[k])
		} else {
			s.inferList(k, reads[k])
		}
	}
}

// internal checks that each read in a transaction agrees with what the
// transaction itself did before it, and collects its external reads.
func (s *iso) internal(t int32, reads [][]read) {
	tx := &s.txns[t]
	type state struct {
		key      int32
		known    bool // a read fixed the whole value
		list     []vtok
		appended []vtok
		reg      vtok
		wrote    bool
	}
	// A few micro-ops per transaction: a slice searched linearly beats a
	// map allocated per transaction.
	var stBuf [8]state
	st := stBuf[:0]
	for j, m := range s.mops[tx.micro : tx.micro+tx.n] {
		ci := -1
		for e := range st {
			if st[e].key == m.key {
				ci = e
				break
			}
		}
		if ci < 0 {
			st = append(st, state{key: m.key})
			ci = len(st) - 1
		}
		c := &st[ci]
		isListVal := m.f&fList != 0
		// A key nobody writes is a list when its reads are lists.
		isList := s.kind[m.key] == kindAppend || s.kind[m.key] == kindNone && isListVal
		switch m.f &^ fList {
		case fAppend:
			c.appended = append(c.appended, m.val)
			if c.known {
				c.list = append(c.list, m.val)
			}
		case fWrite:
			c.reg, c.wrote, c.known = m.val, true, true
		case fRead:
			var list []vtok
			li := int32(-1)
			if isList && m.val != tokNull {
				if isListVal {
					li = int32(m.val)
					list = s.list(li)
				} else {
					li = -2
					list = []vtok{m.val}
				}
			}
			reg := m.val // the value as a register holds it
			if isListVal {
				reg = tokNull
				if !isList {
					reg = s.listText(int32(m.val))
				}
			}
			bad := ""
			switch {
			case isList && c.known && !slices.Equal(list, c.list):
				bad = fmt.Sprintf("read %s after reading %s and appending since", s.listString(list), s.listString(c.list))
			case isList && !c.known && len(c.appended) > 0 && (len(list) < len(c.appended) || !slices.Equal(list[len(list)-len(c.appended):], c.appended)):
				bad = fmt.Sprintf("read %s, which does not end with its own appends %s", s.listString(list), s.listString(c.appended))
			case !isList && c.known && reg != c.reg:
				bad = fmt.Sprintf("read %s after %s %s", s.text(reg), map[bool]string{true: "writing", false: "reading"}[c.wrote], s.text(c.reg))
			}
			if bad != "" {
				s.report(classInternal, Anomaly{Key: s.keys[m.key], OpIDs: s.opIDs(t), WindowStart: tx.inv, WindowEnd: tx.end,
					Message: fmt.Sprintf("%s key %q: micro-op %d %s", s.describe(t), s.keys[m.key], j, bad)})
			}
			if !c.known && len(c.appended) == 0 {
				// A list's text is made only where it is compared
				// (lostUpdates): most list reads never need it.
				reads[m.key] = append(reads[m.key], read{t: t, at: int32(j), val: reg, li: li})
			}
			if isList {
				c.list, c.known = list, true
			} else {
				c.reg, c.known = reg, true
			}
		}
	}
}

// checkSource reports a read of a value written by an aborted transaction
// (G1a), an intermediate value of another transaction (G1b), or by no one
// (a dirty initial state). It returns the writer when the read may be
// used for edges.
func (s *iso) checkSource(r read, k int32, v vtok) (int32, bool) {
	tx := &s.txns[r.t]
	w, found := s.writer(k, v)
	if !found {
		if len(s.dirty) < maxAnomalies {
			s.dirty = append(s.dirty, DirtyRead{Key: s.keys[k], Value: s.text(v), OpType: "read", OpID: tx.id, ProcessID: s.procs[tx.proc], Line: tx.line})
		}
		return 0, false
	}
	if w.t == r.t {
		return w.t, true
	}
	wo := &s.txns[w.t]
	if wo.status == aborted {
		s.report(classG1a, Anomaly{Key: s.keys[k], OpIDs: s.opIDs(r.t, w.t), WindowStart: min(tx.inv, wo.inv), WindowEnd: max(tx.end, wo.end),
			Message: fmt.Sprintf("%s read %s of key %q, written by %s, which aborted (%s)", s.describe(r.t), s.text(v), s.keys[k], s.describe(w.t), s.errText[w.t])})
		return 0, false
	}
	if !w.final {
		s.report(classG1b, Anomaly{Key: s.keys[k], OpIDs: s.opIDs(r.t, w.t), WindowStart: min(tx.inv, wo.inv), WindowEnd: max(tx.end, wo.end),
			Message: fmt.Sprintf("%s read %s of key %q, an intermediate value of %s, which wrote the key again later", s.describe(r.t), s.text(v), s.keys[k], s.describe(w.t))})
	}
	return w.t, true
}

// inferList infers a list-append key's version order from its reads: the
// longest read is the order, every other read must be a prefix of it.
func (s *iso) inferList(k int32, rs []read) {
	var one [1]vtok
	var longest []vtok
	var lt int32 = -1
	for _, r := range rs {
		if l := s.view(r, &one); len(l) > len(longest) {
			longest, lt = l, r.t
			if r.li == -2 { // one's array is reused by the next view
				longest = slices.Clone(l)
			}
		}
	}
	seen := make(map[vtok]int, len(longest))
	for i, v := range longest {
		if j, dup := seen[v]; dup {
			s.report(classDuplicate, Anomaly{Key: s.keys[k], OpIDs: s.opIDs(lt), Message: fmt.Sprintf("%s read key %q with %s at positions %d and %d", s.describe(lt), s.keys[k], s.text(v), j, i)})
			return
		}
		seen[v] = i
	}
	for _, r := range rs {
		if s.b.spent() {
			return
		}
		if l := s.view(r, &one); len(l) > len(longest) || !slices.Equal(l, longest[:len(l)]) {
			s.report(classIncompat, Anomaly{Key: s.keys[k], OpIDs: s.opIDs(r.t, lt),
				Message: fmt.Sprintf("key %q: %s read %s and %s read %s: neither is a prefix of the other, so no single order of appends explains both", s.keys[k], s.describe(r.t), s.listString(l), s.describe(lt), s.listString(longest))})
			return
		}
	}
	// Writers along the order; ww between consecutive distinct writers.
	// Every read is a prefix of the order now, so its elements' writers
	// are these: no lookup per element read.
	wr := make([]int32, len(longest))
	var abortedAt []int // positions whose writer aborted
	for i, v := range longest {
		w, found := s.writer(k, v)
		if found && s.txns[w.t].status == aborted {
			abortedAt = append(abortedAt, i)
		}
		if !found || s.txns[w.t].status == aborted {
			wr[i] = -1
			continue
		}
		wr[i] = w.t
		if i > 0 && wr[i-1] >= 0 {
			s.addEdge(wr[i-1], w.t, edgeWW, k)
		}
	}
	for _, r := range rs {
		n := len(s.view(r, &one))
		// An aborted write read before the last element (G1a): reported
		// once per such element, in order, as the last one's source.
		for _, i := range abortedAt {
			if i >= n-1 {
				break
			}
			s.checkSource(r, k, longest[i])
		}
		if n > 0 {
			if w, usable := s.checkSource(r, k, longest[n-1]); usable {
				s.addEdge(w, r.t, edgeWR, k)
			}
		}
		if n < len(longest) && wr[n] >= 0 {
			s.addEdge(r.t, wr[n], edgeRW, k)
		}
	}
	s.lostUpdates(k, rs)
}

// inferRegister infers a register key's version order: the initial state
// (null) precedes every version, and a transaction that read v and then
// wrote the key installed its version right after v.
func (s *iso) inferRegister(k int32, rs []read) {
	// next: version → versions known to follow it directly; hasPrev marks
	// versions with a known non-initial predecessor.
	next := map[vtok][]int32{}
	hasPrev := map[int32]bool{}
	for _, r := range rs {
		tx := &s.txns[r.t]
		for _, m := range s.mops[tx.micro+r.at+1 : tx.micro+tx.n] {
			if m.f == fWrite && m.key == k {
				next[r.val] = append(next[r.val], r.t)
				if r.val != tokNull {
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
		if r.val != tokNull {
			w, usable := s.checkSource(r, k, r.val)
			if !usable {
				continue
			}
			s.addEdge(w, r.t, edgeWR, k)
			for _, u := range next[r.val] {
				s.addEdge(w, u, edgeWW, k)
				s.addEdge(r.t, u, edgeRW, k)
			}
			continue
		}
		for _, u := range roots {
			s.addEdge(r.t, u, edgeRW, k)
		}
	}
	s.lostUpdates(k, rs)
}

// lostUpdates reports two or more committed transactions that read the
// same version of k and both wrote k: one write is lost (P4).
func (s *iso) lostUpdates(k int32, rs []read) {
	var by map[vtok][]int32
	var order []vtok
	for _, r := range rs {
		tx := &s.txns[r.t]
		for _, m := range s.mops[tx.micro+r.at+1 : tx.micro+tx.n] {
			if m.key == k && m.f&^fList != fRead {
				if by == nil {
					by = map[vtok][]int32{}
				}
				v := s.value(r)
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
			s.report(classLostUpdate, Anomaly{Key: s.keys[k], OpIDs: s.opIDs(ts...),
				Message: fmt.Sprintf("key %q: %s all read %s and then wrote the key: all but one write is lost", s.keys[k], strings.Join(names, ", "), s.text(v))})
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
	last := make([]int32, len(s.procs))
	for i := range last {
		last[i] = -1
	}
	idx := make([]int32, 0, len(s.txns))
	for t := range s.txns {
		if s.txns[t].status == committed {
			idx = append(idx, int32(t))
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return s.txns[idx[i]].inv < s.txns[idx[j]].inv })
	for _, t := range idx {
		if s.b.spent() {
			return
		}
		p := s.txns[t].proc
		if prev := last[p]; prev >= 0 {
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
		tx := &s.txns[t]
		if tx.status != committed {
			continue
		}
		evs = append(evs, ev{tx.inv, int32(t), true}, ev{tx.end, int32(t), false})
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
		inv := s.txns[e.t].inv
		kept := frontier[:0]
		for _, f := range frontier {
			if s.txns[f].end >= inv {
				kept = append(kept, f)
			}
		}
		frontier = append(kept, e.t)
	}
}
