package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fixtures under testdata/realrepo reproduce what public
// distributed-system repositories carry (docs/plan-format.md §15): a
// module path with a major-version suffix, a changelog that is a list of
// pull requests, contribution guides, TODO checklists, licences, lock
// notes, and the real promises in a core package's doc comments under a
// tree of tools and tests.

// realRepo copies a realrepo fixture into a directory named "checkout",
// so a name taken from the directory is visibly wrong, and scans it.
func realRepo(t *testing.T, fixture string) *Profile {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	copyTree(t, filepath.Join("testdata", "realrepo", fixture), dir)
	p, err := Scan(context.Background(), dir, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// namedTree writes files (SUT-relative path → body) below a temp dir
// named name (the scanner's fallback project name) and returns the dir.
func namedTree(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(writeTree(t, nil), name)
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRealRepoName: the SUT is named after the repository — its module
// path without the /vN suffix, its package name, else its directory —
// never after a major version; a root main package's binary too.
func TestRealRepoName(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fixture  string            // a realrepo fixture, or
		files    map[string]string // an inline tree in a dir named "checkout"
		want     string
		artifact string // a binary the scan must list ("" = none checked)
	}{
		{name: "go module /v10", fixture: "kvstore", want: "kvstore", artifact: "kvstored"},
		{name: "go module /v2 with a root main", fixture: "broker", want: "broker", artifact: "broker"},
		{name: "gopkg.in .vN", files: map[string]string{"go.mod": "module gopkg.in/acme/ledger.v3\n"}, want: "ledger"},
		{name: "go module v1 path", files: map[string]string{"go.mod": "module example.com/acme/raftkv\n"}, want: "raftkv"},
		{name: "scoped npm package", files: map[string]string{"package.json": `{"name": "@acme/queue"}`}, want: "queue"},
		{name: "cargo package", files: map[string]string{"Cargo.toml": "[package]\nname = \"streamd\"\n"}, want: "streamd"},
		{name: "directory", files: map[string]string{"README.md": "# x\n"}, want: "checkout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Profile
			if tc.fixture != "" {
				p = realRepo(t, tc.fixture)
			} else {
				var err error
				if p, err = Scan(ctx, namedTree(t, "checkout", tc.files), ScanOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if p.Name != tc.want {
				t.Errorf("name %q, want %q", p.Name, tc.want)
			}
			if tc.artifact == "" {
				return
			}
			var names []string
			for _, a := range p.Artifacts {
				names = append(names, a.Name)
			}
			if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+tc.artifact+" ") {
				t.Errorf("artifacts %v, want %s among them", names, tc.artifact)
			}
			for _, n := range names {
				if len(n) >= 2 && n[0] == 'v' && strings.Trim(n[1:], "0123456789") == "" {
					t.Errorf("artifact named after a major version: %q", n)
				}
			}
		})
	}
}

// claimAt is a listed claim's place: the file:line of its phrase and its
// category.
type claimAt struct{ source, category string }

// TestRealRepoClaims: on each fixture the core packages' promises are
// listed with their file:line and category (as a claim, or as the Also of
// the claim of their kind in the same package); release notes, contribution
// guides, TODO lists, licences, lock notes, usage strings, tests and
// implementation notes ("used to track", "in order to", "lock ordering")
// are not; nothing from tools or test helpers ranks above a core promise;
// every claim's line holds the words it was picked for.
func TestRealRepoClaims(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []claimAt // listed, in any order
		core    int       // the first this many claims are all core or docs promises
		never   []string  // no claim's source starts with one of these
	}{
		{
			fixture: "kvstore",
			want: []claimAt{
				{"store/store.go:12", "safety"}, {"store/store.go:22", "safety"}, {"store/store.go:25", "safety"},
				{"db/wal/wal.go:5", "durability"}, {"cdc/service.go:6", "durability"}, {"README.md:6", "durability"},
			},
			core:  6,
			never: []string{"CHANGELOG.md", "CONTRIBUTING.md", "store/store_test.go", "store/store.go:10", "store/store.go:17"},
		},
		{
			fixture: "broker",
			want: []claimAt{
				{"server/stream.go:4", "durability"}, {"server/stream.go:10", "idempotency"},
				{"server/consumer.go:5", "durability"}, {"server/raft.go:4", "durability"},
			},
			core: 4,
			never: []string{"CONTRIBUTING.md", "TODO.md", "locksordering.txt", "GOVERNANCE.md", "CODE-OF-CONDUCT.md",
				"LICENSE.md", "RELEASES.md", "main.go", "conf/parse.go", "server/accounts.go"},
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			p := realRepo(t, tc.fixture)
			claims, _, err := FindClaims(context.Background(), p, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{} // a merged near-duplicate is listed too
			for _, c := range claims {
				got[c.Source] = c.Category
				for _, a := range c.Also {
					got[a] = c.Category
				}
				for _, pre := range tc.never {
					if strings.HasPrefix(c.Source, pre) {
						t.Errorf("%s listed (%q, picked for %q): not a promise", c.Source, c.Text, c.Matched)
					}
				}
				checkClaimLine(t, p.Root, c)
			}
			for _, w := range tc.want {
				if cat, ok := got[w.source]; !ok || cat != w.category {
					t.Errorf("%s: listed %v as %q, want a %s claim", w.source, ok, cat, w.category)
				}
			}
			for i, c := range claims {
				if i < tc.core && !isCoreOrDocs(c.Source) {
					t.Errorf("claim %d is %s (%q): the first %d should be core or docs promises", i+1, c.Source, c.Text, tc.core)
				}
			}
			if t.Failed() {
				for _, c := range claims {
					t.Logf("%s %s %s %q (%s)", c.ID, c.Source, c.Category, c.Text, c.Matched)
				}
			}
		})
	}
}

// isCoreOrDocs reports the fixtures' core packages and user docs.
func isCoreOrDocs(source string) bool {
	for _, pre := range []string{"store/", "db/", "cdc/", "server/", "README.md"} {
		if strings.HasPrefix(source, pre) {
			return true
		}
	}
	return false
}

// checkClaimLine asserts that the line a claim cites holds (the start of)
// the words it was picked for.
func checkClaimLine(t *testing.T, root string, c CandidateClaim) {
	t.Helper()
	file, line, ok := strings.Cut(c.Source, ":")
	n, err := strconv.Atoi(line)
	if !ok || err != nil {
		t.Errorf("%s: source is not file:line", c.Source)
		return
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Errorf("%s: %v", c.Source, err)
		return
	}
	lines := strings.Split(string(data), "\n")
	word := strings.Fields(strings.ReplaceAll(c.Matched, "-", " "))
	if c.Matched == "" || len(word) == 0 || n < 1 || n > len(lines) || !strings.Contains(strings.ToLower(strings.ReplaceAll(lines[n-1], "-", " ")), word[0]) {
		t.Errorf("%s: matched %q is not on that line", c.Source, c.Matched)
	}
}

// TestClaimsCapPerFileAndMerge: one file full of promises cannot fill the
// list — a core package's promise is still listed — and the same promise
// stated in two files is one candidate.
func TestClaimsCapPerFileAndMerge(t *testing.T) {
	var faq strings.Builder
	faq.WriteString("# FAQ\n\n")
	for i := range 30 {
		fmt.Fprintf(&faq, "Writes to table t%d are durable once acknowledged.\n\n", i)
	}
	dir := namedTree(t, "flood", map[string]string{
		"docs/faq.md":         faq.String(),
		"README.md":           "# flood\n\nReads are linearizable: a read returns the latest acknowledged write.\n",
		"docs/guarantees.md":  "# Guarantees\n\nReads are linearizable; a read returns the latest acknowledged write.\n",
		"raft/log.go":         "package raft\n\n// An entry is committed only once a majority has fsynced it, so a\n// committed entry is never lost.\nfunc commit() {}\n",
		"replication/copy.go": "package replication\n\n// Followers apply committed entries in log order, so every member\n// applies the same sequence of writes.\nfunc apply() {}\n",
	})
	_, claims := claimsOf(t, dir)
	perFile := map[string]int{}
	linearizable := 0
	for _, c := range claims {
		file, _, _ := strings.Cut(c.Source, ":")
		perFile[file]++
		if strings.HasPrefix(c.Text, "Reads are linearizable") {
			linearizable++
		}
	}
	if perFile["docs/faq.md"] > 3 {
		t.Errorf("%d claims from docs/faq.md: one file fills the list", perFile["docs/faq.md"])
	}
	if perFile["raft/log.go"] != 1 || perFile["replication/copy.go"] != 1 {
		t.Errorf("core promises listed %d (raft/log.go) and %d (replication/copy.go) times, want once each", perFile["raft/log.go"], perFile["replication/copy.go"])
	}
	if linearizable != 1 {
		t.Errorf("the linearizable-read promise is listed %d times, want once (merged)", linearizable)
	}
	if t.Failed() {
		for _, c := range claims {
			t.Logf("%s %s %q", c.ID, c.Source, c.Text)
		}
	}
}

// TestScaffoldStubFromClaim: the claim's words choose the §7 stub's model
// and checker (docs/history-and-checkers.md §4) and its fault.
func TestScaffoldStubFromClaim(t *testing.T) {
	for _, tc := range []struct {
		name, sentence           string
		category, model, checker string
		extra                    string // another line the stub must hold
	}{
		{"linearizable read", "Once the read index is confirmed, reads served by the leader are linearizable.", "safety", "kv", "linearizability", "`leader-isolation`"},
		{"at-least-once delivery", "An unacknowledged message is redelivered, so every message is delivered at least once.", "durability", "queue", "no-lost-ack", "`kill-9`"},
		{"exactly-once delivery", "A publish retried with the same message id is delivered exactly once.", "idempotency", "queue", "exactly-once", "`partition-full`"},
		{"durability after crash", "An acknowledged write is fsynced first, so it survives a crash of the member.", "durability", "log", "no-lost-ack", "`kill-9`"},
		{"isolation level", "Transactions run under snapshot isolation.", "isolation", "map", "serializability", "level snapshot-isolation"},
		{"serializable level", "Every transaction is strictly serializable.", "isolation", "map", "serializability", "level strict-serializable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := namedTree(t, "one", map[string]string{"store/store.go": "package store\n\n// " + tc.sentence + "\nfunc Do() {}\n"})
			p, claims := claimsOf(t, dir)
			if len(claims) != 1 || claims[0].Category != tc.category {
				t.Fatalf("claims %+v, want one %s claim", claims, tc.category)
			}
			md := string(Scaffold(p, ScaffoldOptions{Slug: "one-draft", Date: scaffoldDate, Claims: claims}))
			for _, want := range []string{
				"- **Model under test:** TODO(model: proposed " + tc.model + " ",
				"- **Checker:** TODO(checker: proposed " + tc.checker + ", the picker's choice for " + tc.model + " / " + tc.category,
				tc.extra,
			} {
				if !strings.Contains(md, want) {
					t.Errorf("scaffold lacks %q", want)
				}
			}
			if t.Failed() {
				i := strings.Index(md, "## 7. Scenarios")
				t.Logf("%s", md[i:])
			}
		})
	}
}

// deployArtifactJSON is what the profile's JSON says of one deploy
// artifact (decoded loosely, so the test reads the JSON a program reads).
type deployArtifactJSON struct {
	Kind    string `json:"kind"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Name    string `json:"name"`
	Command string `json:"command"`
}

// TestScanDeployArtifacts: the scan reports the deploy artifacts the
// fixtures carry — Dockerfiles, compose files, Helm charts and Kubernetes
// manifests, systemd units and Makefile targets that start a cluster —
// each with its file:line and what it starts.
func TestScanDeployArtifacts(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []deployArtifactJSON // kind, file, line, name and a part of the command
	}{
		{"kvstore", []deployArtifactJSON{
			{Kind: "dockerfile", File: "Dockerfile", Line: 10, Name: "kvstored", Command: "/bin/kvstored -http-addr 0.0.0.0:4001 /kvstore/data"},
			{Kind: "compose", File: "docker-compose.yml", Line: 2, Name: "node1", Command: "-node-id 1"},
			{Kind: "compose", File: "docker-compose.yml", Line: 7, Name: "node2", Command: "-join node1:4002"},
			{Kind: "make-target", File: "Makefile", Line: 4, Name: "cluster-up", Command: "docker compose up -d"},
		}},
		{"broker", []deployArtifactJSON{
			{Kind: "dockerfile", File: "docker/Dockerfile.nightly", Line: 9, Name: "broker", Command: "/bin/broker --cluster nats://0.0.0.0:6222"},
			{Kind: "helm-chart", File: "deploy/helm/broker/Chart.yaml", Line: 2, Name: "broker"},
			{Kind: "kubernetes", File: "deploy/helm/broker/templates/statefulset.yaml", Line: 2, Name: "StatefulSet/{{ .Release.Name }}-broker", Command: "--cluster nats://0.0.0.0:6222 --jetstream"},
			{Kind: "systemd", File: "util/broker.service", Line: 6, Name: "broker.service", Command: "/usr/sbin/broker -c /etc/broker.conf"},
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			p := realRepo(t, tc.fixture)
			data, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Deploy []deployArtifactJSON `json:"deploy_artifacts"`
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got.Deploy {
					if g.Kind == w.Kind && g.File == w.File && g.Line == w.Line && g.Name == w.Name && strings.Contains(g.Command, w.Command) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s %s:%d %s starting %q in %+v", w.Kind, w.File, w.Line, w.Name, w.Command, got.Deploy)
				}
			}
			var sum strings.Builder
			if err := WriteSummary(&sum, p); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sum.String(), "\nDeploy artifacts:\n") || !strings.Contains(sum.String(), tc.want[0].File+":"+strconv.Itoa(tc.want[0].Line)) {
				t.Errorf("summary lacks the deploy artifacts:\n%s", sum.String())
			}
		})
	}
}

// TestSentencesIn: what the claim scan reads as prose in each kind of
// file, and how it places a comment: a package doc in a block comment is
// prose up to its end and the code after it is not; a Go field's comment
// documents it, one in a function body is an implementation note; a Go
// usage string that starts with "--" is no comment; list items and
// checklists are their own paragraphs.
func TestSentencesIn(t *testing.T) {
	for _, tc := range []struct {
		name, rel, data string
		want            []string // "line doc text" of every sentence
	}{
		{"go block package doc", "x.go", "/*\nPackage x replicates writes.\nEvery write is durable.\n*/\npackage x\n\n// F is fsynced.\nfunc F() { g(\"/*\") }\n",
			[]string{"2 2 Package x replicates writes.", "3 2 Every write is durable.", "7 1 F is fsynced."}},
		{"go field and body", "x.go", "package x\n\ntype T struct {\n\t// f is persisted.\n\tf int\n}\n\nfunc g() {\n\t// this is never lost\n\th()\n}\n",
			[]string{"4 1 f is persisted.", "9 -1 this is never lost"}},
		{"go usage string", "main.go", "package main\n\nvar u = `\n--auth <token> Authorization token required\n`\n", nil},
		{"python", "x.py", "# Writes are durable.\nx = 1  # not a full-line comment\n", []string{"1 1 Writes are durable."}},
		{"sql", "x.sql", "-- Rows are never lost.\nSELECT 1;\n", []string{"1 1 Rows are never lost."}},
		{"markdown list and checklist", "README.md", "# T\n\nIntro line.\n- Reads are linearizable.\n- [ ] Exactly once?\n* Writes survive a crash.\n",
			[]string{"3 0 Intro line.", "4 0 Reads are linearizable.", "6 0 Writes survive a crash."}},
		{"markdown html comment and fence", "README.md", "<!-- hidden\ndurable -->\n```\nlinearizable\n```\nShown.\n", []string{"6 0 Shown."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range sentencesIn(tc.rel, tc.data) {
				got = append(got, fmt.Sprintf("%d %d %s", s.lineAt(0), s.doc, s.text))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("sentences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestParseManifests: a workload's command and args as flow or block
// lists (URLs with colons included), its name and image, one artifact per
// workload document; a Service runs nothing.
func TestParseManifests(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: db0\nspec:\n  containers:\n    - command:\n        - /bin/db\n        - --peer\n        - http://db0:2380\n      image: acme/db:1\n" +
		"---\nkind: Service\nmetadata:\n  name: db\n---\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          args: [\"--x\", \"1\"]\n          ports:\n            - containerPort: 7000\n"
	got := parseManifests([]byte(data))
	want := []DeployArtifact{
		{Kind: "kubernetes", Line: 2, Name: "Pod/db0", Command: "/bin/db --peer http://db0:2380", Image: "acme/db:1"},
		{Kind: "kubernetes", Line: 17, Name: "Deployment/{{ .Release.Name }}", Command: "--x 1", Ports: []string{"7000"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseManifests:\n%+v\nwant\n%+v", got, want)
	}
}
