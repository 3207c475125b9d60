package session

import (
	"encoding/json"
	"slices"
	"time"
)

// RunSchema identifies the run.json format; LoadRun rejects any other value.
const RunSchema = "dst-run/1"

// Run is one attempt of one scenario or arm with one seed: the analyzer's
// only view of what happened. See the package doc for every field.
type Run struct {
	Schema    string    `json:"schema"`
	Scenario  string    `json:"scenario"`
	Arm       string    `json:"arm,omitempty"`
	Attempted bool      `json:"attempted"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Seed      int64     `json:"seed"`
	ReRunOf   *RunRef   `json:"re_run_of,omitempty"`
	Tier      string    `json:"tier,omitempty"`
	PlanPath  string    `json:"plan_path,omitempty"`
	Nodes     int       `json:"nodes"`
	// ConfigSize holds other size dimensions ("tenants", "keys", "clients").
	ConfigSize        map[string]int     `json:"config_size,omitempty"`
	Capabilities      []Capability       `json:"capabilities,omitempty"`
	MissingCapability *MissingCapability `json:"missing_capability,omitempty"`
	Workload          Workload           `json:"workload"`
	FaultWindows      []FaultWindow      `json:"fault_windows,omitempty"`
	Oracle            *Oracle            `json:"oracle,omitempty"`
	Recovery          *Recovery          `json:"recovery,omitempty"`
	LogScan           *LogScan           `json:"log_scan,omitempty"`
	Baseline          *Baseline          `json:"baseline,omitempty"`
	Clock             string             `json:"clock,omitempty"`
	Timeline          *Timeline          `json:"timeline,omitempty"`
	Schedule          []ScheduledFault   `json:"schedule,omitempty"`
	Heal              *HealRecord        `json:"heal,omitempty"`
	Recorder          *Recorder          `json:"recorder,omitempty"`
	Topologies        []string           `json:"topologies,omitempty"`
	Failovers         *int               `json:"failovers,omitempty"`
	Surfaces          []string           `json:"surfaces,omitempty"`
	Controls          *Controls          `json:"controls,omitempty"`
	Fairness          *Fairness          `json:"fairness,omitempty"`
	Claim             *ClaimScope        `json:"claim,omitempty"`
	History           string             `json:"history,omitempty"`
	FinalState        string             `json:"final_state,omitempty"`
	// FinalStateError says why the scenario's final_state dump is missing
	// (the command failed, the run was interrupted before it): a checker
	// that needs it cannot run, and the analyzer says why.
	FinalStateError string `json:"final_state_error,omitempty"`
	Notes           string `json:"notes,omitempty"`

	// Path is the file the run was loaded from (set by LoadRun).
	Path string `json:"-"`
	// Lines maps a JSON field path ("fault_windows[1].landed") to the
	// 1-based line it appeared on, so later judgements can cite file:line.
	Lines map[string]int `json:"-"`
}

// RunRef names the run a re-run repeats.
type RunRef struct {
	File string `json:"file,omitempty"` // run file name relative to the artifact dir
	Seed int64  `json:"seed"`
}

// Capability is one capability-matrix row (docs/report-format.md §2 item 4).
type Capability struct {
	Requirement string `json:"requirement"`
	Present     bool   `json:"present"`
	Version     string `json:"version,omitempty"`
	Source      string `json:"source,omitempty"`
}

// MissingCapability records why a run could not proceed.
type MissingCapability struct {
	Requirement string `json:"requirement"`
	Reason      string `json:"reason"`
}

// Workload is the load generator's account of the run.
type Workload struct {
	Command     string `json:"command,omitempty"`
	ExitStatus  *int   `json:"exit_status,omitempty"`
	OpsProduced int    `json:"ops_produced"`
	// OpsProducedBy says where OpsProduced comes from: "driver", the
	// driver's own summary line (docs/driver-contract.md), so records the
	// history lost show as ops the checker did not consume; "history", its
	// line count, when the driver printed no count.
	OpsProducedBy string     `json:"ops_produced_by,omitempty"`
	PlannedRate   float64    `json:"planned_rate,omitempty"`
	Tolerance     float64    `json:"tolerance,omitempty"`
	IntervalNS    int64      `json:"interval_ns,omitempty"`
	Throughput    []Interval `json:"throughput,omitempty"`
	FirstOpNS     *int64     `json:"first_op_ns,omitempty"`
	LastOpNS      *int64     `json:"last_op_ns,omitempty"`
	// AllStartedNS is when the last of several client hosts invoked its
	// first op (the merged history's clock): before it the workload ran
	// on only some of its shares, so a rate below the plan there is the
	// start, not a stall (docs/verdicts.md, red flag 1).
	AllStartedNS *int64 `json:"all_started_ns,omitempty"`
}

// Interval is one measurement interval of the throughput series.
type Interval struct {
	StartNS int64   `json:"start_ns"`
	Ops     int     `json:"ops"`
	Errors  int     `json:"errors,omitempty"`
	P50Ms   float64 `json:"p50_ms,omitempty"`
	P95Ms   float64 `json:"p95_ms,omitempty"`
	P99Ms   float64 `json:"p99_ms,omitempty"`
}

// FaultWindow is one scheduled fault (docs/nemesis.md §7).
type FaultWindow struct {
	FaultEpoch       string    `json:"fault_epoch"`
	Nemesis          string    `json:"nemesis"`
	Target           string    `json:"target,omitempty"`
	Targets          []string  `json:"targets,omitempty"`
	ScheduledAtNS    int64     `json:"scheduled_at_ns"`
	InjectedAtNS     *int64    `json:"injected_at_ns,omitempty"`
	RevertedAtNS     *int64    `json:"reverted_at_ns,omitempty"`
	InjectorOK       *bool     `json:"injector_ok,omitempty"`
	InjectorEvidence *Evidence `json:"injector_evidence,omitempty"`
	VictimEvidence   *Evidence `json:"victim_evidence,omitempty"`
	TargetCheck      *Evidence `json:"target_check,omitempty"`
	Landed           bool      `json:"landed"`
}

// AllTargets returns Targets plus Target, so either spelling works.
func (w FaultWindow) AllTargets() []string {
	out := append([]string(nil), w.Targets...)
	if w.Target != "" && !slices.Contains(out, w.Target) {
		out = append(out, w.Target)
	}
	return out
}

// Timeline is how the orchestrator put fault windows and ops on one clock
// (docs/dst-run.md §4): each host's offset from the control node, measured
// NTP-style on the open connection, and the history's origin.
type Timeline struct {
	// OriginUnixNS is the history's monotonic zero on the driver host's
	// clock (the history header's origin_unix_ns); 0 = wall clock.
	OriginUnixNS int64 `json:"origin_unix_ns,omitempty"`
	// DriverHost is the host whose clock the history was taken on.
	DriverHost string `json:"driver_host,omitempty"`
	// Drivers are the client hosts whose histories were merged into the
	// run's one history, on the control node's clock (several client
	// hosts; docs/dst-run.md §7, collect); empty for one driver.
	Drivers []string    `json:"drivers,omitempty"`
	Hosts   []HostClock `json:"hosts,omitempty"`
	// StampedOps counts ops the orchestrator stamped with a fault_epoch;
	// AmbiguousOps those within the uncertainty of a window edge, which
	// are left unstamped and counted here rather than guessed.
	StampedOps   int `json:"stamped_ops"`
	AmbiguousOps int `json:"ambiguous_ops"`
	// DriverEnd is the driver host's clock measured again after the run;
	// StampUncertaintyNS the uncertainty the windows were put on the
	// history's clock with: the larger of the two measurements' plus the
	// drift between them. DriverClockUnknown says the driver's offset was
	// never measured: no op is stamped, every op that could meet a window
	// is ambiguous, and the history cannot prove a landing.
	DriverEnd          *HostClock `json:"driver_end,omitempty"`
	StampUncertaintyNS int64      `json:"stamp_uncertainty_ns,omitempty"`
	DriverClockUnknown bool       `json:"driver_clock_unknown,omitempty"`
}

// HostClock is one host's clock against the control node's.
type HostClock struct {
	Host          string `json:"host"`
	OffsetNS      int64  `json:"offset_ns"`      // host clock − control clock
	UncertaintyNS int64  `json:"uncertainty_ns"` // half the best round trip
	Samples       int    `json:"samples"`
}

// ScheduledFault is one planned window of the fault schedule, a pure
// function of the seed and scenarios.yml, recorded so a re-run replays it.
type ScheduledFault struct {
	FaultEpoch string            `json:"fault_epoch"`
	Nemesis    string            `json:"nemesis"`
	Targets    string            `json:"targets"` // the target expression
	AtNS       int64             `json:"at_ns"`   // after workload start
	ForNS      int64             `json:"for_ns"`
	Params     map[string]string `json:"params,omitempty"`
	// Pick is the seed-derived choice for random targets and partition
	// shapes, so a re-run picks the same hosts.
	Pick int64 `json:"pick"`
}

// HealRecord says what the final heal removed.
type HealRecord struct {
	At      time.Time `json:"at"`
	Removed []string  `json:"removed,omitempty"`
	Errors  []string  `json:"errors,omitempty"`
}

// Evidence is one landing signal with its raw values.
type Evidence struct {
	Kind    string          `json:"kind"`
	Name    string          `json:"name,omitempty"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
	Delta   *float64        `json:"delta,omitempty"`
	Raw     string          `json:"raw,omitempty"`
	Verdict string          `json:"verdict,omitempty"`
}

// Evidence verdicts.
const (
	SignalChanged   = "changed"
	SignalUnchanged = "unchanged"
	SignalAmbiguous = "ambiguous"
	SignalAbsent    = "absent"
	// SignalUnknown is a reading that failed, or one whose baseline
	// failed: nothing is known, and unknown never lands a window.
	SignalUnknown = "unknown"
)

// Oracle is a remote-side oracle's execution record.
type Oracle struct {
	Checkers    []string `json:"checkers,omitempty"`
	Ran         bool     `json:"ran"`
	Outcome     string   `json:"outcome,omitempty"` // valid | invalid | unknown
	OpsConsumed int      `json:"ops_consumed"`
	Anomalies   int      `json:"anomalies"`
	Evidence    string   `json:"evidence,omitempty"`
	HTML        string   `json:"html,omitempty"`
	Scope       string   `json:"scope,omitempty"`
}

// Recovery says whether the SUT returned to nominal after the last heal.
type Recovery struct {
	Nominal  bool   `json:"nominal"`
	Evidence string `json:"evidence,omitempty"`
	// NominalAtNS is when the system was seen back to nominal (the
	// quiesce condition held), on the history's clock.
	NominalAtNS *int64 `json:"nominal_at_ns,omitempty"`
}

// LogScan is the grep of SUT logs for error markers (red flag 7).
type LogScan struct {
	Markers   []string `json:"markers,omitempty"`
	Found     int      `json:"found"`
	Accounted int      `json:"accounted"`
	Hits      []string `json:"hits,omitempty"`
}

// Baseline records the baseline a run was compared against (red flag 9).
type Baseline struct {
	Compared            bool   `json:"compared"`
	HarnessHash         string `json:"harness_hash,omitempty"`
	ConfigHash          string `json:"config_hash,omitempty"`
	BaselineHarnessHash string `json:"baseline_harness_hash,omitempty"`
	BaselineConfigHash  string `json:"baseline_config_hash,omitempty"`
	Rebaselined         bool   `json:"rebaselined,omitempty"`
}

// Recorder describes how the history was recorded.
type Recorder struct {
	Mechanism    string `json:"mechanism"` // in-process | external probe | server-side audit | combined
	HidesRetries *bool  `json:"hides_retries,omitempty"`
}

// Controls records which boundary controls the oracle exercised.
type Controls struct {
	Positive    bool `json:"positive"`
	Denied      bool `json:"denied"`
	SideChannel bool `json:"side_channel"`
}

// Fairness is the per-group breakdown of a fairness run.
type Fairness struct {
	Dimension string       `json:"dimension"`
	Groups    []GroupStats `json:"groups,omitempty"`
}

// GroupStats is one group's figures.
type GroupStats struct {
	Group      string  `json:"group"`
	P99Ms      float64 `json:"p99_ms"`
	Throughput float64 `json:"throughput"`
	ErrorRate  float64 `json:"error_rate"`
}

// ClaimScope overrides the analyzer's reading of the claim for the N/A
// escapes of the weak-oracle audit. Statistical false is the only way
// a serious hardening claim escapes docs/verdicts.md §4.2's three-seed rule:
// the escape is declared by whoever knows the test is deterministic,
// never inferred from a plan budget that asks for one seed.
type ClaimScope struct {
	FailoverBased *bool `json:"failover_based,omitempty"`
	SizeGeneric   *bool `json:"size_generic,omitempty"`
	Statistical   *bool `json:"statistical,omitempty"`
}

// ID returns the arm id when set, else the scenario id.
func (r *Run) ID() string {
	if r.Arm != "" {
		return r.Arm
	}
	return r.Scenario
}

// Duration is the measured run duration (0 when a stamp is missing or the
// stamps are reversed).
func (r *Run) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.EndedAt.IsZero() || r.EndedAt.Before(r.StartedAt) {
		return 0
	}
	return r.EndedAt.Sub(r.StartedAt)
}

// Line returns the line of field path (0 when unknown).
func (r *Run) Line(path string) int { return r.Lines[path] }
