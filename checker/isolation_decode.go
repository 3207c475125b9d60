package checker

import (
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/dstgen/dstgen/history"
)

// The isolation checker holds a history's values as 32-bit tokens, not
// strings: a list-append history of a million transactions reads tens of
// millions of list elements, and a string each (and a map lookup each)
// was most of the check's time and memory. A canonical decimal integer
// (no sign, no leading zero) below 2^31 is its own token; any other value
// is interned by its text, the text the string-based checker compared
// (canon of the JSON value; a list element as history.ParseTxn gives it),
// so two values are one token exactly when those texts are equal.

// vtok is a value token.
type vtok uint32

const (
	tokText   vtok = 1 << 31 // | index into iso.texts (or, in a decoder, its pending texts)
	tokNull   vtok = ^vtok(0)
	maxIntTok      = 1<<31 - 1
)

// intToken is the token of text when text is a canonical decimal that
// fits one.
func intToken(text []byte) (vtok, bool) {
	if len(text) == 0 || len(text) > 10 || len(text) > 1 && text[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > maxIntTok {
		return 0, false
	}
	return vtok(n), true
}

// Micro-op functions, and the flag of a read whose value is a list (its
// val is then the list's index).
const (
	fRead uint8 = iota
	fWrite
	fAppend
	fList = 1 << 7
)

func microF(f uint8) string {
	switch f &^ fList {
	case fWrite:
		return history.MicroWrite
	case fAppend:
		return history.MicroAppend
	}
	return history.MicroRead
}

// dmop is a micro-op as a decoder leaves it: its key still as bytes, a
// text value or list still the decoder's.
type dmop struct {
	key []byte
	val vtok
	f   uint8
}

// dlist is a decoded list: its elements in the decoder's elems, and, when
// its JSON text is not the elements' texts joined by commas (it had
// spaces or escapes), that text (a pending text token; tokNull: none).
type dlist struct {
	off, n int32
	text   vtok
}

// dtxn is one decoded op: its micro-ops in the decoder's mops, or the
// reason it is not a transaction the checker can read.
type dtxn struct {
	off, n int32
	err    error
}

// txnDecoder decodes the transactions of a batch of ops. It owns the
// bytes it hands on only until the batch is loaded (keys alias the ops'
// input).
type txnDecoder struct {
	txns  []dtxn
	mops  []dmop
	elems []vtok
	lists []dlist
	texts []string
}

func (d *txnDecoder) reset() {
	d.txns, d.mops, d.elems, d.lists, d.texts = d.txns[:0], d.mops[:0], d.elems[:0], d.lists[:0], d.texts[:0]
}

func (d *txnDecoder) text(t string) vtok {
	d.texts = append(d.texts, t)
	return tokText | vtok(len(d.texts)-1)
}

func (d *txnDecoder) token(text []byte) vtok {
	if v, ok := intToken(text); ok {
		return v
	}
	return d.text(string(text))
}

// decode appends op's decoded transaction: the micro-ops history.ParseTxn
// returns for it, or its error. Most transactions take the fast path;
// anything it does not expect goes through history.ParseTxn itself, so
// both what is accepted and every error are ParseTxn's.
func (d *txnDecoder) decode(op *history.Op) {
	if op.OpType != history.OpTxn {
		d.txns = append(d.txns, dtxn{err: errNotTxn})
		return
	}
	m0, e0, l0, t0 := len(d.mops), len(d.elems), len(d.lists), len(d.texts)
	if d.fast(op) {
		d.txns = append(d.txns, dtxn{off: int32(m0), n: int32(len(d.mops) - m0)})
		return
	}
	d.mops, d.elems, d.lists, d.texts = d.mops[:m0], d.elems[:e0], d.lists[:l0], d.texts[:t0]
	ms, err := history.ParseTxn(op)
	if err != nil {
		d.txns = append(d.txns, dtxn{err: err})
		return
	}
	for _, m := range ms {
		x := dmop{key: []byte(m.Key), val: tokNull}
		switch m.F {
		case history.MicroWrite:
			x.f = fWrite
		case history.MicroAppend:
			x.f = fAppend
		}
		switch {
		case m.List != nil:
			off := len(d.elems)
			for _, e := range m.List {
				d.elems = append(d.elems, d.token([]byte(e)))
			}
			d.lists = append(d.lists, dlist{off: int32(off), n: int32(len(m.List)), text: d.text(canon(m.Value))})
			x.f, x.val = fRead|fList, vtok(len(d.lists)-1)
		case m.Value != nil:
			x.val = d.token([]byte(canon(m.Value)))
		}
		d.mops = append(d.mops, x)
	}
	d.txns = append(d.txns, dtxn{off: int32(m0), n: int32(len(d.mops) - m0)})
}

// errNotTxn marks an op that is not a transaction (load words the error).
const errNotTxn = errorString("not a txn")

type errorString string

func (e errorString) Error() string { return string(e) }

// fast decodes a transaction written compactly (no spaces, no escapes),
// as recorders write them; false sends it to history.ParseTxn.
func (d *txnDecoder) fast(op *history.Op) bool {
	start := len(d.mops)
	if !d.side(op.Input, false, start) || len(d.mops) == start || len(d.mops)-start > maxMicro {
		return false
	}
	n := len(d.mops) - start
	if op.Output == nil {
		// Failed or unknown: the input's steps; a transaction that
		// completed ok without an output is ParseTxn's error.
		return op.Error != "" || op.TimeoutMarker || op.CompleteTS == nil
	}
	if op.Error != "" {
		return false
	}
	// The output repeats the input's steps with the reads' results: decode
	// it after the input's and keep it in the input's place.
	if !d.side(op.Output, true, start) || len(d.mops)-start != 2*n {
		return false
	}
	in, out := d.mops[start:start+n], d.mops[start+n:]
	for i := range in {
		a, b := &in[i], &out[i]
		if a.f != b.f&^fList || string(a.key) != string(b.key) || a.f != fRead && !d.sameValue(a.val, b.val) {
			return false
		}
	}
	copy(in, out)
	d.mops = d.mops[:start+n]
	return true
}

// maxMicro mirrors history's bound on one transaction's micro-ops.
const maxMicro = 4096

// sameValue compares two written values' texts as ParseTxn does (compact
// JSON: on this path the texts are compact already).
func (d *txnDecoder) sameValue(a, b vtok) bool {
	if a&tokText == 0 || b&tokText == 0 || a == tokNull || b == tokNull {
		return a == b
	}
	return d.texts[a&^tokText] == d.texts[b&^tokText]
}

// side decodes one compact list of [f, key, value] triples; output says
// whether reads carry results (else they must be null).
func (d *txnDecoder) side(raw []byte, output bool, start int) bool {
	if len(raw) < 2 || raw[0] != '[' {
		return false
	}
	i := 1
	if raw[i] == ']' {
		return i+1 == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '[' {
			return false
		}
		i++
		var x dmop
		switch {
		case strings.HasPrefix(string(raw[i:]), `"r",`):
			x.f, i = fRead, i+4
		case strings.HasPrefix(string(raw[i:]), `"w",`):
			x.f, i = fWrite, i+4
		case strings.HasPrefix(string(raw[i:]), `"append",`):
			x.f, i = fAppend, i+9
		default:
			return false
		}
		// key: a non-empty string without escapes
		if i >= len(raw) || raw[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' && raw[j] != '\\' {
			j++
		}
		if j >= len(raw) || raw[j] != '"' || j == i+1 || j+1 >= len(raw) || raw[j+1] != ',' {
			return false
		}
		x.key, i = raw[i+1:j], j+2
		// value
		switch {
		case i+4 <= len(raw) && string(raw[i:i+4]) == "null":
			if x.f != fRead {
				return false
			}
			x.val, i = tokNull, i+4
		case !output && x.f == fRead:
			return false // a read's value is null in input: ParseTxn's error
		case i < len(raw) && raw[i] == '[':
			if x.f != fRead {
				return false
			}
			off := len(d.elems)
			i++
			if i < len(raw) && raw[i] == ']' {
				i++
			} else {
				for {
					v, next, ok := d.scalar(raw, i)
					if !ok {
						return false
					}
					d.elems = append(d.elems, v)
					i = next
					if i < len(raw) && raw[i] == ',' {
						i++
						continue
					}
					if i < len(raw) && raw[i] == ']' {
						i++
						break
					}
					return false
				}
			}
			d.lists = append(d.lists, dlist{off: int32(off), n: int32(len(d.elems) - off), text: tokNull})
			x.f, x.val = fRead|fList, vtok(len(d.lists)-1)
		default:
			v, next, ok := d.scalar(raw, i)
			if !ok {
				return false
			}
			x.val, i = v, next
		}
		if i >= len(raw) || raw[i] != ']' {
			return false
		}
		i++
		d.mops = append(d.mops, x)
		if i < len(raw) && raw[i] == ',' {
			i++
			continue
		}
		return i+1 == len(raw) && raw[i] == ']'
	}
}

// scalar reads a number or an escape-free string at raw[i:]; its text is
// its JSON text (canon of a compact value, and what ParseTxn gives a list
// element).
func (d *txnDecoder) scalar(raw []byte, i int) (vtok, int, bool) {
	if i >= len(raw) {
		return 0, i, false
	}
	j := i
	switch c := raw[i]; {
	case c == '"':
		j++
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				return 0, i, false
			}
			j++
		}
		if j >= len(raw) {
			return 0, i, false
		}
		j++
		return d.text(string(raw[i:j])), j, true
	case c == '-' || c >= '0' && c <= '9':
		for j < len(raw) && (raw[j] >= '0' && raw[j] <= '9' || raw[j] == '-' || raw[j] == '+' || raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E') {
			j++
		}
		return d.token(raw[i:j]), j, true
	}
	return 0, i, false
}

// decodeBatches decodes ops in batches on the worker pool and hands each
// batch to load in order, on the calling goroutine, while the workers
// decode the next ones (a few batches ahead at most, so memory stays
// bounded). It stops at load's first error.
func decodeBatches(ops []history.Op, load func(ops []history.Op, d *txnDecoder) error) error {
	const batch = 2048
	n := (len(ops) + batch - 1) / batch
	if n == 0 {
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	window := 2 * workers
	type job struct {
		i    int
		d    *txnDecoder
		done chan struct{}
	}
	free := make(chan *txnDecoder, window)
	for range window {
		free <- &txnDecoder{}
	}
	jobs := make(chan *job, window)
	order := make(chan *job, window)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				j.d.reset()
				for k := j.i * batch; k < min(len(ops), (j.i+1)*batch); k++ {
					j.d.decode(&ops[k])
				}
				close(j.done)
			}
		})
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for i := range n {
			var d *txnDecoder
			select {
			case d = <-free:
			case <-stop:
				return
			}
			j := &job{i: i, d: d, done: make(chan struct{})}
			jobs <- j
			order <- j
		}
	}()
	var err error
	for j := range order {
		<-j.done
		if err == nil {
			lo := j.i * batch
			err = load(ops[lo:min(len(ops), lo+batch)], j.d)
			if err != nil {
				close(stop)
			}
		}
		free <- j.d
	}
	wg.Wait()
	return err
}

// ftoa renders an int token's text.
func ftoa(v vtok) string { return strconv.FormatUint(uint64(v), 10) }
