// Package analyze turns a session directory (see package session) into
// verdicts: it loads every run.json and history, runs the plan's §7.M
// checkers, applies the decision tree and gates of docs/verdicts.md, and
// builds an in-memory Report that the report writers render as report.md,
// report.json, junit.xml and report.html.
//
// The package is a pipeline, one stage per file group, each calling only
// the stages before it: model.go and vocab.go (0, shared vocabulary),
// load.go and checkers.go (1, load), facts*.go (2, facts), redflags.go and
// weakoracle.go (3, audits), decide.go (4, decide), findings.go and
// plansections.go (5, findings); analyze.go drives 1–5, and the report
// files (6: report_cells.go, compare.go, json.go, junit.go,
// reportdoc_blocks.go, reportdoc.go, report.go) write the Report. The
// benchmark-run analysis is package analyze/bench; both render through
// analyze/render.
package analyze

import (
	"fmt"
	"time"

	"github.com/dstgen/dstgen/checker"
)

// ReportSchema identifies the report.json format.
const ReportSchema = "dst-report/1"

// Verdict is one of the ten per-scenario (or per-arm) outcome states of
// docs/verdicts.md §2. The string values are the spec's literal state names.
type Verdict string

// The ten states, in the order of docs/verdicts.md §2.
const (
	PassSmoke                  Verdict = "PASS-smoke"
	PassHardening              Verdict = "PASS-hardening"
	FailReproducible           Verdict = "FAIL-reproducible"
	FailNondeterministic       Verdict = "FAIL-nondeterministic"
	InconclusiveEnv            Verdict = "INCONCLUSIVE-env"
	InconclusiveOracleTooWeak  Verdict = "INCONCLUSIVE-oracle-too-weak"
	InconclusiveFaultNotProven Verdict = "INCONCLUSIVE-fault-not-proven"
	PartialSurface             Verdict = "PARTIAL-surface"
	PartialModel               Verdict = "PARTIAL-model"
	NotRun                     Verdict = "NOT-RUN"
)

// Verdicts lists the ten states in spec order.
var Verdicts = []Verdict{PassSmoke, PassHardening, FailReproducible, FailNondeterministic,
	InconclusiveEnv, InconclusiveOracleTooWeak, InconclusiveFaultNotProven,
	PartialSurface, PartialModel, NotRun}

// Strength ranks a verdict by the docs/verdicts.md §2 strength order (higher is stronger):
// PASS-hardening > PASS-smoke > PARTIAL-model > PARTIAL-surface >
// INCONCLUSIVE-* (all equal) > NOT-RUN. FAIL-* are outside the order and
// rank -1; callers handle FAIL first (FAIL always wins, docs/verdicts.md §5).
func (v Verdict) Strength() int {
	switch v {
	case PassHardening:
		return 6
	case PassSmoke:
		return 5
	case PartialModel:
		return 4
	case PartialSurface:
		return 3
	case InconclusiveEnv, InconclusiveOracleTooWeak, InconclusiveFaultNotProven:
		return 2
	case NotRun:
		return 1
	}
	return -1
}

// IsPass reports whether v is a PASS state.
func (v Verdict) IsPass() bool { return v == PassSmoke || v == PassHardening }

// IsFail reports whether v is a FAIL state.
func (v Verdict) IsFail() bool { return v == FailReproducible || v == FailNondeterministic }

// IsInconclusive reports whether v is an INCONCLUSIVE state.
func (v Verdict) IsInconclusive() bool {
	return v == InconclusiveEnv || v == InconclusiveOracleTooWeak || v == InconclusiveFaultNotProven
}

// IsPartial reports whether v is a PARTIAL state.
func (v Verdict) IsPartial() bool { return v == PartialSurface || v == PartialModel }

// valid reports whether v is one of the ten states.
func (v Verdict) valid() bool {
	for _, s := range Verdicts {
		if v == s {
			return true
		}
	}
	return false
}

// SessionVerdict is the roll-up of docs/verdicts.md §8.
type SessionVerdict string

// Session verdicts.
const (
	Done             SessionVerdict = "DONE"
	DoneWithConcerns SessionVerdict = "DONE_WITH_CONCERNS"
	Inconclusive     SessionVerdict = "INCONCLUSIVE"
	Fail             SessionVerdict = "FAIL"
	Blocked          SessionVerdict = "BLOCKED"
)

// TierLevel is the budget tier a run met (docs/verdicts.md §4.1): a name,
// where plan.Tier is the parsed content of one tier budget.
type TierLevel string

// Tiers. TierUnknown means a stated tier could not be parsed; it is
// treated as smoke only.
const (
	TierNone      TierLevel = "none"
	TierSmoke     TierLevel = "smoke"
	TierHardening TierLevel = "hardening"
	TierRelease   TierLevel = "release"
	TierUnknown   TierLevel = "unknown"
)

// Check statuses for the ten red-flag checks (docs/verdicts.md §6). Unknown
// (artefact absent) blocks PASS just like Fail.
const (
	CheckPass    = "pass"
	CheckFail    = "fail"
	CheckNA      = "n/a"
	CheckUnknown = "unknown"
)

// Weak-oracle item statuses (docs/verdicts.md §7).
const (
	ItemChecked   = "checked"
	ItemUnchecked = "unchecked"
	ItemNA        = "n/a"
)

// Weak-oracle item kinds decide the docs/verdicts.md §4.2 downgrade target.
const (
	KindSurface = "surface" // oracle is surface-level ⇒ PARTIAL-surface
	KindBreadth = "breadth" // checker breadth ⇒ PARTIAL-model
)

// Report is everything analyze concluded about one session; report.json is
// its JSON encoding.
type Report struct {
	Schema         string           `json:"schema"`
	PlanSlug       string           `json:"plan_slug"`
	PlanPath       string           `json:"plan_path,omitempty"`
	SessionDir     string           `json:"session_dir"`
	PreviousDir    string           `json:"previous_session_dir,omitempty"`
	Commit         string           `json:"commit,omitempty"`
	GeneratedAt    time.Time        `json:"generated_at"`
	SessionVerdict SessionVerdict   `json:"session_verdict"`
	Headline       string           `json:"headline"`
	Scenarios      []ScenarioResult `json:"scenarios"`
	// Hypotheses is the docs/report-format.md §3.1 coverage summary, one row per plan hypothesis.
	Hypotheses []HypothesisCoverage `json:"hypotheses"`
	// Surfaces has one row per §7.M.S arm followed by the aggregate row.
	Surfaces []SurfaceRow `json:"surfaces"`
	// MissingSurfaces names each planned surface that did not run, with why.
	MissingSurfaces []string        `json:"missing_surfaces"`
	Disclosures     []Disclosure    `json:"release_disclosures"`
	Adequacy        []AdequacyRow   `json:"adequacy"`
	Confidence      ConfidenceDelta `json:"confidence_delta"`
	Problems        []Problem       `json:"problems"`
	Warnings        []string        `json:"warnings,omitempty"`
	Findings        []Finding       `json:"findings"`
	Counts          map[Verdict]int `json:"counts"`
}

// ScenarioResult is the verdict for one scenario or arm plus everything it
// rests on. Arms nest under their parent; the parent's Verdict is then the
// docs/verdicts.md §5 aggregate.
type ScenarioResult struct {
	ID      string  `json:"id"`               // "S1", "S4/api"
	Parent  string  `json:"parent,omitempty"` // "S4" for arms
	Name    string  `json:"name,omitempty"`
	Surface string  `json:"surface,omitempty"` // arms only
	Serious bool    `json:"serious"`
	Verdict Verdict `json:"verdict"`
	// TreeVerdict is what the docs/verdicts.md §3 tree gave before the docs/verdicts.md §4 gates.
	TreeVerdict Verdict   `json:"tree_verdict"`
	TierMet     TierLevel `json:"tier_met"`
	// Release is the "release" annotation of a PASS-hardening at release tier.
	Release bool `json:"release,omitempty"`
	// Reasons holds the reason for the verdict and for every downgrade, in
	// the order they were applied.
	Reasons         []Reason         `json:"reasons"`
	Oracle          string           `json:"oracle,omitempty"`
	OracleEvidence  string           `json:"oracle_evidence"`
	LandingEvidence string           `json:"landing_evidence"`
	Artifacts       []string         `json:"artifacts,omitempty"`
	Checkers        []checker.Result `json:"checkers,omitempty"`
	RedFlags        []Check          `json:"red_flags"`
	WeakOracle      []WeakItem       `json:"weak_oracle,omitempty"`
	Arms            []ScenarioResult `json:"arms,omitempty"`
	// Findings lists the ids (F<n>) of this scenario's findings; the
	// blocks themselves are in Report.Findings.
	Findings []string `json:"findings,omitempty"`
	Metrics  *Metrics `json:"metrics,omitempty"`
	Seeds    []int64  `json:"seeds,omitempty"`
	Runs     []RunRef `json:"runs,omitempty"`
	// Actions are suggested next steps (e.g. "re-run with seed 42").
	Actions []string `json:"actions,omitempty"`
	// Hypotheses are the plan hypotheses this scenario closes.
	Hypotheses []string `json:"hypotheses,omitempty"`
	Claims     []string `json:"claims,omitempty"`
	// reRun is the tree's own test of whether a re-run fed the verdict
	// (one of a violating seed, attempted), which the headline's words
	// must agree with: Runs also lists a re-run that never started or
	// repeats another seed, and a parent with arms lists none.
	reRun bool
}

// Reason explains one step of a verdict: the tree branch taken or a gate's
// downgrade (From → To).
type Reason struct {
	Step string  `json:"step"` // "tree:2", "gate:tier", "gate:weak-oracle", "gate:red-flag", "arms"
	From Verdict `json:"from,omitempty"`
	To   Verdict `json:"to"`
	Text string  `json:"text"`
}

// String renders the reason for one-line output.
func (r Reason) String() string {
	if r.From != "" && r.From != r.To {
		return fmt.Sprintf("%s → %s: %s", r.From, r.To, r.Text)
	}
	return r.Text
}

// RunRef identifies one run.json that fed a verdict.
type RunRef struct {
	File     string `json:"file"`
	Seed     int64  `json:"seed"`
	ReRunOf  string `json:"re_run_of,omitempty"`
	Violated bool   `json:"violated"`
}

// Check is one green-but-broken red-flag check (docs/verdicts.md §6).
type Check struct {
	N        int    `json:"n"`
	Name     string `json:"name"`
	Status   string `json:"status"` // CheckPass | CheckFail | CheckNA | CheckUnknown
	Evidence string `json:"evidence"`
}

// WeakItem is one weak-oracle audit item (docs/verdicts.md §7).
type WeakItem struct {
	N      int    `json:"n"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`   // KindSurface | KindBreadth
	Status string `json:"status"` // ItemChecked | ItemUnchecked | ItemNA
	Reason string `json:"reason"`
}

// Finding is one docs/report-format.md §3.3 block, raised for every FAIL and for
// review items (e.g. red flag 7: swallowed errors).
type Finding struct {
	ID             string   `json:"id"` // "F1"
	Title          string   `json:"title"`
	Scenario       string   `json:"scenario"`
	Verdict        Verdict  `json:"verdict"`
	Hypothesis     string   `json:"hypothesis"`
	WhatHappened   string   `json:"what_happened"`
	Reproducer     string   `json:"reproducer"`
	Reduction      string   `json:"reduction_classification"`
	Classification string   `json:"classification"` // TaxDC top-level
	Tags           []string `json:"tags,omitempty"`
	Severity       string   `json:"severity"` // P0..P3
	Evidence       []string `json:"evidence"`
	RootCause      string   `json:"root_cause"`
	NextAction     string   `json:"next_action"`
}

// Metrics summarises the workload of a scenario for tables and charts.
type Metrics struct {
	Ops        int     `json:"ops"`
	Errors     int     `json:"errors"`
	Timeouts   int     `json:"timeouts"`
	Throughput float64 `json:"throughput_ops_s"`
	P50Ms      float64 `json:"p50_ms"`
	P95Ms      float64 `json:"p95_ms"`
	P99Ms      float64 `json:"p99_ms"`
	ErrorRate  float64 `json:"error_rate"`
	// PlannedRate is the workload's planned ops/s (0 when not stated).
	PlannedRate float64 `json:"planned_rate_ops_s,omitempty"`
	// Series is per measurement interval, offsets in ns since run start.
	Series       []MetricPoint `json:"series,omitempty"`
	FaultWindows []WindowSpan  `json:"fault_windows,omitempty"`
}

// MetricPoint is one measurement interval.
type MetricPoint struct {
	StartNS    int64   `json:"start_ns"`
	EndNS      int64   `json:"end_ns"`
	Ops        int     `json:"ops"`
	Throughput float64 `json:"throughput_ops_s"`
	P50Ms      float64 `json:"p50_ms"`
	P95Ms      float64 `json:"p95_ms"`
	P99Ms      float64 `json:"p99_ms"`
	ErrorRate  float64 `json:"error_rate"`
}

// WindowSpan is a fault window to shade on a chart.
type WindowSpan struct {
	Epoch   string `json:"fault_epoch"`
	Nemesis string `json:"nemesis"`
	StartNS int64  `json:"start_ns"`
	EndNS   int64  `json:"end_ns"`
	Landed  bool   `json:"landed"`
}

// HypothesisCoverage is one docs/report-format.md §3.1 "Coverage summary" row.
type HypothesisCoverage struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Scenarios []string  `json:"scenarios"`
	Verdicts  []Verdict `json:"verdicts"`
	Exercised bool      `json:"exercised"`
	Reason    string    `json:"reason,omitempty"` // why unexercised
}

// SurfaceRow is one docs/report-format.md §3.4 row.
type SurfaceRow struct {
	ID              string  `json:"id"`
	Surface         string  `json:"surface"` // "(aggregate)" for the parent row
	Planned         bool    `json:"planned"`
	Executed        bool    `json:"executed"`
	Verdict         Verdict `json:"verdict"`
	DowngradeReason string  `json:"downgrade_reason,omitempty"`
}

// Disclosure is one release-budget disclosure (docs/report-format.md §3.5), copied
// verbatim from the plan.
type Disclosure struct {
	Scenario    string `json:"scenario"`
	Reason      string `json:"reason"`
	RevisitWhen string `json:"revisit_when"`
	Text        string `json:"text"`
}

// AdequacyRow is one docs/report-format.md §3.6 row.
type AdequacyRow struct {
	Claim        string `json:"claim"`
	PlanArgument string `json:"plan_argument"`
	WhatRan      string `json:"what_ran"`
	Adequacy     string `json:"adequacy"`
	// CalledOut marks rows where what ran is weaker than the plan argued.
	CalledOut bool `json:"called_out"`
}

// ConfidenceDelta is docs/report-format.md §3.7, relative to the plan's §7d.
type ConfidenceDelta struct {
	Plan      string   `json:"plan_statement,omitempty"`
	More      []string `json:"more"`
	Less      []string `json:"less"`
	Unchanged []string `json:"unchanged"`
}

// Problem is bad input that did not stop the analysis.
type Problem struct {
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Scenario string `json:"scenario,omitempty"`
	Message  string `json:"message"`
}

// String renders "file:line: message".
func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if loc == "" {
		return p.Message
	}
	return loc + ": " + p.Message
}
