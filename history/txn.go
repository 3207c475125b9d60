package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// OpTxn is the op_type of a transaction (docs/history-and-checkers.md
// §2.5): input lists its micro-ops, output the same micro-ops with the
// reads' results filled in.
const OpTxn = "txn"

// Micro-op functions of a transaction.
const (
	MicroRead   = "r"
	MicroWrite  = "w"
	MicroAppend = "append"
)

// maxMicroOps bounds one transaction, so a garbled line cannot make a
// checker build a graph of millions of micro-ops from one record.
const maxMicroOps = 4096

// MicroOp is one step of a transaction, written as the JSON triple
// [f, key, value]. Value is the written value for w and append; for r it
// is null in input and the value read in output (a list for a list-append
// key, a scalar or null — the initial state — for a register). Key is a
// JSON string or integer in the file; integer keys are kept as their
// decimal text.
type MicroOp struct {
	F     string
	Key   string
	Value json.RawMessage
	// List is a read result that is a list, as its elements' JSON text
	// (set by ParseTxn; nil otherwise). Checkers compare these.
	List []string
}

// MarshalJSON writes the triple [f, key, value].
func (m MicroOp) MarshalJSON() ([]byte, error) {
	v := m.Value
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	k, err := json.Marshal(m.Key)
	if err != nil {
		return nil, err
	}
	f, err := json.Marshal(m.F)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(f)+len(k)+len(v)+4)
	out = append(append(append(append(append(append(out, '['), f...), ','), k...), ','), v...)
	return append(out, ']'), nil
}

// ParseTxn decodes a txn op's micro-ops (docs/history-and-checkers.md
// §2.5). For an op that completed ok the result comes from output, whose
// steps must repeat input's f, key and written values and carry the reads'
// results; otherwise (failed or unknown) it comes from input, reads
// without a value. The error has no position: Validate and the checkers
// put the op's file:line on it.
func ParseTxn(op *Op) ([]MicroOp, error) {
	in, err := parseMicro(op.Input, "input", false)
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, errors.New("txn input: want a non-empty list of [f, key, value] micro-ops")
	}
	for i, m := range in {
		if m.F == MicroRead && m.Value != nil {
			return nil, fmt.Errorf("txn input[%d]: a read's value is null in input (its result goes in output)", i)
		}
	}
	if op.Output == nil {
		if op.Error == "" && !op.TimeoutMarker && op.CompleteTS != nil {
			return nil, errors.New("txn output: null for a transaction that completed ok (want the micro-ops with the reads' results)")
		}
		return in, nil
	}
	if op.Error != "" {
		return nil, errors.New("txn has both error and output (an aborted transaction read nothing)")
	}
	out, err := parseMicro(op.Output, "output", true)
	if err != nil {
		return nil, err
	}
	if len(out) != len(in) {
		return nil, fmt.Errorf("txn output has %d micro-ops, input %d (want the same steps)", len(out), len(in))
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.F != b.F || a.Key != b.Key {
			return nil, fmt.Errorf("txn output[%d] is [%s %s], input[%d] [%s %s] (want the same steps)", i, b.F, b.Key, i, a.F, a.Key)
		}
		if a.F != MicroRead && !bytes.Equal(compact(a.Value), compact(b.Value)) {
			return nil, fmt.Errorf("txn output[%d]: %s of %s, input writes %s", i, a.F, b.Value, a.Value)
		}
	}
	return out, nil
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// parseMicro decodes a list of [f, key, value] triples; side names the
// column in errors. Values are checked: w and append write a non-null
// scalar; a read's result (output only) is null, a scalar or a list of
// scalars.
func parseMicro(raw json.RawMessage, side string, output bool) ([]MicroOp, error) {
	if raw == nil {
		return nil, fmt.Errorf("txn %s: null (want a list of [f, key, value] micro-ops)", side)
	}
	steps, ok := splitList(raw)
	if !ok {
		return nil, fmt.Errorf("txn %s: want a list of [f, key, value] micro-ops", side)
	}
	if len(steps) > maxMicroOps {
		return nil, fmt.Errorf("txn %s: %d micro-ops, more than %d", side, len(steps), maxMicroOps)
	}
	ms := make([]MicroOp, len(steps))
	for i, s := range steps {
		parts, ok := splitList(s)
		if !ok || len(parts) != 3 {
			return nil, fmt.Errorf("txn %s[%d]: want [f, key, value], got %s", side, i, s)
		}
		var m MicroOp
		switch string(parts[0]) { // the common spellings without a decode
		case `"r"`:
			m.F = MicroRead
		case `"w"`:
			m.F = MicroWrite
		case `"append"`:
			m.F = MicroAppend
		default:
			if err := json.Unmarshal(parts[0], &m.F); err != nil {
				return nil, fmt.Errorf("txn %s[%d]: f must be \"r\", \"w\" or \"append\"", side, i)
			}
		}
		switch m.F {
		case MicroRead, MicroWrite, MicroAppend:
		default:
			return nil, fmt.Errorf("txn %s[%d]: f %q: want \"r\", \"w\" or \"append\"", side, i, m.F)
		}
		key, err := microKey(parts[1])
		if err != nil {
			return nil, fmt.Errorf("txn %s[%d]: %v", side, i, err)
		}
		m.Key = key
		v := parts[2]
		null := string(v) == "null"
		switch {
		case m.F != MicroRead && null:
			return nil, fmt.Errorf("txn %s[%d]: %s of null (a write needs a value)", side, i, m.F)
		case m.F != MicroRead && !scalar(v):
			return nil, fmt.Errorf("txn %s[%d]: %s value must be a string or number, got %s", side, i, m.F, v)
		case m.F == MicroRead && output && !null && !scalar(v):
			list, ok := scalarList(v)
			if !ok {
				return nil, fmt.Errorf("txn %s[%d]: read result must be null, a scalar or a list of scalars, got %s", side, i, v)
			}
			m.List = list
		}
		if !null {
			m.Value = v
		}
		ms[i] = m
	}
	return ms, nil
}

func microKey(raw json.RawMessage) (string, error) {
	if n := len(raw); n > 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 {
		return string(raw[1 : n-1]), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return "", errors.New("key is empty")
		}
		return s, nil
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return strconv.FormatInt(n, 10), nil
	}
	return "", fmt.Errorf("key must be a string or an integer, got %s", raw)
}

func scalar(v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// splitList splits a JSON array into its top-level elements (slices of
// v), tracking brackets and strings only: the syntax was checked when the
// line was read. ok is false for anything but an array.
func splitList(v json.RawMessage) ([]json.RawMessage, bool) {
	i := 0
	for i < len(v) && isSpace(v[i]) {
		i++
	}
	if i >= len(v) || v[i] != '[' {
		return nil, false
	}
	i++
	var out []json.RawMessage
	depth, start, inStr, seen := 0, i, false, false
	for ; i < len(v); i++ {
		c := v[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr, seen = true, true
		case '[', '{':
			depth++
			seen = true
		case '}':
			depth--
		case ']':
			if depth == 0 {
				if seen {
					out = append(out, bytes.TrimSpace(v[start:i]))
				}
				for i++; i < len(v) && isSpace(v[i]); i++ {
				}
				return out, i == len(v)
			}
			depth--
		case ',':
			if depth == 0 {
				out = append(out, bytes.TrimSpace(v[start:i]))
				start = i + 1
			}
		default:
			if !isSpace(c) {
				seen = true
			}
		}
	}
	return nil, false
}

// scalarList splits a JSON list of scalars into its elements' text. The
// history reader has checked the syntax already, so this only walks
// tokens: list reads grow with the history, and encoding/json was most of
// a list-append check's time. A string with escapes is decoded the slow
// way and re-encoded, so equal strings compare equal.
func scalarList(v json.RawMessage) ([]string, bool) {
	i := 0
	ws := func() {
		for i < len(v) && isSpace(v[i]) {
			i++
		}
	}
	ws()
	if i >= len(v) || v[i] != '[' {
		return nil, false
	}
	i++
	ws()
	out := []string{}
	if i < len(v) && v[i] == ']' {
		return out, true
	}
	for i < len(v) {
		start := i
		switch c := v[i]; {
		case c == '"':
			esc := false
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					esc = true
					i++
				}
			}
			if i >= len(v) {
				return nil, false
			}
			i++
			tok := string(v[start:i])
			if esc {
				var s string
				if json.Unmarshal(v[start:i], &s) != nil {
					return nil, false
				}
				b, _ := json.Marshal(s)
				tok = string(b)
			}
			out = append(out, tok)
		case c == '-' || c >= '0' && c <= '9':
			for i < len(v) && v[i] != ',' && v[i] != ']' && !isSpace(v[i]) {
				i++
			}
			out = append(out, string(v[start:i]))
		default:
			return nil, false
		}
		ws()
		if i < len(v) && v[i] == ',' {
			i++
			ws()
			continue
		}
		if i < len(v) && v[i] == ']' {
			return out, true
		}
		return nil, false
	}
	return nil, false
}

// InvokeTxn stamps the invoke time of a transaction by process: micro are
// its steps, reads with a nil Value. Record the outcome with OkTxn, Fail
// (aborted: it took no effect) or Timeout (it may have committed).
func (r *Recorder) InvokeTxn(process string, micro []MicroOp) *Pending {
	in := make([]MicroOp, len(micro))
	copy(in, micro)
	return r.Invoke(process, OpTxn, "", in)
}

// OkTxn records a committed transaction: done repeats the steps given to
// InvokeTxn with each read's result in Value (nil for the initial state of
// a register).
func (p *Pending) OkTxn(done []MicroOp) error {
	out := make([]MicroOp, len(done))
	copy(out, done)
	return p.Ok(out)
}
