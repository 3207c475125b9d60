package docs

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestTopics: every page but the index is a topic, sorted, titled with its
// first heading, and README.md lists each one.
func TestTopics(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".md") && n != indexPage {
			want = append(want, strings.TrimSuffix(n, ".md"))
		}
	}
	if got := Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	index, err := os.ReadFile(indexPage)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range Topics() {
		if tp.Title == "" {
			t.Errorf("%s.md has no \"# \" heading", tp.Name)
		}
		if !strings.Contains(string(index), "]("+tp.Name+".md)") {
			t.Errorf("%s does not list %s.md", indexPage, tp.Name)
		}
	}
}

// TestRead: a topic reads as its file, with or without ".md"; the index, a
// path or an unknown name is ErrUnknownTopic with the topics listed.
func TestRead(t *testing.T) {
	want, err := os.ReadFile("nemesis.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nemesis", "nemesis.md", " nemesis "} {
		got, err := Read(name)
		if err != nil || string(got) != string(want) {
			t.Errorf("Read(%q) = %d bytes, %v; want nemesis.md (%d bytes)", name, len(got), err, len(want))
		}
	}
	for _, name := range []string{"", "README", "README.md", "nosuch", "../go.mod", "docs/nemesis", `x\y`} {
		_, err := Read(name)
		if !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("Read(%q) error = %v, want ErrUnknownTopic", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "topics: "+strings.Join(Names(), ", ")) {
			t.Errorf("Read(%q) error %q does not list the topics", name, err)
		}
	}
}

// TestCitationParsing: what counts as a citation and a heading.
func TestCitationParsing(t *testing.T) {
	for _, c := range []struct {
		line   string
		inDocs bool
		want   []string // page §id
	}{
		{"// see docs/verdicts.md §6 for the checks", false, []string{"verdicts §6"}},
		{"docs/verdicts.md §6, §7 and §4.2.", false, []string{"verdicts §6", "verdicts §7", "verdicts §4.2"}},
		{"(docs/report-format.md §3.8)", false, []string{"report-format §3.8"}},
		{"[the report](docs/report-format.md) §4", false, []string{"report-format §4"}},
		{"examples/etcd/docs/deploy.md §2 is the SUT's own", false, nil},
		{"verdicts.md §6 outside docs/", false, nil},
		{"[verdicts.md](verdicts.md) §6", true, []string{"verdicts §6"}},
		{"see nemesis.md §7 between pages", true, []string{"nemesis §7"}},
		{"a §7.M block and §6b requirements", false, nil},
		{"# an id of the nemesis catalog (`dstgen help nemesis` §1–§5)", false, []string{"nemesis §1", "nemesis §5"}},
		{"dstgen help real-env-test §3", false, []string{"real-env-test §3"}},
	} {
		var got []string
		for _, ct := range citations("f:1", c.line, c.inDocs) {
			got = append(got, ct.page+" §"+ct.id)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("citations(%q, inDocs=%v) = %v, want %v", c.line, c.inDocs, got, c.want)
		}
	}
	if m := linkRE.FindAllStringSubmatch("[a](dst-run.md#x) and [b](verdicts.md) and [c](https://e/x.md)", -1); len(m) != 2 || m[0][1] != "dst-run" || m[1][1] != "verdicts" {
		t.Errorf("linkRE found %v, want dst-run and verdicts", m)
	}
	page := "# T\n## 1. One\n### 1.2 Sub\n```\n## 9. In a code block\n```\n## 10 Ten\n#### 10.1.1 Deep\n## Unnumbered\n"
	want := map[string]bool{"1": true, "1.2": true, "10": true, "10.1.1": true}
	if got := headings([]byte(page)); !reflect.DeepEqual(got, want) {
		t.Errorf("headings = %v, want %v", got, want)
	}
}
