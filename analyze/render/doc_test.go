package render

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func sampleDoc() *Doc {
	d := &Doc{Title: "T <1>"}
	h := H(3, T("Finding F1"))
	h.Tight = true
	d.Add(H(1, T("T <1>")),
		Block{Kind: Lines, Lines: []Inline{{B("Plan:"), T(" p")}, {B("Commit:"), T(" c")}}},
		h, Block{Kind: List, Items: []Inline{{T("a")}, {T("b")}}},
		Block{Kind: Group, Summary: Inline{T("S1")}, Blocks: []Block{P(T("in group")), {Kind: Checklist, Checks: []Check{{Done: true, Text: Inline{T("ok")}}, {Text: Inline{T("no")}}}}}},
		Block{Kind: Figure, SVG: "<svg></svg>\n", HTMLOnly: true},
		Block{Kind: Para, Text: Inline{T("md only")}, MarkdownOnly: true},
		Block{Kind: TableBlock, Table: &Table{Cols: []string{"A", "B"}, Rows: [][]Inline{{{T("x|y")}, {{Text: "log", Href: "../log.md"}}}}}},
		Block{Kind: Blank},
		H(2, T("End")))
	return d
}

// The Markdown writer separates blocks by one blank line (none after a
// Tight block), opens groups, drops HTML-only blocks (keeps Markdown-only
// ones), escapes table cells, writes links, and a Blank block adds one
// empty line.
func TestMarkdownWriter(t *testing.T) {
	want := "# T <1>\n\n**Plan:** p\n**Commit:** c\n\n### Finding F1\n- a\n- b\n\nin group\n\n- [x] ok\n- [ ] no\n\nmd only\n\n" +
		"| A | B |\n|---|---|\n| x\\|y | [log](../log.md) |\n\n\n## End\n"
	if got := string(Markdown(sampleDoc())); got != want {
		t.Errorf("Markdown:\n%q\nwant\n%q", got, want)
	}
}

// The HTML writer emits one well-formed page: escaped text, groups as
// <details>, figures inline, links as text only (the page points nowhere),
// Markdown-only blocks left out.
func TestHTMLWriter(t *testing.T) {
	page := HTML(sampleDoc())
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict, d.Entity = true, xml.HTMLEntity
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, page)
		}
	}
	s := string(page)
	for _, want := range []string{"<title>T &lt;1&gt;</title>", "<h1>T &lt;1&gt;</h1>", "<p><b>Plan:</b> p<br/><b>Commit:</b> c</p>",
		"<details><summary>S1</summary>", "<svg></svg>", "<td>log</td>", "<td>x|y</td>", "☑ ok", "☐ no"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(s, "href") || strings.Contains(s, "md only") {
		t.Errorf("page links out: %s", s)
	}
}
