package render

import "strings"

// Markdown writes d: blocks are separated by one blank line (none after a
// Tight block), table cells go through MDCell, and the output ends with
// exactly one newline.
func Markdown(d *Doc) []byte {
	var b strings.Builder
	writeMDBlocks(&b, flatten(d.Blocks))
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

// flatten opens groups and drops HTML-only blocks: Markdown has neither.
func flatten(bs []Block) []Block {
	var out []Block
	for _, bl := range bs {
		switch {
		case bl.HTMLOnly:
		case bl.Kind == Group:
			out = append(out, flatten(bl.Blocks)...)
		default:
			out = append(out, bl)
		}
	}
	return out
}

func writeMDBlocks(b *strings.Builder, bs []Block) {
	for i, bl := range bs {
		if i > 0 && !bs[i-1].Tight {
			b.WriteString("\n")
		}
		writeMDBlock(b, bl)
	}
}

func writeMDBlock(b *strings.Builder, bl Block) {
	switch bl.Kind {
	case Heading:
		b.WriteString(strings.Repeat("#", bl.Level) + " " + mdInline(bl.Text) + "\n")
	case Para:
		b.WriteString(mdInline(bl.Text) + "\n")
	case Lines:
		for _, l := range bl.Lines {
			b.WriteString(mdInline(l) + "\n")
		}
	case List:
		for _, it := range bl.Items {
			b.WriteString("- " + mdInline(it) + "\n")
		}
	case Checklist:
		for _, c := range bl.Checks {
			box := "- [ ] "
			if c.Done {
				box = "- [x] "
			}
			b.WriteString(box + mdInline(c.Text) + "\n")
		}
	case TableBlock:
		MDHeader(b, bl.Table.Cols...)
		for _, r := range bl.Table.Rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = mdInline(c)
			}
			MDRow(b, cells...)
		}
	}
}

func mdInline(in Inline) string {
	var b strings.Builder
	for _, s := range in {
		switch {
		case s.Href != "":
			b.WriteString("[" + s.Text + "](" + s.Href + ")")
		case s.Bold:
			b.WriteString("**" + s.Text + "**")
		default:
			b.WriteString(s.Text)
		}
	}
	return b.String()
}
