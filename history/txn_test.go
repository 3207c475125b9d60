package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

// txnLine builds one txn record; complete "" is a timeout.
func txnLine(input, output, errCode, complete string) string {
	timeout := "false"
	if complete == "" {
		complete, timeout = "null", "true"
	}
	if errCode == "" {
		errCode = "null"
	} else {
		errCode = `"` + errCode + `"`
	}
	return fmt.Sprintf(`{"op_id":"1","process_id":"p1","invoke_ts":10,"complete_ts":%s,"op_type":"txn","key":null,"input":%s,"output":%s,"error":%s,"timeout_marker":%s,"node_seen":null,"fault_epoch":null}`,
		complete, input, output, errCode, timeout)
}

func TestValidateTxn(t *testing.T) {
	tests := []struct {
		name, line, want string // want: "" valid, else a substring of the reason
	}{
		{"list-append ok", txnLine(`[["append","x",1],["r","x",null]]`, `[["append","x",1],["r","x",[1]]]`, "", "20"), ""},
		{"rw-register ok", txnLine(`[["w",1,"a"],["r",2,null]]`, `[["w",1,"a"],["r",2,null]]`, "", "20"), ""},
		{"aborted", txnLine(`[["w","x",1]]`, `null`, "aborted", "20"), ""},
		{"unknown", txnLine(`[["append","x",1]]`, `null`, "", ""), ""},
		{"input not a list", txnLine(`{"x":1}`, `null`, "", ""), "want a list of [f, key, value]"},
		{"empty txn", txnLine(`[]`, `null`, "", ""), "non-empty list"},
		{"bad f", txnLine(`[["cas","x",1]]`, `null`, "", ""), `f "cas"`},
		{"pair not triple", txnLine(`[["r","x"]]`, `null`, "", ""), "want [f, key, value]"},
		{"write of null", txnLine(`[["w","x",null]]`, `null`, "", ""), "w of null"},
		{"object value", txnLine(`[["append","x",{"a":1}]]`, `null`, "", ""), "string or number"},
		{"bool key", txnLine(`[["r",true,null]]`, `null`, "", ""), "key must be a string or an integer"},
		{"read with value in input", txnLine(`[["r","x",[1]]]`, `[["r","x",[1]]]`, "", "20"), "null in input"},
		{"ok without output", txnLine(`[["r","x",null]]`, `null`, "", "20"), "completed ok"},
		{"output length", txnLine(`[["r","x",null]]`, `[["r","x",[1]],["r","y",[]]]`, "", "20"), "same steps"},
		{"output other key", txnLine(`[["r","x",null]]`, `[["r","y",[1]]]`, "", "20"), "same steps"},
		{"output other write", txnLine(`[["w","x",1]]`, `[["w","x",2]]`, "", "20"), "input writes 1"},
		{"nested read result", txnLine(`[["r","x",null]]`, `[["r","x",[[1]]]]`, "", "20"), "list of scalars"},
		{"error and output", txnLine(`[["r","x",null]]`, `[["r","x",[1]]]`, "aborted", "20"), "both error and output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ops, bad := ReadBytes([]byte(`{"_meta":{"schema":"dst-history/1"}}`+"\n"+tt.line+"\n"), "h.jsonl")
			if len(bad) > 0 {
				t.Fatalf("read: %v", bad)
			}
			errs := Validate("h.jsonl", ops, nil)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error containing %q, got %v", tt.want, errs)
			}
			var fe *fileline.Error
			if !errors.As(errs[0], &fe) || fe.File != "h.jsonl" || fe.Line != 2 {
				t.Fatalf("want a *fileline.Error at h.jsonl:2, got %v", errs[0])
			}
			if !strings.Contains(errs[0].Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", errs[0], tt.want)
			}
		})
	}
}

func TestParseTxnReadsFromOutput(t *testing.T) {
	_, ops, bad := ReadBytes([]byte(txnLine(`[["append",5,1],["r",5,null]]`, `[["append",5,1],["r",5,[0,1]]]`, "", "20")), "h")
	if len(bad) > 0 {
		t.Fatal(bad)
	}
	ms, err := ParseTxn(&ops[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Key != "5" || ms[1].F != MicroRead || string(ms[1].Value) != "[0,1]" {
		t.Fatalf("got %+v", ms)
	}
}

func TestRecorderTxn(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, Meta{Scenario: "S"})
	steps := []MicroOp{{F: MicroAppend, Key: "x", Value: json.RawMessage("1")}, {F: MicroRead, Key: "y"}}
	p := r.InvokeTxn("p0", steps)
	done := append([]MicroOp(nil), steps...)
	done[1].Value = json.RawMessage(`[3,4]`)
	if err := p.OkTxn(done); err != nil {
		t.Fatal(err)
	}
	if err := r.InvokeTxn("p1", steps).Fail("aborted"); err != nil {
		t.Fatal(err)
	}
	if err := r.InvokeTxn("p2", steps).Timeout("deadline"); err != nil {
		t.Fatal(err)
	}
	_, ops, bad := ReadBytes(buf.Bytes(), "rec")
	if len(bad) > 0 || len(ops) != 3 {
		t.Fatalf("read back: %d ops, bad %v", len(ops), bad)
	}
	if errs := Validate("rec", ops, nil); len(errs) > 0 {
		t.Fatalf("recorded txns invalid: %v", errs)
	}
	if got := string(ops[0].Input); got != `[["append","x",1],["r","y",null]]` {
		t.Errorf("input = %s", got)
	}
	if got := string(ops[0].Output); got != `[["append","x",1],["r","y",[3,4]]]` {
		t.Errorf("output = %s", got)
	}
	if ops[0].OpType != OpTxn || ops[1].Error != "aborted" || !ops[2].TimeoutMarker {
		t.Errorf("outcomes not recorded: %+v", ops)
	}
}

func TestScalarList(t *testing.T) {
	tests := []struct {
		in   string
		want []string // nil: not a list of scalars
	}{
		{`[]`, []string{}},
		{`[ 1 , -2.5e3,"a"]`, []string{"1", "-2.5e3", `"a"`}},
		{`["a\u0041","b\"c"]`, []string{`"aA"`, `"b\"c"`}},
		{`[[1]]`, nil},
		{`[true]`, nil},
		{`{"a":1}`, nil},
	}
	for _, tt := range tests {
		got, ok := scalarList(json.RawMessage(tt.in))
		if ok != (tt.want != nil) || ok && !slices.Equal(got, tt.want) {
			t.Errorf("scalarList(%s) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}
