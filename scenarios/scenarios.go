// Package scenarios owns testing/scenarios.yml: the schema `dstgen init`
// writes and `dstgen run` reads (docs/scenarios-yml.md). Loading rejects
// unknown fields and locates every error to file:line; a value still
// reading TODO(<id>) is reported with its line, never run.
package scenarios

// File is a loaded scenarios.yml.
type File struct {
	Version    int        `yaml:"version"`     // 1
	Plan       string     `yaml:"plan"`        // plan path relative to the file; "" = none
	PlanSHA256 string     `yaml:"plan_sha256"` // of the plan generated from
	Scenarios  []Scenario `yaml:"scenarios"`   // plan order

	Path string `yaml:"-"` // the file it was loaded from

	todos []todoAt // the TODO(…) values Parse found, in file order
}

// Scenario is one plan scenario (plan §7).
type Scenario struct {
	ID             string          `yaml:"id"`
	Name           string          `yaml:"name"`
	Falsifies      []string        `yaml:"falsifies"`
	Closes         []string        `yaml:"closes"`
	Technique      string          `yaml:"technique"`
	Serious        bool            `yaml:"serious"` // a falsified claim needs §7.M
	Tiers          map[string]Tier `yaml:"tiers"`   // smoke, hardening, release
	Workload       Workload        `yaml:"workload"`
	Faults         []Fault         `yaml:"faults"`
	LandingSignals []string        `yaml:"landing_signals"`
	Oracle         Oracle          `yaml:"oracle"`
	Arms           []Arm           `yaml:"arms,omitempty"`

	// LeaderQuery is a shell command run on a SUT host that prints the
	// current leader: a host name, address or URL of one of the SUT hosts
	// (the first such token of its output wins). Needed by target
	// "leader" and by the leader-change victim signal.
	LeaderQuery string `yaml:"leader_query,omitempty"`
	// Quiesce gates the stop of the workload after the last heal on an
	// observed condition (docs/nemesis.md §6: no sleep-and-hope).
	Quiesce *Quiesce `yaml:"quiesce,omitempty"`
	// FinalState is a command run on the client host after quiescence
	// that writes the final-state dump to $DSTGEN_FINAL (final.json).
	FinalState string `yaml:"final_state,omitempty"`

	Line int    `yaml:"-"` // line of the entry in the file
	file string // the file it was parsed from, for errors about it
}

// Tier is one budget tier: the plan text verbatim plus the numbers the
// generator could read (nil = not stated). A release disclosure keeps its
// text and sets NotProvided, Reason and RevisitWhen.
type Tier struct {
	Text        string   `yaml:"text"`
	NotProvided bool     `yaml:"not_provided,omitempty"`
	Reason      string   `yaml:"reason,omitempty"`
	RevisitWhen string   `yaml:"revisit_when,omitempty"`
	Size        *float64 `yaml:"size"`
	SizeUnit    string   `yaml:"size_unit"` // nodes | tenants | clients | keys | ""
	DurationS   *float64 `yaml:"duration_s"`
	Faults      *float64 `yaml:"faults"`
	Seeds       *float64 `yaml:"seeds"`
}

// Workload is what the client host runs (docs/driver-contract.md).
type Workload struct {
	Command string   `yaml:"command"`
	Rate    *float64 `yaml:"rate"` // ops/s
	// DurationS is the run length in seconds when the Workload prose
	// states one; null means the run lasts the tier's duration.
	DurationS *float64 `yaml:"duration_s"`
	// Host names the client host(s) (a host name or role:R); "" = the
	// hosts of role "client", else parameters.bench_host.
	Host string `yaml:"host,omitempty"`
}

// Fault is one entry of the fault schedule. Times are strings ("120s",
// "1m30s") or a TODO; Nemesis is an id of docs/nemesis.md.
type Fault struct {
	Nemesis string `yaml:"nemesis"`
	Targets string `yaml:"targets"`
	At      string `yaml:"at"`
	For     string `yaml:"for"`
	Every   string `yaml:"every,omitempty"`
	Times   int    `yaml:"times,omitempty"`
	// Jitter spreads each repeat by up to this much, drawn from the seed.
	Jitter string `yaml:"jitter,omitempty"`
	// Params are the nemesis's own knobs (latency: delay=200ms, hook:
	// the iptables chain to hook, …; docs/nemesis.md lists them).
	Params map[string]string `yaml:"params,omitempty"`
	// Landing is the victim-side signal to capture for this fault; nil =
	// the nemesis's default (docs/nemesis.md §7).
	Landing *Landing `yaml:"landing,omitempty"`
	// Custom holds the commands of a `custom` nemesis.
	Custom *Custom `yaml:"custom,omitempty"`

	Line int `yaml:"-"` // line of the entry in the file
}

// Landing is a victim-side landing signal (docs/nemesis.md §7).
type Landing struct {
	// Log is a regular expression looked for in the victim hosts' SUT
	// logs between injection and Within after it.
	Log string `yaml:"log,omitempty"`
	// Metric is a command run on the victim hosts that prints one number;
	// it is read before injection and again within the window.
	Metric string `yaml:"metric,omitempty"`
	// Expect is the direction the metric must move: rise (default) |
	// fall | change.
	Expect string `yaml:"expect,omitempty"`
	// LeaderChange asks for a different leader (leader_query) within
	// Within of injection.
	LeaderChange bool `yaml:"leader_change,omitempty"`
	// History asks for an error/timeout-rate jump in the history during
	// the window compared with before it.
	History bool `yaml:"history,omitempty"`
	// On is where the victim signal is read: "targets" (default),
	// "others" (the hosts not targeted) or a target expression.
	On string `yaml:"on,omitempty"`
	// Within bounds the wait for the signal ("2s"; default: the window).
	Within string `yaml:"within,omitempty"`
}

// Custom is a nemesis written in scenarios.yml for a SUT-specific row
// (rolling upgrade, compaction, rebalance, config divergence). Each
// command runs on every target host; Evidence prints one number, read
// before injection and after it (the injector-side signal).
type Custom struct {
	Inject   string `yaml:"inject"`
	Heal     string `yaml:"heal"`
	Evidence string `yaml:"evidence"`
}

// Quiesce is an observed condition that ends the recovery phase.
type Quiesce struct {
	// Command runs on a SUT host (or every one with All) and exits 0 once
	// the system is back to nominal.
	Command string `yaml:"command"`
	All     bool   `yaml:"all,omitempty"`
	// Timeout bounds the wait ("30s" default); running out is recorded
	// as recovery not nominal, never a silent pass.
	Timeout string `yaml:"timeout,omitempty"`
}

// Oracle says how the history is judged.
type Oracle struct {
	Model    string `yaml:"model"`
	Checker  string `yaml:"checker"`
	History  string `yaml:"history"`
	TimeoutS int    `yaml:"timeout_s"`
	// FairnessFormula is the §7.M.S formula, verbatim, for fairness
	// scenarios.
	FairnessFormula string `yaml:"fairness_formula,omitempty"`
}

// Arm is a §7.M.S arm.
type Arm struct {
	ID      string    `yaml:"id"`
	Surface string    `yaml:"surface"`
	Oracle  ArmOracle `yaml:"oracle"`
	// Workload overrides the scenario's workload command for this arm
	// ("" = the scenario's, with DSTGEN_ARM set).
	Workload string `yaml:"workload,omitempty"`
}

// ArmOracle is an arm's own oracle.
type ArmOracle struct {
	Property string `yaml:"property"`
	Model    string `yaml:"model"`
	Checker  string `yaml:"checker"`
	History  string `yaml:"history"`
}
