package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
)

// Values are compared as compact JSON text: the recorder writes what the
// client saw, and two encodings of the same value from one client library
// are byte-identical, so text equality avoids decoding on the hot path.
func canon(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	for _, c := range raw { // a plain loop: ContainsAny builds a set per call
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			var b bytes.Buffer
			if json.Compact(&b, raw) == nil {
				return b.String()
			}
			break
		}
	}
	return string(raw)
}

// The verb of a linearizability input.
const (
	vWrite byte = iota
	vRead
	vCAS
	vInc
	vAppend
	vAdd
	vEnqueue
	vDequeue
)

var verbNames = [...]string{"write", "read", "cas", "inc", "append", "add", "enqueue", "dequeue"}

// linIn is a porcupine input: the verb and its arguments, decoded once.
type linIn struct {
	verb byte
	a, b string // write value / cas expected,new / element
	n    int64  // inc delta
}

// linOut is a porcupine output; known is false for a timed-out op (may or
// may not have happened) or a success that returned nothing to compare.
type linOut struct {
	known bool
	s     string // read value, dequeued element, log/set contents
	ok    bool   // cas took effect
	n     int64  // counter value, log offset (-1: none)
}

// seqState is the state of every model: the register value, the counter,
// or a sequence (log, set, queue) as elements joined by sep with n elements.
type seqState struct {
	s string
	n int64
}

const sep = "\x00"

// modelDef converts ops and steps a model; one per model family.
type modelDef struct {
	name  string
	verbs map[string]byte
	init  seqState
	step  func(st seqState, in linIn, out linOut) (bool, seqState)
}

var linModels = map[string]*modelDef{
	"register": registerModel("register"),
	"kv":       registerModel("kv"),
	"map":      registerModel("map"),
	"counter": {name: "counter", verbs: map[string]byte{"inc": vInc, "add": vInc, "read": vRead},
		step: func(st seqState, in linIn, out linOut) (bool, seqState) {
			switch in.verb {
			case vInc:
				next := seqState{n: st.n + in.n}
				return !out.known || out.n == next.n, next
			default:
				return out.n == st.n, st
			}
		}},
	"log": {name: "log", verbs: map[string]byte{"append": vAppend, "read": vRead},
		step: func(st seqState, in linIn, out linOut) (bool, seqState) {
			switch in.verb {
			case vAppend:
				if out.known && out.n >= 0 && out.n != st.n {
					return false, st
				}
				return true, seqState{s: st.s + in.a + sep, n: st.n + 1}
			default:
				return out.s == st.s, st
			}
		}},
	"set": {name: "set", verbs: map[string]byte{"add": vAdd, "read": vRead},
		step: func(st seqState, in linIn, out linOut) (bool, seqState) {
			switch in.verb {
			case vAdd:
				return true, setAdd(st, in.a)
			default:
				return out.s == st.s, st
			}
		}},
	"queue": {name: "queue", verbs: map[string]byte{"enqueue": vEnqueue, "dequeue": vDequeue},
		step: func(st seqState, in linIn, out linOut) (bool, seqState) {
			switch in.verb {
			case vEnqueue:
				return true, seqState{s: st.s + in.a + sep, n: st.n + 1}
			default:
				if st.n == 0 {
					return !out.known || out.s == "null", st
				}
				i := strings.Index(st.s, sep)
				head, rest := st.s[:i], seqState{s: st.s[i+1:], n: st.n - 1}
				return !out.known || out.s == head, rest
			}
		}},
}

func registerModel(name string) *modelDef {
	return &modelDef{name: name, init: seqState{s: "null"},
		verbs: map[string]byte{"write": vWrite, "put": vWrite, "read": vRead, "get": vRead, "cas": vCAS},
		step: func(st seqState, in linIn, out linOut) (bool, seqState) {
			switch in.verb {
			case vWrite:
				return true, seqState{s: in.a}
			case vRead:
				return out.s == st.s, st
			default: // cas
				match := st.s == in.a
				if !out.known { // unknown: took effect iff it could have
					if match {
						return true, seqState{s: in.b}
					}
					return true, st
				}
				if out.ok {
					return match, seqState{s: in.b}
				}
				return !match, st
			}
		}}
}

func setAdd(st seqState, v string) seqState {
	var elems []string
	if st.n > 0 {
		elems = strings.Split(strings.TrimSuffix(st.s, sep), sep)
	}
	i, found := slices.BinarySearch(elems, v)
	if found {
		return st
	}
	elems = slices.Insert(elems, i, v)
	return seqState{s: strings.Join(elems, sep) + sep, n: st.n + 1}
}

// normalizeModel maps the plan vocabulary onto the models implemented.
func normalizeModel(m string) string {
	m = strings.ToLower(strings.TrimSpace(m))
	switch m {
	case "list", "append-only", "append-only-list":
		return "log"
	case "fifo", "fifo-queue":
		return "queue"
	}
	return m
}

// ErrModel is what errors.Is finds in an error caused by the named model
// (unknown model, no default checker, an op the model has no operation
// for), as opposed to the checker: a caller can then point at the plan's
// "Model under test" field rather than its "Checker" field.
var ErrModel = errors.New("the named model does not fit")

// modelErr marks an error as ErrModel without changing its text.
type modelErr struct{ error }

func (e modelErr) Unwrap() error      { return e.error }
func (modelErr) Is(target error) bool { return target == ErrModel }

// convert turns one op into a porcupine operation; keep is false for ops
// that constrain nothing (failed ops; reads whose answer never came).
func (m *modelDef) convert(op *history.Op, infinity int64, slab *opSlab) (porcupine.Operation, bool, error) {
	verb, ok := slab.verb(m, op.OpType)
	if !ok {
		return porcupine.Operation{}, false, modelErr{fmt.Errorf("op_type %q is not an operation of model %q (want one of %s)", op.OpType, m.name, strings.Join(m.verbNames(), ", "))}
	}
	if failed(op) {
		return porcupine.Operation{}, false, nil
	}
	known := !unknown(op)
	if !known && verb == vRead {
		return porcupine.Operation{}, false, nil
	}
	in := linIn{verb: verb}
	out := linOut{known: known, n: -1}
	var err error
	switch verb {
	case vWrite, vAppend, vAdd, vEnqueue:
		in.a = canon(op.Input)
	case vCAS:
		var pair []json.RawMessage
		if json.Unmarshal(op.Input, &pair) != nil || len(pair) != 2 {
			return porcupine.Operation{}, false, fmt.Errorf("cas input must be [expected, new], got %s", canon(op.Input))
		}
		in.a, in.b = canon(pair[0]), canon(pair[1])
		if out.known {
			switch canon(op.Output) {
			case "true":
				out.ok = true
			case "false":
			default:
				return porcupine.Operation{}, false, fmt.Errorf("cas output must be true or false, got %s", canon(op.Output))
			}
		}
	case vInc:
		if in.n, err = intValue(op.Input, 1); err != nil {
			return porcupine.Operation{}, false, fmt.Errorf("inc input: %v", err)
		}
		if op.Output == nil {
			out.known = false
		} else if out.n, err = intValue(op.Output, 0); err != nil {
			return porcupine.Operation{}, false, fmt.Errorf("inc output: %v", err)
		}
	case vRead:
		switch m.name {
		case "counter":
			if out.n, err = intValue(op.Output, 0); err != nil {
				return porcupine.Operation{}, false, fmt.Errorf("counter read output: %v", err)
			}
		case "log", "set":
			if out.s, err = seqValue(op.Output, m.name == "set"); err != nil {
				return porcupine.Operation{}, false, fmt.Errorf("%s read output: %v", m.name, err)
			}
		default:
			out.s = canon(op.Output)
		}
	case vDequeue:
		out.s = canon(op.Output)
	}
	if verb == vAppend && out.known && op.Output != nil {
		if out.n, err = intValue(op.Output, 0); err != nil {
			return porcupine.Operation{}, false, fmt.Errorf("append output must be null or the offset: %v", err)
		}
	}
	ret := infinity
	if known {
		ret = *op.CompleteTS
	}
	pin, pout := slab.put(in, out)
	return porcupine.Operation{Input: pin, Output: pout, Call: op.InvokeTS, Return: ret}, true, nil
}

// opSlab hands out inputs and outputs from blocks, so porcupine's
// interface fields hold pointers (no allocation per op) instead of boxed
// structs (two per op). An op's input and output sit side by side: a step
// reads both, and one block per 1024 ops is half the allocations of two.
type opSlab struct {
	pairs []linPair
	// The last two op types looked up, and their verbs: a history has a
	// few op types, and a map lookup per op was a tenth of converting.
	types [2]string
	verbs [2]byte
	oks   [2]bool
	n     int
}

// verb is m.verbs[opType], remembered for the next ops.
func (s *opSlab) verb(m *modelDef, opType string) (byte, bool) {
	if s == nil {
		v, ok := m.verbs[opType]
		return v, ok
	}
	for i := range min(s.n, 2) {
		if s.types[i] == opType {
			return s.verbs[i], s.oks[i]
		}
	}
	v, ok := m.verbs[opType]
	i := s.n % 2
	s.types[i], s.verbs[i], s.oks[i] = opType, v, ok
	s.n++
	return v, ok
}

type linPair struct {
	in  linIn
	out linOut
}

func (s *opSlab) put(in linIn, out linOut) (*linIn, *linOut) {
	if len(s.pairs) == cap(s.pairs) {
		s.pairs = make([]linPair, 0, 1024)
	}
	s.pairs = append(s.pairs, linPair{in, out})
	p := &s.pairs[len(s.pairs)-1]
	return &p.in, &p.out
}

func (m *modelDef) verbNames() []string {
	var v []string
	for k := range m.verbs {
		v = append(v, k)
	}
	slices.Sort(v)
	return v
}

func intValue(raw json.RawMessage, def int64) (int64, error) {
	if len(raw) == 0 {
		return def, nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %s", canon(raw))
	}
	return n, nil
}

// seqValue encodes a read of a log (in order) or set (sorted, deduplicated)
// the way the model state holds it.
func seqValue(raw json.RawMessage, sorted bool) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	s, isArr := elements(raw)
	if !isArr {
		return "", fmt.Errorf("want a JSON array, got %.40s", string(raw))
	}
	if sorted {
		slices.Sort(s)
		s = slices.Compact(s)
	}
	if len(s) == 0 {
		return "", nil
	}
	return strings.Join(s, sep) + sep, nil
}

// porcupineModel wraps a modelDef for porcupine. abort is polled in
// StepContext so a cancelled context stops the search promptly: once it
// fires every step fails, porcupine unwinds, and the caller reports
// Unknown regardless of porcupine's answer.
func (m *modelDef) porcupineModel(abort func() bool) porcupine.Model {
	step := func(state, input, output any) (bool, any) {
		cur := state.(seqState)
		ok, next := m.step(cur, *input.(*linIn), *output.(*linOut))
		if next == cur {
			// Reads leave the state as it was: handing back the same
			// interface saves boxing a copy on every step.
			return ok, state
		}
		return ok, next
	}
	pm := porcupine.Model{
		Init: func() any { return m.init },
		Step: step,
		Hash: func(state any) uint64 {
			st := state.(seqState)
			h := uint64(14695981039346656037) // FNV-1a, inline: no allocation per call
			for i := 0; i < len(st.s); i++ {
				h ^= uint64(st.s[i])
				h *= 1099511628211
			}
			return h ^ uint64(st.n)
		},
		DescribeOperation: describeOp,
		DescribeState: func(state any) string {
			st := state.(seqState)
			if m.name == "counter" {
				return strconv.FormatInt(st.n, 10)
			}
			if m.init.s == "null" {
				return st.s
			}
			return showSeq(st.s)
		},
	}
	if abort != nil {
		pm.StepContext = func(_ context.Context, state, input, output any) (bool, any) {
			if abort() {
				return false, state
			}
			return step(state, input, output)
		}
		pm.Step = nil
	}
	return pm
}

func describeOp(input, output any) string {
	in, out := *input.(*linIn), *output.(*linOut)
	var args string
	switch in.verb {
	case vCAS:
		args = in.a + ", " + in.b
	case vInc:
		args = strconv.FormatInt(in.n, 10)
	case vRead, vDequeue:
	default:
		args = in.a
	}
	res := "?"
	if out.known {
		switch in.verb {
		case vCAS:
			res = strconv.FormatBool(out.ok)
		case vInc:
			res = strconv.FormatInt(out.n, 10)
		case vRead:
			if out.n >= 0 && out.s == "" {
				res = strconv.FormatInt(out.n, 10)
			} else {
				res = out.s
				if strings.Contains(out.s, sep) {
					res = showSeq(out.s)
				}
			}
		case vDequeue:
			res = out.s
		default:
			res = "ok"
		}
	}
	return fmt.Sprintf("%s(%s) -> %s", verbNames[in.verb], args, res)
}

// showSeq renders a sequence state or read ("a\x00b\x00") as "[a, b]".
func showSeq(s string) string {
	return "[" + strings.ReplaceAll(strings.TrimSuffix(s, sep), sep, ", ") + "]"
}
