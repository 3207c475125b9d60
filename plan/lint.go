package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/dstgen/dstgen/internal/fileline"
)

// Severities of a Problem.
const (
	SevError   = "error"
	SevWarning = "warning"
)

// Problem is one lint finding, positioned in the plan file.
type Problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"` // "error" | "warning"
	Rule     string `json:"rule"`
	Message  string `json:"message"`
}

// Err is the problem as the shared file:line error; a warning's reason
// starts "warning: ".
func (pr Problem) Err() *fileline.Error {
	f := pr.File
	if f == "" {
		f = "<plan>"
	}
	msg := pr.Message
	if pr.Severity == SevWarning {
		msg = "warning: " + msg
	}
	return &fileline.Error{File: f, Line: pr.Line, Err: errors.New(msg)}
}

// String formats the problem as "file:line: message", warnings as
// "file:line: warning: message" — the form editors and CI annotate. Unlike
// Err().Error() it keeps a line 0 ("file:0:"), so lint output has one shape.
func (pr Problem) String() string {
	e := pr.Err()
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

// Errors counts the error-severity problems.
func Errors(ps []Problem) int {
	n := 0
	for _, p := range ps {
		if p.Severity == SevError {
			n++
		}
	}
	return n
}

// linter accumulates problems for one plan. Its id indexes keep Lint
// linear in the plan size even for hostile inputs with many ids.
type linter struct {
	p      *Plan
	out    []Problem
	claims map[string]*Claim
	hyps   map[string]*Hypothesis
	scens  map[string]*Scenario
	arms   map[string]bool
}

func newLinter(p *Plan) *linter {
	l := &linter{p: p, claims: map[string]*Claim{}, hyps: map[string]*Hypothesis{},
		scens: map[string]*Scenario{}, arms: map[string]bool{}}
	for i := range p.Claims {
		if _, dup := l.claims[p.Claims[i].ID]; !dup {
			l.claims[p.Claims[i].ID] = &p.Claims[i]
		}
	}
	for i := range p.Hypotheses {
		if _, dup := l.hyps[p.Hypotheses[i].ID]; !dup {
			l.hyps[p.Hypotheses[i].ID] = &p.Hypotheses[i]
		}
	}
	for i := range p.Scenarios {
		s := &p.Scenarios[i]
		if _, dup := l.scens[s.ID]; !dup {
			l.scens[s.ID] = s
		}
		for _, a := range s.Arms {
			l.arms[a.ID] = true
		}
	}
	return l
}

func (l *linter) claim(id string) *Claim    { return l.claims[id] }
func (l *linter) hyp(id string) *Hypothesis { return l.hyps[id] }
func (l *linter) scen(id string) *Scenario  { return l.scens[scenarioOf(id)] }
func isBoundary(cat string) bool            { return cat == CatBoundary }
func isFairness(cat string) bool            { return cat == CatFairness }

// gated reports whether any claim the scenario falsifies has a category
// the gate accepts.
func (l *linter) gated(s *Scenario, gate func(string) bool) bool {
	for _, id := range s.Falsifies {
		if c := l.claims[id]; c != nil && gate(c.Category) {
			return true
		}
	}
	return false
}

func (l *linter) add(line int, sev, rule, format string, a ...any) {
	l.out = append(l.out, Problem{File: l.p.Path, Line: line, Severity: sev, Rule: rule, Message: fmt.Sprintf(format, a...)})
}

func (l *linter) errf(line int, rule, format string, a ...any) {
	l.add(line, SevError, rule, format, a...)
}

func (l *linter) warnf(line int, rule, format string, a ...any) {
	l.add(line, SevWarning, rule, format, a...)
}

// Lint checks a parsed plan against the rules of docs/plan-format.md §13 and the
// dstgen additions. Errors make the plan not executable (generation and
// runs must refuse it); warnings are advice. Problems are sorted by line.
func Lint(p *Plan) []Problem {
	l := newLinter(p)
	l.out = append(l.out, p.notes...)
	l.header()
	l.sections()
	l.lintClaims()
	l.hypotheses()
	l.techniques()
	l.envReqs()
	l.scenarios()
	l.crossRefs()
	l.form()
	l.adequacy()
	l.confidence()
	l.out = onlyTODOs(l.out)
	sort.SliceStable(l.out, func(i, j int) bool { return l.out[i].Line < l.out[j].Line })
	return l.out
}

// RuleTODO is the rule id of a TODO(...) marker left in a plan.
const RuleTODO = "todo-left"

// todoNotes reports every TODO(...) marker outside fenced code and inline
// code spans, one error per marker: `dstgen plan new` writes one wherever a
// person must decide, and a scaffold is not a plan until each is resolved
// (a skeleton's own "// TODO" regions live in a fence and are exempt).
func todoNotes(name string, lines []srcLine) []Problem {
	var out []Problem
	for _, l := range lines {
		if l.fence != fenceNone || !strings.Contains(l.text, "TODO(") {
			continue
		}
		for _, m := range todoMarkers(l.text) {
			out = append(out, Problem{File: name, Line: l.n, Severity: SevError, Rule: RuleTODO,
				Message: fmt.Sprintf("%s is left for a person to decide; replace it before the plan is used", todoName(m))})
		}
	}
	return out
}

// todoMarkers returns the TODO(...) markers of one line, outside inline
// code spans, each up to its closing parenthesis (or the line's end).
func todoMarkers(text string) []string {
	var out []string
	inCode := false
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(text[i:], "TODO(") {
			continue
		}
		end := strings.IndexByte(text[i:], ')')
		if end < 0 {
			end = len(text) - i - 1
		}
		out = append(out, text[i:i+end+1])
		i += end
	}
	return out
}

// todoName is how a message names a marker: "TODO(<id>)" for the
// "TODO(<id>: hint)" form, else the marker cut to 40 runes.
func todoName(m string) string {
	if i := strings.IndexByte(m, ':'); i > len("TODO(") && !strings.ContainsAny(m[:i], " \t") {
		return m[:i] + ")"
	}
	if r := []rune(m); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return m
}

// onlyTODOs keeps only the TODO problems of a line that has one: the other
// rules' findings there (an empty budget, a weak oracle) are the TODO said
// again, and they come back if the value that replaces it is still wrong.
func onlyTODOs(ps []Problem) []Problem {
	todo := map[int]bool{}
	for _, p := range ps {
		if p.Rule == RuleTODO {
			todo[p.Line] = true
		}
	}
	if len(todo) == 0 {
		return ps
	}
	out := ps[:0]
	for _, p := range ps {
		if p.Rule == RuleTODO || !todo[p.Line] {
			out = append(out, p)
		}
	}
	return out
}

func (l *linter) header() {
	p := l.p
	if p.Line == 0 || p.Slug == "" {
		l.errf(1, "header-missing", `missing title "# Test Plan: <slug>"`)
	} else if strings.ContainsAny(p.Slug, " \t/") {
		l.warnf(p.Line, "header-value", "slug %q should be kebab-case (it names the session directory)", p.Slug)
	}
	line := p.Line
	if line == 0 {
		line = 1
	}
	for _, h := range []string{HdrDate, HdrMode, HdrSUT, HdrChange, HdrAuthor, HdrStatus} {
		if _, ok := p.Headers[h]; !ok {
			l.errf(line, "header-missing", "header line **%s:** is missing", h)
		}
	}
	if n, ok := p.Headers[HdrMode]; ok && p.Mode != "change-scoped" && p.Mode != "project-wide" {
		l.errf(n, "header-value", "Plan mode %q is not change-scoped or project-wide", p.Mode)
	}
	if n, ok := p.Headers[HdrStatus]; ok && p.Status != "draft" && p.Status != "reviewed" && p.Status != "executed" {
		l.warnf(n, "header-value", "Status %q is not draft, reviewed or executed", p.Status)
	}
	if n, ok := p.Headers[HdrDate]; ok && !isDate(p.Date) {
		l.warnf(n, "header-value", "Date %q is not YYYY-MM-DD", p.Date)
	}
	if n, ok := p.Headers[HdrLeaderQuery]; ok {
		l.wiring(n, "header "+HdrLeaderQuery, p.LeaderQuery)
	}
	if n, ok := p.Headers[HdrQuiesce]; ok {
		l.wiring(n, "header "+HdrQuiesce, p.Quiesce)
	}
}

func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	return allDigits(s[:4]) && allDigits(s[5:7]) && allDigits(s[8:])
}

var sectionNames = map[string]string{
	"0": "Architectural summary", "1": "Scope", "1b": "Claims under test", "1c": "Missing claims discovered",
	"3": "Existing test inventory", "4": "Failure-mode hypotheses", "5": "Coverage matrix",
	"6": "Technique selection", "6b": "Environment requirements", "7": "Scenarios",
	"7b": "Coverage adequacy argument", "7c": "Residual uncertainty", "7d": "Confidence statement",
	"8": "What this plan does NOT cover", "9": "Open questions / followups",
}

func (l *linter) sections() {
	p := l.p
	req := []string{"0", "1", "1b", "1c", "4", "6", "6b", "7", "7b", "7c", "7d", "8", "9"}
	if p.Mode == "project-wide" {
		req = append(req, "3", "5")
	}
	for _, tok := range req {
		if _, ok := p.Sections[tok]; !ok {
			l.errf(insertionLine(p, tok), "section-missing", "required section \"## %s. %s\" is missing", tok, sectionNames[tok])
		}
	}
	if n, ok := p.Sections["1c"]; ok && len(p.Missing) == 0 && strings.TrimSpace(p.MissingText) == "" {
		l.warnf(n, "missing-claims-empty", "§1c has no rows and no sentence saying docs and code appear aligned")
	}
	if n, ok := p.Sections["7c"]; ok && len(p.Residual) == 0 && strings.TrimSpace(p.ResidualText) == "" {
		l.warnf(n, "residual-empty", "§7c is empty; say explicitly that nothing is left uncovered")
	}
	if n, ok := p.Sections["7"]; ok && len(p.Scenarios) == 0 {
		l.errf(n, "scenario-none", "§7 has no \"### Scenario S<n>: <name>\" headings")
	}
}

// sectionOrder is the canonical order of plan sections.
var sectionOrder = []string{"0", "1", "1b", "1c", "2", "3", "4", "5", "6", "6b", "7", "7b", "7c", "7d", "8", "9"}

// insertionLine is where a missing section belongs: the heading of the next
// section that is present, else the last section heading (or the title).
func insertionLine(p *Plan, tok string) int {
	after := false
	for _, t := range sectionOrder {
		if t == tok {
			after = true
			continue
		}
		if n, ok := p.Sections[t]; ok && after {
			return n
		}
	}
	n := p.Line
	for _, v := range p.Sections {
		n = max(n, v)
	}
	return max(n, 1)
}

// categoryHints map common mis-categorisations to the right enum value.
var categoryHints = map[string]string{
	"tenancy": CatBoundary, "tenant-isolation": CatBoundary, "authz": CatBoundary, "authorization": CatBoundary,
	"namespace": CatBoundary, "routing": CatBoundary, "security": CatBoundary, "consistency": CatSafety,
	"linearizability": CatSafety, "correctness": CatSafety, "performance": CatPerfSLO, "latency": CatPerfSLO,
	"slo": CatPerfSLO, "availability": CatLiveness, "upgrade": CatOperational, "ops": CatOperational,
}

func (l *linter) lintClaims() {
	p := l.p
	seen := map[string]int{}
	for _, c := range p.Claims {
		if !isID(c.ID, 'C') {
			l.errf(c.Line, "claim-id", "claim id %q is not C<n>", c.ID)
			continue
		}
		if prev, dup := seen[c.ID]; dup {
			l.errf(c.Line, "duplicate-id", "claim %s is defined twice (first at line %d)", c.ID, prev)
			continue
		}
		seen[c.ID] = c.Line
		valid := false
		for _, k := range Categories {
			if c.Category == k {
				valid = true
			}
		}
		if !valid {
			msg := fmt.Sprintf("claim %s: unknown category %q (want one of %s)", c.ID, c.Category, strings.Join(Categories, ", "))
			if h, ok := categoryHints[strings.ToLower(c.Category)]; ok {
				msg = fmt.Sprintf("claim %s: unknown category %q; did you mean %q?", c.ID, c.Category, h)
			}
			l.errf(c.Line, "unknown-category", "%s", msg)
		}
		if c.Inferred != "no" && c.Inferred != "yes" && c.Inferred != "partial" {
			l.warnf(c.Line, "claim-inferred", "claim %s: Inferred? should start with no, yes or partial", c.ID)
		}
		if strings.TrimSpace(c.Text) == "" {
			l.errf(c.Line, "claim-empty", "claim %s has no claim text", c.ID)
		}
	}
	seenM := map[string]int{}
	for _, m := range p.Missing {
		if !isID(m.ID, 'M') {
			l.errf(m.Line, "claim-id", "missing-claim id %q is not M<n>", m.ID)
			continue
		}
		if prev, dup := seenM[m.ID]; dup {
			l.errf(m.Line, "duplicate-id", "missing claim %s is defined twice (first at line %d)", m.ID, prev)
		}
		seenM[m.ID] = m.Line
	}
}

func (l *linter) hasClaimOrMissing(id string) bool {
	if l.claim(id) != nil {
		return true
	}
	for _, m := range l.p.Missing {
		if m.ID == id {
			return true
		}
	}
	return false
}

func (l *linter) hypotheses() {
	p := l.p
	seen := map[string]int{}
	closed := map[string]bool{}
	for _, s := range p.Scenarios {
		for _, h := range s.Closes {
			closed[h] = true
		}
	}
	for _, h := range p.Hypotheses {
		if prev, dup := seen[h.ID]; dup {
			l.errf(h.Line, "duplicate-id", "hypothesis %s is defined twice (first at line %d)", h.ID, prev)
			continue
		}
		seen[h.ID] = h.Line
		if len(h.CouldFalsify) == 0 {
			l.errf(h.Line, "untethered-hypothesis", "hypothesis %s has no \"Could falsify\" claim ids; drop it or turn it into a §1c row", h.ID)
		}
		for _, id := range h.CouldFalsify {
			if !l.hasClaimOrMissing(id) {
				l.errf(h.Line, "unknown-claim", "hypothesis %s names unknown claim %s", h.ID, id)
			}
		}
		if !closed[h.ID] {
			l.warnf(h.Line, "hypothesis-unclosed", "hypothesis %s is not closed by any scenario", h.ID)
		}
	}
}

func (l *linter) techniques() {
	p := l.p
	n, ok := p.Sections["6"]
	if !ok {
		return
	}
	switch len(p.Techniques) {
	case 0:
		l.warnf(n, "technique-count", "§6 selects no technique")
	case 1:
		l.warnf(n, "technique-count", "§6 selects only one technique (a smell: 2–4 for a change, 5–7 project-wide)")
	}
	for _, t := range p.Techniques {
		for _, h := range t.Hypotheses {
			if l.hyp(h) == nil {
				l.errf(t.Line, "dangling-id", "technique %s addresses unknown hypothesis %s", t.Name, h)
			}
		}
	}
}

func (l *linter) envReqs() {
	for _, e := range l.p.EnvReqs {
		if len(e.UsedBy) == 0 {
			l.warnf(e.Line, "envreq-unused", "§6b requirement %q names no scenario in \"Used by scenarios\"", e.Requirement)
		}
		for _, id := range e.UsedBy {
			l.scenarioRef(e.Line, id, fmt.Sprintf("§6b requirement %q", e.Requirement))
		}
	}
}

// scenarioRef reports a dangling scenario or arm id.
func (l *linter) scenarioRef(line int, id, where string) {
	s := l.scen(id)
	if s == nil {
		l.errf(line, "dangling-id", "%s names unknown scenario %s", where, id)
		return
	}
	if strings.Contains(id, "/") && !l.arms[id] {
		l.errf(line, "dangling-id", "%s names unknown arm %s", where, id)
	}
}

var (
	coverageVerdicts = map[string]bool{"covered": true, "partial": true, "not covered": true}
	gapKinds         = map[string]bool{"no test": true, "shallow test": true, "oracle too weak": true,
		"no fault-injection variant": true, "no scale variant": true, "—": true, "-": true, "": true}
)

// form checks the shape rules that are advice, not gates: §5 enums, the
// §0 length limit and the §9 "<question> — <owner>, <by when>" form.
func (l *linter) form() {
	p := l.p
	for _, r := range p.Coverage {
		if v := strings.ToLower(strings.Trim(r.Verdict, "*_` ")); !coverageVerdicts[v] {
			l.warnf(r.Line, "coverage-value", "§5 Verdict %q is not covered, partial or not covered", r.Verdict)
		}
		if g := strings.ToLower(strings.Trim(r.GapKind, "*_` ")); !gapKinds[g] {
			l.warnf(r.Line, "coverage-value", "§5 Gap kind %q is not one of: no test, shallow test, oracle too weak, no fault-injection variant, no scale variant, —", r.GapKind)
		}
	}
	if n := strings.Count(p.Summary, "\n") + 1; p.Summary != "" && n > 30 {
		l.warnf(p.Sections["0"], "summary-long", "§0 is %d lines; keep the architectural summary to 30", n)
	}
	for i, q := range p.OpenQuestions {
		if !strings.Contains(q, " — ") && !strings.Contains(q, " – ") && !strings.Contains(q, " - ") && !strings.Contains(q, " -- ") || !strings.Contains(q, ",") {
			l.warnf(p.OpenQLines[i], "open-question-form", "§9 item should read \"<question> — <owner>, <by when>\"")
		}
	}
}

func (l *linter) crossRefs() {
	p := l.p
	for _, r := range p.Coverage {
		for _, id := range ids(r.Claim, 'C', false) {
			if l.claim(id) == nil {
				l.errf(r.Line, "dangling-id", "§5 row names unknown claim %s", id)
			}
		}
		for _, id := range ids(r.Hypothesis, 'H', false) {
			if l.hyp(id) == nil {
				l.errf(r.Line, "dangling-id", "§5 row names unknown hypothesis %s", id)
			}
		}
		for _, id := range ids(r.Recommended, 'S', true) {
			l.scenarioRef(r.Line, id, "§5 row")
		}
	}
	for _, r := range p.Adequacy {
		for _, id := range r.ClaimIDs {
			if l.claim(id) == nil {
				l.errf(r.Line, "dangling-id", "§7b row names unknown claim %s", id)
			}
		}
		for _, id := range r.ScenarioIDs {
			l.scenarioRef(r.Line, id, "§7b row")
		}
	}
	for _, r := range p.Residual {
		for _, id := range r.ClaimIDs {
			if l.claim(id) == nil {
				l.errf(r.Line, "dangling-id", "§7c row names unknown claim %s", id)
			}
		}
	}
}

// adequacy: every claim is argued in §7b, disclosed in §7c, or at least
// falsified by a scenario (then the scenario is its argument; the §14
// fixture relies on this for C2, C3, C4, C6, C8).
func (l *linter) adequacy() {
	p := l.p
	argued := map[string]bool{}
	for _, r := range p.Adequacy {
		for _, id := range r.ClaimIDs {
			argued[id] = true
		}
	}
	for _, r := range p.Residual {
		for _, id := range r.ClaimIDs {
			argued[id] = true
		}
	}
	for _, s := range p.Scenarios {
		for _, id := range s.Falsifies {
			argued[id] = true
		}
	}
	for _, c := range p.Claims {
		if isID(c.ID, 'C') && !argued[c.ID] {
			l.warnf(c.Line, "claim-unargued", "claim %s appears in no scenario, no §7b row and no §7c row", c.ID)
		}
	}
}

// absolutes are §7d phrasings the plan format asks to flag (docs/plan-format.md §12).
var absolutes = []string{"cannot", "can not", "can't", "never happens", "never happen", "guarantee", "impossible"}

func (l *linter) confidence() {
	p := l.p
	if p.Confidence == "" {
		if n, ok := p.Sections["7d"]; ok {
			l.errf(n, "confidence-empty", "§7d has no confidence statement")
		}
		return
	}
	for i, text := range strings.Split(p.Confidence, "\n") {
		low := strings.ToLower(text)
		for _, a := range absolutes {
			if j := strings.Index(low, a); j >= 0 && wordStart(low, j) {
				l.warnf(p.ConfLine+i, "absolute-phrasing", "§7d says %q; prefer \"we have not observed …\"", strings.TrimSpace(text[j:min(len(text), j+len(a))]))
				break
			}
		}
	}
}

func wordStart(s string, i int) bool {
	return i == 0 || !isWordByte(s[i-1])
}

// weakOracles are oracle phrasings that only inspect logs or eyeball health
// (docs/plan-format.md §1: a "logs look fine" oracle must be rejected, not run).
var weakOracles = []string{
	"look fine", "looks fine", "look good", "looks good", "look ok", "looks ok", "look okay", "looks okay",
	"look normal", "looks normal", "seems fine", "seem fine", "no errors in", "no error in", "no errors",
	"logs are clean", "clean logs", "log inspection", "inspect the log", "inspect log", "check the log",
	"check log", "grep the log", "grep log", "health check ok", "health check passes", "health check is ok",
	"healthcheck ok", "health checks pass", "health check green", "healthy", "manual inspection",
	"manually inspect", "eyeball", "works fine", "works as expected", "no exceptions", "no crashes",
}

// strongOracles mark a machine-checkable property; an oracle mentioning one
// is not "only" log inspection.
var strongOracles = []string{
	"linearizab", "serializab", "porcupine", "elle", "knossos", "checker", "invariant", "<=", ">=", "==",
	"≤", "≥", "p99", "p95", "p999", "threshold", "exactly-once", "exactly once", "no-lost-ack", "lost ack",
	"formula", "denied", "monotonic", "every acked", "final state", "final-state", "count", "within",
}

func weakOracle(o string) bool {
	low := strings.ToLower(o)
	weak := false
	for _, w := range weakOracles {
		if strings.Contains(low, w) {
			weak = true
			break
		}
	}
	if !weak {
		return false
	}
	for _, s := range strongOracles {
		if strings.Contains(low, s) {
			return false
		}
	}
	return true
}

// landingSignals name an observable signal (nemesis.md: counters, log
// markers, metric deltas, timestamps…). They match the start of a word, so
// "logs" and "counters" count but a nemesis id like "leader-isolation" does
// not.
var landingSignals = []string{
	"counter", "metric", "rate", "delta", "log", "marker", "timestamp", "status", "gauge", "histogram",
	"increment", "rise", "rising", "jump", "trace", "probe", "latenc", "timeout", "observ", "dump",
	"dmesg", "journal", "pid", "uptime", "packet", "statistic", "heartbeat", "event", "gap", "errno",
}

// landingWords must match a whole word ("term" but not "terminate").
var landingWords = map[string]bool{"term": true, "epoch": true, "rpc": true, "exit": true, "restart": true}

func hasLandingSignal(v string) bool {
	if strings.Contains(strings.ToLower(v), "_total") {
		return true
	}
	for _, w := range words(v) {
		if landingWords[w] {
			return true
		}
		for _, s := range landingSignals {
			if strings.HasPrefix(w, s) {
				return true
			}
		}
	}
	return false
}

// injectorOnly are phrasings that cite the injector's own success, which
// nemesis.md says is not landing evidence.
var injectorOnly = []string{"reported success", "returned success", "returns success", "exit code 0", "exited 0",
	"exit status 0", "returned 0", "command succeeded", "ran successfully", "succeeded without error"}

func nemesisProblem(v string) string {
	low := strings.ToLower(v)
	for _, bad := range injectorOnly {
		if strings.Contains(low, bad) {
			return fmt.Sprintf("cites %q, which is not landing evidence; name the observable signal (counter delta, log marker, metric)", bad)
		}
	}
	if hasLandingSignal(v) {
		return ""
	}
	return "names no observable signal proving the fault landed (counter delta, RPC-timeout rate jump, log marker, partition-status metric)"
}

func isTBD(s string) bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s), "`*_.?!"))
	switch t {
	case "", "tbd", "todo", "tba", "n/a", "na", "none", "-", "—", "?", "unknown", "later":
		return true
	}
	return strings.HasPrefix(t, "tbd") || strings.HasPrefix(t, "todo")
}

func (l *linter) scenarios() {
	p := l.p
	seen := map[string]int{}
	armSeen := map[string]int{}
	techs := map[string]bool{}
	for _, t := range p.Techniques {
		techs[strings.ToLower(t.Name)] = true
	}
	for i := range p.Scenarios {
		s := &p.Scenarios[i]
		if s.ID != "" {
			if prev, dup := seen[s.ID]; dup {
				l.errf(s.Line, "duplicate-id", "scenario %s is defined twice (first at line %d)", s.ID, prev)
			}
			seen[s.ID] = s.Line
		}
		for _, a := range s.Arms {
			if prev, dup := armSeen[a.ID]; dup {
				l.errf(a.Line, "duplicate-id", "arm %s is defined twice (first at line %d)", a.ID, prev)
			}
			armSeen[a.ID] = a.Line
			if scenarioOf(a.ID) != s.ID {
				l.errf(a.Line, "dangling-id", "arm %s is declared under scenario %s", a.ID, s.ID)
			}
		}
		l.scenario(s, techs)
	}
}

func (l *linter) scenario(s *Scenario, techs map[string]bool) {
	id := s.ID
	if id == "" {
		id = "(no id)"
	}
	fieldLine := func(label string) int {
		if n, ok := s.Fields[label]; ok {
			return n
		}
		return s.Line
	}
	// Required fields (§9.2). Oracle, exit criteria and the three budgets
	// get their own rules: the execute skill must halt on them.
	if strings.TrimSpace(s.Oracle) == "" {
		l.errf(fieldLine(FieldOracle), "oracle-missing", "scenario %s has no Oracle; the plan is not executable (do not improvise one)", id)
	} else if weakOracle(s.Oracle) {
		l.errf(fieldLine(FieldOracle), "oracle-weak", "scenario %s: Oracle %q is only log inspection / \"looks fine\"; state a machine-checkable property or SLO threshold", id, clip(s.Oracle, 60))
	}
	if strings.TrimSpace(s.ExitCriteria) == "" {
		l.errf(fieldLine(FieldExit), "exit-criteria-missing", "scenario %s has no Exit criteria; the plan is not executable", id)
	}
	for _, b := range []struct {
		label string
		v     Budget
	}{{FieldSmoke, s.Smoke}, {FieldHardening, s.Hardening}, {FieldRelease, s.Release}} {
		if _, ok := s.Fields[b.label]; !ok {
			l.errf(s.Line, "budget-missing", "scenario %s has no %s; every scenario needs smoke, hardening and release tiers", id, b.label)
		} else if b.label != FieldRelease && isTBD(b.v.Text) {
			l.errf(b.v.Line, "budget-missing", "scenario %s: %s is empty or TBD", id, b.label)
		}
	}
	l.release(s, id)
	l.tiers(s, id)
	for _, f := range []string{FieldFalsifies, FieldCloses, FieldTechnique, FieldWorkload, FieldFaults, FieldObservability} {
		var empty bool
		switch f {
		case FieldFalsifies:
			empty = len(s.Falsifies) == 0
		case FieldCloses:
			_, ok := s.Fields[FieldCloses]
			empty = !ok
		default:
			empty = strings.TrimSpace(*s.field(f)) == ""
		}
		if empty {
			msg := "scenario %s: required field %q is missing or empty"
			if f == FieldFalsifies {
				msg = "scenario %s: required field %q lists no claim ids"
			}
			l.errf(fieldLine(f), "field-missing", msg, id, f)
		}
	}
	known := true
	for _, c := range s.Falsifies {
		if l.claim(c) == nil {
			known = false
			if strings.HasPrefix(c, "M") {
				l.errf(fieldLine(FieldFalsifies), "unknown-claim", "scenario %s falsifies %s, a §1c missing claim; promote it to a §1b claim first", id, c)
			} else {
				l.errf(fieldLine(FieldFalsifies), "unknown-claim", "scenario %s names unknown claim %s", id, c)
			}
		}
	}
	for _, h := range s.Closes {
		if l.hyp(h) == nil {
			l.errf(fieldLine(FieldCloses), "dangling-id", "scenario %s closes unknown hypothesis %s", id, h)
		}
	}
	if t := strings.ToLower(strings.Trim(s.Technique, "`*_ ")); t != "" && len(techs) > 0 && !techs[t] {
		match := false
		for name := range techs {
			if strings.Contains(t, name) {
				match = true
			}
		}
		if !match {
			l.warnf(fieldLine(FieldTechnique), "technique-unselected", "scenario %s: Technique %q is not one of the §6 techniques", id, s.Technique)
		}
	}
	if known {
		l.gates(s, id)
	}
	l.skeleton(s, id)
	l.name(s, id)
	for _, f := range []string{FieldDriverCommand, FieldFinalState, FieldLeaderQuery, FieldQuiesce} {
		if n, ok := s.Fields[f]; ok {
			l.wiring(n, "scenario "+id+": "+f, *s.field(f))
		}
	}
}

// wiring lints one run-wiring field (§9.6): init copies its backticked
// command into scenarios.yml, so a field without one would be dropped
// without a word, and a command for this machine cannot run on the
// client hosts.
func (l *linter) wiring(line int, what, value string) {
	cmd, ok := Command(value)
	if !ok {
		l.errf(line, "wiring-no-command", "%s holds no backticked command; write the command line in backticks, e.g. `sh scripts/leader.sh`", what)
		return
	}
	if why, local := LocalCommand(cmd); local {
		l.warnf(line, "wiring-local", "%s: `%s` runs on the client hosts, but %s; name the driver and let DSTGEN_SUT_HOSTS give the endpoints", what, clip(cmd, 60), why)
	}
}

func (l *linter) release(s *Scenario, id string) {
	r := s.Release
	if _, ok := s.Fields[FieldRelease]; !ok {
		return
	}
	if r.NotProvided {
		if r.Reason == "" || r.RevisitWhen == "" {
			l.errf(r.Line, "release-disclosure", "scenario %s: write the disclosure as \"not provided — <reason>. Revisit when: <condition>.\"", id)
		}
		return
	}
	if isTBD(r.Text) {
		l.errf(r.Line, "release-empty", "scenario %s: Release budget is empty or TBD; give a tier or \"not provided — <reason>. Revisit when: <condition>.\"", id)
	}
}

func (l *linter) tiers(s *Scenario, id string) {
	for _, b := range []struct {
		label string
		v     Budget
	}{{FieldSmoke, s.Smoke}, {FieldHardening, s.Hardening}, {FieldRelease, s.Release}} {
		if b.v.Line == 0 || b.v.NotProvided || isTBD(b.v.Text) {
			continue
		}
		if !b.v.Tier.Parsed() {
			l.warnf(b.v.Line, "tier-unparsed", "scenario %s: cannot read nodes / duration / faults / seeds from %s %q", id, b.label, clip(b.v.Text, 50))
		}
	}
	if s.Smoke.Tier.Parsed() && s.Hardening.Tier.Parsed() {
		below, above := s.Hardening.Tier.Weaker(s.Smoke.Tier)
		switch {
		case len(below) > 0:
			l.warnf(s.Hardening.Line, "tier-not-stronger", "scenario %s: Hardening budget is weaker than smoke on %s", id, strings.Join(below, ", "))
		case !above:
			l.warnf(s.Hardening.Line, "tier-not-stronger", "scenario %s: Hardening budget is not stronger than smoke on any dimension", id)
		}
	}
}

func (l *linter) gates(s *Scenario, id string) {
	serious, surface := l.gated(s, GatedModel), l.gated(s, GatedSurface)
	switch {
	case serious && s.M == nil && s.MNotApplicable:
		l.errf(s.MLine, "model-sentinel-serious", "scenario %s falsifies a gated-model claim (%s) but writes the §7.M sentinel instead of a §7.M block", id, l.gatedList(s, GatedModel))
	case serious && s.M == nil && len(s.Arms) == 0:
		l.errf(s.Line, "model-missing", "scenario %s falsifies a gated-model claim (%s) and has no §7.M block", id, l.gatedList(s, GatedModel))
	case serious && s.M != nil:
		l.modelFields(s.M, id)
		if s.MNotApplicable {
			l.errf(s.MLine, "model-sentinel-serious", "scenario %s has both a §7.M block and the not-applicable sentinel", id)
		}
	case !serious && s.M != nil:
		l.errf(s.M.Line, "model-not-gated", "scenario %s has a §7.M block but falsifies no gated-model claim; write the sentinel %q instead of inventing a model", id, Sentinel)
	case !serious && !s.MNotApplicable && len(s.Falsifies) > 0:
		l.warnf(s.Line, "sentinel-missing", "scenario %s: write the line %q", id, Sentinel)
	}
	if serious {
		for _, a := range s.Arms {
			switch {
			case a.M != nil:
				l.modelFields(a.M, a.ID)
			case s.M == nil:
				l.errf(a.Line, "model-missing", "arm %s of serious scenario %s has no §7.M block (\"#### §7.M — %s\")", a.ID, id, a.ID)
			case surface:
				l.errf(a.Line, "model-missing", "arm %s: a scenario that is both serious and surface-gated needs a §7.M block per arm (\"#### §7.M — %s\")", a.ID, a.ID)
			}
		}
	}
	for _, mb := range s.armModels {
		l.errf(mb.Line, "dangling-id", "§7.M block names arm %s, which scenario %s does not declare", mb.Arm, id)
	}
	if surface {
		if s.S == nil {
			l.errf(s.Line, "surface-missing", "scenario %s falsifies a boundary/fairness claim (%s) and has no §7.M.S block", id, l.gatedList(s, GatedSurface))
		} else {
			l.surfaceFields(s, id)
		}
	}
}

func (l *linter) gatedList(s *Scenario, gate func(string) bool) string {
	var out []string
	for _, c := range s.Falsifies {
		if cl := l.claim(c); cl != nil && gate(cl.Category) {
			out = append(out, c+" "+cl.Category)
		}
	}
	return strings.Join(out, ", ")
}

func (l *linter) modelFields(mb *ModelBlock, owner string) {
	for _, f := range ModelFields() {
		if strings.TrimSpace(mb.Value(f)) == "" {
			line := mb.Line
			if n, ok := mb.Fields[f]; ok {
				line = n
			}
			l.errf(line, "model-field-empty", "%s: §7.M field %q is missing or empty", owner, f)
		}
	}
	if v := strings.TrimSpace(mb.Nemesis); v != "" {
		if msg := nemesisProblem(v); msg != "" {
			l.errf(mb.Fields[FieldNemesis], "nemesis-evidence", "%s: Nemesis + landing evidence %s", owner, msg)
		}
	}
}

func (l *linter) surfaceFields(s *Scenario, id string) {
	sb := s.S
	for _, f := range SurfaceFields() {
		v := strings.TrimSpace(sb.Value(f))
		if f == FieldArms && len(s.Arms) > 0 {
			v = "arms"
		}
		if v == "" {
			line := sb.Line
			if n, ok := sb.Fields[f]; ok {
				line = n
			}
			l.errf(line, "surface-field-empty", "scenario %s: §7.M.S field %q is missing or empty", id, f)
		}
	}
	for _, a := range s.Arms {
		switch {
		case strings.TrimSpace(a.Oracle) == "":
			l.warnf(a.Line, "arm-oracle-missing", "arm %s states no oracle (\"— surface: …; oracle: …\"); each arm earns its own verdict", a.ID)
		case weakOracle(a.Oracle):
			l.errf(a.Line, "oracle-weak", "arm %s: oracle %q is only log inspection / \"looks fine\"", a.ID, clip(a.Oracle, 60))
		}
	}
	if l.gated(s, isBoundary) {
		l.negativeControls(s, id)
	}
	if l.gated(s, isFairness) && strings.TrimSpace(sb.FairnessFormula) == "" {
		l.errf(sb.Line, "fairness-formula", "scenario %s falsifies a fairness claim; §7.M.S needs \"Fairness formula: group=<dimension>; …\"", id)
	}
}

// leakChannels are where a boundary leak shows besides the response itself;
// negative controls that name none check denial but not observability.
var leakChannels = []string{"log", "metric", "trace", "cache", "timing", "audit", "_total", "label", "export"}

// negativeControls warns on the anti-patterns of docs/plan-format.md §9.5 for a
// boundary scenario's §7.M.S.
func (l *linter) negativeControls(s *Scenario, id string) {
	sb := s.S
	neg := strings.ToLower(sb.Negative)
	if neg != "" {
		if strings.Contains(neg, "no error") {
			l.warnf(sb.Fields[FieldNegative], "negative-controls", "scenario %s: negative controls treat \"no errors\" as \"no leak\"", id)
		}
		seen := false
		for _, c := range leakChannels {
			if strings.Contains(neg, c) {
				seen = true
				break
			}
		}
		if !seen {
			l.warnf(sb.Fields[FieldNegative], "negative-controls", "scenario %s: negative controls check denial but not that nothing leaks into logs, metrics, traces, caches or timing", id)
		}
	}
	for _, f := range []string{FieldDelayed, FieldObsPaths} {
		if v := sb.Value(f); v != "" && isTBD(v) {
			l.warnf(sb.Fields[f], "negative-controls", "scenario %s: %s skipped (%q); boundary leaks often hide there", id, f, v)
		}
	}
}

var skeletonLangs = map[string]bool{"rust": true, "go": true, "python": true, "typescript": true, "shell": true}

// langAliases maps fence tags to the Skeleton language enum.
var langAliases = map[string]string{
	"golang": "go", "rs": "rust", "py": "python", "ts": "typescript", "sh": "shell", "bash": "shell",
}

func (l *linter) skeleton(s *Scenario, id string) {
	if s.SkeletonLang != "" && !skeletonLangs[s.SkeletonLang] {
		l.warnf(s.Fields[FieldSkelLang], "skeleton-lang", "scenario %s: Skeleton language %q is not rust, go, python, typescript or shell", id, s.SkeletonLang)
	}
	if _, ok := s.Fields[FieldSkeleton]; ok && s.SkeletonLine == 0 {
		l.warnf(s.Fields[FieldSkeleton], "skeleton-missing", "scenario %s: Skeleton field has no fenced code block after it", id)
		return
	}
	if s.SkeletonLine == 0 {
		return
	}
	if !strings.Contains(s.Skeleton, "AUTO-GENERATED") {
		l.warnf(s.SkeletonLine, "skeleton-marker", "scenario %s: skeleton header lacks the AUTO-GENERATED marker", id)
	}
	if n := strings.Count(s.Skeleton, "TODO"); n != 3 {
		l.warnf(s.SkeletonLine, "skeleton-todo", "scenario %s: skeleton has %d TODO regions, want exactly 3 (Workload, Faults, Oracle)", id, n)
	} else if !todoOrder(s.Skeleton) {
		l.warnf(s.SkeletonLine, "skeleton-todo", "scenario %s: skeleton TODO regions are not labelled Workload, Faults, Oracle in that order", id)
	}
	tag := s.SkeletonTag
	if a, ok := langAliases[tag]; ok {
		tag = a
	}
	if s.SkeletonLang != "" && tag != s.SkeletonLang {
		l.warnf(s.SkeletonLine, "skeleton-lang", "scenario %s: skeleton fence is tagged %q but Skeleton language is %q", id, s.SkeletonTag, s.SkeletonLang)
	}
}

// todoOrder checks that Workload, Faults and Oracle labels appear in that
// order in the skeleton.
func todoOrder(sk string) bool {
	w, f, o := strings.Index(sk, "Workload"), strings.Index(sk, "Faults"), strings.Index(sk, "Oracle")
	return w >= 0 && f > w && o > f
}

// categoryTokens are words that tie a scenario name to a claim category.
var categoryTokens = map[string][]string{
	CatSafety:      {"safety", "safe", "linearizable", "linearizability", "stale", "consistent", "consistency", "lost", "correct", "wrong"},
	CatLiveness:    {"liveness", "live", "eventually", "within", "elected", "election", "progress", "available", "completes"},
	CatDurability:  {"durability", "durable", "survives", "persist", "persists", "lost", "crash", "acked"},
	CatPerfSLO:     {"performance", "latency", "throughput", "slo", "p99", "fast"},
	CatOperational: {"operational", "rolling", "restart", "upgrade", "config", "reconfig"},
	CatIdempotency: {"idempotency", "idempotent", "once", "duplicate", "retry", "retried", "replay"},
	CatIsolation:   {"isolation", "serializable", "serializability", "txn", "transaction", "anomaly"},
	CatOrdering:    {"ordering", "order", "ordered", "prefix", "sequence"},
	CatMembership:  {"membership", "member", "members", "removed", "joined"},
	CatBoundary:    {"boundary", "tenant", "tenants", "isolation", "authz", "leak", "cross", "visible", "namespace"},
	CatFairness:    {"fairness", "fair", "starved", "starvation", "noisy", "neighbour", "neighbor", "tenant"},
}

var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "on": true, "in": true, "is": true, "are": true, "to": true,
	"and": true, "or": true, "under": true, "by": true, "with": true, "any": true, "one": true, "no": true,
	"not": true, "for": true, "at": true, "its": true, "be": true, "can": true, "s": true, "x": true,
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// name is the soft check of docs/plan-format.md §9.1: a scenario name should encode
// its claim (share a token with its claims' categories or claim text).
func (l *linter) name(s *Scenario, id string) {
	if s.Name == "" {
		if s.ID != "" {
			l.warnf(s.Line, "scenario-name", "scenario %s has no name", id)
		}
		return
	}
	vocab := map[string]bool{}
	for _, c := range s.Falsifies {
		cl := l.claim(c)
		if cl == nil {
			return
		}
		for _, w := range words(cl.Category) {
			vocab[w] = true
		}
		for _, w := range categoryTokens[cl.Category] {
			vocab[w] = true
		}
		for _, w := range words(cl.Text) {
			if !stopWords[w] {
				vocab[w] = true
			}
		}
	}
	if len(vocab) == 0 {
		return
	}
	for _, w := range words(s.Name) {
		if vocab[w] || (len(w) > 3 && vocab[strings.TrimSuffix(w, "s")]) {
			return
		}
	}
	l.warnf(s.Line, "scenario-name", "scenario %s: name %q shares no word with its claims; name the claim, not the setup", id, s.Name)
}
