package taskcheck

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	sprig "github.com/go-task/slim-sprig/v3"
	task "github.com/go-task/task/v3"
	taskast "github.com/go-task/task/v3/taskfile/ast"

	"github.com/dstgen/dstgen/generator"
)

// executorCheck is the check dstgen made before this package existed:
// go-task's own executor reads the Taskfile and compiles every task. The
// tests link it (test imports cost the binary nothing) so that Check is
// proven to accept and reject exactly what go-task accepts and rejects.
func executorCheck(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	entry := filepath.Join(abs, Taskfile)
	if _, err := os.Stat(entry); err != nil {
		return err
	}
	e := task.NewExecutor(task.WithDir(abs), task.WithEntrypoint(entry),
		task.WithStdin(strings.NewReader("")), task.WithStdout(io.Discard), task.WithStderr(io.Discard),
		task.WithVersionCheck(true), task.WithOffline(true), task.WithColor(false))
	if err := e.Setup(); err != nil {
		return err
	}
	var calls []*task.Call
	for t := range e.Taskfile.Tasks.Values(nil) {
		c := &task.Call{Task: t.Task}
		if t.Requires != nil && len(t.Requires.Vars) > 0 {
			c.Vars = taskast.NewVars()
			for _, v := range t.Requires.Vars {
				val := "check"
				if v.Enum != nil && len(v.Enum.Value) > 0 {
					val = v.Enum.Value[0]
				}
				c.Vars.Set(v.Name, taskast.Var{Value: val})
			}
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return fmt.Errorf("no tasks")
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].Task < calls[j].Task })
	for _, c := range calls {
		if _, err := e.CompiledTask(c); err != nil {
			return err
		}
	}
	_, err = e.GetTaskList()
	return err
}

// agreeCases are Taskfiles on both sides of go-task's compile: every
// templated field, refs, for loops, dynamic variables, execution errors.
var agreeCases = map[string]string{
	"good":               good,
	"yaml syntax":        "version: '3'\ntasks:\n  a:\n    cmds: [\n",
	"unknown func":       "version: '3'\ntasks:\n  a:\n    cmds:\n      - echo {{.X | nosuchfunc}}\n",
	"bad desc":           "version: '3'\ntasks:\n  a:\n    desc: '{{if}}'\n    cmds: [echo]\n",
	"version 2":          "version: '2'\ntasks:\n  a:\n    cmds: [echo]\n",
	"version 99":         "version: '99'\ntasks:\n  a:\n    cmds: [echo]\n",
	"no version":         "tasks:\n  a:\n    cmds: [echo]\n",
	"no tasks":           "version: '3'\n",
	"schema: cmds map":   "version: '3'\ntasks:\n  a:\n    cmds: {x: 1}\n",
	"unknown func label": "version: '3'\ntasks:\n  a:\n    label: '{{nope}}'\n    cmds: [echo]\n",
	"bad summary":        "version: '3'\ntasks:\n  a:\n    summary: '{{end}}'\n    cmds: [echo]\n",
	"bad prompt":         "version: '3'\ntasks:\n  a:\n    prompt: '{{nope}}'\n    cmds: [echo]\n",
	"bad status":         "version: '3'\ntasks:\n  a:\n    status: ['{{nope}}']\n    cmds: [echo]\n",
	"bad precondition":   "version: '3'\ntasks:\n  a:\n    preconditions: [{sh: 'true', msg: '{{nope}}'}]\n    cmds: [echo]\n",
	"bad dep":            "version: '3'\ntasks:\n  b: {cmds: [echo]}\n  a:\n    deps: [{task: '{{nope}}'}]\n    cmds: [echo]\n",
	"bad dep var":        "version: '3'\ntasks:\n  b: {cmds: [echo]}\n  a:\n    deps: [{task: b, vars: {X: '{{nope}}'}}]\n",
	"bad cmd task":       "version: '3'\ntasks:\n  b: {cmds: [echo]}\n  a:\n    cmds: [{task: '{{nope}}'}]\n",
	"bad cmd var":        "version: '3'\ntasks:\n  b: {cmds: [echo]}\n  a:\n    cmds: [{task: b, vars: {X: '{{nope}}'}}]\n",
	"bad cmd if":         "version: '3'\ntasks:\n  a:\n    cmds: [{cmd: echo, if: '{{nope}}'}]\n",
	"bad task if":        "version: '3'\ntasks:\n  a:\n    if: '{{nope}}'\n    cmds: [echo]\n",
	"bad dir":            "version: '3'\ntasks:\n  a:\n    dir: '{{nope}}'\n    cmds: [echo]\n",
	"bad sources":        "version: '3'\ntasks:\n  a:\n    sources: ['{{nope}}']\n    cmds: [echo]\n",
	"bad generates":      "version: '3'\ntasks:\n  a:\n    generates: ['{{nope}}']\n    cmds: [echo]\n",
	"bad global var":     "version: '3'\nvars:\n  X: '{{nope}}'\ntasks:\n  a: {cmds: [echo]}\n",
	"bad global env":     "version: '3'\nenv:\n  X: '{{nope}}'\ntasks:\n  a: {cmds: [echo]}\n",
	"bad task var":       "version: '3'\ntasks:\n  a:\n    vars: {X: '{{nope}}'}\n    cmds: [echo]\n",
	"bad task env":       "version: '3'\ntasks:\n  a:\n    env: {X: '{{nope}}'}\n    cmds: [echo]\n",
	"bad list var":       "version: '3'\nvars:\n  L: ['a', '{{nope}}']\ntasks:\n  a: {cmds: [echo]}\n",
	"bad map var":        "version: '3'\nvars:\n  M: {map: {k: '{{nope}}'}}\ntasks:\n  a: {cmds: [echo]}\n",
	"failing sh var":     "version: '3'\nvars:\n  X: {sh: 'exit 3'}\ntasks:\n  a: {cmds: [echo]}\n",
	"sh syntax error":    "version: '3'\nvars:\n  X: {sh: 'if then'}\ntasks:\n  a: {cmds: [echo]}\n",
	"good sh var":        "version: '3'\nvars:\n  X: {sh: 'echo hi'}\ntasks:\n  a: {cmds: ['echo {{shellQuote .X}}']}\n",
	"failing task sh":    "version: '3'\ntasks:\n  a:\n    vars: {X: {sh: 'false'}}\n    cmds: [echo]\n",
	"failing env sh":     "version: '3'\ntasks:\n  a:\n    env: {X: {sh: 'false'}}\n    cmds: [echo]\n",
	"good ref":           "version: '3'\nvars:\n  R: \"a: 1\"\n  M: {ref: fromYaml .R}\ntasks:\n  a: {cmds: ['echo {{.M.a}}']}\n",
	"bad ref":            "version: '3'\nvars:\n  M: {ref: nope .R}\ntasks:\n  a: {cmds: [echo]}\n",
	"exec error":         "version: '3'\ntasks:\n  a:\n    cmds: ['echo {{shellQuote .UNSET}}']\n",
	"exec error index":   "version: '3'\nvars:\n  L: [a]\ntasks:\n  a:\n    cmds: ['echo {{index .L 5}}']\n",
	"required is set":    "version: '3'\ntasks:\n  a:\n    requires: {vars: [S]}\n    cmds: ['echo {{shellQuote .S}}']\n",
	"required enum":      "version: '3'\ntasks:\n  a:\n    requires: {vars: [{name: M, enum: [x, y]}]}\n    cmds: ['echo {{if ne .M \"x\"}}{{fail \"not x\"}}{{end}}']\n",
	"enum ref ok":        "version: '3'\nvars:\n  E: [x, y]\ntasks:\n  a:\n    requires: {vars: [{name: M, enum: {ref: .E}}]}\n    cmds: [echo]\n",
	"enum ref not list":  "version: '3'\nvars:\n  E: x\ntasks:\n  a:\n    requires: {vars: [{name: M, enum: {ref: .E}}]}\n    cmds: [echo]\n",
	"for list":           "version: '3'\ntasks:\n  a:\n    cmds: [{for: [a, b], cmd: 'echo {{shellQuote .ITEM}}'}]\n",
	"for list bad":       "version: '3'\ntasks:\n  a:\n    cmds: [{for: [a, b], cmd: 'echo {{nope .ITEM}}'}]\n",
	"for var":            "version: '3'\nvars:\n  V: 'a b'\ntasks:\n  a:\n    cmds: [{for: {var: V, as: F}, cmd: 'echo {{shellQuote .F}}'}]\n",
	"for map":            "version: '3'\nvars:\n  M: {map: {k: v}}\ntasks:\n  a:\n    cmds: [{for: {var: M}, cmd: 'echo {{.KEY}}={{.ITEM}}'}]\n",
	"for sources":        "version: '3'\ntasks:\n  a:\n    sources: ['*.go']\n    cmds: [{for: sources, cmd: 'echo {{.ITEM}}'}]\n",
	"defer bad":          "version: '3'\ntasks:\n  a:\n    cmds: [{defer: 'echo {{nope}}'}, echo]\n",
	"fail func":          "version: '3'\ntasks:\n  a:\n    cmds: ['{{fail \"no\"}}']\n",
	"special vars":       "version: '3'\ntasks:\n  a:\n    cmds: ['echo {{shellQuote .TASK}} {{shellQuote .ROOT_DIR}} {{shellQuote .TASKFILE_DIR}} {{shellQuote .TASK_DIR}} {{shellQuote .USER_WORKING_DIR}}']\n",
	"env var in data":    "version: '3'\ntasks:\n  a:\n    cmds: ['echo {{shellQuote .PATH}}']\n",
	"sprig and task fns": "version: '3'\ntasks:\n  a:\n    cmds: ['echo {{joinPath \"a\" \"b\"}} {{OS}} {{splitArgs \"a b\" | len}} {{q \"x\"}} {{\"a\" | upper}} {{toYaml (dict \"a\" 1)}}']\n",
}

// TestCheckAgreesWithGoTask: on every case, Check accepts exactly when
// go-task's executor compiles the Taskfile.
func TestCheckAgreesWithGoTask(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(agreeCases)) {
		t.Run(name, func(t *testing.T) {
			dir := writeTaskfile(t, agreeCases[name])
			got, want := Check(dir), executorCheck(dir)
			if (got == nil) != (want == nil) {
				t.Fatalf("Check = %v, go-task = %v", got, want)
			}
			if got != nil && strings.Contains(got.Error(), "\n") {
				t.Errorf("Check error is not one line: %q", got)
			}
		})
	}
}

// TestCheckAgreesWithGoTaskOnGeneratedFixtures: the Taskfiles dstgen
// generates for its fixture SUTs pass both checks.
func TestCheckAgreesWithGoTaskOnGeneratedFixtures(t *testing.T) {
	for _, src := range []string{
		"../../../generator/testdata/sut/goservice",
		"../../../generator/testdata/sut/rustservice",
		"../../../examples/etcd",
	} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			if _, err := os.Stat(src); err != nil {
				t.Skipf("fixture %s: %v", src, err)
			}
			out := t.TempDir()
			sut := filepath.Join(t.TempDir(), "sut")
			if err := os.CopyFS(sut, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			_ = os.RemoveAll(filepath.Join(sut, "testing"))
			res, err := generator.Init(context.Background(), generator.InitOptions{SUT: sut, Out: out, CheckTaskfile: executorCheck})
			if err != nil {
				t.Fatalf("Init with go-task's check: %v", err)
			}
			if err := Check(res.Out); err != nil {
				t.Errorf("Check(generated) = %v, go-task accepts it", err)
			}
		})
	}
}

// TestFuncsMatchGoTask: the template functions are exactly go-task's (its
// internal/templater/funcs.go in the module go.mod names, read from the
// module cache), so Check neither accepts a function go-task lacks nor
// rejects one it has.
func TestFuncsMatchGoTask(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/go-task/task/v3").Output()
	if err != nil {
		t.Skipf("go list -m go-task: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "internal", "templater", "funcs.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", src, err)
	}
	want := map[string]bool{}
	for k := range sprig.TxtFuncMap() {
		want[k] = true
	}
	// Keys of the taskFuncs literal and of taskFuncs["x"] = ... aliases.
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.KeyValueExpr:
			if lit, ok := x.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				k, _ := strconv.Unquote(lit.Value)
				want[k] = true
			}
		case *ast.IndexExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "taskFuncs" {
				if lit, ok := x.Index.(*ast.BasicLit); ok {
					k, _ := strconv.Unquote(lit.Value)
					want[k] = true
				}
			}
		}
		return true
	})
	got := map[string]bool{}
	for k := range templateFuncs() {
		got[k] = true
	}
	for k := range want {
		if !got[k] {
			t.Errorf("go-task has template function %q, Check does not", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("Check has template function %q, go-task does not", k)
		}
	}
}

// TestGoTaskReleaseMatchesGoMod: the schema bound used without build info
// is the go-task version go.mod requires.
func TestGoTaskReleaseMatchesGoMod(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", goTaskModule).Output()
	if err != nil {
		t.Skipf("go list -m: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "v"+goTaskRelease {
		t.Errorf("go.mod requires go-task %s, goTaskRelease is %s", got, goTaskRelease)
	}
}
