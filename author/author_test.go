package author

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/testsupport/fixture"
)

const (
	goTarget  = "kv/s1_linearizable_get_test.go"
	goSibling = "kv/s1_linearizable_get_test.new.go"
	planRel   = "docs/testing-plans/kv.md"
)

// sutCopy copies a fixture SUT into a temp dir the test may write.
func sutCopy(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	fixture.CopyDir(t, filepath.Join("testdata", name), dst)
	return dst
}

// editPlan replaces old by new in the SUT's plan (old must be there).
func editPlan(t *testing.T, sut, old, new string) {
	t.Helper()
	p := filepath.Join(sut, filepath.FromSlash(planRel))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("plan has no %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runAuthor(t *testing.T, o Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func scenario(t *testing.T, res *Result, id string) ScenarioResult {
	t.Helper()
	for _, s := range res.Scenarios {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no result for %s in %+v", id, res.Scenarios)
	return ScenarioResult{}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func needTool(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed", tool)
	}
}

// TestGoWriteSkipSibling is the Go SUT's path: the first run writes the
// skeleton with its provenance, gofmt'd, and go vet compiles it; the
// second skips; sibling writes beside without breaking the package build.
func TestGoWriteSkipSibling(t *testing.T) {
	needTool(t, "go")
	sut := sutCopy(t, "gosut")
	res := runAuthor(t, Options{SUT: sut})
	s1 := scenario(t, res, "S1")
	if s1.Action != ActWritten || s1.Path != goTarget {
		t.Fatalf("S1 = %+v, want written to %s", s1, goTarget)
	}
	got := readFile(t, filepath.Join(sut, goTarget))
	pv, ok := ParseProvenance([]byte(got))
	planData := readFile(t, filepath.Join(sut, planRel))
	if !ok || pv.Scenario != "S1" || pv.Plan != planRel || pv.PlanSHA != sha([]byte(planData)) || pv.Line != 1 {
		t.Fatalf("provenance = %+v ok=%t, want S1 %s sha of the plan at line 1\n%s", pv, ok, planRel, got)
	}
	// The plan indents with four spaces; gofmt turns them into tabs.
	if s1.Format != "gofmt" || !strings.Contains(got, "\n\ts := kv.New()\n") {
		t.Errorf("format=%q, file not gofmt'd:\n%s", s1.Format, got)
	}
	if s1.Compile != CompileOK || !strings.HasPrefix(s1.CompileCmd, "go vet") {
		t.Errorf("compile = %q (%s) via %q, want ok via go vet", s1.Compile, s1.CompileErr, s1.CompileCmd)
	}
	if !strings.Contains(s1.Diff, "diff --git a/"+goTarget+" b/"+goTarget) || !strings.Contains(s1.Diff, "+++ b/"+goTarget) || !strings.Contains(s1.Diff, "+// dstgen-provenance: scenario=S1") {
		t.Errorf("diff does not show the new file:\n%s", s1.Diff)
	}
	s2 := scenario(t, res, "S2")
	if s2.Action != ActNoAuthor || !strings.Contains(s2.Reason, "no Target test file and no Skeleton") || !strings.Contains(s2.Reason, "ephemeral harness") {
		t.Errorf("S2 = %+v, want no-author-mode naming what is missing and the fallback", s2)
	}

	again := scenario(t, runAuthor(t, Options{SUT: sut}), "S1")
	if again.Action != ActSkipped || again.Path != "" {
		t.Errorf("second run: %+v, want skipped", again)
	}
	if now := readFile(t, filepath.Join(sut, goTarget)); now != got {
		t.Error("second run changed the existing target")
	}

	sib := scenario(t, runAuthor(t, Options{SUT: sut, OnExists: OnExistsSibling}), "S1")
	if sib.Action != ActSibling || sib.Path != goSibling || sib.Compile != CompileSkipped {
		t.Fatalf("sibling run: %+v", sib)
	}
	if sibText := readFile(t, filepath.Join(sut, goSibling)); !strings.Contains(sibText, "//go:build ignore") {
		t.Errorf("Go sibling lacks //go:build ignore:\n%s", sibText)
	}
	if now := readFile(t, filepath.Join(sut, goTarget)); now != got {
		t.Error("sibling run changed the target")
	}
	// With the sibling beside it, the package still compiles.
	over := scenario(t, runAuthor(t, Options{SUT: sut, OnExists: OnExistsOverwrite}), "S1")
	if over.Action != ActOverwritten || over.Compile != CompileOK {
		t.Errorf("overwrite with a sibling present: %+v", over)
	}
	// A second sibling run replaces dstgen's own sibling.
	if sib2 := scenario(t, runAuthor(t, Options{SUT: sut, OnExists: OnExistsSibling}), "S1"); sib2.Action != ActSibling {
		t.Errorf("second sibling run: %+v", sib2)
	}
}

// TestGoCompileFails reports the compiler's first error.
func TestGoCompileFails(t *testing.T) {
	needTool(t, "go")
	sut := sutCopy(t, "gosut")
	editPlan(t, sut, "s := kv.New()", "s := kv.Nope()")
	s1 := scenario(t, runAuthor(t, Options{SUT: sut}), "S1")
	if s1.Action != ActWritten || s1.Compile != CompileFailed {
		t.Fatalf("S1 = %+v, want written and compile failed", s1)
	}
	if !strings.Contains(s1.CompileErr, "s1_linearizable_get_test.go:") || !strings.Contains(s1.CompileErr, "Nope") {
		t.Errorf("compile error %q does not name the file:line and the undefined name", s1.CompileErr)
	}
}

// TestDryRun writes nothing but shows the diff.
func TestDryRun(t *testing.T) {
	sut := sutCopy(t, "gosut")
	s1 := scenario(t, runAuthor(t, Options{SUT: sut, DryRun: true}), "S1")
	if s1.Action != ActWouldWrite || !strings.Contains(s1.Diff, "TestS1LinearizableGetReturnsLastPut") {
		t.Errorf("dry run: %+v", s1)
	}
	if _, err := os.Stat(filepath.Join(sut, goTarget)); !os.IsNotExist(err) {
		t.Errorf("dry run wrote the target (stat err %v)", err)
	}
}

// TestAsk follows the answer given on the terminal.
func TestAsk(t *testing.T) {
	for _, tc := range []struct {
		answer, want, path string
	}{
		{"o\n", ActOverwritten, goTarget},
		{"n\n", ActSibling, goSibling},
		{"\n", ActSkipped, ""},
		{"", ActSkipped, ""}, // EOF: the default
	} {
		t.Run(strings.TrimSpace(tc.answer)+tc.want, func(t *testing.T) {
			sut := sutCopy(t, "gosut")
			if err := os.WriteFile(filepath.Join(sut, goTarget), []byte("package kv_test\n// hand-written\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			s1 := scenario(t, runAuthor(t, Options{SUT: sut, Prompt: strings.NewReader(tc.answer), Log: &log, DryRun: true}), "S1")
			if !strings.Contains(log.String(), "// hand-written") || !strings.Contains(log.String(), "[s]kip, [o]verwrite") {
				t.Errorf("the existing file and the question were not shown:\n%s", log.String())
			}
			got := s1.Action
			if got == ActWouldWrite {
				got = strings.Fields(s1.Reason)[0]
			}
			if got == ActOverwritten && (!strings.Contains(s1.Diff, "-// hand-written") || !strings.Contains(s1.Diff, "--- a/"+goTarget)) {
				t.Errorf("overwrite diff does not show the old file going:\n%s", s1.Diff)
			}
			if got != tc.want || s1.Path != tc.path {
				t.Errorf("answer %q: %+v, want %s %s", tc.answer, s1, tc.want, tc.path)
			}
		})
	}
}

// TestHostileTargets: every unsafe target is refused with a plan
// file:line reason, and nothing is written outside the tree or to a
// manifest.
func TestHostileTargets(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		setup        func(t *testing.T, sut, outside string)
		want         string
	}{
		{"dotdot", "../x_test.go", nil, "leaves the SUT tree"},
		{"dotdot-inner", "kv/../../x_test.go", nil, "leaves the SUT tree"},
		{"absolute", "/etc/x_test.go", nil, "absolute"},
		{"absolute-outside", "OUTSIDE/x_test.go", nil, "absolute"},
		{"symlink-dir-out", "escape/x_test.go", func(t *testing.T, sut, outside string) {
			mustSymlink(t, outside, filepath.Join(sut, "escape"))
		}, "symlink on the way leaves the SUT tree"},
		{"symlink-dir-out-deep", "escape/sub/x_test.go", func(t *testing.T, sut, outside string) {
			mustSymlink(t, outside, filepath.Join(sut, "escape"))
		}, "symlink on the way leaves the SUT tree"},
		{"symlink-file-to-manifest", "kv/link_test.go", func(t *testing.T, sut, _ string) {
			mustSymlink(t, "../go.mod", filepath.Join(sut, "kv", "link_test.go"))
		}, "is a symlink"},
		{"manifest", "go.mod", nil, "manifest go.mod"},
		{"manifest-nested", "sub/package.json", nil, "manifest package.json"},
		{"git", ".git/hooks/x.go", nil, "inside .git"},
		{"git-case", ".GIT/x_test.go", nil, "inside .git"},
		{"symlink-dir-into-git", "hk/x_test.go", func(t *testing.T, sut, _ string) {
			if err := os.MkdirAll(filepath.Join(sut, ".git", "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, ".git/hooks", filepath.Join(sut, "hk"))
		}, "symlink on the way"},
		{"wrong-language", "kv/x_test.py", nil, "does not end in .go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sut := sutCopy(t, "gosut")
			outside := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, sut, outside)
			}
			target := strings.ReplaceAll(tc.target, "OUTSIDE", outside)
			editPlan(t, sut, "`"+goTarget+"`", "`"+target+"`")
			mod := readFile(t, filepath.Join(sut, "go.mod"))
			s1 := scenario(t, runAuthor(t, Options{SUT: sut, OnExists: OnExistsOverwrite}), "S1")
			if s1.Action != ActRefused || !strings.Contains(s1.Reason, tc.want) || !strings.HasPrefix(s1.Reason, planRel+":") {
				t.Errorf("%s: %+v, want refused with %q at %s:line", tc.target, s1, tc.want, planRel)
			}
			if ents, _ := os.ReadDir(outside); len(ents) > 0 {
				t.Errorf("wrote outside the tree: %v", ents)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(sut), "x_test.go")); err == nil {
				t.Error("wrote ../x_test.go")
			}
			if now := readFile(t, filepath.Join(sut, "go.mod")); now != mod {
				t.Error("go.mod changed")
			}
		})
	}
}

// TestSkeletonRefused: no AUTO-GENERATED header, or a language author
// mode does not know, is refused at the skeleton's line.
func TestSkeletonRefused(t *testing.T) {
	for _, tc := range []struct{ name, old, new, want string }{
		{"no-marker", "// AUTO-GENERATED from test plan", "// generated from test plan", "AUTO-GENERATED"},
		{"language", "- **Skeleton language:** go", "- **Skeleton language:** cobol", "not rust, go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sut := sutCopy(t, "gosut")
			editPlan(t, sut, tc.old, tc.new)
			s1 := scenario(t, runAuthor(t, Options{SUT: sut}), "S1")
			if s1.Action != ActRefused || !strings.Contains(s1.Reason, tc.want) || !strings.HasPrefix(s1.Reason, planRel+":") {
				t.Errorf("%+v, want refused naming %q", s1, tc.want)
			}
			if _, err := os.Stat(filepath.Join(sut, goTarget)); err == nil {
				t.Error("a refused skeleton was written")
			}
		})
	}
}

func mustSymlink(t *testing.T, old, new string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(new), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(old, new); err != nil {
		t.Fatal(err)
	}
}

// TestDrift: no drift right after authoring; editing the plan makes the
// authored file drift, named with its scenario.
func TestDrift(t *testing.T) {
	sut := sutCopy(t, "gosut")
	runAuthor(t, Options{SUT: sut, OnExists: OnExistsSkip})
	planPath := filepath.Join(sut, planRel)
	d, err := Drift(context.Background(), planPath, "")
	if err != nil || len(d) != 0 {
		t.Fatalf("fresh: drift %v err %v, want none", d, err)
	}
	editPlan(t, sut, "4 keys, 60 s", "8 keys, 60 s")
	d, err = Drift(context.Background(), planPath, "")
	if err != nil || len(d) != 1 {
		t.Fatalf("after edit: drift %v err %v, want one", d, err)
	}
	if d[0].File != goTarget || d[0].Scenario != "S1" || d[0].Line != 1 || !strings.Contains(d[0].String(), goTarget+":1: drift: scenario S1") {
		t.Errorf("drift = %+v (%s)", d[0], d[0])
	}
	// A hand-written file at the target is not drift.
	if err := os.WriteFile(filepath.Join(sut, goTarget), []byte("package kv_test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := Drift(context.Background(), planPath, ""); err != nil || len(d) != 0 {
		t.Errorf("hand-written target: drift %v err %v, want none", d, err)
	}
}

// TestBadInput: the whole run stops with a reason.
func TestBadInput(t *testing.T) {
	sut := sutCopy(t, "gosut")
	for _, tc := range []struct {
		name string
		o    Options
		edit [2]string
		want string
	}{
		{"unknown-scenario", Options{SUT: sut, Scenarios: []string{"S9"}}, [2]string{}, "S9: no such scenario"},
		{"on-exists", Options{SUT: sut, OnExists: "clobber"}, [2]string{}, `"clobber"`},
		{"no-sut", Options{SUT: filepath.Join(sut, "nope")}, [2]string{}, "nope"},
		{"no-plan", Options{SUT: t.TempDir()}, [2]string{}, "no plan"},
		{"lint", Options{SUT: sut}, [2]string{"- **Oracle:** p99 get latency <= 10ms\n", ""}, "fails lint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit[0] != "" {
				editPlan(t, sut, tc.edit[0], tc.edit[1])
			}
			_, err := Run(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestGitStagesNeverCommits: in a git SUT the file is staged, HEAD stays.
func TestGitStagesNeverCommits(t *testing.T) {
	needTool(t, "git")
	needTool(t, "go")
	sut := sutCopy(t, "gosut")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = sut
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "sut")
	head := git("rev-parse", "HEAD")
	s1 := scenario(t, runAuthor(t, Options{SUT: sut}), "S1")
	if !s1.Staged {
		t.Errorf("not staged: %+v", s1)
	}
	if staged := git("diff", "--cached", "--name-only"); staged != goTarget {
		t.Errorf("staged = %q, want %s", staged, goTarget)
	}
	if now := git("rev-parse", "HEAD"); now != head {
		t.Error("author committed")
	}
}

// TestRust: the Rust SUT's write path with rustfmt, and cargo's compile
// step when cargo is installed.
func TestRust(t *testing.T) {
	sut := sutCopy(t, "rustsut")
	const target = "tests/auto/s1_acked_put_survives.rs"
	o := Options{SUT: sut}
	if _, err := exec.LookPath("cargo"); err != nil || testing.Short() {
		o.DryRun = true // the write path is checked below either way
	}
	s1 := scenario(t, runAuthor(t, Options{SUT: sut, DryRun: true}), "S1")
	if s1.Action != ActWouldWrite || !strings.Contains(s1.Diff, "+// dstgen-provenance: scenario=S1") {
		t.Fatalf("dry run: %+v", s1)
	}
	if o.DryRun {
		t.Skip("cargo not installed or -short: compile step skipped (write path checked by the dry run)")
	}
	s1 = scenario(t, runAuthor(t, o), "S1")
	if s1.Action != ActWritten || s1.Path != target {
		t.Fatalf("S1 = %+v", s1)
	}
	got := readFile(t, filepath.Join(sut, target))
	if _, ok := ParseProvenance([]byte(got)); !ok {
		t.Errorf("no provenance:\n%s", got)
	}
	if _, err := exec.LookPath("rustfmt"); err == nil {
		// The plan over-indents `let mut s`; rustfmt fixes it.
		if s1.Format != "rustfmt" || !strings.Contains(got, "\n    let mut s = Store::default();\n") {
			t.Errorf("format=%q (%s), not rustfmt'd:\n%s", s1.Format, s1.FormatError, got)
		}
	}
	if s1.Compile != CompileOK {
		t.Errorf("compile = %s: %s (%s)", s1.Compile, s1.CompileErr, s1.CompileCmd)
	}
	if _, err := os.Stat(filepath.Join(sut, "Cargo.lock")); err == nil {
		t.Error("the compile step left a Cargo.lock in the SUT")
	}
	// A target cargo would not build is said, not reported as compiled.
	if err := os.WriteFile(filepath.Join(sut, "tests/auto/main.rs"), []byte("// no mods\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s1 = scenario(t, runAuthor(t, Options{SUT: sut, OnExists: OnExistsOverwrite}), "S1")
	if s1.Compile != CompileSkipped || !strings.Contains(s1.CompileErr, "mod s1_acked_put_survives;") {
		t.Errorf("unreachable target: compile %s %q", s1.Compile, s1.CompileErr)
	}
}

// replaceSkeleton swaps S1's Target test file, Skeleton language and
// skeleton block for another language's.
func replaceSkeleton(t *testing.T, sut, target, lang, body string) {
	t.Helper()
	p := filepath.Join(sut, filepath.FromSlash(planRel))
	data := readFile(t, p)
	start := strings.Index(data, "- **Target test file:**")
	end := strings.Index(data, "#### §7.M — Model")
	if start < 0 || end < start {
		t.Fatal("fixture plan has no S1 skeleton")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- **Target test file:** `%s`\n- **Skeleton language:** %s\n- **Skeleton:**\n\n  ```%s\n", target, lang, lang)
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("  ```\n\n")
	if err := os.WriteFile(p, []byte(data[:start]+b.String()+data[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

const pySkeleton = `# AUTO-GENERATED from test plan: docs/testing-plans/kv.md
# Scenario: S1 linearizable_get_returns_last_put
def test_s1():
    # 1. Workload — TODO
    # 2. Faults — TODO
    # 3. Oracle — TODO
    pass
`

const shSkeleton = `#!/bin/sh
# AUTO-GENERATED from test plan: docs/testing-plans/kv.md
# 1. Workload — TODO
# 2. Faults — TODO
# 3. Oracle — TODO
true
`

// TestOtherLanguages: the provenance comment syntax and the compile step
// for Python and shell, and a TypeScript target without tsconfig.json.
func TestOtherLanguages(t *testing.T) {
	for _, tc := range []struct {
		name, target, lang, body string
		compile, detail, head    string
	}{
		{"python", "tests/auto/test_s1.py", "python", pySkeleton, CompileOK, "", "# dstgen-provenance: scenario=S1"},
		{"python-syntax", "tests/auto/test_s1.py", "python", strings.Replace(pySkeleton, "pass", "pass)", 1), CompileFailed, "test_s1.py", "# dstgen-provenance"},
		{"shell", "tests/auto/s1.sh", "shell", shSkeleton, CompileOK, "", "#!/bin/sh\n# dstgen-provenance: scenario=S1"},
		{"shell-syntax", "tests/auto/s1.sh", "shell", strings.Replace(shSkeleton, "true", "if then", 1), CompileFailed, "syntax error", "#!/bin/sh\n"},
		{"typescript-no-tsconfig", "tests/auto/s1.test.ts", "typescript", "// AUTO-GENERATED\n// Workload TODO\n// Faults TODO\n// Oracle TODO\n", CompileSkipped, "no tsconfig.json", "// dstgen-provenance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := map[string]string{"python": "python3", "shell": "bash", "typescript": "git"}[tc.lang]
			needTool(t, tool)
			sut := sutCopy(t, "gosut")
			replaceSkeleton(t, sut, tc.target, tc.lang, tc.body)
			s1 := scenario(t, runAuthor(t, Options{SUT: sut}), "S1")
			if s1.Action != ActWritten || s1.Compile != tc.compile || !strings.Contains(s1.CompileErr, tc.detail) {
				t.Errorf("%+v, want written, compile %s with %q", s1, tc.compile, tc.detail)
			}
			if got := readFile(t, filepath.Join(sut, tc.target)); !strings.HasPrefix(got, tc.head) {
				t.Errorf("file does not start with %q:\n%s", tc.head, got)
			}
			if ents, _ := os.ReadDir(filepath.Join(sut, "tests", "auto", "__pycache__")); len(ents) > 0 {
				t.Error("the Python compile step wrote __pycache__ into the SUT")
			}
		})
	}
}

// TestGoMissingDependency: the compile step never edits go.mod or go.sum
// to fetch an import the SUT does not have.
func TestGoMissingDependency(t *testing.T) {
	needTool(t, "go")
	sut := sutCopy(t, "gosut")
	editPlan(t, sut, `"example.com/kvsut/kv"`, "\"example.com/kvsut/kv\"\n      _ \"github.com/google/uuid\"")
	mod := readFile(t, filepath.Join(sut, "go.mod"))
	s1 := scenario(t, runAuthor(t, Options{SUT: sut}), "S1")
	if s1.Compile != CompileFailed || !strings.Contains(s1.CompileErr, "github.com/google/uuid") {
		t.Errorf("compile %s %q, want failed naming the missing module", s1.Compile, s1.CompileErr)
	}
	if now := readFile(t, filepath.Join(sut, "go.mod")); now != mod {
		t.Errorf("go.mod changed:\n%s", now)
	}
	if _, err := os.Stat(filepath.Join(sut, "go.sum")); err == nil {
		t.Error("go.sum created")
	}
}

// TestStamp: the provenance line in each comment syntax, after a shebang,
// and found again by ParseProvenance only near the top.
func TestStamp(t *testing.T) {
	pv := Provenance{Plan: "docs/testing-plans/my plan.md", Scenario: "S3", PlanSHA: strings.Repeat("ab", 32)}
	for _, tc := range []struct {
		lang, skel, wantPrefix string
		sibling                bool
	}{
		{"go", "package x\n", "// dstgen-provenance: scenario=S3 plan_sha256=abab", false},
		{"go", "package x\n", "// dstgen-provenance", true},
		{"rust", "fn f() {}", "// dstgen-provenance", false},
		{"python", "#!/usr/bin/env python3\nx = 1\n", "#!/usr/bin/env python3\n# dstgen-provenance", false},
		{"shell", "echo hi\n", "# dstgen-provenance", false},
	} {
		out := string(stamp(tc.skel, languages[tc.lang], pv, tc.sibling))
		if !strings.HasPrefix(out, tc.wantPrefix) || !strings.HasSuffix(out, "\n") {
			t.Errorf("%s: %q does not start with %q", tc.lang, out, tc.wantPrefix)
		}
		if strings.Contains(out, "//go:build ignore") != (tc.sibling && tc.lang == "go") {
			t.Errorf("%s sibling=%t: go:build ignore wrong:\n%s", tc.lang, tc.sibling, out)
		}
		got, ok := ParseProvenance([]byte(out))
		if !ok || got.Plan != pv.Plan || got.Scenario != pv.Scenario || got.PlanSHA != pv.PlanSHA {
			t.Errorf("%s: round trip %+v ok=%t", tc.lang, got, ok)
		}
	}
	deep := strings.Repeat("\n", provenanceLines) + string(stamp("x", languages["go"], pv, false))
	if _, ok := ParseProvenance([]byte(deep)); ok {
		t.Error("a stamp below the top counted as provenance")
	}
	if _, ok := ParseProvenance([]byte("// dstgen-provenance: scenario=S1 plan_sha256=short plan=x\n")); ok {
		t.Error("a malformed sha counted as provenance")
	}
}

// TestWholeDiff is the diff without git: a one-hunk replacement.
func TestWholeDiff(t *testing.T) {
	for _, tc := range []struct {
		old  []byte
		want string
	}{
		{nil, "--- /dev/null\n+++ b/f.go\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{[]byte("x\n"), "--- a/f.go\n+++ b/f.go\n@@ -1,1 +1,2 @@\n-x\n+a\n+b\n"},
	} {
		if got := wholeDiff("f.go", tc.old, []byte("a\nb\n")); got != tc.want {
			t.Errorf("wholeDiff(%q) =\n%s\nwant\n%s", tc.old, got, tc.want)
		}
	}
}

// TestAskSeveral: answers typed ahead reach the scenario they are for.
func TestAskSeveral(t *testing.T) {
	sut := sutCopy(t, "gosut")
	const s2Target = "kv/s2_get_within_test.go"
	editPlan(t, sut, "- **Release budget:** 1 node, 1 h, 0 faults, 10 seeds\n\n§7.M: not applicable",
		"- **Release budget:** 1 node, 1 h, 0 faults, 10 seeds\n- **Target test file:** `"+s2Target+"`\n- **Skeleton language:** go\n- **Skeleton:**\n\n  ```go\n  // AUTO-GENERATED\n  package kv_test\n  // Workload TODO\n  // Faults TODO\n  // Oracle TODO\n  ```\n\n§7.M: not applicable")
	for _, f := range []string{goTarget, s2Target} {
		if err := os.WriteFile(filepath.Join(sut, f), []byte("package kv_test\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	res := runAuthor(t, Options{SUT: sut, Prompt: strings.NewReader("o\nn\n"), Log: &log, DryRun: true})
	if s1 := scenario(t, res, "S1"); !strings.HasPrefix(s1.Reason, ActOverwritten) {
		t.Errorf("S1 = %+v, want overwritten", s1)
	}
	if s2 := scenario(t, res, "S2"); !strings.HasPrefix(s2.Reason, ActSibling) {
		t.Errorf("S2 = %+v, want sibling", s2)
	}
}

// TestWriteFileNeverClobbers: a file that appears between the pre-flight
// check and the write is kept.
func TestWriteFileNeverClobbers(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(root, "x_test.go", []byte("new"), false); err == nil || !strings.Contains(err.Error(), "appeared meanwhile") {
		t.Errorf("err = %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "x_test.go")); got != "mine" {
		t.Errorf("clobbered: %q", got)
	}
	if err := writeFile(root, "x_test.go", []byte("new"), true); err != nil || readFile(t, filepath.Join(dir, "x_test.go")) != "new" {
		t.Errorf("replace: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary file left: %v", ents)
	}
}
