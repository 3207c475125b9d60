package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

// yamlLines counts lines as YAML does: \r\n, a lone \r, \n, and the
// Unicode breaks NEL, LS and PS each end one.
func yamlLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1
	for _, sep := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		n += strings.Count(s, sep)
	}
	return n
}

// FuzzParse: Parse never panics or hangs; every error is one line, a
// *fileline.Error naming the file at a line inside it; a file that parses
// can be selected by every unit id and its TODOs sit inside it too.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	seeds, _ := filepath.Glob("testdata/*.yml")
	goldens, _ := filepath.Glob("../generator/testdata/golden/*/scenarios.yml")
	for _, p := range append(seeds, goldens...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{"", "version: 1\n", "&a [*a]", "version: 1\nscenarios: [{id: S1, arms: [{id: S1/a}]}]\n",
		"version: 1\nscenarios:\n  - id: S1\n    faults: [{nemesis: x, at: 1, for: 1e9}]\n", "{<<: {version: 1}}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := yamlLines(data)
		file, err := Parse("s.yml", data)
		if err != nil {
			var fe *fileline.Error
			if !errors.As(err, &fe) || fe.File != "s.yml" || fe.Line < 1 || fe.Line > lines+1 {
				t.Fatalf("error %q (%T, %+v) has no line inside the file (%d lines)", err, err, fe, lines)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is more than one line: %q", err)
			}
			return
		}
		for _, u := range file.All() {
			if got, err := file.Select(u.ID()); err != nil || len(got) == 0 {
				t.Fatalf("Select(%q) of a unit of All: %v", u.ID(), err)
			}
			for _, tier := range tierNames {
				_, _ = u.Scenario.Duration(tier)
				if u.Scenario.Seeds(tier) < 1 {
					t.Fatalf("Seeds(%s) < 1", tier)
				}
			}
		}
		for _, e := range file.TODOs() {
			var fe *fileline.Error
			if !errors.As(e, &fe) || fe.Line < 1 || fe.Line > lines+1 {
				t.Fatalf("TODO %q has no line inside the file", e)
			}
		}
	})
}
