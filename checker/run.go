package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/plan"
)

// Checker ids, as Spec.Checker, Pick and ParseCheckerField use them.
const (
	Linearizability = "linearizability"
	NoLostAck       = "no-lost-ack"
	ExactlyOnce     = "exactly-once"
	Session         = "session"
	MonotonicReads  = "monotonic-reads"
	Prefix          = "prefix"
	SLO             = "slo"
	Invariant       = "invariant"
	Reconciliation  = "reconciliation"
	Fairness        = "fairness"
	// Serializability is the isolation checker over transactions
	// (docs/history-and-checkers.md §5.16); Params["level"] picks the level.
	Serializability = "serializability"
)

// Checker ids ParseCheckerField may return so a plan can cite them, though
// dstgen ships no such checker (Run rejects them as unknown).
const (
	replay = "replay-equivalence"
)

// defaultTimeout is the time limit when Spec.Timeout is 0.
const defaultTimeout = 5 * time.Minute

// Spec says which checker to run and how.
type Spec struct {
	Model   string
	Checker string
	// History names the file the ops were read from, in the file:line of
	// an error about one op (*fileline.Error); "" names it "history".
	History string
	// Timeout is the hard time limit (0: five minutes); hitting it is
	// Unknown, never Valid.
	Timeout time.Duration
	// HTMLPath receives porcupine's visualization of a violation.
	HTMLPath     string
	HTMLMaxBytes int64 // 0: DefaultHTMLMaxBytes
	// Params are checker parameters; each checker documents its own.
	Params map[string]string
	// Fairness is the fairness checker's formula, parsed once by the plan
	// (plan.ParseFairness); the checker takes it as it is.
	Fairness *plan.Fairness
	// SLO holds the SLO checker's thresholds as the plan states them
	// (plan.ParseSLO); when set it wins over the p50/p95/p99/error_rate/
	// throughput params.
	SLO *plan.SLO
	// Windows are the run's fault windows on the history's clock (run.json
	// fault_windows), which an SLO recovery bound is measured from;
	// WindowUncertainty is how far their edges may be off (the run's
	// stamp_uncertainty_ns).
	Windows           []Window
	WindowUncertainty time.Duration
}

// Window is one fault window on the history's clock.
type Window struct {
	Epoch    string
	Injected int64  // ns; the fault landed then
	Reverted *int64 // ns; nil = never healed within the history
}

// FinalState is the state dumped at quiescence. JSON file format:
//
//	{"keys": {"k": value, ...}, "replicas": {"node": {"k": value, ...}, ...}}
//
// keys holds the converged per-key final values (a log or set as a JSON
// array); replicas holds each replica's own dump for reconciliation.
type FinalState struct {
	Keys     map[string]json.RawMessage            `json:"keys,omitempty"`
	Replicas map[string]map[string]json.RawMessage `json:"replicas,omitempty"`
}

// parseFinalState decodes a final-state document; name is used in errors.
func parseFinalState(data []byte, name string) (*FinalState, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f FinalState
	if err := dec.Decode(&f); err != nil {
		line := 1 + bytes.Count(data[:min(int(dec.InputOffset()), len(data))], []byte("\n"))
		return nil, fileline.Errorf(name, line, "final state: %w", err)
	}
	if dec.More() {
		return nil, fileline.Errorf(name, 0, "final state: trailing data after the object")
	}
	return &f, nil
}

// LoadFinalState reads a final-state file.
func LoadFinalState(path string) (*FinalState, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read final state: %w", err)
	}
	return parseFinalState(data, path)
}

// Run runs spec's checker over ops. The error is only for bad input
// (unknown model or checker, an op the model cannot interpret, a missing
// final state or parameter); one about an op is a *fileline.Error at
// spec.History and the op's line. What the checker found is in the Result.
func Run(ctx context.Context, spec Spec, ops []history.Op, final *FinalState) (Result, error) {
	start := time.Now()
	if spec.History == "" {
		spec.History = "history"
	}
	model := normalizeModel(spec.Model)
	id := spec.Checker
	if id == "" {
		var ok bool
		if id, ok = Pick(model, ""); !ok {
			return Result{}, modelErr{fmt.Errorf("no default checker for model %q; pass one", spec.Model)}
		}
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res Result
	var err error
	switch id {
	case Linearizability:
		m := linModels[model]
		if m == nil {
			return Result{}, modelErr{fmt.Errorf("model %q has no linearizability model (have register, kv/map, counter, log, set, queue)", spec.Model)}
		}
		// A value nobody wrote is left-over state, not a SUT anomaly: the
		// dirty keys are judged by no one, the clean ones as usual.
		res, err = checkLinearizable(ctx, spec, m, ops)
		if dirty := res.Dirty; err == nil && len(dirty) > 0 {
			res.Scope += "; keys with a dirty initial state are excluded"
			switch res.Outcome {
			case Valid, "":
				res.Outcome, res.Reason = Unknown, dirtyReason(dirty)
			default:
				res.Reason = appendReason(res.Reason, dirtyReason(dirty))
			}
		}
	case NoLostAck, ExactlyOnce, Invariant, Reconciliation:
		if final == nil {
			return Result{}, fmt.Errorf("checker %s needs a final state (--final)", id)
		}
		res, err = runFinal(ctx, id, spec, ops, final)
	case Session:
		res, err = checkSession(ctx, ops)
	case MonotonicReads:
		res, err = checkMonotonic(ctx, model, ops, spec.Params)
	case Prefix:
		res, err = checkPrefix(ctx, spec.History, model, ops, spec.Params)
	case SLO:
		res, err = checkSLO(ctx, ops, spec.Params, spec.SLO)
		if err == nil && spec.SLO != nil && spec.SLO.Recovery.Known {
			res = checkRecovery(ops, spec.SLO, spec.Windows, spec.WindowUncertainty, res)
		}
	case Fairness:
		res, err = checkFairness(ctx, ops, spec.Fairness)
	case Serializability:
		res, err = checkIsolation(ctx, spec, ops)
	case MutualExclusion:
		res, err = checkLock(ctx, spec, ops)
	case LeaseSafety:
		res, err = checkLease(ctx, spec, ops)
	default:
		return Result{}, fmt.Errorf("unknown checker %q", id)
	}
	if err != nil {
		return Result{}, err
	}
	return finish(res, id, spec, start), nil
}

// finish stamps a checker's result with what ran and how long, and an
// outcome from its anomalies when the checker left it open.
func finish(res Result, id string, spec Spec, start time.Time) Result {
	res.Checker, res.Model = id, spec.Model
	res.Elapsed = time.Since(start)
	if res.Outcome == "" {
		res.Outcome = Valid
		if len(res.Anomalies) > 0 {
			res.Outcome = Invalid
		}
	}
	return res
}

// Pick is the checker picker of docs/history-and-checkers.md §4. ok is false when the pair is not in
// the table or the table's checker is not shipped: checker is then the
// nearest row, and the plan must say why it still applies. An empty
// category picks the model's default.
func Pick(model, category string) (checker string, ok bool) {
	model = normalizeModel(model)
	if model == "mutex" {
		model = "lock"
	}
	category = strings.ToLower(strings.TrimSpace(category))
	switch category {
	case "fairness":
		return Fairness, true
	case "performance-slo", "performance", "liveness", "operational", "availability":
		return SLO, true
	}
	type row struct{ model, category string }
	table := map[row]string{
		// docs/history-and-checkers.md §4
		{"register", "safety"}:             Linearizability,
		{"log", "durability"}:              NoLostAck,
		{"session", "safety"}:              Session,
		{"ledger", "idempotency"}:          ExactlyOnce,
		{"membership-table", "membership"}: Reconciliation,
		{"queue", "ordering"}:              Prefix,
		{"counter", "safety"}:              Linearizability,
		// models dstgen adds (kv is map's alias; set; log/queue safety)
		{"map", "safety"}:   Linearizability,
		{"kv", "safety"}:    Linearizability,
		{"set", "safety"}:   Linearizability,
		{"queue", "safety"}: Linearizability,
		{"log", "safety"}:   Linearizability,
		{"log", "ordering"}: Prefix,
		// delivery at least once / exactly once over a queue: every acked
		// message is in the final state; each idempotency key has one effect
		{"queue", "durability"}:  NoLostAck,
		{"queue", "idempotency"}: ExactlyOnce,
		// lock / lease safety: the exclusion property over the history
		{"lock", "safety"}:  MutualExclusion,
		{"lease", "safety"}: LeaseSafety,
	}
	if category != "" {
		if c, found := table[row{model, category}]; found {
			return c, true
		}
		if (model == "map" || model == "kv" || model == "txn") && category == "isolation" {
			return Serializability, true
		}
	}
	defaults := map[string]string{
		"register": Linearizability, "map": Linearizability, "kv": Linearizability,
		"counter": Linearizability, "set": Linearizability, "queue": Linearizability,
		"log": Linearizability, "session": Session, "ledger": ExactlyOnce, "txn": Serializability,
		"membership-table": Reconciliation, "lock": MutualExclusion, "lease": LeaseSafety,
	}
	c, found := defaults[model]
	return c, found && category == ""
}

// applies lists, per checker, the models it judges soundly.
var applies = map[string][]string{
	Linearizability: {"register", "map", "kv", "counter", "set", "queue", "log"},
	Session:         {"session", "register", "map", "kv"},
	MonotonicReads:  {"session", "register", "map", "kv", "counter", "log"},
	Prefix:          {"queue", "log"},
	MutualExclusion: {"lock", "mutex"},
	LeaseSafety:     {"lease"},
	Serializability: {"txn", "map", "kv"},
	NoLostAck:       {"log", "queue", "set", "map", "kv", "register", "ledger", "membership-table", "counter", "session"},
}

// Mismatched reports a checker that cannot judge the model's claim (e.g.
// linearizability over a session model): its PASS would be false, so the
// verdict is INCONCLUSIVE-oracle-too-weak. Unknown checkers are mismatched;
// checkers over metrics or final state apply to every model.
func Mismatched(model, checker string) bool {
	model = normalizeModel(model)
	switch checker {
	case SLO, Fairness, Invariant, Reconciliation, ExactlyOnce:
		return false
	}
	ms, ok := applies[checker]
	if !ok {
		return true
	}
	for _, m := range ms {
		if m == model {
			return false
		}
	}
	return true
}

// Needs returns the history fields checker relies on for model
// (docs/history-and-checkers.md §2.2 and docs/history-and-checkers.md §3). FaultEpoch is left to the caller, who knows whether a fault
// overlapped the workload.
func Needs(checker, model string) history.Needs {
	model = normalizeModel(model)
	var n history.Needs
	switch model {
	case "map", "kv":
		n.Key, n.NodeSeen = true, true
	case "register", "membership-table":
		n.NodeSeen = true
	}
	switch checker {
	case Linearizability, Prefix, MutualExclusion, LeaseSafety:
		n.MonotonicClock, n.TimeoutMarkers = true, true
	case NoLostAck, ExactlyOnce, Session, MonotonicReads:
		n.TimeoutMarkers = true
	case Reconciliation:
		n.NodeSeen = true
	}
	return n
}

var checkerPatterns = []struct {
	re *lazyre.Regexp
	id string
}{
	{lazyre.New(`lineari[sz]ab|porcupine|knossos`), Linearizability},
	{lazyre.New(`seriali[sz]ab|\belle\b|snapshot[- ]isolation|read[- ]committed|repeatable[- ]read`), Serializability},
	{lazyre.New(`(no[- ])?lost[- ]ack`), NoLostAck},
	{lazyre.New(`exactly[- ]once|dedup|idempoten`), ExactlyOnce},
	{lazyre.New(`session|read[- ]your[- ]writes|read[- ]after[- ]write`), Session},
	{lazyre.New(`monotonic[- ]reads?`), MonotonicReads},
	{lazyre.New(`prefix|order checker|ordering checker`), Prefix},
	{lazyre.New(`\bslo\b|threshold|p9[59]\b|latency`), SLO},
	// "final state" alone is what no-lost-ack and reconciliation read,
	// not a predicate: only a named invariant is the invariant checker.
	{lazyre.New(`invariant|sum[- ]zero|each[- ]member[- ]once|count[- ]equals`), Invariant},
	{lazyre.New(`exclusion|\bmutex\b|fencing`), MutualExclusion},
	{lazyre.New(`lease[- ]safety|lease (?:expiry|overlap)`), LeaseSafety},
	{lazyre.New(`reconcil|replica diff|pairwise diff`), Reconciliation},
	{lazyre.New(`fairness|worst_group`), Fairness},
	{lazyre.New(`replay`), replay},
}

// ParseCheckerField normalises the free-text §7.M Checker field into
// checker ids, in the order the text names them, without duplicates.
// "session-consistency / monotonic-read" yields both session and
// monotonic-reads.
func ParseCheckerField(text string) []string {
	t := strings.ToLower(text)
	type hit struct {
		at int
		id string
	}
	var hits []hit
	for _, p := range checkerPatterns {
		if loc := p.re.FindStringIndex(t); loc != nil {
			hits = append(hits, hit{loc[0], p.id})
		}
	}
	// "monotonic-read" must not also count as a session checker when only
	// "session" appears inside it; the regexps do not overlap that way, but
	// "session-consistency" does contain "session", which is intended.
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at < hits[j].at })
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.id)
	}
	return ids
}

func appendReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
