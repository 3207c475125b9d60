// Package taskcheck checks that a generated Taskfile.yml is one go-task v3
// can read and compile, without linking go-task's executor.
//
// The executor (github.com/go-task/task/v3) imports remote-Taskfile support
// and with it go-getter, cloud storage SDKs, grpc and a syntax highlighter:
// some 80 MB and 100 ms of package init in every dstgen command. This
// package uses only go-task's light pieces — taskfile/ast (the schema and
// its YAML decoding), go-task/template (go-task's text/template fork),
// slim-sprig and mvdan.cc/sh — and repeats the steps of go-task's
// CompiledTask for every task: the schema version check, variable
// resolution in go-task's order (environment, special variables, Taskfile
// env and vars, call vars, task vars; `ref:` resolved, dynamic `sh:`
// variables run through the same shell interpreter), then every field
// go-task templates (label, desc, prompt, summary, sources, generates, dir,
// dotenv, method, prefix, run, if, env, requires enum refs, cmds and their
// for loops, deps, preconditions, status). The in-process runner stays in
// internal/gotask, linked only into cmd/dstgen-task.
package taskcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/go-task/task/v3/taskfile/ast"
	"github.com/go-task/template"
	"go.yaml.in/yaml/v3"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/oneline"
)

// Taskfile is the file name Check reads in its directory.
const Taskfile = "Taskfile.yml"

const (
	// maxTaskfile bounds the read: a generated Taskfile is a few KiB.
	maxTaskfile = 4 << 20
	// shTimeout bounds each dynamic variable's command (go-task has no
	// bound; a check must not hang).
	shTimeout = 30 * time.Second
	// goTaskModule is the module whose version sets the newest schema
	// version accepted, as go-task's own version check does.
	goTaskModule = "github.com/go-task/task/v3"
	// goTaskRelease is go.mod's go-task version, used when the binary
	// carries no module list (test binaries); TestGoTaskReleaseMatchesGoMod
	// keeps it in step.
	goTaskRelease = "3.54.0"
)

// Check reads dir/Taskfile.yml and compiles every task the way `task` does
// before running it, so a Taskfile go-task would reject (YAML, schema,
// schema version, template syntax, unknown template functions, template
// execution errors, a failing dynamic variable) is caught before it is
// written. No task command runs, but dynamic `sh:` variables are evaluated
// as go-task evaluates them (in dstgen's generated Taskfile they only read
// env.yml and the clock). Tasks that declare required variables are
// compiled with them set (go-task refuses to run them otherwise). It
// returns nil or the first problem, one line, with file:line when a task
// is at fault.
func Check(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("taskfile dir %s: %w", dir, err)
	}
	entry := filepath.Join(abs, Taskfile)
	data, err := fileline.ReadBounded(entry, maxTaskfile)
	if err != nil {
		return fmt.Errorf("taskfile: %w", err)
	}
	var tf ast.Taskfile
	if err := yaml.Unmarshal(data, &tf); err != nil {
		return fmt.Errorf("%s: parse: %s", entry, Reason(err))
	}
	if err := checkVersion(entry, tf.Version); err != nil {
		return err
	}
	if tf.Includes != nil && tf.Includes.Len() > 0 {
		// A generated Taskfile has none; resolving them is the part of
		// go-task's reader that needs the heavy remote-node code.
		return fmt.Errorf("%s: includes are not supported by dstgen's Taskfile check", entry)
	}
	if tf.Tasks == nil || tf.Tasks.Len() == 0 {
		return fmt.Errorf("%s: no tasks", entry)
	}
	c := &compiler{dir: abs, entry: entry, tf: &tf, funcs: templateFuncs(), dynamic: map[string]string{}}
	var tasks []*ast.Task
	for t := range tf.Tasks.Values(nil) {
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, func(a, b *ast.Task) int { return strings.Compare(a.Task, b.Task) })
	for _, t := range tasks {
		if err := c.compileTask(t); err != nil {
			line := 0
			if t.Location != nil {
				line = t.Location.Line
			}
			return fileline.Errorf(entry, line, "task %q: %s", t.Task, Reason(err))
		}
	}
	return nil
}

// checkVersion is go-task's schema version check: present, at least 3,
// and not newer than the go-task release dstgen builds against.
func checkVersion(entry string, v *semver.Version) error {
	if v == nil {
		return fmt.Errorf("%s: schema version is missing (version: '3')", entry)
	}
	if v.LessThan(ast.V3) {
		return fmt.Errorf("%s: schema version (%s) is no longer supported: use version: '3'", entry, v)
	}
	if cur := goTaskVersion(); cur != nil && v.GreaterThan(cur) {
		return fmt.Errorf("%s: schema version (%s) is greater than go-task's (%s)", entry, v, cur)
	}
	return nil
}

// goTaskVersion is the version of go-task's module this binary links (its
// taskfile/ast package): go-task accepts no schema newer than itself.
func goTaskVersion() *semver.Version {
	v := goTaskRelease
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == goTaskModule {
				v = strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	sv, err := semver.NewVersion(v)
	if err != nil {
		return nil // a devel build: go-task skips the bound too
	}
	return sv
}

// compiler holds what go-task's Compiler holds for one Taskfile.
type compiler struct {
	dir, entry string
	tf         *ast.Taskfile
	funcs      template.FuncMap
	dynamic    map[string]string // sh command → output, as go-task caches it
}

// specialVars are the variables go-task defines for every task.
func (c *compiler) specialVars(t *ast.Task) map[string]string {
	wd, _ := os.Getwd()
	return map[string]string{
		"TASK_EXE":            filepath.ToSlash(os.Args[0]),
		"ROOT_TASKFILE":       filepath.ToSlash(c.entry),
		"ROOT_DIR":            filepath.ToSlash(c.dir),
		"USER_WORKING_DIR":    filepath.ToSlash(wd),
		"TASK_VERSION":        "",
		"PATH_LIST_SEPARATOR": string(os.PathListSeparator),
		"FILE_PATH_SEPARATOR": string(os.PathSeparator),
		"TASK":                t.Task,
		"TASK_DIR":            filepath.ToSlash(smartJoin(c.dir, t.Dir)),
		"TASKFILE":            filepath.ToSlash(c.entry),
		"TASKFILE_DIR":        filepath.ToSlash(c.dir),
		"ALIAS":               t.Task,
	}
}

// variables resolves the variables of a call of t in go-task's order; each
// variable's templates see the ones resolved before it.
func (c *compiler) variables(t *ast.Task, call *ast.Vars) (*ast.Vars, error) {
	result := ast.NewVars()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		result.Set(k, ast.Var{Value: v})
	}
	for k, v := range c.specialVars(t) {
		result.Set(k, ast.Var{Value: v})
	}
	set := func(dir string) func(k string, v ast.Var) error {
		return func(k string, v ast.Var) error {
			nv, err := c.replaceVar(v, result.ToCacheMap(), nil)
			if err != nil {
				return err
			}
			if nv.Value != nil || nv.Sh == nil {
				result.Set(k, ast.Var{Value: nv.Value, Secret: v.Secret})
				return nil
			}
			static, err := c.runDynamic(nv, dir, environ(result))
			if err != nil {
				return err
			}
			result.Set(k, ast.Var{Value: static, Secret: v.Secret})
			return nil
		}
	}
	d, err := c.replace(t.Dir, result.ToCacheMap(), nil)
	if err != nil {
		return nil, err
	}
	global, task := set(c.dir), set(smartJoin(c.dir, d))
	for _, step := range []struct {
		vars *ast.Vars
		f    func(string, ast.Var) error
	}{{c.tf.Env, global}, {c.tf.Vars, global}, {call, global}, {t.Vars, task}} {
		for k, v := range step.vars.All() {
			if err := step.f(k, v); err != nil {
				return nil, err
			}
		}
	}
	return result, nil
}

// requiredVars is the call Check compiles t with: every required variable
// set, to its first allowed value when it has an enum.
func requiredVars(t *ast.Task) *ast.Vars {
	vars := ast.NewVars()
	if t.Requires == nil {
		return vars
	}
	for _, v := range t.Requires.Vars {
		val := "check"
		if v.Enum != nil && len(v.Enum.Value) > 0 {
			val = v.Enum.Value[0]
		}
		vars.Set(v.Name, ast.Var{Value: val})
	}
	return vars
}

// compileTask templates every field go-task's CompiledTask templates and
// returns the first error, as go-task does.
func (c *compiler) compileTask(t *ast.Task) error {
	vars, err := c.variables(t, requiredVars(t))
	if err != nil {
		return err
	}
	data := vars.ToCacheMap()
	r := &replacer{c: c, data: data}
	if t.Requires != nil {
		for _, v := range t.Requires.Vars {
			if v.Enum != nil && v.Enum.Ref != "" {
				if err := c.checkEnumRef(v.Enum.Ref, data); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range []string{t.Label, t.Desc, t.Summary, t.Method, t.Prefix, t.Run, t.If} {
		r.str(s, nil)
	}
	r.strs(t.Prompt)
	r.strs(t.Dotenv)
	r.strs(t.Status)
	for _, g := range slices.Concat(t.Sources, t.Generates) {
		if g != nil {
			r.str(g.Glob, nil)
		}
	}
	dir := r.str(t.Dir, nil)
	if r.err != nil {
		return r.err
	}
	if dir, err = expandLiteral(dir); err != nil {
		return err
	}
	dir = smartJoin(c.dir, dir)
	env := ast.NewVars()
	for _, vs := range []*ast.Vars{c.tf.Env, t.Env} {
		for k, v := range vs.All() {
			env.Set(k, r.variable(v, nil))
		}
	}
	if r.err != nil {
		return r.err
	}
	for v := range env.Values() {
		if v.Value == nil && v.Sh != nil {
			if _, err := c.runDynamic(v, dir, environ(env)); err != nil {
				return err
			}
		}
	}
	for _, cmd := range t.Cmds {
		// Deferred commands are templated when they run (they see
		// EXIT_CODE), not when go-task compiles the task.
		if cmd == nil || cmd.Defer {
			continue
		}
		r.each(cmd.For, vars, func(extra map[string]any) {
			r.str(cmd.Cmd, extra)
			r.str(cmd.Task, extra)
			r.str(cmd.If, extra)
			r.vars(cmd.Vars, extra)
		})
	}
	for _, dep := range t.Deps {
		if dep == nil {
			continue
		}
		r.each(dep.For, vars, func(extra map[string]any) {
			r.str(dep.Task, extra)
			r.vars(dep.Vars, extra)
		})
	}
	for _, p := range t.Preconditions {
		if p != nil {
			r.str(p.Sh, nil)
			r.str(p.Msg, nil)
		}
	}
	return r.err
}

// checkEnumRef is go-task's ResolveEnums for one ref: a list of strings.
func (c *compiler) checkEnumRef(ref string, data map[string]any) error {
	v, err := c.resolveRef(ref, data)
	if err != nil {
		return err
	}
	var list []any
	switch l := v.(type) {
	case []any:
		list = l
	case []string:
		return nil
	case []int:
		return fmt.Errorf("enum reference %q must contain only strings", ref)
	default:
		return fmt.Errorf("enum reference %q must resolve to a list", ref)
	}
	for _, item := range list {
		if _, ok := item.(string); !ok {
			return fmt.Errorf("enum reference %q must contain only strings", ref)
		}
	}
	return nil
}

// replace is go-task's templater.ReplaceWithExtra for one string.
func (c *compiler) replace(s string, data, extra map[string]any) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	tpl, err := template.New("").Funcs(c.funcs).Parse(s)
	if err != nil {
		return s, err
	}
	if _, ok := extra[parseOnlyKey]; ok {
		return s, nil
	}
	if extra != nil {
		merged := maps.Clone(data)
		if merged == nil {
			merged = map[string]any{}
		}
		maps.Copy(merged, extra)
		data = merged
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, data); err != nil {
		return s, err
	}
	return strings.ReplaceAll(b.String(), "<no value>", ""), nil
}

// replaceAny templates every string inside a variable's value (a string,
// a list or a map, as YAML decodes them).
func (c *compiler) replaceAny(v any, data, extra map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		return c.replace(x, data, extra)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := c.replaceAny(e, data, extra)
			if err != nil {
				return v, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := c.replaceAny(e, data, extra)
			if err != nil {
				return v, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

// replaceVar is go-task's templater.ReplaceVarWithExtra.
func (c *compiler) replaceVar(v ast.Var, data, extra map[string]any) (ast.Var, error) {
	if v.Ref != "" {
		val, err := c.resolveRef(v.Ref, data)
		return ast.Var{Value: val, Secret: v.Secret}, err
	}
	val, err := c.replaceAny(v.Value, data, extra)
	if err != nil {
		return v, err
	}
	out := ast.Var{Value: val, Live: v.Live, Dir: v.Dir, Secret: v.Secret}
	if v.Sh != nil {
		sh, err := c.replace(*v.Sh, data, extra)
		if err != nil {
			return v, err
		}
		out.Sh = &sh
	}
	return out, nil
}

// resolveRef is go-task's templater.ResolveRef: the value of one template
// expression, not its text.
func (c *compiler) resolveRef(ref string, data map[string]any) (any, error) {
	if ref == "." {
		return data, nil
	}
	tpl, err := template.New("resolver").Funcs(c.funcs).Parse("{{" + ref + "}}")
	if err != nil {
		return nil, err
	}
	return tpl.Resolve(data)
}

// runDynamic runs a dynamic variable's command as go-task does (its
// embedded POSIX shell interpreter with errexit, in dir, with env) and
// returns its output without one trailing newline. Stderr is discarded,
// as the executor-based check discarded it; stdin is empty.
func (c *compiler) runDynamic(v ast.Var, dir string, env []string) (string, error) {
	if v.Sh == nil || *v.Sh == "" {
		return "", nil
	}
	if out, ok := c.dynamic[*v.Sh]; ok {
		return out, nil
	}
	if v.Dir != "" {
		dir = v.Dir
	}
	var stdout bytes.Buffer
	r, err := interp.New(
		interp.Params("-e"),
		interp.Env(expand.ListEnviron(env...)),
		interp.StdIO(nil, &stdout, io.Discard),
		interp.Dir(dir),
	)
	if err != nil {
		return "", fmt.Errorf("command %q: %w", *v.Sh, err)
	}
	prog, err := syntax.NewParser().Parse(strings.NewReader(*v.Sh), "")
	if err != nil {
		return "", fmt.Errorf("command %q failed: %w", *v.Sh, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shTimeout)
	defer cancel()
	if err := r.Run(ctx, prog); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("command %q did not finish within %s", *v.Sh, shTimeout)
		}
		return "", fmt.Errorf("command %q failed: %w", *v.Sh, err)
	}
	out := strings.TrimSuffix(strings.TrimSuffix(stdout.String(), "\r\n"), "\n")
	c.dynamic[*v.Sh] = out
	return out, nil
}

// replacer templates many fields against one variable set and keeps the
// first error, as go-task's templater.Cache does.
type replacer struct {
	c    *compiler
	data map[string]any
	err  error
}

func (r *replacer) str(s string, extra map[string]any) string {
	if r.err != nil {
		return s
	}
	out, err := r.c.replace(s, r.data, extra)
	r.err = err
	return out
}

func (r *replacer) strs(ss []string) {
	for _, s := range ss {
		r.str(s, nil)
	}
}

func (r *replacer) variable(v ast.Var, extra map[string]any) ast.Var {
	if r.err != nil {
		return v
	}
	out, err := r.c.replaceVar(v, r.data, extra)
	r.err = err
	return out
}

func (r *replacer) vars(vs *ast.Vars, extra map[string]any) {
	for _, v := range vs.All() {
		r.variable(v, extra)
	}
}

// each calls f once per item of a cmd's or dep's for loop (the iterator
// variable and KEY in extra), once without extra when there is no loop.
// A loop over sources, generates or a matrix (not used by dstgen's
// Taskfile) is only parsed: its items depend on files and products
// go-task computes at run time.
func (r *replacer) each(f *ast.For, vars *ast.Vars, fn func(extra map[string]any)) {
	if f == nil {
		fn(nil)
		return
	}
	as := f.As
	if as == "" {
		as = "ITEM"
	}
	var items []any
	var keys []string
	switch {
	case f.Matrix.Len() != 0 || f.From != "":
		r.parseOnly(fn)
		return
	case len(f.List) > 0:
		items = f.List
	case f.Var != "":
		v, ok := vars.Get(f.Var)
		if !ok || v.Value == nil {
			return
		}
		switch x := v.Value.(type) {
		case string:
			for _, s := range splitFor(x, f.Split) {
				items = append(items, s)
			}
		case []any:
			items = x
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				keys = append(keys, k)
				items = append(items, x[k])
			}
		default:
			if r.err == nil {
				r.err = errors.New("loop var must be a delimiter-separated string, list or a map")
			}
			return
		}
	}
	for i, it := range items {
		extra := map[string]any{as: it}
		if keys != nil {
			extra["KEY"] = keys[i]
		}
		fn(extra)
	}
}

// parseOnly runs fn with templates parsed but not executed.
func (r *replacer) parseOnly(fn func(map[string]any)) {
	fn(map[string]any{parseOnlyKey: true})
}

// parseOnlyKey marks an extra map whose templates are parsed, not run.
const parseOnlyKey = "\x00parse-only"

func splitFor(s, sep string) []string {
	if sep != "" {
		return strings.Split(s, sep)
	}
	return strings.Fields(s)
}

// environ is go-task's env.GetFromVars: the process environment plus every
// scalar variable the environment does not already set.
func environ(vars *ast.Vars) []string {
	env := os.Environ()
	for k, v := range vars.ToCacheMap() {
		switch v.(type) {
		case string, bool, int, float32, float64:
		default:
			continue
		}
		if _, set := os.LookupEnv(k); set {
			continue
		}
		env = append(env, fmt.Sprintf("%s=%v", k, v))
	}
	return env
}

// expandLiteral is go-task's execext.ExpandLiteral for a task's dir.
func expandLiteral(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	word, err := syntax.NewParser().Document(strings.NewReader(s))
	if err != nil {
		return "", err
	}
	cfg := &expand.Config{Env: expand.FuncEnviron(os.Getenv), ReadDir2: os.ReadDir, GlobStar: true}
	return expand.Literal(cfg, word)
}

// smartJoin is go-task's filepathext.SmartJoin.
func smartJoin(a, b string) string {
	if filepath.IsAbs(b) {
		return b
	}
	return filepath.Join(a, b)
}

// Reason is go-task's (often multi-line) error as the one-line reason the
// CLI contract asks for, without go-task's "task: " prefix.
func Reason(err error) string {
	return strings.TrimPrefix(oneline.Fold(err.Error()), "task: ")
}
