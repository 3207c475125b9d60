package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/generator"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// etcdCopy copies examples/etcd (without a generated testing/) to a temp
// dir named etcd.
func etcdCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etcd")
	fixture.CopyDir(t, filepath.Join("..", "..", "examples", "etcd"), dir, "testing")
	return dir
}

// TestPlanNew: the scaffold lands in docs/testing-plans/<slug>.md, lint
// then fails on its TODOs (exit 2) and so does init; a second run refuses
// to overwrite it, --force does; bad flags exit 2 with a one-line reason.
func TestPlanNew(t *testing.T) {
	sut := etcdCopy(t)
	file := filepath.Join(sut, "docs", "testing-plans", "etcd-guarantees.md")
	code, out, errs := runDstgen(t, "", "plan", "new", "--sut", sut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// No --change: a plan for the whole system; the example's docs state
	// no promise the scan ranks as one (its README's durability line is an
	// instruction), so the one claim row is a TODO.
	if !strings.Contains(out, "plan="+file+" slug=etcd-guarantees mode=project-wide claims=0 more_claims=0 todos=") {
		t.Errorf("stdout: %s", out)
	}
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.ParseBytes(file, first)
	if err != nil || p.Slug != "etcd-guarantees" || p.Author != "dstgen plan new" {
		t.Fatalf("parse: %v, slug %q author %q", err, p.Slug, p.Author)
	}

	code, out, _ = runDstgen(t, "", "lint", file)
	if code != 2 || !strings.Contains(out, file+":12: TODO(summary) is left for a person to decide") {
		t.Errorf("lint exit %d, want 2 with the summary TODO at line 12:\n%s", code, out)
	}
	code, _, errs = runDstgen(t, "", "init", "--sut", sut, "--plan", file, "--out", filepath.Join(t.TempDir(), "testing"))
	if code != 2 || !strings.Contains(errs, "TODO(") {
		t.Errorf("init exit %d, want 2 naming a TODO: %s", code, errs)
	}

	if err := os.WriteFile(file, []byte("edited by a person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runDstgen(t, "", "plan", "new", "--sut", sut)
	if code != 2 || !strings.Contains(errs, "exists; --force overwrites it") || strings.Count(errs, "\n") != 1 {
		t.Errorf("second run exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(file); string(b) != "edited by a person\n" {
		t.Errorf("the existing file was changed: %q", b)
	}
	if code, _, errs = runDstgen(t, "", "plan", "new", "--sut", sut, "--force"); code != 0 {
		t.Fatalf("--force exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, first) {
		t.Error("--force did not rewrite the scaffold")
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad mode", []string{"--mode", "weekly"}, `--mode "weekly" is not change-scoped or project-wide`},
		{"bad slug", []string{"--slug", "My Plan"}, `--slug "My Plan" is not kebab-case`},
		{"no sut", []string{"--sut", filepath.Join(t.TempDir(), "gone")}, "no such file or directory"},
		{"unknown change", []string{"--change", "no-such-ref", "--out", filepath.Join(t.TempDir(), "p.md")}, "git diff no-such-ref:"},
		{"option as change", []string{"--change", "--output=x", "--out", filepath.Join(t.TempDir(), "p.md")}, "is not a commit or range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runDstgen(t, "", append([]string{"plan", "new", "--sut", sut}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, errs, tc.want)
			}
		})
	}
}

// TestPlanNewJSONAndChange: --json prints the candidate claims with their
// file:line, and --change lists the files of the range in §1.
func TestPlanNewJSONAndChange(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	sut := etcdCopy(t)
	// A promise with markup characters, to show the JSON keeps them as
	// they are (the driver's own comments are harness, not claims).
	if err := os.WriteFile(filepath.Join(sut, "GUARANTEES.md"), []byte("Every key is <prefix>/k<n> & a read of it is linearizable.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", sut, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	if err := os.WriteFile(filepath.Join(sut, "Makefile"), []byte("all:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "change")
	out := filepath.Join(t.TempDir(), "plan.md")
	code, stdout, errs := runDstgen(t, "", "plan", "new", "--sut", sut, "--change", "HEAD~1..HEAD", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep planNewReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	g := slices.IndexFunc(rep.Claims, func(c generator.CandidateClaim) bool { return c.Source == "GUARANTEES.md:1" })
	if rep.File != out || rep.Slug != "etcd-head-1-head" || rep.Mode != "change-scoped" || len(rep.Claims) != 1 || g < 0 ||
		rep.Claims[g].Category != "safety" || rep.Claims[g].Kind != "linearizable" || rep.Claims[g].Matched != "linearizable" ||
		len(rep.Claims[g].Why) == 0 || rep.Claims[g].Score == 0 || len(rep.Touched) != 1 || rep.Touched[0].Path != "Makefile" || rep.TODOs == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stdout, `"text": "Every key is <prefix>/k<n>`) {
		t.Errorf("claim text HTML-escaped: %s", stdout)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "**Change under test:** `HEAD~1..HEAD`\n") || !strings.Contains(string(md), "\n- `Makefile` (+1 −") {
		t.Errorf("scaffold lacks the change or its files:\n%s", md)
	}
}

// TestPlanNewRealRepoFixtures: on the fixtures that reproduce public
// repositories (generator/testdata/realrepo) plan new names the SUT after
// the repository, not its major version, drafts a whole-system plan
// unless --change names a change, lists no release note, contribution
// guide or TODO line as a claim, and --max-claims bounds the list.
func TestPlanNewRealRepoFixtures(t *testing.T) {
	for _, tc := range []struct {
		fixture, slug string
		noise         []string // no claim's source starts with one of these
	}{
		{"kvstore", "kvstore-guarantees", []string{"CHANGELOG.md", "CONTRIBUTING.md"}},
		{"broker", "broker-guarantees", []string{"CONTRIBUTING.md", "TODO.md", "locksordering.txt", "LICENSE.md", "main.go"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			sut := filepath.Join(t.TempDir(), "checkout")
			fixture.CopyDir(t, filepath.Join("..", "..", "generator", "testdata", "realrepo", tc.fixture), sut, "testing")
			out := filepath.Join(t.TempDir(), "plan.md")
			code, stdout, errs := runDstgen(t, "", "plan", "new", "--sut", sut, "--out", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if !strings.Contains(stdout, " slug="+tc.slug+" mode=project-wide ") {
				t.Errorf("stdout %q, want slug %s and mode project-wide", stdout, tc.slug)
			}
			md, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.ParseBytes(out, md)
			if err != nil || p.Mode != "project-wide" || !strings.HasPrefix(string(md), "# Test Plan: "+tc.slug+"\n") {
				t.Errorf("parse %v, mode %q, title line %q", err, p.Mode, strings.SplitN(string(md), "\n", 2)[0])
			}
			code, stdout, errs = runDstgen(t, "", "plan", "new", "--sut", sut, "--out", out, "--force", "--json", "--max-claims", "2")
			if code != 0 {
				t.Fatalf("--max-claims exit %d: %s", code, errs)
			}
			var rep planNewReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			if len(rep.Claims) != 2 || rep.Mode != "project-wide" {
				t.Errorf("--max-claims 2: %d claims, mode %q", len(rep.Claims), rep.Mode)
			}
			for _, c := range rep.Claims {
				for _, n := range tc.noise {
					if strings.HasPrefix(c.Source, n) {
						t.Errorf("claim %s from %s: not a promise", c.ID, c.Source)
					}
				}
				if c.Matched == "" {
					t.Errorf("claim %s (%s) does not say why it was picked", c.ID, c.Source)
				}
			}
			for _, bad := range []string{"0", "-1", "x"} {
				code, _, errs := runDstgen(t, "", "plan", "new", "--sut", sut, "--out", out, "--force", "--max-claims", bad)
				if code != 2 || strings.Count(errs, "\n") != 1 {
					t.Errorf("--max-claims %s: exit %d, stderr %q", bad, code, errs)
				}
			}
		})
	}
}
