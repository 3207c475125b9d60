package generator

import (
	"strings"
	"testing"
)

func TestDriverSkeleton(t *testing.T) {
	cases := []struct {
		name, lang, driver, version string
		withMod                     bool
		files                       string // sorted names
		goMod                       string
		err                         string
	}{
		{"in a module", "go", "kvload", "", false, "main.go", "", ""},
		{"a new module, released dstgen", "go", "kvload", "v0.4.1", true, "go.mod main.go",
			"module kvload\n\ngo 1.26\n\nrequire github.com/dstgen/dstgen v0.4.1\n", ""},
		{"a new module, dstgen from a working tree", "go", "kv-load_2", "", true, "go.mod main.go", "module kv-load_2\n\ngo 1.26\n", ""},
		{"another language", "python", "kvload", "", false, "", "", `--lang "python": only go`},
		{"a name with a space", "go", "kv load", "", false, "", "", `--name "kv load"`},
		{"a name with a path", "go", "../x", "", false, "", "", `--name "../x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, err := DriverSkeleton(c.lang, c.driver, c.version, c.withMod)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range []string{"go.mod", "main.go"} {
				if _, ok := files[n]; ok {
					names = append(names, n)
				}
			}
			if strings.Join(names, " ") != c.files || len(files) != len(names) {
				t.Errorf("files %v, want %s", names, c.files)
			}
			if got := string(files["go.mod"]); got != c.goMod {
				t.Errorf("go.mod %q, want %q", got, c.goMod)
			}
			main := string(files["main.go"])
			for _, want := range []string{`cfg.Name = "` + c.driver + `"`, "driver.Main(&workload{})", "// TODO: read key from endpoint", "// TODO: write v to key on endpoint", "func (w *workload) WriteFinal("} {
				if !strings.Contains(main, want) {
					t.Errorf("main.go lacks %q", want)
				}
			}
		})
	}
}
