package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/capability"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testsupport/golden"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// TestProbeCLI probes a real sshd as the unprivileged test user, with the
// docs/plan-format.md §14 example plan: iptables and netem cannot really
// be used there, so the §6b rows for them are missing, with the scenarios
// they make INCONCLUSIVE-env — S4 still runs, so probe passes (exit 0),
// and --strict fails (exit 1); MinIO is "brought up by SUT".
func TestProbeCLI(t *testing.T) {
	envPath, _, _, _ := jobCLIEnv(t, 1)
	planPath := filepath.Join("..", "..", "plan", "testdata", "quorumkv-core-guarantees.md")
	if code, _, errOut := runCLI(t, "probe", "--env", envPath, "--plan", planPath, "--strict"); code != 1 {
		t.Errorf("probe --strict: code %d want 1 (scenarios would be INCONCLUSIVE-env); err %q", code, errOut)
	}
	code, out, errOut := runCLI(t, "probe", "--env", envPath, "--plan", planPath, "--json")
	if code != 0 {
		t.Fatalf("probe: code %d want 0 (S4 can run); err %q", code, errOut)
	}
	var res struct {
		Hosts        []runner.HostCaps
		Requirements []capability.ReqRow
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hosts) != 1 || !res.Hosts[0].Reachable || res.Hosts[0].RTT <= 0 {
		t.Fatalf("hosts = %+v", res.Hosts)
	}
	h := res.Hosts[0]
	if c, _ := h.Cap("root"); c.Present {
		t.Error("unprivileged test user reported as root")
	}
	if c, _ := h.Cap("netem"); c.Present {
		t.Errorf("netem present for a user who cannot create a netns: %+v", c)
	}
	rows := map[string]capability.ReqRow{}
	for _, r := range res.Requirements {
		rows[r.Capability+"|"+r.Present] = r
	}
	if r, ok := rows["netem|no"]; !ok || len(r.InconclusiveEnv) == 0 || r.Line == 0 {
		t.Errorf("netem row = %+v; want missing with INCONCLUSIVE-env scenarios and a plan line", r)
	}
	if _, ok := rows["|by-sut"]; !ok {
		t.Errorf("no brought-up-by-SUT row in %+v", res.Requirements)
	}
	code, text, _ := runCLI(t, "probe", "--env", envPath)
	if code != 0 || !strings.Contains(text, "requirement=netem present=no") || !regexp.MustCompile(`clock_offset_ms=-?[0-9.]+±[0-9.]+ rtt_ms=[0-9.]+`).MatchString(text) {
		t.Errorf("probe without plan: %d %q", code, text)
	}

	bad := filepath.Join(t.TempDir(), "env.yml")
	b, _ := os.ReadFile(envPath)
	// A host nobody listens on: unreachable is exit 2.
	closed := sshtest.FreePort(t)
	env := regexp.MustCompile(`port: [0-9]+`).ReplaceAllString(string(b), "port: "+strconv.Itoa(closed))
	if err := os.WriteFile(bad, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	// A host nobody listens on is unreachable: exit 3, and only what is
	// known about it (no uid=0, rtt_ms=0.0 that read as facts).
	code, out, errOut = runCLI(t, "probe", "--env", bad, "--timeout", "3s")
	if code != 3 || !strings.Contains(errOut, "h1") || !regexp.MustCompile(`^host=h1 reachable=no error=\S.*\n$`).MatchString(stripSources(out)) {
		t.Errorf("unreachable host: code %d out %q err %q; want exit 3 and host=h1 reachable=no error=...", code, out, errOut)
	}
	code, out, _ = runCLI(t, "probe", "--env", bad, "--timeout", "3s", "--json")
	var un struct{ Hosts []map[string]any }
	if err := json.Unmarshal([]byte(out), &un); err != nil || code != 3 || len(un.Hosts) != 1 {
		t.Fatalf("unreachable --json: code %d %q %v", code, out, err)
	}
	for _, k := range []string{"uid", "rtt_ns", "clock_offset_ns", "disk_free_kb", "capabilities", "systemd"} {
		if v, ok := un.Hosts[0][k]; ok {
			t.Errorf("unreachable host's JSON carries %s=%v; want it omitted", k, v)
		}
	}
	code, out, _ = runCLI(t, "probe", "--env", bad, "--timeout", "3s", "--reach")
	if code != 3 || !strings.Contains(out, "host=h1 reachable=no") || !strings.HasSuffix(out, "hosts: 0 reachable, 1 unreachable\n") {
		t.Errorf("--reach, unreachable: code %d out %q; want exit 3", code, out)
	}
	if !regexp.MustCompile(`(?m)^host=h1 reachable=yes .* source\.address=\S*env\.yml:[0-9]+`).MatchString(text) {
		t.Errorf("probe does not say where the host's address came from: %q", text)
	}
	code, out, _ = runCLI(t, "probe", "--env", envPath, "--reach")
	if code != 0 || !strings.Contains(out, "host=h1 reachable=yes rtt_ms=") || !strings.HasSuffix(out, "hosts: 1 reachable, 0 unreachable\n") {
		t.Errorf("--reach: code %d out %q; want exit 0", code, out)
	}
	if code, _, _ := runCLI(t, "probe", "--env", envPath, "--plan", "/nonexistent.md"); code != 2 {
		t.Errorf("missing plan: code %d", code)
	}
}

// stripSources drops source.FIELD= pairs (where env.Load found each SSH
// value), which this test does not pin.
func stripSources(out string) string {
	return regexp.MustCompile(` source\.[a-z_]+=\S+`).ReplaceAllString(out, "")
}

// TestProbeMatrixGolden renders a fixed capability matrix (a host without
// netem, as these machines are; runner's TestProbeFixtureCaps pins how it
// is built from the probe's answers) mapped onto the docs/plan-format.md §14 example plan.
func TestProbeMatrixGolden(t *testing.T) {
	p, err := plan.Parse(filepath.Join("..", "..", "plan", "testdata", "quorumkv-core-guarantees.md"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "runner", "testdata", "probe", "n1.caps.json"))
	if err != nil {
		t.Fatal(err)
	}
	var caps []runner.HostCaps
	if err := json.Unmarshal(data, &caps); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printProbe(&b, caps, capability.MapRequirements(p.EnvReqs, caps))
	golden.Check(t, filepath.Join("testdata", "probe", "matrix.golden"), b.Bytes())
	for _, must := range []string{"present=no", "Specified qdisc kind is unknown", "inconclusive_env=S3,S5", "present=by-sut"} {
		if !strings.Contains(b.String(), must) {
			t.Errorf("matrix lacks %q", must)
		}
	}
}

// TestProbeCLISummaryAndDisabled: probe --plan prints one problem line per
// missing requirement (the scenarios it affects, the fix) and the summary
// line, not the matrix (--verbose, --matrix-dir); it exits 0 while a
// selected scenario can run and 1 when none can; dstgen.capabilities.<key>:
// false says the hosts lack it on purpose.
func TestProbeCLISummaryAndDisabled(t *testing.T) {
	envPath, _, _, _ := jobCLIEnv(t, 1)
	planPath := filepath.Join("..", "..", "plan", "testdata", "quorumkv-core-guarantees.md")
	code, out, _ := runCLI(t, "probe", "--env", envPath, "--plan", planPath, "--json")
	var res struct{ Summary capability.CapSummary }
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Summary.Missing == 0 {
		t.Fatalf("probe as the unprivileged user: code %d summary %+v %v; want something missing", code, res.Summary, err)
	}
	mdir := filepath.Join(t.TempDir(), "results", "validate")
	code, text, errOut := runCLI(t, "probe", "--env", envPath, "--plan", planPath, "--matrix-dir", mdir)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; code != 0 || !strings.HasPrefix(last, "capabilities: ") || !strings.Contains(last, "runnable: S4") {
		t.Errorf("summary line = %q (code %d, err %q); want capabilities: ... runnable: S4", last, code, errOut)
	}
	problems := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "host="):
			t.Errorf("the default output carries the matrix: %q", l)
		case strings.HasPrefix(l, "problem: "):
			problems++
			if !strings.Contains(l, "INCONCLUSIVE-env; fix: ") || !strings.Contains(l, "dstgen.capabilities.") {
				t.Errorf("problem line without its scenarios and fix: %q", l)
			}
		}
	}
	if problems != res.Summary.Missing {
		t.Errorf("%d problem lines for %d missing requirements:\n%s", problems, res.Summary.Missing, text)
	}
	if m, err := os.ReadFile(filepath.Join(mdir, "capabilities.txt")); err != nil || !strings.Contains(string(m), "host=h1 requirement=") {
		t.Errorf("--matrix-dir: %v\n%s", err, m)
	}
	if _, v, _ := runCLI(t, "probe", "--env", envPath, "--plan", planPath, "--verbose"); !strings.Contains(v, "host=h1 reachable=yes") {
		t.Errorf("--verbose prints no matrix:\n%s", v)
	}
	b, _ := os.ReadFile(envPath)
	// Only S1 selected: it needs what is missing — nothing can run.
	s1 := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(s1, append(b, "dstgen:\n  scenarios: [S1]\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, text, _ := runCLI(t, "probe", "--env", s1, "--plan", planPath); code != 1 || !strings.Contains(text, "nothing can run, BLOCKING") {
		t.Errorf("only S1 selected: code %d\n%s\nwant exit 1, nothing can run", code, text)
	}
	var off strings.Builder
	off.WriteString("dstgen:\n  capabilities:\n")
	for _, m := range res.Summary.Details {
		off.WriteString("    " + m.Key + ": false\n")
	}
	disabled := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(disabled, append(b, off.String()...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, text, errOut = runCLI(t, "probe", "--env", disabled, "--plan", planPath)
	lines = strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; code != 0 || !strings.Contains(last, "disabled in env.yml") || strings.Contains(text, "fix: ") {
		t.Errorf("every missing capability disabled: code %d\n%s\nerr %q; want exit 0, said so, no fix", code, text, errOut)
	}
	// Only S4 selected: it needs nothing but what the SUT brings up.
	only := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(only, append(b, "dstgen:\n  scenarios: [S4]\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, text, errOut := runCLI(t, "probe", "--env", only, "--plan", planPath); code != 0 || !strings.Contains(text, "its scenarios not selected") {
		t.Errorf("only S4 selected: code %d out %q err %q; want exit 0", code, text, errOut)
	}
}

// Hosts without the samplers' tools are one note naming them and what the
// benchmark report loses; hosts with them all, or unreachable, say nothing.
func TestMissingSamplers(t *testing.T) {
	hc := func(name string, reachable bool, missing ...string) runner.HostCaps {
		h := runner.HostCaps{Host: name, Reachable: reachable}
		for _, tool := range samplerTools {
			h.Caps = append(h.Caps, runner.Cap{Name: runner.BinaryCap(tool), Present: !slices.Contains(missing, tool)})
		}
		return h
	}
	if got := missingSamplers([]runner.HostCaps{hc("h1", true), hc("h2", false, "iostat")}); got != "" {
		t.Errorf("all there: %q", got)
	}
	got := missingSamplers([]runner.HostCaps{hc("h1", true, "iostat", "mpstat"), hc("h2", true), hc("h3", true, "iostat", "mpstat")})
	if !strings.HasPrefix(got, "no iostat, mpstat on h1,h3: ") || !strings.Contains(got, "sysstat") {
		t.Errorf("got %q", got)
	}
}
