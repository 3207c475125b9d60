// Package templates holds the embedded templates dstgen init renders into a
// SUT's testing/ directory. It carries no logic: the generator builds the
// data model and picks the values; these files only lay them out.
//
// Templates use "[[" and "]]" as delimiters so that go-task's own "{{ }}"
// expressions in Taskfile.yml pass through untouched.
package templates

import (
	"embed"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// FS holds the testing/ tree; each file's path below "testing/" (minus the
// ".tmpl" suffix) is the path it is written to. It also holds the sut/
// tree: the files `dstgen init --agents` writes at the SUT root, outside
// testing/, where agents look for them; and the driver/ tree, one
// directory per language of `dstgen driver new`.
//
//go:embed all:testing all:sut all:driver
var FS embed.FS

// Root is the directory inside FS that mirrors the generated testing/ dir.
const Root = "testing"

// SUTRoot is the directory inside FS whose templates are rendered only on
// request (`dstgen init --agents`), relative to the SUT root. Render never
// walks it.
const SUTRoot = "sut"

// DriverRoot is the directory inside FS holding the workload-driver
// skeletons, one per language (driver/go/main.go.tmpl, …).
const DriverRoot = "driver"

// LeftDelim and RightDelim are the action delimiters every template is
// parsed with.
const (
	LeftDelim  = "[["
	RightDelim = "]]"
)

// Funcs returns the sprig function map the templates may use. The caller
// adds its own formatting helpers on top.
func Funcs() template.FuncMap { return sprig.TxtFuncMap() }
