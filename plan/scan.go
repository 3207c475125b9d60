package plan

import (
	"strings"
)

// Line-level lexing shared by every section parser. Everything here is a
// single left-to-right pass over a line with no backtracking, so a hostile
// plan costs time linear in its size.

// fence states of a source line.
const (
	fenceNone = iota
	fenceOpen
	fenceBody
	fenceClose
)

// srcLine is one source line with what the first pass learned about it.
type srcLine struct {
	n       int    // 1-based line number
	text    string // without the line terminator
	fence   int    // fenceNone | fenceOpen | fenceBody | fenceClose
	finfo   string // info string of an opening fence
	findent int    // indentation of an opening fence
	head    int    // heading level (0: not a heading)
	htext   string // heading text, trimmed, closing #s and bold removed
}

// splitLines splits data into lines, accepting LF, CRLF and lone CR.
func splitLines(data string) []string {
	var out []string
	start := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			out = append(out, data[start:i])
			start = i + 1
		case '\r':
			out = append(out, data[start:i])
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(data) {
		out = append(out, data[start:])
	}
	return out
}

// lexLines classifies every line: fences first (nothing inside a fence is
// a heading), then ATX headings. It returns the line of an unterminated
// fence, or 0.
func lexLines(raw []string) ([]srcLine, int) {
	lines := make([]srcLine, len(raw))
	var open struct {
		ch     byte
		n      int
		active bool
		line   int
	}
	for i, t := range raw {
		l := srcLine{n: i + 1, text: t}
		if open.active {
			if closesFence(t, open.ch, open.n) {
				l.fence = fenceClose
				open.active = false
			} else {
				l.fence = fenceBody
			}
			lines[i] = l
			continue
		}
		if ch, n, indent, info, ok := opensFence(t); ok {
			l.fence, l.finfo, l.findent = fenceOpen, info, indent
			open.ch, open.n, open.active, open.line = ch, n, true, i+1
			lines[i] = l
			continue
		}
		l.head, l.htext = heading(t)
		lines[i] = l
	}
	if open.active {
		return lines, open.line
	}
	return lines, 0
}

func opensFence(s string) (ch byte, n, indent int, info string, ok bool) {
	t := strings.TrimLeft(s, " \t")
	indent = len(s) - len(t)
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, 0, "", false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, 0, "", false
	}
	info = strings.TrimSpace(t[n:])
	if ch == '`' && strings.IndexByte(info, '`') >= 0 {
		return 0, 0, 0, "", false // an inline code span, not a fence
	}
	return ch, n, indent, info, true
}

func closesFence(s string, ch byte, n int) bool {
	t := strings.TrimSpace(s)
	k := 0
	for k < len(t) && t[k] == ch {
		k++
	}
	return k >= n && k == len(t)
}

// heading returns the level and text of an ATX heading line.
func heading(s string) (int, string) {
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 {
		return 0, ""
	}
	lvl := 0
	for lvl < len(t) && t[lvl] == '#' {
		lvl++
	}
	if lvl == 0 || lvl > 6 {
		return 0, ""
	}
	rest := t[lvl:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, ""
	}
	rest = strings.TrimSpace(rest)
	// Optional closing sequence of #s.
	if j := strings.TrimRight(rest, "#"); j != rest && (j == "" || strings.HasSuffix(j, " ")) {
		rest = strings.TrimSpace(j)
	}
	return lvl, stripBold(rest)
}

// stripBold removes emphasis markers wrapping the whole string.
func stripBold(s string) string {
	for _, m := range []string{"**", "__", "*", "_"} {
		if len(s) > 2*len(m) && strings.HasPrefix(s, m) && strings.HasSuffix(s, m) {
			s = strings.TrimSpace(s[len(m) : len(s)-len(m)])
		}
	}
	return s
}

// knownSections are the section number tokens of docs/plan-format.md §3.
var knownSections = map[string]bool{
	"0": true, "1": true, "1b": true, "1c": true, "2": true, "3": true, "4": true,
	"5": true, "6": true, "6b": true, "7": true, "7b": true, "7c": true, "7d": true,
	"8": true, "9": true,
}

// sectionToken keys a heading on its leading section number ("1b.", "§7c",
// "Section 6b:"), ignoring the title wording.
func sectionToken(text string) (string, bool) {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "§"))
	if len(t) >= 8 && strings.EqualFold(t[:8], "section ") {
		t = strings.TrimSpace(strings.TrimPrefix(t[8:], "§"))
	}
	i := 0
	for i < len(t) && i < 3 && isDigit(t[i]) {
		i++
	}
	if i == 0 || i > 2 {
		return "", false
	}
	j := i
	if j < len(t) && (t[j] >= 'a' && t[j] <= 'd' || t[j] >= 'A' && t[j] <= 'D') {
		j++
	}
	tok := strings.ToLower(t[:j])
	rest := t[j:]
	if rest != "" && (rest[0] == '.' || rest[0] == ')' || rest[0] == ':') {
		rest = rest[1:]
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && !startsWithDash(rest) {
		return "", false
	}
	return tok, knownSections[tok]
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func startsWithDash(s string) bool {
	return strings.HasPrefix(s, "—") || strings.HasPrefix(s, "–") || strings.HasPrefix(s, "-")
}

// trimDashes strips leading separators (dashes, colons, spaces) people put
// between an id or label and its text.
func trimDashes(s string) string {
	for {
		t := strings.TrimLeft(s, " \t:-.)")
		t = strings.TrimPrefix(t, "—")
		t = strings.TrimPrefix(t, "–")
		if t == s {
			return s
		}
		s = t
	}
}

// bullet strips a list marker ("-", "*", "+", "1.") and reports the
// indentation of the marker.
func bullet(s string) (rest string, indent int, isBullet bool) {
	t := strings.TrimLeft(s, " \t")
	indent = len(s) - len(t)
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && (t[1] == ' ' || t[1] == '\t') {
		return strings.TrimSpace(t[2:]), indent, true
	}
	return strings.TrimSpace(t), indent, false
}

// splitField splits "label: value" written as `**Label:** v`, `**Label**: v`
// or `Label: v`, with or without a bullet. The label is returned normalised
// (see normLabel); the caller decides whether it is a label it knows.
func splitField(s string) (label, value string, indent int, isBullet, ok bool) {
	t, indent, isBullet := bullet(s)
	switch {
	case strings.HasPrefix(t, "**") || strings.HasPrefix(t, "__"):
		m := t[:2]
		end := strings.Index(t[2:], m)
		if end < 0 {
			return "", "", indent, isBullet, false
		}
		inner := strings.TrimSpace(t[2 : 2+end])
		after := t[2+end+2:]
		switch {
		case strings.HasSuffix(inner, ":"):
			label, value = inner[:len(inner)-1], after
		case strings.HasPrefix(strings.TrimLeft(after, " "), ":"):
			label, value = inner, strings.TrimLeft(after, " ")[1:]
		default:
			return "", "", indent, isBullet, false
		}
	default:
		i := strings.IndexByte(t, ':')
		if i <= 0 || i > 60 {
			return "", "", indent, isBullet, false
		}
		label, value = t[:i], t[i+1:]
		if strings.ContainsAny(label, "`|") {
			return "", "", indent, isBullet, false
		}
	}
	value = strings.TrimSpace(value)
	// "**Label:** **value**" — emphasis around the whole value is decoration.
	value = stripBold(value)
	return normLabel(label), value, indent, isBullet, true
}

// normLabel lower-cases a label and normalises spacing and emphasis so
// "Delayed/async paths" and "**Delayed / async paths**" compare equal.
func normLabel(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch r {
		case '*', '`', '_':
			continue
		case ' ', '\t':
			space = true
			continue
		case '/', '+':
			space = false
			b.WriteRune(r)
			continue
		}
		if space && b.Len() > 0 {
			last := b.String()[b.Len()-1]
			if last != '/' && last != '+' {
				b.WriteByte(' ')
			}
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), ": ")
}

// cells splits a table row into trimmed cells; `\|` is a literal pipe.
func cells(s string) []string {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, `\|`) {
		t = t[:len(t)-1]
	}
	var out []string
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '\\' && i+1 < len(t) && t[i+1] == '|' {
			b.WriteByte('|')
			i++
			continue
		}
		if t[i] == '|' {
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteByte(t[i])
	}
	return append(out, strings.TrimSpace(b.String()))
}

func isTableLine(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "|") }

func isSeparatorRow(c []string) bool {
	dash := false
	for _, x := range c {
		for i := 0; i < len(x); i++ {
			switch x[i] {
			case '-':
				dash = true
			case ':', ' ':
			default:
				return false
			}
		}
	}
	return dash
}

// table is one markdown table: its header and data rows.
type table struct {
	header []string
	rows   []tableRow
	line   int
}

type tableRow struct {
	cells []string
	line  int
}

// cell returns column i of the row, "" when the row is short.
func (r tableRow) cell(i int) string {
	if i < len(r.cells) {
		return r.cells[i]
	}
	return ""
}

// tables collects the tables of a section body, skipping fenced blocks.
func tables(body []srcLine) []table {
	var out []table
	for i := 0; i < len(body); i++ {
		if body[i].fence != fenceNone || !isTableLine(body[i].text) {
			continue
		}
		t := table{header: cells(body[i].text), line: body[i].n}
		j := i + 1
		if j < len(body) && body[j].fence == fenceNone && isTableLine(body[j].text) && isSeparatorRow(cells(body[j].text)) {
			j++
		}
		for ; j < len(body) && body[j].fence == fenceNone && isTableLine(body[j].text); j++ {
			c := cells(body[j].text)
			if isSeparatorRow(c) || allEmpty(c) {
				continue
			}
			t.rows = append(t.rows, tableRow{cells: c, line: body[j].n})
		}
		out = append(out, t)
		i = j - 1
	}
	return out
}

func allEmpty(c []string) bool {
	for _, x := range c {
		if x != "" {
			return false
		}
	}
	return true
}

// cleanID strips emphasis and code marks around an id cell ("**C1**", "`C1`").
func cleanID(s string) string {
	return strings.Trim(strings.TrimSpace(s), "*`_ ")
}

// containsFold reports whether s contains sub, ignoring ASCII case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// columns maps a table's columns to canonical ones by header text (exact
// match first, then prefix), so a reordered or extra column does not shift
// the values. A canonical column whose header is not found falls back to
// its position in the plan format's order, which keeps header-less drift working.
func (t table) columns(keys [][]string) []int {
	hdr := make([]string, len(t.header))
	for i, h := range t.header {
		hdr[i] = normLabel(strings.TrimRight(strings.TrimSpace(h), "?"))
	}
	used := map[int]bool{}
	out := make([]int, len(keys))
	find := func(ks []string, match func(h, k string) bool) int {
		for _, k := range ks {
			for j, h := range hdr {
				if !used[j] && match(h, k) {
					return j
				}
			}
		}
		return -1
	}
	for i, ks := range keys {
		j := find(ks, func(h, k string) bool { return h == k })
		if j < 0 {
			j = find(ks, strings.HasPrefix)
		}
		if j >= 0 {
			used[j] = true
		}
		out[i] = j
	}
	for i := range out {
		if out[i] >= 0 {
			continue
		}
		if !used[i] {
			out[i], used[i] = i, true
		} else {
			out[i] = len(hdr) + len(keys) // absent: cell() yields ""
		}
	}
	return out
}

// Canonical column keys (normalised, see normLabel) of each plan table.
var (
	claimCols     = [][]string{{"id"}, {"claim"}, {"category"}, {"source"}, {"inferred"}}
	missingCols   = [][]string{{"id"}, {"behavior", "behaviour"}, {"source", "evidence"}, {"suggested", "action"}}
	inventoryCols = [][]string{{"test"}, {"subsystem"}, {"invariant"}, {"failure"}}
	coverageCols  = [][]string{{"claim"}, {"hypothesis"}, {"existing"}, {"verdict"}, {"gap"}, {"recommended"}}
	envCols       = [][]string{{"requirement"}, {"version"}, {"used by"}, {"install"}}
	adequacyCols  = [][]string{{"claim"}, {"threat"}, {"scenario"}, {"why"}}
	residualCols  = [][]string{{"uncertainty"}, {"why uncovered"}, {"why acceptable"}, {"when to revisit", "revisit"}}
)
