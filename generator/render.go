package generator

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/templates"
)

// RenderInput is what Render needs: the scanned SUT, the plan (nil renders
// the benchmark-only framework of docs/real-env-test.md §3 with no scenarios) and
// where things sit relative to the output directory.
type RenderInput struct {
	Profile *Profile
	Plan    *plan.Plan
	// PlanPath is the plan's path relative to the output directory (what
	// the generated Taskfile and env.yml refer to), absolute when the
	// output directory lies outside the SUT; PlanRel is relative to the
	// SUT root, for display. PlanSHA is the plan's sha256 in hex.
	PlanPath, PlanRel, PlanSHA string
	// SUTRel is the SUT root relative to the output directory (".."), or
	// absolute when the output directory lies outside the SUT.
	SUTRel string
	// TestingDir is the output directory as the SUT root sees it, the
	// path the agent files name ("" = "testing"): relative when it lies
	// inside the SUT, absolute otherwise.
	TestingDir string
	// Templates replaces the embedded template tree (rooted like
	// templates.FS); nil uses the embedded one. Tests use it to prove that
	// a broken template never reaches the disk.
	Templates fs.FS
}

// File is one rendered file of the testing/ tree.
type File struct {
	Path string      // slash-separated, relative to the output directory
	Data []byte      // content
	Mode fs.FileMode // 0o755 for scripts, 0o644 otherwise
}

// Render renders every template into memory, sorted by path. It writes
// nothing; Init decides what reaches the disk.
func Render(in RenderInput) ([]File, error) {
	if in.Profile == nil {
		return nil, fmt.Errorf("render: no SUT profile")
	}
	tfs := in.Templates
	if tfs == nil {
		tfs = templates.FS
	}
	m := newModel(in)
	funcs := templates.Funcs()
	for k, v := range renderFuncs() {
		funcs[k] = v
	}
	var files []File
	err := fs.WalkDir(tfs, templates.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".tmpl") {
			return nil
		}
		src, err := fs.ReadFile(tfs, p)
		if err != nil {
			return fmt.Errorf("read template %s: %w", p, err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, templates.Root+"/"), ".tmpl")
		t, err := template.New(rel).Delims(templates.LeftDelim, templates.RightDelim).
			Option("missingkey=error").Funcs(funcs).Parse(string(src))
		if err != nil {
			return fmt.Errorf("parse template %s: %w", p, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, m); err != nil {
			return fmt.Errorf("render %s: %w", rel, err)
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(rel, ".sh") {
			mode = 0o755
		}
		files = append(files, File{Path: rel, Data: buf.Bytes(), Mode: mode})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// renderFuncs are the formatting helpers the templates call; each exists so
// a value lands in its target syntax (YAML, shell, go-task) safely.
func renderFuncs() template.FuncMap {
	return template.FuncMap{
		// yq renders a YAML double-quoted scalar; Go's escapes are a subset
		// of YAML's, so any string round-trips.
		"yq": func(s string) string { return strconv.Quote(s) },
		// shq quotes one shell word (the same quoting the runner uses).
		"shq": shell.Quote,
		// ysq escapes a value for a YAML single-quoted scalar, where a
		// quote from a SUT file name would otherwise end the scalar.
		"ysq": func(s string) string { return strings.ReplaceAll(s, "'", "''") },
		// taskq keeps go-task from evaluating "{{" that came from the SUT or
		// the plan.
		"taskq": func(s string) string { return strings.ReplaceAll(s, "{{", `{{"{{"}}`) },
		// isAbs: go-task's joinPath is filepath.Join, which appends an
		// absolute path to ROOT_DIR instead of taking it as it is.
		"isAbs": path.IsAbs,
		// oneline folds a value into one comment-safe line.
		"oneline": oneline.Fold,
		// harnessPush lists the harness files for `dstgen push`.
		"harnessPush": harnessPush,
		// comment prefixes every line of s (never empty: "(not stated)").
		"comment": func(prefix, s string) string {
			s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
			if s == "" {
				s = "(not stated in the plan)"
			}
			lines := strings.Split(s, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimRight(prefix+l, " ")
			}
			return strings.Join(lines, "\n")
		},
		// num renders an optional number as YAML (null when unknown).
		"num": func(v *float64) string {
			if v == nil {
				return "null"
			}
			return strconv.FormatFloat(*v, 'f', -1, 64)
		},
	}
}

// model is the data every template sees. Field names are the template
// contract; keep them stable.
type model struct {
	Project  string
	HasPlan  bool
	PlanPath string
	PlanRel  string
	PlanSHA  string
	Mode     string
	SUTRel   string
	// TestingDir is RenderInput.TestingDir, defaulted.
	TestingDir string
	SSHUser    string
	SSHKey     string
	SSHPort    string
	Jump       *jumpModel // nil = no bastion
	Hosts      []hostModel
	BenchHost  string

	BenchMode     string
	BenchRate     string
	BenchDuration string
	BenchCommand  string

	BuildTool, BuildToolPurpose string
	Builds                      []buildModel
	Artifacts                   []artifactModel
	UploadFiles                 []string
	Service                     string
	UnitFile                    string
	UnitBase                    string
	ServiceTarget               string
	Dependencies                []string
	Configs                     []configModel
	UsesContainers              bool

	Capabilities []capModel
	Scenarios    []scenarioModel
	TODOs        []Question

	// SUT is env.example.yml's sut: section; DriverDir the Go workload
	// driver deploy builds and uploads (relative to testing/, "" = none);
	// BenchModel/BenchChecker the oracle analyze runs on a benchmark
	// history. Each *Why names its source.
	SUT sutModel
	// DeployArtifacts are the SUT's own ways to start it other than a
	// systemd unit (which sut: already reads), one summary line each.
	DeployArtifacts      []string
	DriverDir, DriverWhy string
	// Harness are the SUT's scripts the scenarios' run wiring names, which
	// deploy:upload pushes to <workdir>/harness (render_wiring.go).
	Harness                                 []harnessFile
	BenchModel, BenchChecker, BenchModelWhy string
}

type jumpModel struct {
	Host, User, Port string
}

type hostModel struct {
	Name, Address, Why string
	Roles              []string
}

type buildModel struct {
	Name, Command, Artifact, Source string
	// Primary is false when an earlier target runs the same command, so
	// `build` runs each distinct command once.
	Primary bool
}

type artifactModel struct {
	Name, Path, Base string
	GoPackage        string // the Go main package it builds from, root-relative
}

type configModel struct {
	File, Target, SrcBase, DstBase string
}

type capModel struct {
	Key, Requirement, Floor, Hint string
	UsedBy                        []string
	BroughtUp                     bool
}

func newModel(in RenderInput) model {
	p := in.Profile
	m := model{
		Project:       p.Name,
		PlanPath:      in.PlanPath,
		PlanRel:       in.PlanRel,
		PlanSHA:       in.PlanSHA,
		HasPlan:       in.Plan != nil,
		Mode:          p.Completeness.Mode,
		SUTRel:        in.SUTRel,
		SSHUser:       "root",
		SSHKey:        "~/.ssh/id_ed25519",
		SSHPort:       "22",
		BenchMode:     "mixed",
		BenchRate:     "100",
		BenchDuration: "60",
	}
	if m.Project = safeName(m.Project); m.Project == "" {
		m.Project = "sut"
	}
	if m.SUTRel == "" {
		m.SUTRel = ".."
	}
	if m.TestingDir = in.TestingDir; m.TestingDir == "" {
		m.TestingDir = "testing"
	}
	fillBuild(&m, p)
	fillService(&m, p)
	if in.Plan != nil {
		m.Capabilities = capabilities(in.Plan)
		for _, s := range in.Plan.Scenarios {
			m.Scenarios = append(m.Scenarios, scenarioFor(s))
		}
	}
	m.Hosts, m.BenchHost = hostsFor(p, in.Plan)
	applyAnswers(&m, p.Questions)
	unknownRoleTargets(&m)
	fillSUT(&m, p, in.Plan)
	wireScenarios(&m, in.Plan, p.Root)
	return m
}

// safeName reduces a name read from the SUT (a package name, a directory
// name) to characters that mean nothing to YAML, go-task templates or a
// shell, even inside double quotes: the project name is printed by
// generated commands and scripts, and a hostile manifest must not be able
// to run code on the control node or the hosts through it.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune("-_.+@", r):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// taskName turns a free-form name into a go-task-friendly identifier.
func taskName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

func fillBuild(m *model, p *Profile) {
	seen := map[string]bool{}
	cmds := map[string]bool{}
	for _, a := range p.Artifacts {
		name := taskName(a.Name)
		if name == "" || seen[name] || a.Build == "" {
			continue
		}
		seen[name] = true
		m.Builds = append(m.Builds, buildModel{Name: name, Command: a.Build, Artifact: a.Path, Source: a.File, Primary: !cmds[a.Build]})
		cmds[a.Build] = true
		if a.Path != "" {
			m.Artifacts = append(m.Artifacts, artifactModel{Name: name, Path: a.Path, Base: path.Base(a.Path), GoPackage: a.GoPackage})
		}
	}
	if len(m.Builds) == 0 {
		for _, b := range p.Build {
			if len(b.Commands) == 0 {
				continue
			}
			name := taskName(b.Kind)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			m.Builds = append(m.Builds, buildModel{Name: name, Command: b.Commands[0], Source: b.File, Primary: !cmds[b.Commands[0]]})
			cmds[b.Commands[0]] = true
		}
	}
	m.BuildTool, m.BuildToolPurpose = "build tool: none found by the scan", "nothing to build locally (the build task is a no-op)"
	if len(p.Build) > 0 {
		b := p.Build[0]
		m.BuildTool = b.Kind
		m.BuildToolPurpose = "local build, from " + b.File
		if len(b.Commands) > 0 {
			m.BuildToolPurpose += " (`" + oneline.Fold(b.Commands[0]) + "`)"
		}
	}
	for _, c := range p.Configs {
		m.Configs = append(m.Configs, configModel{File: c.File, Target: c.Target, SrcBase: path.Base(c.File), DstBase: path.Base(c.Target)})
		m.UploadFiles = append(m.UploadFiles, c.File)
	}
}

func fillService(m *model, p *Profile) {
	if len(p.Units) == 0 {
		m.ServiceTarget = "all"
		return
	}
	u := p.Units[0]
	m.Service = u.Name
	m.UnitFile = u.File
	m.UnitBase = path.Base(u.File)
	m.UploadFiles = append([]string{u.File}, m.UploadFiles...)
	m.ServiceTarget = "role:" + sutRole(p)
	for _, r := range u.Requires {
		if strings.HasSuffix(r, ".service") && r != u.Name {
			m.Dependencies = append(m.Dependencies, r)
		}
		if strings.Contains(r, "docker") || strings.Contains(r, "containerd") || strings.Contains(r, "podman") {
			m.UsesContainers = true
		}
	}
}

// templateRole is the role the SUT's own config templates name first
// besides the client: the role their author wrote (.Roles.zk), which wins
// over a name derived from the unit's file name unless the templates name
// that one too. Another role they name is an error (checkSUTTemplates).
// It returns "" and no source when they name none.
func templateRole(p *Profile) (role, source string) {
	unit := ""
	if len(p.Units) > 0 {
		unit = roleOf(p.Units[0].Name)
	}
	for _, c := range p.Configs {
		for _, r := range c.roleRefs {
			if r.Role == unit {
				return "", ""
			}
			if r.Role != "client" && role == "" {
				role, source = r.Role, fmt.Sprintf("%s:%d", c.File, r.Line)
			}
		}
	}
	return role, source
}

// unknownRoleTargets turns a fault target "role:X" that no host of
// env.example.yml carries into a TODO: targetsOf reads "the X" as a role
// ("restart the gateway"), and prose such as "from the other members" or
// "the primary h1" would otherwise become role:other or role:primary,
// which no host has, with nothing said until the run.
func unknownRoleTargets(m *model) {
	var roles []string
	for _, h := range m.Hosts {
		for _, r := range h.Roles {
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	for i := range m.Scenarios {
		sc := &m.Scenarios[i]
		for j := range sc.Faults {
			f := &sc.Faults[j]
			r, ok := strings.CutPrefix(f.Targets, "role:")
			if !ok || slices.Contains(roles, r) {
				continue
			}
			f.Targets = fmt.Sprintf("TODO(%s.faults[%d].targets): the plan's Faults text reads as role %q, which no host has (roles: %s); name a host, role:R, leader, random, one, minority, majority or all",
				sc.ID, j, r, strings.Join(roles, ", "))
		}
	}
}

// sutRole is the role of the hosts that run the SUT: the one its templates
// name, else the first unit's name, else "server".
func sutRole(p *Profile) string {
	if r, _ := templateRole(p); r != "" {
		return r
	}
	if len(p.Units) > 0 {
		return roleOf(p.Units[0].Name)
	}
	return "server"
}

func roleOf(unit string) string {
	r := taskName(strings.TrimSuffix(unit, ".service"))
	if r == "" {
		return "server"
	}
	return r
}

// hostsFor proposes one example host per role: the service role (as many
// nodes as the largest smoke budget asks for, at most 5) plus a client that
// runs workloads and the benchmark. Addresses are RFC 5737 placeholders.
func hostsFor(p *Profile, pl *plan.Plan) ([]hostModel, string) {
	nodes := 1
	if pl != nil {
		for _, s := range pl.Scenarios {
			if t := plan.ParseTier(s.Smoke.Text); t.Nodes.Known && t.Nodes.N > nodes {
				nodes = t.Nodes.N
			}
		}
	}
	if nodes > 5 {
		nodes = 5
	}
	var hosts []hostModel
	addr := 11
	next := func() string { a := fmt.Sprintf("192.0.2.%d", addr); addr++; return a }
	roles := []string{}
	why := map[string]string{}
	tr, tsrc := templateRole(p)
	for i, u := range p.Units {
		r := roleOf(u.Name)
		if i == 0 && tr != "" {
			r = tr
		}
		if _, ok := why[r]; ok {
			continue
		}
		roles = append(roles, r)
		why[r] = fmt.Sprintf("role %s: runs %s (%s)", r, u.Name, u.File)
		if i == 0 && tr != "" {
			why[r] = fmt.Sprintf("role %s (named by %s): runs %s (%s)", r, tsrc, u.Name, u.File)
		}
	}
	if len(roles) == 0 {
		r := "server"
		why[r] = "role server: runs " + p.Name + " (no systemd unit found; role name is a default)"
		if tr != "" {
			r = tr
			why[r] = fmt.Sprintf("role %s: runs %s (named by %s)", r, p.Name, tsrc)
		}
		roles = []string{r}
	}
	for i, r := range roles {
		n := 1
		if i == 0 {
			n = nodes
		}
		for k := 1; k <= n; k++ {
			w := why[r]
			if i == 0 && pl != nil && nodes > 1 {
				w += fmt.Sprintf("; %d nodes: the largest smoke budget of the plan", nodes)
			}
			hosts = append(hosts, hostModel{Name: fmt.Sprintf("%s-%d", r, k), Address: next(), Roles: []string{r}, Why: w})
		}
	}
	hosts = append(hosts, hostModel{Name: "client-1", Address: next(), Roles: []string{"client"},
		Why: "role client: runs workloads, the benchmark job and the samplers (parameters.bench_host)"})
	return hosts, "client-1"
}

func capabilities(pl *plan.Plan) []capModel {
	var caps []capModel
	keys := plan.CapKeys(pl.EnvReqs)
	for i, e := range pl.EnvReqs {
		key := keys[i]
		if key == "" {
			continue
		}
		caps = append(caps, capModel{Key: key, Requirement: e.Requirement, Floor: e.VersionFloor,
			Hint: e.InstallHint, UsedBy: e.UsedBy, BroughtUp: e.BroughtUpBySUT})
	}
	return caps
}

// parseJump reads a bastion answer, "[user@]host[:port]"; "none" or an
// unreadable port means no bastion.
func parseJump(a string) *jumpModel {
	if a == "" || strings.EqualFold(a, "none") || strings.EqualFold(a, "no") {
		return nil
	}
	j := &jumpModel{Port: "22"}
	if u, rest, ok := strings.Cut(a, "@"); ok {
		j.User, a = u, rest
	}
	if h, p, ok := strings.Cut(a, ":"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return nil
		}
		a, j.Port = h, p
	}
	if a == "" || strings.ContainsAny(a, " \t/") {
		return nil
	}
	j.Host = a
	return j
}

// localRE finds an endpoint of this machine in a command line.
// applyAnswers fills env.example.yml values from answered questions and
// collects the unanswered ones as TODOs.
func applyAnswers(m *model, qs []Question) {
	for _, q := range qs {
		a := strings.TrimSpace(q.Answer)
		if a == "" {
			m.TODOs = append(m.TODOs, q)
			if q.EnvKey == "benchmark.command" {
				m.BenchCommand = fmt.Sprintf("TODO(%s): %s", q.ID, oneline.Fold(q.Text))
			}
			continue
		}
		switch q.EnvKey {
		case "remote.host":
			for i := range m.Hosts {
				if m.Hosts[i].Name != m.BenchHost {
					m.Hosts[i].Address = a
					break
				}
			}
		case "ssh.user":
			m.SSHUser = a
		case "ssh.key":
			m.SSHKey = a
		case "ssh.port":
			if n, err := strconv.Atoi(a); err == nil && n > 0 && n < 65536 {
				m.SSHPort = a
			}
		case "ssh.jump.host", "ssh.jump":
			m.Jump = parseJump(a)
		case "benchmark.command":
			if why, local := plan.LocalCommand(a); local {
				// A command for this machine (the SUT docs' own run line) is
				// never a command for the client hosts: the same as no
				// answer, so `--yes` and a blank answer get the same
				// per-host driver command (fillDriver), or the same TODO.
				q.Text += " (" + why + ")"
				m.TODOs = append(m.TODOs, q)
				m.BenchCommand = fmt.Sprintf("TODO(%s): %s", q.ID, oneline.Fold(q.Text))
				continue
			}
			m.BenchCommand = a
		case "benchmark.mode":
			m.BenchMode = a
		case "benchmark":
			for _, kv := range strings.Fields(a) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					continue
				}
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					continue
				}
				switch k {
				case "rate":
					m.BenchRate = v
				case "duration":
					m.BenchDuration = v
				}
			}
		}
	}
	if m.BenchCommand == "" {
		m.BenchCommand = "TODO(benchmark.command): the command that drives " + m.Project + " and writes its reports to the current directory"
	}
}
