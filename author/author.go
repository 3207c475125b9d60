// Package author is dstgen's author mode: it writes each plan scenario's
// Skeleton (docs/plan-format.md §9.3) to its Target test file in the SUT's
// own tree, stamped with where it came from, then runs the SUT's formatter
// and compile step and leaves the result for review — never committed.
//
// Safety is the point of the package: a target outside the SUT tree
// (absolute, "..", a symlink that leaves it), a manifest (go.mod,
// Cargo.toml, package.json, …), anything under .git, or a file of another
// language is refused before anything is written; an existing file is
// never replaced without the user's say (OnExists); writes go through an
// os.Root on the SUT directory.
//
// The provenance line (see Provenance) carries the plan's sha256, so Drift
// can report authored tests whose plan has changed since.
package author

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/plan"
)

// What to do when a target file already exists.
const (
	OnExistsAsk       = "ask"       // show it and ask (a terminal); without one: skip
	OnExistsSkip      = "skip"      // keep the file (the default without a terminal)
	OnExistsOverwrite = "overwrite" // replace it (the diff shows what changed)
	OnExistsSibling   = "sibling"   // write <stem>.new.<ext> beside it
)

// Actions reported per scenario.
const (
	ActWritten     = "written"        // a new target file
	ActOverwritten = "overwritten"    // an existing target replaced (OnExistsOverwrite or the user's answer)
	ActSibling     = "sibling"        // written beside the existing target
	ActSkipped     = "skipped"        // the target exists and was kept
	ActWouldWrite  = "would-write"    // DryRun: what a real run would do, nothing written
	ActRefused     = "refused"        // unsafe target or unusable skeleton; nothing written
	ActNoAuthor    = "no-author-mode" // no Target test file or no Skeleton: the ephemeral harness applies
)

// Compile statuses.
const (
	CompileOK      = "ok"
	CompileFailed  = "failed"
	CompileSkipped = "skipped"
)

// DefaultCompileTimeout bounds one scenario's compile step; a cold cargo
// build of a small crate fits well inside.
const DefaultCompileTimeout = 5 * time.Minute

// maxSkeleton bounds a skeleton: it is a test stub, not a program.
const maxSkeleton = 1 << 20

// Options configure Run.
type Options struct {
	Plan      string   // plan file; "" = the single docs/testing-plans/*.md of the SUT
	SUT       string   // SUT root; "" = the directory two above a docs/testing-plans plan, else the current directory
	Scenarios []string // scenario ids to author; empty = every scenario
	// OnExists is one of the OnExists* values; "" is OnExistsAsk when
	// Prompt is set and OnExistsSkip otherwise.
	OnExists string
	DryRun   bool // report and diff, write nothing, compile nothing
	// Prompt, when set, is the terminal the user answers on (OnExistsAsk);
	// Log is where the existing file and the question are shown.
	Prompt io.Reader
	Log    io.Writer
	// CompileTimeout bounds each compile step (0 = DefaultCompileTimeout).
	CompileTimeout time.Duration
}

// Result is what Run did.
type Result struct {
	SUT       string // absolute SUT root
	Plan      string // the plan, SUT-relative when inside the SUT
	PlanSHA   string // sha256 of the plan bytes authored from
	Scenarios []ScenarioResult
}

// ScenarioResult is one scenario's outcome.
type ScenarioResult struct {
	ID, Name string
	Target   string // the declared Target test file (as written in the plan)
	Path     string // SUT-relative path written (the target or its sibling); "" when nothing was
	Action   string // one of the Act* values
	Reason   string // why skipped, refused or not in author mode
	Format   string // the formatter that ran, or "none (… not installed)"
	// FormatError is the formatter's first error; the skeleton is then
	// written as the plan has it.
	FormatError string
	Compile     string // CompileOK, CompileFailed, CompileSkipped, "" when nothing was written
	CompileCmd  string // the compile command that ran
	CompileErr  string // the first error (CompileFailed) or why it was skipped
	Staged      bool   // `git add`ed in the SUT's repository
	Diff        string // unified diff of the change (also for DryRun)
}

// Run authors the plan's scenarios into the SUT. It returns an error only
// for bad input that stops the whole run (no plan, unreadable SUT, a plan
// that fails lint, an unknown scenario id, a bad OnExists); per-scenario
// refusals are in the result.
func Run(ctx context.Context, o Options) (*Result, error) {
	switch o.OnExists {
	case "", OnExistsAsk, OnExistsSkip, OnExistsOverwrite, OnExistsSibling:
	default:
		return nil, fmt.Errorf("--on-exists %q: want ask, skip, overwrite or sibling", o.OnExists)
	}
	sut, planPath, err := locate(o.SUT, o.Plan)
	if err != nil {
		return nil, err
	}
	data, err := plan.ReadFile(planPath)
	if err != nil {
		return nil, err
	}
	p, err := plan.ParseBytes(planPath, data)
	if err != nil {
		return nil, err
	}
	if probs := plan.Lint(p); plan.Errors(probs) > 0 {
		return nil, &plan.LintError{Problems: probs}
	}
	res := &Result{SUT: sut, Plan: displayPlan(sut, planPath), PlanSHA: sha(data)}
	chosen, err := pick(p, o.Scenarios)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(sut)
	if err != nil {
		return nil, fmt.Errorf("open SUT dir: %w", err)
	}
	defer root.Close()
	a := &authorer{o: o, root: root, res: res, git: gitRepo(ctx, sut)}
	if a.o.CompileTimeout <= 0 {
		a.o.CompileTimeout = DefaultCompileTimeout
	}
	for _, s := range chosen {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("author: %w", err)
		}
		res.Scenarios = append(res.Scenarios, a.scenario(ctx, s))
	}
	return res, nil
}

// locate resolves the SUT root and the plan path (both absolute).
func locate(sutDir, planFile string) (string, string, error) {
	if planFile != "" {
		abs, err := filepath.Abs(planFile)
		if err != nil {
			return "", "", fmt.Errorf("plan %s: %w", planFile, err)
		}
		planFile = abs
	}
	sut, err := plan.SUTRoot(sutDir, planFile)
	if err != nil {
		return "", "", err
	}
	if planFile == "" {
		if planFile, err = plan.Find(sut, ""); err != nil {
			return "", "", err
		}
		if planFile == "" {
			return "", "", fmt.Errorf("no plan: %s has no docs/testing-plans/*.md; give one with --plan", sut)
		}
	}
	return sut, planFile, nil
}

func displayPlan(sut, planPath string) string {
	real := planPath
	if r, err := filepath.EvalSymlinks(planPath); err == nil {
		real = r
	}
	if rel, err := filepath.Rel(sut, real); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return planPath
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// pick returns the scenarios to author, in plan order; an unknown id is
// bad input.
func pick(p *plan.Plan, ids []string) ([]*plan.Scenario, error) {
	if len(ids) == 0 {
		out := make([]*plan.Scenario, len(p.Scenarios))
		for i := range p.Scenarios {
			out[i] = &p.Scenarios[i]
		}
		return out, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		for _, one := range strings.Split(id, ",") {
			if one = strings.TrimSpace(one); one != "" {
				want[strings.ToUpper(one)] = true
			}
		}
	}
	var out []*plan.Scenario
	for i := range p.Scenarios {
		if want[strings.ToUpper(p.Scenarios[i].ID)] {
			out = append(out, &p.Scenarios[i])
			delete(want, strings.ToUpper(p.Scenarios[i].ID))
		}
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		return nil, fmt.Errorf("--scenario %s: no such scenario in the plan", strings.Join(missing, ", "))
	}
	return out, nil
}

type authorer struct {
	o       Options
	root    *os.Root
	res     *Result
	git     bool
	answers *bufio.Reader // the terminal's answers (OnExistsAsk)
}

// readLine reads one answer line of at most limit bytes (the rest of a
// longer line is dropped), so a stuck or hostile input cannot grow memory.
func readLine(r *bufio.Reader, limit int) (string, error) {
	var b strings.Builder
	for {
		c, err := r.ReadByte()
		if err != nil {
			return b.String(), err
		}
		if c == '\n' {
			return b.String(), nil
		}
		if b.Len() < limit {
			b.WriteByte(c)
		}
	}
}

func (a *authorer) scenario(ctx context.Context, s *plan.Scenario) ScenarioResult {
	r := ScenarioResult{ID: s.ID, Name: s.Name, Target: s.TargetTestFile}
	hasTarget, hasSkel := strings.TrimSpace(s.TargetTestFile) != "", s.SkeletonLine > 0
	if !hasTarget || !hasSkel {
		var miss []string
		if !hasTarget {
			miss = append(miss, "no Target test file")
		}
		if !hasSkel {
			miss = append(miss, "no Skeleton")
		}
		r.Action = ActNoAuthor
		r.Reason = strings.Join(miss, " and ") + "; the scenario runs on the ephemeral harness under the session dir"
		return r
	}
	// A refusal points at the plan line to fix: the Target test file
	// field, or the skeleton's fence for a skeleton problem.
	at := func(line int) func(string, ...any) ScenarioResult {
		return func(format string, args ...any) ScenarioResult {
			r.Action, r.Reason = ActRefused, fileline.Errorf(a.res.Plan, line, format, args...).Error()
			return r
		}
	}
	refuseSkel, refuse := at(s.SkeletonLine), at(s.Fields[plan.FieldTarget])
	lang, ok := languageOf(s.SkeletonLang, s.SkeletonTag)
	if !ok {
		return refuseSkel("skeleton language %q (fence %q) is not rust, go, python, typescript or shell", s.SkeletonLang, s.SkeletonTag)
	}
	if !strings.Contains(s.Skeleton, "AUTO-GENERATED") {
		return refuseSkel("skeleton lacks the AUTO-GENERATED header (docs/plan-format.md §9.3); not written")
	}
	if len(s.Skeleton) > maxSkeleton {
		return refuseSkel("skeleton is %d bytes, more than %d", len(s.Skeleton), maxSkeleton)
	}
	rel, err := cleanTarget(s.TargetTestFile, lang)
	if err != nil {
		return refuse("%v", err)
	}
	exists, err := checkNoSymlink(a.root, rel)
	if err != nil {
		return refuse("%v", err)
	}
	dest, action := rel, ActWritten
	var old []byte
	if exists {
		old, err = a.root.ReadFile(filepath.FromSlash(rel))
		if err != nil {
			return refuse("read existing %s: %v", rel, err)
		}
		decision, asked := a.decide(s, rel, old)
		switch decision {
		case OnExistsOverwrite:
			action = ActOverwritten
		case OnExistsSibling:
			dest, action = siblingPath(rel), ActSibling
			sibExists, err := checkNoSymlink(a.root, dest)
			if err != nil {
				return refuse("%v", err)
			}
			old = nil
			if sibExists {
				prev, err := a.root.ReadFile(filepath.FromSlash(dest))
				if err != nil {
					return refuse("read existing %s: %v", dest, err)
				}
				if _, ok := ParseProvenance(prev); !ok {
					r.Action, r.Reason = ActSkipped, dest+" exists and was not written by dstgen author; kept"
					return r
				}
				old = prev
			}
		default:
			why := rel + " exists; kept"
			if !asked && a.o.OnExists != OnExistsSkip {
				why += " (no terminal to ask)"
			}
			r.Action, r.Reason = ActSkipped, why+"; --on-exists overwrite|sibling replaces it or writes beside it"
			return r
		}
	}
	src := stamp(s.Skeleton, lang, Provenance{Plan: a.res.Plan, Scenario: s.ID, PlanSHA: a.res.PlanSHA}, action == ActSibling)
	formatted, tool, ferr := formatSource(ctx, lang, a.res.SUT, dest, src, rustEdition(a.res.SUT, rel))
	r.Format = tool
	if ferr != nil {
		r.FormatError = ferr.Error()
	}
	r.Diff = unifiedDiff(ctx, dest, old, formatted)
	if a.o.DryRun {
		r.Action, r.Path = ActWouldWrite, dest
		r.Reason = action + " (dry run: nothing written)"
		return r
	}
	if err := writeFile(a.root, dest, formatted, old != nil); err != nil {
		return refuse("write %s: %v", dest, err)
	}
	r.Action, r.Path = action, dest
	if a.git {
		r.Staged = gitAdd(ctx, a.res.SUT, dest) == nil
	}
	if action == ActSibling {
		r.Compile, r.CompileErr = CompileSkipped, "a sibling is for review beside "+rel+", not part of the build"
		return r
	}
	c := compile(ctx, lang, a.res.SUT, dest, a.o.CompileTimeout)
	r.Compile, r.CompileErr, r.CompileCmd = c.status, c.detail, c.cmd
	return r
}

// decide returns what to do with an existing target: the OnExists
// option, or the user's answer on a terminal (asked is true then).
func (a *authorer) decide(s *plan.Scenario, rel string, old []byte) (decision string, asked bool) {
	mode := a.o.OnExists
	if mode == "" {
		mode = OnExistsAsk
	}
	if mode != OnExistsAsk {
		return mode, false
	}
	if a.o.Prompt == nil || a.o.Log == nil {
		return OnExistsSkip, false
	}
	fmt.Fprintf(a.o.Log, "%s: %s already exists:\n", s.ID, rel)
	lines := strings.SplitAfter(string(old), "\n")
	for i, l := range lines {
		if i == 40 {
			fmt.Fprintf(a.o.Log, "    … (%d more lines)\n", len(lines)-40)
			break
		}
		fmt.Fprintf(a.o.Log, "    %s", strings.TrimSuffix(l, "\n")+"\n")
	}
	fmt.Fprintf(a.o.Log, "%s: [s]kip, [o]verwrite, write a [n]ew sibling %s? [s] ", s.ID, siblingPath(rel))
	if a.answers == nil {
		// One reader for the whole run: a per-question reader would
		// swallow the answers typed ahead for later scenarios.
		a.answers = bufio.NewReader(a.o.Prompt)
	}
	line, err := readLine(a.answers, 4096)
	if err != nil && line == "" {
		return OnExistsSkip, true
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "o", "overwrite":
		return OnExistsOverwrite, true
	case "n", "new", "sibling":
		return OnExistsSibling, true
	}
	return OnExistsSkip, true
}

// writeFile writes data to rel inside root. A new file is created
// exclusively (a file that appeared since the pre-flight check is not
// clobbered); a replaced one is written to a temporary name and renamed
// over, so a crash leaves the old or the new file, never half of one.
func writeFile(root *os.Root, rel string, data []byte, replace bool) error {
	name := filepath.FromSlash(rel)
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return rootErr(err)
		}
	}
	if !replace {
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s appeared meanwhile; not overwritten", rel)
			}
			return rootErr(err)
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			_ = root.Remove(name)
			return err
		}
		return f.Close()
	}
	tmp := name + ".dstgen-tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return rootErr(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		_ = root.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return rootErr(err)
	}
	return nil
}
