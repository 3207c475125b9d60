package generator

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/scenarios"
)

func TestInferNemesis(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"isolate current leader at T+120s for 45s", "leader-isolation"},
		{"leader-isolation via iptables; evidence = DROP counter", "leader-isolation"},
		{"kill -9 a random follower every 60s", "kill-9"},
		{"hard-kill; evidence = exit timestamps", "kill-9"},
		{"drop leader→followers direction only (asymmetric) for 20s, 5 times", "partition-asym"},
		// An asymmetric isolation of the leader keeps its direction.
		{"asymmetric partition isolating current leader", "partition-asym"},
		{"isolate the leader one-way from its peers at T+30s", "partition-asym"},
		{"one-way partition: drop the leader's outbound traffic", "partition-asym"},
		{"isolate the current leader at T+30s for 20s", "leader-isolation"},
		{"partition the minority from the majority", "partition-minority"},
		{"full partition between A and B", "partition-full"},
		{"add 30% packet loss with netem", "packet-loss"},
		{"add 200ms latency on every link", "latency"},
		{"fill the disk with a junk file", "disk-full"},
		{"skew the clock by 5 minutes", "clock-skew"},
		{"restart the gateway mid-run once", "kill-term"},
		{"SIGSTOP the leader for 10s", "pause"},
		{"rolling upgrade under load", "rolling-upgrade"},
		{"use slow-follower on node 3", "slow-follower"},
		{"trigger compaction during reads", "compaction-during-reads"},
		{"nothing recognisable here", ""},
		{"", ""},
	} {
		if got := inferNemesis(tc.text); got != tc.want {
			t.Errorf("inferNemesis(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestFaultsFor(t *testing.T) {
	for _, tc := range []struct {
		name, text, m string
		want          []scenarios.Fault
	}{
		{"none", "none", "", nil},
		// The plan's own reading of "no faults" (plan.Scenario.FaultsPlanned)
		// decides: markup and dashes around "none" schedule nothing.
		{"backticked none", "`none`", "", nil},
		{"bold none", "**None.**", "", nil},
		{"em dash", "—", "", nil},
		{"no fault", "No fault injected (smoke only)", "", nil},
		{"none colon", "None: smoke only", "", nil},
		{"window with repeat", "isolate current leader at T+120s for 45s; repeat every 150s", "",
			[]scenarios.Fault{{Nemesis: "leader-isolation", Targets: "leader", At: "120s", For: "45s", Every: "150s"}}},
		{"two kills", "kill -9 a random follower every 60s; kill -9 the leader once at T+150s", "",
			[]scenarios.Fault{
				{Nemesis: "kill-9", Targets: "random-follower", At: "60s", For: "0s", Every: "60s"},
				{Nemesis: "kill-9", Targets: "leader", At: "150s", For: "0s", Times: 1}}},
		// "restarted … after 5s": the member stays down 5 s, the window's for.
		{"random member", "kill -9 a random member every 30s, restarted by systemd after 5s; kill -9 the leader once at T+45s", "",
			[]scenarios.Fault{
				{Nemesis: "kill-9", Targets: "random", At: "30s", For: "5s", Every: "30s"},
				{Nemesis: "kill-9", Targets: "leader", At: "45s", For: "0s", Times: 1}}},
		{"asymmetric leader isolation", "asymmetric partition isolating current leader at T+30s for 20s", "",
			[]scenarios.Fault{{Nemesis: "partition-asym", Targets: "leader", At: "30s", For: "20s"}}},
		{"asymmetric, the leader's own traffic lost", "asymmetric partition of the current leader (its peers hear nothing from it, and it still hears them) at T+60s for 20s", "",
			[]scenarios.Fault{{Nemesis: "partition-asym", Targets: "leader", At: "60s", For: "20s", Params: map[string]string{"direction": "out"}}}},
		{"minutes", "partition the minority at T+2min for 1.5 min", "",
			[]scenarios.Fault{{Nemesis: "partition-minority", Targets: "minority", At: "120s", For: "90s"}}},
		// A count without a period cannot be scheduled: the period is a
		// TODO, never a guess (scenarios.Parse rejects times > 1 alone).
		{"times without every", "isolate the holder's node at T+30s for 30s, 5 times", "",
			[]scenarios.Fault{{Nemesis: "partition-full", Targets: "role:holder", At: "30s", For: "30s", Times: 5,
				Every: "TODO(S9.faults[0].every): the plan's Faults text says 5 times but not how often"}}},
		{"model block names it", "something odd happens to node 2", "latency on node 2; evidence = p99 shift",
			[]scenarios.Fault{{Nemesis: "latency", Targets: "#2", At: todo("S9", 0, "at"), For: todo("S9", 0, "for")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := faultsFor("S9", tc.text, tc.m)
			if len(got) != len(tc.want) {
				t.Fatalf("faultsFor = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], tc.want[i]) {
					t.Errorf("fault %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	// Unreadable prose becomes visible TODOs naming the scenario.
	got := faultsFor("S7", "do something unspeakable", "")
	if len(got) != 1 || !strings.HasPrefix(got[0].Nemesis, "TODO(S7.faults[0].nemesis)") || !strings.HasPrefix(got[0].At, "TODO(") {
		t.Errorf("unknown fault = %+v, want TODOs", got)
	}
	if got := faultsFor("S7", "", ""); len(got) != 1 || !strings.HasPrefix(got[0].Nemesis, "TODO(S7.faults)") {
		t.Errorf("empty Faults = %+v, want a TODO", got)
	}
}

func TestTargetsOf(t *testing.T) {
	for _, tc := range []struct{ clause, want string }{
		{"kill -9 a random member every 30s, restarted by systemd after 5s", "random"},
		{"restart a random node", "random"},
		{"pause a random replica for 10s", "random"},
		{"kill -9 any member", "random"},
		{"kill -9 a member chosen at random", "random"},
		{"kill -9 the leader once at T+45s", "leader"},
		{"isolate the current leader from both peers at T+30s", "leader"},
		{"partition a minority at T+60s", "minority"},
		{"partition the majority from the rest", "majority"},
		{"restart all nodes at T+60s", "all"},
		{"restart all 3 members in turn", "all"},
		{"kill -9 every node once", "all"},
		{"kill -9 one node every 60s", "one"},
		{"fill the disk of a single replica", "one"},
		{"isolate a random member from the leader", "random"}, // earliest phrase wins
		{"kill -9 a random follower every 60s", "random-follower"},
		{"restart the gateway mid-run once", "role:gateway"},
		{"add 200ms latency", ""},
	} {
		if got := targetsOf(tc.clause); got != tc.want {
			t.Errorf("targetsOf(%q) = %q, want %q", tc.clause, got, tc.want)
		}
	}
}

// TestWorkloadDurationFromTier: a scenario whose Workload names a request
// timeout but no run length runs for the tier's duration (null), not for
// the timeout (examples/etcd S1 and S3 read "1 s request timeout" as 1 s).
func TestWorkloadDurationFromTier(t *testing.T) {
	for _, tc := range []struct {
		workload string
		want     *float64
	}{
		{"5 clients, 50% get / 40% put / 10% cas, 10 keys uniform, 200 ops/s total, 1 s request timeout, for the tier's duration", nil},
		{"2 clients, 100% put at 50 puts/s, 1 s request timeout, for the tier's duration", nil},
		{"5 clients contending for 3 locks, acquire with 5s TTL, hold 200 ms, release, 10 min", fptr(600)},
		{"2 clients, 100% put at 50 ops/s, run for 120 s", fptr(120)},
	} {
		sm := scenarioFor(plan.Scenario{ID: "S1", Workload: tc.workload, Faults: "none"})
		switch {
		case tc.want == nil && sm.DurationS != nil:
			t.Errorf("%q: duration_s = %v, want null (the tier's duration)", tc.workload, *sm.DurationS)
		case tc.want != nil && (sm.DurationS == nil || *sm.DurationS != *tc.want):
			t.Errorf("%q: duration_s = %v, want %v", tc.workload, sm.DurationS, *tc.want)
		}
	}
}

func TestLandingFor(t *testing.T) {
	got := landingFor("S1", "leader-isolation via iptables; evidence = DROP counter rises AND raft_leader_changes_total increments", nil)
	if len(got) != 2 || got[0] != "DROP counter rises" || got[1] != "raft_leader_changes_total increments" {
		t.Errorf("§7.M evidence split = %q", got)
	}
	// A quoted log marker keeps its ";" (straight, backtick and curly
	// quotes); an unclosed quote is a typo and every ";" splits.
	for _, tc := range []struct {
		text string
		want []string
	}{
		{`leader-isolation; evidence = log marker "leader-lost; starting election" on a follower AND raft_term rises`,
			[]string{`log marker "leader-lost; starting election" on a follower`, "raft_term rises"}},
		{"kill-9; evidence = journald line `stopped; restarting` AND new MainPID",
			[]string{"journald line `stopped; restarting`", "new MainPID"}},
		{"kill-9; evidence = “exit; code 137” in the log; new PID",
			[]string{"“exit; code 137” in the log", "new PID"}},
		{`kill-9; evidence = "exit code 137; new PID`,
			[]string{`"exit code 137`, "new PID"}},
	} {
		if got := landingFor("S1", tc.text, nil); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("landingFor(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	got = landingFor("S3", "", []scenarios.Fault{{Nemesis: "partition-asym"}})
	if len(got) != 1 || !strings.Contains(got[0], "timeouts seen on one side only") {
		t.Errorf("generic evidence = %q", got)
	}
	got = landingFor("S3", "", []scenarios.Fault{{Nemesis: "TODO(x)"}})
	if len(got) != 1 || !strings.HasPrefix(got[0], "TODO(S3.landing_signals)") {
		t.Errorf("unknown nemesis evidence = %q", got)
	}
	if got := landingFor("S5", "", nil); len(got) != 0 {
		t.Errorf("no faults → no landing signals, got %q", got)
	}
}

func TestNemesisTableMatchesSpec(t *testing.T) {
	if len(nemesisIDs) != 33 {
		t.Errorf("nemesis table has %d rows, docs/nemesis.md has 33", len(nemesisIDs))
	}
	seen := map[string]bool{}
	for _, n := range nemesisIDs {
		if seen[n.id] {
			t.Errorf("duplicate nemesis id %s", n.id)
		}
		seen[n.id] = true
	}
	for _, h := range nemesisHints {
		if !seen[h.id] {
			t.Errorf("hint maps to unknown nemesis id %s", h.id)
		}
	}
}

// TestRenderQuotesHostileValues feeds plan and profile values full of YAML,
// shell and go-task metacharacters and checks the rendered files still
// parse and carry the values verbatim.
func TestRenderQuotesHostileValues(t *testing.T) {
	evil := `x"; rm -rf / #{{.ROOT_DIR}}'` + "\n: - [a]"
	prof := &Profile{Name: "evil", Questions: []Question{{ID: "test.workload_command", EnvKey: "benchmark.command", Text: "cmd?", Answer: evil}}}
	pl := &plan.Plan{Scenarios: []plan.Scenario{{ID: "S1", Name: evil, Falsifies: []string{"C1"}, Workload: evil, Faults: evil, Oracle: evil, ExitCriteria: evil,
		Smoke: plan.Budget{Text: evil}, Hardening: plan.Budget{Text: "3 nodes"}, Release: plan.Budget{Text: "x"}}}}
	files, err := Render(RenderInput{Profile: prof, Plan: pl, PlanPath: "../p.md", SUTRel: ".."})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	sf, err := scenarios.Parse("scenarios.yml", byPath["scenarios.yml"])
	if err != nil {
		t.Fatalf("scenarios.yml does not parse: %v", err)
	}
	if len(sf.Scenarios) != 1 || sf.Scenarios[0].Name != evil || sf.Scenarios[0].Tiers["smoke"].Text != evil {
		t.Errorf("hostile values not kept verbatim: %+v", sf.Scenarios)
	}
	var e struct {
		Benchmark struct{ Command string } `yaml:"benchmark"`
	}
	if err := yaml.Unmarshal(byPath["env.example.yml"], &e); err != nil {
		t.Fatalf("env.example.yml does not parse: %v", err)
	}
	if e.Benchmark.Command != evil {
		t.Errorf("benchmark.command = %q", e.Benchmark.Command)
	}
	var tf map[string]any
	if err := yaml.Unmarshal(byPath["Taskfile.yml"], &tf); err != nil {
		t.Fatalf("Taskfile.yml does not parse: %v", err)
	}
}

// FuzzFaultsFor: the fault-prose reader never panics, always yields valid
// nemesis ids or TODOs, and never emits a value that breaks YAML.
func FuzzFaultsFor(f *testing.F) {
	for _, s := range []string{
		"isolate current leader at T+120s for 45s; repeat every 150s",
		"kill -9 a random follower every 60s; kill -9 the leader once at T+150s",
		"none", "", ";;;", "T+ for every times", "drop 30% for 99999999999999999999s",
	} {
		f.Add(s, "evidence = a AND b")
	}
	f.Fuzz(func(t *testing.T, text, m string) {
		if !utf8.ValidString(text) || !utf8.ValidString(m) {
			return
		}
		for _, fe := range faultsFor("S1", text, m) {
			if !strings.HasPrefix(fe.Nemesis, "TODO(") && nemesisEvidence(fe.Nemesis) == "" {
				t.Fatalf("nemesis %q is neither an id nor a TODO", fe.Nemesis)
			}
			if fe.At == "" || fe.For == "" || fe.Targets == "" {
				t.Fatalf("empty field in %+v", fe)
			}
		}
		_ = landingFor("S1", m, nil)
	})
}

func TestParseJump(t *testing.T) {
	for in, want := range map[string]*jumpModel{
		"none":                nil,
		"":                    nil,
		"bastion.example":     {Host: "bastion.example", Port: "22"},
		"ops@192.0.2.1:2222":  {Host: "192.0.2.1", User: "ops", Port: "2222"},
		"ops@192.0.2.1:nope":  nil,
		"ops@192.0.2.1:70000": nil,
		"host with spaces":    nil,
	} {
		got := parseJump(in)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("parseJump(%q) = %+v, want %+v", in, got, want)
		}
	}
}

// TestRenderAnswersReachEnvExample: answered questions land in the env.yml
// keys they name, and the result is still exactly the env.Env schema.
func TestRenderAnswersReachEnvExample(t *testing.T) {
	prof := &Profile{Name: "x", Questions: []Question{
		{ID: "remote.host", EnvKey: "remote.host", Answer: "192.0.2.99"},
		{ID: "ssh.user", EnvKey: "ssh.user", Answer: "ops"},
		{ID: "remote.port", EnvKey: "ssh.port", Answer: "2222"},
		{ID: "ssh.bastion", EnvKey: "ssh.jump.host", Answer: "jump@192.0.2.1:2022"},
		{ID: "test.parameters", EnvKey: "benchmark", Answer: "rate=250 duration=90"},
		{ID: "test.workload_command", EnvKey: "benchmark.command", Text: "cmd?"},
	}}
	files, err := Render(RenderInput{Profile: prof, SUTRel: ".."})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, f := range files {
		if f.Path == "env.example.yml" {
			data = f.Data
		}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	var e env.Env
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("env.example.yml: %v", err)
	}
	if e.Hosts[0].Address != "192.0.2.99" || e.SSH.User != "ops" || e.SSH.Port != 2222 {
		t.Errorf("answers not applied: host %q user %q port %d", e.Hosts[0].Address, e.SSH.User, e.SSH.Port)
	}
	if e.SSH.Jump == nil || e.SSH.Jump.Host != "192.0.2.1" || e.SSH.Jump.Port != 2022 || e.SSH.Jump.User != "jump" {
		t.Errorf("jump = %+v", e.SSH.Jump)
	}
	if e.Benchmark.Rate != 250 || e.Benchmark.Duration != 90 {
		t.Errorf("benchmark = %+v", e.Benchmark)
	}
	if !strings.HasPrefix(e.Benchmark.Command, "TODO(test.workload_command)") {
		t.Errorf("unanswered command = %q, want a TODO", e.Benchmark.Command)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"etcd": "etcd", "quorum-kv_2.1": "quorum-kv_2.1", "сервис": "сервис", "my project": "my-project",
		"x$(touch p)`id`": "x--touch-p--id", "a\"b'c\nd#e:f{{g}}": "a-b-c-d-e-f--g", "$()": "", "-.x.-": "x",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestScenarioHintsUncomment: the commented hints the template puts under
// each entry and fault are valid scenarios.yml once uncommented, so a
// user who fills them in gets the fields the orchestrator reads.
func TestScenarioHintsUncomment(t *testing.T) {
	pl := &plan.Plan{Scenarios: []plan.Scenario{{ID: "S1", Name: "n", Falsifies: []string{"C1"}, Workload: "200 ops/s",
		Faults: "isolate the current leader at T+30s for 20s; repeat every 60s", Oracle: "linearizable",
		Smoke: plan.Budget{Text: "3 nodes, 60 s"}, Hardening: plan.Budget{Text: "3 nodes"}, Release: plan.Budget{Text: "x"}}}}
	files, err := Render(RenderInput{Profile: &Profile{Name: "p"}, Plan: pl, PlanPath: "../p.md", SUTRel: ".."})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, f := range files {
		if f.Path == "scenarios.yml" {
			data = f.Data
		}
	}
	hint := regexp.MustCompile(`(?m)^(\s*)# ((?:params|landing|leader_query|quiesce|final_state):)`)
	if n := len(hint.FindAll(data, -1)); n != 5 {
		t.Fatalf("want 5 hints (3 per entry, 2 per fault), found %d", n)
	}
	sf, err := scenarios.Parse("scenarios.yml", hint.ReplaceAll(data, []byte("$1$2")))
	if err != nil {
		t.Fatalf("uncommented hints do not parse: %v", err)
	}
	s := sf.Scenarios[0]
	if s.LeaderQuery == "" || s.FinalState == "" || s.Quiesce == nil || s.Quiesce.Timeout != "30s" {
		t.Errorf("entry hints not read: %+v", s)
	}
	if f := s.Faults[0]; f.Params == nil || f.Landing == nil || f.Landing.Within != "2s" || f.Landing.Log == "" {
		t.Errorf("fault hints not read: %+v", f)
	}
}

// A fault target read as a role no host carries ("from the other
// members" → role:other) is a TODO naming the roles there are, not a
// target that fails only at the run; a role the hosts carry stays.
func TestUnknownRoleTargetIsATODO(t *testing.T) {
	m := model{
		Hosts: []hostModel{{Name: "redis-1", Roles: []string{"redis"}}, {Name: "client-1", Roles: []string{"client"}}},
		Scenarios: []scenarioModel{{ID: "S1", Faults: []scenarios.Fault{
			{Nemesis: "partition-full", Targets: targetsOf("partition-full of replica h2 from the other members")},
			{Nemesis: "kill-9", Targets: targetsOf("restart the redis process")},
			{Nemesis: "kill-9", Targets: "leader"},
		}}},
	}
	unknownRoleTargets(&m)
	got := m.Scenarios[0].Faults
	if !strings.HasPrefix(got[0].Targets, "TODO(S1.faults[0].targets)") || !strings.Contains(got[0].Targets, `"other"`) || !strings.Contains(got[0].Targets, "roles: redis, client") {
		t.Errorf("role:other target became %q, want a TODO naming the roles", got[0].Targets)
	}
	if got[1].Targets != "role:redis" || got[2].Targets != "leader" {
		t.Errorf("known targets changed: %q, %q", got[1].Targets, got[2].Targets)
	}
}

// A §7.M signal that names a command printing one number and how it
// moves becomes each fault's landing metric; a field of a command's
// output, a signal with no direction, or none at all leaves the default.
func TestMetricLandingFromPlanEvidence(t *testing.T) {
	for _, tc := range []struct {
		signal, metric, expect string
	}{
		{"`redis-cli info replication | sed -n 's/^master_last_io_seconds_ago://p'` on the replica rises", "redis-cli info replication | sed -n 's/^master_last_io_seconds_ago://p'", "rise"},
		{"`cat /proc/loadavg | cut -d' ' -f1` falls after the heal", "cat /proc/loadavg | cut -d' ' -f1", "fall"},
		{"`etcdctl get --print-value-only epoch` changes", "etcdctl get --print-value-only epoch", "change"},
		{"master_last_io_seconds_ago of `redis-cli info replication` on h2 rises", "", ""},
		{"(or `etcdctl endpoint status` names a different leader)", "", ""},
		{"DROP counter on h2 rises from 0", "", ""},
	} {
		l := metricLanding([]string{tc.signal})
		switch {
		case tc.metric == "" && l != nil:
			t.Errorf("%q: landing %+v, want none", tc.signal, *l)
		case tc.metric != "" && (l == nil || l.Metric != tc.metric || l.Expect != tc.expect):
			t.Errorf("%q: landing %+v, want metric %q expect %s", tc.signal, l, tc.metric, tc.expect)
		}
	}
	sm := scenarioFor(plan.Scenario{ID: "S1", Faults: "partition-full of a random member at T+10s for 10s",
		M: &plan.ModelBlock{Nemesis: "partition-full via iptables; evidence = DROP counter rises AND `redis-cli info replication | sed -n 's/^master_last_io_seconds_ago://p'` rises"}})
	if len(sm.Faults) != 1 || sm.Faults[0].Landing == nil || sm.Faults[0].Landing.Expect != "rise" {
		t.Errorf("scenario faults %+v: want the plan's metric as the fault's landing", sm.Faults)
	}
}
