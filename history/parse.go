package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The op decoder is hand-written because histories run to millions of lines
// and encoding/json's reflection dominated the analyze time in the
// benchmark; it also lets us tell a missing column from a null one, which
// docs/history-and-checkers.md §2 distinguishes (columns are never omitted).

const (
	colOpID = 1 << iota
	colProcessID
	colInvokeTS
	colCompleteTS
	colOpType
	colKey
	colInput
	colOutput
	colError
	colTimeoutMarker
	colNodeSeen
	colFaultEpoch
	colAll = 1<<iota - 1
)

var colNames = [...]string{"op_id", "process_id", "invoke_ts", "complete_ts", "op_type", "key",
	"input", "output", "error", "timeout_marker", "node_seen", "fault_epoch"}

const maxDepth = 256

type parser struct {
	b      []byte
	i      int
	intern *interner
	unique bool // the next string is not worth interning
	col    int  // the column being read (its bit), for the intern cache
	slab   *[]int64
}

func parseOp(line []byte, intern *interner, slab *[]int64, copyLine bool) (Op, error) {
	// Input and output keep slices of the line: own the bytes when the
	// caller reuses its buffer.
	buf := line
	if copyLine {
		buf = make([]byte, len(line))
		copy(buf, line)
	}
	if op, ok := parseCanonical(buf, intern, slab); ok {
		return op, nil
	}
	return parseAny(buf, intern, slab)
}

// parseCanonical reads a line laid out the way AppendJSON writes it (and
// history.Recorder, and most recorders following docs/history-and-checkers.md
// §2): every column in schema order, no space between tokens. Matching
// each `,"name":` as one literal spares the name scan and lookup of
// parseAny, which was most of the read time. Each value goes through the
// same checks as in parseAny. ok is false at the first difference from
// that layout, valid or not, and parseAny then reads the line from the
// start: what it accepts and every error it gives stay its own.
func parseCanonical(b []byte, intern *interner, slab *[]int64) (op Op, ok bool) {
	p := parser{b: b, intern: intern, slab: slab}
	var err error
	if !p.lit(`{"op_id":`) {
		return op, false
	}
	p.unique = true
	op.OpID, err = p.reqStr("op_id")
	p.unique = false
	if err != nil || !p.lit(`,"process_id":`) {
		return op, false
	}
	p.col = colProcessID
	if op.ProcessID, err = p.reqStr("process_id"); err != nil || !p.lit(`,"invoke_ts":`) {
		return op, false
	}
	if op.InvokeTS, err = p.intVal("invoke_ts"); err != nil || !p.lit(`,"complete_ts":`) {
		return op, false
	}
	if op.CompleteTS, err = p.int("complete_ts"); err != nil || !p.lit(`,"op_type":`) {
		return op, false
	}
	p.col = colOpType
	if op.OpType, err = p.reqStr("op_type"); err != nil || !p.lit(`,"key":`) {
		return op, false
	}
	p.col = colKey
	if op.Key, err = p.optStr("key"); err != nil || !p.lit(`,"input":`) {
		return op, false
	}
	if op.Input, err = p.raw(); err != nil || !p.lit(`,"output":`) {
		return op, false
	}
	if op.Output, err = p.raw(); err != nil || !p.lit(`,"error":`) {
		return op, false
	}
	p.col = colError
	if op.Error, err = p.optStr("error"); err != nil || !p.lit(`,"timeout_marker":`) {
		return op, false
	}
	switch {
	case p.lit("true"):
		op.TimeoutMarker = true
	case p.lit("false"):
	default:
		return op, false
	}
	if !p.lit(`,"node_seen":`) {
		return op, false
	}
	p.col = colNodeSeen
	if op.NodeSeen, err = p.optStr("node_seen"); err != nil || !p.lit(`,"fault_epoch":`) {
		return op, false
	}
	p.col = colFaultEpoch
	if op.FaultEpoch, err = p.optStr("fault_epoch"); err != nil || !p.eat('}') {
		return op, false
	}
	p.ws()
	return op, p.i == len(p.b)
}

// parseAny reads an op line with its columns in any order and any JSON
// whitespace, and names what is wrong with one that is not an op.
func parseAny(buf []byte, intern *interner, slab *[]int64) (Op, error) {
	p := parser{b: buf, intern: intern, slab: slab}
	var op Op
	seen := 0
	p.ws()
	if !p.eat('{') {
		return op, p.errf("want a JSON object")
	}
	p.ws()
	if p.eat('}') {
		return op, errors.New("empty object: missing every column")
	}
	for {
		p.ws()
		keyEnd, esc, err := p.strEnd()
		if err != nil {
			return op, err
		}
		rawName := p.b[p.i+1 : keyEnd-1]
		if esc {
			unq, err := p.unescape(p.i, keyEnd)
			if err != nil {
				return op, err
			}
			rawName = []byte(unq)
		}
		p.i = keyEnd
		p.ws()
		if !p.eat(':') {
			return op, p.errf("want ':' after %q", rawName)
		}
		p.ws()
		col := colOf(rawName)
		name := ""
		if col != 0 {
			name = colNames[bits.TrailingZeros(uint(col))]
		}
		if col != 0 && seen&col != 0 {
			return op, fmt.Errorf("column %q appears twice", name)
		}
		seen |= col
		p.col = col
		switch col {
		case colOpID:
			// op ids are unique: interning them would only fill the
			// table and crowd out the repeated values.
			p.unique = true
			op.OpID, err = p.reqStr(name)
			p.unique = false
		case colProcessID:
			op.ProcessID, err = p.reqStr(name)
		case colOpType:
			op.OpType, err = p.reqStr(name)
		case colKey:
			op.Key, err = p.optStr(name)
		case colError:
			op.Error, err = p.optStr(name)
		case colNodeSeen:
			op.NodeSeen, err = p.optStr(name)
		case colFaultEpoch:
			op.FaultEpoch, err = p.optStr(name)
		case colInvokeTS:
			op.InvokeTS, err = p.intVal(name)
		case colCompleteTS:
			op.CompleteTS, err = p.int(name)
		case colInput:
			op.Input, err = p.raw()
		case colOutput:
			op.Output, err = p.raw()
		case colTimeoutMarker:
			switch {
			case p.lit("true"):
				op.TimeoutMarker = true
			case p.lit("false"):
			default:
				err = p.errf("%s: want true or false", name)
			}
		default:
			_, err = p.raw() // unknown column: tolerated for forward compatibility
		}
		if err != nil {
			return op, err
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return op, p.errf("want ',' or '}'")
	}
	p.ws()
	if p.i != len(p.b) {
		return op, p.errf("trailing data after the object")
	}
	if seen != colAll {
		for c, n := range colNames {
			if seen&(1<<c) == 0 {
				return op, fmt.Errorf("missing column %q (columns are never omitted; use null)", n)
			}
		}
	}
	return op, nil
}

// colOf maps a column name to its bit without allocating (the switch on
// string(b) does not copy).
func colOf(b []byte) int {
	switch string(b) {
	case "op_id":
		return colOpID
	case "process_id":
		return colProcessID
	case "invoke_ts":
		return colInvokeTS
	case "complete_ts":
		return colCompleteTS
	case "op_type":
		return colOpType
	case "key":
		return colKey
	case "input":
		return colInput
	case "output":
		return colOutput
	case "error":
		return colError
	case "timeout_marker":
		return colTimeoutMarker
	case "node_seen":
		return colNodeSeen
	case "fault_epoch":
		return colFaultEpoch
	}
	return 0
}

// interner shares one string per distinct value of the repeated columns
// (process, op type, key, node…). A direct-mapped cache in front of the
// map answers most lookups with one hash of a few bytes and one compare,
// cheaper than the map's; the map keeps every value once the cache
// slot is taken by another.
type interner struct {
	m     map[string]string
	cache [1024]string
	// last is the last value of each column: node_seen is often one
	// value throughout, op_type one of two.
	last [16]string
}

func newInterner() *interner { return &interner{m: make(map[string]string)} }

func (in *interner) get(b []byte, col int) string {
	c := &in.last[bits.TrailingZeros(uint(col))%len(in.last)]
	if *c == string(b) && len(b) > 0 {
		return *c
	}
	s := in.lookup(b)
	*c = s
	return s
}

func (in *interner) lookup(b []byte) string {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &in.cache[h%uint32(len(in.cache))]
	if *slot == string(b) && len(b) > 0 {
		return *slot
	}
	s, ok := in.m[string(b)]
	if !ok {
		s = string(b)
		if len(in.m) < 1<<16 {
			in.m[s] = s
		}
	}
	*slot = s
	return s
}

// unescape decodes the quoted string at p.b[start:end] the slow way, for
// the rare string with escapes or invalid UTF-8.
func (p *parser) unescape(start, end int) (string, error) {
	var s string
	if err := json.Unmarshal(p.b[start:end], &s); err != nil {
		return "", fmt.Errorf("col %d: bad string: %v", start+1, err)
	}
	return s, nil
}

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("col %d: %s", p.i+1, fmt.Sprintf(format, a...))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) ws() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// strEnd returns the index just past the closing quote of the string that
// starts at p.i, and whether it contains escapes.
func (p *parser) strEnd() (int, bool, error) {
	end, esc, _, err := p.strScan()
	return end, esc, err
}

// strScan is strEnd that also reports whether every byte is ASCII (then
// the string is valid UTF-8 without a second pass). One test covers the
// common byte: nothing to stop at is a printable ASCII byte other than
// the quote and the backslash.
func (p *parser) strScan() (end int, esc, ascii bool, err error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, false, false, p.errf("want a string")
	}
	ascii = true
	for j := p.i + 1; j < len(p.b); j++ {
		c := p.b[j]
		if c >= 0x20 && c < 0x80 && c != '"' && c != '\\' {
			continue
		}
		switch {
		case c == '"':
			return j + 1, esc, ascii, nil
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return 0, false, false, p.errf("control character in string")
		default:
			ascii = false
		}
	}
	return 0, false, false, p.errf("unterminated string")
}

func (p *parser) str() (string, error) {
	end, esc, ascii, err := p.strScan()
	if err != nil {
		return "", err
	}
	body := p.b[p.i+1 : end-1]
	start := p.i
	p.i = end
	if !esc && (ascii || utf8.Valid(body)) {
		if p.unique {
			return string(body), nil
		}
		return p.intern.get(body, p.col), nil
	}
	return p.unescape(start, end)
}

func (p *parser) reqStr(name string) (string, error) {
	if p.lit("null") {
		return "", fmt.Errorf("%s: null not allowed", name)
	}
	s, err := p.str()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if s == "" {
		return "", fmt.Errorf("%s: empty", name)
	}
	return s, nil
}

func (p *parser) optStr(name string) (string, error) {
	if p.lit("null") {
		return "", nil
	}
	s, err := p.str()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// intVal reads a column that must hold an integer (null not allowed).
func (p *parser) intVal(name string) (int64, error) {
	if p.lit("null") {
		return 0, fmt.Errorf("%s: null not allowed", name)
	}
	return p.intText(name)
}

// intText reads the integer at p.i: an optional minus and digits, as
// strconv.ParseInt takes them; a fraction or exponent is an error.
func (p *parser) intText(name string) (int64, error) {
	j := p.i
	neg := j < len(p.b) && p.b[j] == '-'
	if neg {
		j++
	}
	var v uint64
	digits := 0
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		v = v*10 + uint64(p.b[j]-'0')
		j++
		digits++
	}
	if j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E') || digits == 0 {
		return 0, p.errf("%s: want an integer (ns)", name)
	}
	if digits > 18 { // may not fit: let strconv judge the range
		n, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
		if err != nil {
			return 0, p.errf("%s: want an integer (ns)", name)
		}
		p.i = j
		return n, nil
	}
	p.i = j
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

func (p *parser) int(name string) (*int64, error) {
	if p.lit("null") {
		return nil, nil
	}
	v, err := p.intText(name)
	if err != nil {
		return nil, err
	}
	// Hand out timestamps from a block: one allocation per 1024 ops
	// instead of one per op.
	if p.slab == nil {
		return &v, nil
	}
	if len(*p.slab) == cap(*p.slab) {
		*p.slab = make([]int64, 0, 1024)
	}
	*p.slab = append(*p.slab, v)
	return &(*p.slab)[len(*p.slab)-1], nil
}

// raw returns the JSON value at p.i (nil for null) after checking its
// syntax, so a garbled input/output is caught at read time.
func (p *parser) raw() (json.RawMessage, error) {
	if p.lit("null") {
		return nil, nil
	}
	start := p.i
	if err := p.skip(0); err != nil {
		return nil, err
	}
	return json.RawMessage(p.b[start:p.i:p.i]), nil
}

func (p *parser) skip(depth int) error {
	if depth > maxDepth {
		return p.errf("nesting deeper than %d", maxDepth)
	}
	if p.i >= len(p.b) {
		return p.errf("unexpected end of line")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		end, esc, err := p.strEnd()
		if err != nil {
			return err
		}
		if esc {
			if _, err := p.unescape(p.i, end); err != nil {
				return err
			}
		}
		p.i = end
		return nil
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p.i++
		p.ws()
		if p.eat(closer) {
			return nil
		}
		for {
			p.ws()
			if c == '{' {
				if _, _, err := p.strEnd(); err != nil {
					return err
				}
				if err := p.skip(depth + 1); err != nil {
					return err
				}
				p.ws()
				if !p.eat(':') {
					return p.errf("want ':'")
				}
				p.ws()
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(closer) {
				return nil
			}
			return p.errf("want ',' or '%c'", closer)
		}
	case c == 't':
		if p.lit("true") {
			return nil
		}
	case c == 'f':
		if p.lit("false") {
			return nil
		}
	case c == 'n':
		if p.lit("null") {
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return p.errf("invalid JSON value")
}

func (p *parser) number() error {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return p.errf("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return p.errf("bad number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return p.errf("bad number")
		}
	}
	p.i = i
	return nil
}
