package plan

import (
	"strings"
)

// Scenario field labels (docs/plan-format.md §9.2), canonical spelling. They are the
// keys of Scenario.Fields.
const (
	FieldFalsifies     = "Falsifies if it FAILs"
	FieldCloses        = "Closes"
	FieldTechnique     = "Technique"
	FieldWorkload      = "Workload"
	FieldFaults        = "Faults"
	FieldOracle        = "Oracle"
	FieldObservability = "Observability required"
	FieldExit          = "Exit criteria"
	FieldSmoke         = "Smoke budget"
	FieldHardening     = "Hardening budget"
	FieldRelease       = "Release budget"
	FieldTarget        = "Target test file"
	FieldSkelLang      = "Skeleton language"
	FieldSkeleton      = "Skeleton"
	// The run wiring (docs/plan-format.md §9.6): what `dstgen run` needs to
	// run the scenario, each a backticked command line.
	FieldDriverCommand = "Driver command"
	FieldFinalState    = "Final state"
	FieldLeaderQuery   = "Leader query"
	FieldQuiesce       = "Quiesce"
)

// §7.M field labels (docs/plan-format.md §9.4).
const (
	FieldModel     = "Model under test"
	FieldHistory   = "Operation history"
	FieldChecker   = "Checker"
	FieldNemesis   = "Nemesis + landing evidence"
	FieldAmbiguous = "Ambiguous outcomes"
	FieldReduction = "Reduction plan"
)

// §7.M.S field labels (docs/plan-format.md §9.5).
const (
	FieldSurfaces      = "Surfaces"
	FieldOperations    = "Operations"
	FieldAdversarial   = "Adversarial inputs"
	FieldPositive      = "Positive controls"
	FieldNegative      = "Negative controls"
	FieldDelayed       = "Delayed / async paths"
	FieldObsPaths      = "Observability paths"
	FieldArms          = "Scenario arms"
	FieldBoundaryClaim = "Boundary claim"
	FieldBoundaryKeys  = "Boundary keys"
	FieldFairness      = "Fairness formula"
)

// ModelFields lists the six §7.M fields in docs/plan-format.md §9.4 order.
func ModelFields() []string {
	return []string{FieldModel, FieldHistory, FieldChecker, FieldNemesis, FieldAmbiguous, FieldReduction}
}

// SurfaceFields lists the eight §7.M.S fields in docs/plan-format.md §9.5 order.
func SurfaceFields() []string {
	return []string{FieldSurfaces, FieldOperations, FieldAdversarial, FieldPositive, FieldNegative,
		FieldDelayed, FieldObsPaths, FieldArms}
}

// scenarioLabel maps a normalised label to its canonical scenario field;
// with drift it also accepts abbreviated or shortened spellings (see
// driftLabel).
func scenarioLabel(l string, drift bool) string {
	if drift {
		return driftLabel(l, scenarioFields)
	}
	switch l {
	case "falsifies if it fails", "falsifies if fails", "falsifies", "falsifies if it fail":
		return FieldFalsifies
	case "closes":
		return FieldCloses
	case "technique":
		return FieldTechnique
	case "workload":
		return FieldWorkload
	case "faults", "fault", "fault schedule":
		return FieldFaults
	case "oracle":
		return FieldOracle
	case "observability required", "observability":
		return FieldObservability
	case "exit criteria":
		return FieldExit
	case "smoke budget", "smoke":
		return FieldSmoke
	case "hardening budget", "hardening":
		return FieldHardening
	case "release budget", "release":
		return FieldRelease
	case "target test file":
		return FieldTarget
	case "skeleton language":
		return FieldSkelLang
	case "skeleton":
		return FieldSkeleton
	}
	return ""
}

func modelLabel(l string, drift bool) string {
	if drift {
		return driftLabel(l, ModelFields())
	}
	switch l {
	case "model under test", "model":
		return FieldModel
	case "operation history", "history":
		return FieldHistory
	case "checker":
		return FieldChecker
	case "nemesis+landing evidence", "nemesis and landing evidence", "nemesis & landing evidence", "nemesis+landing-evidence", "nemesis":
		return FieldNemesis
	case "ambiguous outcomes":
		return FieldAmbiguous
	case "reduction plan":
		return FieldReduction
	}
	return ""
}

func surfaceLabel(l string, drift bool) string {
	if drift {
		return driftLabel(l, append(SurfaceFields(), FieldBoundaryClaim, FieldBoundaryKeys, FieldFairness))
	}
	switch l {
	case "surfaces":
		return FieldSurfaces
	case "operations":
		return FieldOperations
	case "adversarial inputs":
		return FieldAdversarial
	case "positive controls":
		return FieldPositive
	case "negative controls":
		return FieldNegative
	case "delayed/async paths", "delayed/asynchronous paths":
		return FieldDelayed
	case "observability paths":
		return FieldObsPaths
	case "scenario arms", "arms":
		return FieldArms
	case "boundary claim":
		return FieldBoundaryClaim
	case "boundary keys":
		return FieldBoundaryKeys
	case "fairness formula":
		return FieldFairness
	}
	return ""
}

// scenarioFields are the §9.2 labels, for label-drift matching.
var scenarioFields = []string{FieldFalsifies, FieldCloses, FieldTechnique, FieldWorkload, FieldFaults,
	FieldOracle, FieldObservability, FieldExit, FieldSmoke, FieldHardening, FieldRelease, FieldTarget,
	FieldSkelLang, FieldSkeleton, FieldDriverCommand, FieldFinalState, FieldLeaderQuery, FieldQuiesce}

// labelFillers are words a label may add or drop without changing meaning
// ("Nemesis and landing evidence", "Falsifies if FAILs").
var labelFillers = map[string]bool{"and": true, "the": true, "of": true, "a": true, "if": true, "it": true}

// labelWords splits a label into lower-case words, dropping punctuation
// ("+", "/", "&", ".") and filler words.
func labelWords(l string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(l), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if !labelFillers[w] {
			out = append(out, w)
		}
	}
	return out
}

// wordDrift reports whether w stands for the canonical word c: the same
// word, its plural or singular, or an abbreviation of at least 3 letters.
func wordDrift(w, c string) bool {
	return w == c || w == c+"s" || len(w) >= 3 && strings.HasPrefix(c, w)
}

// driftLabel tolerates label drift the way section headings tolerate title
// drift (docs/plan-format.md §3): the label's words must stand, in order, for
// canonical words, starting with the canonical's first word; later
// canonical words may be left out ("Nemesis + landing" for "Nemesis +
// landing evidence", "Exit crit." for "Exit criteria"). A label with a word
// the canonical does not have ("Oracle type", "Target hosts") matches
// nothing. When several canonicals fit, the one leaving out the fewest words
// wins; a tie is ambiguous and matches nothing.
func driftLabel(l string, canon []string) string {
	ws := labelWords(l)
	if len(ws) == 0 {
		return ""
	}
	best, bestLeft, tie := "", -1, false
	for _, c := range canon {
		cs := labelWords(c)
		if len(cs) == 0 || !wordDrift(ws[0], cs[0]) {
			continue
		}
		j := 1
		for _, w := range ws[1:] {
			for j < len(cs) && !wordDrift(w, cs[j]) {
				j++
			}
			if j == len(cs) {
				j = -1
				break
			}
			j++
		}
		if j < 0 {
			continue
		}
		left := len(cs) - len(ws)
		switch {
		case bestLeft < 0 || left < bestLeft:
			best, bestLeft, tie = c, left, false
		case left == bestLeft:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

func (s *Scenario) field(label string) *string {
	switch label {
	case FieldTechnique:
		return &s.Technique
	case FieldWorkload:
		return &s.Workload
	case FieldFaults:
		return &s.Faults
	case FieldOracle:
		return &s.Oracle
	case FieldObservability:
		return &s.Observability
	case FieldExit:
		return &s.ExitCriteria
	case FieldSmoke:
		return &s.Smoke.Text
	case FieldHardening:
		return &s.Hardening.Text
	case FieldRelease:
		return &s.Release.Text
	case FieldTarget:
		return &s.TargetTestFile
	case FieldSkelLang:
		return &s.SkeletonLang
	case FieldDriverCommand:
		return &s.DriverCommand
	case FieldFinalState:
		return &s.FinalState
	case FieldLeaderQuery:
		return &s.LeaderQuery
	case FieldQuiesce:
		return &s.Quiesce
	}
	return nil
}

func (m *ModelBlock) field(label string) *string {
	switch label {
	case FieldModel:
		return &m.Model
	case FieldHistory:
		return &m.History
	case FieldChecker:
		return &m.Checker
	case FieldNemesis:
		return &m.Nemesis
	case FieldAmbiguous:
		return &m.Ambiguous
	case FieldReduction:
		return &m.Reduction
	}
	return nil
}

// Value returns the value of a §7.M field by canonical label.
func (m *ModelBlock) Value(label string) string {
	if p := m.field(label); p != nil {
		return *p
	}
	return ""
}

func (b *SurfaceBlock) field(label string) *string {
	switch label {
	case FieldSurfaces:
		return &b.Surfaces
	case FieldOperations:
		return &b.Operations
	case FieldAdversarial:
		return &b.Adversarial
	case FieldPositive:
		return &b.Positive
	case FieldNegative:
		return &b.Negative
	case FieldDelayed:
		return &b.Delayed
	case FieldObsPaths:
		return &b.ObservabilityPaths
	case FieldArms:
		return &b.ArmsText
	case FieldBoundaryClaim:
		return &b.BoundaryClaim
	case FieldBoundaryKeys:
		return &b.BoundaryKeys
	case FieldFairness:
		return &b.FairnessFormula
	}
	return nil
}

// Value returns the value of a §7.M.S field by canonical label. For
// "Scenario arms" it is the inline text, or the arm ids when the arms are
// nested bullets.
func (b *SurfaceBlock) Value(label string) string {
	if p := b.field(label); p != nil {
		return *p
	}
	return ""
}

// mLine classifies a line (heading text or plain line) that opens a §7.M or
// §7.M.S block or is the §7.M sentinel.
const (
	mNone = iota
	mModel
	mSurface
	mSentinel
)

// Sentinel is the literal line a non-serious scenario writes for §7.M.
const Sentinel = "§7.M: not applicable (no gated claim category falsified)"

func classifyM(s string) (kind int, arm string) {
	t := strings.TrimLeft(s, "#*_ \t")
	if r, _, isB := bullet(t); isB {
		t = strings.TrimLeft(r, "*_ ")
	}
	switch {
	case strings.HasPrefix(t, "§7.M"):
		t = t[len("§7.M"):]
	case strings.HasPrefix(t, "§ 7.M"):
		t = t[len("§ 7.M"):]
	case strings.HasPrefix(t, "7.M"):
		t = t[len("7.M"):]
	default:
		return mNone, ""
	}
	if strings.HasPrefix(t, ".S") || strings.HasPrefix(t, ".s") {
		return mSurface, ""
	}
	if t != "" && isWordByte(t[0]) {
		return mNone, "" // "7.Mx…" is something else
	}
	if containsFold(t, "not applicable") {
		return mSentinel, ""
	}
	for i := 0; i < len(t); i++ {
		if id, _, _, ok := idAt(t, i, 'S', true); ok && strings.Contains(id, "/") {
			return mModel, id
		}
	}
	return mModel, ""
}

// scenarioHeading parses "Scenario S1: name" (":" or a dash; the name may
// be in backticks).
func scenarioHeading(text string) (id, name string, ok bool) {
	t := strings.TrimSpace(text)
	if !hasPrefixFold(t, "scenario") {
		return "", "", false
	}
	t = strings.TrimSpace(t[len("scenario"):])
	if t != "" && t[0] == 's' {
		t = "S" + t[1:]
	}
	sid, _, end, okID := idAt(t, 0, 'S', false)
	if !okID {
		return "", strings.Trim(trimDashes(t), "`*_ "), true
	}
	return sid, strings.Trim(strings.TrimSpace(trimDashes(t[end:])), "`*_ "), true
}

// block kinds inside a scenario.
const (
	blkScenario = iota
	blkModel
	blkSurface
	blkOther
)

type scenarioParser struct {
	ps       *parser
	sc       *Scenario
	blk      int
	mb       *ModelBlock
	sb       *SurfaceBlock
	acc      accum
	wantSkel bool
	inArms   bool

	// falsifies and closes hold the id lists' text, continuation lines
	// included, until finish reads the ids.
	falsifies, closes string
}

func (ps *parser) parseScenarios(s *section) {
	sp := &scenarioParser{ps: ps}
	body := s.body
	for i := 0; i < len(body); i++ {
		l := body[i]
		if l.fence == fenceOpen {
			j := i + 1
			for j < len(body) && body[j].fence == fenceBody {
				j++
			}
			sp.acc.flush()
			if sp.sc != nil && sp.wantSkel {
				sp.skeleton(l, body[i+1:j])
			}
			i = j // the closing fence (or the end)
			continue
		}
		if l.fence != fenceNone {
			continue
		}
		if l.head > 0 {
			sp.acc.flush()
			if id, name, ok := scenarioHeading(l.htext); ok {
				sp.finish()
				sp.start(id, name, l.n)
				continue
			}
			if sp.sc == nil {
				continue
			}
			if kind, arm := classifyM(l.htext); kind != mNone {
				sp.openBlock(kind, arm, l.n)
				continue
			}
			sp.blk = blkOther
			continue
		}
		sp.line(l)
	}
	sp.finish()
}

func (sp *scenarioParser) start(id, name string, line int) {
	sp.sc = &Scenario{ID: id, Name: name, Line: line, Fields: map[string]int{}}
	sp.blk, sp.mb, sp.sb, sp.wantSkel, sp.inArms = blkScenario, nil, nil, false, false
	sp.falsifies, sp.closes = "", ""
	if id == "" {
		sp.ps.note(line, "error", "scenario-id", "scenario heading has no S<n> id (want \"### Scenario S<n>: <name>\")")
	}
}

func (sp *scenarioParser) openBlock(kind int, arm string, line int) {
	sc := sp.sc
	sp.inArms = false
	switch kind {
	case mSentinel:
		if sc.MNotApplicable {
			sp.ps.note(line, "warning", "duplicate-field", "scenario %s: §7.M sentinel repeated", sc.ID)
		}
		sc.MNotApplicable = true
		if sc.MLine == 0 {
			sc.MLine = line
		}
		sp.blk = blkScenario
	case mModel:
		mb := &ModelBlock{Arm: arm, Fields: map[string]int{}, Line: line}
		sp.mb, sp.blk = mb, blkModel
		if arm != "" {
			sc.armModels = append(sc.armModels, mb)
			return
		}
		if sc.M != nil {
			sp.ps.note(line, "error", "duplicate-id", "scenario %s: second §7.M block (first at line %d)", sc.ID, sc.M.Line)
			return
		}
		sc.M = mb
		if !sc.MNotApplicable {
			sc.MLine = line
		}
	case mSurface:
		if sc.S != nil {
			sp.ps.note(line, "error", "duplicate-id", "scenario %s: second §7.M.S block (first at line %d)", sc.ID, sc.S.Line)
			sp.sb, sp.blk = sc.S, blkSurface
			return
		}
		sc.S = &SurfaceBlock{Fields: map[string]int{}, Line: line}
		sp.sb, sp.blk = sc.S, blkSurface
	}
}

func (sp *scenarioParser) line(l srcLine) {
	sc := sp.sc
	t := strings.TrimSpace(l.text)
	if t == "" {
		sp.acc.flush()
		return
	}
	if sc == nil {
		return
	}
	if kind, arm := classifyM(t); kind != mNone {
		sp.acc.flush()
		sp.openBlock(kind, arm, l.n)
		return
	}
	label, value, _, _, ok := splitField(l.text)
	if ok && sp.field(label, value, l.n) {
		return
	}
	if sp.blk == blkSurface && sp.inArms {
		if rest, _, isBul := bullet(l.text); isBul || strings.HasPrefix(t, "`S") || strings.HasPrefix(t, "S") {
			if arm, ok := parseArm(rest, l.n); ok {
				sp.acc.flush()
				sc.Arms = append(sc.Arms, arm)
				sp.acc.start(&sc.Arms[len(sc.Arms)-1].Text, arm.Text)
				return
			}
		}
	}
	_, indent, isB := bullet(l.text)
	// A wrapped field value continues on the next line, indented or not
	// (markdown's lazy continuation); a blank line ends it.
	if sp.acc.active() && !isB && (indent > 0 || lazyContinuation(t)) {
		sp.acc.add(t)
	}
}

// lazyContinuation reports whether an unindented line can continue the
// paragraph above it: not a table row, quote, heading or thematic break.
func lazyContinuation(t string) bool {
	return t != "" && !strings.ContainsAny(t[:1], "|>#") && strings.Trim(t, "-*_ ") != ""
}

// field assigns a labelled line to the current block, falling back to the
// scenario (or an implicit §7.M / §7.M.S) when the label belongs there.
// Exact labels (and their listed aliases) are tried everywhere first, so a
// drifted spelling never takes a label that another block spells exactly.
func (sp *scenarioParser) field(label, value string, line int) bool {
	return sp.fieldPass(label, value, line, false) || sp.fieldPass(label, value, line, true)
}

func (sp *scenarioParser) fieldPass(label, value string, line int, drift bool) bool {
	sc := sp.sc
	if sp.blk == blkModel {
		if c := modelLabel(label, drift); c != "" {
			sp.setModel(sp.mb, c, value, line)
			return true
		}
	}
	if sp.blk == blkSurface {
		if c := surfaceLabel(label, drift); c != "" {
			sp.setSurface(c, value, line)
			return true
		}
	}
	if c := scenarioLabel(label, drift); c != "" {
		sp.setScenario(c, value, line)
		return true
	}
	// Fields of a block whose heading was left out. A one-word label
	// ("model", "history", "arms") is too common in scenario prose to open
	// a block by itself.
	if drift && len(labelWords(label)) < 2 {
		return false
	}
	if c := modelLabel(label, drift); c != "" && label != "model" && label != "history" && label != "nemesis" {
		if sc.M == nil {
			sc.M = &ModelBlock{Fields: map[string]int{}, Line: line}
			sc.MLine = line
		}
		sp.mb, sp.blk = sc.M, blkModel
		sp.setModel(sc.M, c, value, line)
		return true
	}
	if c := surfaceLabel(label, drift); c != "" && label != "arms" && label != "operations" {
		if sc.S == nil {
			sc.S = &SurfaceBlock{Fields: map[string]int{}, Line: line}
		}
		sp.sb, sp.blk = sc.S, blkSurface
		sp.setSurface(c, value, line)
		return true
	}
	return false
}

func (sp *scenarioParser) setScenario(c, value string, line int) {
	sc := sp.sc
	sp.acc.flush()
	sp.inArms = false
	if prev, dup := sc.Fields[c]; dup {
		sp.ps.note(line, "warning", "duplicate-field", "scenario %s: %q given twice (first at line %d); the first is kept", sc.ID, c, prev)
		return
	}
	sc.Fields[c] = line
	switch c {
	case FieldFalsifies:
		// Read at finish: the list may wrap over several lines.
		sp.acc.start(&sp.falsifies, value)
	case FieldCloses:
		sp.acc.start(&sp.closes, value)
	case FieldSkeleton:
		sp.wantSkel = true
	case FieldSmoke:
		sc.Smoke.Line = line
		sp.acc.start(&sc.Smoke.Text, value)
	case FieldHardening:
		sc.Hardening.Line = line
		sp.acc.start(&sc.Hardening.Text, value)
	case FieldRelease:
		sc.Release.Line = line
		sp.acc.start(&sc.Release.Text, value)
	case FieldTarget:
		sc.TargetTestFile = strings.Trim(value, "`")
	case FieldSkelLang:
		sc.SkeletonLang = strings.ToLower(strings.Trim(value, "`*_ "))
	default:
		if p := sc.field(c); p != nil {
			sp.acc.start(p, value)
		}
	}
}

func (sp *scenarioParser) setModel(mb *ModelBlock, c, value string, line int) {
	sp.acc.flush()
	if prev, dup := mb.Fields[c]; dup {
		sp.ps.note(line, "warning", "duplicate-field", "scenario %s: §7.M %q given twice (first at line %d)", sp.sc.ID, c, prev)
		return
	}
	mb.Fields[c] = line
	sp.acc.start(mb.field(c), value)
}

func (sp *scenarioParser) setSurface(c, value string, line int) {
	sp.acc.flush()
	sb := sp.sb
	if prev, dup := sb.Fields[c]; dup {
		sp.ps.note(line, "warning", "duplicate-field", "scenario %s: §7.M.S %q given twice (first at line %d)", sp.sc.ID, c, prev)
		return
	}
	sb.Fields[c] = line
	sp.inArms = c == FieldArms
	if c == FieldArms {
		sb.ArmsText = value
		if strings.TrimSpace(value) == "" {
			return
		}
		// Inline arms: one arm with its description, or a list of ids.
		armIDs := ids(value, 'S', true)
		n := 0
		for _, id := range armIDs {
			if strings.Contains(id, "/") {
				n++
			}
		}
		if n == 1 {
			if arm, ok := parseArm(value, line); ok {
				sp.sc.Arms = append(sp.sc.Arms, arm)
				return
			}
		}
		for _, id := range armIDs {
			if strings.Contains(id, "/") {
				sp.sc.Arms = append(sp.sc.Arms, Arm{ID: id, Line: line})
			}
		}
		return
	}
	sp.acc.start(sb.field(c), value)
}

// parseArm reads "`S4/api` — surface: public API; oracle: …".
func parseArm(s string, line int) (Arm, bool) {
	t := strings.TrimLeft(s, "*_` ")
	id, _, end, ok := idAt(t, 0, 'S', true)
	if !ok || !strings.Contains(id, "/") {
		return Arm{}, false
	}
	rest := strings.TrimSpace(trimDashes(strings.TrimLeft(t[end:], "*_`")))
	a := Arm{ID: id, Text: rest, Line: line}
	for _, part := range strings.Split(rest, ";") {
		k, v, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		switch normLabel(k) {
		case "surface":
			a.Surface = strings.TrimSpace(v)
		case "oracle":
			a.Oracle = strings.TrimSpace(v)
		}
	}
	return a, true
}

func (sp *scenarioParser) skeleton(open srcLine, lines []srcLine) {
	sc := sp.sc
	sp.wantSkel = false
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		t := l.text
		// Dedent by the fence's own indentation (list-item skeletons).
		k := 0
		for k < open.findent && k < len(t) && (t[k] == ' ' || t[k] == '\t') {
			k++
		}
		parts = append(parts, t[k:])
	}
	sc.Skeleton = strings.Join(parts, "\n")
	if f := strings.Fields(open.finfo); len(f) > 0 {
		sc.SkeletonTag = strings.ToLower(strings.Trim(f[0], "{}."))
	}
	sc.SkeletonLine = open.n
}

func (sp *scenarioParser) finish() {
	sp.acc.flush()
	sc := sp.sc
	if sc == nil {
		return
	}
	sp.sc = nil
	if _, ok := sc.Fields[FieldFalsifies]; ok {
		sc.Falsifies = claimIDs(sp.falsifies)
	}
	if _, ok := sc.Fields[FieldCloses]; ok {
		sc.Closes = ids(sp.closes, 'H', false)
	}
	sc.Smoke = parseBudget(sc.Smoke.Text, sc.Smoke.Line)
	sc.Hardening = parseBudget(sc.Hardening.Text, sc.Hardening.Line)
	sc.Release = parseBudget(sc.Release.Text, sc.Release.Line)
	if sc.S != nil && strings.TrimSpace(sc.S.FairnessFormula) != "" {
		f, err := ParseFairness(sc.S.FairnessFormula)
		if err != nil {
			sp.ps.note(sc.S.Fields[FieldFairness], "error", "fairness-formula", "scenario %s: %v", sc.ID, err)
		} else {
			sc.S.Fairness = f
		}
	}
	// Attach per-arm §7.M blocks to their arms.
	var orphans []*ModelBlock
	armIdx := make(map[string]int, len(sc.Arms))
	for i := len(sc.Arms) - 1; i >= 0; i-- {
		armIdx[sc.Arms[i].ID] = i
	}
	for _, mb := range sc.armModels {
		i, found := armIdx[mb.Arm]
		switch {
		case !found:
			orphans = append(orphans, mb)
		case sc.Arms[i].M != nil:
			sp.ps.note(mb.Line, "error", "duplicate-id", "arm %s: second §7.M block (first at line %d)", mb.Arm, sc.Arms[i].M.Line)
		default:
			sc.Arms[i].M = mb
		}
	}
	sc.armModels = orphans
	sp.ps.p.Scenarios = append(sp.ps.p.Scenarios, *sc)
}
