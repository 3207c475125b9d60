package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/sshtest"
	"gopkg.in/yaml.v3"
)

// TestEtcdFrameworkEndToEnd is the cluster-ready issue's proof, run the way
// a user runs the generated framework, with the real `task` binary and the
// real dstgen binary, on four network-namespace hosts without systemd:
// init on examples/etcd; env.yml filled in by a script (hosts, ssh, and the
// capabilities this testbed lacks, nothing else); validate (its summary
// line); deploy → a healthy 3-member etcd cluster; then a benchmark
// (bench:start, bench:status polled, bench:stop, collect, analyze) twice in
// a row on the same cluster, the second with its parameters overridden,
// each judged by the linearizability checker — and no false anomaly from
// the first run's state in the second.
func TestEtcdFrameworkEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds dstgen, starts 4 namespace hosts and etcd")
	}
	sshtest.Require(t)
	taskBin, err := exec.LookPath("task")
	if err != nil {
		t.Skip("the go-task binary is not on PATH (scripts/test.sh installs it)")
	}
	for _, b := range []string{"/usr/bin/etcd", "/usr/bin/etcdctl"} {
		if _, err := os.Stat(b); err != nil {
			t.Skipf("%s missing (apt-get install etcd-server etcd-client)", b)
		}
	}
	bin := buildDstgen(t)
	tb := sshtest.NewTestbed(t, 4)
	sut, err := filepath.Abs("../../examples/etcd")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "testing")
	if code, out, errs := runDstgen(t, "", "init", "--sut", sut, "--out", dir); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	fillEnv(t, dir, tb, map[string]any{"duration": 4, "rate": 60})

	// The real binary starts the connection holder: give it a private dir
	// of this test's and stop it by PID at the end.
	t.Setenv("DSTGEN_HOLDER_DIR", privateHolder(t))
	t.Setenv("DSTGEN_NO_HOLDER", "0")
	task := func(args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, taskBin, append([]string{"-x"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DSTGEN="+bin, "NO_COLOR=1", "DSTGEN_SSH_CONFIG=none")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("task %v: %v\n%s", args, err, b.String())
		}
		return code, b.String()
	}
	must := func(want string, args ...string) string {
		t.Helper()
		code, out := task(args...)
		if code != 0 {
			t.Fatalf("task %v: exit %d\n%s", args, code, out)
		}
		if !strings.Contains(out, want) {
			t.Fatalf("task %v output lacks %q:\n%s", args, want, out)
		}
		return out
	}

	out := must("capabilities:", "validate")
	if !regexp.MustCompile(`(?m)^capabilities: \d+ present, \d+ missing`).MatchString(out) {
		t.Errorf("validate has no one-line capability summary:\n%s", out)
	}
	out = must("health=ok", "deploy")
	if n := strings.Count(out, "health=ok"); n != 3 {
		t.Errorf("deploy reported %d healthy members, want 3:\n%s", n, out)
	}
	if strings.Contains(out, "client-1 sut=") {
		t.Errorf("deploy started the SUT on the client host:\n%s", out)
	}
	must("All critical checks passed", "check")
	// A reboot of a namespace host would reboot this machine: refused,
	// with the reason, even when confirmed.
	if code, out := task("clean:reboot", "CONFIRM=yes"); code != 1 || strings.Count(out, "reboot=refused") != 4 || !strings.Contains(out, "shares the control node's kernel") {
		t.Errorf("clean:reboot CONFIRM=yes on namespace hosts: exit %d, want 1 with 4 refusals:\n%s", code, out)
	}
	// check never says "passed" while the SUT is down; stop really stops.
	must("sut=stopped", "service:stop")
	if code, out := task("check"); code != 1 || strings.Contains(out, "All critical checks passed") {
		t.Errorf("check with the SUT stopped: exit %d, want 1 and no pass line:\n%s", code, out)
	}
	if code, out := task("service:status"); code != 1 {
		t.Errorf("service:status with the SUT stopped: exit %d, want 1:\n%s", code, out)
	}
	must("health=ok", "service:start")
	ep := "http://" + tb.Servers[0].Host + ":2379," + "http://" + tb.Servers[2].Host + ":2379"
	ctl := exec.Command("etcdctl", "--endpoints", ep, "--dial-timeout", "2s", "endpoint", "health", "--cluster")
	ctl.Env = append(os.Environ(), "ETCDCTL_API=3")
	if o, err := ctl.CombinedOutput(); err != nil || strings.Count(string(o), "is healthy") != 3 {
		t.Fatalf("cluster health through two members: %v\n%s", err, o)
	}

	runs := []struct {
		id   string
		sets []string
		rate float64
		dur  int
	}{
		{"r1", nil, 60, 4},
		{"r2", []string{"RATE=30", "DURATION=3"}, 30, 3}, // workflow 4's override, same cluster, no cleanup
	}
	for n, r := range runs {
		if n == 1 {
			// The second run the way people run it: bench:run starts,
			// polls (bench:wait) and stops in one task.
			must("post_benchmark_collection_complete", append([]string{"bench:run", "RUN_ID=" + r.id}, r.sets...)...)
			// bench:run goes on to bench:stop whatever the workload's exit
			// code; the run counts only if the workload itself succeeded.
			must("rc=0", "bench:status", "RUN_ID="+r.id)
		} else {
			must("benchmark_started pid=", append([]string{"bench:start", "RUN_ID=" + r.id}, r.sets...)...)
			// A network blip on the bench host: its status is
			// "unreachable" (exit 3), never "lost", and polling goes on.
			client := tb.Servers[len(tb.Servers)-1]
			blip := []string{"netns", "exec", client.NetNS, "iptables", "-I", "INPUT", "-p", "tcp", "--dport", "22", "-j", "DROP"}
			if out, err := exec.Command("ip", blip...).CombinedOutput(); err != nil {
				t.Fatalf("iptables in %s: %v %s", client.NetNS, err, out)
			}
			code, out := task("bench:status", "RUN_ID="+r.id)
			blip[4] = "-D"
			if o, err := exec.Command("ip", blip...).CombinedOutput(); err != nil {
				t.Fatalf("remove the DROP rule: %v %s", err, o)
			}
			if code != 3 || !strings.Contains(out, "status=unreachable") {
				t.Fatalf("bench:status during a blip: exit %d, want 3 with status=unreachable:\n%s", code, out)
			}
		}
		finished := n == 1
		for i := 0; i < 60 && !finished; i++ {
			code, out := task("bench:status", "RUN_ID="+r.id)
			switch code {
			case 0:
				finished = true
				if !strings.Contains(out, "rc=0") {
					logs, _ := exec.Command(bin, "job", "logs", "--host", "client-1", "--id", "bench-"+r.id, "--stderr", "--env", filepath.Join(dir, "env.yml")).CombinedOutput()
					head, _ := exec.Command(bin, "exec", "client-1", "--env", filepath.Join(dir, "env.yml"), "--", "head -n 3 "+tb.Workdirs[3]+"/results/"+r.id+"/history.jsonl; ETCDCTL_API=3 etcdctl --endpoints http://"+tb.Servers[0].Host+":2379 put a b; ip addr; ip route; ETCDCTL_API=3 etcdctl --endpoints http://"+tb.Servers[0].Host+":2379 get a").CombinedOutput()
					t.Fatalf("run %s: the workload exited non-zero:\n%s\nits stderr:\n%s\nits history:\n%s", r.id, out, logs, head)
				}
			case 1:
				time.Sleep(time.Second)
			default:
				t.Fatalf("run %s: bench:status exit %d\n%s", r.id, code, out)
			}
		}
		if !finished {
			t.Fatalf("run %s never finished", r.id)
		}
		if n == 0 {
			must("post_benchmark_collection_complete", "bench:stop", "RUN_ID="+r.id)
		}
		must("results_dir=results/run_"+r.id, "collect", "RUN_ID="+r.id)
		hist := filepath.Join(dir, "results", "run_"+r.id, "benchmark", "history.jsonl")
		_, ops, bad, err := history.ReadFile(hist)
		if err != nil || len(bad) > 0 {
			t.Fatalf("run %s: read history: %v %v", r.id, err, bad)
		}
		// The override reached the driver: at most rate × duration ops (the
		// driver's limiter has burst 1), and a run of its own keys.
		if max := int(r.rate*float64(r.dur)) + 5; len(ops) == 0 || len(ops) > max {
			t.Errorf("run %s: %d ops, want 1..%d (rate %v for %d s)", r.id, len(ops), max, r.rate, r.dur)
		}
		for _, op := range ops {
			if !strings.HasPrefix(op.Key, "dstgen/"+r.id+"/") {
				t.Fatalf("run %s: key %q is not in the run's namespace", r.id, op.Key)
			}
		}
		code, out := task("analyze", "RESULTS=results/run_"+r.id)
		if code != 0 {
			t.Fatalf("run %s: analyze exit %d (a false anomaly?):\n%s", r.id, code, out)
		}
		for _, want := range []string{"session_verdict=DONE\n", "linearizab"} {
			if !strings.Contains(out, want) {
				t.Errorf("run %s: analyze output lacks %q:\n%s", r.id, want, out)
			}
		}
		// The SUT's own logs come back with the run (it runs as a job here).
		if logs, _ := filepath.Glob(filepath.Join(dir, "results", "run_"+r.id, "logs", "etcd-*", "sut-etcd.stderr.log")); len(logs) != 3 {
			t.Errorf("run %s: collected %d SUT job logs, want one per member: %v", r.id, len(logs), logs)
		}
		// The report's target is the rate this run had (the override for r2).
		rep, err := os.ReadFile(filepath.Join(dir, "results", "run_"+r.id, "findings", "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("| %.1f |", r.rate); !strings.Contains(string(rep), want) {
			t.Errorf("run %s: report.md does not show target rate %v:\n%s", r.id, r.rate, rep)
		}
	}
}

// fillEnv writes testing/env.yml from env.example.yml the way a user's
// script would: hosts and ssh replaced, benchmark parameters set, the
// capabilities this testbed lacks switched off; every other generated
// value (sut:, the workload command and driver) kept as generated.
func fillEnv(t *testing.T, dir string, tb *sshtest.Testbed, bench map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "env.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["ssh"] = map[string]any{"user": sshtest.User, "key": tb.Keys.Key, "known_hosts": tb.Keys.KnownHosts, "config": "none"}
	var hosts []map[string]any
	for i, s := range tb.Servers {
		name, role := fmt.Sprintf("etcd-%d", i+1), "etcd"
		if i == len(tb.Servers)-1 {
			name, role = "client-1", "client"
		}
		hosts = append(hosts, map[string]any{"name": name, "address": s.Host, "port": s.Port, "roles": []string{role}, "workdir": tb.Workdirs[i]})
	}
	doc["hosts"] = hosts
	// Every host has its own work dir; the default one is never used, so a
	// path that only works through it fails the test.
	doc["workdir"] = "/nonexistent/dstgen-default"
	b := doc["benchmark"].(map[string]any)
	for k, v := range bench {
		b[k] = v
	}
	d := doc["dstgen"].(map[string]any)
	caps, _ := d["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
	}
	// Namespaces have no systemd, and the test's login user is not root.
	for _, c := range []string{"systemd", "iptables"} {
		if _, ok := caps[c]; ok {
			caps[c] = false
		}
	}
	d["capabilities"] = caps
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "env.yml"), out, 0o600); err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		j, _ := json.MarshalIndent(doc["sut"], "", "  ")
		t.Logf("sut: %s", j)
	}
}
