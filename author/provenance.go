package author

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/plan"
)

// Provenance is the line author mode stamps at the top of every file it
// writes, in the target language's comment syntax:
//
//	// dstgen-provenance: scenario=S1 plan_sha256=<64 hex> plan=docs/testing-plans/x.md
//
// The plan path comes last so it may hold spaces.
type Provenance struct {
	Plan     string // the plan, SUT-relative when inside the SUT
	Scenario string // scenario id
	PlanSHA  string // sha256 of the plan bytes, hex
	Line     int    // 1-based line of the stamp in the file (ParseProvenance)
}

const provenanceKey = "dstgen-provenance:"

var provenanceRE = lazyre.New(`^\s*(?://|#)\s*dstgen-provenance:\s*scenario=(\S+)\s+plan_sha256=([0-9a-f]{64})\s+plan=(.+?)\s*$`)

// provenanceLines is how far into a file ParseProvenance looks: the stamp
// is at the top (after a shebang at most).
const provenanceLines = 10

// ParseProvenance finds the provenance stamp near the top of an authored
// file; ok is false for a file dstgen author did not write.
func ParseProvenance(data []byte) (Provenance, bool) {
	lines := bytes.SplitN(data, []byte("\n"), provenanceLines+1)
	for i, l := range lines {
		if i == provenanceLines {
			break
		}
		if m := provenanceRE.FindSubmatch(l); m != nil {
			return Provenance{Scenario: string(m[1]), PlanSHA: string(m[2]), Plan: string(m[3]), Line: i + 1}, true
		}
	}
	return Provenance{}, false
}

// stamp puts the provenance line on top of the skeleton (after a shebang,
// which must stay first). A Go sibling also gets `//go:build ignore`: a
// second copy of the test in the package would break the SUT's build.
func stamp(skeleton string, lang language, p Provenance, sibling bool) []byte {
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s scenario=%s plan_sha256=%s plan=%s\n", lang.comment, provenanceKey, p.Scenario, p.PlanSHA, p.Plan)
	fmt.Fprintf(&head, "%s Written by `dstgen author`; review it, fill the TODOs, commit it yourself.\n", lang.comment)
	if sibling && lang.name == "go" {
		head.WriteString("\n//go:build ignore\n")
	}
	head.WriteString("\n")
	body := strings.TrimLeft(skeleton, "\n")
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	if strings.HasPrefix(body, "#!") {
		first, rest, _ := strings.Cut(body, "\n")
		return []byte(first + "\n" + head.String() + rest)
	}
	return []byte(head.String() + body)
}

// unifiedDiff is the change as `git diff --no-index` prints it (git when
// installed, else a whole-file hunk), labelled a/<rel> and b/<rel>; old
// nil is a new file.
func unifiedDiff(ctx context.Context, rel string, old, new []byte) string {
	if d, err := gitDiff(ctx, rel, old, new); err == nil {
		return d
	}
	return wholeDiff(rel, old, new)
}

func gitDiff(ctx context.Context, rel string, old, new []byte) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "dstgen-author-diff-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	write := func(side string, data []byte) (string, error) {
		p := filepath.Join(tmp, side, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		return filepath.Join(side, filepath.FromSlash(rel)), os.WriteFile(p, data, 0o644)
	}
	oldName := os.DevNull
	if old != nil {
		if oldName, err = write("a", old); err != nil {
			return "", err
		}
	}
	newName, err := write("b", new)
	if err != nil {
		return "", err
	}
	out, err := runDiff(ctx, tmp, oldName, newName)
	if err != nil {
		return "", err
	}
	// For a new file git names both sides after the new one (b/<rel>);
	// the header reads a/<rel> b/<rel> as in a repository.
	return strings.Replace(string(out), "diff --git b/"+rel+" ", "diff --git a/"+rel+" ", 1), nil
}

func runDiff(ctx context.Context, dir, oldName, newName string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "diff", "--no-index", "--no-color", "--no-prefix", "--", oldName, newName)
	cmd.Dir = dir
	// git diff --no-index needs no repository; keep the user's config
	// (external diff drivers, pagers) out of it.
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_PAGER=cat")
	var out limitedBuffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		err = nil // 1 = the files differ
	}
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// wholeDiff is a one-hunk unified diff replacing old with new.
func wholeDiff(rel string, old, new []byte) string {
	split := func(b []byte) []string {
		if len(b) == 0 {
			return nil
		}
		return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	o, n := split(old), split(new)
	var b strings.Builder
	from := "a/" + rel
	if old == nil {
		from = "/dev/null"
	}
	fmt.Fprintf(&b, "--- %s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n", from, rel, min(1, len(o)), len(o), min(1, len(n)), len(n))
	for _, l := range o {
		b.WriteString("-" + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range n {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// gitRepo reports whether dir is inside a git work tree (and git is
// installed): only then is a written file staged.
func gitRepo(ctx context.Context, dir string) bool {
	if _, err := exec.LookPath("git"); err != nil {
		return false
	}
	out, err := runTool(ctx, toolTimeout, dir, nil, "git", "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// gitAdd stages rel for review; author mode never commits.
func gitAdd(ctx context.Context, dir, rel string) error {
	_, err := runTool(ctx, toolTimeout, dir, nil, "git", "add", "--", rel)
	return err
}

// DriftItem is an authored file whose provenance no longer matches the
// plan.
type DriftItem struct {
	File     string `json:"file"`     // SUT-relative path of the authored file
	Line     int    `json:"line"`     // line of its provenance stamp
	Scenario string `json:"scenario"` // the scenario that declares the file
	Message  string `json:"message"`
}

func (d DriftItem) String() string { return fmt.Sprintf("%s:%d: drift: %s", d.File, d.Line, d.Message) }

// Drift checks the files author mode wrote for the plan at planFile (each
// scenario's Target test file and its .new sibling) against the plan's
// current sha256: a stamp with another sha, or for another scenario, is
// drift. sutDir "" is resolved as SUTRoot does. Files without a stamp are
// hand-written and not checked; a target that would be refused (outside
// the tree) is not read.
func Drift(ctx context.Context, planFile, sutDir string) ([]DriftItem, error) {
	abs, err := filepath.Abs(planFile)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", planFile, err)
	}
	sut, err := plan.SUTRoot(sutDir, abs)
	if err != nil {
		return nil, err
	}
	data, err := plan.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	p, err := plan.ParseBytes(planFile, data)
	if err != nil {
		return nil, err
	}
	cur := sha(data)
	root, err := os.OpenRoot(sut)
	if err != nil {
		return nil, fmt.Errorf("open SUT dir: %w", err)
	}
	defer root.Close()
	var out []DriftItem
	for _, s := range p.Scenarios {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		lang, ok := languageOf(s.SkeletonLang, s.SkeletonTag)
		if !ok || strings.TrimSpace(s.TargetTestFile) == "" {
			continue
		}
		rel, err := cleanTarget(s.TargetTestFile, lang)
		if err != nil {
			continue
		}
		for _, f := range []string{rel, siblingPath(rel)} {
			if fi, err := root.Lstat(filepath.FromSlash(f)); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			head, err := readHead(root, f)
			if err != nil {
				return out, fmt.Errorf("drift: read %s: %w", f, err)
			}
			pv, ok := ParseProvenance(head)
			if !ok {
				continue
			}
			switch {
			case !strings.EqualFold(pv.Scenario, s.ID):
				out = append(out, DriftItem{File: f, Line: pv.Line, Scenario: s.ID,
					Message: fmt.Sprintf("scenario %s: %s was authored for scenario %s", s.ID, f, pv.Scenario)})
			case pv.PlanSHA != cur:
				out = append(out, DriftItem{File: f, Line: pv.Line, Scenario: s.ID,
					Message: fmt.Sprintf("scenario %s: %s was authored from plan sha256 %s, the plan is now %s; compare with `dstgen author --scenario %s --on-exists sibling`",
						s.ID, f, pv.PlanSHA[:12], cur[:12], s.ID)})
			}
		}
	}
	return out, nil
}

// readHead reads at most the first 64 KiB of rel: the stamp is at the top.
func readHead(root *os.Root, rel string) ([]byte, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, rootErr(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return buf[:n], nil
}
