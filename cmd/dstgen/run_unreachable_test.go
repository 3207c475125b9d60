package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// writeHostsEnv writes an env.yml naming srvs[i] h<i+1>, each with its
// own work dir (namespace hosts share the filesystem), listed in order
// (nil: as given).
func writeHostsEnv(t *testing.T, k *sshtest.Keys, srvs []*sshtest.Server, wds []string, order []int) string {
	t.Helper()
	var y strings.Builder
	fmt.Fprintf(&y, "ssh:\n  user: %s\n  key: %s\n  known_hosts: %s\nhosts:\n", sshtest.User, k.Key, k.KnownHosts)
	if order == nil {
		for i := range srvs {
			order = append(order, i)
		}
	}
	for _, i := range order {
		s := srvs[i]
		fmt.Fprintf(&y, "  - name: h%d\n    address: %s\n    port: %d\n    workdir: %s\n", i+1, s.Host, s.Port, wds[i])
	}
	p := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(p, []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// freeze stops (SIGSTOP) s's sshd and every process below it: the host
// still accepts TCP connections in its kernel but never answers on them,
// and an open session hangs, like a frozen VM. The undo continues them.
func freeze(t *testing.T, s *sshtest.Server) func() {
	t.Helper()
	pids := append([]int{s.PID}, childrenOf(s.PID)...)
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
			t.Fatalf("stop %d: %v", p, err)
		}
	}
	done := false
	undo := func() {
		if done {
			return
		}
		done = true
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	t.Cleanup(undo)
	return undo
}

// childrenOf lists the descendants of root (bounded depth), from /proc.
func childrenOf(root int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if j := bytes.LastIndexByte(b, ')'); j >= 0 {
			if f := strings.Fields(string(b[j+1:])); len(f) > 1 {
				if pp, err := strconv.Atoi(f[1]); err == nil {
					kids[pp] = append(kids[pp], pid)
				}
			}
		}
	}
	var out []int
	level := []int{root}
	for depth := 0; depth < 16 && len(level) > 0; depth++ {
		var next []int
		for _, p := range level {
			next = append(next, kids[p]...)
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// dropSSH makes ns stop answering on port 22 (packets dropped, so an open
// connection hangs rather than fails) and returns the undo; the rule
// carries a comment of this test's.
func dropSSH(t *testing.T, ns string) func() {
	t.Helper()
	rule := []string{"INPUT", "-p", "tcp", "--dport", "22", "-m", "comment", "--comment", "dstgen-test-unreachable", "-j", "DROP"}
	if out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "iptables", "-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Skipf("iptables in the namespace: %v: %s", err, out)
	}
	done := false
	undo := func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "iptables", "-D"}, rule...)...).CombinedOutput(); err != nil {
			t.Errorf("remove the drop rule: %v: %s", err, out)
		}
	}
	t.Cleanup(undo)
	return undo
}

// waitLog waits (bounded) until session-log.md under out holds want.
func waitLog(t *testing.T, out, want string, bound time.Duration, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if strings.Contains(readFile(filepath.Join(out, session.SessionLog)), want) {
			return
		}
		select {
		case <-done:
			t.Fatalf("run ended before %q:\n%s", want, readFile(filepath.Join(out, session.SessionLog)))
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("no %q in session-log.md within %s:\n%s", want, bound, readFile(filepath.Join(out, session.SessionLog)))
}

// TestRunHostUnreachableMidRun: h3 stops answering SSH (its packets
// dropped) one second into a custom fault window on all three hosts and
// stays so until the run ends. The run must end within its bounds, exit 1
// with a one-line reason naming h3, keep the partial session with the
// failure in session-log.md and run.json (the window's heal error, the
// final heal's), have healed the hosts that answer, and say h3 was not
// healed; once h3 answers again `dstgen heal --all` heals it. `dstgen
// analyze` gives the session the verdict the tree gives such a run.
func TestRunHostUnreachableMidRun(t *testing.T) {
	t.Run("frozen", func(t *testing.T) {
		t.Setenv("DSTGEN_NO_HOLDER", "1") // direct connections: what hangs is the run's own
		sshtest.Require(t)
		k := sshtest.NewKeys(t)
		srvs := sshtest.StartTrusted(t, k, 3)
		wds := []string{sshtest.Workdir(t), sshtest.Workdir(t), sshtest.Workdir(t)}
		unreachableRun(t, writeHostsEnv(t, k, srvs, wds, nil), wds, func() func() { return freeze(t, srvs[2]) })
	})
	t.Run("frozen-listed-first", func(t *testing.T) {
		// h3 comes first in env.yml, so every heal loop meets it first:
		// the hosts after it must still be healed in time.
		t.Setenv("DSTGEN_NO_HOLDER", "1")
		sshtest.Require(t)
		k := sshtest.NewKeys(t)
		srvs := sshtest.StartTrusted(t, k, 3)
		wds := []string{sshtest.Workdir(t), sshtest.Workdir(t), sshtest.Workdir(t)}
		order := []int{2, 0, 1}
		unreachableRun(t, writeHostsEnv(t, k, srvs, wds, order), wds, func() func() { return freeze(t, srvs[2]) })
	})
	t.Run("dropped", func(t *testing.T) {
		t.Setenv("DSTGEN_NO_HOLDER", "1")
		tb := sshtest.NewTestbed(t, 3)
		unreachableRun(t, writeHostsEnv(t, tb.Keys, tb.Servers, tb.Workdirs, nil), tb.Workdirs, func() func() { return dropSSH(t, tb.Servers[2].NetNS) })
	})
}

// unreachableRun is the body of TestRunHostUnreachableMidRun: block makes
// h3 stop answering and returns the undo.
func unreachableRun(t *testing.T, envPath string, wds []string, block func() func()) {
	flag := func(i int) string { return filepath.Join(wds[i], "fault-on") }
	faults := `      - nemesis: "custom"
        targets: "all"
        at: "1s"
        for: "4s"
        custom:
          inject: "echo 1 > \"$DSTGEN_WORKDIR/fault-on\""
          heal: "echo 0 > \"$DSTGEN_WORKDIR/fault-on\""
          evidence: "cat \"$DSTGEN_WORKDIR/fault-on\" 2>/dev/null || echo 0"
        landing:
          metric: ` + yq("cat "+flag(0)+" "+flag(1)+" "+flag(2)+" 2>/dev/null | awk '{s+=$1} END {print s+0}'") + `
          expect: "rise"
`
	scen := writeScenarios(t, t.TempDir(), histLoop(80), 8, faults)
	out := filepath.Join(t.TempDir(), "sess")

	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	done := make(chan struct{})
	var code int
	start := time.Now()
	go func() {
		defer close(done)
		code = run(ctx, []string{"run", "S1", "--env", envPath, "--scenarios", scen, "--out", out}, strings.NewReader(""), &stdout, &stderr)
	}()
	waitLog(t, out, "window=S1-w1 inject", 60*time.Second, done)
	time.Sleep(time.Second) // inside the window: h3 has the fault
	undo := block()
	t.Logf("h3 blocked %s after the start", time.Since(start).Round(time.Millisecond))
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("dstgen run did not end within its bound:\n%s", readFile(filepath.Join(out, session.SessionLog)))
	}
	took := time.Since(start)
	log := readFile(filepath.Join(out, session.SessionLog))
	t.Logf("run took %s, exit %d\nstderr: %s\nsession-log.md:\n%s", took.Round(time.Second), code, stderr.String(), log)

	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// The reason is the last line (the pool's own diagnostics, such as
	// "connection lost, reconnecting", come before it).
	errLines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if last := errLines[len(errLines)-1]; !strings.HasPrefix(last, "dstgen: S1: ") || !strings.Contains(last, "h3") ||
		!strings.Contains(last, "run `dstgen heal --all` once it answers") {
		t.Errorf("last stderr line is not the reason naming h3: %q", last)
	}
	r := loadRun(t, filepath.Join(out, "artifacts/S1/run.json"))
	if !r.Attempted || len(r.FaultWindows) != 1 || r.FaultWindows[0].RevertedAtNS == nil {
		t.Fatalf("run.json: attempted %v windows %+v", r.Attempted, r.FaultWindows)
	}
	// The silent host costs the heal of the others its bounds only: an
	// evidence read may overrun the heal time by 2 s, none follows a read
	// that failed or ended at the heal time, and h3's heal ends with the
	// runner's handshake bound (10 s): about 12 s. Before, two reads of
	// 10 s each came first (28 s).
	if w := r.FaultWindows[0]; w.InjectedAtNS != nil {
		late := time.Duration(*w.RevertedAtNS - *w.InjectedAtNS - r.Schedule[0].ForNS)
		t.Logf("window reverted %s after its planned heal", late.Round(time.Millisecond))
		if late > 20*time.Second {
			t.Errorf("window reverted %s after its planned heal: the silent host held the others' heal past the bounds", late)
		}
	}
	if r.Heal == nil || len(r.Heal.Errors) == 0 || !strings.Contains(strings.Join(r.Heal.Errors, " "), "h3") {
		t.Errorf("run.json heal does not record h3's failure: %+v", r.Heal)
	}
	if !strings.Contains(r.Notes, "h3") {
		t.Errorf("run.json notes lack the reason: %q", r.Notes)
	}
	for _, w := range []string{"window=S1-w1 heal_error=", "heal error=", "result=not-run reason="} {
		if !strings.Contains(log, w) {
			t.Errorf("session-log.md lacks %q", w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "artifacts/S1/history.jsonl")); err != nil {
		t.Errorf("partial session lost its history: %v", err)
	}
	for i := 0; i < 2; i++ {
		if b, _ := os.ReadFile(flag(i)); strings.TrimSpace(string(b)) != "0" {
			t.Errorf("h%d answers but was not healed: fault-on=%q", i+1, b)
		}
	}
	if b, _ := os.ReadFile(flag(2)); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("h3 could not be reached, yet its fault-on is %q", b)
	}

	// The analyzer judges what the run left. The window landed (both
	// signals changed before h3 went silent), so tree step 3
	// (INCONCLUSIVE-fault-not-proven) does not fire; a scenario without a
	// plan claim has no oracle, so the tree stops at step 4:
	// PARTIAL-surface, "oracle did not run". The analyzer does not read
	// run.json heal.errors, so h3's unhealed fault is not in the verdict.
	code, aout, aerr := runCLI(t, "analyze", out, "--json")
	var rep struct {
		Scenarios []struct {
			Verdict string `json:"verdict"`
			Reasons []struct {
				Step, Text string
			} `json:"reasons"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(aout), &rep); err != nil || len(rep.Scenarios) != 1 {
		t.Fatalf("analyze: exit %d, %v\n%s", code, err, aerr)
	}
	sc := rep.Scenarios[0]
	t.Logf("analyze: exit %d verdict %s reasons %+v", code, sc.Verdict, sc.Reasons)
	if code != 1 || sc.Verdict != "PARTIAL-surface" || len(sc.Reasons) == 0 || sc.Reasons[0].Step != "tree:4" || !strings.Contains(sc.Reasons[0].Text, "oracle did not run") {
		t.Errorf("analyze: exit %d verdict %s %+v, want 1 and PARTIAL-surface at tree:4 (oracle did not run)", code, sc.Verdict, sc.Reasons)
	}

	// h3 answers again: a heal by hand reaches it.
	undo()
	code, hout, herr := runCLI(t, "heal", "--all", "--env", envPath)
	if code != 0 || !strings.Contains(hout, "host=h3") {
		t.Errorf("heal --all after h3 is back: exit %d\n%s\n%s", code, hout, herr)
	}
	if b, _ := os.ReadFile(flag(2)); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("heal --all did not heal h3 once it answered: fault-on=%q", b)
	}
}

// TestRunHostBackBeforeFinalHeal: h3 freezes inside the window, so the
// window's heal cannot reach it, and answers again before the final heal,
// which heals it: the run still exits 1 with the window's heal error as
// its one-line reason (without the "fault may be left" advice), run.json's
// final heal has no error, and h3 is healed without a hand.
func TestRunHostBackBeforeFinalHeal(t *testing.T) {
	t.Setenv("DSTGEN_NO_HOLDER", "1")
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := sshtest.StartTrusted(t, k, 3)
	wds := []string{sshtest.Workdir(t), sshtest.Workdir(t), sshtest.Workdir(t)}
	envPath := writeHostsEnv(t, k, srvs, wds, nil)
	faults := `      - nemesis: "custom"
        targets: "all"
        at: "1s"
        for: "3s"
        custom:
          inject: "echo 1 > \"$DSTGEN_WORKDIR/fault-on\""
          heal: "echo 0 > \"$DSTGEN_WORKDIR/fault-on\""
          evidence: "cat \"$DSTGEN_WORKDIR/fault-on\" 2>/dev/null || echo 0"
`
	scen := writeScenarios(t, t.TempDir(), histLoop(60), 6, faults)
	out := filepath.Join(t.TempDir(), "sess")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	done := make(chan struct{})
	var code int
	go func() {
		defer close(done)
		code = run(ctx, []string{"run", "S1", "--env", envPath, "--scenarios", scen, "--out", out}, strings.NewReader(""), &stdout, &stderr)
	}()
	waitLog(t, out, "window=S1-w1 inject", 60*time.Second, done)
	undo := freeze(t, srvs[2])
	waitLog(t, out, "window=S1-w1 heal_error=", 2*time.Minute, done)
	undo()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("dstgen run did not end within its bound:\n%s", readFile(filepath.Join(out, session.SessionLog)))
	}
	log := readFile(filepath.Join(out, session.SessionLog))
	t.Logf("exit %d\nstderr: %s\nsession-log.md:\n%s", code, stderr.String(), log)
	errLines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := errLines[len(errLines)-1]
	if code != 1 || !strings.HasPrefix(last, "dstgen: S1: heal: S1-w1: ") || !strings.Contains(last, "h3") || strings.Contains(last, "may be left") {
		t.Errorf("exit %d, last stderr line %q: want 1 and the window's heal error on h3, no left-fault advice", code, last)
	}
	r := loadRun(t, filepath.Join(out, "artifacts/S1/run.json"))
	if r.Heal == nil || len(r.Heal.Errors) != 0 || !slices.Contains(r.Heal.Removed, "h3: undo sess.S1-w1.custom") {
		t.Errorf("run.json heal: %+v, want no error and h3's undo removed", r.Heal)
	}
	for i := range wds {
		if b, _ := os.ReadFile(filepath.Join(wds[i], "fault-on")); strings.TrimSpace(string(b)) != "0" {
			t.Errorf("h%d not healed by the run: fault-on=%q", i+1, b)
		}
	}
}
