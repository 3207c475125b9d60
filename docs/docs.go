// Package docs is dstgen's domain reference — the plan format, scenarios.yml,
// env.yml, the workload-driver contract, histories and checkers, run
// records, the verdicts, the nemesis catalog, the report files and the
// generated framework — as Markdown pages embedded in the binary, so
// `dstgen help <topic>` can print them for someone who installed only the
// binary. The pages are the *.md files of this directory; README.md is
// their index.
//
// Sections are numbered ("## 6. Title", "### 6.2 Title") so that code and
// other pages cite them as docs/<page>.md §N; the package's tests fail when
// a citation anywhere in the repository names a page or section that does
// not exist.
package docs

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// pages holds every reference page. A package-level variable because the
// embed directive only fills those; it is never written after init.
//
//go:embed *.md
var pages embed.FS

// indexPage is the index of the pages, not a topic of its own: `dstgen help`
// prints the list it would show.
const indexPage = "README.md"

// ErrUnknownTopic is the cause Read gives for a name that is no topic.
var ErrUnknownTopic = errors.New("unknown topic")

// Topic is one reference page: Name is the file name without ".md"
// ("verdicts"), Title the text of its first "# " heading.
type Topic struct {
	Name  string
	Title string
}

// Topics lists the reference pages, sorted by name, without the index.
func Topics() []Topic {
	entries, err := fs.ReadDir(pages, ".")
	if err != nil {
		// The embedded root always reads; nothing to list otherwise.
		return nil
	}
	var out []Topic
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".md") || n == indexPage {
			continue
		}
		data, err := pages.ReadFile(n)
		if err != nil {
			continue
		}
		out = append(out, Topic{Name: strings.TrimSuffix(n, ".md"), Title: title(data)})
	}
	slices.SortFunc(out, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Read returns the Markdown of the topic name ("verdicts" or
// "verdicts.md"). An unknown name is an error wrapping ErrUnknownTopic
// that lists the topics.
func Read(name string) ([]byte, error) {
	base := strings.TrimSuffix(strings.TrimSpace(name), ".md")
	if base != "" && !strings.ContainsAny(base, `/\`) && base+".md" != indexPage {
		if data, err := pages.ReadFile(base + ".md"); err == nil {
			return data, nil
		}
	}
	return nil, fmt.Errorf("%w %q; topics: %s", ErrUnknownTopic, name, strings.Join(Names(), ", "))
}

// Names lists the topic names, sorted.
func Names() []string {
	var out []string
	for _, t := range Topics() {
		out = append(out, t.Name)
	}
	return out
}

// title is the text of the first "# " heading of a page, or "" when it
// has none.
func title(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if t, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
