package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
)

// fakeMember is an in-memory stand-in for one member's JSON gateway: put,
// range (key/range_end/limit/count_only) and an always-failing txn. It
// records every range request so tests can read the options sent.
type fakeMember struct {
	mu     sync.Mutex
	kv     map[string]string
	rev    int64
	ranges []map[string]any
	srv    *httptest.Server
}

func newFakeMember(t *testing.T) *fakeMember {
	m := &fakeMember{kv: map[string]string{}, rev: 1}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeMember) set(k, v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kv[k] = v
	m.rev++
}

func unb64(t any) string {
	s, _ := t.(string)
	b, _ := base64.StdEncoding.DecodeString(s)
	return string(b)
}

func (m *fakeMember) serve(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	hdr := map[string]any{"revision": strconv.FormatInt(m.rev, 10)} // proto3 JSON: int64 as a string
	switch r.URL.Path {
	case "/v3/kv/put":
		m.kv[unb64(req["key"])] = unb64(req["value"])
		m.rev++
		_ = json.NewEncoder(w).Encode(map[string]any{"header": hdr})
	case "/v3/kv/range":
		m.ranges = append(m.ranges, req)
		from, end := unb64(req["key"]), unb64(req["range_end"])
		var keys []string
		for k := range m.kv {
			if k == from || (end != "" && k >= from && (k < end || end == "\x00")) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		limit, _ := req["limit"].(float64)
		more := limit > 0 && len(keys) > int(limit)
		if more {
			keys = keys[:int(limit)]
		}
		out := map[string]any{"header": hdr, "more": more}
		if c, _ := req["count_only"].(bool); !c {
			var kvs []map[string]string
			for _, k := range keys {
				kvs = append(kvs, map[string]string{"key": b64([]byte(k)), "value": b64([]byte(m.kv[k]))})
			}
			out["kvs"] = kvs
		}
		_ = json.NewEncoder(w).Encode(out)
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"header": hdr, "succeeded": false})
	}
}

// -consistency s makes every read a serializable range (what
// clientv3.WithSerializable() sends); the default sends none.
func TestConsistencySetsSerializableOnReads(t *testing.T) {
	for _, tt := range []struct {
		flag string
		want bool
	}{{"l", false}, {"s", true}} {
		t.Run(tt.flag, func(t *testing.T) {
			m := newFakeMember(t)
			out := filepath.Join(t.TempDir(), "h.jsonl")
			var stderr bytes.Buffer
			code := realMain(context.Background(), []string{"-endpoints", m.srv.URL, "-consistency", tt.flag, "-mode", "read", "-ops", "200", "-duration", "20s"},
				envOf(map[string]string{"DSTGEN_RUN_ID": "r", "DSTGEN_HISTORY": out}), &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if len(m.ranges) < 50 {
				t.Fatalf("%d range requests in 200 mostly-read ops", len(m.ranges))
			}
			for _, req := range m.ranges {
				if s, _ := req["serializable"].(bool); s != tt.want {
					t.Fatalf("-consistency %s: range request %v, want serializable=%v", tt.flag, req, tt.want)
				}
			}
			if body := rangeBody("k", tt.want); (body["serializable"] == true) != tt.want {
				t.Errorf("rangeBody(%v) = %v", tt.want, body)
			}
		})
	}
}

// The dump reads every member's own range, page by page; keys keeps only
// what all answering members agree on, so a put missing on one member is
// a lost ack to the checker and the replicas show which member lacks it.
func TestDumpFinalAcrossMembers(t *testing.T) {
	ms := []*fakeMember{newFakeMember(t), newFakeMember(t), newFakeMember(t)}
	const n = 2500 // three pages of dumpPage
	for i := 0; i < n; i++ {
		for _, m := range ms {
			m.set("dstgen/r/s2/0/"+strconv.Itoa(i), strconv.Itoa(1000+i))
		}
	}
	ms[1].mu.Lock()
	delete(ms[1].kv, "dstgen/r/s2/0/7") // member 2 lost one put
	ms[1].mu.Unlock()
	ms[2].set("dstgen/r/s2/0/8", "99") // member 3 holds another value
	for _, m := range ms {
		m.set("dstgen/other-run/k0", "1") // outside the prefix
		m.set("dstgen/r0/k0", "1")        // a sibling run's prefix
	}
	ms[0].set("dstgen/r/k1", "not json")
	ms[1].set("dstgen/r/k1", "not json")
	ms[2].set("dstgen/r/k1", "not json")

	down := "http://127.0.0.1:1" // nothing listens on port 1
	cfg := config{Config: driver.Config{Prefix: "dstgen/r", Timeout: time.Second, FinalTimeout: 4 * time.Second, Final: filepath.Join(t.TempDir(), "sub", "final.json")},
		endpoints: []string{ms[0].srv.URL, ms[1].srv.URL, ms[2].srv.URL, down}}
	var stderr bytes.Buffer
	if code := finalMain(context.Background(), cfg, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"members=3/4", "keys=2499", "diverged=2", "without member " + down} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("summary %q lacks %q", stderr.String(), want)
		}
	}
	if strings.Contains(stderr.String(), "converged=true") {
		t.Error("converged with a member down")
	}
	fs, err := checker.LoadFinalState(cfg.Final) // the checkers' own reader, unknown fields refused
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.Replicas) != 3 || len(fs.Replicas[ms[0].srv.URL]) != n+1 || len(fs.Replicas[ms[1].srv.URL]) != n {
		t.Errorf("replicas: %d members, sizes %d/%d", len(fs.Replicas), len(fs.Replicas[ms[0].srv.URL]), len(fs.Replicas[ms[1].srv.URL]))
	}
	if _, ok := fs.Keys["dstgen/r/s2/0/7"]; ok {
		t.Error("a key one member lacks is in keys")
	}
	if _, ok := fs.Keys["dstgen/r/s2/0/8"]; ok {
		t.Error("a key the members disagree on is in keys")
	}
	if string(fs.Keys["dstgen/r/s2/0/9"]) != "1009" || string(fs.Keys["dstgen/r/k1"]) != `"not json"` {
		t.Errorf("keys: s2/0/9=%s k1=%s", fs.Keys["dstgen/r/s2/0/9"], fs.Keys["dstgen/r/k1"])
	}
	for k := range fs.Replicas[ms[0].srv.URL] {
		if !strings.HasPrefix(k, "dstgen/r/") {
			t.Errorf("key %q outside the run's prefix", k)
		}
	}
	for _, m := range ms[:1] {
		m.mu.Lock()
		for _, req := range m.ranges {
			if s, _ := req["serializable"].(bool); !s {
				t.Errorf("dump range %v not serializable", req)
			}
		}
		var pinned int
		for _, req := range m.ranges {
			if _, ok := req["revision"]; ok {
				pinned++
			}
		}
		if pinned != 2 {
			t.Errorf("%d pages pinned to the first page's revision, want 2", pinned)
		}
		m.mu.Unlock()
	}
	if _, err := os.Stat(cfg.Final + ".tmp"); !os.IsNotExist(err) {
		t.Error("temp file left beside the dump")
	}
}

func TestDumpFinalNoMemberIsAnError(t *testing.T) {
	cfg := config{Config: driver.Config{Prefix: "p", Timeout: 200 * time.Millisecond, FinalTimeout: time.Second, Final: filepath.Join(t.TempDir(), "final.json")},
		endpoints: []string{"http://127.0.0.1:1"}}
	var stderr bytes.Buffer
	if code := finalMain(context.Background(), cfg, &stderr); code != 1 || !strings.Contains(stderr.String(), "no member answered") {
		t.Errorf("exit %d, stderr %q: want 1 and no member answered", code, stderr.String())
	}
	if _, err := os.Stat(cfg.Final); !os.IsNotExist(err) {
		t.Error("a dump was written with no member read")
	}
}

// The fresh-puts history and its dump are what the no-lost-ack checker
// reads: valid as dumped, invalid once an acked key is missing.
func TestFreshPutsHistoryAndDumpCheck(t *testing.T) {
	m := newFakeMember(t)
	dir := t.TempDir()
	out, final := filepath.Join(dir, "h.jsonl"), filepath.Join(dir, "final.json")
	var stderr bytes.Buffer
	code := realMain(context.Background(), []string{"-endpoints", m.srv.URL, "-mode", "fresh-puts", "-clients", "2", "-ops", "50", "-duration", "20s", "-final-timeout", "2s"},
		envOf(map[string]string{"DSTGEN_RUN_ID": "fp", "DSTGEN_HISTORY": out, "DSTGEN_FINAL": final}), &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	meta, ops, bad, err := history.ReadFile(out)
	if err != nil || len(bad) > 0 || len(ops) != 50 {
		t.Fatalf("history: %v %v, %d ops", err, bad, len(ops))
	}
	if meta.OriginUnixNS == 0 {
		t.Error("header lacks origin_unix_ns")
	}
	keys := map[string]bool{}
	for _, o := range ops {
		if o.OpType != "write" || !strings.HasPrefix(o.Key, "dstgen/fp/s2/") || keys[o.Key] {
			t.Fatalf("op %+v: want a write of a fresh dstgen/fp/s2/ key", o)
		}
		keys[o.Key] = true
	}
	fs, err := checker.LoadFinalState(final)
	if err != nil {
		t.Fatal(err)
	}
	spec := checker.Spec{Model: "map", Checker: checker.NoLostAck}
	if res, err := checker.Run(context.Background(), spec, ops, fs); err != nil || res.Outcome != checker.Valid {
		t.Fatalf("dump as written: %v %v %+v", err, res.Outcome, res.Anomalies)
	}
	delete(fs.Keys, ops[10].Key)
	if res, _ := checker.Run(context.Background(), spec, ops, fs); res.Outcome != checker.Invalid {
		t.Errorf("an acked key removed from the dump: %v, want invalid", res.Outcome)
	}
}
