package history_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// The round trips write with testsupport/fixture's WriteHistory: no command
// writes a whole history (a run records through Recorder), so the writer
// is a test fixture, and these tests pin that it and the reader agree.

func TestWriteReadRoundTrip(t *testing.T) {
	c := int64(30)
	ops := []history.Op{
		{OpID: "a", ProcessID: "p\"1\x01", InvokeTS: 1, CompleteTS: &c, OpType: "cas", Key: "k\\",
			Input: json.RawMessage(`[1,2]`), Output: json.RawMessage(`true`), NodeSeen: "n", FaultEpoch: "w1"},
		{OpID: "b", ProcessID: "p2", InvokeTS: 5, OpType: "write", TimeoutMarker: true, Error: "deadline"},
	}
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Scenario: "S"}, ops); err != nil {
		t.Fatal(err)
	}
	meta, got, bad, err := history.ReadAll(&buf, "rt")
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	if meta.Schema != history.Schema {
		t.Errorf("schema = %q", meta.Schema)
	}
	for i := range got {
		got[i].Line = 0
	}
	a, _ := json.Marshal(ops)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip:\n%s\n%s", a, b)
	}
	// Every column present, nulls for empty nullable ones.
	var m map[string]any
	var w bytes.Buffer
	_ = fixture.WriteHistory(&w, nil, ops[1:])
	if err := json.Unmarshal(w.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 12 || m["key"] != nil || m["complete_ts"] != nil {
		t.Errorf("written columns = %v", m)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(history.GoodLine + "\n"))
	f.Add([]byte(`{"_meta":{"schema":"dst-history/1"}}` + "\n" + history.GoodLine))
	f.Add([]byte(`{"op_id":"\u0041","input":[{"a":-1.5e3}],"output":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, ops, bad, err := history.ReadAll(bytes.NewReader(data), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range bad {
			var le *fileline.Error
			if !errors.As(e, &le) || le.Line < 1 {
				t.Fatalf("error without line: %v", e)
			}
		}
		// The in-memory reader must agree with the streaming one.
		_, ops2, bad2 := history.ReadBytes(data, "fuzz")
		if len(ops2) != len(ops) || len(bad2) != len(bad) {
			t.Fatalf("history.ReadBytes: %d ops %d errors; Read: %d ops %d errors", len(ops2), len(bad2), len(ops), len(bad))
		}
		for i := range bad {
			if bad[i].Error() != bad2[i].Error() {
				t.Fatalf("error %d: %v vs %v", i, bad[i], bad2[i])
			}
		}
		// Whatever parsed must survive a write/read round trip unchanged.
		var buf bytes.Buffer
		if err := fixture.WriteHistory(&buf, nil, ops); err != nil {
			t.Fatal(err)
		}
		_, again, bad2, _ := history.ReadAll(&buf, "rt")
		if len(bad2) != 0 || len(again) != len(ops) {
			t.Fatalf("round trip: %d ops -> %d ops, %v", len(ops), len(again), bad2)
		}
		for i := range ops {
			a, b := ops[i], again[i]
			if a.OpID != b.OpID || a.Key != b.Key || !bytes.Equal(a.Input, b.Input) || !bytes.Equal(a.Output, b.Output) {
				t.Fatalf("round trip changed op %d: %+v vs %+v", i, a, b)
			}
		}
	})
}
