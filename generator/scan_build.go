package generator

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/shell"
)

// maxTargets caps how many targets of one build file become commands, so a
// generated Makefile with thousands of rules cannot flood the summary.
const maxTargets = 200

// makefileInfo is a parsed Makefile: its explicit targets in file order.
type makefileInfo struct {
	file    string
	targets []mkTarget
}

// mkTarget is one explicit Makefile/justfile target with its recipe text.
type mkTarget struct {
	name   string
	line   int
	recipe string
}

// parseMakefile extracts explicit targets (not pattern rules, not special
// .TARGETS, not variable assignments) with their recipes. It understands
// just enough make syntax to avoid false targets: continuations, define
// blocks and conditionals.
func parseMakefile(data []byte) makefileInfo {
	var mf makefileInfo
	seen := map[string]bool{}
	var cur []int // indexes into mf.targets that the current recipe belongs to
	inDefine := false
	lines := splitLines(data)
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := lines[i]
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimRight(strings.TrimSuffix(line, "\\"), " \t") + " " + strings.TrimSpace(lines[i])
		}
		trim := strings.TrimSpace(line)
		if inDefine {
			if strings.HasPrefix(trim, "endef") {
				inDefine = false
			}
			continue
		}
		if strings.HasPrefix(line, "\t") {
			for _, ti := range cur {
				if len(mf.targets[ti].recipe) < 4096 {
					mf.targets[ti].recipe += trim + "\n"
				}
			}
			continue
		}
		if trim == "" || trim[0] == '#' {
			continue
		}
		if strings.HasPrefix(trim, "define ") || trim == "define" ||
			strings.HasPrefix(trim, "export define") || strings.HasPrefix(trim, "override define") {
			inDefine = true
			continue
		}
		first := strings.Fields(trim)[0]
		switch first {
		case "ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "include", "-include", "sinclude",
			"export", "unexport", "override", "vpath":
			cur = nil
			continue
		}
		colon := strings.IndexByte(line, ':')
		if colon < 0 {
			cur = nil
			continue
		}
		head := line[:colon]
		rest := line[colon+1:]
		if strings.ContainsAny(head, "=") || strings.HasPrefix(rest, "=") ||
			(strings.HasPrefix(rest, ":") && strings.HasPrefix(rest[1:], "=")) {
			cur = nil // VAR := x, VAR ::= x, VAR = a:b
			continue
		}
		cur = nil
		for _, name := range strings.Fields(head) {
			if name == "" || name[0] == '.' || strings.ContainsAny(name, "%$()") {
				continue
			}
			if seen[name] {
				for ti := range mf.targets {
					if mf.targets[ti].name == name {
						cur = append(cur, ti)
					}
				}
				continue
			}
			seen[name] = true
			mf.targets = append(mf.targets, mkTarget{name: name, line: lineNo})
			cur = append(cur, len(mf.targets)-1)
		}
		// "target: deps ; recipe" carries an inline recipe.
		if semi := strings.IndexByte(rest, ';'); semi >= 0 {
			for _, ti := range cur {
				mf.targets[ti].recipe += strings.TrimSpace(rest[semi+1:]) + "\n"
			}
		}
	}
	return mf
}

// justRecipe matches a justfile recipe header: name, optional parameters,
// then a colon that is not part of ":=".
var justRecipe = lazyre.New(`^@?([A-Za-z_][A-Za-z0-9_-]*)(\s+[^:]*)?:($|[^=].*$)`)

// parseJustfile extracts recipes the same shape as Makefile targets.
func parseJustfile(data []byte) makefileInfo {
	var mf makefileInfo
	cur := -1
	for i, line := range splitLines(data) {
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur >= 0 && len(mf.targets[cur].recipe) < 4096 {
				mf.targets[cur].recipe += strings.TrimSpace(line) + "\n"
			}
			continue
		}
		cur = -1
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue // other Unicode spaces
		}
		switch f[0] {
		case "set", "alias", "export", "import", "mod":
			continue
		}
		m := justRecipe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		mf.targets = append(mf.targets, mkTarget{name: m[1], line: i + 1})
		cur = len(mf.targets) - 1
	}
	return mf
}

func (s *scanner) addJustfile(rel string, data []byte) {
	mf := parseJustfile(data)
	b := BuildSystem{Kind: "just", File: rel}
	for i, t := range mf.targets {
		if i >= maxTargets {
			break
		}
		b.Targets = append(b.Targets, t.name)
		b.Commands = append(b.Commands, "just "+shell.Quote(t.name))
		s.targetTool(rel, "justfile recipe", t)
	}
	s.p.Build = append(s.p.Build, b)
}

// finishMake turns parsed Makefiles into build systems, artifacts (from
// "go build -o X" recipes) and toolbox entries.
func (s *scanner) finishMake() {
	for _, mf := range s.makefiles {
		dir := path.Dir(mf.file)
		prefix := "make "
		if dir != "." {
			prefix = "make -C " + shell.Quote(dir) + " "
		}
		b := BuildSystem{Kind: "make", File: mf.file}
		for i, t := range mf.targets {
			if i >= maxTargets {
				break
			}
			b.Targets = append(b.Targets, t.name)
			b.Commands = append(b.Commands, prefix+shell.Quote(t.name))
			s.targetTool(mf.file, "Makefile target", t)
			if a, ok := clusterTarget(t); ok {
				a.File = mf.file
				s.p.DeployArtifacts = append(s.p.DeployArtifacts, a)
			}
			for _, out := range goBuildOutputs(t.recipe) {
				s.p.Artifacts = append(s.p.Artifacts, Artifact{
					Name: path.Base(out), Path: path.Join(dirOrEmpty(dir), out),
					Build: prefix + shell.Quote(t.name), File: mf.file,
				})
			}
		}
		s.p.Build = append(s.p.Build, b)
	}
}

func dirOrEmpty(d string) string {
	if d == "." {
		return ""
	}
	return d
}

var goBuildOut = lazyre.New(`\bgo build\b[^\n]*?\s-o[= ]\s*([^\s;&|]+)`)

// goBuildOutputs finds the -o paths of go build lines in a recipe; paths
// built from make variables are kept only when the variable is trailing
// context ($(BIN)/x stays unknown).
func goBuildOutputs(recipe string) []string {
	var outs []string
	for _, m := range goBuildOut.FindAllStringSubmatch(recipe, -1) {
		if !strings.ContainsAny(m[1], "$") {
			outs = append(outs, strings.Trim(m[1], `"'`))
		}
	}
	return outs
}

// targetTool records a build target that looks like part of a test toolbox
// (cluster bring-up, chaos, bench, soak, partition), by name or by what its
// recipe runs.
func (s *scanner) targetTool(file, what string, t mkTarget) {
	role, why := roleByName(t.name)
	if role == "" {
		// By content only fault injection counts: every "test" or "deploy"
		// target runs go test or systemctl, which makes it no test tool.
		if r, w, _ := roleByContent(t.recipe); r == "fault-injector" {
			role, why = r, "recipe "+w
		}
	}
	if role == "" {
		return
	}
	s.p.Toolbox = append(s.p.Toolbox, Tool{Path: file, Role: role, Why: what + " " + t.name + " (" + why + ")", Line: t.line})
}

// goModule is one go.mod.
type goModule struct {
	dir, path, file string
}

// majorVersionRE is a Go module path's major-version suffix: "/v10",
// or gopkg.in's ".v3".
var majorVersionRE = lazyre.New(`(?:/|\.)v[0-9]+$`)

// modulePathName is the project a Go module path names: its last element
// once the major-version suffix is gone ("github.com/acme/kv/v10" → "kv",
// "gopkg.in/yaml.v3" → "yaml"), since the version is not the name.
func modulePathName(mod string) string {
	return path.Base(majorVersionRE.ReplaceAllString(mod, ""))
}

// enclosingGoMod is the module path of the go.mod in a directory above
// root (at most 8 levels up), when one is there.
func enclosingGoMod(root string) (string, bool) {
	dir, err := filepath.Abs(root)
	if err != nil {
		return "", false
	}
	for range 8 {
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			if mod := parseGoMod(data); mod != "" {
				return mod, true
			}
			return "", false
		}
	}
	return "", false
}

func parseGoMod(data []byte) string {
	for _, line := range splitLines(data) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`+"`")
		}
	}
	return ""
}

// isGoMain reports whether a Go file's package clause names main.
func isGoMain(data []byte) bool {
	inBlock := false
	for _, line := range splitLines(data) {
		t := strings.TrimSpace(line)
		if inBlock {
			if i := strings.Index(t, "*/"); i >= 0 {
				inBlock = false
				t = strings.TrimSpace(t[i+2:])
			} else {
				continue
			}
		}
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		if strings.HasPrefix(t, "/*") {
			if !strings.Contains(t[2:], "*/") {
				inBlock = true
			}
			continue
		}
		f := strings.Fields(t)
		return len(f) >= 2 && f[0] == "package" && f[1] == "main"
	}
	return false
}

func (s *scanner) finishGo() {
	mods := s.goMods
	if len(mods) == 0 && len(s.goMains) > 0 {
		// The SUT is a directory of a larger module (go.mod above the
		// root): its main packages build from the root all the same.
		if mod, ok := enclosingGoMod(s.root); ok {
			mods = []goModule{{dir: "", path: mod, file: "go.mod (above " + path.Base(filepath.ToSlash(s.root)) + ")"}}
		}
	}
	sort.Slice(mods, func(i, j int) bool { return len(mods[i].dir) > len(mods[j].dir) })
	byMod := map[int][]string{}
	for dir := range s.goMains {
		for i, m := range mods {
			if m.dir == "" || dir == m.dir || strings.HasPrefix(dir, m.dir+"/") {
				byMod[i] = append(byMod[i], dir)
				break
			}
		}
	}
	for i, m := range mods {
		mains := byMod[i]
		sort.Strings(mains)
		b := BuildSystem{Kind: "go", File: m.file}
		if !strings.HasPrefix(m.file, "go.mod (above") {
			// A module above the root names a larger project, not the SUT.
			s.names[m.file] = modulePathName(m.path)
		}
		for _, dir := range mains {
			pkg := "."
			if dir != m.dir {
				pkg = "./" + strings.TrimPrefix(strings.TrimPrefix(dir, m.dir), "/")
			}
			name := path.Base(dir)
			if pkg == "." {
				name = modulePathName(m.path)
			}
			cmd := "go build " + shell.Quote(pkg)
			out := path.Join(m.dir, name)
			if dir == out {
				// ./kvnode would write kvnode over its own directory.
				out = path.Join(m.dir, "bin", name)
				cmd = "go build -o " + shell.Quote(path.Join("bin", name)) + " " + shell.Quote(pkg)
			}
			if m.dir != "" {
				cmd = "(cd " + shell.Quote(m.dir) + " && " + cmd + ")"
			}
			b.Targets = append(b.Targets, pkg)
			b.Commands = append(b.Commands, cmd)
			s.p.Artifacts = append(s.p.Artifacts, Artifact{Name: name, Path: out, Build: cmd, File: m.file, GoPackage: dir})
		}
		if len(mains) == 0 {
			b.Commands = []string{"go build ./..."}
		}
		s.p.Build = append(s.p.Build, b)
	}
}

// cargoManifest is the part of a Cargo.toml the scanner needs.
type cargoManifest struct {
	file, dir string
	pkgName   string
	bins      []cargoBin
	workspace bool
}

type cargoBin struct{ name, path string }

// parseCargo reads [package] name and [[bin]] tables with a line parser;
// Cargo manifests are regular enough that a full TOML decoder is not worth
// a dependency.
func parseCargo(data []byte) cargoManifest {
	var m cargoManifest
	table := ""
	for _, line := range splitLines(data) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		if strings.HasPrefix(t, "[[") {
			table = strings.TrimSpace(strings.Trim(t, "[] "))
			if table == "bin" {
				m.bins = append(m.bins, cargoBin{})
			}
			continue
		}
		if strings.HasPrefix(t, "[") {
			table = strings.TrimSpace(strings.Trim(t, "[] "))
			if table == "workspace" {
				m.workspace = true
			}
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		v = tomlString(v)
		switch {
		case table == "package" && k == "name":
			m.pkgName = v
		case table == "bin" && len(m.bins) > 0 && k == "name":
			m.bins[len(m.bins)-1].name = v
		case table == "bin" && len(m.bins) > 0 && k == "path":
			m.bins[len(m.bins)-1].path = v
		}
	}
	return m
}

// tomlString returns the value of a basic or literal TOML string, dropping a
// trailing comment; other values come back trimmed.
func tomlString(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > 0 && (v[0] == '"' || v[0] == '\'') {
		if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
			return v[1 : end+1]
		}
		return strings.Trim(v, `"'`)
	}
	if i := strings.IndexByte(v, '#'); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v
}

func (s *scanner) finishCargo() {
	for _, m := range s.cargos {
		b := BuildSystem{Kind: "cargo", File: m.file}
		s.names[m.file] = m.pkgName
		var bins []string
		explicit := map[string]bool{}
		for _, bin := range m.bins {
			if bin.name == "" {
				continue
			}
			bins = append(bins, bin.name)
			explicit[bin.name] = true
			if bin.path != "" {
				explicit[path.Clean(bin.path)] = true
			}
		}
		src := path.Join(m.dir, "src")
		if m.pkgName != "" && s.rustFiles[path.Join(src, "main.rs")] && !explicit["src/main.rs"] && !explicit[m.pkgName] {
			bins = append(bins, m.pkgName)
		}
		var auto []string
		for f := range s.rustFiles {
			if path.Dir(f) == path.Join(src, "bin") {
				n := strings.TrimSuffix(path.Base(f), ".rs")
				if !explicit[n] && !explicit[strings.TrimPrefix(f, dirPrefix(m.dir))] {
					auto = append(auto, n)
				}
			}
		}
		sort.Strings(auto)
		bins = append(bins, auto...)
		prefix := ""
		if m.dir != "" {
			prefix = "(cd " + shell.Quote(m.dir) + " && "
		}
		wrap := func(c string) string {
			if prefix == "" {
				return c
			}
			return prefix + c + ")"
		}
		if m.pkgName != "" || m.workspace {
			b.Commands = append(b.Commands, wrap("cargo build --release"))
		}
		for _, n := range bins {
			cmd := wrap("cargo build --release --bin " + shell.Quote(n))
			b.Targets = append(b.Targets, n)
			b.Commands = append(b.Commands, cmd)
			s.p.Artifacts = append(s.p.Artifacts, Artifact{Name: n, Path: path.Join(m.dir, "target/release", n), Build: cmd, File: m.file})
		}
		s.p.Build = append(s.p.Build, b)
	}
}

func dirPrefix(d string) string {
	if d == "" {
		return ""
	}
	return d + "/"
}

func (s *scanner) addPackageJSON(rel, dir string, data []byte) {
	var pj struct {
		Name    string            `json:"name"`
		Scripts map[string]string `json:"scripts"`
	}
	if err := json.Unmarshal(data, &pj); err != nil {
		s.warn(rel, "not valid JSON: %v", err)
		return
	}
	b := BuildSystem{Kind: "npm", File: rel}
	s.names[rel] = pj.Name[strings.LastIndexByte(pj.Name, '/')+1:] // "@scope/name" → "name"
	names := make([]string, 0, len(pj.Scripts))
	for n := range pj.Scripts {
		// A script name with a control character (JSON allows "\n") is
		// no name a person types; it would only split a command line.
		if n != "" && strings.IndexFunc(n, unicode.IsControl) < 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	prefix := "npm run "
	if dir != "" {
		prefix = "npm --prefix " + shell.Quote(dir) + " run "
	}
	for i, n := range names {
		if i >= maxTargets {
			break
		}
		b.Targets = append(b.Targets, n)
		b.Commands = append(b.Commands, prefix+shell.Quote(n))
		s.targetTool(rel, "npm script", mkTarget{name: n, recipe: pj.Scripts[n]})
	}
	s.p.Build = append(s.p.Build, b)
}

var (
	cmakeExe     = lazyre.New(`(?i)\badd_executable\s*\(\s*([A-Za-z0-9_.+-]+)`)
	cmakeProject = lazyre.New(`(?i)\bproject\s*\(\s*([A-Za-z0-9_.+-]+)`)
)

func (s *scanner) addCMake(rel, dir string, data []byte) {
	b := BuildSystem{Kind: "cmake", File: rel}
	src := "."
	if dir != "" {
		src = dir
	}
	b.Commands = []string{"cmake -S " + shell.Quote(src) + " -B build", "cmake --build build"}
	if m := cmakeProject.FindSubmatch(data); m != nil {
		s.names[rel] = string(m[1])
	}
	for _, m := range cmakeExe.FindAllSubmatch(data, maxTargets) {
		n := string(m[1])
		b.Targets = append(b.Targets, n)
		s.p.Artifacts = append(s.p.Artifacts, Artifact{Name: n, Path: "build/" + n, Build: "cmake --build build --target " + shell.Quote(n), File: rel})
	}
	s.p.Build = append(s.p.Build, b)
}

// splitLines splits on \n and drops a trailing \r, so CRLF files parse
// like LF ones.
func splitLines(data []byte) []string {
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
