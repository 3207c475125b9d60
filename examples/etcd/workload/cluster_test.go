package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// startCluster runs an n-member etcd on loopback (each member its own
// ports and data dir) and returns the client URLs once every member
// answers /health; cleanup kills each member by PID.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	if _, err := os.Stat(etcdBin); err != nil {
		t.Skipf("etcd not installed at %s: %v", etcdBin, err)
	}
	dir := t.TempDir()
	clients, peers, initial := make([]string, n), make([]string, n), make([]string, n)
	for i := range n {
		clients[i] = fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))
		initial[i] = fmt.Sprintf("m%d=%s", i+1, peers[i])
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		cmd := exec.Command(etcdBin, "--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", "dstgen-workload-test")
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Start()
		logf.Close() // the child keeps its own descriptor
		if err != nil {
			t.Fatalf("start etcd %s: %v", name, err)
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
			_ = cmd.Wait()
		})
	}
	hc := &http.Client{Timeout: time.Second}
	for _, c := range clients {
		healthy := false
		for deadline := time.Now().Add(30 * time.Second); !healthy && time.Now().Before(deadline); {
			if resp, err := hc.Get(c + "/health"); err == nil {
				resp.Body.Close()
				healthy = resp.StatusCode == http.StatusOK
			}
			if !healthy {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !healthy {
			log, _ := os.ReadFile(filepath.Join(dir, "m1.log"))
			t.Fatalf("etcd member %s not healthy in 30s; m1 log tail: %.2000s", c, log)
		}
	}
	return clients
}

// S2's workload on a real 3-member etcd: every op a fresh key, the dump
// holds every member's range, and no-lost-ack and reconciliation pass on
// it — and fail once one member's copy of an acked key is gone.
func TestFreshPutsFinalStateOnEtcdCluster(t *testing.T) {
	eps := startCluster(t, 3)
	dir := t.TempDir()
	out, final := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "final.json")
	env := map[string]string{"DSTGEN_RUN_ID": "s2-run", "DSTGEN_HISTORY": out, "DSTGEN_FINAL": final,
		"DSTGEN_DURATION_S": "2", "DSTGEN_RATE": "100", "DSTGEN_MODE": "fresh-puts", "DSTGEN_SCENARIO": "S2"}
	var stderr bytes.Buffer
	if code := realMain(context.Background(), []string{"-endpoints", strings.Join(eps, ","), "-clients", "3"}, envOf(env), &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "members=3/3") || !strings.Contains(stderr.String(), "converged=true") {
		t.Errorf("summary: %s", stderr.String())
	}
	_, ops, bad, err := history.ReadFile(out)
	if err != nil || len(bad) > 0 {
		t.Fatalf("history: %v %v", err, bad)
	}
	if errs := history.Validate(out, ops, nil); len(errs) > 0 {
		t.Fatalf("invalid history: %v", errs[0])
	}
	fs, err := checker.LoadFinalState(final)
	if err != nil {
		t.Fatal(err)
	}
	acked := 0
	for _, o := range ops {
		if o.CompleteTS != nil && o.Error == "" {
			acked++
		}
	}
	if acked < 50 || len(fs.Keys) < acked || len(fs.Replicas) != 3 {
		t.Fatalf("%d acked puts, %d keys in the dump, %d replicas", acked, len(fs.Keys), len(fs.Replicas))
	}
	for _, id := range []string{checker.NoLostAck, checker.Reconciliation} {
		res, err := checker.Run(context.Background(), checker.Spec{Model: "map", Checker: id}, ops, fs)
		if err != nil || res.Outcome != checker.Valid {
			t.Fatalf("%s: %v %v %+v", id, err, res.Outcome, res.Anomalies)
		}
	}

	// The same dump re-read afterwards by -final-only (scenarios.yml's
	// final_state command) is identical.
	again := filepath.Join(dir, "again.json")
	env["DSTGEN_FINAL"] = again
	stderr.Reset()
	if code := realMain(context.Background(), []string{"-final-only", "-endpoints", strings.Join(eps, ",")}, envOf(env), &stderr); code != 0 {
		t.Fatalf("-final-only: exit %d: %s", code, stderr.String())
	}
	a, _ := os.ReadFile(final)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("-final-only dump differs from the end-of-run dump")
	}

	// One member missing one acked put: both checkers must see it.
	var lost string
	for _, o := range ops {
		if o.CompleteTS != nil && o.Error == "" {
			lost = o.Key
			break
		}
	}
	delete(fs.Replicas[eps[1]], lost)
	delete(fs.Keys, lost) // what the dump makes of a key one member lacks
	for _, id := range []string{checker.NoLostAck, checker.Reconciliation} {
		if res, _ := checker.Run(context.Background(), checker.Spec{Model: "map", Checker: id}, ops, fs); res.Outcome != checker.Invalid {
			t.Errorf("%s with %s missing on one member: %v, want invalid", id, lost, res.Outcome)
		}
	}
}

// A stop signal mid-run still closes the history and writes the dump.
func TestStopSignalStillDumps(t *testing.T) {
	eps := startCluster(t, 3)
	dir := t.TempDir()
	out, final := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "final.json")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel) // as SIGTERM does through signal.NotifyContext
	var stderr bytes.Buffer
	code := realMain(ctx, []string{"-endpoints", strings.Join(eps, ","), "-mode", "fresh-puts", "-duration", "60s"},
		envOf(map[string]string{"DSTGEN_RUN_ID": "stop", "DSTGEN_HISTORY": out, "DSTGEN_FINAL": final}), &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	fs, err := checker.LoadFinalState(final)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.Replicas) != 3 || len(fs.Keys) == 0 {
		t.Errorf("dump after stop: %d replicas, %d keys", len(fs.Replicas), len(fs.Keys))
	}
}

// -consistency s against 3 members: the history is valid dst-history/1
// and every member served reads (clients pinned one per endpoint); the
// request option itself is pinned by TestConsistencySetsSerializableOnReads.
// Whether this healthy run already shows a stale read is logged, not
// asserted: a follower lags the leader by a fraction of a millisecond on
// loopback, so it only sometimes does; the leader-isolation e2e is where
// the checker must catch it. The -consistency l run must be linearizable.
func TestSerializableReadsOnEtcdCluster(t *testing.T) {
	eps := startCluster(t, 3)
	for _, consistency := range []string{"l", "s"} {
		out := filepath.Join(t.TempDir(), "history.jsonl")
		var stderr bytes.Buffer
		env := map[string]string{"DSTGEN_RUN_ID": "neg-" + consistency, "DSTGEN_HISTORY": out, "DSTGEN_DURATION_S": "3", "DSTGEN_RATE": "200"}
		args := []string{"-endpoints", strings.Join(eps, ","), "-clients", "5", "-keys", "10", "-mix", "5/4/1", "-timeout", "1s", "-consistency", consistency}
		if code := realMain(context.Background(), args, envOf(env), &stderr); code != 0 {
			t.Fatalf("-consistency %s: exit %d: %s", consistency, code, stderr.String())
		}
		meta, ops, bad, err := history.ReadFile(out)
		if err != nil || len(bad) > 0 {
			t.Fatalf("history: %v %v", err, bad)
		}
		if errs := history.Validate(out, ops, nil); len(errs) > 0 {
			t.Fatalf("invalid history: %v", errs[0])
		}
		if weak := history.Weak(meta, ops, checker.Needs(checker.Linearizability, "kv")); len(weak) > 0 {
			t.Errorf("history weak for kv linearizability: %v", weak)
		}
		readsOn := map[string]int{}
		for _, o := range ops {
			if o.OpType == "read" && o.CompleteTS != nil {
				readsOn[o.NodeSeen]++
			}
		}
		for _, ep := range eps {
			if readsOn[ep] == 0 {
				t.Errorf("-consistency %s: no read served by %s (%v)", consistency, ep, readsOn)
			}
		}
		res, err := checker.Run(context.Background(), checker.Spec{Model: "kv", Checker: checker.Linearizability, Timeout: time.Minute}, ops, nil)
		if err != nil {
			t.Fatal(err)
		}
		if consistency == "l" && res.Outcome != checker.Valid {
			t.Fatalf("linearizable reads judged %s: %+v", res.Outcome, res.Anomalies)
		}
		t.Logf("-consistency %s: %d ops, reads per member %v, linearizability %s (%d anomalies)", consistency, len(ops), readsOn, res.Outcome, len(res.Anomalies))
	}
}
