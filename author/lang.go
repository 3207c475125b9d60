package author

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/oneline"
)

// language is what author mode knows about one Skeleton language: how a
// comment starts, which file names it may write, and how the SUT's own
// tools format and compile it.
type language struct {
	name    string
	comment string   // line-comment prefix for the provenance header
	exts    []string // allowed target extensions, the first is canonical
}

var languages = map[string]language{
	"go":         {name: "go", comment: "//", exts: []string{".go"}},
	"rust":       {name: "rust", comment: "//", exts: []string{".rs"}},
	"python":     {name: "python", comment: "#", exts: []string{".py"}},
	"typescript": {name: "typescript", comment: "//", exts: []string{".ts", ".tsx"}},
	"shell":      {name: "shell", comment: "#", exts: []string{".sh", ".bash"}},
}

// fenceAliases maps fence tags to the Skeleton language enum
// (docs/plan-format.md §9.3).
var fenceAliases = map[string]string{
	"golang": "go", "rs": "rust", "py": "python", "ts": "typescript", "sh": "shell", "bash": "shell",
}

// languageOf picks the skeleton's language: the Skeleton language field,
// else the fence tag.
func languageOf(field, tag string) (language, bool) {
	name := strings.ToLower(strings.TrimSpace(field))
	if name == "" {
		name = strings.ToLower(strings.TrimSpace(tag))
	}
	if a, ok := fenceAliases[name]; ok {
		name = a
	}
	l, ok := languages[name]
	return l, ok
}

// toolTimeout bounds one formatter run; a formatter reads one file from
// stdin, so anything slower is stuck.
const toolTimeout = 30 * time.Second

// outputLimit bounds what a tool may print into memory.
const outputLimit = 1 << 20

// formatSource runs the language's formatter as a filter (stdin → stdout),
// so no external tool writes into the SUT tree; dir is the SUT directory
// the tool runs in (to find its config) and rel the target's SUT-relative
// path. It returns the formatted source and what ran ("gofmt",
// "rustfmt", …), or the unchanged source and "none (… not installed)".
func formatSource(ctx context.Context, lang language, dir, rel string, src []byte, edition string) ([]byte, string, error) {
	if lang.name == "go" {
		// gofmt's own library: always present, and the same output.
		out, err := format.Source(src)
		if err != nil {
			return src, "gofmt", fmt.Errorf("gofmt: %s", oneline.First(err.Error()))
		}
		return out, "gofmt", nil
	}
	type cand struct {
		tool string
		args []string
	}
	var cands []cand
	switch lang.name {
	case "rust":
		if edition == "" {
			edition = "2021"
		}
		cands = []cand{{"rustfmt", []string{"--edition", edition, "--emit", "stdout"}}}
	case "python":
		cands = []cand{{"ruff", []string{"format", "--stdin-filename", rel, "-"}}, {"black", []string{"-q", "--stdin-filename", rel, "-"}}}
	case "typescript":
		cands = []cand{{"prettier", []string{"--stdin-filepath", rel}}}
	case "shell":
		cands = []cand{{"shfmt", []string{"-filename", rel, "-"}}}
	}
	var names []string
	for _, c := range cands {
		names = append(names, c.tool)
		if _, err := exec.LookPath(c.tool); err != nil {
			continue
		}
		out, err := runTool(ctx, toolTimeout, dir, src, c.tool, c.args...)
		if err != nil {
			return src, c.tool, fmt.Errorf("%s: %s", c.tool, oneline.First(err.Error()))
		}
		return out, c.tool, nil
	}
	return src, fmt.Sprintf("none (%s not installed)", strings.Join(names, ", ")), nil
}

// compileResult is the outcome of the compile step.
type compileResult struct {
	status string // CompileOK, CompileFailed, CompileSkipped
	detail string // the first error, or why it was skipped
	cmd    string // what ran, for the report
}

// compile runs the language's compile step on the package, crate or file
// holding the target, bounded by timeout. sut is the SUT root (absolute),
// rel the target's SUT-relative slash path.
func compile(ctx context.Context, lang language, sut, rel string, timeout time.Duration) compileResult {
	abs := filepath.Join(sut, filepath.FromSlash(rel))
	switch lang.name {
	case "go":
		mod := findUp(sut, path.Dir(rel), "go.mod")
		if mod == "" {
			return compileResult{status: CompileSkipped, detail: "no go.mod above " + rel}
		}
		pkg, err := filepath.Rel(filepath.Join(sut, filepath.FromSlash(mod)), filepath.Dir(abs))
		if err != nil {
			return compileResult{status: CompileSkipped, detail: err.Error()}
		}
		// go vet type-checks the package with its test files and runs
		// nothing; GOWORK=off keeps a parent go.work out of it, and
		// -mod=readonly keeps go.mod and go.sum as they are (a missing
		// dependency is a compile failure, never an edit of the manifest).
		return runCompile(ctx, timeout, filepath.Join(sut, filepath.FromSlash(mod)), []string{"GOWORK=off", "GOFLAGS=-mod=readonly"},
			"go", "vet", "./"+filepath.ToSlash(pkg))
	case "rust":
		crate := findUp(sut, path.Dir(rel), "Cargo.toml")
		if crate == "" {
			return compileResult{status: CompileSkipped, detail: "no Cargo.toml above " + rel}
		}
		crateDir := filepath.Join(sut, filepath.FromSlash(crate))
		if why := cargoReaches(crateDir, abs); why != "" {
			return compileResult{status: CompileSkipped, detail: why}
		}
		return cargoCompile(ctx, timeout, sut, crate)
	case "python":
		py := firstTool("python3", "python")
		if py == "" {
			return compileResult{status: CompileSkipped, detail: "python3 not installed"}
		}
		// What py_compile checks, without writing a .pyc into the tree.
		res := runCompile(ctx, timeout, sut, []string{"PYTHONDONTWRITEBYTECODE=1"}, py, "-c", pyCompile, abs)
		res.cmd = filepath.Base(py) + " -c compile(FILE)"
		return res
	case "typescript":
		cfg := findUp(sut, path.Dir(rel), "tsconfig.json")
		if cfg == "" {
			return compileResult{status: CompileSkipped, detail: "no tsconfig.json above " + rel}
		}
		tsc := firstTool("tsc")
		if tsc == "" {
			return compileResult{status: CompileSkipped, detail: "tsc not installed"}
		}
		return runCompile(ctx, timeout, filepath.Join(sut, filepath.FromSlash(cfg)), nil, tsc, "--noEmit", "-p", ".")
	case "shell":
		return runCompile(ctx, timeout, sut, nil, "bash", "-n", abs)
	}
	return compileResult{status: CompileSkipped, detail: "no compile step for " + lang.name}
}

// pyCompile compiles the file named by argv[1] and prints a syntax error
// as file:line: message.
const pyCompile = `import sys
p = sys.argv[1]
try:
    compile(open(p, "rb").read(), p, "exec")
except SyntaxError as e:
    print("%s:%s: %s" % (e.filename, e.lineno, e.msg), file=sys.stderr)
    sys.exit(1)
`

// cargoCompile runs `cargo test --no-run` on the crate. Cargo.lock is a
// manifest too: with one, --locked makes cargo fail rather than change it;
// without one, the lock file cargo creates for the build is removed again.
func cargoCompile(ctx context.Context, timeout time.Duration, sut, crate string) compileResult {
	crateDir := filepath.Join(sut, filepath.FromSlash(crate))
	args := []string{"test", "--no-run", "--offline", "--quiet", "--manifest-path", filepath.Join(crateDir, "Cargo.toml")}
	lockDir := findUp(sut, crate, "Cargo.lock")
	if lockDir != "" {
		args = append(args, "--locked")
	}
	res := runCompile(ctx, timeout, crateDir, nil, "cargo", args...)
	if lockDir == "" {
		if made := findUp(sut, crate, "Cargo.lock"); made != "" {
			_ = os.Remove(filepath.Join(sut, filepath.FromSlash(made), "Cargo.lock"))
		}
	}
	return res
}

// cargoReaches says why cargo would not compile file (empty when it
// would): cargo builds tests/<name>.rs and tests/<dir>/main.rs on its own,
// any other file only through a `mod` line there — and author mode never
// edits Cargo.toml to add a [[test]] target.
func cargoReaches(crateDir, file string) string {
	rel, err := filepath.Rel(filepath.Join(crateDir, "tests"), file)
	if err != nil || !filepath.IsLocal(rel) {
		return "not under the crate's tests/: cargo would not build it"
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) == 1 || (len(parts) == 2 && parts[1] == "main.rs") {
		return ""
	}
	if len(parts) == 2 {
		stem := strings.TrimSuffix(parts[1], ".rs")
		main := filepath.Join(crateDir, "tests", parts[0], "main.rs")
		data, err := os.ReadFile(main)
		if err == nil && regexp.MustCompile(`(?m)^\s*(pub\s+)?mod\s+`+regexp.QuoteMeta(stem)+`\s*;`).Match(data) {
			return ""
		}
		return fmt.Sprintf("cargo builds %s only through `mod %s;` in tests/%s/main.rs (not there; dstgen never edits the crate)", filepath.ToSlash(rel), stem, parts[0])
	}
	return "nested deeper than tests/<dir>/: cargo would not build it"
}

func runCompile(ctx context.Context, timeout time.Duration, dir string, env []string, tool string, args ...string) compileResult {
	cmdline := tool + " " + strings.Join(args, " ")
	if _, err := exec.LookPath(tool); err != nil {
		return compileResult{status: CompileSkipped, detail: tool + " not installed", cmd: cmdline}
	}
	_, err := runToolEnv(ctx, timeout, dir, env, nil, tool, args...)
	if err == nil {
		return compileResult{status: CompileOK, cmd: cmdline}
	}
	return compileResult{status: CompileFailed, detail: firstError(err.Error()), cmd: cmdline}
}

func runTool(ctx context.Context, timeout time.Duration, dir string, stdin []byte, tool string, args ...string) ([]byte, error) {
	return runToolEnv(ctx, timeout, dir, nil, stdin, tool, args...)
}

// runToolEnv runs tool in dir with a time bound; the error carries the
// tool's stderr (or stdout when stderr is empty).
func runToolEnv(ctx context.Context, timeout time.Duration, dir string, env []string, stdin []byte, tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%s timed out after %s", tool, timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New(msg)
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps the first outputLimit bytes a tool prints and
// drops the rest, so a chatty compiler cannot fill memory.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := outputLimit - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// firstError picks the first line that looks like a compiler error
// ("file:line" or "error"), else the first non-empty line.
func firstError(out string) string {
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if regexp.MustCompile(`\.\w+:\d+`).MatchString(t) || strings.HasPrefix(t, "error") {
			return t
		}
	}
	return oneline.First(out)
}

func firstTool(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// findUp returns the SUT-relative directory (slash form, "." for the
// root) of the nearest name at or above dir, never above the SUT root;
// "" when there is none.
func findUp(sut, dir, name string) string {
	for i := 0; i < 64; i++ {
		if fi, err := os.Stat(filepath.Join(sut, filepath.FromSlash(dir), name)); err == nil && fi.Mode().IsRegular() {
			return dir
		}
		if dir == "." || dir == "/" || dir == "" {
			return ""
		}
		dir = path.Dir(dir)
	}
	return ""
}

// rustEdition reads `edition = "…"` from the crate's Cargo.toml, so
// rustfmt parses the skeleton as the crate will.
func rustEdition(sut, rel string) string {
	crate := findUp(sut, path.Dir(rel), "Cargo.toml")
	if crate == "" {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(sut, filepath.FromSlash(crate), "Cargo.toml"))
	if err != nil {
		return ""
	}
	if m := regexp.MustCompile(`(?m)^\s*edition\s*=\s*"(\d{4})"`).FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return ""
}
