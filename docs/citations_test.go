package docs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

// The citation tests read every tracked text file of the repository (Go
// comments and strings, Markdown, templates, goldens) and report every
// offender as file:line, so one run lists all that is left to fix.

// maxScanBytes bounds each file read; tracked text files are far smaller.
const maxScanBytes = 8 << 20

// pageNames are the reference pages code may cite, also before a page
// exists: a bare "verdicts.md §6" is caught even while verdicts.md is being
// written.
var pageNames = []string{
	"plan-format", "verdicts", "history-and-checkers", "nemesis", "report-format",
	"real-env-test", "env-yml", "scenarios-yml", "driver-contract", "dst-run",
}

var (
	// headingRE is a numbered section heading: "## 6. Title", "### 6.2 Title".
	headingRE = regexp.MustCompile(`^#{2,4} (\d+(?:\.\d+)*)\.?\s`)
	// citeRE is "docs/<page>.md §N[.M]" (also inside a Markdown link,
	// "[x](docs/<page>.md) §N"); the character before "docs/" is checked
	// separately so "examples/etcd/docs/x.md" is not a citation.
	citeRE = regexp.MustCompile(`docs/([A-Za-z0-9_-]+)\.md\)? ?§(\d+(?:\.\d+)*)`)
	// linkCiteRE is a sibling-page citation inside docs/: "[x.md](x.md) §N".
	linkCiteRE = regexp.MustCompile(`\]\(([A-Za-z0-9_-]+)\.md\) ?§(\d+(?:\.\d+)*)`)
	// contRE continues a citation: "docs/verdicts.md §6, §7 and §4.2".
	contRE = regexp.MustCompile(`^\s*(?:,|and|or|–|-|/)\s*(?:and\s+)?§(\d+(?:\.\d+)*)`)
	// helpCiteRE is a citation in generated files, which live in the SUT's
	// repository and so point at the binary: "`dstgen help nemesis` §7".
	helpCiteRE = regexp.MustCompile("dstgen help ([A-Za-z0-9_-]+)`?,? ?§(\\d+(?:\\.\\d+)*)")
	// linkRE is a Markdown link to a sibling page.
	linkRE = regexp.MustCompile(`\]\(([A-Za-z0-9_-]+)\.md(?:#[^)]*)?\)`)
	// bareRE is a page cited without its docs/ folder ("verdicts.md §6",
	// "real-env-test §11"), and specRE a section of "the spec".
	bareRE = regexp.MustCompile(`(` + strings.Join(pageNames, "|") + `)(?:\.md)? ?§(\d+(?:\.\d+)*)`)
	specRE = regexp.MustCompile(`\bspec(?:\.md)? ?§\d`)
	// outsideDocRE names a reference document by a path that is not in the
	// repository: a spec/<page>.md path or the design document.
	outsideDocRE = regexp.MustCompile(`\bspec/[A-Za-z0-9_-]+\.md\b|\bDESIGN\.md\b`)
)

// forbidden are the names of folders outside the repository. Built from
// parts so this file does not name them itself.
var forbidden = []string{
	"/work/" + "shared", "../" + "shared", "shared/" + "spec", "shared/" + "DESIGN",
}

// textFile is one tracked file's lines.
type textFile struct {
	rel   string // path relative to the repository root
	lines []string
}

// repoFiles returns every tracked text file, read from the working tree.
func repoFiles(t *testing.T) []textFile {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("find the repository root with git: %v", err)
	}
	top := strings.TrimSpace(string(root))
	out, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []textFile
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		data, err := fileline.ReadBounded(filepath.Join(top, rel), maxScanBytes)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree, not yet committed
		}
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		files = append(files, textFile{rel: rel, lines: strings.Split(string(data), "\n")})
	}
	if len(files) < 50 {
		t.Fatalf("only %d tracked text files found; is this the repository?", len(files))
	}
	return files
}

// sections maps each docs page (name without .md) to its section numbers,
// read from this directory's numbered headings outside code blocks.
func sections(t *testing.T) map[string]map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		data, err := fileline.ReadBounded(e.Name(), maxScanBytes)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(e.Name(), ".md")] = headings(data)
	}
	return out
}

// headings returns the section numbers of a page: "6" for "## 6. Title",
// "6.2" for "### 6.2 Title". Lines inside fenced code blocks are examples,
// not headings.
func headings(data []byte) map[string]bool {
	ids := map[string]bool{}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxScanBytes)
	for sc.Scan() {
		l := sc.Text()
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
			fenced = !fenced
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil && !fenced {
			ids[m[1]] = true
		}
	}
	return ids
}

// pathChar reports whether b can be part of a path, so "x/docs/" is not
// the repository's docs/ folder.
func pathChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("_.-/", b) >= 0
}

// citation is one "page §id" found at file:line.
type citation struct {
	at, page, id string
}

// citations finds every citation of a docs page on line l.
func citations(at, l string, inDocs bool) []citation {
	var out []citation
	add := func(page string, id string, end int) {
		out = append(out, citation{at, page, id})
		for rest := l[end:]; ; {
			m := contRE.FindStringSubmatchIndex(rest)
			if m == nil {
				return
			}
			out = append(out, citation{at, page, rest[m[2]:m[3]]})
			rest = rest[m[1]:]
		}
	}
	for _, m := range citeRE.FindAllStringSubmatchIndex(l, -1) {
		if m[0] > 0 && pathChar(l[m[0]-1]) {
			continue
		}
		add(l[m[2]:m[3]], l[m[4]:m[5]], m[1])
	}
	for _, m := range helpCiteRE.FindAllStringSubmatchIndex(l, -1) {
		add(l[m[2]:m[3]], l[m[4]:m[5]], m[1])
	}
	if inDocs {
		for _, m := range linkCiteRE.FindAllStringSubmatchIndex(l, -1) {
			add(l[m[2]:m[3]], l[m[4]:m[5]], m[1])
		}
		for _, m := range bareRE.FindAllStringSubmatchIndex(l, -1) {
			if m[0] > 0 && pathChar(l[m[0]-1]) {
				continue // docs/x.md §N, counted above
			}
			add(l[m[2]:m[3]], l[m[4]:m[5]], m[1])
		}
	}
	return out
}

func inDocsDir(rel string) bool {
	return path.Dir(rel) == "docs" && strings.HasSuffix(rel, ".md")
}

func report(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) > 0 {
		t.Errorf("%d %s:\n%s", len(bad), what, strings.Join(bad, "\n"))
	}
}

// TestCitationsResolve: every "docs/<page>.md §N[.M]" in the repository
// (and every "[x.md](x.md) §N" or "x.md §N" between the pages themselves)
// names a page of docs/ and one of its numbered sections; every link
// between the pages names a page that exists.
func TestCitationsResolve(t *testing.T) {
	secs := sections(t)
	var bad []string
	n := 0
	for _, f := range repoFiles(t) {
		docsPage := inDocsDir(f.rel)
		for i, l := range f.lines {
			at := fmt.Sprintf("%s:%d", f.rel, i+1)
			for _, c := range citations(at, l, docsPage) {
				n++
				ids, ok := secs[c.page]
				switch {
				case !ok:
					bad = append(bad, fmt.Sprintf("%s: cites docs/%s.md §%s: no such page", c.at, c.page, c.id))
				case !ids[c.id]:
					bad = append(bad, fmt.Sprintf("%s: cites docs/%s.md §%s: no such section (the page has %s)", c.at, c.page, c.id, sectionList(ids)))
				}
			}
			if docsPage {
				for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
					if _, ok := secs[m[1]]; !ok {
						bad = append(bad, fmt.Sprintf("%s: links %s.md: no such page in docs/", at, m[1]))
					}
				}
			}
		}
	}
	t.Logf("%d citations checked", n)
	report(t, "citations that do not resolve", bad)
}

// TestNothingNamesOutside: no file of the repository names a folder outside
// it; the reference lives in docs/.
func TestNothingNamesOutside(t *testing.T) {
	var bad []string
	for _, f := range repoFiles(t) {
		for i, l := range f.lines {
			for _, s := range forbidden {
				if strings.Contains(l, s) {
					bad = append(bad, fmt.Sprintf("%s:%d: names %q, a folder outside the repository (cite docs/<page>.md §N)", f.rel, i+1, s))
				}
			}
		}
	}
	report(t, "references outside the repository", bad)
}

// TestCitationsNameDocs: outside docs/, a section of a reference page is
// cited as docs/<page>.md §N (or, in generated files, `dstgen help <page>`
// §N), never as "verdicts.md §6", "real-env-test §11", "spec §13", a
// spec/<page>.md path or the design document, which are not in the
// repository.
func TestCitationsNameDocs(t *testing.T) {
	var bad []string
	for _, f := range repoFiles(t) {
		// The pages cite each other by name; this package's tests hold
		// examples of what is flagged.
		if inDocsDir(f.rel) || path.Dir(f.rel) == "docs" && strings.HasSuffix(f.rel, "_test.go") {
			continue
		}
		for i, l := range f.lines {
			for _, m := range bareRE.FindAllStringSubmatchIndex(l, -1) {
				if m[0] > 0 && pathChar(l[m[0]-1]) || strings.HasSuffix(l[:m[0]], "dstgen help ") {
					continue // docs/x.md §N, or `dstgen help x` §N
				}
				bad = append(bad, fmt.Sprintf("%s:%d: %q: cite as docs/%s.md §%s", f.rel, i+1, l[m[0]:m[1]], l[m[2]:m[3]], l[m[4]:m[5]]))
			}
			for _, m := range outsideDocRE.FindAllStringIndex(l, -1) {
				if strings.HasPrefix(f.rel, "generator/testdata/claims-eval/") {
					continue // hand labels name files of other repositories (their DESIGN.md), not a document of ours
				}
				bad = append(bad, fmt.Sprintf("%s:%d: %q: a document outside the repository; cite docs/<page>.md §N", f.rel, i+1, l[m[0]:m[1]]))
			}
			if m := specRE.FindStringIndex(l); m != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %q: cite the docs/ page it means, as docs/<page>.md §N", f.rel, i+1, l[m[0]:m[1]]))
			}
		}
	}
	report(t, "citations of documents outside docs/", bad)
}

func sectionList(ids map[string]bool) string {
	var s []string
	for id := range ids {
		s = append(s, "§"+id)
	}
	slices.SortFunc(s, func(a, b string) int { return compareIDs(a[len("§"):], b[len("§"):]) })
	if len(s) == 0 {
		return "no numbered sections"
	}
	return strings.Join(s, " ")
}

// compareIDs orders section numbers numerically: 2 < 2.1 < 10.
func compareIDs(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x - y
		}
	}
	return len(pa) - len(pb)
}
