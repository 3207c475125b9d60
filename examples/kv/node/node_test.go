package node

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// listener reserves a loopback port for a node.
func listener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// deadAddr is a loopback address nothing listens on (a refused dial).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln := listener(t)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// start serves a node on ln until the test ends.
func start(t *testing.T, cfg Config, ln net.Listener) *Node {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 300 * time.Millisecond
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("node did not stop within 10s")
		}
	})
	return n
}

// call does one request and returns the status and the decoded body.
func call(t *testing.T, method, addr, path, body string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// eventually polls cond every 20ms for at most 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10s", what)
}

func TestParsePeers(t *testing.T) {
	tests := []struct {
		in      string
		want    map[int]string
		wantErr string
	}{
		{"1=127.0.0.1:1,2=127.0.0.1:2", map[int]string{1: "127.0.0.1:1", 2: "127.0.0.1:2"}, ""},
		{" 3 = h:9 ,", map[int]string{3: "h:9"}, ""},
		{"", map[int]string{}, ""},
		{"1=127.0.0.1", nil, "want ID=HOST:PORT"},
		{"x=h:1", nil, "id ≥ 1"},
		{"0=h:1", nil, "id ≥ 1"},
		{"1=h:1,1=h:2", nil, "named twice"},
	}
	for _, tt := range tests {
		got, err := ParsePeers(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParsePeers(%q) error %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("ParsePeers(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			continue
		}
		for id, a := range tt.want {
			if got[id] != a {
				t.Errorf("ParsePeers(%q)[%d] = %q, want %q", tt.in, id, got[id], a)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	peers := map[int]string{1: "h:1", 2: "h:2", 3: "h:3"}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok follower", Config{ID: 2, Leader: 1, Peers: peers, Timeout: time.Second}, ""},
		{"ok lone leader", Config{ID: 1, Leader: 1, Timeout: time.Second}, ""},
		{"no id", Config{Leader: 1, Peers: peers, Timeout: time.Second}, "-id 0"},
		{"leader unknown", Config{ID: 2, Leader: 4, Peers: peers, Timeout: time.Second}, "-leader 4"},
		{"zero timeout", Config{ID: 1, Leader: 1, Peers: peers}, "-timeout"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: Validate() = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
	if got := (Config{ID: 1, Peers: peers}).Size(); got != 3 {
		t.Errorf("Size with self in peers = %d, want 3", got)
	}
	if got := (Config{ID: 1, Peers: map[int]string{2: "h:2", 3: "h:3"}}).Size(); got != 3 {
		t.Errorf("Size without self in peers = %d, want 3", got)
	}
}

// TestReplicateHandlerAppliesInOrder: entries already applied are skipped,
// the next ones applied, and a gap stops the batch, so the follower's copy
// is always a prefix of the leader's log.
func TestReplicateHandlerAppliesInOrder(t *testing.T) {
	e := func(seq uint64, v string) entry { return entry{Seq: seq, Key: "k", Value: json.RawMessage(v)} }
	tests := []struct {
		name        string
		batches     [][]entry
		wantApplied uint64
		wantValue   string
	}{
		{"in order", [][]entry{{e(1, "1"), e(2, "2")}}, 2, "2"},
		{"duplicate resent", [][]entry{{e(1, "1"), e(2, "2")}, {e(2, "2"), e(3, "3")}}, 3, "3"},
		{"gap stops", [][]entry{{e(1, "1"), e(3, "3")}}, 1, "1"},
		{"gap first", [][]entry{{e(2, "2")}}, 0, "null"},
	}
	for _, tt := range tests {
		n, err := New(Config{ID: 2, Leader: 1, Peers: map[int]string{1: "127.0.0.1:1"}, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(n.Handler())
		var applied float64
		for _, b := range tt.batches {
			body, _ := json.Marshal(replicateReq{Leader: 1, Entries: b})
			status, out := call(t, "POST", srv.Listener.Addr().String(), "/internal/replicate", string(body))
			if status != 200 {
				t.Fatalf("%s: replicate = %d %v", tt.name, status, out)
			}
			applied = out["applied"].(float64)
		}
		n.mu.Lock()
		v, ok := n.data["k"]
		n.mu.Unlock()
		if !ok {
			v = json.RawMessage("null")
		}
		if uint64(applied) != tt.wantApplied || string(v) != tt.wantValue {
			t.Errorf("%s: applied %v value %s, want %d %s", tt.name, applied, v, tt.wantApplied, tt.wantValue)
		}
		srv.Close()
	}
}

func TestReplicateRefusesAnotherLeader(t *testing.T) {
	n, err := New(Config{ID: 2, Leader: 1, Peers: map[int]string{1: "127.0.0.1:1"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	defer srv.Close()
	body, _ := json.Marshal(replicateReq{Leader: 3, Entries: []entry{{Seq: 1, Key: "k", Value: json.RawMessage("1")}}})
	if status, out := call(t, "POST", srv.Listener.Addr().String(), "/internal/replicate", string(body)); status != http.StatusConflict {
		t.Errorf("replicate from node 3 = %d %v, want 409", status, out)
	}
	if n.Status().Applied != 0 {
		t.Errorf("applied %d after a refused replicate, want 0", n.Status().Applied)
	}
}

// TestWriteNeedsMajority: with both followers unreachable the leader
// answers 503 timeout — yet the write is applied (a read at the leader
// sees it), which is why a driver must record it as indeterminate. With one
// follower up the write is acked.
func TestWriteNeedsMajority(t *testing.T) {
	l1, l2 := listener(t), listener(t)
	dead := deadAddr(t)
	peers := map[int]string{1: l1.Addr().String(), 2: l2.Addr().String(), 3: dead}
	start(t, Config{ID: 1, Leader: 1, Peers: peers}, l1)

	// Follower 2 not started yet: no majority.
	status, out := call(t, "PUT", l1.Addr().String(), "/kv/a/b", `7`)
	if status != http.StatusServiceUnavailable || out["error"] != ErrTimeout {
		t.Fatalf("PUT without a majority = %d %v, want 503 timeout", status, out)
	}
	if status, out := call(t, "GET", l1.Addr().String(), "/kv/a/b", ""); status != 200 || out["value"] != 7.0 {
		t.Fatalf("GET at the leader after the timed-out PUT = %d %v, want 200 value 7 (applied)", status, out)
	}

	start(t, Config{ID: 2, Leader: 1, Peers: peers}, l2)
	if status, out := call(t, "PUT", l1.Addr().String(), "/kv/a/b", `{"x":[1, 2]}`); status != 200 || out["ok"] != true {
		t.Fatalf("PUT with follower 2 up = %d %v, want 200 ok", status, out)
	}
	if status, out := call(t, "GET", l2.Addr().String(), "/kv/a/b", ""); status != 200 {
		t.Fatalf("GET at follower 2 = %d %v", status, out)
	} else if v, _ := json.Marshal(out["value"]); string(v) != `{"x":[1,2]}` {
		t.Fatalf("GET at follower 2 = %s, want {\"x\":[1,2]}", v)
	}
}

// TestHealedFollowerCatchesUp: entries a follower missed while down are
// resent in order once it is up, until it has applied all of them.
func TestHealedFollowerCatchesUp(t *testing.T) {
	l1, l2, l3 := listener(t), listener(t), listener(t)
	addr3 := l3.Addr().String()
	l3.Close() // node 3 is down for the writes
	peers := map[int]string{1: l1.Addr().String(), 2: l2.Addr().String(), 3: addr3}
	leader := start(t, Config{ID: 1, Leader: 1, Peers: peers}, l1)
	start(t, Config{ID: 2, Leader: 1, Peers: peers}, l2)
	for i := range 600 { // more than one batch
		key := "/kv/k" + string(rune('0'+i%3))
		if status, out := call(t, "PUT", l1.Addr().String(), key, `1`); status != 200 {
			t.Fatalf("PUT %d = %d %v", i, status, out)
		}
	}
	if status, _ := call(t, "PUT", l1.Addr().String(), "/kv/last", `"done"`); status != 200 {
		t.Fatal("last PUT failed")
	}
	ln3, err := net.Listen("tcp", addr3)
	if err != nil {
		t.Skipf("port of node 3 taken meanwhile: %v", err)
	}
	n3 := start(t, Config{ID: 3, Leader: 1, Peers: peers, StaleReads: true}, ln3)
	want := leader.Status().Applied
	eventually(t, "node 3 catches up", func() bool { return n3.Status().Applied == want })
	if status, out := call(t, "GET", addr3, "/kv/last", ""); status != 200 || out["value"] != "done" {
		t.Errorf("local read at node 3 after catch-up = %d %v, want done", status, out)
	}
}

// TestFollowerForwards: without the bug a follower answers nothing itself:
// both reads and writes go to the leader, and a leader it cannot dial is
// 503 unavailable (definitely not applied). With the bug it answers reads
// from its own copy, even while the leader is unreachable.
func TestFollowerForwards(t *testing.T) {
	l1, l2, l3 := listener(t), listener(t), listener(t)
	peers := map[int]string{1: l1.Addr().String(), 2: l2.Addr().String(), 3: l3.Addr().String()}
	start(t, Config{ID: 1, Leader: 1, Peers: peers}, l1)
	start(t, Config{ID: 2, Leader: 1, Peers: peers}, l2)
	start(t, Config{ID: 3, Leader: 1, Peers: peers}, l3)
	if status, out := call(t, "PUT", l2.Addr().String(), "/kv/x", `5`); status != 200 {
		t.Fatalf("PUT through follower 2 = %d %v", status, out)
	}
	if status, out := call(t, "GET", l3.Addr().String(), "/kv/x", ""); status != 200 || out["value"] != 5.0 {
		t.Fatalf("GET through follower 3 = %d %v, want 5", status, out)
	}
	if status, out := call(t, "GET", l3.Addr().String(), "/kv/none", ""); status != 200 || out["value"] != nil {
		t.Fatalf("GET of an unwritten key = %d %v, want null", status, out)
	}

	dead := deadAddr(t)
	cut := map[int]string{1: dead}
	tests := []struct {
		name       string
		stale      bool
		method     string
		body       string
		wantStatus int
		wantError  string
	}{
		{"safe read, leader unreachable", false, "GET", "", 503, ErrUnavailable},
		{"write, leader unreachable", false, "PUT", "1", 503, ErrUnavailable},
		{"stale read, leader unreachable", true, "GET", "", 200, ""},
		{"stale mode write, leader unreachable", true, "PUT", "1", 503, ErrUnavailable},
		{"bad value", false, "PUT", "{", 400, ""},
	}
	for _, tt := range tests {
		ln := listener(t)
		start(t, Config{ID: 2, Leader: 1, Peers: cut, StaleReads: tt.stale}, ln)
		status, out := call(t, tt.method, ln.Addr().String(), "/kv/x", tt.body)
		if status != tt.wantStatus || tt.wantError != "" && out["error"] != tt.wantError {
			t.Errorf("%s: %d %v, want %d %q", tt.name, status, out, tt.wantStatus, tt.wantError)
		}
	}
}

// TestForwardLoopRefused: a forwarded request that reaches a node that is
// not the leader (a -peers mistake) is refused, never forwarded again.
func TestForwardLoopRefused(t *testing.T) {
	l2, l3 := listener(t), listener(t)
	// Node 2 believes node 1 lives at node 3's address.
	start(t, Config{ID: 2, Leader: 1, Peers: map[int]string{1: l3.Addr().String()}}, l2)
	start(t, Config{ID: 3, Leader: 1, Peers: map[int]string{1: l2.Addr().String()}}, l3)
	status, out := call(t, "PUT", l2.Addr().String(), "/kv/x", "1")
	if status != http.StatusMisdirectedRequest {
		t.Errorf("PUT with a forward loop = %d %v, want 421", status, out)
	}
}

func TestHealthAndStatus(t *testing.T) {
	ln := listener(t)
	start(t, Config{ID: 1, Leader: 1}, ln)
	if status, out := call(t, "GET", ln.Addr().String(), "/health", ""); status != 200 || out["ok"] != true {
		t.Errorf("health = %d %v", status, out)
	}
	call(t, "PUT", ln.Addr().String(), "/kv/a", "1")
	status, out := call(t, "GET", ln.Addr().String(), "/status", "")
	if status != 200 || out["id"] != 1.0 || out["leader"] != 1.0 || out["applied"] != 1.0 {
		t.Errorf("status = %d %v, want id 1 leader 1 applied 1", status, out)
	}
}
