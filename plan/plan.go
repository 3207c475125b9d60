// Package plan parses a claim-driven test plan (markdown: header, claims,
// hypotheses, §6b requirements, scenarios with §7.M/§7.M.S blocks, budget
// tiers) into typed values and lints it.
//
// Every parsed element keeps the 1-based source line it came from, so lint
// problems and later verdicts can point a reviewer at the plan text.
package plan

// Claim categories (docs/plan-format.md §4.2).
const (
	CatSafety      = "safety"
	CatLiveness    = "liveness"
	CatDurability  = "durability"
	CatPerfSLO     = "performance-SLO"
	CatOperational = "operational"
	CatIdempotency = "idempotency"
	CatIsolation   = "isolation"
	CatOrdering    = "ordering"
	CatMembership  = "membership"
	CatBoundary    = "boundary"
	CatFairness    = "fairness"
)

// Categories lists the eleven claim categories in docs/plan-format.md §4.2 order.
var Categories = []string{CatSafety, CatLiveness, CatDurability, CatPerfSLO, CatOperational,
	CatIdempotency, CatIsolation, CatOrdering, CatMembership, CatBoundary, CatFairness}

// GatedModel reports whether a claim category requires a §7.M block.
func GatedModel(cat string) bool {
	switch cat {
	case CatSafety, CatDurability, CatIdempotency, CatIsolation, CatOrdering, CatMembership:
		return true
	}
	return false
}

// GatedSurface reports whether a claim category requires a §7.M.S block.
func GatedSurface(cat string) bool { return cat == CatBoundary || cat == CatFairness }

// Plan is one parsed plan document.
type Plan struct {
	Path            string // file it was read from ("" when parsed from bytes)
	Slug            string
	Date            string
	Mode            string // "change-scoped" (default) | "project-wide"
	SUT             string
	ChangeUnderTest string
	Author          string
	Status          string
	// LeaderQuery and Quiesce are the plan-wide run wiring (header fields,
	// docs/plan-format.md §9.6): every scenario's unless it names its own.
	LeaderQuery string
	Quiesce     string
	Line        int // line of the "# Test Plan:" heading

	Sections      map[string]int // section number token ("1b", "7") → heading line
	Headers       map[string]int // canonical header label ("Plan mode") → line
	Summary       string         // §0 text
	Scope         string         // §1 text
	SUTModel      string         // §2 text (own heading or trailing §1c)
	SUTModelLine  int            // first line of the §2 text
	Claims        []Claim        // §1b
	Missing       []MissingClaim // §1c
	MissingText   string         // §1c prose (the "docs and code appear aligned" sentence)
	MissingLine   int            // first line of MissingText
	Inventory     []InventoryRow // §3
	Hypotheses    []Hypothesis   // §4
	HypothesesNA  string         // §4 "N/A because …" prose
	HypNALine     int            // first line of HypothesesNA
	Coverage      []CoverageRow  // §5
	Techniques    []Technique    // §6
	EnvReqs       []EnvReq       // §6b
	Scenarios     []Scenario     // §7
	Adequacy      []AdequacyRow  // §7b
	Residual      []ResidualRow  // §7c
	ResidualText  string         // §7c prose (explicit "none" sentence)
	ResidualLine  int            // first line of ResidualText
	Confidence    string         // §7d, verbatim lines joined by "\n"
	ConfLine      int            // line of the first Confidence line
	NotCovered    []string       // §8
	NotCovLines   []int          // source line of each NotCovered item
	OpenQuestions []string       // §9
	OpenQLines    []int          // source line of each OpenQuestions item

	// notes are problems the parser noticed (malformed rows, duplicate
	// fields); Lint reports them so the parser itself never has to fail.
	notes []Problem
}

// Claim is a §1b row.
type Claim struct {
	ID, Text, Category, Source string
	Inferred                   string // leading word: "no" | "yes" | "partial"
	InferredNote               string // free text after the leading word
	Line                       int
}

// MissingClaim is a §1c row.
type MissingClaim struct {
	ID, Behavior, Evidence, Action string
	Line                           int
}

// InventoryRow is a §3 row.
type InventoryRow struct {
	Test, Subsystem, Invariant, FailureModes string
	Line                                     int
}

// Hypothesis is a §4 H-item.
type Hypothesis struct {
	ID, Title, Description string
	Group                  string   // §4 sub-heading it sits under, if any
	CouldFalsify           []string // claim (C) or missing-claim (M) ids
	SuspectedBecause       string
	Subsystem              string
	Line                   int
}

// CoverageRow is a §5 row.
type CoverageRow struct {
	Claim, Hypothesis, ExistingTests, Verdict, GapKind, Recommended string
	Line                                                            int
}

// Technique is a §6 block.
type Technique struct {
	Name       string
	Hypotheses []string
	Catches    string
	Reference  string
	Cost       string
	Line       int
}

// EnvReq is a §6b row.
type EnvReq struct {
	Requirement, VersionFloor string
	UsedBy                    []string // scenario or arm ids
	UsedByText                string   // the cell verbatim
	InstallHint               string
	BroughtUpBySUT            bool
	Line                      int
}

// Scenario is a §7 scenario with its fields and blocks.
type Scenario struct {
	ID, Name      string // "S1", "linearizable_get_under_leader_isolation"
	Falsifies     []string
	Closes        []string
	Technique     string
	Workload      string
	Faults        string
	Oracle        string
	Observability string
	ExitCriteria  string
	Smoke         Budget
	Hardening     Budget
	Release       Budget

	// The run wiring (docs/plan-format.md §9.6): the workload driver's
	// invocation, the final-state dump, the leader query and the quiesce
	// check, each a field whose value holds a backticked command line
	// (Command reads it); "" = the plan does not say (a scenario's leader
	// query and quiesce fall back to the header's).
	DriverCommand string
	FinalState    string
	LeaderQuery   string
	Quiesce       string

	TargetTestFile string
	SkeletonLang   string // "Skeleton language" field, lower-cased
	Skeleton       string // body of the fenced block after "Skeleton", dedented
	SkeletonTag    string // the fence's language tag
	SkeletonLine   int    // line of the opening fence

	M              *ModelBlock // §7.M, nil when absent or sentinel
	MNotApplicable bool        // the §7.M sentinel line is present
	MLine          int
	S              *SurfaceBlock // §7.M.S, nil when absent
	Arms           []Arm         // from S.Arms

	Fields map[string]int // canonical label → line, for every field seen
	Line   int

	armModels []*ModelBlock // per-arm §7.M blocks naming no declared arm
}

// Budget is one tier's budget text, kept verbatim, with the disclosure form
// split out for the release tier.
type Budget struct {
	Text        string // verbatim value
	NotProvided bool   // "not provided — <reason>. Revisit when: <…>."
	Reason      string
	RevisitWhen string
	Tier        Tier // dimensions extracted from Text (zero when NotProvided)
	Line        int
}

// ModelBlock is a §7.M block (scenario-level or per arm).
type ModelBlock struct {
	Arm       string // "" for the scenario block, else the arm id
	Model     string // "Model under test"
	History   string // "Operation history"
	Checker   string
	Nemesis   string // "Nemesis + landing evidence"
	Ambiguous string // "Ambiguous outcomes"
	Reduction string // "Reduction plan"
	Fields    map[string]int
	Line      int
}

// SurfaceBlock is a §7.M.S block.
type SurfaceBlock struct {
	Surfaces, Operations, Adversarial, Positive, Negative string
	Delayed, ObservabilityPaths                           string
	BoundaryClaim, BoundaryKeys                           string
	FairnessFormula                                       string
	Fairness                                              *Fairness // parsed FairnessFormula, nil when absent or malformed
	ArmsText                                              string    // inline value of "Scenario arms", if any
	Fields                                                map[string]int
	Line                                                  int
}

// Arm is one §7.M.S scenario arm.
type Arm struct {
	ID      string // "S4/api"
	Surface string
	Oracle  string
	Text    string      // the arm bullet after its id, verbatim
	M       *ModelBlock // the arm's own §7.M, when gated
	Line    int
}

// AdequacyRow is a §7b row.
type AdequacyRow struct {
	Claim, Threats, Scenarios, Why string
	ClaimIDs                       []string // claim ids in the Claim cell
	ScenarioIDs                    []string // scenario / arm ids in the Scenarios cell
	Line                           int
}

// ResidualRow is a §7c row.
type ResidualRow struct {
	Uncertainty, WhyUncovered, WhyAcceptable, Revisit string
	ClaimIDs                                          []string // claim ids named anywhere in the row
	Line                                              int
}
