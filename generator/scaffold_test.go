package generator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/testsupport/golden"
)

// scaffoldSUTs are the SUTs the scaffold is tried on: the three scanner
// fixtures, the bundled etcd example and the two that reproduce public
// repositories (testdata/realrepo).
var scaffoldSUTs = []struct{ name, src string }{
	{"goservice", "testdata/sut/goservice"},
	{"rustservice", "testdata/sut/rustservice"},
	{"chaostoolbox", "testdata/sut/chaostoolbox"},
	{"etcd", "../examples/etcd"},
	{"kvstore", "testdata/realrepo/kvstore"},
	{"broker", "testdata/realrepo/broker"},
}

const scaffoldDate = "2026-01-02"

// scaffoldOf copies src into a temp dir named name, scans it and renders
// its scaffold with o (Slug and Date defaulted).
func scaffoldOf(t *testing.T, name, src string, o ScaffoldOptions) ([]byte, []CandidateClaim, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	copyTree(t, src, dir)
	p, claims := claimsOf(t, dir)
	if o.Slug == "" {
		o.Slug = name + "-draft"
	}
	if o.Date == "" {
		o.Date = scaffoldDate
	}
	o.Claims = claims
	return Scaffold(p, o), claims, dir
}

// claimsOf scans dir and lists its candidate claims (default cap).
func claimsOf(t *testing.T, dir string) (*Profile, []CandidateClaim) {
	t.Helper()
	p, err := Scan(context.Background(), dir, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims, _, err := FindClaims(context.Background(), p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p, claims
}

var todoRE = regexp.MustCompile(`TODO\(([a-z-]+)(?::([^)]*))?\)`)

// todoLines returns the line of every TODO marker, one entry per marker.
func todoLines(md string) []int {
	var out []int
	for i, l := range strings.Split(md, "\n") {
		for range todoRE.FindAllStringIndex(l, -1) {
			out = append(out, i+1)
		}
	}
	return out
}

// fillValues are what a person might write for each TODO id; every one is
// a value lint accepts. model and checker take the scaffold's proposal.
var fillValues = map[string]string{
	"change":              "abc1234",
	"summary":             "Three members replicate a key-value store with Raft; clients talk to any member; state is durable in each member's write-ahead log.",
	"scope":               "The change reworks the write path; it needs testing because acknowledged writes must survive crashes.",
	"files-touched":       "`main.go` — the entry point",
	"file-summary":        "the write path",
	"out-of-scope":        "the web UI — not part of the release",
	"claim":               "Acknowledged writes survive a crash of any single node",
	"source":              "README.md",
	"scenario-name":       "acknowledged_writes_survive_crash",
	"confirm-claim":       "confirmed by the plan owner",
	"missing-claims":      "Docs and code appear aligned.",
	"sut-model":           "Persistence is a write-ahead log that is fsynced before the acknowledgement.",
	"invariant":           "one holder at a time",
	"failure-modes":       "split brain under partition",
	"hypothesis":          "a partition lets two nodes accept conflicting writes",
	"suspected":           "intuition",
	"subsystem":           "replication",
	"existing-tests":      "none",
	"verdict":             "not covered",
	"gap-kind":            "no test",
	"catches":             "interleavings under real faults",
	"cost":                "2 hours",
	"workload":            "4 clients, 50% get / 50% put, 10 keys, 10 min",
	"faults":              "isolate the leader at T+60s for 30s; repeat every 90s",
	"oracle":              "every acked write is read back and p99 <= 50 ms",
	"observability":       "op history JSONL and the SUT's metrics",
	"exit-criteria":       "PASS if the oracle holds over 3 seeds; FAIL on any violation",
	"smoke-budget":        "3 nodes, 60 s, 0 faults, 1 seed",
	"hardening-budget":    "3 nodes, 10 min, 4 faults, 3 seeds",
	"release-budget":      "5 nodes, 2 h, 40 faults, 10 seeds",
	"history":             "default schema, in-process",
	"nemesis":             "leader-isolation via iptables; evidence = DROP counter on the isolated node rises from 0",
	"reduction":           "fix the seed, shrink to 1 key and 2 clients, bisect the fault windows; then classify the blame",
	"surfaces":            "public API, admin API, export",
	"operations":          "get, list, export",
	"adversarial":         "prefix collision acme/ vs acme-corp/, case folding, embedded separators",
	"positive-controls":   "tenant A reads its own keys",
	"negative-controls":   "a cross-tenant get is denied and leaves no trace in logs, metrics or caches",
	"async-paths":         "compaction and the nightly export job",
	"observability-paths": "per-tenant metrics labels and the audit log",
	"fairness-formula":    "group=tenant; worst_group_p99 / aggregate_p99 <= 2.0; min_group_throughput >= 190 ops/s; error_rate_by_group == 0; repeat_spread <= 0.15",
	"arm-oracle":          "a cross-tenant get and list are denied",
	"threats":             "a partition or a crash during writes",
	"why-sufficient":      "the scenario injects both threats under load",
	"residual":            "Nothing is left uncovered beyond §8.",
	"confidence":          "If every scenario passes, we have not observed a violation of the claims under the tested faults. The runs used three to five nodes and bounded fault windows. Larger clusters and longer partitions were not tried. Section 8 lists what is out of scope.",
	"not-covered":         "the admin UI — not part of this change",
	"open-question":       "Should the release run on bare metal? — plan owner, 2026-12-31",
	"deploy-artifact":     "all",
}

// fill replaces every TODO marker with its id's value; an id without one
// fails the test, so a new kind of TODO needs a plausible answer here.
func fill(t *testing.T, md string) string {
	t.Helper()
	return todoRE.ReplaceAllStringFunc(md, func(m string) string {
		sub := todoRE.FindStringSubmatch(m)
		switch sub[1] {
		case "model", "checker":
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sub[2]), "proposed "))
			return strings.TrimSuffix(f[0], ",")
		}
		v, ok := fillValues[sub[1]]
		if !ok {
			t.Errorf("no fill value for %s", m)
		}
		return v
	})
}

// TestScaffoldLintsOnlyTODOsThenClean: on every SUT and both modes the
// scaffold parses, has every §0–§9 section in canonical order, lints as
// exactly its TODO markers (each at its line, nothing else), and once each
// TODO is filled lints with no problem at all; init refuses the scaffold
// and generates from the filled plan.
func TestScaffoldLintsOnlyTODOsThenClean(t *testing.T) {
	for _, sut := range scaffoldSUTs {
		for _, mode := range []string{ModeChangeScoped, ModeProjectWide} {
			t.Run(sut.name+"/"+mode, func(t *testing.T) {
				md, claims, dir := scaffoldOf(t, sut.name, sut.src, ScaffoldOptions{Mode: mode})
				_, filled := checkScaffold(t, md, mode, max(len(claims), 1))
				// init refuses the scaffold and takes the filled plan.
				planFile := filepath.Join(dir, "docs", "testing-plans", sut.name+"-draft.md")
				if err := os.MkdirAll(filepath.Dir(planFile), 0o755); err != nil {
					t.Fatal(err)
				}
				for _, tc := range []struct {
					text string
					ok   bool
				}{{string(md), false}, {filled, true}} {
					if err := os.WriteFile(planFile, []byte(tc.text), 0o644); err != nil {
						t.Fatal(err)
					}
					res, err := testInit(context.Background(), InitOptions{SUT: dir, Plan: planFile, Out: filepath.Join(t.TempDir(), "testing"), Yes: true})
					if tc.ok && (err != nil || res == nil) {
						t.Errorf("init of the filled plan: %v", err)
					}
					if !tc.ok && (err == nil || !strings.Contains(err.Error(), "TODO(")) {
						t.Errorf("init of the scaffold: %v, want a refusal naming a TODO", err)
					}
				}
			})
		}
	}
}

// TestScaffoldEveryCategory: one claim of each of the eleven categories
// (the fixtures have no boundary or fairness promise), with a change and
// its files: each gets its gate's blocks, and the same checks hold.
func TestScaffoldEveryCategory(t *testing.T) {
	var claims []CandidateClaim
	for i, cat := range plan.Categories {
		claims = append(claims, CandidateClaim{ID: fmt.Sprintf("C%d", i+1), Text: "Widgets keep promise " + cat, Category: cat, Source: fmt.Sprintf("README.md:%d", i+1)})
	}
	p := &Profile{Name: "widget", Language: []string{"go", "rust"}, Units: []Unit{{Name: "widget.service", File: "widget.service"}},
		Artifacts: []Artifact{{Name: "widgetd", Build: "go build ./cmd/widgetd", File: "go.mod"}},
		Toolbox:   []Tool{{Path: "tests/chaos/x_test.go", Role: "fault-injector", Why: "runs iptables | tc"}}}
	for _, mode := range []string{ModeChangeScoped, ModeProjectWide} {
		t.Run(mode, func(t *testing.T) {
			md := Scaffold(p, ScaffoldOptions{Slug: "widget-change", Date: scaffoldDate, Mode: mode, Change: "v1..v2",
				Touched: []TouchedFile{{Path: "a.go", Added: 1, Deleted: 2}, {Path: "logo.png", Added: -1, Deleted: -1}}, TouchedMore: 3, Claims: claims})
			pl, _ := checkScaffold(t, md, mode, len(claims))
			listed := strings.Contains(string(md), "- `logo.png` (binary) — TODO(file-summary") && strings.Contains(string(md), "- … and 3 more files")
			if listed != (mode == ModeChangeScoped) {
				t.Errorf("files touched listed %v in %s mode", listed, mode)
			}
			for _, s := range pl.Scenarios {
				cat := pl.Claim(s.Falsifies[0]).Category
				if plan.GatedModel(cat) != (s.M != nil) || plan.GatedModel(cat) == s.MNotApplicable || plan.GatedSurface(cat) != (s.S != nil) {
					t.Errorf("%s (%s): §7.M %v, sentinel %v, §7.M.S %v", s.ID, cat, s.M != nil, s.MNotApplicable, s.S != nil)
				}
			}
		})
	}
}

// checkScaffold asserts the scaffold's shape, lints it as exactly its TODOs
// and the filled version as clean, and returns the parsed scaffold and the
// filled text.
func checkScaffold(t *testing.T, md []byte, mode string, claims int) (*plan.Plan, string) {
	t.Helper()
	order := []string{"0", "1", "1b", "1c", "2", "3", "4", "5", "6", "6b", "7", "7b", "7c", "7d", "8", "9"}
	p, err := plan.ParseBytes("scaffold.md", md)
	if err != nil {
		t.Fatalf("scaffold does not parse: %v\n%s", err, md)
	}
	prev := 0
	for _, tok := range order {
		n, ok := p.Sections[tok]
		if !ok || n <= prev {
			t.Errorf("section %s at line %d (present %v), previous at %d", tok, n, ok, prev)
		}
		prev = n
	}
	if p.Mode != mode || p.Author != "dstgen plan new" || p.Status != "draft" || p.Date != scaffoldDate {
		t.Errorf("header: mode %q author %q status %q date %q", p.Mode, p.Author, p.Status, p.Date)
	}
	if len(p.Claims) != claims || len(p.Scenarios) != claims {
		t.Errorf("%d claims and %d scenarios, want %d each", len(p.Claims), len(p.Scenarios), claims)
	}
	for _, c := range p.Claims {
		if c.Inferred != "yes" {
			t.Errorf("claim %s Inferred %q, want yes until confirmed", c.ID, c.Inferred)
		}
	}
	want := todoLines(string(md))
	var got []int
	for _, pr := range plan.Lint(p) {
		if pr.Rule != plan.RuleTODO || pr.Severity != plan.SevError {
			t.Errorf("lint problem other than a TODO: %v", pr)
			continue
		}
		got = append(got, pr.Line)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("TODO problems at lines %v, want %v", got, want)
	}
	for _, m := range regexp.MustCompile(`TODO\([^)]*`).FindAllString(string(md), -1) {
		if strings.Contains(m[5:], "(") {
			t.Errorf("marker %q nests a parenthesis: lint and a reader see it end early", m)
		}
	}
	filled := fill(t, string(md))
	if strings.Contains(filled, "TODO(") {
		t.Errorf("a TODO is left after filling")
	}
	fp, err := plan.ParseBytes("filled.md", []byte(filled))
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range plan.Lint(fp) {
		t.Errorf("filled scaffold: %v", pr)
	}
	if t.Failed() {
		t.Logf("scaffold:\n%s", md)
	}
	return p, filled
}

// TestScaffoldGoldenEtcd pins the etcd scaffold (change-scoped, no
// --change, a fixed date): refresh with -update.
func TestScaffoldGoldenEtcd(t *testing.T) {
	md, _, _ := scaffoldOf(t, "etcd", "../examples/etcd", ScaffoldOptions{Slug: "etcd-kv-draft"})
	golden.Check(t, "testdata/golden/scaffold/etcd-kv-draft.md", md)
}

// TestFindClaims: the sentences that promise a guarantee are found with
// their file:line, the words that picked them and a category, best first;
// code, fences, headings, inline code, tests, vendored code and existing
// plans are not read, and a description that only mentions a property is
// no promise.
func TestFindClaims(t *testing.T) {
	files := map[string]string{
		"README.md": "# Widget\n\nWidget is a replicated store. Reads are linearizable per key.\n" +
			"Acknowledged writes are\ndurable across a crash of any node.\n\n```\nlinearizable in a fence\n```\n" +
			"## Exactly once heading\n\nSee `etcd-kv-guarantees.md` for more.\n\n" +
			"Each tenant sees only its own keys. A failed node leaves the membership view within 10 s.\n" +
			"Consumers see messages in order.\n",
		"docs/ops.md":                    "A rolling restart keeps the cluster available. Retries with the same request id are idempotent.\n",
		"internal/log/log.go":            "package log\n\n// Append is durable once it returns.\nfunc Append() { _ = \"linearizable\" }\n\n// Index is the ordered list of segments.\nvar Index []int\n",
		"internal/log/log_test.go":       "package log\n// linearizable in a test\n",
		"vendor/x/x.go":                  "// linearizable in vendor\n",
		"docs/testing-plans/old-plan.md": "Reads are linearizable.\n",
	}
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	p, err := Scan(ctx, dir, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, more, err := FindClaims(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ source, category, kind, matched, text string }{
		{"README.md:3", "safety", "linearizable", "linearizable", "Reads are linearizable per key."},
		{"README.md:14", "liveness", "liveness", "within 10 s", "A failed node leaves the membership view within 10 s."},
		{"README.md:5", "durability", "durability", "durable", "Acknowledged writes are durable across a crash of any node."},
		{"README.md:14", "boundary", "boundary", "sees only its own", "Each tenant sees only its own keys."},
		{"docs/ops.md:1", "idempotency", "idempotent", "idempotent", "Retries with the same request id are idempotent."},
		{"internal/log/log.go:3", "durability", "durability", "durable", "Append is durable once it returns."},
	}
	if len(got) != len(want) || more != 0 {
		t.Fatalf("%d claims and %d more, want %d: %+v", len(got), more, len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Source != w.source || g.Category != w.category || g.Kind != w.kind || g.Matched != w.matched || g.Text != w.text ||
			g.ID != fmt.Sprintf("C%d", i+1) || len(g.Why) == 0 || !strings.Contains(g.Why[0], w.matched) || g.Score < minClaimScore {
			t.Errorf("claim %d = %+v, want %+v", i, g, w)
		}
		if i > 0 && g.Score > got[i-1].Score {
			t.Errorf("claim %d scores %d, more than the one before it", i, g.Score)
		}
	}
	// At most max claims, best first; the README's repeats are one claim
	// that names the other lines, and what is left out is counted.
	many := t.TempDir()
	if err := os.WriteFile(filepath.Join(many, "README.md"), []byte(strings.Repeat("Reads are linearizable on shard X.\n\n", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, sentence := range []string{
		"Acknowledged writes are durable.", "Every message is delivered at least once.", "A retried publish is stored exactly once.",
		"Transactions are serializable.", "Followers apply entries in log order.", "A lease holder is the only holder.",
		"Snapshots survive a crash of the node.", "Stale reads are never served.", "Members join the cluster within 30 s.",
		"Each tenant sees only its own keys.", "A batch is applied atomically.", "Rolling upgrades keep every node serving reads.",
	} {
		sub := filepath.Join(many, "docs", fmt.Sprintf("d%02d", i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "guarantees.md"), []byte(sentence+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mp, err := Scan(ctx, many, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := FindClaims(ctx, mp, 50)
	if err != nil {
		t.Fatal(err)
	}
	got, more, err = FindClaims(ctx, mp, 5)
	readme := slices.IndexFunc(got, func(c CandidateClaim) bool { return c.Source == "README.md:1" })
	if err != nil || len(all) < 8 || len(got) != 5 || more != len(all)-5 || readme < 0 || len(got[readme].Also) != 9 || got[readme].Also[0] != "README.md:3" {
		t.Errorf("capped scan: %v, %d claims and %d more of %d (want 5; the README's repeats merged into README.md:1): %+v", err, len(got), more, len(all), got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := FindClaims(cctx, p, 0); err == nil {
		t.Error("FindClaims with a cancelled context succeeded")
	}
}

// TestScaffoldChangeScopedDiff: --change lists the files git diff --stat
// names, below the SUT only; a ref git does not know and a ref that looks
// like an option are errors, and nothing runs through a shell.
func TestScaffoldChangeScopedDiff(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	sut := filepath.Join(repo, "svc")
	gitRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun("init", "-q")
	write("svc/README.md", "Reads are linearizable.\n")
	write("svc/store.go", "package svc\n")
	write("other/x.go", "package other\n")
	gitRun("add", "-A")
	gitRun("commit", "-q", "-m", "one")
	base := gitRun("rev-parse", "HEAD")
	write("svc/store.go", "package svc\n\nfunc Put() {}\n")
	write("svc/new $(touch pwned).go", "package svc\n")
	write("other/x.go", "package other\n// changed\n")
	gitRun("add", "-A")
	gitRun("commit", "-q", "-m", "two")

	ctx := context.Background()
	files, err := DiffStat(ctx, sut, base+"..HEAD")
	if err != nil {
		t.Fatal(err)
	}
	want := []TouchedFile{{Path: "new $(touch pwned).go", Added: 1, Deleted: 0}, {Path: "store.go", Added: 2, Deleted: 0}}
	if !slices.Equal(files, want) {
		t.Errorf("DiffStat = %+v, want %+v", files, want)
	}
	if _, err := os.Stat(filepath.Join(sut, "pwned")); err == nil {
		t.Error("a file name was run as a command")
	}
	p, err := Scan(ctx, sut, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(Scaffold(p, ScaffoldOptions{Slug: "svc-change", Date: scaffoldDate, Change: base + "..HEAD", Touched: files}))
	for _, line := range []string{
		"**Change under test:** `" + base + "..HEAD`",
		"- `store.go` (+2 −0) — TODO(file-summary: one line on what changed)",
		"- `new $(touch pwned).go` (+1 −0) — TODO(file-summary: one line on what changed)",
	} {
		if !strings.Contains(md, line+"\n") {
			t.Errorf("scaffold lacks %q", line)
		}
	}
	for _, ref := range []string{"no-such-ref", "--output=/tmp/x", ""} {
		if _, err := DiffStat(ctx, sut, ref); err == nil {
			t.Errorf("DiffStat(%q) succeeded", ref)
		}
	}
}
