package taskcheck

// The template functions go-task v3 gives every Taskfile template, copied
// from go-task's internal/templater/funcs.go (MIT licence, Copyright (c)
// 2016 Andrey Nering): that package is internal to go-task's module, and
// importing go-task's executor instead would pull its whole dependency tree
// (remote Taskfiles, cloud SDKs) into dstgen. TestFuncsMatchGoTask keeps
// the name set equal to the go-task version in go.mod.

import (
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/davecgh/go-spew/spew"
	sprig "github.com/go-task/slim-sprig/v3"
	"github.com/go-task/template"
	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"
	"mvdan.cc/sh/v3/shell"
	"mvdan.cc/sh/v3/syntax"
)

// templateFuncs returns a fresh function map (no package state).
func templateFuncs() template.FuncMap {
	taskFuncs := template.FuncMap{
		"OS":           func() string { return runtime.GOOS },
		"ARCH":         func() string { return runtime.GOARCH },
		"numCPU":       runtime.NumCPU,
		"catLines":     catLines,
		"splitLines":   splitLines,
		"fromSlash":    filepath.FromSlash,
		"toSlash":      filepath.ToSlash,
		"exeExt":       exeExt,
		"shellQuote":   shellQuote,
		"splitArgs":    splitArgs,
		"IsSH":         func() bool { return true }, // deprecated in go-task
		"joinPath":     filepath.Join,
		"joinEnv":      joinEnv,
		"joinUrl":      joinURL,
		"relPath":      filepath.Rel,
		"absPath":      filepath.Abs,
		"merge":        merge,
		"spew":         spew.Sdump,
		"fromYaml":     fromYaml,
		"mustFromYaml": mustFromYaml,
		"toYaml":       toYaml,
		"mustToYaml":   mustToYaml,
		"uuid":         uuid.New,
		"randIntN":     rand.IntN,
	}
	// Aliases go-task keeps.
	taskFuncs["q"] = taskFuncs["shellQuote"]
	taskFuncs["FromSlash"] = taskFuncs["fromSlash"]
	taskFuncs["ToSlash"] = taskFuncs["toSlash"]
	taskFuncs["ExeExt"] = taskFuncs["exeExt"]

	funcs := template.FuncMap(sprig.TxtFuncMap())
	maps.Copy(funcs, taskFuncs)
	return funcs
}

func catLines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	return strings.ReplaceAll(s, "\n", " ")
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(s, "\n")
}

func exeExt() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func shellQuote(s string) (string, error) { return syntax.Quote(s, syntax.LangBash) }

func splitArgs(s string) ([]string, error) { return shell.Fields(s, nil) }

func joinEnv(elem ...string) string { return strings.Join(elem, string(os.PathListSeparator)) }

func joinURL(elem ...string) (string, error) {
	if len(elem) == 0 {
		return "", nil
	}
	return url.JoinPath(elem[0], elem[1:]...)
}

func merge(base map[string]any, v ...map[string]any) map[string]any {
	n := len(v)
	for _, m := range v {
		n += len(m)
	}
	result := make(map[string]any, n)
	maps.Copy(result, base)
	for _, m := range v {
		maps.Copy(result, m)
	}
	return result
}

func fromYaml(v string) any {
	out, _ := mustFromYaml(v)
	return out
}

func mustFromYaml(v string) (any, error) {
	var out any
	err := yaml.Unmarshal([]byte(v), &out)
	return out, err
}

func toYaml(v any) string {
	out, _ := yaml.Marshal(v)
	return string(out)
}

func mustToYaml(v any) (string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(out), nil
}
