package generator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/env"
)

// ScanOptions tunes Scan.
type ScanOptions struct {
	// PlanPath is a plan the caller was given (--plan). When set the intent
	// is clear even if the tree holds no docs/testing-plans/*.md; a path that
	// does not exist is an error.
	PlanPath string
	// OutDir is the generated output directory relative to the SUT root
	// (default "testing"). It is skipped once it carries dstgen's marker, so
	// a re-scan does not mistake the generated framework for the SUT's own.
	OutDir string
}

// Limits that keep a scan bounded on hostile or huge trees: candidate files
// are read at most this far, and only text is parsed.
const (
	maxParseBytes   = 1 << 20
	maxToolboxBytes = 64 << 10
	maxDepth        = 64
)

// skipDirName reports the directory names that never hold the SUT's own
// sources, docs or toolbox: VCS metadata, vendored dependencies, build
// output, editor and cache dirs, and testdata (fixtures, as Go treats them).
// .github and friends are deliberately absent: CI wiring is toolbox.
func skipDirName(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", ".bzr",
		"vendor", "node_modules", "target", "testdata",
		"dist", "_build", "__pycache__", ".venv", ".tox",
		".idea", ".vscode", ".cache", ".gradle", ".terraform",
		"zig-cache", "zig-out", ".next":
		return true
	}
	return strings.HasPrefix(name, "bazel-")
}

// skipDir reports whether dir name at rel is excluded from the walk.
func (s *scanner) skipDir(rel, name string) bool {
	if skipDirName(name) {
		return true
	}
	if s.ignored[rel] || s.ignoredName[name] {
		return true
	}
	if rel == s.outDir && s.isGeneratedOut(rel) {
		return true
	}
	if name == "build" || name == "out" {
		// CMake and friends leave a cache behind: that is build output, not
		// a directory of build scripts.
		if _, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(rel), "CMakeCache.txt")); err == nil {
			return true
		}
	}
	return false
}

func (s *scanner) isGeneratedOut(rel string) bool {
	base := filepath.Join(s.root, filepath.FromSlash(rel))
	for _, marker := range []string{".dstgen", "Taskfile.yml"} {
		if _, err := os.Lstat(filepath.Join(base, marker)); err == nil {
			return true
		}
	}
	return false
}

// scanner is the state of one Scan: the profile under construction plus
// what must be joined after the walk (Go main packages, Rust bin files).
type scanner struct {
	ctx    context.Context
	root   string
	outDir string
	p      *Profile

	ignored     map[string]bool // root .gitignore entries anchored to a path
	ignoredName map[string]bool // root .gitignore entries matching a dir name anywhere

	goMods    []goModule
	goMains   map[string]bool // dirs (rel) with a package main file
	rustFiles map[string]bool // rel paths of src/main.rs and src/bin/*.rs
	cargos    []cargoManifest
	makefiles []makefileInfo
	suites    map[string]bool   // toolbox suite dirs already recorded
	names     map[string]string // build file → project name it declares

	// readFile reads a candidate file; tests replace it to simulate I/O
	// errors that root cannot provoke with permissions.
	readFile func(abs string, limit int64) ([]byte, bool, error)
}

// Scan walks dir and returns what it learned about the SUT there. dir must be
// an existing, readable directory; everything below it is best effort: files
// that cannot be read become Warnings, never errors. Symlinks are not
// followed out of the tree, and symlinked directories not at all, so a
// symlink loop cannot make the walk endless.
func Scan(ctx context.Context, dir string, opts ScanOptions) (*Profile, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("scan %s: not a directory", dir)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", dir, err)
	}
	f.Close()

	if opts.PlanPath != "" {
		if _, err := os.Stat(opts.PlanPath); err != nil {
			return nil, fmt.Errorf("scan: plan %s: %w", opts.PlanPath, err)
		}
	}
	return newScanner(ctx, abs, opts).scan(opts)
}

func newScanner(ctx context.Context, abs string, opts ScanOptions) *scanner {
	s := &scanner{
		ctx:         ctx,
		root:        abs,
		outDir:      strings.Trim(filepath.ToSlash(opts.OutDir), "/"),
		p:           &Profile{Root: abs, Name: filepath.Base(abs)},
		ignored:     map[string]bool{},
		ignoredName: map[string]bool{},
		goMains:     map[string]bool{},
		rustFiles:   map[string]bool{},
		suites:      map[string]bool{},
		names:       map[string]string{},
		readFile:    readLimited,
	}
	if s.outDir == "" {
		s.outDir = "testing"
	}
	return s
}

func (s *scanner) scan(opts ScanOptions) (*Profile, error) {
	s.loadGitignore()
	if err := s.walk("", 0); err != nil {
		return nil, err
	}
	s.finish()
	if opts.PlanPath != "" {
		s.p.Plans = appendUnique(s.p.Plans, s.relOrAbs(opts.PlanPath))
	}
	decideMode(s.p)
	return s.p, nil
}

// walk visits the directory rel. It reads entries unsorted (cheaper than
// os.ReadDir); the profile is sorted once at the end instead.
func (s *scanner) walk(rel string, depth int) error {
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", s.root, err)
	}
	absDir := s.abs(rel)
	f, err := os.Open(absDir)
	if err != nil {
		if rel == "" {
			return fmt.Errorf("scan %s: %w", s.root, err)
		}
		s.warn(rel, "directory not readable: %v", err)
		return nil
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil && len(entries) == 0 {
		if rel == "" {
			return fmt.Errorf("scan %s: %w", s.root, err)
		}
		s.warn(rel, "directory not readable: %v", err)
		return nil
	}
	d := newDirInfo(rel)
	for _, e := range entries {
		name := e.Name()
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			s.visitSymlink(childRel, name, d)
			continue
		}
		if typ.IsDir() {
			if s.skipDir(childRel, name) {
				continue
			}
			if depth >= maxDepth {
				s.warn(childRel, "deeper than %d levels; not scanned", maxDepth)
				continue
			}
			if err := s.walk(childRel, depth+1); err != nil {
				return err
			}
			continue
		}
		s.p.FilesScanned++
		if !typ.IsRegular() {
			// FIFOs, sockets and devices: opening one could block forever.
			if classify(name, d) != kindNone {
				s.warn(childRel, "not a regular file; skipped")
			}
			continue
		}
		s.visitFile(childRel, name, d)
	}
	return nil
}

// visitSymlink uses a symlinked file only when it resolves to a regular file
// inside the tree; symlinked directories are never entered.
func (s *scanner) visitSymlink(rel, name string, d dirInfo) {
	k := classify(name, d)
	if k == kindNone {
		return
	}
	s.p.FilesScanned++
	target, err := filepath.EvalSymlinks(s.abs(rel))
	if err != nil {
		s.warn(rel, "broken or looping symlink; skipped")
		return
	}
	inside, err := filepath.Rel(s.root, target)
	if err != nil || !filepath.IsLocal(inside) {
		s.warn(rel, "symlink points outside the tree; not followed")
		return
	}
	fi, err := os.Stat(target)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	s.visitFile(rel, name, d)
}

// fileKind is what a file's name says it might be; only kinds other than
// kindNone are ever opened.
type fileKind int

const (
	kindNone fileKind = iota
	kindMakefile
	kindGoMod
	kindGoSource
	kindCargo
	kindRustMain
	kindPackageJSON
	kindCMake
	kindJustfile
	kindUnit
	kindConfig
	kindReadme
	kindDeployDoc
	kindCI
	kindPlan
	kindToolboxScript
	kindToolboxSuite
	kindRunbook
	kindDockerfile
	kindCompose
	kindHelmChart
	kindManifest
	kindProcfile
	kindVagrant
)

// dirInfo is what classify needs to know about a directory, computed once
// per directory rather than once per file.
type dirInfo struct {
	rel, parent, grand string
	toolbox            fileKind // toolboxKind(rel)
}

func newDirInfo(rel string) dirInfo {
	return dirInfo{rel: rel, parent: path.Base(rel), grand: path.Base(path.Dir(rel)), toolbox: toolboxKind(rel)}
}

// classify decides from the path alone, so the common case (a source file
// of no interest) costs a few string comparisons and no syscall.
func classify(name string, d dirInfo) fileKind {
	dir, parent, grand := d.rel, d.parent, d.grand
	switch name {
	case "Makefile", "makefile", "GNUmakefile":
		return kindMakefile
	case "go.mod":
		return kindGoMod
	case "Cargo.toml":
		return kindCargo
	case "package.json":
		return kindPackageJSON
	case "CMakeLists.txt":
		return kindCMake
	case "justfile", "Justfile", ".justfile":
		return kindJustfile
	case ".gitlab-ci.yml", ".travis.yml", "Jenkinsfile", "azure-pipelines.yml", ".drone.yml":
		if dir == "" {
			return kindCI
		}
	}
	switch {
	case strings.HasSuffix(name, ".go"):
		if strings.HasSuffix(name, "_test.go") {
			return suiteOnly(d)
		}
		if name == "main.go" || grand == "cmd" || parent == "cmd" || dir == "" {
			return kindGoSource
		}
		return suiteOnly(d)
	case strings.HasSuffix(name, ".rs"):
		if (name == "main.rs" && parent == "src") || (parent == "bin" && grand == "src") {
			return kindRustMain
		}
		return suiteOnly(d)
	case strings.HasSuffix(name, ".service") || strings.HasSuffix(name, ".service.in"):
		return kindUnit
	}
	if k := deployKind(name, d); k != kindNone && !strings.HasPrefix(dir, ".") && !strings.Contains(dir, "/.") {
		return k
	}
	if configTarget(name) != "" || deployTemplateTarget(name, dir) != "" {
		return kindConfig
	}
	if (parent == ".github" || grand == ".github") && parent == "workflows" && isYAML(name) {
		return kindCI
	}
	if (dir == ".circleci" && name == "config.yml") || (dir == ".buildkite" && isYAML(name)) {
		return kindCI
	}
	upper := strings.ToUpper(name)
	if dir == "" && strings.HasPrefix(upper, "README") {
		return kindReadme
	}
	if strings.HasSuffix(upper, ".MD") || !strings.Contains(name, ".") {
		if (strings.HasPrefix(upper, "INSTALL") || strings.HasPrefix(upper, "DEPLOY")) && strings.Count(dir, "/") < 2 {
			return kindDeployDoc
		}
		if (grand == "docs" || grand == "doc") && (strings.HasPrefix(parent, "deploy") || strings.HasPrefix(parent, "install")) {
			return kindDeployDoc // docs/deploy/*.md
		}
		if parent == "docs" || parent == "doc" {
			low := strings.ToLower(name)
			for _, p := range []string{"deploy", "install", "operat", "getting-started", "quickstart", "quick-start"} {
				if strings.HasPrefix(low, p) {
					return kindDeployDoc
				}
			}
		}
	}
	if strings.HasSuffix(name, ".md") && parent == "testing-plans" && (dir == "docs/testing-plans" || dir == "testing-plans") {
		return kindPlan
	}
	return d.toolbox
}

// suiteOnly lets source files mark a test-suite directory (tests/chaos/
// holding only *_test.go) without making them toolbox scripts to read.
func suiteOnly(d dirInfo) fileKind {
	if d.toolbox == kindToolboxSuite {
		return kindToolboxSuite
	}
	return kindNone
}

// toolboxKind reports whether files under dir belong to an existing test
// toolbox: script dirs (every file is a tool), test suites (the directory is
// the tool) and runbooks.
func toolboxKind(dir string) fileKind {
	if dir == "" {
		return kindNone
	}
	parts := strings.Split(dir, "/")
	for i, p := range parts {
		switch p {
		case "tools", "scripts", "bin", "hack":
			if i == len(parts)-1 || i == len(parts)-2 {
				return kindToolboxScript
			}
		case "integration", "stability", "chaos", "e2e", "jepsen", "soak", "nemesis", "fault", "faults", "system":
			if i > 0 && (parts[i-1] == "tests" || parts[i-1] == "test") {
				return kindToolboxSuite
			}
		case "bench", "benchmarks", "benchmark":
			return kindToolboxSuite
		case "runbooks", "runbook", "testing":
			if i > 0 && (parts[i-1] == "docs" || parts[i-1] == "doc") {
				return kindRunbook
			}
		}
	}
	return kindNone
}

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".yaml")
}

// configTarget returns the file a config template stands for
// ("config.toml.sample" → "config.toml", "app.example.yaml" → "app.yaml"),
// or "" when name is no config template.
func configTarget(name string) string {
	for _, suf := range []string{".example", ".sample", ".dist"} {
		if strings.HasSuffix(name, suf) && len(name) > len(suf) {
			return strings.TrimSuffix(name, suf)
		}
	}
	// .tmpl/.template also name code and page templates (README.md.tmpl,
	// run.sh.tmpl); only config-shaped targets count.
	for _, suf := range []string{".template", ".tmpl"} {
		if strings.HasSuffix(name, suf) && len(name) > len(suf) {
			t := strings.TrimSuffix(name, suf)
			if isConfigExt(path.Ext(t)) || (!strings.Contains(t, ".") && strings.Contains(strings.ToLower(t), "conf")) {
				return t
			}
			return ""
		}
	}
	for _, mid := range []string{".example.", ".sample."} {
		if i := strings.Index(name, mid); i > 0 {
			if ext := name[i+len(mid)-1:]; isConfigExt(ext) {
				return name[:i] + ext
			}
		}
	}
	if strings.HasPrefix(name, ".env.") && (strings.HasSuffix(name, "example") || strings.HasSuffix(name, "sample")) {
		return ".env"
	}
	return ""
}

// deployTemplateTarget is the file a template under the SUT's deploy dir
// stands for, whatever its name ("myid.tmpl" → "myid"): a per-member file
// there is one of the SUT's configs even without a config extension. ""
// outside such a dir or without a template suffix.
func deployTemplateTarget(name, dir string) string {
	if !deployDir(dir) {
		return ""
	}
	for _, suf := range []string{".template", ".tmpl"} {
		if strings.HasSuffix(name, suf) && len(name) > len(suf) {
			return strings.TrimSuffix(name, suf)
		}
	}
	return ""
}

// deployDir reports a directory whose files deploy the SUT (deploy/,
// deployment/, at any depth).
func deployDir(rel string) bool {
	for _, p := range strings.Split(rel, "/") {
		switch strings.ToLower(p) {
		case "deploy", "deployment", "deployments":
			return true
		}
	}
	return false
}

func isConfigExt(ext string) bool {
	switch strings.ToLower(ext) {
	case ".yml", ".yaml", ".toml", ".json", ".ini", ".conf", ".cfg", ".cnf", ".env", ".properties", ".hcl":
		return true
	}
	return false
}

func (s *scanner) visitFile(rel, name string, d dirInfo) {
	dir := d.rel
	k := classify(name, d)
	if k == kindNone {
		return
	}
	limit := int64(maxParseBytes)
	switch k {
	case kindGoSource:
		limit = 4 << 10 // the package clause comes first
	case kindRustMain:
		s.rustFiles[rel] = true
		return
	case kindToolboxSuite:
		// A suite is one tool however many files it has; reading them all
		// would make big test trees the slow part of the scan.
		s.addToolboxSuite(dir)
		return
	case kindPlan:
		s.p.Plans = append(s.p.Plans, rel)
		return
	case kindToolboxScript, kindRunbook:
		limit = maxToolboxBytes
	}
	data, truncated, err := s.readFile(s.abs(rel), limit)
	if err != nil {
		s.warn(rel, "not readable: %v", err)
		return
	}
	if isBinary(data) {
		return // compiled tools in bin/ and friends: nothing to parse
	}
	if truncated && limit == maxParseBytes {
		s.warn(rel, "larger than %d bytes; only the start was read", maxParseBytes)
	}
	switch k {
	case kindMakefile:
		mf := parseMakefile(data)
		mf.file = rel
		s.makefiles = append(s.makefiles, mf)
	case kindGoMod:
		if mod := parseGoMod(data); mod != "" {
			s.goMods = append(s.goMods, goModule{dir: dir, path: mod, file: rel})
		}
	case kindGoSource:
		if isGoMain(data) {
			s.goMains[dir] = true
		}
	case kindCargo:
		m := parseCargo(data)
		m.file, m.dir = rel, dir
		s.cargos = append(s.cargos, m)
	case kindPackageJSON:
		s.addPackageJSON(rel, dir, data)
	case kindCMake:
		s.addCMake(rel, dir, data)
	case kindJustfile:
		s.addJustfile(rel, data)
	case kindUnit:
		u := parseUnit(data)
		u.File = rel
		u.Name = strings.TrimSuffix(name, ".in")
		s.p.Units = append(s.p.Units, u)
	case kindConfig:
		target := configTarget(name)
		templated := bytes.Contains(data, []byte("{{"))
		if target == "" {
			// A deploy-dir template only counts with template actions: a
			// README.md.tmpl there is a page, not a member's file.
			if target = deployTemplateTarget(name, dir); !templated {
				return
			}
		}
		c := Config{File: rel, Target: target, Keys: configKeys(target, data), Templated: templated, DataDir: configDataDir(data)}
		if templated {
			// The roles it names pick the SUT's role; what it gets wrong
			// stops init at its line (checkSUTTemplates).
			c.roleRefs, c.problem = env.CheckTemplate(rel, string(data), nil)
			for _, r := range c.roleRefs {
				if !slices.Contains(c.Roles, r.Role) {
					c.Roles = append(c.Roles, r.Role)
				}
			}
		}
		s.p.Configs = append(s.p.Configs, c)
	case kindReadme:
		if strings.HasSuffix(strings.ToLower(name), ".md") || !strings.Contains(name, ".") {
			s.addDoc(rel, data, false)
		}
	case kindDeployDoc:
		s.addDoc(rel, data, true)
	case kindCI:
		s.addCI(rel, data)
	case kindToolboxScript:
		s.addToolboxScript(rel, name, data)
	case kindDockerfile, kindCompose, kindHelmChart, kindManifest, kindProcfile, kindVagrant:
		s.addDeploy(k, rel, data)
	case kindRunbook:
		if strings.HasSuffix(strings.ToLower(name), ".md") || strings.HasSuffix(name, ".txt") || !strings.Contains(name, ".") {
			s.p.Toolbox = append(s.p.Toolbox, Tool{Path: rel, Role: "runbook", Why: "document under " + dir + "/"})
		}
	}
}

// readLimited reads at most limit bytes of a regular file and says whether
// there was more.
func readLimited(abs string, limit int64) ([]byte, bool, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// isBinary uses git's heuristic: a NUL byte in the first 8000 bytes.
func isBinary(data []byte) bool {
	if len(data) > 8000 {
		data = data[:8000]
	}
	return bytes.IndexByte(data, 0) >= 0
}

func (s *scanner) abs(rel string) string {
	if rel == "" {
		return s.root
	}
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

func (s *scanner) relOrAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(s.root, a); err == nil && filepath.IsLocal(r) {
		return filepath.ToSlash(r)
	}
	return a
}

func (s *scanner) warn(rel, format string, args ...any) {
	s.p.Warnings = append(s.p.Warnings, rel+": "+fmt.Sprintf(format, args...))
}

// loadGitignore honours the simple directory entries of the root .gitignore
// ("/build/", "bin/", "out"): those are the project's own statement of what
// is build output. Glob and negation entries are ignored — a wrong guess
// would hide real files.
func (s *scanner) loadGitignore() {
	data, _, err := s.readFile(filepath.Join(s.root, ".gitignore"), 64<<10)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' || strings.ContainsAny(line, "*?[\\") {
			continue
		}
		if !strings.HasSuffix(line, "/") {
			continue // "out" may be a file pattern; only explicit dirs are trusted
		}
		line = strings.TrimSuffix(line, "/")
		if strings.HasPrefix(line, "/") || strings.Contains(line, "/") {
			s.ignored[strings.TrimPrefix(line, "/")] = true
		} else if line != "" {
			s.ignoredName[line] = true
		}
	}
}

// finish joins what the walk saw into build systems and artifacts and sorts
// the profile so output is stable.
func (s *scanner) finish() {
	s.finishGo()
	s.finishCargo()
	s.finishMake()
	s.deployFromUnits()
	p := s.p
	p.Artifacts = dedupArtifacts(p.Artifacts)
	sort.SliceStable(p.Build, func(i, j int) bool {
		if p.Build[i].File != p.Build[j].File {
			return lessPath(p.Build[i].File, p.Build[j].File)
		}
		return p.Build[i].Kind < p.Build[j].Kind
	})
	sort.SliceStable(p.Artifacts, func(i, j int) bool {
		if p.Artifacts[i].File != p.Artifacts[j].File {
			return lessPath(p.Artifacts[i].File, p.Artifacts[j].File)
		}
		return p.Artifacts[i].Name < p.Artifacts[j].Name
	})
	sort.SliceStable(p.Deploy, func(i, j int) bool {
		if p.Deploy[i].File != p.Deploy[j].File {
			return lessPath(p.Deploy[i].File, p.Deploy[j].File)
		}
		return p.Deploy[i].Line < p.Deploy[j].Line
	})
	sort.SliceStable(p.Units, func(i, j int) bool { return lessPath(p.Units[i].File, p.Units[j].File) })
	sort.SliceStable(p.DeployArtifacts, func(i, j int) bool {
		a, b := p.DeployArtifacts[i], p.DeployArtifacts[j]
		if a.File != b.File {
			return lessPath(a.File, b.File)
		}
		return a.Line < b.Line
	})
	sort.SliceStable(p.Configs, func(i, j int) bool { return lessPath(p.Configs[i].File, p.Configs[j].File) })
	sort.SliceStable(p.Toolbox, func(i, j int) bool {
		if p.Toolbox[i].Path != p.Toolbox[j].Path {
			return lessPath(p.Toolbox[i].Path, p.Toolbox[j].Path)
		}
		return p.Toolbox[i].Line < p.Toolbox[j].Line
	})
	sort.Strings(p.Plans)
	sort.Strings(p.Warnings)
	p.Language = nil
	for _, b := range p.Build {
		switch b.Kind {
		case "go":
			p.Language = appendUnique(p.Language, "go")
		case "cargo":
			p.Language = appendUnique(p.Language, "rust")
		case "npm":
			p.Language = appendUnique(p.Language, "node")
		case "cmake":
			p.Language = appendUnique(p.Language, "c++")
		}
	}
	// The root's own manifest names the project; the directory is the fallback.
	for _, b := range p.Build {
		if strings.Contains(b.File, "/") {
			continue
		}
		if n := s.names[b.File]; n != "" {
			p.Name = n
			break
		}
	}
}

// dedupArtifacts keeps one artifact per name: the project's own build
// (Makefile, justfile) wins over what the scanner derived from go.mod,
// because that is where the project says the binary lands.
func dedupArtifacts(arts []Artifact) []Artifact {
	rank := func(a Artifact) int {
		switch path.Base(a.File) {
		case "Makefile", "makefile", "GNUmakefile":
			return 0
		case "go.mod":
			return 2
		}
		return 1
	}
	best := map[string]int{}
	var out []Artifact
	for _, a := range arts {
		if i, ok := best[a.Name]; ok {
			if rank(a) < rank(out[i]) {
				out[i] = a
			}
			continue
		}
		best[a.Name] = len(out)
		out = append(out, a)
	}
	return out
}

// lessPath sorts root files before nested ones, then lexically, so a summary
// starts with what a reader looks at first.
func lessPath(a, b string) bool {
	da, db := strings.Count(a, "/"), strings.Count(b, "/")
	if (da == 0) != (db == 0) {
		return da == 0
	}
	return a < b
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
