package generator

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func targetNames(mf makefileInfo) []string {
	var out []string
	for _, t := range mf.targets {
		out = append(out, t.name)
	}
	return out
}

func TestParseMakefile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		targets []string
		lines   []int
		recipe  map[string]string // target → substring its recipe must hold
	}{
		{name: "plain", in: "build:\n\tgo build\ntest: build\n\tgo test\n", targets: []string{"build", "test"}, lines: []int{1, 3},
			recipe: map[string]string{"build": "go build", "test": "go test"}},
		{name: "variables are not targets", in: "A := x\nB ::= y\nC = a:b\nD ?= 1\nrun:\n\techo\n", targets: []string{"run"}},
		{name: "special and pattern rules skipped", in: ".PHONY: a\n%.o: %.c\n\tcc\n$(BIN): x\na:\n", targets: []string{"a"}},
		{name: "multi-target line", in: "up down: ; ./x.sh\n", targets: []string{"up", "down"}, recipe: map[string]string{"down": "./x.sh"}},
		{name: "define block", in: "define T\nfake:\n\tno\nendef\nreal:\n", targets: []string{"real"}},
		{name: "conditionals", in: "ifeq ($(X),1)\nx:\nendif\n", targets: []string{"x"}},
		{name: "continuation", in: "deploy: a \\\n  b\n\tscp \\\n\t  x y\n", targets: []string{"deploy"}, recipe: map[string]string{"deploy": "scp x y"}},
		{name: "CRLF", in: "build:\r\n\tgo build\r\n", targets: []string{"build"}},
		{name: "double colon and duplicate", in: "a::\n\tone\na::\n\ttwo\n", targets: []string{"a"}, recipe: map[string]string{"a": "two"}},
		{name: "empty", in: "", targets: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mf := parseMakefile([]byte(tc.in))
			if got := targetNames(mf); !reflect.DeepEqual(got, tc.targets) {
				t.Fatalf("targets = %v, want %v", got, tc.targets)
			}
			for i, l := range tc.lines {
				if mf.targets[i].line != l {
					t.Errorf("%s line = %d, want %d", mf.targets[i].name, mf.targets[i].line, l)
				}
			}
			for _, tg := range mf.targets {
				if want, ok := tc.recipe[tg.name]; ok && !strings.Contains(tg.recipe, want) {
					t.Errorf("recipe of %s = %q, want it to hold %q", tg.name, tg.recipe, want)
				}
			}
		})
	}
}

func TestGoBuildOutputs(t *testing.T) {
	got := goBuildOutputs("go build -o bin/a ./cmd/a\ngo build -ldflags \"-s\" -o=bin/b ./cmd/b\ngo build -o $(BIN)/c ./cmd/c\ngo vet -o x\n")
	if want := []string{"bin/a", "bin/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("outputs = %v, want %v", got, want)
	}
}

func TestParseJustfile(t *testing.T) {
	in := "set shell := [\"bash\", \"-c\"]\nversion := \"1\"\nalias b := build\n\n# build it\nbuild:\n    cargo build\n\ncluster-up nodes=\"3\":\n    ./up.sh {{nodes}}\n@soak: build\n    ./soak.sh\n[private]\nhelper:\n    true\n"
	mf := parseJustfile([]byte(in))
	if got, want := targetNames(mf), []string{"build", "cluster-up", "soak", "helper"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("recipes = %v, want %v", got, want)
	}
	if !strings.Contains(mf.targets[1].recipe, "./up.sh") || mf.targets[1].line != 9 {
		t.Errorf("cluster-up = %+v", mf.targets[1])
	}
}

func TestSystemdSeconds(t *testing.T) {
	for in, want := range map[string]int{"90": 90, "90s": 90, "5min": 300, "1min 30s": 90, "2min30sec": 150, "": 0, "infinity": 0, "1h": 0, "-5": 0, "99999999999": 0} {
		if got := systemdSeconds(in); got != want {
			t.Errorf("systemdSeconds(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParseUnit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Unit
	}{
		{name: "full", in: "[Unit]\nAfter=network.target etcd.service\nWants=network.target\nRequires=etcd.service\nBindsTo=x.mount\n[Service]\nExecStart=/bin/app -a\n",
			want: Unit{ExecStart: "/bin/app -a", Line: 7, Requires: []string{"network.target", "etcd.service", "x.mount"}}},
		{name: "continuation", in: "[Service]\nExecStart=/bin/app \\\n  --flag \\\n  --other\n", want: Unit{ExecStart: "/bin/app --flag --other", Line: 2}},
		{name: "reset keeps last", in: "[Service]\nExecStart=/old\nExecStart=\nExecStart=/new\n", want: Unit{ExecStart: "/new", Line: 4}},
		{name: "only service section counts", in: "[Install]\nExecStart=/nope\n[Unit]\nExecStart=/nope2\n", want: Unit{}},
		{name: "comments", in: "# ExecStart=/c\n; x\n[Service]\nExecStart=-/bin/x\n", want: Unit{ExecStart: "-/bin/x", Line: 4}},
		{name: "garbage", in: "\x00[[[=\n=\n", want: Unit{}},
		{name: "dstgen keys, conflicts, start timeout", in: "[Unit]\nConflicts=mariadb.service mysql.service\nConflicts=mariadb.service\n[Service]\nExecStart=/bin/sh /etc/s.sh\n" +
			"X-Dstgen-Bootstrap=/bin/sh /etc/s.sh --new\nx-dstgen-RANK=/bin/sh /etc/r.sh\nX-Dstgen-Secret=a\nX-Dstgen-Secret=b c\nTimeoutStartSec=2min 30s\n[Install]\nX-Dstgen-Health=ignored\n",
			want: Unit{ExecStart: "/bin/sh /etc/s.sh", Line: 5, Conflicts: []string{"mariadb.service", "mysql.service"}, TimeoutStartS: 150,
				Dstgen: map[string]string{"bootstrap": "/bin/sh /etc/s.sh --new", "rank": "/bin/sh /etc/r.sh", "secret": "a b c"}}},
		{name: "bare prefix and unread timeouts", in: "[Service]\nX-Dstgen-=x\nTimeoutStartSec=infinity\n", want: Unit{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseUnit([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseMarkdown(t *testing.T) {
	in := strings.Join([]string{
		"# Title",             // 1
		"intro",               // 2
		"## Install",          // 3
		"```bash",             // 4
		"# a comment",         // 5
		"$ sudo apt-get \\",   // 6
		"    install etcd",    // 7
		"make install",        // 8
		"```",                 // 9
		"### Console",         // 10
		"```console",          // 11
		"$ systemctl start x", // 12
		"output line",         // 13
		"# journalctl -u x",   // 14
		"```",                 // 15
		"## Other",            // 16
		"```yaml",             // 17
		"key: value",          // 18
		"```",                 // 19
		"````",                // 20 a longer fence holding a shorter one
		"```",                 // 21
		"# not a heading",     // 22
		"````",                // 23
		"    ```",             // 24 indented code, not a fence
		"## Closing ##",       // 25
	}, "\n")
	secs := parseMarkdown([]byte(in))
	type s struct {
		title string
		level int
		line  int
		cmds  []string
		lines []int
	}
	var got []s
	for _, x := range secs {
		got = append(got, s(x))
	}
	want := []s{
		{"", 0, 0, nil, nil},
		{"Title", 1, 1, nil, nil},
		{"Install", 2, 3, []string{"sudo apt-get install etcd", "make install"}, []int{6, 8}},
		{"Console", 3, 10, []string{"systemctl start x", "journalctl -u x"}, []int{12, 14}},
		{"Other", 2, 16, []string{"```"}, []int{21}},
		{"Closing", 2, 25, nil, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections =\n%+v\nwant\n%+v", got, want)
	}
}

func TestConfigKeys(t *testing.T) {
	tests := []struct {
		target, in string
		want       []string
	}{
		{"a.yaml", "b: 1\na:\n  x: 2\nb: 3\n", []string{"b", "a"}},
		{"a.yml", "- list\n", nil},
		{"a.yml", "{{ .Broken }: [\n", nil},
		{"a.json", `{"z": {"n": [1,2]}, "a": "s"}`, []string{"z", "a"}},
		{"a.json", `[1]`, nil},
		{"a.toml", "top = 1\n\"quoted\" = 2\n[server]\nport = 3\n[server.tls]\n[[peers]]\nx = 1\n[log.file]\n", []string{"top", "quoted", "server", "peers", "log"}},
		{"a.ini", "; c\nglobal=1\n[main]\nk=v\n[extra]\n", []string{"global", "main", "extra"}},
		{".env", "# c\nexport PORT=1\nHOST=x\n", []string{"PORT", "HOST"}},
		{"a.conf", "listen 80;\n", nil},
		{"a.txt", "a: 1\n", nil},
	}
	for _, tc := range tests {
		if got := configKeys(tc.target, []byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("configKeys(%s, %q) = %v, want %v", tc.target, tc.in, got, tc.want)
		}
	}
}

func TestConfigTarget(t *testing.T) {
	tests := map[string]string{
		"config.toml.sample":        "config.toml",
		"config.yaml.example":       "config.yaml",
		"etcd.conf.yml.example":     "etcd.conf.yml",
		"app.example.yaml":          "app.yaml",
		"settings.sample.json":      "settings.json",
		"nginx.conf.template":       "nginx.conf",
		"Taskfile.yml.tmpl":         "Taskfile.yml",
		"myconf.tmpl":               "myconf",
		".env.example":              ".env",
		"README.md.tmpl":            "",
		"index.html.template":       "",
		"run.sh.tmpl":               "",
		"example":                   "",
		".example":                  "",
		"main.go":                   "",
		"my.example.go":             "",
		"values.production.example": "values.production",
	}
	for in, want := range tests {
		if got := configTarget(in); got != want {
			t.Errorf("configTarget(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCargo(t *testing.T) {
	in := "[package]\nname = \"svc\" # the crate\n\n[[bin]]\nname = 'svcd'\npath = \"src/main.rs\"\n\n[[bin]]\nname=\"bench\"\n\n[dependencies]\nname = \"not-a-package\"\n[workspace]\nmembers = [\"a\"]\n"
	m := parseCargo([]byte(in))
	want := cargoManifest{pkgName: "svc", bins: []cargoBin{{"svcd", "src/main.rs"}, {"bench", ""}}, workspace: true}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
}

// TestCargoAutoBins: src/main.rs and src/bin/*.rs are binaries even without
// [[bin]] tables, unless a table already claims them.
func TestCargoAutoBins(t *testing.T) {
	root := writeTree(t, map[string]string{
		"Cargo.toml":         "[package]\nname = \"app\"\n[[bin]]\nname = \"tool\"\npath = \"src/bin/tool.rs\"\n",
		"src/main.rs":        "fn main(){}",
		"src/bin/tool.rs":    "fn main(){}",
		"src/bin/loadgen.rs": "fn main(){}",
		"src/lib.rs":         "",
	})
	p := scanT(t, root, ScanOptions{})
	b := buildByKind(p, "cargo")
	if b == nil {
		t.Fatal("no cargo build")
	}
	if want := []string{"tool", "app", "loadgen"}; !reflect.DeepEqual(b.Targets, want) {
		t.Errorf("bins = %v, want %v", b.Targets, want)
	}
	if p.Name != "app" || !reflect.DeepEqual(p.Language, []string{"rust"}) {
		t.Errorf("name %q lang %v", p.Name, p.Language)
	}
}

func TestOtherBuildSystems(t *testing.T) {
	root := writeTree(t, map[string]string{
		"package.json":          `{"name":"web","scripts":{"build":"tsc","soak":"node soak.js","chaos:net":"./tc.sh"}}`,
		"native/CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(engine CXX)\nadd_executable(engined main.cc)\nADD_EXECUTABLE( engine-bench bench.cc)\n",
		"justfile":              "soak:\n    ./soak.sh\n",
		"bad/package.json":      "{not json",
		"svc/go.mod":            "module example.com/svc\n",
		"svc/main.go":           "/* header\n*/\n// +build linux\n\npackage main\n",
		"svc/internal/x.go":     "package main\n", // not under cmd/, not main.go: not read
		"svc/cmd/ctl/ctl.go":    "package main\n",
		"svc/cmd/lib/lib.go":    "package lib\n",
	})
	p := scanT(t, root, ScanOptions{})
	kinds := map[string]BuildSystem{}
	for _, b := range p.Build {
		kinds[b.Kind+" "+b.File] = b
	}
	npm := kinds["npm package.json"]
	if want := []string{"build", "chaos:net", "soak"}; !reflect.DeepEqual(npm.Targets, want) {
		t.Errorf("npm scripts = %v, want %v", npm.Targets, want)
	}
	cm := kinds["cmake native/CMakeLists.txt"]
	if want := []string{"engined", "engine-bench"}; !reflect.DeepEqual(cm.Targets, want) {
		t.Errorf("cmake targets = %v, want %v", cm.Targets, want)
	}
	if cm.Commands[0] != "cmake -S native -B build" {
		t.Errorf("cmake commands = %v", cm.Commands)
	}
	gb := kinds["go svc/go.mod"]
	if want := []string{".", "./cmd/ctl"}; !reflect.DeepEqual(gb.Targets, want) {
		t.Errorf("go mains = %v, want %v", gb.Targets, want)
	}
	if gb.Commands[1] != "(cd svc && go build ./cmd/ctl)" {
		t.Errorf("go commands = %v", gb.Commands)
	}
	if _, ok := kinds["just justfile"]; !ok {
		t.Errorf("justfile not found: %v", kinds)
	}
	if p.Name != "web" {
		t.Errorf("Name = %q, want web (root package.json)", p.Name)
	}
	var tools []string
	for _, tl := range p.Toolbox {
		tools = append(tools, tl.Path+" "+tl.Role+" "+tl.Why)
	}
	want := []string{
		"justfile bench justfile recipe soak (name matches soak)",
		"package.json fault-injector npm script chaos:net (name matches chaos)",
		"package.json bench npm script soak (name matches soak)",
	}
	if !reflect.DeepEqual(tools, want) {
		t.Errorf("toolbox =\n%q\nwant\n%q", tools, want)
	}
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "bad/package.json: not valid JSON") {
		t.Errorf("warnings = %v", p.Warnings)
	}
}

func TestIsGoMain(t *testing.T) {
	tests := map[string]bool{
		"package main\n":                     true,
		"// Command x.\npackage main // x\n": true,
		"/* a\nb */ package main\n":          true,
		"//go:build linux\n\npackage main\n": true,
		"package mainly\n":                   false,
		"package lib\n":                      false,
		"/* package main\n":                  false,
		"":                                   false,
		"// package main\npackage other\n":   false,
		"\ufeffpackage main\n":               false, // BOM: go accepts it but it is rare enough to ignore
	}
	for in, want := range tests {
		if got := isGoMain([]byte(in)); got != want {
			t.Errorf("isGoMain(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRoles(t *testing.T) {
	byName := map[string]string{
		"partition.sh":    "fault-injector",
		"cluster-up":      "bring-up",
		"soak":            "bench",
		"run_workload.py": "workload",
		"e2e":             "test-suite",
		"collect-metrics": "observability",
		"release.sh":      "",
		"update":          "", // "up" must be a whole token
		"backup.sh":       "",
	}
	for in, want := range byName {
		if got, _ := roleByName(in); got != want {
			t.Errorf("roleByName(%q) = %q, want %q", in, got, want)
		}
	}
	byContent := []struct {
		in, role string
		line     int
	}{
		{"#!/bin/sh\nset -e\niptables -A INPUT -j DROP\n", "fault-injector", 3},
		{"#!/bin/sh\n# uses iptables\ncommand -v iptables || exit 1\n", "", 0},
		{"x=1; sudo -n tc qdisc add dev lo root netem delay 1ms\n", "fault-injector", 1},
		{"pids+=(iptables)\n", "", 0},
		{"docker compose up -d\n", "bring-up", 1},
		{"\n\nwrk -t2 http://x\n", "bench", 3},
		{"echo hello\n", "", 0},
	}
	for _, tc := range byContent {
		role, _, line := roleByContent(tc.in)
		if role != tc.role || line != tc.line {
			t.Errorf("roleByContent(%q) = %q line %d, want %q line %d", tc.in, role, line, tc.role, tc.line)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		rel  string
		want fileKind
	}{
		{"Makefile", kindMakefile},
		{"sub/GNUmakefile", kindMakefile},
		{"cmd/x/main.go", kindGoSource},
		{"cmd/x/flags.go", kindGoSource},
		{"internal/x/y.go", kindNone},
		{"internal/x/y_test.go", kindNone},
		{"tests/chaos/y_test.go", kindToolboxSuite},
		{"src/main.rs", kindRustMain},
		{"src/lib.rs", kindNone},
		{"a/b/c/x.service", kindUnit},
		{".github/workflows/ci.yml", kindCI},
		{".gitlab-ci.yml", kindCI},
		{"sub/.gitlab-ci.yml", kindNone},
		{"README.md", kindReadme},
		{"sub/README.md", kindNone},
		{"INSTALL.md", kindDeployDoc},
		{"docs/deploy-k8s.md", kindDeployDoc},
		{"docs/architecture.md", kindNone},
		{"docs/deployment/k8s.md", kindDeployDoc},
		{"docs/deployment/img.png", kindNone},
		{"docs/testing-plans/x.md", kindPlan},
		{"docs/testing/how.md", kindRunbook},
		{"tools/partition.sh", kindToolboxScript},
		{"deep/a/b/c/tools/x.sh", kindToolboxScript},
		{"scripts/lib/helpers.sh", kindToolboxScript},
		{"scripts/a/b/c.sh", kindNone},
		{"test/integration/a.py", kindToolboxSuite},
		{"src/util.c", kindNone},
	}
	for _, tc := range tests {
		dir := ""
		name := tc.rel
		if i := strings.LastIndexByte(tc.rel, '/'); i >= 0 {
			dir, name = tc.rel[:i], tc.rel[i+1:]
		}
		if got := classify(name, newDirInfo(dir)); got != tc.want {
			t.Errorf("classify(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// TestScanHugeMakefileBounded: a pathological line count stays fast.
func TestScanHugeMakefileBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString("t")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(":\n\t@echo\n")
	}
	start := time.Now()
	mf := parseMakefile([]byte(b.String()))
	if len(mf.targets) != 7 {
		t.Errorf("targets = %d, want 7 distinct", len(mf.targets))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("parse took %v", d)
	}
}
