package plan

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/dstgen/dstgen/internal/fileline"
)

// MaxSize bounds the plan files Parse accepts; a plan is prose, and a
// multi-megabyte input is a mistake (or an attack) rather than a plan.
const MaxSize = 8 << 20

// Parse reads and parses the plan at path. See ReadFile and ParseBytes.
func Parse(path string) (*Plan, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseBytes(path, data)
}

// ReadFile reads the plan at path, at most MaxSize bytes: Init hashes the
// very bytes it lints, so it reads once through here and then calls
// ParseBytes. A directory or an oversized file is a *fileline.Error.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if fi.IsDir() {
		return nil, fileline.Errorf(path, 0, "is a directory, not a plan file")
	}
	if fi.Size() > MaxSize {
		return nil, fileline.Errorf(path, 0, "plan is %d bytes, larger than the %d-byte limit", fi.Size(), MaxSize)
	}
	// Stat sizes only regular files: a device or pipe reports 0, so the
	// read itself is bounded too.
	data, err := fileline.ReadBounded(path, MaxSize)
	if errors.Is(err, fileline.ErrTooLarge) {
		return nil, fileline.Errorf(path, 0, "plan is more than %d bytes, the size limit", MaxSize)
	}
	if fe := (*fileline.Error)(nil); errors.As(err, &fe) {
		return nil, fmt.Errorf("read plan: %w", fe.Err)
	}
	return data, err
}

// ParseBytes parses plan markdown; name is used in positions (file:line).
//
// The parser is lenient: anything it can read it keeps, and most defects
// become Lint problems rather than errors. It returns a *fileline.Error only when the
// input cannot be a plan at all (empty, binary, not UTF-8, too large, no
// title and no section, an unterminated code fence). Even then the returned
// Plan holds whatever was parsed, so callers can still show partial results.
func ParseBytes(name string, data []byte) (*Plan, error) {
	p := &Plan{Path: name, Sections: map[string]int{}, Headers: map[string]int{}}
	where := name
	if where == "" {
		where = "<plan>"
	}
	fail := func(line int, format string, a ...any) (*Plan, error) {
		return p, fileline.Errorf(where, line, format, a...)
	}
	if len(data) > MaxSize {
		return fail(0, "plan is %d bytes, larger than the %d-byte limit", len(data), MaxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(1, "empty plan")
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fail(1+bytes.Count(data[:i], []byte("\n")), "NUL byte: this is not a text file")
	}
	if !utf8.Valid(data) {
		bad := 0
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				bad = i
				break
			}
			i += n
		}
		return fail(1+bytes.Count(data[:bad], []byte("\n")), "invalid UTF-8")
	}
	lines, unterminated := lexLines(splitLines(string(data)))
	ps := &parser{p: p}
	ps.split(lines)
	ps.parseAll()
	p.notes = append(p.notes, todoNotes(p.Path, lines)...)
	if p.Line == 0 && len(p.Sections) == 0 {
		return fail(1, `not a test plan: no "# Test Plan: <slug>" title and no numbered "## N." section`)
	}
	if unterminated > 0 {
		return fail(unterminated, "code fence opened here is never closed")
	}
	return p, nil
}

// section is one top-level numbered section and its body lines.
type section struct {
	tok   string // "" for an unnumbered heading at section level
	title string
	line  int
	level int
	body  []srcLine
}

type parser struct {
	p        *Plan
	preamble []srcLine
	sections []*section
}

func (ps *parser) note(line int, sev, rule, format string, a ...any) {
	ps.p.notes = append(ps.p.notes, Problem{File: ps.p.Path, Line: line, Severity: sev, Rule: rule, Message: fmt.Sprintf(format, a...)})
}

// split groups lines into the preamble and top-level sections. The section
// level is the level of the first numbered heading, so plans written one
// heading level deeper parse the same.
func (ps *parser) split(lines []srcLine) {
	level := 0
	var cur *section
	for _, l := range lines {
		if l.head > 0 {
			if ps.p.Line == 0 && hasPrefixFold(l.htext, "test plan") {
				ps.p.Line = l.n
				ps.p.Slug = cleanSlug(l.htext[len("test plan"):])
				continue
			}
			tok, isSec := sectionToken(l.htext)
			if isSec && level == 0 {
				level = l.head
			}
			// A lettered token ("7b", "1c") is never a sub-heading, so a
			// section written one level too deep still starts a section.
			if isSec && level > 0 && l.head > level && !isDigit(tok[len(tok)-1]) {
				l.head = level
			}
			if level > 0 && l.head <= level {
				cur = &section{title: l.htext, line: l.n, level: l.head}
				if isSec {
					cur.tok = tok
					if prev, dup := ps.p.Sections[tok]; dup {
						ps.note(l.n, "warning", "duplicate-section", "section %s appears twice (first at line %d); its content is merged", tok, prev)
					} else {
						ps.p.Sections[tok] = l.n
					}
				}
				ps.sections = append(ps.sections, cur)
				continue
			}
		}
		if cur == nil {
			ps.preamble = append(ps.preamble, l)
		} else {
			cur.body = append(cur.body, l)
		}
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func cleanSlug(s string) string {
	return strings.Trim(strings.TrimSpace(trimDashes(s)), "`*_ ")
}

// Header labels (docs/plan-format.md §2), canonical spelling.
const (
	HdrDate   = "Date"
	HdrMode   = "Plan mode"
	HdrSUT    = "SUT"
	HdrChange = "Change under test"
	HdrAuthor = "Plan author"
	HdrStatus = "Status"
	// Optional: the plan-wide run wiring (docs/plan-format.md §9.6).
	HdrLeaderQuery = "Leader query"
	HdrQuiesce     = "Quiesce"
)

func (ps *parser) parseAll() {
	p := ps.p
	ps.parseHeader(ps.preamble)
	for _, s := range ps.sections {
		switch s.tok {
		case "0":
			p.Summary = joinText(s.body)
		case "1":
			p.Scope = joinText(s.body)
			// Header lines misplaced after the first heading are still header.
		case "1b":
			ps.parseClaims(s)
		case "1c":
			ps.parseMissing(s)
		case "2":
			p.SUTModel, p.SUTModelLine = joinTextLine(s.body)
		case "3":
			ps.parseInventory(s)
		case "4":
			ps.parseHypotheses(s)
		case "5":
			ps.parseCoverage(s)
		case "6":
			ps.parseTechniques(s)
		case "6b":
			ps.parseEnv(s)
		case "7":
			ps.parseScenarios(s)
		case "7b":
			ps.parseAdequacy(s)
		case "7c":
			ps.parseResidual(s)
		case "7d":
			p.Confidence, p.ConfLine = joinTextLine(s.body)
		case "8":
			p.NotCovered, p.NotCovLines = bullets(s.body)
		case "9":
			p.OpenQuestions, p.OpenQLines = bullets(s.body)
		}
	}
	if p.Mode == "" {
		p.Mode = "change-scoped"
	}
	// "Used by scenarios: all" scopes the requirement to every scenario.
	for i := range p.EnvReqs {
		e := &p.EnvReqs[i]
		if len(e.UsedBy) == 0 && hasWord(e.UsedByText, "all") {
			for _, s := range p.Scenarios {
				if s.ID != "" {
					e.UsedBy = append(e.UsedBy, s.ID)
				}
			}
		}
	}
}

// hasWord reports whether s contains w as a whole word, ignoring case.
func hasWord(s, w string) bool {
	for _, x := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWordRune(r) }) {
		if x == w {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool { return r < 128 && isWordByte(byte(r)) }

func (ps *parser) parseHeader(lines []srcLine) {
	p := ps.p
	for _, l := range lines {
		if l.fence != fenceNone || l.head > 0 {
			continue
		}
		label, value, _, _, ok := splitField(l.text)
		if !ok {
			continue
		}
		var dst *string
		var canon string
		switch label {
		case "date":
			dst, canon = &p.Date, HdrDate
		case "plan mode", "mode":
			dst, canon = &p.Mode, HdrMode
		case "sut", "system under test":
			dst, canon = &p.SUT, HdrSUT
		case "change under test", "change":
			dst, canon = &p.ChangeUnderTest, HdrChange
		case "plan author", "author":
			dst, canon = &p.Author, HdrAuthor
		case "status":
			dst, canon = &p.Status, HdrStatus
		case "leader query":
			dst, canon = &p.LeaderQuery, HdrLeaderQuery
		case "quiesce":
			dst, canon = &p.Quiesce, HdrQuiesce
		default:
			continue
		}
		if _, dup := p.Headers[canon]; dup {
			ps.note(l.n, "warning", "duplicate-field", "header %q given twice; the first value is kept", canon)
			continue
		}
		p.Headers[canon] = l.n
		if canon == HdrLeaderQuery || canon == HdrQuiesce {
			*dst = value // a command keeps its backticks (Command reads them)
			continue
		}
		*dst = strings.Trim(value, "`")
	}
	p.Mode = strings.ToLower(p.Mode)
	p.Status = strings.ToLower(p.Status)
}

// joinText returns the non-blank-trimmed text of lines, verbatim.
func joinText(body []srcLine) string {
	s, _ := joinTextLine(body)
	return s
}

func joinTextLine(body []srcLine) (string, int) {
	first, last := -1, -1
	for i, l := range body {
		if strings.TrimSpace(l.text) != "" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return "", 0
	}
	parts := make([]string, 0, last-first+1)
	for _, l := range body[first : last+1] {
		parts = append(parts, strings.TrimRight(l.text, " \t"))
	}
	return strings.Join(parts, "\n"), body[first].n
}

// bullets returns the top-level bullet items of a section (continuation
// lines joined), or its paragraphs when it has no bullets.
func bullets(body []srcLine) ([]string, []int) {
	var items []string
	var lines []int
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			items[len(items)-1] = strings.Join(cur, " ")
			cur = nil
		}
	}
	minIndent := -1
	for _, l := range body {
		if l.fence != fenceNone || l.head > 0 {
			continue
		}
		if rest, ind, ok := bullet(l.text); ok && rest != "" && (minIndent < 0 || ind <= minIndent) {
			minIndent = ind
			flush()
			items = append(items, rest)
			lines = append(lines, l.n)
			cur = []string{rest}
			continue
		}
		t := strings.TrimSpace(l.text)
		if t == "" {
			flush()
			continue
		}
		if len(cur) > 0 {
			cur = append(cur, t)
		}
	}
	flush()
	if len(items) == 0 {
		// No bullets: one item per paragraph.
		for _, l := range body {
			if l.fence != fenceNone || l.head > 0 {
				continue
			}
			t := strings.TrimSpace(l.text)
			if t == "" {
				flush()
				continue
			}
			if len(cur) == 0 {
				items = append(items, t)
				lines = append(lines, l.n)
			}
			cur = append(cur, t)
		}
		flush()
	}
	return items, lines
}

func (ps *parser) parseClaims(s *section) {
	for _, t := range tables(s.body) {
		k := t.columns(claimCols)
		for _, r := range t.rows {
			c := Claim{
				ID:       cleanID(r.cell(k[0])),
				Text:     r.cell(k[1]),
				Category: normCategory(r.cell(k[2])),
				Source:   r.cell(k[3]),
				Line:     r.line,
			}
			c.Inferred, c.InferredNote = leadingWord(r.cell(k[4]))
			ps.p.Claims = append(ps.p.Claims, c)
		}
	}
}

// normCategory maps a category cell to its canonical spelling when it is
// one of the eleven (case-insensitively); otherwise it is kept as written
// so Lint can name it.
func normCategory(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "`*_")
	for _, c := range Categories {
		if strings.EqualFold(s, c) {
			return c
		}
	}
	return s
}

// leadingWord splits "partial — docs are silent" into "partial" and
// "docs are silent".
func leadingWord(s string) (string, string) {
	s = strings.Trim(strings.TrimSpace(s), "*_`")
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	return strings.ToLower(s[:i]), strings.TrimSpace(trimDashes(s[i:]))
}

// sutModelLabels are the seven §2 prompts; in the published template they
// sit under §1c without a heading of their own.
var sutModelLabels = map[string]bool{
	"tenancy/isolation": true, "persistence": true, "replication/consensus": true,
	"ordering": true, "network boundaries": true, "retry/idempotency contract": true,
	"observability": true, "tenancy": true, "replication": true, "consensus": true,
}

func (ps *parser) parseMissing(s *section) {
	p := ps.p
	for _, t := range tables(s.body) {
		k := t.columns(missingCols)
		for _, r := range t.rows {
			p.Missing = append(p.Missing, MissingClaim{
				ID: cleanID(r.cell(k[0])), Behavior: r.cell(k[1]), Evidence: r.cell(k[2]), Action: r.cell(k[3]), Line: r.line,
			})
		}
	}
	// Prose: the "docs and code appear aligned" sentence, then possibly the
	// §2 SUT-model paragraphs (template quirk).
	var prose, model []srcLine
	inModel := false
	for _, l := range s.body {
		if l.fence == fenceNone && isTableLine(l.text) {
			continue
		}
		if !inModel && l.fence == fenceNone {
			if label, _, _, _, ok := splitField(l.text); ok && sutModelLabels[label] {
				inModel = true
			}
			if l.head > 0 && (containsFold(l.htext, "SUT model") || sutModelLabels[normLabel(l.htext)]) {
				inModel = true
			}
		}
		if inModel {
			model = append(model, l)
		} else {
			prose = append(prose, l)
		}
	}
	p.MissingText, p.MissingLine = joinTextLine(prose)
	if text, line := joinTextLine(model); text != "" && p.SUTModel == "" {
		p.SUTModel, p.SUTModelLine = text, line
	}
}

func (ps *parser) parseInventory(s *section) {
	for _, t := range tables(s.body) {
		k := t.columns(inventoryCols)
		for _, r := range t.rows {
			ps.p.Inventory = append(ps.p.Inventory, InventoryRow{
				Test: r.cell(k[0]), Subsystem: r.cell(k[1]), Invariant: r.cell(k[2]), FailureModes: r.cell(k[3]), Line: r.line,
			})
		}
	}
}

func (ps *parser) parseCoverage(s *section) {
	ts := tables(s.body)
	// Large plans split §5 into a per-claim summary and the per-hypothesis
	// detail; only the detail table has a Hypothesis column.
	var use []table
	for _, t := range ts {
		for _, h := range t.header {
			if containsFold(h, "hypothes") {
				use = append(use, t)
				break
			}
		}
	}
	if len(use) == 0 && len(ts) > 0 {
		use = ts[:1]
	}
	for _, t := range use {
		k := t.columns(coverageCols)
		for _, r := range t.rows {
			ps.p.Coverage = append(ps.p.Coverage, CoverageRow{
				Claim: cleanID(r.cell(k[0])), Hypothesis: cleanID(r.cell(k[1])), ExistingTests: r.cell(k[2]),
				Verdict: r.cell(k[3]), GapKind: r.cell(k[4]), Recommended: r.cell(k[5]), Line: r.line,
			})
		}
	}
}

func (ps *parser) parseEnv(s *section) {
	for _, t := range tables(s.body) {
		k := t.columns(envCols)
		for _, r := range t.rows {
			used := r.cell(k[2])
			hint := r.cell(k[3])
			ps.p.EnvReqs = append(ps.p.EnvReqs, EnvReq{
				Requirement:    r.cell(k[0]),
				VersionFloor:   r.cell(k[1]),
				UsedBy:         ids(used, 'S', true),
				UsedByText:     used,
				InstallHint:    hint,
				BroughtUpBySUT: containsFold(hint, "brought up by SUT"),
				Line:           r.line,
			})
		}
	}
}

func (ps *parser) parseAdequacy(s *section) {
	for _, t := range tables(s.body) {
		k := t.columns(adequacyCols)
		for _, r := range t.rows {
			ps.p.Adequacy = append(ps.p.Adequacy, AdequacyRow{
				Claim: r.cell(k[0]), Threats: r.cell(k[1]), Scenarios: r.cell(k[2]), Why: r.cell(k[3]),
				ClaimIDs: ids(r.cell(k[0]), 'C', false), ScenarioIDs: ids(r.cell(k[2]), 'S', true),
				Line: r.line,
			})
		}
	}
}

func (ps *parser) parseResidual(s *section) {
	p := ps.p
	for _, t := range tables(s.body) {
		k := t.columns(residualCols)
		for _, r := range t.rows {
			p.Residual = append(p.Residual, ResidualRow{
				Uncertainty: r.cell(k[0]), WhyUncovered: r.cell(k[1]), WhyAcceptable: r.cell(k[2]), Revisit: r.cell(k[3]),
				ClaimIDs: ids(strings.Join(r.cells, " | "), 'C', false), Line: r.line,
			})
		}
	}
	var prose []srcLine
	for _, l := range s.body {
		if l.fence == fenceNone && isTableLine(l.text) {
			continue
		}
		prose = append(prose, l)
	}
	p.ResidualText, p.ResidualLine = joinTextLine(prose)
}

// hypothesis labels → setter index.
const (
	hCould = iota + 1
	hSuspected
	hSubsystem
)

func hypLabel(l string) int {
	switch l {
	case "could falsify", "falsifies", "could falsify claims":
		return hCould
	case "suspected because", "suspected", "why suspected":
		return hSuspected
	case "subsystem":
		return hSubsystem
	}
	return 0
}

func (ps *parser) parseHypotheses(s *section) {
	p := ps.p
	var cur *Hypothesis
	group := ""
	var na []srcLine
	var acc accum
	// could holds each "Could falsify" value with its continuation lines;
	// the ids are read when the item ends, so a wrapped list keeps them all.
	var could []*string
	finish := func() {
		acc.flush()
		if cur != nil {
			for _, c := range could {
				cur.CouldFalsify = append(cur.CouldFalsify, claimIDs(*c)...)
			}
			p.Hypotheses = append(p.Hypotheses, *cur)
			cur = nil
		}
		could = could[:0]
	}
	for _, l := range s.body {
		if l.fence != fenceNone {
			continue
		}
		if l.head > 0 {
			finish()
			if id, title, desc, ok := hypItem(l.htext); ok {
				cur = &Hypothesis{ID: id, Title: title, Description: desc, Group: group, Line: l.n}
				continue
			}
			group = l.htext
			continue
		}
		t := strings.TrimSpace(l.text)
		if t == "" {
			acc.flush()
			continue
		}
		if label, value, _, _, ok := splitField(l.text); ok && cur != nil {
			switch hypLabel(label) {
			case hCould:
				c := new(string)
				could = append(could, c)
				acc.start(c, value)
				continue
			case hSuspected:
				acc.start(&cur.SuspectedBecause, value)
				continue
			case hSubsystem:
				acc.start(&cur.Subsystem, value)
				continue
			}
		}
		rest, indent, _ := bullet(l.text)
		if indent <= 3 {
			if id, title, desc, ok := hypItem(rest); ok {
				finish()
				cur = &Hypothesis{ID: id, Title: title, Description: desc, Group: group, Line: l.n}
				continue
			}
		}
		if containsFold(t, "N/A") {
			finish()
			na = append(na, l)
			continue
		}
		if cur != nil && indent > 0 && acc.active() {
			acc.add(t)
			continue
		}
		if cur != nil && indent == 0 {
			// Prose after an item ends it.
			finish()
		}
	}
	finish()
	for i := range p.Hypotheses {
		if p.Hypotheses[i].Subsystem == "" {
			p.Hypotheses[i].Subsystem = p.Hypotheses[i].Group
		}
	}
	p.HypothesesNA, p.HypNALine = joinTextLine(na)
}

// claimIDs extracts claim (C) and missing-claim (M) ids in order.
func claimIDs(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != 'C' && s[i] != 'M' {
			continue
		}
		if _, _, end, ok := idAt(s, i, s[i], false); ok {
			out = append(out, ids(s[i:end+rangeTail(s[end:])], s[i], false)...)
			i = end - 1
		}
	}
	return dedupe(out)
}

// rangeTail returns the length of a "–C3" range continuation at s's start.
func rangeTail(s string) int {
	j, ok := skipRangeDash(s, 0)
	if !ok {
		return 0
	}
	k := j
	if k < len(s) && (s[k] == 'C' || s[k] == 'M') {
		k++
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k > j+1 {
			return k
		}
	}
	return 0
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// hypItem recognises "H1. **Title** — description" (and "**H1.**", "H1:",
// "H1 —" variants).
func hypItem(s string) (id, title, desc string, ok bool) {
	t := strings.TrimLeft(s, " ")
	// An ordered-list marker before the id: "1. H1 …".
	if i := strings.IndexByte(t, '.'); i > 0 && i <= 3 && allDigits(t[:i]) {
		t = strings.TrimSpace(t[i+1:])
	}
	t = strings.TrimLeft(t, "*_ ")
	hid, _, end, okID := idAt(t, 0, 'H', false)
	if !okID {
		return "", "", "", false
	}
	rest := t[end:]
	rest = strings.TrimLeft(rest, "*_")
	if rest != "" && !strings.ContainsAny(rest[:1], ".:) ") && !startsWithDash(rest) {
		return "", "", "", false
	}
	rest = strings.TrimSpace(trimDashes(strings.TrimLeft(rest, "*_")))
	rest = strings.TrimLeft(rest, "*_")
	rest = strings.TrimSpace(trimDashes(rest))
	if strings.HasPrefix(rest, "**") {
		if j := strings.Index(rest[2:], "**"); j >= 0 {
			return hid, strings.TrimSpace(rest[2 : 2+j]), strings.TrimSpace(trimDashes(rest[2+j+2:])), true
		}
	}
	for _, sep := range []string{" — ", " – ", " -- ", " - "} {
		if j := strings.Index(rest, sep); j >= 0 {
			return hid, strings.Trim(strings.TrimSpace(rest[:j]), "*"), strings.TrimSpace(rest[j+len(sep):]), true
		}
	}
	return hid, strings.Trim(rest, "*"), "", true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func (ps *parser) parseTechniques(s *section) {
	p := ps.p
	var cur *Technique
	var acc accum
	finish := func() {
		acc.flush()
		if cur != nil {
			p.Techniques = append(p.Techniques, *cur)
			cur = nil
		}
	}
	for _, l := range s.body {
		if l.fence != fenceNone {
			continue
		}
		if l.head > 0 {
			finish()
			name := strings.Trim(l.htext, "`*_ ")
			if i := strings.IndexByte(name, ' '); i > 0 && (allDigits(strings.Trim(name[:i], ".")) || strings.Count(name[:i], ".") > 0 && allDigits(strings.ReplaceAll(strings.Trim(name[:i], "."), ".", ""))) {
				name = strings.Trim(strings.TrimSpace(name[i:]), "`*_ ")
			}
			cur = &Technique{Name: name, Line: l.n}
			continue
		}
		t := strings.TrimSpace(l.text)
		if t == "" {
			acc.flush()
			continue
		}
		if cur == nil {
			continue
		}
		if label, value, _, _, ok := splitField(l.text); ok {
			switch {
			case hasPrefixFold(label, "hypotheses"):
				acc.flush()
				cur.Hypotheses = ids(value, 'H', false)
				continue
			case hasPrefixFold(label, "what it would catch"), label == "catches":
				acc.start(&cur.Catches, value)
				continue
			case label == "reference":
				acc.start(&cur.Reference, strings.Trim(value, "`"))
				continue
			case hasPrefixFold(label, "cost"):
				acc.start(&cur.Cost, value)
				continue
			}
		}
		if _, indent, isB := bullet(l.text); acc.active() && (indent > 0 && !isB) {
			acc.add(t)
		}
	}
	finish()
}

// accum joins a field's continuation lines once, at the end, so a field of
// many lines costs linear time.
type accum struct {
	dst   *string
	parts []string
}

func (a *accum) start(dst *string, first string) {
	a.flush()
	a.dst = dst
	a.parts = append(a.parts[:0], first)
}

func (a *accum) active() bool { return a.dst != nil }

func (a *accum) add(s string) { a.parts = append(a.parts, s) }

func (a *accum) flush() {
	if a.dst != nil {
		*a.dst = strings.TrimSpace(strings.Join(a.parts, " "))
	}
	a.dst = nil
	a.parts = a.parts[:0]
}
