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
	intern map[string]string
	unique bool // the next string is not worth interning
	slab   *[]int64
}

func parseOp(line []byte, intern map[string]string, slab *[]int64, copyLine bool) (Op, error) {
	// Input and output keep slices of the line: own the bytes when the
	// caller reuses its buffer.
	buf := line
	if copyLine {
		buf = make([]byte, len(line))
		copy(buf, line)
	}
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
			var v *int64
			v, err = p.int(name)
			if err == nil && v == nil {
				err = fmt.Errorf("%s: null not allowed", name)
			}
			if v != nil {
				op.InvokeTS = *v
			}
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
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, false, p.errf("want a string")
	}
	esc := false
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			return j + 1, esc, nil
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return 0, false, p.errf("control character in string")
		}
	}
	return 0, false, p.errf("unterminated string")
}

func (p *parser) str() (string, error) {
	end, esc, err := p.strEnd()
	if err != nil {
		return "", err
	}
	body := p.b[p.i+1 : end-1]
	start := p.i
	p.i = end
	if !esc && utf8.Valid(body) {
		if p.unique {
			return string(body), nil
		}
		if s, ok := p.intern[string(body)]; ok {
			return s, nil
		}
		s := string(body)
		if len(p.intern) < 1<<16 {
			p.intern[s] = s
		}
		return s, nil
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

func (p *parser) int(name string) (*int64, error) {
	if p.lit("null") {
		return nil, nil
	}
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	if j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E') {
		return nil, p.errf("%s: want an integer (ns)", name)
	}
	v, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	if err != nil {
		return nil, p.errf("%s: want an integer (ns)", name)
	}
	p.i = j
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
