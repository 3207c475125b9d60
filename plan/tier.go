package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// Count is one numeric dimension of a budget tier. Known is false when the
// tier text does not state it, so "0 faults" and "faults not stated" differ.
type Count struct {
	N     int
	Known bool
}

// Span is the run-duration dimension of a budget tier.
type Span struct {
	D     time.Duration
	Known bool
}

// Tier is what ParseTier could extract from a budget tier's prose
// (docs/plan-format.md §10): configuration size, run duration, fault count and seed
// count. The analyzer compares measured runs against it, so every dimension
// says whether it was stated.
type Tier struct {
	Nodes    Count // "3 nodes" (also replicas, voters)
	Tenants  Count // "4 tenants"
	Clients  Count // "6 clients"
	Keys     Count // "20 keys"
	Duration Span  // "60 s", "10 min", "2 h"
	Faults   Count // "4 faults"
	Seeds    Count // "3 seeds"
}

// Size returns the configuration size: nodes if stated, else tenants,
// clients, keys — the first one the tier names.
func (t Tier) Size() (n int, unit string, ok bool) {
	for _, d := range []struct {
		c    Count
		unit string
	}{{t.Nodes, "nodes"}, {t.Tenants, "tenants"}, {t.Clients, "clients"}, {t.Keys, "keys"}} {
		if d.c.Known {
			return d.c.N, d.unit, true
		}
	}
	return 0, "", false
}

// Parsed reports whether any dimension was extracted.
func (t Tier) Parsed() bool {
	_, _, size := t.Size()
	return size || t.Duration.Known || t.Faults.Known || t.Seeds.Known
}

// unknown lists the dimensions ("size", "duration", "faults", "seeds") the
// tier text does not state.
func (t Tier) unknown() []string {
	var out []string
	if _, _, ok := t.Size(); !ok {
		out = append(out, "size")
	}
	if !t.Duration.Known {
		out = append(out, "duration")
	}
	if !t.Faults.Known {
		out = append(out, "faults")
	}
	if !t.Seeds.Known {
		out = append(out, "seeds")
	}
	return out
}

// tierDim is one comparable dimension of two tiers.
type tierDim struct {
	name      string
	a, b      float64
	aOK, bOK  bool
	unitA, uB string
}

func tierDims(a, b Tier) []tierDim {
	an, au, aok := a.Size()
	bn, bu, bok := b.Size()
	return []tierDim{
		{"size", float64(an), float64(bn), aok, bok, au, bu},
		{"duration", float64(a.Duration.D), float64(b.Duration.D), a.Duration.Known, b.Duration.Known, "", ""},
		{"faults", float64(a.Faults.N), float64(b.Faults.N), a.Faults.Known, b.Faults.Known, "", ""},
		{"seeds", float64(a.Seeds.N), float64(b.Seeds.N), a.Seeds.Known, b.Seeds.Known, "", ""},
	}
}

// Weaker compares a stronger tier (t, e.g. hardening) against a weaker one
// (base, e.g. smoke) on every dimension both state. It returns the
// dimensions where t is below base, and whether t is above base on at least
// one of them.
func (t Tier) Weaker(base Tier) (below []string, anyAbove bool) {
	for _, d := range tierDims(base, t) {
		if !d.aOK || !d.bOK || d.unitA != d.uB {
			continue
		}
		switch {
		case d.b < d.a:
			below = append(below, d.name)
		case d.b > d.a:
			anyAbove = true
		}
	}
	return below, anyAbove
}

// metBy reports which stated dimensions of the tier a run did not reach:
// for every dimension the tier states, the run must state it too and be at
// least as large. An empty result means the run met the tier (a run that
// did not record its seed count has not shown it met the seed requirement).
func (t Tier) metBy(run Tier) (short []string) {
	counts := []struct {
		name      string
		want, got Count
	}{{"nodes", t.Nodes, run.Nodes}, {"tenants", t.Tenants, run.Tenants}, {"clients", t.Clients, run.Clients},
		{"keys", t.Keys, run.Keys}, {"faults", t.Faults, run.Faults}, {"seeds", t.Seeds, run.Seeds}}
	for _, c := range counts {
		if c.want.Known && (!c.got.Known || c.got.N < c.want.N) {
			short = append(short, c.name)
		}
	}
	if t.Duration.Known && (!run.Duration.Known || run.Duration.D < t.Duration.D) {
		short = append(short, "duration")
	}
	return short
}

// ParseTier extracts the dimensions of a budget tier from prose such as
// "3 nodes, 10 min, 4 faults, 3 seeds". The first mention of each dimension
// wins; words it does not know are ignored. It never fails: what it cannot
// read stays Known=false.
func ParseTier(text string) Tier {
	var t Tier
	s := text
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || (i > 0 && (isWordByte(s[i-1]) || s[i-1] == '.' || s[i-1] == '+')) {
			i++
			continue
		}
		j := i
		for j < len(s) && (isDigit(s[j]) || s[j] == '.' || s[j] == ',' && j+1 < len(s) && isDigit(s[j+1]) && j+4 <= len(s) && isDigit(s[j+3])) {
			j++
		}
		numText := strings.ReplaceAll(s[i:j], ",", "")
		k := j
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		w := k
		for w < len(s) && (s[w] >= 'a' && s[w] <= 'z' || s[w] >= 'A' && s[w] <= 'Z') {
			w++
		}
		word := strings.ToLower(s[k:w])
		next := w
		if next == k {
			next = j
		}
		v, err := strconv.ParseFloat(strings.TrimRight(numText, "."), 64)
		if err != nil || math.IsInf(v, 0) || v > 1e12 {
			i = next
			continue
		}
		// "ops/s", "MB/s" are rates, not durations: the word must not be
		// followed by "/".
		if w < len(s) && s[w] == '/' {
			i = next
			continue
		}
		n := int(v)
		setCount := func(c *Count) {
			if !c.Known {
				*c = Count{N: n, Known: true}
			}
		}
		switch word {
		case "node", "nodes", "replica", "replicas", "voter", "voters", "host", "hosts", "vms", "vm":
			setCount(&t.Nodes)
		case "tenant", "tenants":
			setCount(&t.Tenants)
		case "client", "clients", "worker", "workers":
			setCount(&t.Clients)
		case "key", "keys":
			setCount(&t.Keys)
		case "fault", "faults", "kills", "partitions", "windows":
			setCount(&t.Faults)
		case "seed", "seeds":
			setCount(&t.Seeds)
		default:
			if d, ok := durationUnit(word); ok && !t.Duration.Known && v*float64(d) < math.MaxInt64 {
				t.Duration = Span{D: time.Duration(v * float64(d)), Known: true}
			}
		}
		i = next
	}
	return t
}

func durationUnit(w string) (time.Duration, bool) {
	switch w {
	case "ms", "msec", "millisecond", "milliseconds":
		return time.Millisecond, true
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "m", "min", "mins", "minute", "minutes":
		return time.Minute, true
	case "h", "hr", "hrs", "hour", "hours":
		return time.Hour, true
	case "d", "day", "days":
		return 24 * time.Hour, true
	}
	return 0, false
}

// parseBudget fills a Budget from its verbatim text: the release-tier
// disclosure form (docs/plan-format.md §10) is split into Reason and RevisitWhen;
// any other text is read as a Tier.
func parseBudget(text string, line int) Budget {
	b := Budget{Text: text, Line: line}
	t := strings.TrimSpace(text)
	const np = "not provided"
	if len(t) >= len(np) && strings.EqualFold(t[:len(np)], np) {
		b.NotProvided = true
		rest := strings.TrimSpace(t[len(np):])
		rest = strings.TrimSpace(trimLeadingDash(rest))
		reason, revisit := rest, ""
		if i := indexFold(rest, "revisit when:"); i >= 0 {
			reason, revisit = rest[:i], strings.TrimSpace(rest[i+len("revisit when:"):])
		}
		b.Reason = strings.TrimSuffix(strings.TrimSpace(reason), ".")
		b.RevisitWhen = strings.TrimSuffix(revisit, ".")
		return b
	}
	b.Tier = ParseTier(text)
	return b
}

// trimLeadingDash strips one separator: em dash, en dash, "--" or "-".
func trimLeadingDash(s string) string {
	for _, d := range []string{"—", "–", "--", "-", ":"} {
		if strings.HasPrefix(s, d) {
			return s[len(d):]
		}
	}
	return s
}

func indexFold(s, sub string) int {
	// ASCII-only lower-casing keeps byte offsets identical.
	return strings.Index(asciiLower(s), asciiLower(sub))
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Threshold is one clause of a fairness formula or an SLO: metric,
// comparison and bound ("min_group_throughput >= 190 ops/s", "p99 <= 20ms").
type Threshold struct {
	Metric string  // normalised left side, e.g. "worst_group_p99/aggregate_p99"
	Op     string  // "<=", ">=", "==", "<", ">"
	Value  float64 // the bound
	Unit   string  // text after the number ("ops/s", "ms"), may be empty
	Known  bool    // the clause was present and parsed
}

// Holds reports whether a measured value v satisfies the threshold. An
// unknown threshold holds for every value: it was not declared.
func (t Threshold) Holds(v float64) bool {
	if !t.Known {
		return true
	}
	switch t.Op {
	case "<=":
		return v <= t.Value
	case ">=":
		return v >= t.Value
	case "<":
		return v < t.Value
	case ">":
		return v > t.Value
	default: // "=="
		return v == t.Value
	}
}

// Duration reads a latency bound ("20ms", "1.5 s", "200us"); ok is false
// when the unit is not a time unit.
func (t Threshold) Duration() (time.Duration, bool) {
	if !t.Known {
		return 0, false
	}
	var d time.Duration
	switch strings.ToLower(strings.TrimSpace(t.Unit)) {
	case "ns":
		d = time.Nanosecond
	case "us", "µs", "μs":
		d = time.Microsecond
	case "ms", "msec", "millisecond", "milliseconds":
		d = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		d = time.Second
	default:
		return 0, false
	}
	return time.Duration(t.Value * float64(d)), true
}

// String renders the clause as the plan writes it.
func (t Threshold) String() string {
	s := fmt.Sprintf("%s %s %s", t.Metric, t.Op, strconv.FormatFloat(t.Value, 'g', -1, 64))
	if t.Unit != "" {
		sep := " "
		if _, isTime := t.Duration(); isTime {
			sep = ""
		}
		s += sep + t.Unit
	}
	return s
}

// ErrIncomplete marks a fairness formula that parsed but lacks some of the
// four thresholds docs/plan-format.md §9.5 requires; ParseFairness still returns the
// parsed formula with it, so a one-off check (dstgen check) can use a
// partial formula while the plan linter rejects it.
var ErrIncomplete = errors.New("fairness formula incomplete")

// Fairness is a parsed "Fairness formula" (docs/plan-format.md §9.5): the group
// dimension and the four thresholds of the fairness checker. It is the one
// grammar for fairness formulas: the plan parses it once and the checker
// takes the typed value.
type Fairness struct {
	Group         string    // "tenant", "shard", ...
	WorstP99Ratio Threshold // worst_group_p99 / aggregate_p99 <= T1
	MinThroughput Threshold // min_group_throughput >= T2 (ops/s)
	ErrorRate     Threshold // error_rate_by_group == 0
	RepeatSpread  Threshold // repeat_spread <= T3 (needs repeated runs)
	Other         []Threshold
	Text          string
}

// ParseFairness parses `group=<dimension>; <metric> <op> <value> [unit]; …`.
// Clauses may come in any order; a metric it does not know lands in Other.
// A formula missing one of the four thresholds is returned together with an
// error wrapping ErrIncomplete; any other error means no usable formula.
func ParseFairness(text string) (*Fairness, error) {
	f := &Fairness{Text: text}
	parts := strings.Split(text, ";")
	first := strings.TrimSpace(parts[0])
	k, v, ok := strings.Cut(first, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(k), "group") || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("fairness formula must start with group=<dimension>, got %q", clip(first, 40))
	}
	f.Group = strings.Trim(strings.TrimSpace(v), "`")
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		th, err := parseThreshold(p)
		if err != nil {
			return nil, err
		}
		switch th.Metric {
		case "worst_group_p99/aggregate_p99":
			f.WorstP99Ratio = th
		case "min_group_throughput":
			f.MinThroughput = th
		case "error_rate_by_group":
			f.ErrorRate = th
		case "repeat_spread":
			f.RepeatSpread = th
		default:
			f.Other = append(f.Other, th)
		}
	}
	var missing []string
	for _, m := range []struct {
		t    Threshold
		name string
	}{{f.WorstP99Ratio, "worst_group_p99 / aggregate_p99"}, {f.MinThroughput, "min_group_throughput"},
		{f.ErrorRate, "error_rate_by_group"}, {f.RepeatSpread, "repeat_spread"}} {
		if !m.t.Known {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return f, fmt.Errorf("%w: lacks %s", ErrIncomplete, strings.Join(missing, ", "))
	}
	return f, nil
}

func parseThreshold(p string) (Threshold, error) {
	ops := []struct{ text, op string }{
		{"<=", "<="}, {">=", ">="}, {"==", "=="}, {"≤", "<="}, {"≥", ">="}, {"<", "<"}, {">", ">"}, {"=", "=="},
	}
	for _, o := range ops {
		i := strings.Index(p, o.text)
		if i <= 0 {
			continue
		}
		metric := strings.ReplaceAll(strings.Trim(strings.TrimSpace(p[:i]), "`"), " ", "")
		rhs := strings.TrimSpace(p[i+len(o.text):])
		j := 0
		for j < len(rhs) && (isDigit(rhs[j]) || rhs[j] == '.' || (j == 0 && rhs[j] == '-')) {
			j++
		}
		v, err := strconv.ParseFloat(rhs[:j], 64)
		if err != nil {
			return Threshold{}, fmt.Errorf("fairness clause %q: bound is not a number", clip(p, 40))
		}
		if v < 0 || math.IsInf(v, 0) {
			// A negative bound would make the clause vacuous or impossible.
			return Threshold{}, fmt.Errorf("fairness clause %q: bound must be a non-negative number", clip(p, 40))
		}
		return Threshold{Metric: strings.ToLower(metric), Op: o.op, Value: v, Unit: strings.TrimSpace(rhs[j:]), Known: true}, nil
	}
	return Threshold{}, errors.New("fairness clause " + strconv.Quote(clip(p, 40)) + " has no comparison (<=, >=, ==)")
}

// SLO is the set of SLO thresholds an Oracle (or claim) text states:
// latency percentiles, error rate and throughput floor ("p99 put ≤ 20ms
// overall", "error rate <= 0.1%", "throughput >= 500 ops/s"). The SLO
// checker takes it as it is.
type SLO struct {
	P50, P95, P99 Threshold // latency bounds; Duration() reads them
	ErrorRate     Threshold // fraction of ops that failed or timed out (a "%" unit is already divided by 100)
	Throughput    Threshold // ok ops/s floor
	// OpType restricts the latency bounds to one op type ("put" in
	// "p99 put ≤ 20ms"); "" means every op.
	OpType string
	// Recovery bounds, for every fault window, the time from the fault's
	// injection to the first acknowledged op invoked after it ("the time
	// from the kill to the first acknowledged put issued after it is <=
	// 5s", "recovery <= 5s"); RecoveryOp is that op's kind as the text
	// names it ("put"; "" = any op).
	Recovery   Threshold
	RecoveryOp string
	Text       string
}

// Clauses lists the thresholds stated, in a fixed order.
func (s *SLO) Clauses() []Threshold {
	var out []Threshold
	for _, t := range []Threshold{s.P50, s.P95, s.P99, s.ErrorRate, s.Throughput, s.Recovery} {
		if t.Known {
			out = append(out, t)
		}
	}
	return out
}

var (
	sloLatencyRE = lazyre.New(`(?i)\b(p50|p95|p99)((?:[ \t]+[a-z_]+){0,2})[ \t]*(<=|≤|<|==|=)[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*(ns|us|µs|μs|ms|s)\b`)
	sloErrorRE   = lazyre.New(`(?i)\berror[ _-]?rate[ \t]*(<=|≤|<|==|=)[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*(%?)`)
	sloTputRE    = lazyre.New(`(?i)\bthroughput[ \t]*(>=|≥|>)[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*(ops/s)?`)
	// "recovery <= 5s"; "the time from the kill to the first acknowledged
	// put issued after it is <= 5s"; "time from fault start to first
	// successful put ≤ 3s".
	sloRecoveryRE = lazyre.New(`(?i)\b(?:recovery(?:[ \t]+time)?|time[ \t]+from[ \t]+(?:the[ \t]+)?(?:kill|fault(?:[ \t]+start)?|injection|window[ \t]+start|crash|partition|leader[ \t]+loss)[ \t]+to[ \t]+(?:the[ \t]+)?first[ \t]+(?:acknowledged|acked|successful|ok|answered)(?:[ \t]+([a-z_]+))?[^<>=≤≥;]*?)[ \t]*(?:is[ \t]+)?(<=|≤|<)[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*(ms|s)\b`)
)

// ParseSLO extracts the SLO thresholds stated in text; ok is false when it
// states none. The first mention of each metric wins.
func ParseSLO(text string) (slo *SLO, ok bool) {
	s := &SLO{Text: text}
	norm := func(op string) string {
		switch op {
		case "≤":
			return "<="
		case "≥":
			return ">="
		case "=":
			return "=="
		}
		return op
	}
	for _, m := range sloLatencyRE.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			continue
		}
		th := Threshold{Metric: strings.ToLower(m[1]), Op: norm(m[3]), Value: v, Unit: m[5], Known: true}
		dst := map[string]*Threshold{"p50": &s.P50, "p95": &s.P95, "p99": &s.P99}[th.Metric]
		if dst.Known {
			continue
		}
		*dst = th
		if w := strings.Fields(strings.ToLower(m[2])); len(w) > 0 && s.OpType == "" && w[0] != "latency" && w[0] != "overall" {
			s.OpType = w[0]
		}
	}
	if m := sloErrorRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			if m[3] == "%" {
				v /= 100
			}
			s.ErrorRate = Threshold{Metric: "error_rate", Op: norm(m[1]), Value: v, Known: true}
		}
	}
	if m := sloTputRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			s.Throughput = Threshold{Metric: "throughput", Op: norm(m[1]), Value: v, Unit: "ops/s", Known: true}
		}
	}
	if m := sloRecoveryRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.ParseFloat(m[3], 64); err == nil {
			s.Recovery = Threshold{Metric: "recovery", Op: norm(m[2]), Value: v, Unit: m[4], Known: true}
			if w := strings.ToLower(m[1]); w != "op" && w != "operation" && w != "request" {
				s.RecoveryOp = w
			}
		}
	}
	if len(s.Clauses()) == 0 {
		return nil, false
	}
	return s, true
}

// clip shortens s for error messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
