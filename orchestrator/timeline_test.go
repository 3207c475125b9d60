package orchestrator

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/session"
)

func TestToHistory(t *testing.T) {
	tests := []struct {
		name            string
		control, origin int64
		offset          int64
		want            int64
	}{
		{"wall-clock history, no offset", 1_700_000_000_000_000_000, 0, 0, 1_700_000_000_000_000_000},
		{"driver ahead, monotonic origin", 1_700_000_010_000_000_000, 1_700_000_000_000_000_000, 250_000_000, 10_250_000_000},
		{"driver behind", 1_700_000_010_000_000_000, 1_700_000_000_000_000_000, -40_000_000, 9_960_000_000},
		{"wall-clock history with an offset", 1_000, 0, 25, 1_025},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := toHistory(tc.control, session.HostClock{Host: "client", OffsetNS: tc.offset}, tc.origin)
			if got != tc.want {
				t.Fatalf("ToHistory = %d, want %d", got, tc.want)
			}
		})
	}
}

func i64(v int64) *int64 { return &v }

func op(id string, inv int64, comp *int64, epoch string) history.Op {
	return history.Op{OpID: id, ProcessID: "p1", InvokeTS: inv, CompleteTS: comp, OpType: "write", Key: "k", Input: []byte("1"), FaultEpoch: epoch}
}

func TestStamp(t *testing.T) {
	// One window [1000, 2000] and a never-reverted one from 5000, ±50 ns.
	windows := []session.FaultWindow{
		{FaultEpoch: "S1-w1", InjectedAtNS: i64(1000), RevertedAtNS: i64(2000)},
		{FaultEpoch: "S1-w0", ScheduledAtNS: 0}, // never injected: stamps nothing
		{FaultEpoch: "S1-w2", InjectedAtNS: i64(5000)},
	}
	tests := []struct {
		name      string
		op        history.Op
		want      string
		ambiguous bool
	}{
		{"inside", op("a", 1200, i64(1300), ""), "S1-w1", false},
		{"spans the whole window", op("b", 900, i64(2100), ""), "S1-w1", false},
		{"before", op("c", 100, i64(800), ""), "", false},
		{"after", op("d", 2100, i64(2200), ""), "", false},
		{"ends just after injection, within the uncertainty", op("e", 800, i64(1020), ""), "", true},
		{"starts just before revert, within the uncertainty", op("f", 1980, i64(2500), ""), "", true},
		{"ends just before injection, within the uncertainty", op("g", 800, i64(990), ""), "", true},
		{"timed out before the window: may have landed in it", op("h", 500, nil, ""), "S1-w1", false},
		{"in an open window", op("i", 9000, i64(9100), ""), "S1-w2", false},
		{"driver-stamped kept", op("j", 1200, i64(1300), "mine"), "mine", false},
	}
	var ops []history.Op
	for _, tc := range tests {
		ops = append(ops, tc.op)
	}
	stamped, ambiguous := stamp(ops, windows, 50)
	wantStamped, wantAmb := 0, 0
	for i, tc := range tests {
		if ops[i].FaultEpoch != tc.want {
			t.Errorf("%s: fault_epoch %q, want %q", tc.name, ops[i].FaultEpoch, tc.want)
		}
		if tc.want != "" && tc.op.FaultEpoch == "" {
			wantStamped++
		}
		if tc.ambiguous {
			wantAmb++
		}
	}
	if stamped != wantStamped || ambiguous != wantAmb {
		t.Fatalf("stamped %d ambiguous %d, want %d and %d", stamped, ambiguous, wantStamped, wantAmb)
	}
}

// TestStampShortWindow: an instantaneous window (kill-9) is certain only
// for an op in flight across the whole uncertain zone around it.
func TestStampShortWindow(t *testing.T) {
	w := []session.FaultWindow{{FaultEpoch: "S2-w1", InjectedAtNS: i64(1000), RevertedAtNS: i64(1000)}}
	ops := []history.Op{op("long", 800, i64(1200), ""), op("short", 990, i64(1010), "")}
	stamped, ambiguous := stamp(ops, w, 100)
	if stamped != 1 || ambiguous != 1 || ops[0].FaultEpoch != "S2-w1" || ops[1].FaultEpoch != "" {
		t.Fatalf("stamped %d ambiguous %d, ops %q %q", stamped, ambiguous, ops[0].FaultEpoch, ops[1].FaultEpoch)
	}
}

const rawHistory = `{"_meta": {"scenario":"S1","seed":7,"clock":"monotonic","origin_unix_ns":1700000000000000000,"schema":"dst-history/1"}}
{"op_id": "1", "process_id": "p1", "invoke_ts": 100, "complete_ts": 200, "op_type": "write", "key": "k", "input": 1, "output": null, "error": null, "timeout_marker": false, "node_seen": null, "fault_epoch": null}
{"op_id":"2","process_id":"p1","invoke_ts":1100,"complete_ts":1200,"op_type":"read","key":"k","input":null,"output":1,"error":null,"timeout_marker":false,"node_seen":"n1","fault_epoch":null}
{"op_id":"3","process_id":"p2","invoke_ts":1300,"complete_ts":null,"op_type":"read","key":"k","input":null,"output":null,"error":"timeout","timeout_marker":true,"node_seen":"n1","fault_epoch" : ""}
{"op_id":"5","process_id":"p2","invoke_ts":1300,"complete_ts":1400,"op_type":"read","key":"k","input":null,"output":1,"error":null,"timeout_marker":false,"node_seen":"n1"}
this is not json
{"op_id":"4","process_id":"p2","invoke_ts":1500,"complete_ts":1600,"op_type":"read","key":"k","input":null,"output":1,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":"driver"}
`

func TestStampFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(path, []byte(rawHistory), 0o644); err != nil {
		t.Fatal(err)
	}
	windows := []session.FaultWindow{{FaultEpoch: "S1-w1", InjectedAtNS: i64(1000), RevertedAtNS: i64(2000)}}
	stamped, ambiguous, err := stampFile(path, windows, 10)
	var bad *malformedLinesError
	if !errors.As(err, &bad) || len(bad.Lines) != 2 || !strings.Contains(bad.Error(), "history.jsonl:5") {
		t.Fatalf("err %v, want the malformed lines 5 and 6 reported", err)
	}
	if stamped != 2 || ambiguous != 0 {
		t.Fatalf("stamped %d ambiguous %d, want 2 and 0", stamped, ambiguous)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "history.raw.jsonl"))
	if err != nil || string(raw) != rawHistory {
		t.Fatalf("history.raw.jsonl is not the driver's original (%v)", err)
	}
	got, _ := os.ReadFile(path)
	gl, rl := strings.Split(string(got), "\n"), strings.Split(rawHistory, "\n")
	if len(gl) != len(rl) {
		t.Fatalf("%d lines, want %d", len(gl), len(rl))
	}
	want := map[int]string{
		2: strings.Replace(rl[2], `"fault_epoch":null`, `"fault_epoch":"S1-w1"`, 1),
		3: strings.Replace(rl[3], `"fault_epoch" : ""`, `"fault_epoch":"S1-w1"`, 1),
	}
	for i := range rl {
		w, ok := want[i]
		if !ok {
			w = rl[i] // header, unstamped, malformed (no fault_epoch column, not JSON), driver-stamped: byte for byte
		}
		if gl[i] != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, gl[i], w)
		}
	}
	meta, ops, badLines, err := history.ReadFile(path)
	if err != nil || len(badLines) != 2 || meta.OriginUnixNS != 1700000000000000000 || len(ops) != 4 {
		t.Fatalf("read back: meta %+v, %d ops, bad %v, err %v", meta, len(ops), badLines, err)
	}

	// Stamping again starts from the driver's original: same file, same counts.
	s2, a2, _ := stampFile(path, windows, 10)
	again, _ := os.ReadFile(path)
	raw2, _ := os.ReadFile(filepath.Join(dir, "history.raw.jsonl"))
	if s2 != stamped || a2 != ambiguous || !bytes.Equal(again, got) || string(raw2) != rawHistory {
		t.Fatalf("a second StampFile changed the result (stamped %d, ambiguous %d)", s2, a2)
	}
}

// TestStampFileOddLine: a line whose fault_epoch cannot be filled in place
// (written twice) is rewritten by the history writer, still as the same op.
func TestStampFileOddLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	line := `{"_meta":{"clock":"wall"}}` + "\n" + `{"op_id":"1","process_id":"p","invoke_ts":5,"complete_ts":6,"op_type":"read","key":"k","input":{"fault_epoch":null},"output":null,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":null}` + "\r\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	n, _, err := stampFile(path, []session.FaultWindow{{FaultEpoch: "S1-w1", InjectedAtNS: i64(0), RevertedAtNS: i64(10)}}, 0)
	if err != nil || n != 1 {
		t.Fatalf("stamped %d, err %v", n, err)
	}
	_, ops, bad, _ := history.ReadFile(path)
	if len(ops) != 1 || len(bad) != 0 || ops[0].FaultEpoch != "S1-w1" || string(ops[0].Input) != `{"fault_epoch":null}` {
		t.Fatalf("ops %+v bad %v", ops, bad)
	}
	got, _ := os.ReadFile(path)
	if !bytes.HasSuffix(got, []byte("\r\n")) {
		t.Fatalf("line ending lost: %q", got)
	}
}

func TestStampFileMissing(t *testing.T) {
	_, _, err := stampFile(filepath.Join(t.TempDir(), "none.jsonl"), nil, 0)
	if err == nil || !strings.Contains(err.Error(), "stamp history") {
		t.Fatalf("err %v", err)
	}
}

func TestPlaceable(t *testing.T) {
	mono := []history.Op{op("1", 5_000, i64(6_000), "")}
	wall := []history.Op{op("1", 1_700_000_000_000_000_000, nil, "")}
	tests := []struct {
		name string
		meta history.Meta
		ops  []history.Op
		want bool
	}{
		{"monotonic with origin", history.Meta{Clock: "monotonic", OriginUnixNS: 1_700_000_000_000_000_000}, mono, true},
		{"wall clock", history.Meta{Clock: "wall"}, wall, true},
		{"no header, Unix ns timestamps", history.Meta{}, wall, true},
		{"monotonic without origin", history.Meta{Clock: "monotonic"}, mono, false},
		{"no header, small timestamps", history.Meta{}, mono, false},
		{"monotonic without origin, Unix-like values", history.Meta{Clock: "monotonic"}, wall, false},
	}
	for _, tc := range tests {
		if got := placeable(tc.meta, tc.ops); got != tc.want {
			t.Errorf("%s: Placeable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStampFileRefusesNoOrigin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	data := `{"_meta":{"clock":"monotonic","schema":"dst-history/1"}}
{"op_id":"1","process_id":"p","invoke_ts":5,"complete_ts":6,"op_type":"read","key":"k","input":null,"output":null,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":null}
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	n, _, err := stampFile(path, []session.FaultWindow{{FaultEpoch: "S1-w1", InjectedAtNS: i64(0), RevertedAtNS: i64(10)}}, 0)
	if !errors.Is(err, errNoOrigin) || n != 0 {
		t.Fatalf("stamped %d, err %v; want ErrNoOrigin", n, err)
	}
	if got, _ := os.ReadFile(path); string(got) != data {
		t.Fatal("a refused history was rewritten")
	}
}

// mergeShares puts two hosts' histories on the control node's clock — each
// op moved by its history's origin and its host's offset, widened by its
// host's uncertainty — and names each id's host.
func TestMergeShares(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, origin int64, ops ...history.Op) string {
		p := filepath.Join(dir, name)
		b := append(history.AppendMeta(nil, history.Meta{Clock: "monotonic", OriginUnixNS: origin, Recorder: "in-process"}), '\n')
		for i := range ops {
			b = append(history.AppendJSON(b, &ops[i]), '\n')
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	done := func(ns int64) *int64 { return &ns }
	op := func(id string, inv int64, c *int64) history.Op {
		return history.Op{OpID: id, ProcessID: "c0.0", InvokeTS: inv, CompleteTS: c, OpType: "write", Key: "k", Input: []byte("1")}
	}
	// Host a's clock is 5 ms ahead of the control node's, host b's 2 ms
	// behind; b's history started 100 ms (control time) after a's.
	const ms = int64(time.Millisecond)
	a := write("a.jsonl", 1_000_000*ms+5*ms, op("1", 10*ms, done(20*ms)))
	b := write("b.jsonl", 1_000_100*ms-2*ms, op("1", 10*ms, nil))
	out := filepath.Join(dir, "merged.jsonl")
	n, u, err := mergeShares([]shareHistory{{host: "a", path: a, offsetNS: 5 * ms, uncertaintyNS: ms}, {host: "b", path: b, offsetNS: -2 * ms, uncertaintyNS: 3 * ms}}, out)
	if err != nil || n != 2 || u != 6*ms {
		t.Fatalf("merged %d ops, uncertainty %v, %v; want 2, 6ms", n, time.Duration(u), err)
	}
	meta, ops, _, err := history.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if meta.OriginUnixNS != 1_000_000*ms || meta.Recorder != "in-process" {
		t.Errorf("merged header %+v: want origin at a's control-clock origin", meta)
	}
	want := []struct {
		id       string
		inv      int64
		complete *int64
	}{{"a/1", 9 * ms, done(21 * ms)}, {"b/1", 107 * ms, nil}}
	for i, w := range want {
		o := ops[i]
		if o.OpID != w.id || o.ProcessID != strings.Split(w.id, "/")[0]+"/c0.0" || o.InvokeTS != w.inv || (o.CompleteTS == nil) != (w.complete == nil) || o.CompleteTS != nil && *o.CompleteTS != *w.complete {
			t.Errorf("op %d = %s %s inv %v complete %v; want %s inv %v", i, o.OpID, o.ProcessID, time.Duration(o.InvokeTS), o.CompleteTS, w.id, time.Duration(w.inv))
		}
	}
	// A history that cannot be placed is refused, not merged on a guess.
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"op_id":"1","process_id":"p","invoke_ts":5,"complete_ts":6,"op_type":"write","key":"k","input":1,"output":null,"error":"","timeout_marker":false,"node_seen":"","fault_epoch":""}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mergeShares([]shareHistory{{host: "a", path: a}, {host: "c", path: bad}}, out); err == nil || !strings.Contains(err.Error(), "c: its history") {
		t.Errorf("unplaceable history merged: %v", err)
	}
}
