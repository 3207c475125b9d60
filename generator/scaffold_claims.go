package generator

import (
	"context"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// CandidateClaim is a sentence in the SUT's docs or code comments that
// promises a guarantee: a §1b row for `dstgen plan new`, inferred until a
// person confirms it (docs/plan-format.md §4, ranked as §15 says).
type CandidateClaim struct {
	ID       string `json:"id"`       // "C1", best first
	Text     string `json:"text"`     // the sentence, one line, at most maxClaimRunes
	Category string `json:"category"` // from the promise's kind (docs/plan-format.md §4.2)
	Source   string `json:"source"`   // "file:line" of the matched phrase, SUT-relative
	Matched  string `json:"matched"`  // the phrase that decided the kind
	// Kind is the promise the phrase makes ("linearizable",
	// "at-least-once", "isolation", …); it picks the §7 stub's model,
	// checker and fault (docs/plan-format.md §15.3).
	Kind string `json:"kind"`
	// Score ranks the candidates: how strong and testable the promise is
	// plus where it lives (docs/plan-format.md §15.2).
	Score int `json:"score"`
	// Where is the part of the tree the file belongs to: "core package
	// <dir>", "docs", "source" or "tools and tests".
	Where string `json:"where"`
	// Why lists every signal that scored, with its points, so a person
	// sees why the sentence was picked.
	Why []string `json:"why"`
	// Also are the file:line of near-duplicates merged into this one.
	Also []string `json:"also,omitempty"`
}

// Bounds of the claim scan: it names at most maxClaimNames files, reads
// the first maxClaimFiles of them in tier order (core packages first) and
// at most maxClaimBytes of each.
const (
	maxClaimNames = 50000
	maxClaimFiles = 4000
	maxClaimBytes = 1 << 20
	maxClaimRunes = 200
	// DefaultMaxClaims is how many candidates plan new lists unless
	// --max-claims says otherwise.
	DefaultMaxClaims = 15
	// minClaimsPerFile is the least of the cap per file, which keeps one
	// file from filling the list: a third of the list, at least this.
	minClaimsPerFile = 3
)

// docExts are the prose files read whole; codeExts the sources whose
// comments are read (what the code says it does, not what it does).
var (
	docExts  = map[string]bool{".md": true, ".markdown": true, ".txt": true, ".rst": true, ".adoc": true}
	codeExts = map[string]bool{".go": true, ".rs": true, ".py": true, ".java": true, ".ts": true, ".js": true,
		".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true, ".proto": true, ".scala": true, ".kt": true,
		".sql": true, ".lua": true}
)

// FindClaims walks the profile's root the way Scan does (vendor, .git,
// build output, testdata and the generated testing/ skipped; symlinks not
// followed; bounded in names, files and bytes), scores every sentence of
// its docs and code comments for the promise it makes, and returns the
// best max (DefaultMaxClaims when max ≤ 0), best first, with near-duplicates
// merged and at most a third of the list (minClaimsPerFile at least) from one file; more is how many
// scoring candidates were left below the cut. Release notes, contribution
// guides, TODO lists, licences, existing plans and tests are not read: they
// promise nothing, or a person already wrote the claim.
func FindClaims(ctx context.Context, p *Profile, max int) (claims []CandidateClaim, more int, err error) {
	if max <= 0 {
		max = DefaultMaxClaims
	}
	all, err := scoreTree(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	var cands []scoredClaim
	for _, c := range all {
		if c.c.Score >= minClaimScore {
			cands = append(cands, c)
		}
	}
	claims, more = rankClaims(cands, max)
	return claims, more, nil
}

// scoreTree scores every sentence of the tree's docs and comments that
// names a promise, whatever its score.
func scoreTree(ctx context.Context, p *Profile) ([]scoredClaim, error) {
	s := newScanner(ctx, p.Root, ScanOptions{})
	s.loadGitignore()
	var files []claimFile
	if err := s.claimWalk("", 0, harnessDirs(p), &files); err != nil {
		return nil, err
	}
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].tier != files[j].tier {
			return files[i].tier < files[j].tier
		}
		return lessPath(files[i].rel, files[j].rel)
	})
	files = limitSlice(files, maxClaimFiles)
	var out []scoredClaim
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("find claims in %s: %w", p.Root, err)
		}
		data, _, err := s.readFile(s.abs(f.rel), maxClaimBytes)
		if err != nil || isBinary(data) || isGenerated(data) {
			continue
		}
		if f.tier == tierSource && !strings.Contains(f.rel, "/") && path.Ext(f.rel) == ".go" && !isGoMain(data) {
			// A Go module's root package is a library's API: its doc
			// comments are the contract.
			f.tier, f.where = tierCore, "root package"
		}
		if f.tier == tierSource && codeExts[path.Ext(f.rel)] && !(path.Ext(f.rel) == ".go" && isGoMain(data)) {
			if d, ok := namedAfterProject(f.rel, p.Name); ok {
				// The library package named after the project (module
				// …/kvstore, package kvstore/) is the project itself,
				// whatever its name says; its command (cmd/kvstore, a main
				// package) is not.
				f.tier, f.where = tierCore, "core package "+d+"/"
			}
		}
		for _, sen := range sentencesIn(f.rel, string(data)) {
			if c, ok := scoreSentence(f, sen); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// claimFile is a file the claim scan reads and where it sits.
type claimFile struct {
	rel   string
	tier  claimTier
	where string
}

// claimWalk collects the doc and source files under rel with the scanner's
// skip rules, each with its tier; files that promise nothing are left out.
func (s *scanner) claimWalk(rel string, depth int, harness map[string]bool, files *[]claimFile) error {
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("find claims in %s: %w", s.root, err)
	}
	entries, err := os.ReadDir(s.abs(rel))
	if err != nil {
		return nil // Scan already reported it as a warning
	}
	for _, e := range entries {
		if len(*files) >= maxClaimNames {
			return nil
		}
		name := e.Name()
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		switch {
		case e.Type().IsDir():
			if s.skipDir(child, name) || depth >= maxDepth || child == "docs/testing-plans" || child == "testing-plans" ||
				harness[child] || noPromiseDir(name) {
				continue
			}
			if err := s.claimWalk(child, depth+1, harness, files); err != nil {
				return err
			}
		case e.Type().IsRegular():
			ext := strings.ToLower(path.Ext(name))
			if !docExts[ext] && !(codeExts[ext] && !isTestSource(name)) || noPromiseFile(name) || docExts[ext] && comparisonDoc(name) {
				continue
			}
			t, where := tierOf(child, docExts[ext])
			*files = append(*files, claimFile{rel: child, tier: t, where: where})
		}
	}
	return nil
}

// harnessDirs are the SUT-relative dirs of the workload drivers its docs
// run with `go run ./DIR …` (what deploy uploads as the driver): they
// describe the test harness, not promises of the SUT, so their comments
// are no candidate claims.
func harnessDirs(p *Profile) map[string]bool {
	out := map[string]bool{}
	for _, d := range p.Deploy {
		for _, c := range d.Commands {
			if mm := goRunRE.FindStringSubmatch(strings.TrimSpace(c)); mm != nil {
				out[path.Clean(mm[1])] = true
			}
		}
	}
	return out
}

// isTestSource reports the test files of the usual languages, and mocks.
func isTestSource(name string) bool {
	base := strings.ToLower(strings.TrimSuffix(name, path.Ext(name)))
	return strings.HasSuffix(base, "_test") || strings.HasPrefix(base, "test_") ||
		strings.HasSuffix(base, ".test") || strings.HasSuffix(base, ".spec") || strings.HasSuffix(base, "_tests") ||
		strings.HasSuffix(base, "_mock") || strings.HasPrefix(base, "mock_") || strings.HasSuffix(base, ".pb") ||
		strings.HasSuffix(base, ".pb.gw") || strings.HasSuffix(base, "_generated") || strings.HasPrefix(base, "zz_generated")
}

// generatedRE is the Go convention's marker of generated code, which
// other generators follow too.
var generatedRE = lazyre.New(`(?m)^(?://|#|/\*) ?Code generated .* DO NOT EDIT`)

// isGenerated reports a generated file: its comments are the generator's.
func isGenerated(data []byte) bool {
	return generatedRE.Match(data[:min(len(data), 4096)])
}

// noPromiseFile reports the files of a repository that promise nothing
// about the system (docs/plan-format.md §15.1): release notes and
// changelogs (a list of pull requests and dependency bumps), contribution
// guides, governance, codes of conduct, licences, TODO lists, roadmaps,
// agent instructions and issue templates.
func noPromiseFile(name string) bool {
	base := strings.ToUpper(name)
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	base = strings.NewReplacer("-", "_", " ", "_").Replace(base)
	for _, p := range []string{"CHANGELOG", "CHANGES", "HISTORY", "NEWS", "RELEASE", "CONTRIBUTING", "CONTRIBUTORS",
		"CODE_OF_CONDUCT", "CODEOFCONDUCT", "GOVERNANCE", "MAINTAINERS", "OWNERS", "ADOPTERS", "AMBASSADORS", "AUTHORS",
		"LICENSE", "LICENCE", "COPYING", "NOTICE", "PATENTS", "TODO", "ROADMAP", "DEPENDENCIES", "SUPPORT", "SECURITY",
		"CLAUDE", "AGENTS", "GEMINI", "COPILOT", "PULL_REQUEST_TEMPLATE", "ISSUE_TEMPLATE", "CODEOWNERS", "FUNDING"} {
		if base == p || strings.HasPrefix(base, p+"_") || strings.HasPrefix(base, p+"S") && len(base) == len(p)+1 {
			return true
		}
	}
	return false
}

// comparisonDoc reports a doc page that compares the project with other
// systems ("vs-zookeeper.md", "comparison.md"): what it says of them
// ("they are strongly consistent") is no promise of this one.
func comparisonDoc(name string) bool {
	base := strings.ToUpper(name)
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	base = strings.NewReplacer("-", "_", " ", "_").Replace(base)
	return strings.HasPrefix(base, "VS_") || strings.Contains(base, "_VS_") || strings.HasSuffix(base, "_VS") ||
		strings.HasPrefix(base, "COMPARISON") || base == "ALTERNATIVES"
}

// noPromiseDir reports directories that hold only such files, or the
// project's process rather than its system.
func noPromiseDir(name string) bool {
	switch strings.ToLower(name) {
	case "changelog", "changelogs", "changes", ".changes", "changelog.d", "release-notes", "releasenotes", "releases",
		".github", ".gitlab", "contributor-guide", "contributing", "community", "governance", "third_party", "thirdparty",
		"third-party", "licenses", "licences", "legal":
		return true
	}
	return false
}

// claimTier orders where a file lives: a promise in a core package's
// comments outranks the same words in a tool or a test helper.
type claimTier int

const (
	tierCore       claimTier = iota // packages that hold or move the replicated state
	tierDocs                        // user docs: README, docs/, Documentation/
	tierSource                      // the rest of the SUT's source
	tierPeripheral                  // tools, scripts, examples, test helpers
)

// coreWords name the packages that hold or move replicated state
// (docs/plan-format.md §15.2); a directory or a file name made of one
// of them is core.
var coreWords = map[string]bool{
	"store": true, "storage": true, "raft": true, "replication": true, "replica": true, "replicas": true,
	"replicate": true, "consensus": true, "paxos": true, "wal": true, "cluster": true, "mvcc": true, "txn": true,
	"transaction": true, "transactions": true, "kv": true, "kvstore": true, "backend": true, "snapshot": true,
	"membership": true, "etcdserver": true, "server": true, "db": true, "database": true, "engine": true,
	"stream": true, "streams": true, "jetstream": true, "consumer": true, "broker": true, "queue": true,
	"journal": true, "fsm": true, "statemachine": true, "lease": true, "lock": true, "concurrency": true,
	"election": true, "cdc": true, "commitlog": true, "ledger": true, "filestore": true, "memstore": true,
	"wal2": true, "rsm": true, "raftio": true, "raftpb": true, "raftlog": true, "logdb": true, "mq": true, "topic": true, "partition": true, "coordinator": true, "shard": true, "sharding": true,
}

// peripheralWords name directories of tools, tests and examples.
var peripheralWords = map[string]bool{
	"test": true, "tests": true, "testing": true, "testutil": true, "testutils": true, "testhelper": true,
	"testhelpers": true, "integration": true, "e2e": true, "functional": true, "robustness": true, "antithesis": true,
	"system_test": true, "systemtest": true, "bench": true, "benchmark": true, "benchmarks": true, "tools": true,
	"tool": true, "hack": true, "scripts": true, "script": true, "examples": true, "example": true, "contrib": true,
	"demo": true, "demos": true, "mock": true, "mocks": true, "fake": true, "fakes": true, "fixtures": true,
	"fuzz": true, "ci": true, "dev": true, "devel": true, "proposals": true, "rfcs": true, "postmortems": true,
}

// docDirs are where user docs live.
var docDirs = map[string]bool{"doc": true, "docs": true, "documentation": true, "website": true, "site": true, "guide": true, "guides": true, "manual": true}

// tierOf places a file by its path: any tool, test or example directory
// makes it peripheral; a doc file at the root or under a docs directory
// is docs; a source file in a core package (or named after one) is core.
func tierOf(rel string, doc bool) (claimTier, string) {
	dirs := strings.Split(path.Dir(rel), "/")
	if dirs[0] == "." {
		dirs = nil
	}
	for _, d := range dirs {
		if peripheralWords[strings.ToLower(d)] || strings.HasPrefix(d, ".") {
			return tierPeripheral, "tools and tests"
		}
	}
	if doc {
		if low := strings.ToLower(path.Base(rel)); strings.HasPrefix(low, "test") || strings.HasPrefix(low, "bench") {
			return tierPeripheral, "tools and tests" // how the project tests itself
		}
		if path.Ext(rel) == ".txt" && !strings.HasPrefix(strings.ToUpper(path.Base(rel)), "README") {
			return tierPeripheral, "notes" // a .txt is a developer's note (lock order, build tips) unless it is the README
		}
		if len(dirs) == 0 {
			return tierDocs, "docs"
		}
		for _, d := range dirs {
			if docDirs[strings.ToLower(d)] {
				return tierDocs, "docs"
			}
		}
		return tierSource, "source"
	}
	if path.Ext(rel) == ".proto" {
		return tierCore, "API definition " + rel // the service's contract
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if isCoreName(dirs[i]) {
			return tierCore, "core package " + strings.Join(dirs[:i+1], "/") + "/"
		}
	}
	base := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	if isCoreName(base) {
		return tierCore, "core file " + rel
	}
	return tierSource, "source"
}

// namedAfterProject reports a file of the package named after the
// project (its module's last path element, its crate or package name),
// and that package's directory: the library that holds the project's own
// state when it is not the root package. A package below it is its own.
func namedAfterProject(rel, name string) (string, bool) {
	name = strings.ToLower(name)
	if name == "" {
		return "", false
	}
	dir := path.Dir(rel)
	if d := strings.ToLower(path.Base(dir)); dir != "." && (d == name || strings.ReplaceAll(d, "_", "-") == name) {
		return dir, true
	}
	return "", false
}

// isCoreName reports a name that is a core word or made of core words
// and others ("jetstream_cluster", "raftlog" is not: words are split on
// '_', '-' and '.').
func isCoreName(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if coreWords[w] {
			return true
		}
	}
	return false
}

// textLine is one line of prose with its source line number.
type textLine struct {
	n    int
	text string
}

// sentence is one sentence of a paragraph with what the scorer needs to
// know of its paragraph.
type sentence struct {
	text, prose string // the sentence; prose has code, links and idioms blanked
	// para is the prose of its whole paragraph: what a promise is about
	// may be named in the sentence before ("… messages … . This gives
	// exactly once per id").
	para   string
	lines  []textLine
	starts []int // offset in text of each paragraph line, relative to the sentence
	doc    int   // +2 package doc, +1 doc comment, 0 prose, -1 inline comment
	code   bool  // from a source file's comment
	// helper marks a comment on an unexported Go function: what it
	// does is the implementation's business unless it states a property.
	helper bool
	// decl is the name of the Go function the comment documents, if any.
	decl string
	// internal marks a comment on an unexported Go declaration: an
	// unexported function, type, var or const, a method of an unexported
	// type, or a field that is unexported or of an unexported type.
	internal bool
	// fileNote marks a comment that says what its file implements ("This
	// file implements the loading of …"): the code's design, told to its
	// maintainers.
	fileNote bool
	// deprecated marks a comment on a declaration one of whose
	// paragraphs opens "Deprecated:": what it says is kept for old
	// callers, no promise to test.
	deprecated bool
	// example marks an illustration ("For example, if it is set to 5 s,
	// …") and the "Otherwise, …" that goes on with it: what a setting
	// would do in one case, not what the system promises.
	example bool
}

// lineAt is the source line of offset off in the sentence.
func (s sentence) lineAt(off int) int {
	k := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > off }) - 1
	return s.lines[max(k, 0)].n
}

// sentencesIn returns the sentences of one file: markdown and text files
// outside code fences, headings, tables, HTML comments and checklists
// (each list item its own paragraph); source files only in their full-line
// comments. Consecutive lines form a paragraph, so a sentence that wraps
// is found whole.
func sentencesIn(rel, data string) []sentence {
	ext := strings.ToLower(path.Ext(rel))
	if codeExts[ext] {
		out := commentSentences(ext, data)
		for i := range out {
			out[i].code = true
		}
		return out
	}
	var out []sentence
	var para []textLine
	flush := func() {
		out = append(out, paragraphSentences(para, 0)...)
		para = para[:0]
	}
	fence, html := false, false
	for i, line := range strings.Split(data, "\n") {
		t := strings.TrimSpace(line)
		if html {
			html = !strings.Contains(t, "-->")
			continue
		}
		if strings.HasPrefix(t, "<!--") {
			html = !strings.Contains(t, "-->")
			flush()
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			flush()
			continue
		}
		if fence || t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "<") ||
			strings.Trim(t, "=-~^*+#_.:`'\" ") == "" || strings.HasPrefix(line, "    ") && len(para) == 0 && !isListItem(t) {
			flush()
			continue
		}
		item := strings.TrimLeft(t, "-*+> ")
		if isListItem(t) {
			flush() // a list item is its own paragraph
			if strings.HasPrefix(item, "[ ]") || strings.HasPrefix(item, "[x]") || strings.HasPrefix(item, "[X]") {
				continue // a checklist is work to do, not a promise
			}
		}
		para = append(para, textLine{i + 1, item})
	}
	flush()
	return out
}

// listItemRE is a markdown or rST bullet or numbered item.
var listItemRE = lazyre.New(`^(?:[-*+]|\d+[.)])\s`)

func isListItem(t string) bool { return listItemRE.MatchString(t) }

// commentMarkers are the full-line comment markers of each language;
// a Go usage string that starts with "--flag" is no comment.
func commentMarkers(ext string) []string {
	switch ext {
	case ".py":
		return []string{"#"}
	case ".sql", ".lua":
		return []string{"--"}
	}
	return []string{"///", "//!", "//", "/**", "/*", "*/", "* "}
}

// commentSentences returns the sentences of a source file's full-line
// comments. A comment that documents a declaration (at the left margin,
// a Rust or Java doc comment, or a Go struct field) says what the code
// promises; one inside a function body says how it works, and scores
// lower (docs/plan-format.md §15.2).
func commentSentences(ext, data string) []sentence {
	markers := commentMarkers(ext)
	var out []sentence
	var para []textLine
	indent, docMarker := 0, false
	var g goBlock
	// The paragraphs of one comment group wait for the line after it: a
	// package doc is every paragraph before `package`, and what a doc
	// comment documents (an unexported helper) is named there.
	type pending struct {
		para      []textLine
		indent    int
		docMarker bool
		g         goBlock
	}
	var group []pending
	endPara := func() {
		if len(para) > 0 {
			group = append(group, pending{append([]textLine(nil), para...), indent, docMarker, g})
		}
		para = para[:0]
	}
	flush := func(next string) {
		endPara()
		helper := ext == ".go" && unexportedFuncRE.MatchString(next)
		decl := ""
		if m := funcNameRE.FindStringSubmatch(next); ext == ".go" && m != nil {
			decl = m[1]
		}
		fileNote, deprecated := false, false
		for _, p := range group {
			for _, l := range p.para {
				fileNote = fileNote || fileNoteRE.MatchString(l.text)
			}
			deprecated = deprecated || strings.HasPrefix(p.para[0].text, "Deprecated:")
		}
		for _, p := range group {
			ss := paragraphSentences(p.para, commentPlace(ext, p.indent, p.docMarker, p.g, next))
			internal := ext == ".go" && internalDecl(next, p.g)
			for i := range ss {
				ss[i].helper, ss[i].decl, ss[i].internal, ss[i].fileNote = helper, decl, internal, fileNote && !strings.HasPrefix(next, "package ")
				ss[i].deprecated = deprecated
			}
			out = append(out, ss...)
		}
		group = group[:0]
	}
	block := false
	for i, line := range strings.Split(data, "\n") {
		t := strings.TrimSpace(line)
		if ext == ".go" && len(para) == 0 {
			g.track(line)
		}
		c, ok, m, closed := "", false, "", false
		if block {
			c, ok = t, true
			if j := strings.Index(c, "*/"); j >= 0 {
				c, block, closed = c[:j], false, true
			}
			c = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c), "*"))
		} else {
			for _, mk := range markers {
				if strings.HasPrefix(t, mk) {
					c, ok, m = strings.TrimSpace(strings.TrimPrefix(t, mk)), true, mk
					break
				}
			}
			if ok && (m == "/*" || m == "/**") {
				if j := strings.Index(c, "*/"); j >= 0 {
					c = strings.TrimSpace(c[:j])
				} else {
					block = true
				}
			}
			c = strings.TrimSpace(strings.TrimSuffix(c, "*/"))
		}
		if !ok {
			flush(t)
			if ext == ".go" {
				g.track(line)
			}
			continue
		}
		if c == "" && closed {
			continue // a block's closing line: what follows it says what it documents
		}
		if c == "" {
			endPara()
			continue
		}
		if len(para) == 0 {
			indent = indentLevel(line)
			docMarker = m == "///" || m == "//!" || m == "/**"
		}
		para = append(para, textLine{i + 1, c})
	}
	flush("")
	return out
}

// unexportedFuncRE is the declaration of an unexported Go function or
// method, the line after its doc comment.
var unexportedFuncRE = lazyre.New(`^func (?:\([^)]*\) )?[a-z_]\w*[\[(]`)

// fileNoteRE opens a comment on what its file implements.
var fileNoteRE = lazyre.New(`(?i)^this file (?:implements|contains|holds|defines)\b`)

// declNamesRE are the names a top-level Go declaration is known by: a
// method's receiver type and name, or a function's, type's, var's or
// const's name.
var declNamesRE = lazyre.New(`^(?:func \((?:\w+ )?\*?(\w+)[^)]*\) (\w+)|(?:func|type|var|const) (\w+))`)

// fieldNameRE is the name a line inside a type, var or const block
// declares.
var fieldNameRE = lazyre.New(`^([A-Za-z_]\w*)\b`)

// internalDecl reports a comment on an unexported Go declaration (next
// is the line after it; g the block it is in): what the implementation
// says to itself, not the package's API.
func internalDecl(next string, g goBlock) bool {
	if g.decl {
		m := fieldNameRE.FindStringSubmatch(next)
		return g.unexported || m != nil && !unicode.IsUpper(rune(m[1][0]))
	}
	m := declNamesRE.FindStringSubmatch(next)
	if m == nil {
		return false
	}
	for _, name := range m[1:] {
		if name != "" && !unicode.IsUpper(rune(name[0])) {
			return true
		}
	}
	return false
}

// funcNameRE is the name of the function a line declares.
var funcNameRE = lazyre.New(`^func (?:\([^)]*\) )?(\w+)[\[(]`)

// indentLevel counts a line's leading tabs, and spaces by fours.
func indentLevel(line string) int {
	n, spaces := 0, 0
	for _, r := range line {
		switch r {
		case '\t':
			n++
		case ' ':
			spaces++
		default:
			return n + spaces/4
		}
	}
	return n + spaces/4
}

// goBlock tracks which top-level Go block a line is in: a function body,
// or a type, const or var block whose indented comments document fields
// and values. It reads only lines at the left margin, so it is a guess
// gofmt makes good.
type goBlock struct {
	fn, decl bool
	// unexported marks a type block of an unexported type: its fields
	// are the implementation's.
	unexported bool
}

func (g *goBlock) track(line string) {
	if line == "" || line[0] == ' ' || line[0] == '\t' || strings.HasPrefix(line, "//") {
		return
	}
	t := strings.TrimRight(line, " \t")
	switch {
	case t == "}" || t == ")":
		g.fn, g.decl, g.unexported = false, false, false
	case strings.HasPrefix(t, "func "):
		g.fn, g.decl, g.unexported = strings.HasSuffix(t, "{"), false, false
	case strings.HasPrefix(t, "type ") || strings.HasPrefix(t, "const ") || strings.HasPrefix(t, "var "):
		g.fn, g.decl = false, strings.HasSuffix(t, "{") || strings.HasSuffix(t, "(")
		name := strings.TrimPrefix(t, "type ")
		g.unexported = g.decl && name != t && name != "" && !unicode.IsUpper(rune(name[0])) && name[0] != '('
	}
}

// commentPlace is a comment paragraph's doc score: +2 for a package doc,
// +1 for a declaration's doc comment (at the margin, a Rust or Java doc
// comment, a Go field or value), -1 for a comment inside a body.
func commentPlace(ext string, indent int, docMarker bool, g goBlock, next string) int {
	switch {
	case strings.HasPrefix(next, "package "):
		return 2
	case docMarker || indent == 0:
		return 1
	case ext == ".go" && g.decl:
		return 1
	case ext == ".go":
		return -1
	case indent == 1:
		return 0 // a method's comment in a class or impl block
	}
	return -1
}

// paragraphSentences splits a paragraph into sentences; prose is the text
// with inline code, link targets, emphasis markers and the idioms that
// only look like promises blanked, offsets kept.
func paragraphSentences(para []textLine, doc int) []sentence {
	if len(para) == 0 {
		return nil
	}
	var b strings.Builder
	var starts []int
	for i, l := range para {
		if i > 0 {
			b.WriteByte(' ')
		}
		starts = append(starts, b.Len())
		b.WriteString(l.text)
	}
	text := b.String()
	prose := maskIdioms(lowerASCII(blankLinks(blankQuoted(blankCode(text)))))
	lines := append([]textLine(nil), para...)
	var out []sentence
	example := false
	for _, sen := range sentences(text) {
		rel := make([]int, len(starts))
		for i, st := range starts {
			rel[i] = st - sen[0]
		}
		lead := strings.TrimSpace(prose[sen[0]:sen[1]])
		example = exampleRE.MatchString(lead) || example && strings.HasPrefix(lead, "otherwise")
		out = append(out, sentence{text: text[sen[0]:sen[1]], prose: prose[sen[0]:sen[1]], para: prose, lines: lines, starts: rel, doc: doc, example: example})
	}
	return out
}

// exampleRE opens an illustration.
var exampleRE = lazyre.New(`^(?:for (?:example|instance)|e\.g\.)`)

// sentences returns the [start, end) offsets of the sentences of text: a
// '.', '!' or '?' followed by a space and an upper-case letter ends one
// (so "e.g. the" and "v1.2" do not).
func sentences(text string) [][2]int {
	var out [][2]int
	start := 0
	for i := 0; i+2 < len(text); i++ {
		if (text[i] == '.' || text[i] == '!' || text[i] == '?') && text[i+1] == ' ' && unicode.IsUpper(rune(text[i+2])) {
			out = append(out, [2]int{start, i + 1})
			start = i + 2
		}
	}
	if start < len(text) {
		out = append(out, [2]int{start, len(text)})
	}
	return out
}

// oneLine makes a sentence a safe table cell: no pipes or quotes that
// would end the cell or the quote, emphasis markers dropped, runs of space
// folded, at most maxClaimRunes runes.
func oneLine(s string) string {
	s = strings.NewReplacer("|", "/", `"`, "'", "`", "'", "**", "", "__", "").Replace(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > maxClaimRunes {
		s = string(r[:maxClaimRunes-1]) + "…"
	}
	return s
}

// blankCode replaces the inside of `inline code` spans with spaces, keeping
// every offset.
func blankCode(s string) string {
	b := []byte(s)
	in := false
	for i, c := range b {
		switch {
		case c == '`':
			in = !in
		case in:
			b[i] = ' '
		}
	}
	return string(b)
}

// quotedRE is a quoted word with no space inside: a literal value or a
// parameter ('serializable=true', "LINEARIZABLE"), not prose.
var quotedRE = lazyre.New(`'[^'\s]+'|"[^"\s]+"`)

// blankQuoted replaces such literals with spaces, keeping offsets.
func blankQuoted(s string) string {
	if !strings.ContainsAny(s, `'"`) {
		return s
	}
	return quotedRE.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat(" ", len(m)) })
}

// linkTargetRE is a markdown link's target, "](…)", and a bare URL.
var linkTargetRE = lazyre.New(`\]\([^)\s]*\)|https?://\S+`)

// blankLinks replaces link targets and bare URLs with spaces, keeping
// offsets: a URL's words ("…/linearizable-reads/") promise nothing.
func blankLinks(s string) string {
	if !strings.Contains(s, "](") && !strings.Contains(s, "://") {
		return s
	}
	return linkTargetRE.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat(" ", len(m)) })
}
