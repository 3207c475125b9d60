package render

// Markdown pieces shared by every report.

import "strings"

// MDCell makes s safe inside a markdown table cell: pipes escaped, line
// breaks turned into <br>, empty cells shown as an em dash.
func MDCell(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "—"
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "<br>")
}

// OneLine keeps a free-text value on one line (Markdown list items and bold
// label lines would otherwise be broken by embedded newlines).
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "—"
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// MDRow writes one table row, each cell made safe by MDCell.
func MDRow(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(MDCell(c))
		b.WriteString(" |")
	}
	b.WriteString("\n")
}

// MDHeader writes a table header row and its separator.
func MDHeader(b *strings.Builder, cols ...string) {
	b.WriteString("| " + strings.Join(cols, " | ") + " |\n|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
}
