package orchestrator_test

// Speed figures of `dstgen run` (issue 9 "Speed"): benchmarks on real
// sshd hosts, reported as metrics and ratios, never asserted — the
// machine is shared and noisy. Run them with
//
//	go test ./orchestrator -run '^$' -bench . -benchtime 1x
//
// (as root: testsupport/sshtest starts the sshd servers).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// bed is n sshd hosts on 127.0.0.1, each with its own work dir holding the
// generated testing/scripts/collect-metrics.sh, an env.yml naming them,
// and a dstgen binary built from this tree.
type bed struct {
	bin, env string
	wds      []string
}

// newBed starts n hosts (h1..hn) and renders testing/ for examples/etcd
// with `dstgen init`, so the samplers are the generated ones.
func newBed(b *testing.B, n int) *bed {
	b.Helper()
	sshtest.Require(b)
	k := sshtest.NewKeys(b)
	srvs := sshtest.StartTrusted(b, k, n)
	bd := &bed{bin: filepath.Join(b.TempDir(), "dstgen")}
	if out, err := exec.Command("go", "build", "-o", bd.bin, "../cmd/dstgen").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	gen := filepath.Join(b.TempDir(), "testing")
	if out, err := exec.Command(bd.bin, "init", "--sut", "../examples/etcd", "--out", gen, "--yes").CombinedOutput(); err != nil {
		b.Fatalf("dstgen init: %v\n%s", err, out)
	}
	script, err := os.ReadFile(filepath.Join(gen, "scripts", "collect-metrics.sh"))
	if err != nil {
		b.Fatal(err)
	}
	var y strings.Builder
	fmt.Fprintf(&y, "ssh:\n  user: %s\n  key: %s\n  known_hosts: %s\nhosts:\n", sshtest.User, k.Key, k.KnownHosts)
	for i, s := range srvs {
		wd := sshtest.Workdir(b)
		if err := os.MkdirAll(filepath.Join(wd, "scripts"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, "scripts", "collect-metrics.sh"), script, 0o755); err != nil {
			b.Fatal(err)
		}
		bd.wds = append(bd.wds, wd)
		fmt.Fprintf(&y, "  - name: h%d\n    address: %s\n    port: %d\n    workdir: %s\n", i+1, s.Host, s.Port, wd)
	}
	bd.env = filepath.Join(b.TempDir(), "env.yml")
	if err := os.WriteFile(bd.env, []byte(y.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return bd
}

// histFor is a workload that writes dst-history/1 on the wall clock, one
// op every 0.1 s, for durS seconds.
func histFor(durS int) string {
	return `printf '{"_meta":{"schema":"dst-history/1","clock":"wall","scenario":"S1"}}\n' > "$DSTGEN_HISTORY"; i=0; while [ $i -lt ` +
		strconv.Itoa(durS*10) + ` ]; do t=$(date +%s%N); printf '{"op_id":"%d","process_id":"p0","invoke_ts":%s,"complete_ts":%s,"op_type":"write","key":"k","input":%d,"output":null,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":null}\n' $i $t $t $i >> "$DSTGEN_HISTORY"; i=$((i+1)); sleep 0.1; done`
}

// scenarioYAML is scenarios.yml with S1: the workload for durS seconds on
// h1 and one custom fault entry (flag file $DSTGEN_WORKDIR/fault-on;
// landing metric: the sum of the flags of every host).
func (bd *bed) scenarioYAML(b *testing.B, durS int, schedule string) string {
	b.Helper()
	var flags []string
	for _, wd := range bd.wds {
		flags = append(flags, filepath.Join(wd, "fault-on"))
	}
	metric := "cat " + strings.Join(flags, " ") + " 2>/dev/null | awk '{s+=$1} END {print s+0}'"
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	y := `version: 1
scenarios:
  - id: "S1"
    name: "bench"
    tiers:
      smoke:
        text: "3 nodes"
        duration_s: ` + strconv.Itoa(durS) + `
        seeds: 1
    workload:
      command: ` + q(histFor(durS)) + `
      host: "h1"
    faults:
      - nemesis: "custom"
        targets: "all"
` + schedule + `
        custom:
          inject: "echo 1 > \"$DSTGEN_WORKDIR/fault-on\""
          heal: "echo 0 > \"$DSTGEN_WORKDIR/fault-on\""
          evidence: "cat \"$DSTGEN_WORKDIR/fault-on\" 2>/dev/null || echo 0"
        landing:
          metric: ` + q(metric) + `
          expect: "rise"
`
	p := filepath.Join(b.TempDir(), "scenarios.yml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// line is one progress line of `dstgen run` and when it arrived.
type line struct {
	at   time.Time
	text string
}

// runTimed runs `dstgen run S1` into out, timestamping every stdout line
// as it arrives (session-log.md has whole seconds only).
func (bd *bed) runTimed(b *testing.B, scen, out string) (time.Time, time.Time, []line) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bd.bin, "run", "S1", "--env", bd.env, "--scenarios", scen, "--out", out, "--seed", "1", "--no-holder")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var lines []line
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		lines = append(lines, line{time.Now(), sc.Text()})
	}
	err = cmd.Wait()
	end := time.Now()
	if err != nil {
		var all strings.Builder
		for _, l := range lines {
			all.WriteString(l.text + "\n")
		}
		b.Fatalf("dstgen run: %v\nstderr %s\nstdout %s", err, stderr.String(), all.String())
	}
	return start, end, lines
}

// stageTimes splits the run into its stages by the arrival of each
// "phase=" line: startup (exec to the first line), each phase until the
// next, "collect" until the collect summary line, and "final-heal+write"
// (the deferred heal, run.json, the summary) until the process exited.
func stageTimes(start, end time.Time, lines []line) []stageTime {
	var out []stageTime
	cur, curAt := "startup", start
	for _, l := range lines {
		next := ""
		if i := strings.Index(l.text, " phase="); i >= 0 && strings.HasPrefix(l.text, "unit=") {
			next = strings.Fields(l.text[i+len(" phase="):])[0]
		} else if strings.HasPrefix(l.text, "unit=S1 collect history=") {
			next = "final-heal+write"
		}
		if next == "" {
			continue
		}
		out = append(out, stageTime{cur, l.at.Sub(curAt)})
		cur, curAt = next, l.at
	}
	return append(out, stageTime{cur, end.Sub(curAt)})
}

type stageTime struct {
	name string
	d    time.Duration
}

// bareRun is the obvious alternative: the same workload run once over
// `dstgen exec` on h1, no orchestration.
func (bd *bed) bareRun(b *testing.B, durS int) time.Duration {
	b.Helper()
	hist := filepath.Join(bd.wds[0], "bare-history.jsonl")
	t0 := time.Now()
	out, err := exec.Command(bd.bin, "exec", "h1", "--env", bd.env, "--no-holder", "--timeout", "30s", "--",
		"DSTGEN_HISTORY="+hist+" sh -c "+shellQuote(histFor(durS))).CombinedOutput()
	if err != nil {
		b.Fatalf("bare workload: %v\n%s", err, out)
	}
	return time.Since(t0)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// BenchmarkRunOverhead: `dstgen run` of S1 (a workload of D seconds, one
// custom fault window on all 3 hosts) against D; issue 9 asks wall ≤ D +
// 10 s. Reports overhead-s (wall − D), x-bare (wall over the same workload
// run bare through `dstgen exec`) and one <stage>-s per stage.
func BenchmarkRunOverhead(b *testing.B) {
	bd := newBed(b, 3)
	for _, d := range []int{3, 6} {
		b.Run(fmt.Sprintf("D=%ds", d), func(b *testing.B) {
			scen := bd.scenarioYAML(b, d, `        at: "1s"
        for: "1s"`)
			var overhead, bare float64
			sums := map[string]time.Duration{}
			var order []string
			for i := 0; i < b.N; i++ {
				out := filepath.Join(b.TempDir(), "sess")
				start, end, lines := bd.runTimed(b, scen, out)
				wall := end.Sub(start)
				overhead += wall.Seconds() - float64(d)
				for _, st := range stageTimes(start, end, lines) {
					if _, ok := sums[st.name]; !ok {
						order = append(order, st.name)
					}
					sums[st.name] += st.d
				}
				bare += bd.bareRun(b, d).Seconds() / wall.Seconds()
			}
			n := float64(b.N)
			b.ReportMetric(overhead/n, "overhead-s")
			b.ReportMetric(1/(bare/n), "x-bare")
			var parts []string
			for _, s := range order {
				b.ReportMetric(sums[s].Seconds()/n, s+"-s")
				parts = append(parts, fmt.Sprintf("%s=%.2fs", s, sums[s].Seconds()/n))
			}
			b.Logf("D=%ds overhead=%.2fs stages: %s", d, overhead/n, strings.Join(parts, " "))
		})
	}
}

// BenchmarkFaultTiming: 12 windows of a custom fault (every 1 s for
// 0.3 s, on all 3 hosts, a landing metric read each poll); from run.json,
// inject lag = injected_at − scheduled_at and heal lag = reverted_at −
// (injected_at + for), p50 and p99 in ms. Issue 9 asks ≤ 1 s at p99.
func BenchmarkFaultTiming(b *testing.B) {
	bd := newBed(b, 3)
	scen := bd.scenarioYAML(b, 14, `        at: "1s"
        for: "300ms"
        every: "1s"
        times: 12`)
	var inj, heal []float64
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "sess")
		bd.runTimed(b, scen, out)
		r, err := session.LoadRun(filepath.Join(out, "artifacts", "S1", "run.json"))
		if err != nil {
			b.Fatal(err)
		}
		if len(r.FaultWindows) != 12 || len(r.Schedule) != 12 {
			b.Fatalf("%d windows, %d scheduled; want 12", len(r.FaultWindows), len(r.Schedule))
		}
		for j, w := range r.FaultWindows {
			if w.InjectedAtNS == nil || w.RevertedAtNS == nil {
				b.Fatalf("window %s not injected/reverted: %+v", w.FaultEpoch, w)
			}
			inj = append(inj, float64(*w.InjectedAtNS-w.ScheduledAtNS)/1e6)
			heal = append(heal, float64(*w.RevertedAtNS-(*w.InjectedAtNS+r.Schedule[j].ForNS))/1e6)
		}
	}
	b.ReportMetric(pct(inj, 50), "inject-p50-ms")
	b.ReportMetric(pct(inj, 99), "inject-p99-ms")
	b.ReportMetric(pct(heal, 50), "heal-p50-ms")
	b.ReportMetric(pct(heal, 99), "heal-p99-ms")
	b.Logf("inject lag ms %v", rounded(inj))
	b.Logf("heal lag ms %v", rounded(heal))
}

// pct is the p-th percentile of xs (nearest rank).
func pct(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func rounded(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

// BenchmarkSamplerCost: the generated collect-metrics.sh started the way
// `dstgen run` starts it (start <dir> 1 over SSH), left for 10 s, then the
// CPU of its samplers (utime+stime of each pid it recorded, plus that of
// their reaped children, from /proc/<pid>/stat) as % of one core; issue 9
// asks ≤ 2 %. The alternative in the same run: the same reading of
// /proc/stat every second by one shell loop (proc-loop-%core), the
// cheapest sampler there is.
func BenchmarkSamplerCost(b *testing.B) {
	bd := newBed(b, 1)
	script := filepath.Join(bd.wds[0], "scripts", "collect-metrics.sh")
	const window = 10 * time.Second
	var cost, alt float64
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(bd.wds[0], "metrics-bench-"+strconv.Itoa(i))
		bd.exec(b, "bash "+script+" start "+dir+" 1")
		pids := readPids(b, filepath.Join(dir, "pids"))
		t0 := time.Now()
		time.Sleep(window)
		ticks := treeTicks(pids)
		el := time.Since(t0)
		bd.exec(b, "bash "+script+" stop "+dir)
		cost += 100 * ticks / clkTck / el.Seconds()

		// The alternative: one loop reading /proc/stat every second.
		altDir := filepath.Join(bd.wds[0], "alt-"+strconv.Itoa(i))
		bd.exec(b, "mkdir -p "+altDir+" && (nohup sh -c 'while :; do cat /proc/stat >> "+altDir+"/stat.log; sleep 1; done' >/dev/null 2>&1 </dev/null & echo $! > "+altDir+"/pid)")
		apids := readPids(b, filepath.Join(altDir, "pid"))
		t0 = time.Now()
		time.Sleep(window)
		aticks := treeTicks(apids)
		el = time.Since(t0)
		for _, p := range apids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		alt += 100 * aticks / clkTck / el.Seconds()
	}
	n := float64(b.N)
	b.ReportMetric(cost/n, "%core")
	b.ReportMetric(alt/n, "proc-loop-%core")
	b.ReportMetric((cost/n)/max(alt/n, 1e-9), "x-proc-loop")
}

// clkTck is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clkTck = 100.0

func (bd *bed) exec(b *testing.B, cmd string) {
	b.Helper()
	if out, err := exec.Command(bd.bin, "exec", "h1", "--env", bd.env, "--no-holder", "--", cmd).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

func readPids(b *testing.B, p string) []int {
	b.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		b.Fatalf("%s names no pid", p)
	}
	return out
}

// treeTicks sums utime+stime+cutime+cstime of pids and of their live
// descendants: a sampler loop's finished children (top, sleep) are in its
// cutime once reaped, a running one is read itself.
func treeTicks(pids []int) float64 {
	kids := children()
	var sum float64
	var walk func(p int, depth int)
	walk = func(p, depth int) {
		if depth > 8 {
			return
		}
		sum += statTicks(p)
		for _, c := range kids[p] {
			walk(c, depth+1)
		}
	}
	for _, p := range pids {
		walk(p, 0)
	}
	return sum
}

// children maps each pid to its children, from /proc/*/stat.
func children() map[int][]int {
	out := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := statFields(pid)
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				out[pp] = append(out[pp], pid)
			}
		}
	}
	return out
}

// statFields is /proc/<pid>/stat after the command name: field 3 (state)
// is [0], so field n is [n-3].
func statFields(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

func statTicks(pid int) float64 {
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	var sum float64
	for _, n := range f[11:15] { // fields 14..17: utime stime cutime cstime
		v, _ := strconv.ParseFloat(n, 64)
		sum += v
	}
	return sum
}
