package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// ops builds one op every 10 ns from 0 to end; failed(t) says which fail.
func steadyOps(end int64, failed func(t int64) bool) []history.Op {
	var out []history.Op
	for t := int64(0); t < end; t += 10 {
		o := op(fmt.Sprint(t), t, i64(t+5), "")
		if failed(t) {
			o.Error, o.CompleteTS = "timeout", nil
			o.TimeoutMarker = true
		}
		out = append(out, o)
	}
	return out
}

func TestHistorySignal(t *testing.T) {
	w := session.FaultWindow{FaultEpoch: "S1-w1", InjectedAtNS: i64(1000), RevertedAtNS: i64(1500)}
	tests := []struct {
		name string
		ops  []history.Op
		w    session.FaultWindow
		want string
	}{
		{"error burst in the window", steadyOps(3000, func(t int64) bool { return t >= 1000 && t <= 1500 && t%20 == 0 }), w, session.SignalChanged},
		{"burst over a low baseline", steadyOps(3000, func(t int64) bool { return t == 600 || (t >= 1000 && t < 1200) }), w, session.SignalChanged},
		{"flat error rate", steadyOps(3000, func(t int64) bool { return t%100 == 0 }), w, session.SignalUnchanged},
		{"one failure is not a jump", steadyOps(3000, func(t int64) bool { return t == 1200 }), w, session.SignalUnchanged},
		{"no op in the window", append(steadyOps(900, func(int64) bool { return false }), op("late", 2000, i64(2001), "")), w, session.SignalAbsent},
		{"never injected", steadyOps(3000, func(int64) bool { return true }), session.FaultWindow{FaultEpoch: "S1-w1"}, session.SignalAbsent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := historySignal(tc.ops, []session.FaultWindow{tc.w}, 0)
			if ev.Kind != "history_error_rate" || ev.Verdict != tc.want {
				t.Fatalf("verdict %q (%s), want %q", ev.Verdict, ev.Raw, tc.want)
			}
		})
	}
	// A window at the start of the history has no span before it.
	amb := historySignal(steadyOps(3000, func(t int64) bool { return t < 500 }), []session.FaultWindow{{InjectedAtNS: i64(0), RevertedAtNS: i64(500)}}, 0)
	if amb.Verdict != session.SignalAmbiguous {
		t.Fatalf("no baseline: verdict %q (%s), want ambiguous", amb.Verdict, amb.Raw)
	}
}

// Back-to-back windows (every == for): the second window's baseline is
// fault-free time before the first, never the first window itself — or
// the second of two equal error bursts would read "unchanged".
func TestHistorySignalBaselineIsFaultFreeTime(t *testing.T) {
	wins := []session.FaultWindow{
		{FaultEpoch: "S1-w1", InjectedAtNS: i64(1000), RevertedAtNS: i64(1500)},
		{FaultEpoch: "S1-w2", InjectedAtNS: i64(1500), RevertedAtNS: i64(2000)},
	}
	ops := steadyOps(3000, func(t int64) bool { return t >= 1000 && t < 2000 && t%10 == 0 })
	for i := range wins {
		if ev := historySignal(ops, wins, i); ev.Verdict != session.SignalChanged {
			t.Errorf("%s: verdict %q (%s), want changed against the fault-free time before S1-w1", wins[i].FaultEpoch, ev.Verdict, ev.Raw)
		}
	}
	// The fault-free stretch is as long as the window, across a gap.
	got := faultFree(wins, 1, 1500, 500)
	if len(got) != 1 || got[0] != [2]int64{500, 1000} {
		t.Errorf("faultFree = %v, want [[500 1000]]", got)
	}
}

func TestMetricSignal(t *testing.T) {
	tests := []struct {
		before, after float64
		expect, want  string
	}{
		{1, 2, "", session.SignalChanged},
		{1, 2, "rise", session.SignalChanged},
		{2, 2, "rise", session.SignalUnchanged},
		{2, 1, "rise", session.SignalUnchanged},
		{2, 1, "fall", session.SignalChanged},
		{1, 2, "fall", session.SignalUnchanged},
		{2, 1, "change", session.SignalChanged},
		{2, 2, "change", session.SignalUnchanged},
		{1, 2, "up", session.SignalAmbiguous},
	}
	for _, tc := range tests {
		ev := metricSignal("leader_changes", tc.before, tc.after, tc.expect)
		if ev.Verdict != tc.want || ev.Kind != "metric" || *ev.Delta != tc.after-tc.before {
			t.Errorf("%v→%v expect %q: %+v, want %s", tc.before, tc.after, tc.expect, ev, tc.want)
		}
	}
}

func TestLeaderSignal(t *testing.T) {
	tests := []struct{ before, after, want string }{
		{"n1", "n2", session.SignalChanged},
		{"", "n2", session.SignalChanged},
		{"n1", "n1", session.SignalUnchanged},
		{"n1", "", session.SignalAbsent},
	}
	for _, tc := range tests {
		ev := leaderSignal(tc.before, tc.after)
		var b, a string
		_ = json.Unmarshal(ev.Before, &b)
		_ = json.Unmarshal(ev.After, &a)
		if ev.Verdict != tc.want || ev.Kind != "leader_change" || b != tc.before || a != tc.after {
			t.Errorf("%q→%q: %+v, want %s", tc.before, tc.after, ev, tc.want)
		}
	}
}

func TestThroughput(t *testing.T) {
	s := int64(time.Second)
	ms := int64(time.Millisecond)
	ops := []history.Op{
		op("1", 1*s+100*ms, i64(1*s+110*ms), ""),
		op("2", 1*s+500*ms, i64(1*s+530*ms), ""),
		op("3", 2*s+10*ms, nil, ""),
		op("4", 3*s+900*ms, i64(4*s+100*ms), ""),
	}
	ops[2].TimeoutMarker = true
	w := throughput(ops, 0, nil)
	if w.OpsProduced != 4 || w.IntervalNS != s || *w.FirstOpNS != 1*s+100*ms || *w.LastOpNS != 4*s+100*ms {
		t.Fatalf("workload %+v", w)
	}
	want := []session.Interval{
		{StartNS: 1 * s, Ops: 2, P50Ms: 10, P95Ms: 30, P99Ms: 30},
		{StartNS: 2 * s, Ops: 1, Errors: 1},
		{StartNS: 3 * s, Ops: 1, P50Ms: 200, P95Ms: 200, P99Ms: 200},
	}
	if fmt.Sprint(w.Throughput) != fmt.Sprint(want) {
		t.Fatalf("series\n got %+v\nwant %+v", w.Throughput, want)
	}
	if e := throughput(nil, 0, nil); e.OpsProduced != 0 || e.Throughput != nil || e.FirstOpNS != nil {
		t.Fatalf("empty history: %+v", e)
	}
	// A long run widens the interval instead of growing the series past
	// maxIntervals; garbage timestamps give counts without a series.
	long := throughput([]history.Op{op("a", 0, nil, ""), op("b", 1<<59, nil, "")}, time.Second, nil)
	if len(long.Throughput) > maxIntervals || long.IntervalNS <= s || long.OpsProduced != 2 {
		t.Fatalf("long history: %d intervals of %d ns", len(long.Throughput), long.IntervalNS)
	}
	if g := throughput([]history.Op{op("a", -1<<62, nil, ""), op("b", 1<<62, nil, "")}, time.Second, nil); g.OpsProduced != 2 || g.Throughput != nil {
		t.Fatalf("garbage timestamps: %+v", g)
	}
}

// shExec runs scripts with the local /bin/sh: the pure parts of the log
// signals (no SSH) and the quoting test.
type shExec struct{}

func (shExec) Run(ctx context.Context, _ env.Host, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, oneline.Cut(errb.String(), 200))
	}
	return out.String(), nil
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// logHosts makes two hosts with a log each (one not created yet) under dir.
func logHosts(dir string) []nemesis.Host {
	return []nemesis.Host{
		{Host: env.Host{Name: "h1"}, SUT: &nemesis.SUT{Logs: []string{filepath.Join(dir, "h1 sut.log")}}},
		{Host: env.Host{Name: "h2"}, SUT: &nemesis.SUT{Logs: []string{filepath.Join(dir, "h2.log")}}},
		{Host: env.Host{Name: "client"}},
	}
}

// checkLogSignal drives LogSizes → writes → LogSignal through x.
func checkLogSignal(t *testing.T, x nemesis.Exec, dir string) {
	t.Helper()
	ctx := context.Background()
	hosts := logHosts(dir)
	appendFile(t, hosts[0].SUT.Logs[0], "old: elected leader\n")
	sizes, err := logSizes(ctx, x, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if sizes["h1"][hosts[0].SUT.Logs[0]] != int64(len("old: elected leader\n")) || sizes["h2"][hosts[1].SUT.Logs[0]] != 0 {
		t.Fatalf("sizes %v", sizes)
	}
	if _, ok := sizes["client"]; ok {
		t.Fatal("a host without logs has sizes")
	}
	re := `elected (leader|new term)`
	ev, err := logSignal(ctx, x, hosts, sizes, re)
	if err != nil || ev.Verdict != session.SignalUnchanged || string(ev.After) != "0" {
		t.Fatalf("before any new line: %+v, %v", ev, err)
	}
	appendFile(t, hosts[0].SUT.Logs[0], "noise\nraft: elected leader at term 3\nelected new term 4\n")
	appendFile(t, hosts[1].SUT.Logs[0], "h2 elected new term 4\n")
	ev, err = logSignal(ctx, x, hosts, sizes, re)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "log_marker" || ev.Name != re || ev.Verdict != session.SignalChanged || string(ev.After) != "3" || string(ev.Before) != "0" {
		t.Fatalf("after the marker: %+v", ev)
	}
	if ev.Raw != "h1: raft: elected leader at term 3\nh2: h2 elected new term 4" {
		t.Fatalf("raw %q", ev.Raw)
	}
}

func TestLogSignalLocal(t *testing.T) {
	checkLogSignal(t, shExec{}, t.TempDir())
}

func TestLogSignalRotatedLog(t *testing.T) {
	dir := t.TempDir()
	hosts := logHosts(dir)[:1]
	appendFile(t, hosts[0].SUT.Logs[0], strings.Repeat("x", 500)+"\n")
	sizes, _ := logSizes(context.Background(), shExec{}, hosts)
	if err := os.WriteFile(hosts[0].SUT.Logs[0], []byte("MARK after rotation\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := logSignal(context.Background(), shExec{}, hosts, sizes, "MARK")
	if err != nil || ev.Verdict != session.SignalChanged {
		t.Fatalf("a rotated log lost its new lines: %+v, %v", ev, err)
	}
}

func TestLogSignalBadRegexAndNoLogs(t *testing.T) {
	dir := t.TempDir()
	hosts := logHosts(dir)
	appendFile(t, hosts[0].SUT.Logs[0], "line\n")
	sizes, _ := logSizes(context.Background(), shExec{}, hosts)
	if _, err := logSignal(context.Background(), shExec{}, hosts, sizes, "(unclosed"); err == nil || !strings.Contains(err.Error(), "rejects the regular expression") {
		t.Fatalf("bad regex: err %v", err)
	}
	ev, err := logSignal(context.Background(), shExec{}, hosts[2:], nil, "x")
	if err != nil || ev.Verdict != session.SignalAbsent {
		t.Fatalf("no logs: %+v, %v", ev, err)
	}
}

// TestLogSignalQuoting: a regex and a log path full of shell syntax are
// searched for, never run.
func TestLogSignalQuoting(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "ran")
	evil := []string{
		`$(touch ` + canary + `)`,
		"`touch " + canary + "`",
		`'; touch ` + canary + `; echo '`,
		`"; touch ` + canary + `; echo "`,
	}
	// A file name has no "/": a command in it would touch "ran-canary" in
	// the working directory.
	logPath := filepath.Join(dir, `it's $(touch ran-canary) "q" `+"`touch ran-canary`"+`.log`)
	hosts := []nemesis.Host{{Host: env.Host{Name: "h1"}, SUT: &nemesis.SUT{Logs: []string{logPath}}}}
	sizes, err := logSizes(context.Background(), shExec{}, hosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range evil {
		appendFile(t, logPath, "literal "+re+"\n")
		if _, err := logSignal(context.Background(), shExec{}, hosts, sizes, re); err != nil && !strings.Contains(err.Error(), "regular expression") {
			t.Fatalf("%q: %v", re, err)
		}
		if _, err := os.Stat(canary); err == nil {
			t.Fatalf("regex %q ran a command", re)
		}
	}
	if _, err := os.Stat("ran-canary"); err == nil {
		os.Remove("ran-canary")
		t.Fatal("a log path ran a command")
	}
}

func TestMetricValueLocal(t *testing.T) {
	hosts := logHosts(t.TempDir())[:2]
	v, err := metricValue(context.Background(), shExec{}, hosts, "echo noise; echo '  2.5 ops'")
	if err != nil || v != 5 {
		t.Fatalf("sum %v, err %v; want 5", v, err)
	}
	if _, err := metricValue(context.Background(), shExec{}, hosts, "echo none"); err == nil || !strings.Contains(err.Error(), `printed "none", not a number`) {
		t.Fatalf("err %v", err)
	}
	if _, err := metricValue(context.Background(), shExec{}, hosts, "exit 3"); err == nil || !strings.Contains(err.Error(), "host h1") {
		t.Fatalf("err %v", err)
	}
}

// TestSignalsOverSSH reads real log files and a metric on a real sshd on
// 127.0.0.1, through the run's runner.Shell over runner.Pool.
func TestSignalsOverSSH(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := sshtest.StartTrusted(t, k, 1)
	e, err := env.Load(k.WriteEnv(t, srvs, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	p := runner.NewPool(e, runner.Options{})
	t.Cleanup(func() { p.Close() })
	dir := sshtest.Workdir(t)
	x := hostExec{pool: runner.Shell{Pool: p}, host: e.Hosts[0]}
	checkLogSignal(t, x, dir)

	hosts := logHosts(dir)[:2]
	metric := filepath.Join(dir, "metric")
	appendFile(t, metric, "41\n")
	v, err := metricValue(context.Background(), x, hosts, "cat "+metric)
	if err != nil || v != 82 {
		t.Fatalf("metric over ssh: %v, %v; want 82", v, err)
	}
}

// hostExec sends every logical host's script to the one real sshd: the
// test's hosts are names over one machine.
type hostExec struct {
	pool runner.Shell
	host env.Host
}

func (x hostExec) Run(ctx context.Context, _ env.Host, script string) (string, error) {
	return x.pool.Run(ctx, x.host, script)
}

// all_started_ns is the latest of the client hosts' first invokes, read
// from the host prefix mergeShares puts on process ids; one host, or a
// host that invoked nothing, gives none.
func TestThroughputAllStarted(t *testing.T) {
	s := int64(time.Second)
	on := func(host string, inv int64) history.Op {
		o := op(host+"/1", inv, i64(inv+1), "")
		o.ProcessID = host + "/p1"
		return o
	}
	ops := []history.Op{on("h4", 1*s), on("h4", 2*s), on("h5", 3*s), on("h5", 4*s), on("h4", 5*s)}
	cases := []struct {
		name    string
		drivers []string
		want    int64 // -1: none
	}{
		{"two hosts: the later first invoke", []string{"h4", "h5"}, 3 * s},
		{"one host", []string{"h4"}, -1},
		{"a host that invoked nothing", []string{"h4", "h5", "h6"}, -1},
		{"no merge", nil, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := throughput(ops, time.Second, c.drivers)
			switch {
			case c.want < 0 && w.AllStartedNS != nil:
				t.Fatalf("all_started_ns = %d, want none", *w.AllStartedNS)
			case c.want >= 0 && (w.AllStartedNS == nil || *w.AllStartedNS != c.want):
				t.Fatalf("all_started_ns = %v, want %d", w.AllStartedNS, c.want)
			}
		})
	}
}
