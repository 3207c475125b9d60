package checker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/history"
)

// decodedText renders what the decoder made of op as history.ParseTxn's
// micro-ops would print: function, key, and the value's text (a list as
// its elements' texts).
func decodedText(d *txnDecoder, op *history.Op) (string, error) {
	d.reset()
	d.decode(op)
	dt := d.txns[0]
	if dt.err != nil {
		return "", dt.err
	}
	text := func(v vtok) string {
		switch {
		case v == tokNull:
			return "null"
		case v&tokText != 0:
			return d.texts[v&^tokText]
		}
		return ftoa(v)
	}
	var b strings.Builder
	for _, m := range d.mops[dt.off : dt.off+dt.n] {
		fmt.Fprintf(&b, "%s %s ", microF(m.f), m.key)
		if m.f&fList != 0 {
			l := d.lists[m.val]
			var els []string
			for _, e := range d.elems[l.off : l.off+l.n] {
				els = append(els, text(e))
			}
			fmt.Fprintf(&b, "%q;", els)
			continue
		}
		fmt.Fprintf(&b, "%s;", text(m.val))
	}
	return b.String(), nil
}

// parsedText renders history.ParseTxn's result the same way.
func parsedText(op *history.Op) (string, error) {
	ms, err := history.ParseTxn(op)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %s ", m.F, m.Key)
		if m.List != nil {
			fmt.Fprintf(&b, "%q;", m.List)
			continue
		}
		fmt.Fprintf(&b, "%s;", canon(m.Value))
	}
	return b.String(), nil
}

func checkDecode(t *testing.T, op *history.Op) {
	t.Helper()
	want, werr := parsedText(op)
	got, gerr := decodedText(&txnDecoder{}, op)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || got != want {
		t.Fatalf("input %s output %s error %q: decoded %q (%v), ParseTxn %q (%v)", op.Input, op.Output, op.Error, got, gerr, want, werr)
	}
}

func decodeCases() [][2]string {
	return [][2]string{
		{`[["append","x",1],["r","y",null]]`, `[["append","x",1],["r","y",[1,2,3]]]`},
		{`[["w","k",12345678901],["r","k",null]]`, `[["w","k",12345678901],["r","k",12345678901]]`},
		{`[["w","k","s"],["r","k",null]]`, `[["w","k","s"],["r","k","s"]]`},
		{`[["append","x",1]]`, `[["append","x",01]]`},
		{`[["append","x",1]]`, `[ ["append", "x", 1] ]`},
		{`[["append","\u0078",1]]`, `[["append","x",1]]`},
		{`[["r","x",null]]`, `[["r","x",["a\"b",-1,2.5e3,0]]]`},
		{`[["r","x",null]]`, `[["r","x",[null]]]`},
		{`[["r","x",null]]`, `[["r","x",[[1]]]]`},
		{`[["r","x",1]]`, `null`},
		{`[]`, `[]`},
		{`[["q","x",1]]`, `null`},
		{`[["append","x",null]]`, `null`},
		{`[["append",7,1]]`, `[["append",7,1]]`},
		{`[["append","",1]]`, `null`},
		{`[["r","x",null],["append","x",2]]`, `[["r","x",[]],["append","x",2]]`},
		{`[["r","x",null]]`, `[["r","y",[]]]`},
		{`[["r","x",null]]`, `[["r","x",[]],["r","x",[]]]`},
		{`[["w","x",1]]`, `[["w","x",2]]`},
		{`[["w","x",true]]`, `[["w","x",true]]`},
	}
}

// TestDecodeAgreesWithParseTxn: the compact decoder reads every
// transaction as history.ParseTxn does, or fails with its error.
func TestDecodeAgreesWithParseTxn(t *testing.T) {
	c := int64(5)
	for _, tc := range decodeCases() {
		for _, status := range []string{"ok", "aborted", "timeout"} {
			op := history.Op{OpID: "1", OpType: history.OpTxn, Input: json.RawMessage(tc[0]), CompleteTS: &c}
			if tc[1] != "null" {
				op.Output = json.RawMessage(tc[1])
			}
			switch status {
			case "aborted":
				op.Error = "aborted"
			case "timeout":
				op.CompleteTS, op.TimeoutMarker = nil, true
			}
			checkDecode(t, &op)
		}
	}
	if _, err := decodedText(&txnDecoder{}, &history.Op{OpType: "write"}); err != errNotTxn {
		t.Fatalf("a write decoded as a transaction: %v", err)
	}
}

func FuzzDecodeTxn(f *testing.F) {
	for _, tc := range decodeCases() {
		f.Add([]byte(tc[0]), []byte(tc[1]), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in, out []byte, status uint8) {
		c := int64(5)
		op := history.Op{OpID: "1", OpType: history.OpTxn, Input: in, CompleteTS: &c}
		if string(out) != "null" && len(out) > 0 {
			op.Output = out
		}
		switch status % 3 {
		case 1:
			op.Error = "aborted"
		case 2:
			op.CompleteTS, op.TimeoutMarker = nil, true
		}
		checkDecode(t, &op)
	})
}
