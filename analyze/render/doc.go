package render

// The document model: a report is built once as a Doc (headings,
// paragraphs, lists, checklists, tables, figures) and written by the small
// writers in markdown_doc.go and html_doc.go, so report.md and report.html
// cannot say different things.

// Span is a run of text inside a block. Text is final (the builder has
// already made free text one line where the format needs it); the writers
// only escape it.
type Span struct {
	Text string
	Bold bool
	// Href makes the span a link in Markdown; HTML shows the text only, so
	// the page never points outside itself.
	Href string
}

// Inline is a sequence of spans.
type Inline []Span

// T is plain text.
func T(s string) Span { return Span{Text: s} }

// B is bold text.
func B(s string) Span { return Span{Text: s, Bold: true} }

// Kind says what a Block is.
type Kind int

// Block kinds.
const (
	// Heading is Text at Level (1–6).
	Heading Kind = iota
	// Para is one paragraph of Text; Class styles it in HTML.
	Para
	// Lines are consecutive lines of one paragraph.
	Lines
	// List is a bullet list of Items.
	List
	// Checklist is a list of Checks.
	Checklist
	// TableBlock is Table.
	TableBlock
	// Figure is an inline SVG drawing (HTML only).
	Figure
	// Group holds Blocks under a Summary: a collapsible section in HTML,
	// its blocks in sequence in Markdown.
	Group
	// Blank is an extra empty line in Markdown; HTML ignores it.
	Blank
)

// Block is one element of a document; Kind says which fields it uses.
type Block struct {
	Kind   Kind
	Level  int
	Text   Inline
	Class  string
	Lines  []Inline
	Items  []Inline
	Checks []Check
	Table  *Table
	SVG    string
	// Summary and Blocks make a Group.
	Summary Inline
	Blocks  []Block
	// Tight puts the next block on the next line in Markdown, with no
	// blank line between (a finding's heading over its list).
	Tight bool
	// HTMLOnly blocks are left out of Markdown (the charts section),
	// MarkdownOnly blocks out of HTML (where the page says the same thing
	// in its own form, such as a verdict badge).
	HTMLOnly     bool
	MarkdownOnly bool
}

// Check is one checklist item.
type Check struct {
	Done bool
	Text Inline
}

// Table is a header row and body rows of cells; RowClass (optional, one
// per row) styles rows in HTML.
type Table struct {
	Cols     []string
	Rows     [][]Inline
	RowClass []string
}

// Doc is one report document.
type Doc struct {
	// Title is the HTML page title.
	Title  string
	Blocks []Block
}

// Add appends blocks to the document.
func (d *Doc) Add(b ...Block) { d.Blocks = append(d.Blocks, b...) }

// H is a heading block.
func H(level int, text ...Span) Block { return Block{Kind: Heading, Level: level, Text: text} }

// P is a paragraph block.
func P(text ...Span) Block { return Block{Kind: Para, Text: text} }
