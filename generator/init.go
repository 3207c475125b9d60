package generator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/plan"
)

// InitOptions are the inputs of `dstgen init`.
type InitOptions struct {
	SUT  string // SUT root; "" = current directory
	Plan string // plan file; "" = the single docs/testing-plans/*.md, if any
	Out  string // output dir; "" = <SUT>/testing

	Force  bool // overwrite generated files edited since generation
	DryRun bool // decide and report, write nothing
	Yes    bool // accept every question's default without asking

	// Agents are the agent kinds (KnownAgents; ParseAgents checks a flag
	// value) whose definitions are also written at the SUT root, where
	// each agent looks by itself: outside the output directory, so only
	// on request. Same rules as testing/: edits kept unless Force, nothing
	// written on DryRun.
	Agents []string

	// Prompt, when non-nil, is a terminal to ask the scanner's open
	// questions on (answers are read one line each, Enter = default).
	// nil never waits for input: unanswered questions become TODOs.
	Prompt io.Reader
	// Log receives the questions; nil discards them.
	Log io.Writer

	// Templates replaces the embedded template tree (tests).
	Templates fs.FS

	// CheckTaskfile proves the rendered Taskfile.yml in dir is one go-task
	// can compile; Init writes nothing when it fails. It is required: the
	// CLI passes internal/gotask.Check. Injecting it keeps go-task's large
	// dependency tree out of this package (and out of its fuzz builds).
	CheckTaskfile func(dir string) error
}

// InitResult is what Init decided and did.
type InitResult struct {
	SUT, Out string // absolute
	PlanPath string // absolute; "" = no plan (benchmark framework only)
	Profile  *Profile
	Plan     *plan.Plan
	Warnings []plan.Problem // lint warnings (errors stop Init)
	Actions  []FileAction   // per generated file, sorted by path
	// AgentActions are the --agents files, by path relative to the SUT
	// root, in KnownAgents order.
	AgentActions []FileAction
	DryRun       bool
}

// Init scans the SUT, reads and lints the plan, asks or records the open
// questions, renders testing/ and writes it safely: everything is rendered
// into a temporary directory next to the output and checked (go-task must
// be able to compile the Taskfile) before any file is moved into place;
// env.yml is never written and hand-edited files are kept unless Force.
// Every error is about the input or the environment (exit 2 material).
func Init(ctx context.Context, o InitOptions) (*InitResult, error) {
	if o.CheckTaskfile == nil {
		return nil, errors.New("init: no Taskfile checker configured")
	}
	agents, err := ParseAgents(o.Agents)
	if err != nil {
		return nil, err
	}
	sut, err := plan.SUTRoot(o.SUT, "")
	if err != nil {
		return nil, err
	}
	out := o.Out
	if out == "" {
		out = filepath.Join(sut, "testing")
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, fmt.Errorf("output dir %s: %w", o.Out, err)
	}
	if err := checkOut(out); err != nil {
		return nil, err
	}
	res := &InitResult{SUT: sut, Out: out, DryRun: o.DryRun}

	planPath, err := plan.Find(sut, o.Plan)
	if err != nil {
		return nil, err
	}
	var planData []byte
	if planPath != "" {
		// One read: the bytes linted and rendered are the bytes hashed
		// into plan_sha256, even if the plan is edited meanwhile.
		// plan.ReadFile is bounded: a device such as /dev/zero cannot
		// exhaust memory.
		if planData, err = plan.ReadFile(planPath); err != nil {
			return nil, err
		}
		p, err := plan.ParseBytes(planPath, planData)
		if err != nil {
			return nil, err // file:line
		}
		probs := plan.Lint(p)
		if plan.Errors(probs) > 0 {
			return nil, &plan.LintError{Problems: probs}
		}
		res.Plan, res.PlanPath, res.Warnings = p, planPath, probs
	}

	outRel, err := filepath.Rel(sut, out)
	// ".." or "../…" climbs out of the SUT; "..x" is a dir inside it.
	if err != nil || !filepath.IsLocal(outRel) {
		outRel = ""
	}
	prof, err := Scan(ctx, sut, ScanOptions{PlanPath: planPath, OutDir: filepath.ToSlash(outRel)})
	if err != nil {
		return nil, err
	}
	res.Profile = prof
	// Before any question: a template deploy would refuse is not worth
	// answering questions about.
	if err := checkSUTTemplates(prof, res.Plan); err != nil {
		return nil, err
	}

	switch {
	case o.Yes:
		for i := range prof.Questions {
			if prof.Questions[i].Answer == "" {
				prof.Questions[i].Answer = prof.Questions[i].Default
			}
		}
	case o.Prompt != nil:
		// docs/real-env-test.md §2.2: what was inferred is shown back before any
		// question, so the person answers (or stops) knowing what the
		// answers complete.
		if o.Log != nil && hasOpen(prof.Questions) {
			if err := WriteSummary(o.Log, prof); err != nil {
				return nil, fmt.Errorf("show scan summary: %w", err)
			}
			fmt.Fprintln(o.Log, "\nCheck the summary above; Ctrl-C stops without writing anything. Enter keeps a default; end of input leaves the rest as TODO.")
		}
		if err := ask(ctx, prof.Questions, o.Prompt, o.Log); err != nil {
			return nil, err
		}
	}

	in := RenderInput{Profile: prof, Plan: res.Plan, Templates: o.Templates}
	// Inside the SUT, testing/ names the SUT's files relative to itself
	// (the tree moves as one); outside it (--out /tmp/x), by absolute
	// path: "../../../work/app/deploy/x.tmpl" breaks as soon as either
	// moves and says nothing to the person reading env.yml.
	inSUT := outRel != ""
	in.SUTRel = sut
	if inSUT {
		in.SUTRel = relSlash(out, sut)
	}
	in.SUTRel = filepath.ToSlash(in.SUTRel)
	in.TestingDir = filepath.ToSlash(outRel)
	if planPath != "" {
		in.PlanSHA = sum(planData)
		in.PlanPath = filepath.ToSlash(planPath)
		if inSUT {
			in.PlanPath = relSlash(out, planPath)
		}
		in.PlanRel = relSlash(sut, planPath)
	}
	files, err := Render(in)
	if err != nil {
		return nil, err
	}
	prof.Root = "" // machine-specific; profile.yml records sut as SUTRel
	meta, err := profileYAML(in, prof)
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: ProfilePath, Data: meta, Mode: 0o644})

	man, err := readManifest(out)
	if err != nil {
		return nil, err
	}
	acts, err := planActions(out, files, man, o.Force)
	if err != nil {
		return nil, err
	}
	// The agent files name the testing dir from the SUT root, where their
	// agent starts: relative inside the SUT, absolute outside it.
	ain := in
	if ain.TestingDir == "" {
		ain.TestingDir = filepath.ToSlash(out)
	}
	afs, err := planAgents(sut, agents, ain, man, o.Force)
	if err != nil {
		return nil, err
	}
	res.AgentActions = agentActions(afs)
	newMan := newManifest(files, acts, man)
	newMan.SUTFiles = sutManifest(man.SUTFiles, afs)
	mf := File{Path: ManifestPath, Data: newMan.encode(), Mode: 0o644}
	ma, err := planActions(out, []File{mf}, man, true)
	if err != nil {
		return nil, err
	}
	files, acts = append(files, mf), append(acts, ma...)
	order(files, acts)
	res.Actions = acts
	prof.Root = sut

	if o.DryRun {
		// Still prove the Taskfile compiles, in a scratch dir outside out.
		tmp, err := os.MkdirTemp("", "dstgen-dry-run-*")
		if err != nil {
			return nil, fmt.Errorf("dry run: %w", err)
		}
		defer os.RemoveAll(tmp)
		if err := checkStaged(tmp, files, o.CheckTaskfile); err != nil {
			return nil, err
		}
		return res, nil
	}

	tmp, err := stage(out, files)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := o.CheckTaskfile(tmp); err != nil {
		return nil, fmt.Errorf("generated Taskfile.yml is not valid for go-task (nothing written): %s", oneline.Fold(err.Error()))
	}
	// Before testing/'s manifest: should this fail, the manifest does not
	// vouch for a file that never reached the disk; should the commit
	// fail after it, a file written here equals its generation and reads
	// as "unchanged", not as edited.
	if err := writeAgentFiles(sut, afs); err != nil {
		return nil, err
	}
	if err := commit(tmp, out, files, acts); err != nil {
		return nil, err
	}
	return res, nil
}

func checkStaged(dir string, files []File, check func(string) error) error {
	for _, f := range files {
		if f.Path != "Taskfile.yml" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f.Path), f.Data, 0o644); err != nil {
			return fmt.Errorf("dry run: %w", err)
		}
		if err := check(dir); err != nil {
			return fmt.Errorf("generated Taskfile.yml is not valid for go-task: %s", oneline.Fold(err.Error()))
		}
	}
	return nil
}

func order(files []File, acts []FileAction) {
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return files[idx[a]].Path < files[idx[b]].Path })
	f2 := make([]File, len(files))
	a2 := make([]FileAction, len(acts))
	for i, j := range idx {
		f2[i], a2[i] = files[j], acts[j]
	}
	copy(files, f2)
	copy(acts, a2)
}

func relSlash(base, target string) string {
	r, err := filepath.Rel(base, target)
	if err != nil {
		return filepath.ToSlash(target)
	}
	return filepath.ToSlash(r)
}

// checkOut fails early, before any scanning, when out cannot become the
// output directory: it is a file, or its nearest existing ancestor is not
// a writable directory.
func checkOut(out string) error {
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("output dir %s is a file", out)
	}
	p := out
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("output dir %s is not writable: %s is not a directory", out, p)
			}
			if err := syscall.Access(p, 2 /* W_OK */); err != nil {
				return fmt.Errorf("output dir %s is not writable: %s: %w", out, p, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("output dir %s is not writable: %w", out, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return fmt.Errorf("output dir %s is not writable: no existing ancestor", out)
		}
		p = parent
	}
}

func hasOpen(qs []Question) bool {
	for _, q := range qs {
		if q.Answer == "" {
			return true
		}
	}
	return false
}

// ask puts each open question on the terminal: Enter keeps the default (an
// empty default leaves it open, written as a TODO); end of input stops
// asking. Reading happens off the caller's goroutine so a cancelled context
// is honoured even while a read blocks.
func ask(ctx context.Context, qs []Question, in io.Reader, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		br := bufio.NewReader(in)
		for {
			l, err := br.ReadString('\n')
			if l != "" || err == nil {
				select {
				case lines <- strings.TrimRight(l, "\r\n"):
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	group := ""
	for i := range qs {
		q := &qs[i]
		if q.Answer != "" {
			continue
		}
		if q.Group != "" && q.Group != group {
			group = q.Group
			fmt.Fprintf(log, "\n[%s]\n", group)
		}
		if q.Default != "" {
			fmt.Fprintf(log, "%s [%s]: ", q.Text, q.Default)
		} else {
			fmt.Fprintf(log, "%s (Enter to leave as TODO): ", q.Text)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(log)
				return nil
			}
			q.Answer = strings.TrimSpace(l)
			if q.Answer == "" {
				q.Answer = q.Default
			}
		}
	}
	return nil
}

// profileYAML is testing/.dstgen/profile.yml: the profile this generation
// used, with the plan it came from and its sha256 (docs/real-env-test.md §2.4), so
// a re-run can be diffed against it.
func profileYAML(in RenderInput, p *Profile) ([]byte, error) {
	doc := struct {
		Generator string   `yaml:"generator"`
		SUT       string   `yaml:"sut"`
		Plan      string   `yaml:"plan"`
		PlanSHA   string   `yaml:"plan_sha256"`
		Mode      string   `yaml:"mode"`
		Profile   *Profile `yaml:"profile"`
	}{"dstgen init", in.SUTRel, in.PlanPath, in.PlanSHA, p.Completeness.Mode, p}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode profile: %w", err)
	}
	head := "# Generated by dstgen init: the SUT profile and plan this testing/ dir was\n" +
		"# generated from. Rewritten on every run; edit env.yml, not this file.\n"
	return append([]byte(head), b...), nil
}
