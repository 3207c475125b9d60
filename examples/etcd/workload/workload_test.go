package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/sshtest"
)

const etcdBin = "/usr/bin/etcd"

// startEtcd runs a single-member etcd on loopback with its own data dir and
// returns its client URL; cleanup kills it by PID.
func startEtcd(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(etcdBin); err != nil {
		t.Skipf("etcd not installed at %s: %v", etcdBin, err)
	}
	dir := t.TempDir()
	client := fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))
	cmd := exec.Command(etcdBin, "--name", "t1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "t1="+peer)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the child keeps its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(client + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return client
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
	t.Fatalf("etcd did not become healthy in 20s; log tail: %.2000s", log)
	return ""
}

func TestWorkloadAgainstEtcdIsLinearizable(t *testing.T) {
	endpoint := startEtcd(t)
	out := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{endpoints: []string{endpoint}, clients: 4, keys: 5, duration: 3 * time.Second,
		seed: 7, timeout: 2 * time.Second, scenario: "etcd-smoke"}
	st, err := run(context.Background(), cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	meta, ops, bad, err := history.ReadFile(out)
	if err != nil || len(bad) > 0 {
		t.Fatalf("history does not parse: %v %v", err, bad)
	}
	if meta.Scenario != "etcd-smoke" || meta.Clock != "monotonic" {
		t.Errorf("meta %+v", meta)
	}
	if len(ops) < 100 {
		t.Fatalf("only %d ops recorded (ok=%d)", len(ops), st.ok.Load())
	}
	if errs := history.Validate(out, ops, nil); len(errs) > 0 {
		t.Fatalf("recorder produced an invalid history: %v", errs[0])
	}
	kinds := map[string]int{}
	for _, o := range ops {
		kinds[o.OpType]++
		if o.NodeSeen != endpoint {
			t.Fatalf("node_seen %q, want %q", o.NodeSeen, endpoint)
		}
	}
	if kinds["read"] == 0 || kinds["write"] == 0 || kinds["cas"] == 0 {
		t.Errorf("op mix %v: want reads, writes and cas", kinds)
	}
	if weak := history.Weak(meta, ops, checker.Needs(checker.Linearizability, "kv")); len(weak) > 0 {
		t.Errorf("history weak for kv linearizability: %v", weak)
	}
	res, err := checker.Run(context.Background(), checker.Spec{Model: "kv", Checker: checker.Linearizability, Timeout: time.Minute}, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != checker.Valid {
		t.Fatalf("etcd history judged %s: %+v", res.Outcome, res.Anomalies)
	}
	t.Logf("%d ops (%v), %s in %v", len(ops), kinds, res.Evidence(), res.Elapsed)

	// The same history with one read corrupted must be caught: the check
	// above could not have passed vacuously.
	for i := range ops {
		if ops[i].OpType == "read" && ops[i].Output != nil {
			ops[i].Output = []byte("-42")
			break
		}
	}
	res, _ = checker.Run(context.Background(), checker.Spec{Model: "kv", Checker: checker.Linearizability}, ops, nil)
	if res.Outcome != checker.Invalid {
		t.Errorf("corrupted etcd history judged %s", res.Outcome)
	}
}

func TestWorkloadRefusedEndpointFails(t *testing.T) {
	cfg := config{endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))}, clients: 2, keys: 2,
		duration: 300 * time.Millisecond, seed: 1, timeout: 200 * time.Millisecond}
	f, err := os.Create(filepath.Join(t.TempDir(), "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := run(context.Background(), cfg, f)
	if err == nil {
		t.Fatal("no error with nothing listening")
	}
	// Refused connections never sent the request: definite failures. Only
	// the op each client had in flight when the run ended may be unknown.
	if st.failed.Load() == 0 || st.unknown.Load() > int64(cfg.clients) {
		t.Errorf("refused connections: failed=%d unknown=%d; want definite failures", st.failed.Load(), st.unknown.Load())
	}
}
