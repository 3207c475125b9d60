package render

import (
	"fmt"
	"strings"
)

// HTML writes d as one self-contained page (HTMLHead's inline CSS, inline
// SVG figures, no scripts, no links out).
func HTML(d *Doc) []byte {
	var b strings.Builder
	HTMLHead(&b, d.Title)
	writeHTMLBlocks(&b, d.Blocks)
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func writeHTMLBlocks(b *strings.Builder, bs []Block) {
	for _, bl := range bs {
		writeHTMLBlock(b, bl)
	}
}

func writeHTMLBlock(b *strings.Builder, bl Block) {
	if bl.MarkdownOnly {
		return
	}
	switch bl.Kind {
	case Heading:
		fmt.Fprintf(b, "<h%d>%s</h%d>\n", bl.Level, htmlInline(bl.Text), bl.Level)
	case Para:
		cls := ""
		if bl.Class != "" {
			cls = fmt.Sprintf(` class="%s"`, Esc(bl.Class))
		}
		fmt.Fprintf(b, "<p%s>%s</p>\n", cls, htmlInline(bl.Text))
	case Lines:
		lines := make([]string, len(bl.Lines))
		for i, l := range bl.Lines {
			lines[i] = htmlInline(l)
		}
		fmt.Fprintf(b, "<p>%s</p>\n", strings.Join(lines, "<br/>"))
	case List:
		b.WriteString("<ul>")
		for _, it := range bl.Items {
			fmt.Fprintf(b, "<li>%s</li>", htmlInline(it))
		}
		b.WriteString("</ul>\n")
	case Checklist:
		b.WriteString(`<ul class="check">`)
		for _, c := range bl.Checks {
			box := "☐"
			if c.Done {
				box = "☑"
			}
			fmt.Fprintf(b, "<li>%s %s</li>", box, htmlInline(c.Text))
		}
		b.WriteString("</ul>\n")
	case TableBlock:
		writeHTMLTable(b, bl.Table)
	case Figure:
		b.WriteString(bl.SVG)
	case Group:
		fmt.Fprintf(b, "<details><summary>%s</summary>\n", htmlInline(bl.Summary))
		writeHTMLBlocks(b, bl.Blocks)
		b.WriteString("</details>\n")
	}
}

func writeHTMLTable(b *strings.Builder, t *Table) {
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = make([]string, len(r))
		for j, c := range r {
			rows[i][j] = plain(c)
		}
	}
	var rowClass func(int) string
	if len(t.RowClass) == len(t.Rows) {
		rowClass = func(i int) string { return t.RowClass[i] }
	}
	HTMLTable(b, t.Cols, rows, rowClass)
}

// plain is the text of in without markup (HTMLTable escapes cells itself).
func plain(in Inline) string {
	var b strings.Builder
	for _, s := range in {
		b.WriteString(s.Text)
	}
	return b.String()
}

func htmlInline(in Inline) string {
	var b strings.Builder
	for _, s := range in {
		if s.Bold {
			b.WriteString("<b>" + Esc(s.Text) + "</b>")
		} else {
			b.WriteString(Esc(s.Text))
		}
	}
	return b.String()
}
