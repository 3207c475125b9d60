package generator

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/plan"
)

// Plan modes of a scaffold (docs/plan-format.md §1).
const (
	ModeChangeScoped = "change-scoped"
	ModeProjectWide  = "project-wide"
)

// ScaffoldOptions says what `dstgen plan new` knows beyond the profile.
type ScaffoldOptions struct {
	Slug   string // the title slug (kebab-case); names the session directory
	Date   string // YYYY-MM-DD; the caller passes today, tests a fixed day
	Mode   string // ModeChangeScoped, or ModeProjectWide (the default without a Change)
	Change string // the commit or range under test (--change), "" when none
	// Touched are the files Change touches (DiffStat); TouchedMore counts
	// the ones left out beyond the listed maximum.
	Touched     []TouchedFile
	TouchedMore int
	Claims      []CandidateClaim // FindClaims; none gives one placeholder claim
}

// Scaffold renders a draft plan with every §0–§9 section in canonical order
// (docs/plan-format.md §3): what the scan knows is written out, everything a
// person must decide is a TODO(<id>: hint) marker, which `dstgen lint`
// reports as an error at its line until it is replaced. One hypothesis and
// one scenario stub per claim; the §7.M block of a gated claim carries the
// model and checker the picker proposes, as TODOs to confirm.
func Scaffold(p *Profile, o ScaffoldOptions) []byte {
	if o.Mode == "" {
		o.Mode = ModeProjectWide
		if o.Change != "" {
			o.Mode = ModeChangeScoped
		}
	}
	claims := o.Claims
	if len(claims) == 0 {
		claims = []CandidateClaim{{ID: "C1", Text: "TODO(claim: one falsifiable sentence the SUT promises — no guarantee sentence was found in its docs or comments)",
			Category: plan.CatSafety, Source: "TODO(source: the doc path or code symbol that makes the promise)"}}
	}
	stubs := make([]stub, len(claims))
	for i, c := range claims {
		stubs[i] = newStub(i+1, c)
	}
	w := &planWriter{}
	w.header(p, o)
	w.summary(p)
	w.scope(o)
	w.claims(claims)
	w.line("## 1c. Missing claims discovered")
	w.line("")
	w.line("TODO(missing-claims: a table `ID` / `Behavior the code relies on` / `Source / evidence` / `Suggested action` of M<n> rows, or the sentence that docs and code appear aligned)")
	w.line("")
	w.line("## 2. SUT model")
	w.line("")
	w.line("TODO(sut-model: one paragraph each on Tenancy / isolation, Persistence, Replication / consensus, Ordering, Network boundaries, Retry / idempotency contract, Observability — or delete this optional section)")
	w.line("")
	w.inventory(p)
	w.hypotheses(stubs)
	w.coverage(stubs)
	w.techniques(stubs)
	w.envReqs(p, stubs)
	w.scenarios(stubs)
	w.line("## 7b. Coverage adequacy argument")
	w.line("")
	w.line("| Claim | Threat model (how it could fail) | Scenarios that exercise the threats | Why these are sufficient |")
	w.line("|---|---|---|---|")
	for _, s := range stubs {
		w.line("| %s | TODO(threats: how %s could fail) | %s | TODO(why-sufficient: why %s exercises those threats) |", s.claim.ID, s.claim.ID, s.id, s.id)
	}
	w.line("")
	w.line("## 7c. Residual uncertainty")
	w.line("")
	w.line("TODO(residual: a table `Uncertainty` / `Why uncovered` / `Why acceptable today` / `When to revisit`, or the sentence that nothing is left uncovered)")
	w.line("")
	w.line("## 7d. Confidence statement")
	w.line("")
	w.line("TODO(confidence: 4–8 plain sentences on what a reviewer should believe if every scenario passes, and what not)")
	w.line("")
	w.line("## 8. What this plan does NOT cover")
	w.line("")
	w.line("- TODO(not-covered: a subsystem or mode deliberately out of scope, and why)")
	w.line("")
	w.line("## 9. Open questions / followups")
	w.line("")
	w.line("- TODO(open-question: <question> — <owner>, <by when>)")
	return []byte(w.b.String())
}

// stub is one claim's hypothesis and scenario.
type stub struct {
	n         int
	id, hyp   string // "S1", "H1"
	name      string
	claim     CandidateClaim
	technique string
	nemesis   nemesisHint
	model     string // proposed model ("" for a category without §7.M)
	checker   string // the picker's checker for model and category
	exact     bool   // the picker has the pair in its table
	level     string // an isolation claim's level (checker.IsolationLevel ids)
}

func newStub(n int, c CandidateClaim) stub {
	s := stub{n: n, id: fmt.Sprintf("S%d", n), hyp: fmt.Sprintf("H%d", n), claim: c,
		name: scenarioName(c), technique: techniqueFor(c.Category), nemesis: nemesisFor(c.Category)}
	if plan.GatedModel(c.Category) {
		s.model = modelFor(c)
		s.checker, s.exact = checker.Pick(s.model, c.Category)
		if c.Category == plan.CatIsolation {
			s.level = levelFor(c)
		}
	}
	if c.Kind == kindAtLeastOnce || c.Kind == kindDurability {
		s.nemesis = nemesisFor(plan.CatDurability) // lost after a crash
	}
	return s
}

// techniqueFor is the §6 technique a claim category is usually falsified
// with (docs/plan-format.md §7).
func techniqueFor(cat string) string {
	switch cat {
	case plan.CatSafety, plan.CatIsolation, plan.CatOrdering, plan.CatIdempotency:
		return "jepsen-and-elle"
	case plan.CatDurability, plan.CatOperational:
		return "crash-recovery-and-upgrade"
	case plan.CatPerfSLO, plan.CatFairness:
		return "performance-and-benchmarking"
	case plan.CatBoundary:
		return "property-and-metamorphic"
	}
	return "chaos-and-fault-injection" // liveness, membership
}

// modelFor is the model a gated claim is usually checked against
// (docs/history-and-checkers.md §3 and the picker's table): the claim's
// kind decides where the category alone would be ambiguous — a
// linearizable read is over keys, delivery at least or exactly once over
// a queue (docs/plan-format.md §15.3).
func modelFor(c CandidateClaim) string {
	delivery := deliveryRE.MatchString(c.Text)
	switch c.Kind {
	case kindLinearizable, kindConsistency, kindInvariant, kindGuarantee:
		return "kv"
	case kindSession:
		return "session"
	case kindMutex:
		return "lock"
	case kindAtLeastOnce:
		return "queue"
	case kindExactlyOnce:
		if delivery {
			return "queue"
		}
	case kindOrdering:
		if !delivery && strings.Contains(strings.ToLower(c.Text), "log") {
			return "log"
		}
	}
	switch c.Category {
	case plan.CatDurability:
		return "log"
	case plan.CatIdempotency:
		return "ledger"
	case plan.CatIsolation:
		return "map"
	case plan.CatOrdering:
		return "queue"
	case plan.CatMembership:
		return "membership-table"
	}
	return "register"
}

// deliveryRE names message delivery: such a claim is over a queue.
var deliveryRE = wordRE(`deliver\w*|messages?|publish\w*|consum\w*|subscri\w*|events?|queues?|topics?`)

// levelFor is the isolation level an isolation claim names (the
// serializability checker's --level), serializable when it names none;
// an atomicity claim is checked at read committed, whose anomalies (G0,
// G1) are the ones a non-atomic transaction shows.
func levelFor(c CandidateClaim) string {
	if c.Kind == kindAtomic {
		return checker.ReadCommitted
	}
	if l, ok := checker.IsolationLevel(strings.ReplaceAll(strings.ToLower(c.Text), "strictly", "strict")); ok {
		return l
	}
	return checker.Serializable
}

// nemesisHint is the fault a claim category is usually attacked with
// (docs/nemesis.md) and the §6b tool it needs ("" when none).
type nemesisHint struct{ id, tool, hint string }

func nemesisFor(cat string) nemesisHint {
	const (
		iptables = "iptables (CAP_NET_ADMIN)"
		netem    = "tc netem (iproute2)"
	)
	switch cat {
	case plan.CatSafety, plan.CatLiveness, plan.CatOrdering:
		return nemesisHint{"leader-isolation", iptables, "apt-get install iptables"}
	case plan.CatIsolation, plan.CatIdempotency:
		return nemesisHint{"partition-full", iptables, "apt-get install iptables"}
	case plan.CatMembership:
		return nemesisHint{"partition-minority", iptables, "apt-get install iptables"}
	case plan.CatDurability:
		return nemesisHint{"kill-9", "", ""}
	case plan.CatOperational:
		return nemesisHint{"rolling-upgrade", "", ""}
	case plan.CatPerfSLO:
		return nemesisHint{"latency", netem, "apt-get install iproute2"}
	}
	return nemesisHint{} // boundary, fairness: the workload is the attack
}

// scenarioName is the claim as claim-shaped snake case: its first six
// significant words (docs/plan-format.md §9.1).
func scenarioName(c CandidateClaim) string {
	if strings.HasPrefix(c.Text, "TODO(") {
		return "TODO(scenario-name: claim_shaped_snake_case_name)"
	}
	skip := map[string]bool{"the": true, "a": true, "an": true, "is": true, "are": true, "be": true, "of": true,
		"to": true, "and": true, "or": true, "it": true, "its": true, "this": true, "that": true, "we": true,
		"our": true, "will": true, "can": true, "in": true, "on": true, "for": true, "with": true, "by": true, "as": true}
	var words []string
	for _, f := range strings.FieldsFunc(strings.ToLower(c.Text), func(r rune) bool {
		return r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !skip[f] && len(words) < 6 {
			words = append(words, f)
		}
	}
	if len(words) == 0 {
		return strings.ToLower(strings.ReplaceAll(c.Category, "-", "_")) + "_claim_" + strings.TrimPrefix(c.ID, "C")
	}
	return strings.Join(words, "_")
}

// planWriter accumulates the scaffold's lines.
type planWriter struct{ b strings.Builder }

func (w *planWriter) line(format string, a ...any) {
	if len(a) == 0 {
		w.b.WriteString(format)
	} else {
		fmt.Fprintf(&w.b, format, a...)
	}
	w.b.WriteByte('\n')
}

func (w *planWriter) header(p *Profile, o ScaffoldOptions) {
	w.line("# Test Plan: %s", o.Slug)
	w.line("")
	w.line("**Date:** %s", o.Date)
	w.line("**Plan mode:** %s", o.Mode)
	w.line("**SUT:** %s", p.Name)
	switch {
	case o.Mode == ModeProjectWide && o.Change == "":
		w.line("**Change under test:** N/A — project-wide")
	case o.Change == "":
		w.line("**Change under test:** TODO(change: the commit, PR or range under test)")
	default:
		w.line("**Change under test:** `%s`", o.Change)
	}
	w.line("**Plan author:** dstgen plan new")
	w.line("**Status:** draft")
	w.line("")
}

// summary lists what the scan found as the start of §0.
func (w *planWriter) summary(p *Profile) {
	w.line("## 0. Architectural summary")
	w.line("")
	w.line("TODO(summary: the components, one line each; the data flow, where state is durable, where consensus runs, the trust boundaries)")
	w.line("")
	w.line("Found by `dstgen scan`:")
	if len(p.Language) > 0 {
		w.line("- languages: %s", strings.Join(p.Language, ", "))
	}
	for _, a := range limitSlice(p.Artifacts, 5) {
		w.line("- binary `%s`, built by `%s` (%s)", a.Name, a.Build, a.File)
	}
	for _, u := range limitSlice(p.Units, 3) {
		w.line("- systemd unit `%s` (%s)", u.Name, u.File)
	}
	for _, c := range limitSlice(p.Configs, 3) {
		w.line("- config template `%s` (%s)", c.Target, c.File)
	}
	n := 0
	for _, a := range p.DeployArtifacts {
		if a.Kind != "systemd" && n < 5 {
			w.line("- deploy artifact %s", strings.ReplaceAll(oneline.Fold(deployLine(a)), "|", "/"))
			n++
		}
	}
	if len(p.Language)+len(p.Artifacts)+len(p.Units)+len(p.Configs)+n == 0 {
		w.line("- no build file, binary, unit or config template")
	}
	w.line("")
}

func limitSlice[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (w *planWriter) scope(o ScaffoldOptions) {
	w.line("## 1. Scope")
	w.line("")
	if o.Mode == ModeProjectWide {
		w.line("TODO(scope: what is in scope for this release validation)")
		w.line("")
		w.line("Out of scope:")
		w.line("- TODO(out-of-scope: a subsystem left out, with the reason)")
		w.line("")
		return
	}
	w.line("TODO(scope: one paragraph on what the change does and why it needs testing)")
	w.line("")
	w.line("Files touched:")
	switch {
	case o.Change == "":
		w.line("- TODO(files-touched: the files the change touches; `dstgen plan new --change REF` lists them)")
	case len(o.Touched) == 0:
		w.line("- none (`git diff --stat %s` lists no file below the SUT)", o.Change)
	}
	for _, f := range o.Touched {
		stat := "binary"
		if f.Added >= 0 {
			stat = fmt.Sprintf("+%d −%d", f.Added, f.Deleted)
		}
		w.line("- `%s` (%s) — TODO(file-summary: one line on what changed)", strings.ReplaceAll(f.Path, "`", "'"), stat)
	}
	if o.TouchedMore > 0 {
		w.line("- … and %d more files (`git diff --stat %s`)", o.TouchedMore, o.Change)
	}
	w.line("")
}

func (w *planWriter) claims(cs []CandidateClaim) {
	w.line("## 1b. Claims under test")
	w.line("")
	w.line("Candidates found in the SUT's docs and code comments: each is inferred until a person confirms it (then `no`), rewrites it as one falsifiable sentence, or deletes it.")
	w.line("")
	w.line("| ID | Claim | Category | Source | Inferred? |")
	w.line("|---|---|---|---|---|")
	for _, c := range cs {
		text := c.Text
		if !strings.HasPrefix(text, "TODO(") {
			text = `"` + text + `"`
		}
		source := c.Source
		if len(c.Also) > 0 {
			source += "; also " + strings.Join(limitSlice(c.Also, 3), ", ")
			if len(c.Also) > 3 {
				source += fmt.Sprintf(" and %d more", len(c.Also)-3)
			}
		}
		inferred := "yes"
		if why := whyPicked(c); why != "" {
			inferred += " — " + why
		}
		w.line("| %s | %s | %s | %s | %s — TODO(confirm-claim: is this a promise the SUT makes, and is %s its category?) |",
			c.ID, text, c.Category, strings.ReplaceAll(source, "|", "/"), inferred, c.Category)
	}
	w.line("")
}

// whyPicked says in a few words why a candidate was picked: the phrases
// that scored and where it lives (docs/plan-format.md §15.2).
func whyPicked(c CandidateClaim) string {
	var words []string
	for _, w := range c.Why {
		if q, _, ok := strings.Cut(strings.TrimPrefix(w, `"`), `"`); ok && strings.HasPrefix(w, `"`) && !strings.Contains(w, " -") {
			words = appendUnique(words, q)
		}
	}
	if len(words) == 0 {
		return ""
	}
	out := "picked for " + `"` + strings.Join(limitSlice(words, 3), `", "`) + `"`
	if c.Where != "" {
		out += " in " + c.Where
	}
	out += fmt.Sprintf(", score %d", c.Score)
	return strings.NewReplacer("|", "/", "(", "", ")", "", "`", "'").Replace(out)
}

// inventory is §3: the scanner's toolbox, grouped by subsystem.
func (w *planWriter) inventory(p *Profile) {
	w.line("## 3. Existing test inventory")
	w.line("")
	if len(p.Toolbox) == 0 {
		w.line("The scan found no tests, chaos scripts or CI fault wiring in the SUT.")
		w.line("")
		return
	}
	tools := append([]Tool(nil), p.Toolbox...)
	sort.SliceStable(tools, func(i, j int) bool {
		si, sj := subsystemOf(tools[i]), subsystemOf(tools[j])
		if si != sj {
			return si < sj
		}
		return lessPath(tools[i].Path, tools[j].Path)
	})
	w.line("| Test / harness | Subsystem | Invariant pinned | Failure modes it catches |")
	w.line("|---|---|---|---|")
	for _, t := range tools {
		why := strings.NewReplacer("|", "/", "`", "'").Replace(t.Why)
		w.line("| `%s` (%s) | %s | TODO(invariant: what %s pins) | %s — TODO(failure-modes: the failures it catches) |", t.Path, t.Role, subsystemOf(t), path.Base(t.Path), why)
	}
	w.line("")
}

// subsystemOf guesses a tool's subsystem from its path: the first
// directory that is not a generic test or script folder, else its role.
func subsystemOf(t Tool) string {
	dirs := strings.Split(path.Dir(t.Path), "/")
	for _, d := range dirs {
		switch strings.ToLower(d) {
		case ".", "", "test", "tests", "testing", "script", "scripts", "tools", "hack", "ci", ".github", "workflows",
			"docs", "doc", "runbooks", "bin", "e2e", "integration":
			continue
		}
		return d
	}
	return t.Role
}

func (w *planWriter) hypotheses(stubs []stub) {
	w.line("## 4. Failure-mode hypotheses")
	w.line("")
	for _, s := range stubs {
		w.line("%s. **%s does not hold under faults** — TODO(hypothesis: one sentence on what could go wrong so that %s fails)", s.hyp, s.claim.ID, s.claim.ID)
		w.line("   - Could falsify: %s", s.claim.ID)
		w.line("   - Suspected because: TODO(suspected: a code path, prior bug, paper or intuition)")
		w.line("   - Subsystem: TODO(subsystem: the subsystem %s lives in)", s.claim.ID)
	}
	w.line("")
}

func (w *planWriter) coverage(stubs []stub) {
	w.line("## 5. Coverage matrix")
	w.line("")
	w.line("| Claim | Hypothesis | Existing tests | Verdict | Gap kind | Recommended scenario |")
	w.line("|---|---|---|---|---|---|")
	for _, s := range stubs {
		w.line("| %s | %s | TODO(existing-tests: §3 rows that test it, or none) | TODO(verdict: covered / partial / not covered) | TODO(gap-kind: no test / shallow test / oracle too weak / no fault-injection variant / no scale variant / —) | %s |", s.claim.ID, s.hyp, s.id)
	}
	w.line("")
}

// techniques is §6: one block per technique the stubs use, plus a second
// one when they use only one (a single technique is a smell).
func (w *planWriter) techniques(stubs []stub) {
	w.line("## 6. Technique selection")
	w.line("")
	var names []string
	hyps := map[string][]string{}
	for _, s := range stubs {
		if _, ok := hyps[s.technique]; !ok {
			names = append(names, s.technique)
		}
		hyps[s.technique] = append(hyps[s.technique], s.hyp)
	}
	if len(names) == 1 {
		extra := "chaos-and-fault-injection"
		if names[0] == extra {
			extra = "property-and-metamorphic"
		}
		names = append(names, extra)
		hyps[extra] = hyps[names[0]]
	}
	for _, n := range names {
		w.line("### %s", n)
		w.line("- **Hypotheses it addresses:** %s", strings.Join(hyps[n], ", "))
		w.line("- **What it would catch that other techniques miss:** TODO(catches: what %s finds that the others miss)", n)
		w.line("- **Reference:** `references/%s.md`", n)
		w.line("- **Cost / wall-clock estimate:** TODO(cost: hours of setup and of running)")
		w.line("")
	}
}

// envReqs is §6b: the toolchains, binaries and service manager the profile
// shows, and the fault tools of the proposed nemeses.
func (w *planWriter) envReqs(p *Profile, stubs []stub) {
	w.line("## 6b. Environment requirements")
	w.line("")
	w.line("| Requirement | Version floor | Used by scenarios | Install hint |")
	w.line("|---|---|---|---|")
	toolchains := map[string][2]string{
		"go": {"Go toolchain", "https://go.dev/dl/"}, "rust": {"Rust toolchain (cargo)", "https://rustup.rs"},
		"node": {"Node.js", "https://nodejs.org"}, "python": {"Python 3", "apt-get install python3"},
		"c++": {"C++ compiler and CMake", "apt-get install build-essential cmake"},
	}
	for _, l := range p.Language {
		if t, ok := toolchains[l]; ok {
			w.line("| %s | — | all | %s |", t[0], t[1])
		}
	}
	for _, a := range limitSlice(p.Artifacts, 5) {
		w.line("| `%s` binary | — | all | built by `%s` |", a.Name, a.Build)
	}
	if len(p.Units) > 0 {
		w.line("| systemd (for `%s`) | — | all | the host's init; elsewhere the SUT runs as a supervised dstgen job |", p.Units[0].Name)
	}
	// The SUT's own ways to start it: each is a requirement only if the
	// plan starts the SUT that way, which a person decides.
	seen := map[string]bool{}
	for _, a := range p.DeployArtifacts {
		req, ok := deployRequirement[a.Kind]
		if !ok || seen[a.Kind] {
			continue
		}
		seen[a.Kind] = true
		at := a.File
		if a.Line > 0 {
			at = fmt.Sprintf("%s:%d", a.File, a.Line)
		}
		w.line("| %s (the SUT's `%s`, %s) | — | TODO(deploy-artifact: all if the SUT is started this way, else delete this row) | %s |",
			req[0], strings.ReplaceAll(at, "`", "'"), a.Kind, req[1])
	}
	var tools []string
	users := map[string][]string{}
	hints := map[string]string{}
	for _, s := range stubs {
		if t := s.nemesis.tool; t != "" {
			if _, ok := users[t]; !ok {
				tools = append(tools, t)
			}
			users[t] = append(users[t], s.id)
			hints[t] = s.nemesis.hint
		}
	}
	for _, t := range tools {
		w.line("| %s | — | %s | %s |", t, strings.Join(users[t], ", "), hints[t])
	}
	w.line("")
}

// deployRequirement is what running each kind of deploy artifact needs
// on a host, and where to get it.
var deployRequirement = map[string][2]string{
	"dockerfile":  {"Docker Engine", "apt-get install docker.io"},
	"compose":     {"Docker Compose", "apt-get install docker-compose"},
	"helm-chart":  {"Helm and a Kubernetes cluster", "https://helm.sh/docs/intro/install/"},
	"kubernetes":  {"kubectl and a Kubernetes cluster", "https://kubernetes.io/docs/tasks/tools/"},
	"procfile":    {"goreman", "go install github.com/mattn/goreman@latest"},
	"vagrant":     {"Vagrant", "https://developer.hashicorp.com/vagrant/install"},
	"make-target": {"make", "apt-get install make"},
}

func (w *planWriter) scenarios(stubs []stub) {
	w.line("## 7. Scenarios")
	w.line("")
	for _, s := range stubs {
		w.scenario(s)
	}
}

func (w *planWriter) scenario(s stub) {
	cat := s.claim.Category
	w.line("### Scenario %s: %s", s.id, s.name)
	w.line("- **Falsifies if it FAILs:** %s", s.claim.ID)
	w.line("- **Closes:** %s", s.hyp)
	w.line("- **Technique:** %s", s.technique)
	w.line("- **Workload:** TODO(workload: driver, clients, rate, key / op mix, duration)")
	if s.nemesis.id != "" {
		w.line("- **Faults:** TODO(faults: what, when, for how long — proposed `%s`, see dstgen help nemesis)", s.nemesis.id)
	} else {
		w.line("- **Faults:** TODO(faults: what, when, for how long, or none for a smoke-only scenario)")
	}
	w.line("- **Oracle:** TODO(oracle: a machine-checkable property of the history, or an SLO with its threshold)")
	w.line("- **Observability required:** TODO(observability: the logs, metrics, traces or dumps the oracle needs)")
	w.line("- **Exit criteria:** TODO(exit-criteria: the pass, fail and inconclusive conditions)")
	w.line("- **Smoke budget:** TODO(smoke-budget: nodes, duration, faults, seeds of the smallest run that proves the harness)")
	w.line("- **Hardening budget:** TODO(hardening-budget: stronger than smoke in nodes, duration, faults or seeds)")
	w.line("- **Release budget:** TODO(release-budget: a long or repeated gate, or not provided — <reason>. Revisit when: <condition>.)")
	w.line("")
	switch {
	case s.model != "":
		w.line("#### §7.M — Model / history / checker discipline")
		w.line("- **Model under test:** TODO(model: proposed %s for a %s claim — keep it or name the model the SUT's API implements)", s.model, cat)
		switch {
		case s.exact && s.level != "":
			w.line("- **Checker:** TODO(checker: proposed %s, the picker's choice for %s / %s, at level %s — the level the claim names)", s.checker, s.model, cat, s.level)
		case s.exact:
			w.line("- **Checker:** TODO(checker: proposed %s, the picker's choice for %s / %s)", s.checker, s.model, cat)
		default:
			w.line("- **Checker:** TODO(checker: proposed %s, the picker's nearest for %s / %s — say why it still applies)", s.checker, s.model, cat)
		}
		w.line("- **Operation history:** TODO(history: the default fields captured, extra fields, and in-process / external probe / server-side audit / combined)")
		w.line("- **Nemesis + landing evidence:** TODO(nemesis: the nemesis and the observable signal that proves it landed)")
		w.line("- **Ambiguous outcomes:** default")
		w.line("- **Reduction plan:** TODO(reduction: how to shrink a failure — cluster, fault window, ops, seed — then the blame class)")
		w.line("")
	case !plan.GatedSurface(cat):
		w.line("§7.M: not applicable (no gated claim category falsified)")
		w.line("")
	}
	if plan.GatedSurface(cat) {
		if s.model == "" {
			w.line("§7.M: not applicable (no gated claim category falsified)")
			w.line("")
		}
		w.line("#### §7.M.S — Surface decomposition")
		w.line("- **Surfaces:** TODO(surfaces: at least three surfaces where the boundary could leak)")
		w.line("- **Operations:** TODO(operations: the operations exercised on each surface)")
		w.line("- **Adversarial inputs:** TODO(adversarial: confusable identifiers, one per class)")
		w.line("- **Positive controls:** TODO(positive-controls: legitimate access that must still succeed)")
		w.line("- **Negative controls:** TODO(negative-controls: illegitimate access that must be denied and leave no trace in logs, metrics, traces, caches or timing)")
		w.line("- **Delayed / async paths:** TODO(async-paths: background jobs, retries, compaction, exports)")
		w.line("- **Observability paths:** TODO(observability-paths: metrics, traces and audit logs that might themselves leak)")
		if cat == plan.CatFairness {
			w.line("- **Fairness formula:** TODO(fairness-formula: group=<dimension>; worst_group_p99 / aggregate_p99 <= X; min_group_throughput >= Y ops/s; error_rate_by_group == 0; repeat_spread <= Z)")
		}
		w.line("- **Scenario arms:**")
		w.line("  - `%s/api` — surface: public API; oracle: TODO(arm-oracle: the machine-checkable property of this arm)", s.id)
		w.line("")
	}
}
