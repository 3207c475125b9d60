package history

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// canonicalLines are lines in AppendJSON's layout, valid and not, for the
// fast path's equivalence with parseAny.
func canonicalLines() []string {
	c := func(v int64) *int64 { return &v }
	ops := []Op{
		{OpID: "1", ProcessID: "p1", InvokeTS: 10, CompleteTS: c(20), OpType: "write", Key: "k", Input: json.RawMessage(`{"v":[1,2]}`), NodeSeen: "n1"},
		{OpID: "x y", ProcessID: "é", InvokeTS: -5, OpType: "read", TimeoutMarker: true, Error: "timeout", FaultEpoch: "w1"},
		{OpID: "2", ProcessID: "p", InvokeTS: 1 << 62, CompleteTS: c(-1 << 62), OpType: "txn", Input: json.RawMessage(`[["r","x",null]]`), Output: json.RawMessage(`[["r","x",[1,"a\"b",-2.5e3]]]`)},
	}
	var lines []string
	for i := range ops {
		lines = append(lines, string(AppendJSON(nil, &ops[i])))
	}
	return append(lines,
		strings.Replace(goodLine, `"invoke_ts":10`, `"invoke_ts":010`, 1),
		strings.Replace(goodLine, `"invoke_ts":10`, `"invoke_ts":99999999999999999999`, 1),
		strings.Replace(goodLine, `"invoke_ts":10`, `"invoke_ts":-`, 1),
		strings.Replace(goodLine, `"invoke_ts":10`, `"invoke_ts":1e3`, 1),
		strings.Replace(goodLine, `"op_id":"1"`, `"op_id":""`, 1),
		strings.Replace(goodLine, `"p1"`, `"p\u0031"`, 1),
		strings.Replace(goodLine, `"p1"`, "\"p\xff\"", 1),
		strings.Replace(goodLine, `"p1"`, "\"p\x01\"", 1),
		strings.Replace(goodLine, `"complete_ts":20`, `"complete_ts":null`, 1),
		strings.Replace(goodLine, `"output":null`, `"output":[1,}`, 1),
		goodLine+"  ",
		goodLine+"}",
		strings.TrimSuffix(goodLine, "}")+`,"extra":1}`,
		strings.Replace(goodLine, `"timeout_marker":false`, `"timeout_marker":true `, 1),
	)
}

// TestCanonicalAgreesWithParseAny: every line the fast path accepts,
// parseAny reads to the same op, and every line AppendJSON writes takes
// the fast path.
func TestCanonicalAgreesWithParseAny(t *testing.T) {
	for i, line := range canonicalLines() {
		checkCanonical(t, []byte(line))
		if i < 3 {
			if _, ok := parseCanonical([]byte(line), newInterner(), nil); !ok {
				t.Errorf("AppendJSON's line not on the fast path: %s", line)
			}
		}
	}
}

func checkCanonical(t *testing.T, line []byte) {
	t.Helper()
	fast, ok := parseCanonical(line, newInterner(), nil)
	if !ok {
		return
	}
	slow, err := parseAny(line, newInterner(), nil)
	if err != nil {
		t.Fatalf("fast path accepted what parseAny rejects (%v): %q", err, line)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast %+v, parseAny %+v: %q", fast, slow, line)
	}
}

func FuzzParseCanonical(f *testing.F) {
	for _, l := range canonicalLines() {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkCanonical(t, line) })
}
