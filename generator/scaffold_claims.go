package generator

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// CandidateClaim is a sentence in the SUT's docs or code comments that
// promises a guarantee: a §1b row for `dstgen plan new`, inferred until a
// person confirms it (docs/plan-format.md §4).
type CandidateClaim struct {
	ID       string `json:"id"`       // "C1", in scaffold order
	Text     string `json:"text"`     // the sentence, one line, at most maxClaimRunes
	Category string `json:"category"` // guessed from the matched phrase (docs/plan-format.md §4.2)
	Source   string `json:"source"`   // "file:line" of the matched phrase, SUT-relative
	Matched  string `json:"matched"`  // the phrase that made it a candidate
}

// Bounds of the claim scan: it reads the same tree the profile scan walks,
// but only this many files and bytes of each, and keeps the first claims.
const (
	maxClaimFiles = 2000
	maxClaimBytes = 256 << 10
	maxClaims     = 20
	maxClaimRunes = 200
)

// claimPattern maps a guarantee phrase to the category it most often means.
// The first pattern that matches a sentence decides; specific phrases come
// before the general ones ("exactly once" before "once", "tenant" before
// "isolated").
type claimPattern struct {
	re       *regexp.Regexp
	category string
}

func claimPatterns() []claimPattern {
	p := func(expr, cat string) claimPattern {
		return claimPattern{regexp.MustCompile(`(?i)\b(?:` + expr + `)`), cat}
	}
	return []claimPattern{
		p(`serializab\w*|snapshot isolation|read committed|repeatable read|isolation level`, "isolation"),
		p(`tenants?\b|multi-tenan\w*|authori[sz]\w*|access control`, "boundary"),
		p(`exactly[- ]once|idempoten\w*|deduplicat\w*|at[- ]most[- ]once`, "idempotency"),
		p(`linearizab\w*|strongly consistent|strong consistency|stale reads?|mutual exclusion`, "safety"),
		p(`at[- ]least[- ]once|durab\w*|fsync\w*|surviv\w* (?:a |the )?(?:crash|restart|reboot|power)\w*|never (?:lose|lost)|no (?:acknowledged |acked )?(?:data|writes?) (?:is |are )?lost`, "durability"),
		p(`in order|ordered|ordering|fifo|monotonic\w*|total order`, "ordering"),
		p(`membership|joins? the cluster|removed from the cluster`, "membership"),
		p(`noisy[- ]neighbou?r|fair(?:ly|ness)?\b`, "fairness"),
		p(`p9\d+|p50|latency|throughput|\d+ ?ops/s`, "performance-SLO"),
		p(`within \d+ ?(?:ms|s|sec|secs|seconds?|min|minutes?)\b|elects? a (?:new )?leader`, "liveness"),
		p(`rolling (?:restart|upgrade)|zero[- ]downtime|without downtime`, "operational"),
		p(`guarantee\w*|promises?`, "safety"),
	}
}

// docExts are the prose files read whole; codeExts the sources whose
// comments are read (what the code says it does, not what it does).
var (
	docExts  = map[string]bool{".md": true, ".markdown": true, ".txt": true, ".rst": true, ".adoc": true}
	codeExts = map[string]bool{".go": true, ".rs": true, ".py": true, ".java": true, ".ts": true, ".js": true,
		".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true, ".proto": true, ".scala": true, ".kt": true}
)

// FindClaims walks the profile's root the way Scan does (vendor, .git, build output,
// testdata and the generated testing/ skipped; symlinks not followed;
// bounded in depth, files and bytes) and returns the sentences of its docs
// and code comments that promise a guarantee, in path and line order.
// Existing plans (docs/testing-plans/) and tests are not read: a plan's
// claims are already a person's, and a test pins rather than promises.
func FindClaims(ctx context.Context, p *Profile) ([]CandidateClaim, error) {
	dir := p.Root
	s := newScanner(ctx, p.Root, ScanOptions{})
	s.loadGitignore()
	var files []string
	if err := s.claimWalk("", 0, harnessDirs(p), &files); err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return lessPath(files[i], files[j]) })
	pats := claimPatterns()
	var out []CandidateClaim
	seen := map[string]bool{}
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("find claims in %s: %w", dir, err)
		}
		data, _, err := s.readFile(s.abs(rel), maxClaimBytes)
		if err != nil || isBinary(data) {
			continue
		}
		for _, c := range claimsIn(rel, string(data), pats) {
			key := strings.ToLower(c.Text)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, c)
			if len(out) == maxClaims {
				return numberClaims(out), nil
			}
		}
	}
	return numberClaims(out), nil
}

func numberClaims(cs []CandidateClaim) []CandidateClaim {
	for i := range cs {
		cs[i].ID = fmt.Sprintf("C%d", i+1)
	}
	return cs
}

// claimWalk collects the doc and source files under rel with the scanner's
// skip rules.
func (s *scanner) claimWalk(rel string, depth int, harness map[string]bool, files *[]string) error {
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("find claims in %s: %w", s.root, err)
	}
	entries, err := os.ReadDir(s.abs(rel))
	if err != nil {
		return nil // Scan already reported it as a warning
	}
	for _, e := range entries {
		if len(*files) >= maxClaimFiles {
			return nil
		}
		name := e.Name()
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		switch {
		case e.Type().IsDir():
			if s.skipDir(child, name) || depth >= maxDepth || child == "docs/testing-plans" || child == "testing-plans" || harness[child] {
				continue
			}
			if err := s.claimWalk(child, depth+1, harness, files); err != nil {
				return err
			}
		case e.Type().IsRegular():
			ext := strings.ToLower(path.Ext(name))
			if docExts[ext] || codeExts[ext] && !isTestSource(name) {
				*files = append(*files, child)
			}
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

// isTestSource reports the test files of the usual languages.
func isTestSource(name string) bool {
	base := strings.TrimSuffix(name, path.Ext(name))
	return strings.HasSuffix(base, "_test") || strings.HasPrefix(base, "test_") ||
		strings.HasSuffix(base, ".test") || strings.HasSuffix(base, ".spec") || strings.HasSuffix(base, "_tests")
}

// textLine is one line of prose with its source line number.
type textLine struct {
	n    int
	text string
}

// claimsIn returns the guarantee sentences of one file: markdown and text
// files outside code fences, headings and tables; source files only in
// their comments. Consecutive lines form a paragraph, so a sentence that
// wraps is found whole; its Source is the line of the matched phrase.
func claimsIn(rel, data string, pats []claimPattern) []CandidateClaim {
	code := codeExts[strings.ToLower(path.Ext(rel))]
	var out []CandidateClaim
	var para []textLine
	flush := func() {
		out = append(out, paragraphClaims(rel, para, pats)...)
		para = para[:0]
	}
	fence := false
	for i, line := range strings.Split(data, "\n") {
		t := strings.TrimSpace(line)
		if code {
			c, ok := commentText(t)
			if !ok || c == "" {
				flush()
				continue
			}
			para = append(para, textLine{i + 1, c})
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			flush()
			continue
		}
		if fence || t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "|") {
			flush()
			continue
		}
		para = append(para, textLine{i + 1, strings.TrimLeft(t, "-*+> ")})
	}
	flush()
	return out
}

// commentText strips a comment marker from a source line.
func commentText(t string) (string, bool) {
	for _, m := range []string{"///", "//!", "//", "/**", "/*", "*/", "* ", "#", "--"} {
		if strings.HasPrefix(t, m) {
			return strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, m), "*/")), true
		}
	}
	if t == "*" {
		return "", true
	}
	return "", false
}

// paragraphClaims splits a paragraph into sentences and keeps the ones a
// pattern matches, with the line where the phrase is.
func paragraphClaims(rel string, para []textLine, pats []claimPattern) []CandidateClaim {
	if len(para) == 0 {
		return nil
	}
	var b strings.Builder
	var starts []int // byte offset in b where each para line starts
	for i, l := range para {
		if i > 0 {
			b.WriteByte(' ')
		}
		starts = append(starts, b.Len())
		b.WriteString(l.text)
	}
	text := b.String()
	// Inline code is a name (a path, a flag), not prose: blanked for the
	// match, so "etcd-kv-guarantees.md" promises nothing.
	prose := blankCode(text)
	lineAt := func(off int) int {
		k := sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
		return para[max(k, 0)].n
	}
	var out []CandidateClaim
	for _, sen := range sentences(text) {
		for _, pt := range pats {
			loc := pt.re.FindStringIndex(prose[sen[0]:sen[1]])
			if loc == nil {
				continue
			}
			out = append(out, CandidateClaim{
				Text:     oneLine(text[sen[0]:sen[1]]),
				Category: pt.category,
				Source:   fmt.Sprintf("%s:%d", rel, lineAt(sen[0]+loc[0])),
				Matched:  strings.ToLower(text[sen[0]+loc[0] : sen[0]+loc[1]]),
			})
			break
		}
	}
	return out
}

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
// would end the cell or the quote, runs of space folded, at most
// maxClaimRunes runes.
func oneLine(s string) string {
	s = strings.NewReplacer("|", "/", `"`, "'", "`", "'").Replace(strings.Join(strings.Fields(s), " "))
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
