package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/sshtest"
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
	cfg := config{Config: driver.Config{Clients: 4, Duration: 3 * time.Second, Seed: 7, Timeout: 2 * time.Second, Scenario: "etcd-smoke"},
		endpoints: []string{endpoint}, keys: 5}
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
		t.Fatalf("only %d ops recorded (ok=%d)", len(ops), st.OK)
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
	// above could not have passed vacuously. The read is made to return a
	// value the history does write, but only after the read completed (a
	// value nobody wrote would be judged left-over state, not an anomaly).
	corrupted := false
	for i := 0; i < len(ops) && !corrupted; i++ {
		r := &ops[i]
		if r.OpType != "read" || r.Output == nil || r.CompleteTS == nil {
			continue
		}
		for j := i + 1; j < len(ops); j++ {
			w := &ops[j]
			if w.OpType == "write" && w.Key == r.Key && w.InvokeTS > *r.CompleteTS && string(w.Input) != string(r.Output) {
				r.Output, corrupted = w.Input, true
				break
			}
		}
	}
	if !corrupted {
		t.Fatal("no read followed by a later write of its key to corrupt")
	}
	res, _ = checker.Run(context.Background(), checker.Spec{Model: "kv", Checker: checker.Linearizability}, ops, nil)
	if res.Outcome != checker.Invalid {
		t.Errorf("corrupted etcd history judged %s", res.Outcome)
	}
}

func TestWorkloadRefusedEndpointFails(t *testing.T) {
	cfg := config{Config: driver.Config{Clients: 2, Duration: 300 * time.Millisecond, Seed: 1, Timeout: 200 * time.Millisecond},
		endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))}, keys: 2}
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
	if st.Failed == 0 || st.Unknown > int64(cfg.Clients) {
		t.Errorf("refused connections: failed=%d unknown=%d; want definite failures", st.Failed, st.Unknown)
	}
}

// envOf is a getenv over a fixed map: tests never touch the process
// environment.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// rawHeader decodes the history's first line, with the fields
// history.Meta does not know.
func rawHeader(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var h struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(line), &h); err != nil || h.Meta == nil {
		t.Fatalf("first line is not a _meta header: %v: %.200s", err, line)
	}
	return h.Meta
}

// checkKV reads a history and requires it valid and linearizable for kv.
func checkKV(t *testing.T, path string) (history.Meta, []history.Op) {
	t.Helper()
	meta, ops, bad, err := history.ReadFile(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("%s does not parse: %v %v", path, err, bad)
	}
	if errs := history.Validate(path, ops, nil); len(errs) > 0 {
		t.Fatalf("%s: invalid history: %v", path, errs[0])
	}
	res, err := checker.Run(context.Background(), checker.Spec{Model: "kv", Checker: checker.Linearizability, Timeout: time.Minute}, ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != checker.Valid {
		t.Fatalf("%s judged %s: %+v", path, res.Outcome, res.Anomalies)
	}
	return meta, ops
}

// Two runs in a row on one etcd, same seed, different run ids: the second
// must not read the first's values (the false violation users hit when
// both runs used keys k0..kN and seed 1).
func TestTwoRunsOnOneEtcdStayApart(t *testing.T) {
	endpoint := startEtcd(t)
	dir := t.TempDir()
	runIDs := []string{"20261201_183000", "20261201_184500"}
	keys := make([]map[string]bool, len(runIDs))
	values := make([]map[string]bool, len(runIDs))
	for i, id := range runIDs {
		out := filepath.Join(dir, id+".jsonl")
		var stderr bytes.Buffer
		// -keys 2 makes run 2 read keys run 1 wrote, were they shared.
		code := realMain(context.Background(), []string{"-endpoints", endpoint, "-duration", "2s", "-keys", "2", "-timeout", "2s"},
			envOf(map[string]string{"DSTGEN_RUN_ID": id, "DSTGEN_HISTORY": out, "DSTGEN_SEED": "1"}), &stderr)
		if code != 0 {
			t.Fatalf("run %s: exit %d: %s", id, code, stderr.String())
		}
		meta, ops := checkKV(t, out)
		if meta.Seed != 1 {
			t.Errorf("run %s: header seed %d, want 1", id, meta.Seed)
		}
		keys[i], values[i] = map[string]bool{}, map[string]bool{}
		reads := 0
		for _, o := range ops {
			if !strings.HasPrefix(o.Key, "dstgen/"+id+"/k") {
				t.Fatalf("run %s: key %q outside the run's prefix", id, o.Key)
			}
			keys[i][o.Key] = true
			if o.OpType == "write" {
				values[i][string(o.Input)] = true
			}
			if o.OpType == "read" && o.CompleteTS != nil && o.Error == "" {
				reads++
			}
		}
		if reads == 0 {
			t.Fatalf("run %s: no successful read: the check proves nothing", id)
		}
	}
	for k := range keys[1] {
		if keys[0][k] {
			t.Errorf("key %q of run 2 appears in run 1's history", k)
		}
	}
	for v := range values[1] {
		if values[0][v] {
			t.Errorf("value %s written by both runs", v)
		}
	}
}

// The DSTGEN_* contract alone configures a run: hosts, history path, run
// id, seed, duration, mode, dataset, scenario and tier.
func TestEnvContractAgainstEtcd(t *testing.T) {
	endpoint := startEtcd(t)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results", "S7", "history.jsonl") // directory made by the driver
	env := map[string]string{
		"DSTGEN_HISTORY": out, "DSTGEN_RUN_ID": "s7-run-1", "DSTGEN_SEED": "42", "DSTGEN_DURATION_S": "1.5",
		"DSTGEN_RATE": "0", "DSTGEN_MODE": "read", "DSTGEN_DATASET": "3", "DSTGEN_SCENARIO": "S7",
		"DSTGEN_TIER": "smoke", "DSTGEN_SUT_HOSTS": host + ":22",
	}
	var stderr bytes.Buffer
	if code := realMain(context.Background(), []string{"-client-port", port}, envOf(env), &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	meta, ops := checkKV(t, out)
	if meta.Scenario != "S7" || meta.Seed != 42 {
		t.Errorf("header %+v: want scenario S7, seed 42", meta)
	}
	if h := rawHeader(t, out); h["run_id"] != "s7-run-1" || h["tier"] != "smoke" {
		t.Errorf("header %v: want run_id s7-run-1, tier smoke", h)
	}
	kinds := map[string]int{}
	for _, o := range ops {
		kinds[o.OpType]++
		if o.NodeSeen != endpoint {
			t.Fatalf("node_seen %q, want %q (from DSTGEN_SUT_HOSTS and -client-port)", o.NodeSeen, endpoint)
		}
		if !strings.HasPrefix(o.Key, "dstgen/s7-run-1/k") || len(o.Key) != len("dstgen/s7-run-1/k0") || o.Key[len(o.Key)-1] > '2' {
			t.Fatalf("key %q: want dstgen/s7-run-1/k0..k2 (DSTGEN_DATASET=3)", o.Key)
		}
	}
	if kinds["read"] <= kinds["write"]+kinds["cas"] {
		t.Errorf("DSTGEN_MODE=read: op mix %v, want mostly reads", kinds)
	}
	last := strings.TrimSpace(stderr.String())
	if i := strings.LastIndex(last, "\n"); i >= 0 {
		last = last[i+1:]
	}
	for _, want := range []string{"out=" + out, "run_id=s7-run-1", "seed=42", "prefix=dstgen/s7-run-1", fmt.Sprintf("ops=%d", len(ops))} {
		if !strings.Contains(last, want) {
			t.Errorf("summary line %q lacks %q", last, want)
		}
	}
}

// DSTGEN_RATE caps the total op rate over all clients. Refused connections
// fail at once, so without the limit the clients would issue thousands of
// ops; only a loose upper bound is asserted (the machine is noisy).
func TestRateLimitBoundsOpCount(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.jsonl")
	env := map[string]string{"DSTGEN_HISTORY": out, "DSTGEN_RUN_ID": "rate", "DSTGEN_RATE": "20", "DSTGEN_DURATION_S": "2"}
	args := []string{"-endpoints", fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t)), "-clients", "4", "-timeout", "200ms"}
	var stderr bytes.Buffer
	if code := realMain(context.Background(), args, envOf(env), &stderr); code != 1 {
		t.Fatalf("exit %d with nothing listening, want 1: %s", code, stderr.String())
	}
	_, ops, bad, err := history.ReadFile(out)
	if err != nil || len(bad) > 0 {
		t.Fatalf("history does not parse: %v %v", err, bad)
	}
	if len(ops) == 0 || len(ops) > 60 {
		t.Errorf("%d ops at rate 20/s for 2s: want 1..60", len(ops))
	}
}

// The tests drive the program through the driver package's own entry
// points, the way main does, with their own arguments and environment.

// realMain is main on args and getenv: the exit code, stderr's lines.
func realMain(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	return driver.Exec(ctx, &config{}, args, driver.Env{Getenv: getenv, Stdout: io.Discard, Stderr: stderr})
}

// configFrom is the configuration main would run with; notes gets its
// notes.
func configFrom(args []string, getenv func(string) string, notes io.Writer) (config, error) {
	var c config
	_, err := driver.Configure(&c, args, driver.Env{Getenv: getenv, Stderr: notes})
	return c, err
}

// run drives a configuration built in the test (no flags) into w.
func run(ctx context.Context, cfg config, w io.Writer) (driver.Stats, error) {
	cfg.prepare()
	return driver.Run(ctx, &cfg.Config, &cfg, w)
}

// finalMain is `workload -final-only` with cfg's endpoints, prefix and
// bounds.
func finalMain(ctx context.Context, cfg config, stderr io.Writer) int {
	args := []string{"-final-only", "-final", cfg.Final, "-endpoints", strings.Join(cfg.endpoints, ","), "-prefix", cfg.Prefix,
		"-timeout", cfg.Timeout.String(), "-final-timeout", cfg.FinalTimeout.String()}
	return realMain(ctx, args, envOf(map[string]string{"DSTGEN_RUN_ID": "r"}), stderr)
}
