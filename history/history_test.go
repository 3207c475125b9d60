package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

const goodLine = `{"op_id":"1","process_id":"p1","invoke_ts":10,"complete_ts":20,"op_type":"write","key":"k","input":{"v":[1,2]},"output":null,"error":null,"timeout_marker":false,"node_seen":"n1","fault_epoch":null}`

func TestReadLines(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantErr string // substring; "" = ok
	}{
		{"good", goodLine, ""},
		{"extra spaces", " " + strings.ReplaceAll(goodLine, ":", " : ") + " ", ""},
		{"escaped string", strings.Replace(goodLine, `"p1"`, `"p\u00e9\n"`, 1), ""},
		{"escaped column name", strings.Replace(goodLine, `"op_id"`, `"op\u005fid"`, 1), ""},
		{"bad escape in input", strings.Replace(goodLine, `{"v":[1,2]}`, `"\q"`, 1), "bad string"},
		{"bad escape in op_id", strings.Replace(goodLine, `"op_id":"1"`, `"op_id":"\q"`, 1), "bad string"},
		{"unknown column tolerated", strings.Replace(goodLine, `{"op_id"`, `{"x":[{}],"op_id"`, 1), ""},
		{"garbage", `not json`, "want a JSON object"},
		{"truncated", goodLine[:60], ""}, // message varies; just must fail
		{"missing column", strings.Replace(goodLine, `,"fault_epoch":null`, "", 1), `missing column "fault_epoch"`},
		{"null op_id", strings.Replace(goodLine, `"op_id":"1"`, `"op_id":null`, 1), "op_id: null not allowed"},
		{"float ts", strings.Replace(goodLine, `"invoke_ts":10`, `"invoke_ts":1.5`, 1), "want an integer"},
		{"null invoke", strings.Replace(goodLine, `"invoke_ts":10`, `"invoke_ts":null`, 1), "null not allowed"},
		{"bad bool", strings.Replace(goodLine, `"timeout_marker":false`, `"timeout_marker":0`, 1), "want true or false"},
		{"bad input json", strings.Replace(goodLine, `{"v":[1,2]}`, `{"v":[1,2}`, 1), "want ','"},
		{"duplicate column", strings.Replace(goodLine, `"key":"k"`, `"key":"k","key":"j"`, 1), "appears twice"},
		{"trailing", goodLine + " x", "trailing data"},
		{"array", `[1]`, "want a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ops, bad, err := readAll(strings.NewReader("\n"+tt.line+"\n"), "h.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			wantFail := tt.wantErr != "" || tt.name == "truncated"
			if !wantFail {
				if len(bad) != 0 || len(ops) != 1 {
					t.Fatalf("want 1 op, got %d ops, errors %v", len(ops), bad)
				}
				if ops[0].Line != 2 {
					t.Errorf("line = %d, want 2", ops[0].Line)
				}
				return
			}
			if len(bad) != 1 || len(ops) != 0 {
				t.Fatalf("want 1 error, got %d ops, errors %v", len(ops), bad)
			}
			if !strings.HasPrefix(bad[0].Error(), "h.jsonl:2: ") || !strings.Contains(bad[0].Error(), tt.wantErr) {
				t.Errorf("error %q, want h.jsonl:2: ...%s", bad[0], tt.wantErr)
			}
		})
	}
}

func TestReadContinuesAfterBadLines(t *testing.T) {
	in := `{"_meta":{"scenario":"S1","seed":4,"clock":"monotonic","schema":"dst-history/1"}}` + "\n" +
		goodLine + "\n" + "garbage\n" + strings.Replace(goodLine, `"1"`, `"2"`, 1) + "\n" +
		`{"_meta":{}}` + "\n" + goodLine[:50] // truncated last line, no newline
	meta, ops, bad, err := readAll(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	if meta.Scenario != "S1" || meta.Seed != 4 {
		t.Errorf("meta = %+v", meta)
	}
	if len(ops) != 2 || ops[1].OpID != "2" || ops[1].Line != 4 {
		t.Fatalf("ops = %+v", ops)
	}
	var lines []int
	for _, e := range bad {
		var le *fileline.Error
		if !errors.As(e, &le) {
			t.Fatalf("not a *fileline.Error: %v", e)
		}
		lines = append(lines, le.Line)
	}
	if fmt.Sprint(lines) != "[3 5 6]" {
		t.Errorf("error lines = %v (%v), want [3 5 6]", lines, bad)
	}
}

func TestReadRejectsOtherSchema(t *testing.T) {
	_, _, bad, _ := readAll(strings.NewReader(`{"_meta":{"schema":"other/2"}}`+"\n"), "f")
	if len(bad) != 1 || !strings.Contains(bad[0].Error(), "unsupported schema") {
		t.Fatalf("bad = %v", bad)
	}
}

func i64(v int64) *int64 { return &v }

func TestValidate(t *testing.T) {
	base := func() Op {
		return Op{OpID: "1", ProcessID: "p", InvokeTS: 10, CompleteTS: i64(20), OpType: "read", Output: json.RawMessage(`1`), Line: 1}
	}
	tests := []struct {
		name     string
		mutate   func(ops []Op) []Op
		schedule []string
		want     string
	}{
		{"good", func(o []Op) []Op { return o }, nil, ""},
		{"dup different output", func(o []Op) []Op {
			d := base()
			d.Output, d.Line = json.RawMessage(`2`), 2
			return append(o, d)
		}, nil, "different output (recorder bug"},
		{"dup same output", func(o []Op) []Op { d := base(); d.Line = 2; return append(o, d) }, nil, "must be unique"},
		{"null complete without marker", func(o []Op) []Op { o[0].CompleteTS = nil; o[0].Output = nil; return o }, nil, "timeout_marker is false"},
		{"timeout with output", func(o []Op) []Op { o[0].CompleteTS = nil; o[0].TimeoutMarker = true; return o }, nil, "output is set"},
		{"complete before invoke", func(o []Op) []Op { o[0].CompleteTS = i64(5); return o }, nil, "before invoke_ts"},
		{"error and output", func(o []Op) []Op { o[0].Error = "x"; return o }, nil, "both error and output"},
		{"unknown epoch", func(o []Op) []Op { o[0].FaultEpoch = "w9"; return o }, []string{"w1"}, "not a window"},
		{"known epoch", func(o []Op) []Op { o[0].FaultEpoch = "w1"; return o }, []string{"w1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Validate("h", tt.mutate([]Op{base()}), tt.schedule)
			if tt.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want) || !strings.HasPrefix(errs[0].Error(), "h:") {
				t.Fatalf("errs = %v, want one containing %q", errs, tt.want)
			}
		})
	}
}

func TestWeak(t *testing.T) {
	ok := Op{OpID: "1", ProcessID: "p", CompleteTS: i64(1), OpType: "read", Key: "k", NodeSeen: "n"}
	noNode := ok
	noNode.NodeSeen = ""
	noKey := ok
	noKey.Key = ""
	unmarked := ok
	unmarked.CompleteTS = nil
	tests := []struct {
		name string
		meta Meta
		ops  []Op
		need Needs
		want string
	}{
		{"complete", Meta{Clock: "monotonic"}, []Op{ok}, Needs{Key: true, NodeSeen: true, MonotonicClock: true, TimeoutMarkers: true}, ""},
		{"node_seen missing", Meta{}, []Op{noNode}, Needs{NodeSeen: true}, "lack node_seen"},
		{"node_seen not needed", Meta{}, []Op{noNode}, Needs{}, ""},
		{"key missing", Meta{}, []Op{noKey}, Needs{Key: true}, "lack key"},
		{"fault epoch missing", Meta{}, []Op{ok}, Needs{FaultEpoch: true}, "fault_epoch"},
		{"wall clock", Meta{Clock: "wall"}, []Op{ok}, Needs{MonotonicClock: true}, "clock"},
		{"no timeout marker", Meta{}, []Op{unmarked}, Needs{TimeoutMarkers: true}, "no timeout_marker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Weak(tt.meta, tt.ops, tt.need)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("unexpected %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Fatalf("got %v, want %q", got, tt.want)
			}
		})
	}
}

// syncBuf is a bytes.Buffer safe for the recorder's single-writer use plus
// the test's final read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }

func TestRecorderConcurrent(t *testing.T) {
	var buf syncBuf
	rec := NewRecorder(&buf, Meta{Scenario: "S1", Seed: 7})
	const clients, each = 8, 200
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p := rec.Invoke(fmt.Sprintf("c%d", c), "write", "k", i).SetNode("n1")
				if c == 0 && i == 10 {
					rec.SetFaultEpoch("w1")
				}
				switch i % 3 {
				case 0:
					_ = p.Ok(nil)
				case 1:
					_ = p.Fail("rejected")
				default:
					_ = p.Timeout("deadline")
				}
				if err := p.Ok(1); err == nil {
					t.Error("second completion accepted")
				}
			}
		}(c)
	}
	wg.Wait()
	rec.SetFaultEpoch("")
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	meta, ops, bad, err := readAll(&buf.b, "rec")
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	if meta.Clock != "monotonic" || meta.Recorder != "in-process" || meta.Schema != Schema {
		t.Errorf("meta = %+v", meta)
	}
	if len(ops) != clients*each {
		t.Fatalf("ops = %d, want %d", len(ops), clients*each)
	}
	if errs := Validate("rec", ops, []string{"w1"}); len(errs) != 0 {
		t.Fatalf("recorder produced invalid history: %v", errs[:1])
	}
	seen := map[int64]bool{}
	epochs := 0
	for _, op := range ops {
		if seen[op.InvokeTS] {
			t.Fatalf("timestamp %d reused", op.InvokeTS)
		}
		seen[op.InvokeTS] = true
		if op.CompleteTS != nil {
			if seen[*op.CompleteTS] || *op.CompleteTS <= op.InvokeTS {
				t.Fatalf("complete_ts %d not strictly after invoke / reused", *op.CompleteTS)
			}
			seen[*op.CompleteTS] = true
		}
		if op.TimeoutMarker && (op.CompleteTS != nil || op.Output != nil || op.Error != "deadline") {
			t.Fatalf("timeout recorded wrong: %+v", op)
		}
		if op.FaultEpoch == "w1" {
			epochs++
		}
	}
	if epochs == 0 {
		t.Error("no op stamped with the fault epoch")
	}
}

// failAfter accepts n bytes, then writes half of the next chunk and fails,
// as a crash mid-write would.
type failAfter struct {
	buf bytes.Buffer
	n   int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.buf.Len()+len(p) > f.n {
		k := len(p) / 2
		f.buf.Write(p[:k])
		return k, io.ErrShortWrite
	}
	return f.buf.Write(p)
}

func TestRecorderCrashLosesAtMostLastLine(t *testing.T) {
	w := &failAfter{n: 2000}
	rec := NewRecorder(w, Meta{})
	written := 0
	for i := 0; i < 100; i++ {
		if rec.Invoke("p", "write", "k", i).Ok(nil) == nil {
			written++
		}
	}
	if rec.Err() == nil {
		t.Fatal("write error not reported")
	}
	_, ops, bad, err := readAll(&w.buf, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != written {
		t.Errorf("complete lines = %d, want the %d acknowledged writes", len(ops), written)
	}
	if len(bad) != 1 {
		t.Errorf("want exactly the torn last line reported, got %v", bad)
	}
	if errs := Validate("crash", ops, nil); len(errs) != 0 {
		t.Error(errs)
	}
}

func TestReadBytesParallelMatchesRead(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"_meta":{"scenario":"P"}}` + "\n")
	for i := 0; b.Len() < 3*parallelMin; i++ {
		switch {
		case i%5000 == 17:
			b.WriteString("garbage\n")
		case i%7001 == 3:
			b.WriteString(`{"_meta":{}}` + "\n")
		default:
			b.WriteString(strings.Replace(goodLine, `"op_id":"1"`, fmt.Sprintf(`"op_id":"%d"`, i), 1) + "\n")
		}
	}
	data := []byte(b.String())
	m1, ops1, bad1, _ := readAll(bytes.NewReader(data), "f")
	m2, ops2, bad2 := ReadBytes(data, "f")
	if m1 != m2 || m2.Scenario != "P" {
		t.Errorf("meta %+v vs %+v", m1, m2)
	}
	if len(ops1) != len(ops2) || len(bad1) != len(bad2) || len(bad1) < 2 {
		t.Fatalf("ops %d vs %d, bad %d vs %d", len(ops1), len(ops2), len(bad1), len(bad2))
	}
	for i := range ops1 {
		if ops1[i].OpID != ops2[i].OpID || ops1[i].Line != ops2[i].Line {
			t.Fatalf("op %d: %s:%d vs %s:%d", i, ops1[i].OpID, ops1[i].Line, ops2[i].OpID, ops2[i].Line)
		}
	}
	for i := range bad1 {
		if bad1[i].Error() != bad2[i].Error() {
			t.Fatalf("error %d: %v vs %v", i, bad1[i], bad2[i])
		}
	}
}

func TestOverlongLineSkipped(t *testing.T) {
	long := `{"op_id":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	data := []byte(long + "\n" + goodLine + "\n")
	_, ops, bad, err := readAll(bytes.NewReader(data), "big")
	if err != nil || len(ops) != 1 || len(bad) != 1 || !strings.Contains(bad[0].Error(), "big:1: line longer than") {
		t.Fatalf("Read: ops %d, bad %v, err %v", len(ops), bad, err)
	}
	_, ops, bad = ReadBytes(data, "big")
	if len(ops) != 1 || ops[0].Line != 2 || len(bad) != 1 || !strings.Contains(bad[0].Error(), "big:1: line longer than") {
		t.Fatalf("ReadBytes: ops %d, bad %v", len(ops), bad)
	}
}
