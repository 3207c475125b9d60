package analyze

// Fixture session generator. The committed session directories under
// testdata/sessions are written by TestGenerateSessions when run with
// -update-sessions; every other test reads the committed files, so a
// change to the generator shows up as a diff a reviewer can read.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

var updateSessions = flag.Bool("update-sessions", false, "rewrite the fixture session dirs under testdata/sessions")

var fixtureStart = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)

func i64(v int64) *int64 { return &v }
func intp(v int) *int    { return &v }
func boolp(v bool) *bool { return &v }

// win describes a fault window for the generator, in seconds from start.
type win struct {
	epoch, nemesis, target string
	at, dur                float64
	noVictim, noTarget     bool
	targetUnchanged        bool
}

// runGen builds one run record and its history.
type runGen struct {
	scenario, arm string
	seed          int64
	tier          string
	nodes         int
	size          map[string]int
	dur           float64 // seconds
	ops           int     // history ops (0: no history)
	opsUntil      float64 // ops only before this second (0: whole run)
	produced      int     // ops_produced override
	windows       []win
	staleAt       int // index of a read returning a stale value (0: none)
	noEpoch       bool
	clock         string
	failovers     int
	remoteOracle  *session.Oracle
	mutate        func(r *session.Run)
	file          string // run file name (default run.json)
	histFile      string
	noHistory     bool
	truncate      bool // append garbage + a truncated line to the history
}

func evChanged(kind, name string, before, after int) *session.Evidence {
	return &session.Evidence{Kind: kind, Name: name, Before: json.RawMessage(fmt.Sprint(before)), After: json.RawMessage(fmt.Sprint(after)), Verdict: session.SignalChanged}
}

func (g runGen) build(t *testing.T, dir string) {
	t.Helper()
	sec := func(s float64) int64 { return int64(s * 1e9) }
	start := fixtureStart
	r := &session.Run{
		Schema: session.RunSchema, Scenario: g.scenario, Arm: g.arm, Attempted: true,
		StartedAt: start, EndedAt: start.Add(time.Duration(sec(g.dur))), Seed: g.seed, Tier: g.tier,
		PlanPath: "", Nodes: g.nodes, ConfigSize: g.size, Clock: g.clock,
		Recorder:   &session.Recorder{Mechanism: "combined"},
		LogScan:    &session.LogScan{Markers: []string{"panic", "Internal error"}, Found: 0, Accounted: 0},
		Topologies: []string{fmt.Sprintf("N=%d", g.nodes)},
	}
	if r.Clock == "" {
		r.Clock = "monotonic"
	}
	if g.failovers > 0 {
		r.Failovers = intp(g.failovers)
	}
	for _, w := range g.windows {
		fw := session.FaultWindow{FaultEpoch: w.epoch, Nemesis: w.nemesis, Target: w.target,
			ScheduledAtNS: sec(w.at), InjectedAtNS: i64(sec(w.at) + 2e6), RevertedAtNS: i64(sec(w.at + w.dur)),
			InjectorOK: boolp(true), Landed: true}
		switch {
		case strings.HasPrefix(w.nemesis, "kill"):
			fw.InjectorEvidence = evChanged("pid", "kvnode", 4101, 4388)
			fw.VictimEvidence = evChanged("log_line", "raft term", 3, 4)
			fw.TargetCheck = &session.Evidence{Kind: "process", Raw: "pid 4101 was the leader kvnode-1", Verdict: session.SignalChanged}
		default:
			fw.InjectorEvidence = evChanged("iptables_counter", "DROP", 0, 14712)
			fw.VictimEvidence = &session.Evidence{Kind: "metric_delta", Name: "raft_leader_changes_total", Delta: func() *float64 { v := 1.0; return &v }(), Verdict: session.SignalChanged}
			fw.TargetCheck = &session.Evidence{Kind: "rule_listing", Raw: "-A INPUT -s 10.0.0.0/24 -j DROP (pkts 14712) on eth0", Verdict: session.SignalChanged}
		}
		if w.noVictim {
			fw.VictimEvidence = nil
		}
		if w.noTarget {
			fw.TargetCheck = nil
		}
		if w.targetUnchanged {
			fw.TargetCheck = &session.Evidence{Kind: "rule_listing", Raw: "rule in FORWARD chain, pkts 0", Verdict: session.SignalUnchanged}
		}
		r.FaultWindows = append(r.FaultWindows, fw)
	}
	if len(g.windows) > 0 {
		r.Recovery = &session.Recovery{Nominal: true, Evidence: "leader elected, replication lag 0, error rate 0 within 8 s of the last heal"}
	}
	// Ops, evenly spread over the run (or until opsUntil).
	n := g.ops
	if n == 0 && g.remoteOracle != nil {
		n = int(g.dur)
	}
	until := g.dur
	if g.opsUntil > 0 {
		until = g.opsUntil
	}
	var ops []history.Op
	last := "null"
	prev := "null"
	for i := 0; i < n; i++ {
		inv := sec(until) * int64(i) / int64(n)
		inv += 5e8 // first op half a second in
		c := inv + 4e6
		op := history.Op{OpID: fmt.Sprintf("%d", i+1), ProcessID: fmt.Sprintf("p%d", i%3), InvokeTS: inv, CompleteTS: i64(c), Key: "k", NodeSeen: "kvnode-1"}
		if i%2 == 0 {
			op.OpType = "write"
			v := fmt.Sprint(i)
			op.Input = json.RawMessage(v)
			prev, last = last, v
		} else {
			op.OpType = "read"
			op.Output = json.RawMessage(last)
			if g.staleAt == i {
				op.Output = json.RawMessage(prev)
			}
		}
		if !g.noEpoch {
			for _, w := range g.windows {
				if inv >= sec(w.at) && inv <= sec(w.at+w.dur) {
					op.FaultEpoch = w.epoch
				}
			}
		}
		ops = append(ops, op)
	}
	r.Workload = session.Workload{Command: "./workload --seed " + fmt.Sprint(g.seed), ExitStatus: intp(0), OpsProduced: n}
	if g.produced > 0 {
		r.Workload.OpsProduced = g.produced
	}
	step := g.dur / 10
	if step < 1 {
		step = 1
	}
	r.Workload.IntervalNS = sec(step)
	r.Workload.PlannedRate = float64(n) / g.dur
	for s := 0.0; s+step <= g.dur+1e-9; s += step {
		cnt := 0
		for i := range ops {
			if ops[i].InvokeTS >= sec(s) && ops[i].InvokeTS < sec(s+step) {
				cnt++
			}
		}
		r.Workload.Throughput = append(r.Workload.Throughput, session.Interval{StartNS: sec(s), Ops: cnt, P50Ms: 4, P95Ms: 4, P99Ms: 4})
	}
	r.Oracle = g.remoteOracle
	if g.mutate != nil {
		g.mutate(r)
	}
	id := g.scenario
	if g.arm != "" {
		id = g.arm
	}
	adir := fixture.ArtifactDir(dir, id)
	if err := os.MkdirAll(adir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := g.file
	if file == "" {
		file = "run.json"
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(adir, file), append(data, '\n'))
	if g.remoteOracle != nil || g.noHistory || g.ops == 0 {
		return
	}
	hf := g.histFile
	if hf == "" {
		hf = strings.Replace(strings.Replace(file, "run", "history", 1), ".json", ".jsonl", 1)
	}
	meta := &history.Meta{Scenario: id, Seed: g.seed, Clock: r.Clock, Recorder: "combined", Schema: history.Schema}
	f, err := os.Create(filepath.Join(adir, hf))
	if err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteHistory(f, meta, ops); err != nil {
		t.Fatal(err)
	}
	if g.truncate {
		fmt.Fprintf(f, "this is not json\n{\"op_id\":\"999\",\"process_id\":\"p0\",\"invoke_ts\":99")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func sessionLog(t *testing.T, dir, slug, planRel string) {
	t.Helper()
	stamp := filepath.Base(dir)
	writeFile(t, filepath.Join(dir, session.SessionLog), fmt.Appendf(nil, `# Session log: %s @ %s

**SUT:** quorumkv
**Plan:** %s
**Commit under test:** 0123abc
**Session dir:** %s
**Operator:** agent

## Toolbox discovered
- `+"`scripts/smoke.sh`"+` — bring-up

## Environment capability matrix
| Requirement | Present? | Version | Source |
|---|---|---|---|
| iptables (CAP_NET_ADMIN) | yes | 1.8.9 | probe |
`, slug, stamp, planRel, dir))
	for _, d := range []string{session.LogsDir, session.MetricsDir} {
		writeFile(t, filepath.Join(dir, d, ".keep"), nil)
	}
}

// s1Hardening is the main plan's S1 at the hardening tier for one seed:
// 10 min, 4 leader isolations + 1 asymmetric partition, 4 failovers.
func s1Hardening(seed int64) runGen {
	return runGen{scenario: "S1", seed: seed, tier: "hardening", nodes: 3, dur: 610, ops: 122, failovers: 4,
		file: fmt.Sprintf("run-seed-%d.json", seed),
		windows: []win{
			{epoch: "S1-w1", nemesis: "leader-isolation", target: "kvnode-1", at: 60, dur: 40},
			{epoch: "S1-w2", nemesis: "leader-isolation", target: "kvnode-2", at: 160, dur: 40},
			{epoch: "S1-w3", nemesis: "leader-isolation", target: "kvnode-3", at: 260, dur: 40},
			{epoch: "S1-w4", nemesis: "leader-isolation", target: "kvnode-1", at: 360, dur: 40},
			{epoch: "S1-w5", nemesis: "partition-asym", target: "kvnode-2", at: 460, dur: 40},
		}}
}

func remote(checkers string, consumed int) *session.Oracle {
	return &session.Oracle{Checkers: []string{checkers}, Ran: true, Outcome: "valid", OpsConsumed: consumed, Anomalies: 0,
		Evidence: fmt.Sprintf("assertion fired %d/%d", consumed, consumed)}
}

// s3Smoke is the main plan's S3 at its smoke budget (1 fault): a clean,
// fault-active run the tier gate must cap to PASS-smoke.
func s3Smoke() runGen {
	return runGen{scenario: "S3", seed: 1, tier: "smoke", nodes: 3, dur: 60, remoteOracle: remote("election-time assertion", 60),
		windows: []win{{epoch: "S3-w1", nemesis: "partition-asym", target: "kvnode-1", at: 20, dur: 20}}}
}

const auditPlanHeader = `# Test Plan: audit

**Date:** 2026-06-01
**Plan mode:** project-wide
**SUT:** quorumkv
**Change under test:** N/A — project-wide
**Plan author:** dstgen fixture
**Status:** draft

## 0. Architectural summary

- **kvnode** (x3): Raft replica.

## 1. Scope

kvnode only.

## 1b. Claims under test

| ID | Claim | Category | Source | Inferred? |
|---|---|---|---|---|
| C1 | "get/put on a single key are linearizable" | safety | docs/consistency.md | no |
| C2 | "the cluster answers within 1s" | liveness | docs/ops.md | no |

## 4. Failure-mode hypotheses

H1. **Stale read after leader kill** — a killed leader's successor serves stale reads.
   - Could falsify: C1
   - Suspected because: lease handover
   - Subsystem: read path
H2. **Slow answer** — the cluster stalls.
   - Could falsify: C2
   - Suspected because: GC
   - Subsystem: server

## 7. Scenarios
`

func seriousScenario(id, name, model string) string {
	return seriousScenarioChecker(id, name, model, "linearizability (Porcupine)")
}

func seriousScenarioChecker(id, name, model, checkerText string) string {
	return fmt.Sprintf(`
### Scenario %s: %s
- **Falsifies if it FAILs:** C1
- **Closes:** H1
- **Technique:** jepsen-and-elle
- **Workload:** 3 clients, 50%% read / 50%% write, 1 key, 60 s
- **Faults:** kill -9 the leader once at T+20s for 10s
- **Oracle:** Porcupine linearizability over the full history
- **Observability required:** op history JSONL
- **Exit criteria:** PASS if 0 anomalies
- **Smoke budget:** 3 nodes, 30 s, 1 fault, 1 seed
- **Hardening budget:** 3 nodes, 60 s, 1 fault, 1 seed
- **Release budget:** 5 nodes, 1 h, 10 faults, 1 seed

#### §7.M — Model / history / checker discipline
- **Model under test:** %s
- **Operation history:** default 11-field schema, combined (in-process + server-side audit)
- **Checker:** %s
- **Nemesis + landing evidence:** kill-9; evidence = new leader pid AND raft term change
- **Ambiguous outcomes:** default
- **Reduction plan:** fix seed, bisect the op sequence
`, id, name, model, checkerText)
}

const livenessScenario = `
### Scenario S2: cluster_answers_within_1s
- **Falsifies if it FAILs:** C2
- **Closes:** H2
- **Technique:** chaos-and-fault-injection
- **Workload:** 1 client, 1 op/s, 60 s
- **Faults:** none
- **Oracle:** every op answers within 1s
- **Observability required:** client latencies
- **Exit criteria:** PASS if every op answers within 1s
- **Smoke budget:** 3 nodes, 60 s, 0 faults, 1 seed
- **Hardening budget:** 3 nodes, 10 min, 0 faults, 3 seeds
- **Release budget:** not provided — no long-run rig yet. Revisit when: the soak cluster exists.

§7.M: not applicable (no gated claim category falsified)
`

// auditCase is one scenario of the audit plan: the defect it commits.
type auditCase struct {
	id, name string
	model    string
	gen      func(g *runGen)
}

// auditSingleSeed lists the audit cases whose point is the seed count.
// Every other case runs the three seeds docs/verdicts.md §4.2 asks of a
// PASS-hardening, so the defect it commits is its only one.
var auditSingleSeed = map[string]bool{"S10": true, "S18": true, "S19": true}

// auditSeeds are the seeds of a three-seed audit case; the first is
// written to run.json, the others to run-seed-<n>.json.
var auditSeeds = []int64{1, 2, 3}

// buildAudit writes one run per seed of the audit scenario id, each with
// the same defect.
func buildAudit(t *testing.T, dir, id string, gen func(g *runGen), seeds []int64) {
	t.Helper()
	for i, seed := range seeds {
		g := baseAudit(id)
		g.seed = seed
		if i > 0 {
			g.file = fmt.Sprintf("run-seed-%d.json", seed)
		}
		if gen != nil {
			gen(&g)
		}
		g.build(t, dir)
	}
}

// auditCheckers overrides the §7.M Checker text of an audit scenario.
var auditCheckers = map[string]string{"S17": "session-consistency (read-your-writes)"}

func baseAudit(id string) runGen {
	return runGen{scenario: id, seed: 1, tier: "hardening", nodes: 3, dur: 60, ops: 60, failovers: 2,
		windows: []win{{epoch: id + "-w1", nemesis: "kill-9", target: "kvnode-1", at: 20, dur: 10}}}
}

var auditCases = []auditCase{
	{"S1", "rf1_generator_stall", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) { r.Workload.Throughput[4].Ops = 0 }
	}},
	{"S2", "rf2_history_shorter_than_produced", "register", func(g *runGen) { g.produced = 80 }},
	{"S3", "rf3_workload_finished_before_fault", "register", func(g *runGen) { g.opsUntil = 15 }},
	{"S4", "rf4_rule_in_wrong_chain", "register", func(g *runGen) { g.windows[0].targetUnchanged = true }},
	{"S5", "rf5_wall_clock", "register", func(g *runGen) { g.clock = "wall" }},
	{"S6", "rf6_run_too_short", "register", func(g *runGen) { g.dur = 20; g.ops = 20; g.windows[0].at = 5; g.windows[0].dur = 5 }},
	{"S7", "rf7_swallowed_errors", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) {
			r.LogScan = &session.LogScan{Markers: []string{"panic"}, Found: 2, Accounted: 0,
				Hits: []string{"logs/kvnode-2.log:881: panic: nil map", "logs/kvnode-2.log:902: Internal error"}}
		}
	}},
	{"S8", "rf8_not_recovered", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) {
			r.Recovery = &session.Recovery{Nominal: false, Evidence: "error rate 12% 60 s after the heal (baseline 0%)"}
		}
	}},
	{"S9", "rf9_unfair_baseline", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) {
			r.Baseline = &session.Baseline{Compared: true, HarnessHash: "h2", ConfigHash: "c1", BaselineHarnessHash: "h1", BaselineConfigHash: "c1"}
		}
	}},
	{"S10", "rf10_single_seed_statistical", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) { r.Claim = &session.ClaimScope{Statistical: boolp(true)} }
	}},
	{"S11", "weak_single_failover", "register", func(g *runGen) { g.failovers = 1 }},
	{"S12", "weak_final_state_only", "register", func(g *runGen) {
		g.remoteOracle = &session.Oracle{Checkers: []string{"final-state invariant"}, Ran: true, Outcome: "valid", OpsConsumed: 60}
	}},
	{"S13", "weak_final_state_only_single_failover", "register", func(g *runGen) {
		g.failovers = 1
		g.remoteOracle = &session.Oracle{Checkers: []string{"final-state invariant"}, Ran: true, Outcome: "valid", OpsConsumed: 60}
	}},
	{"S14", "baseline_clean", "register", func(*runGen) {}},
	{"S15", "unknown_model", "blockchain", func(*runGen) {}},
	{"S16", "rf7_unknown_no_log_scan", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) { r.LogScan = nil }
	}},
	{"S17", "checker_mismatched_to_model", "set", func(*runGen) {}},
	// The plan's hardening budget says "1 seed", and nothing is declared:
	// docs/verdicts.md §4.2's seed rule still applies to a serious claim.
	{"S18", "seed_rule_single_seed_hardening", "register", func(*runGen) {}},
	// The docs/verdicts.md §7 item 11 escape, declared in run.json.
	{"S19", "declared_deterministic_single_seed", "register", func(g *runGen) {
		g.mutate = func(r *session.Run) { r.Claim = &session.ClaimScope{Statistical: boolp(false)} }
	}},
}

const (
	mainSlug  = "quorumkv-core-guarantees"
	sessMixed = "sessions/" + mainSlug + "/20260601T100000Z"
	sessFail  = "sessions/" + mainSlug + "/20260602T100000Z"
	sessFlaky = "sessions/" + mainSlug + "/20260603T100000Z"
	sessWeak  = "sessions/" + mainSlug + "/20260604T100000Z"
	sessBad   = "sessions/" + mainSlug + "/20260605T100000Z"
	sessNoRep = "sessions/" + mainSlug + "/20260606T100000Z"
	sessDone  = "sessions/mini/20260610T100000Z"
	sessBlock = "sessions/mini/20260611T100000Z"
	sessAudit = "sessions/audit/20260620T100000Z"
)

func TestGenerateSessions(t *testing.T) {
	if !*updateSessions {
		t.Skip("run with -update-sessions to rewrite testdata/sessions")
	}
	if err := os.RemoveAll("testdata/sessions"); err != nil {
		t.Fatal(err)
	}
	mainPlan := "../../../plan.md"
	d := func(rel string) string { return filepath.Join("testdata", rel) }

	// Mixed: PASS-hardening, PARTIAL-surface, INCONCLUSIVE-fault-not-proven,
	// arms with PASS-smoke / INCONCLUSIVE-env / NOT-RUN, PARTIAL-model arm.
	dir := d(sessMixed)
	sessionLog(t, dir, mainSlug, mainPlan)
	for _, seed := range []int64{1, 2, 3} {
		s1Hardening(seed).build(t, dir)
	}
	runGen{scenario: "S2", seed: 1, tier: "smoke", nodes: 3, dur: 60, ops: 60, noHistory: true,
		windows: []win{{epoch: "S2-w1", nemesis: "kill-9", target: "kvnode-2", at: 20, dur: 5}}}.build(t, dir)
	runGen{scenario: "S3", seed: 1, tier: "smoke", nodes: 3, dur: 60, remoteOracle: remote("election-time assertion", 60),
		windows: []win{{epoch: "S3-w1", nemesis: "partition-asym", target: "kvnode-1", at: 20, dur: 20, noVictim: true}}}.build(t, dir)
	runGen{scenario: "S4", arm: "S4/api", seed: 1, tier: "smoke", nodes: 3, size: map[string]int{"tenants": 2}, dur: 60,
		remoteOracle: remote("cross-tenant denial", 60), mutate: func(r *session.Run) {
			r.Surfaces = []string{"public API"}
			r.Controls = &session.Controls{Positive: true, Denied: true, SideChannel: true}
		}}.build(t, dir)
	runGen{scenario: "S4", arm: "S4/admin", seed: 1, tier: "smoke", nodes: 3, dur: 1, mutate: func(r *session.Run) {
		r.MissingCapability = &session.MissingCapability{Requirement: "MinIO / S3-compatible", Reason: "no S3 endpoint reachable from the admin host; operator chose to mark INCONCLUSIVE"}
		r.Capabilities = []session.Capability{{Requirement: "MinIO / S3-compatible", Present: false, Source: "probe: curl http://minio:9000 refused"}}
	}}.build(t, dir)
	runGen{scenario: "S5", arm: "S5/api", seed: 1, tier: "smoke", nodes: 3, size: map[string]int{"tenants": 3}, dur: 120,
		remoteOracle: remote("fairness formula", 120), mutate: func(r *session.Run) {
			r.Fairness = &session.Fairness{Dimension: "tenant", Groups: []session.GroupStats{{Group: "t1", P99Ms: 9, Throughput: 200}, {Group: "t2", P99Ms: 10, Throughput: 199}}}
			r.Baseline = &session.Baseline{Compared: true, HarnessHash: "9f1c", ConfigHash: "aa01", BaselineHarnessHash: "77e0", BaselineConfigHash: "aa01"}
		}}.build(t, dir)

	// FAIL-reproducible: S1 violates, and the re-run with the same seed
	// violates again. S3 is a fault-active clean run capped to PASS-smoke.
	dir = d(sessFail)
	sessionLog(t, dir, mainSlug, mainPlan)
	runGen{scenario: "S1", seed: 7, tier: "smoke", nodes: 3, dur: 60, ops: 60, staleAt: 41}.build(t, dir)
	runGen{scenario: "S1", seed: 7, tier: "smoke", nodes: 3, dur: 60, ops: 60, staleAt: 41, file: "run-seed-7.json",
		mutate: func(r *session.Run) { r.ReRunOf = &session.RunRef{File: "run.json", Seed: 7} }}.build(t, dir)
	s3Smoke().build(t, dir)

	// FAIL-nondeterministic, not re-run; S3 PASS-smoke.
	dir = d(sessFlaky)
	sessionLog(t, dir, mainSlug, mainPlan)
	runGen{scenario: "S1", seed: 9, tier: "smoke", nodes: 3, dur: 60, ops: 60, staleAt: 21}.build(t, dir)
	s3Smoke().build(t, dir)

	// INCONCLUSIVE-oracle-too-weak: a fault overlapped the workload but no
	// op carries fault_epoch.
	dir = d(sessWeak)
	sessionLog(t, dir, mainSlug, mainPlan)
	runGen{scenario: "S1", seed: 3, tier: "smoke", nodes: 3, dur: 60, ops: 60, noEpoch: true,
		windows: []win{{epoch: "S1-w1", nemesis: "leader-isolation", target: "kvnode-1", at: 20, dur: 20}}}.build(t, dir)

	// Bad input: truncated history with a garbage line (PARTIAL-model),
	// malformed run.json, a history without run.json, an unknown field.
	dir = d(sessBad)
	sessionLog(t, dir, mainSlug, mainPlan)
	runGen{scenario: "S1", seed: 4, tier: "smoke", nodes: 3, dur: 60, ops: 55, produced: 60, truncate: true}.build(t, dir)
	writeFile(t, filepath.Join(dir, "artifacts/S2/run.json"), []byte("{\n  \"schema\": \"dst-run/1\",\n  \"scenario\": \"S2\",\n  \"attempted\": true,\n  \"seed\": 1,,\n}\n"))
	writeFile(t, filepath.Join(dir, "artifacts/S3/history.jsonl"), []byte(`{"op_id":"1","process_id":"p0","invoke_ts":1,"complete_ts":2,"op_type":"write","key":"k","input":1,"output":null,"error":null,"timeout_marker":false,"node_seen":"n1","fault_epoch":null}`+"\n"))
	writeFile(t, filepath.Join(dir, "artifacts/S4/api/run.json"), []byte("{\n  \"schema\": \"dst-run/1\",\n  \"scenario\": \"S4\",\n  \"arm\": \"S4/api\",\n  \"attempted\": true,\n  \"sed\": 1\n}\n"))

	// FAIL-nondeterministic: the re-run with the same seed did not violate.
	dir = d(sessNoRep)
	sessionLog(t, dir, mainSlug, mainPlan)
	runGen{scenario: "S1", seed: 5, tier: "smoke", nodes: 3, dur: 60, ops: 60, staleAt: 33}.build(t, dir)
	runGen{scenario: "S1", seed: 5, tier: "smoke", nodes: 3, dur: 60, ops: 60, file: "run-seed-5.json",
		mutate: func(r *session.Run) { r.ReRunOf = &session.RunRef{File: "run.json", Seed: 5} }}.build(t, dir)

	// Mini plan: DONE, then BLOCKED (nothing ran).
	writeFile(t, "testdata/plan-mini.md", []byte(strings.Replace(auditPlanHeader, "# Test Plan: audit", "# Test Plan: mini", 1)+
		seriousScenario("S1", "linearizable_register_under_leader_kill", "register")+livenessScenario))
	dir = d(sessDone)
	sessionLog(t, dir, "mini", "../../../plan-mini.md")
	buildAudit(t, dir, "S1", nil, auditSeeds)
	runGen{scenario: "S2", seed: 1, tier: "smoke", nodes: 3, dur: 60, remoteOracle: remote("latency ≤ 1s assertion", 60)}.build(t, dir)
	dir = d(sessBlock)
	sessionLog(t, dir, "mini", "../../../plan-mini.md")
	writeFile(t, filepath.Join(dir, session.ArtifactsDir, ".keep"), nil)

	// Audit plan: one scenario per red flag / weak-oracle defect.
	var b strings.Builder
	b.WriteString(auditPlanHeader)
	for _, c := range auditCases {
		ck := auditCheckers[c.id]
		if ck == "" {
			ck = "linearizability (Porcupine)"
		}
		b.WriteString(seriousScenarioChecker(c.id, c.name, c.model, ck))
	}
	writeFile(t, "testdata/plan-audit.md", []byte(b.String()))
	dir = d(sessAudit)
	sessionLog(t, dir, "audit", "../../../plan-audit.md")
	for _, c := range auditCases {
		seeds := auditSeeds
		if auditSingleSeed[c.id] {
			seeds = seeds[:1]
		}
		buildAudit(t, dir, c.id, c.gen, seeds)
	}
}
