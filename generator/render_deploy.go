package generator

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/plan"
)

// sutModel is the sut: section of env.example.yml: how `dstgen deploy`
// installs, configures, runs and checks the SUT, derived from the scan.
// Every derived value names where it came from (Why), so a reader can
// check it against the SUT's own files.
type sutModel struct {
	Name, Role               string
	Package, Binary, Version string
	Artifact                 string // relative to testing/
	// BuildFirst: the artifact is a build's output, which `task deploy`
	// builds (task build) before it uploads it; a Go package deploy
	// builds itself.
	BuildFirst       bool
	Command, DataDir string
	Configs          []sutConfigModel
	Health           string
	StopUnits        []string
	// Init, Bootstrap* and Secrets come from the unit's X-Dstgen-* keys
	// (docs/env-yml.md §7.2): sut.init, sut.bootstrap, sut.secrets.
	Init, BootstrapCommand, BootstrapRank, BootstrapHealth string
	Secrets                                                []string
	ReadyTimeoutS                                          int
	Why                                                    map[string]string // field → source
}

type sutConfigModel struct {
	Template string // relative to testing/
	Dest     string // where deploy installs it: <workdir>/etc/<target>
	Source   string // SUT-relative, for the comment
	Static   bool   // no template actions: the same file on every host
	Script   bool   // a script of the SUT's a unit command runs, installed beside the configs
}

var (
	dataDirRE = lazyre.New(`(?m)^\s*"?(?:data[-_]?dir|dataDir)"?\s*[:=]\s*"?([^"\s#,]+)`)
	installRE = lazyre.New(`\b(?:apt-get|apt|dnf|yum)\s+(?:-\S+\s+)*install\s+(.+)$`)
	goRunRE   = lazyre.New(`^go\s+run\s+(\./[A-Za-z0-9._/-]+)(.*)$`)
	// hostPortListRE matches a comma list of host:port items (example
	// addresses in docs: 10.0.0.1:2379,10.0.0.2:2379 or 127.0.0.1:2379).
	hostPortListRE = lazyre.New(`^(https?://)?[A-Za-z0-9.-]+:(\d+)(,(https?://)?[A-Za-z0-9.-]+:\d+)*$`)
	// bareIPv4RE is an address given alone (redis-cli -h 10.0.0.1 ping).
	bareIPv4RE = lazyre.New(`^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$`)
)

// configDataDir is the literal data dir a config file sets, "" when it
// sets none or leaves it to a template value.
func configDataDir(data []byte) string {
	m := dataDirRE.FindSubmatch(data)
	if m == nil || strings.Contains(string(m[1]), "{{") || !strings.HasPrefix(string(m[1]), "/") {
		return ""
	}
	return string(m[1])
}

// maxEnvDeployArtifacts bounds the deploy artifacts env.example.yml lists.
const maxEnvDeployArtifacts = 8

// fillSUT derives the sut: section and the workload driver. It runs after
// fillBuild and fillService, whose results it reads.
func fillSUT(m *model, p *Profile, pl *plan.Plan) {
	s := sutModel{Name: sutName(m.Project), Role: sutRole(p), Why: map[string]string{}}
	if strings.HasPrefix(m.ServiceTarget, "role:") {
		s.Role = strings.TrimPrefix(m.ServiceTarget, "role:")
	}
	var exec, unitFile string
	interp := false // the unit runs an interpreter (java, python…) with the SUT as its argument
	var unit Unit
	if len(p.Units) > 0 {
		unit = p.Units[0]
		exec, unitFile = unit.ExecStart, unit.File
		s.StopUnits = []string{unit.Name}
		s.Why["stop_units"] = unit.File + " (the SUT's own unit must not hold the ports)"
		for _, c := range unit.Conflicts {
			if !slices.Contains(s.StopUnits, c) {
				s.StopUnits = append(s.StopUnits, c)
				s.Why["stop_units"] = unit.File + " (the SUT's own unit and its Conflicts= must not hold the ports)"
			}
		}
	}
	s.ReadyTimeoutS = 60
	if t := unit.TimeoutStartS; t > 0 {
		s.ReadyTimeoutS, s.Why["ready_timeout_s"] = min(t, maxReadyTimeoutS), unitFile+" TimeoutStartSec"
	}
	// Configs: per target, a file with template actions wins over an
	// example copy of the same file.
	byTarget := map[string]int{}
	for _, c := range p.Configs {
		cm := sutConfigModel{Template: path.Join(m.SUTRel, c.File), Dest: "{{ .Host.Workdir }}/etc/" + c.Target, Source: c.File, Static: !c.Templated}
		if i, ok := byTarget[c.Target]; ok {
			if c.Templated && s.Configs[i].Static {
				s.Configs[i] = cm
			}
			continue
		}
		byTarget[c.Target] = len(s.Configs)
		s.Configs = append(s.Configs, cm)
	}
	// The data dir is the one the installed config sets literally; a
	// template that takes it from .DataDir leaves it to sut.data_dir.
	for _, c := range p.Configs {
		for _, cm := range s.Configs {
			if cm.Source == c.File && c.DataDir != "" && s.DataDir == "" {
				s.DataDir, s.Why["data_dir"] = c.DataDir, c.File+" (its data-dir)"
			}
		}
	}
	if s.DataDir == "" {
		s.DataDir, s.Why["data_dir"] = "{{ .Host.Workdir }}/data", "default: below this host's work dir"
	}
	s.Secrets = strings.Fields(unit.Dstgen["secret"])
	if len(s.Secrets) > 0 {
		s.Why["secrets"] = unitFile + " X-Dstgen-Secret"
	}
	if exec != "" {
		words := unitWords(m, p, &s, exec)
		// A unit that runs a binary this repository builds runs the
		// build's copy deploy uploads to <workdir>/bin.
		for _, a := range m.Artifacts {
			if path.Base(words[0]) == a.Base {
				s.Artifact = artifactOf(m, &s, a)
				words[0] = "{{ .Host.Workdir }}/bin/" + path.Base(s.Artifact)
				s.Why["artifact"] = a.Path + ", the build of the binary " + unitFile + " runs"
			}
		}
		s.Command, s.Why["command"] = strings.Join(words, " "), unitFile+" ExecStart, reading its config from this host's work dir"
		switch {
		case unit.Dstgen["binary"] != "":
			// ExecStart runs a script (sh start.sh): the unit names the
			// binary the package installs.
			s.Binary, s.Why["binary"] = unit.Dstgen["binary"], unitFile+" X-Dstgen-Binary"
		case interpreters[path.Base(words[0])] && s.Artifact == "":
			// java -cp … MainClass: the interpreter is not the SUT, and
			// its --version is not the SUT's version.
			interp = true
			if jar := jarOf(words); jar != "" {
				s.Binary, s.Why["binary"] = jar, unitFile+" ExecStart (the jar it runs; "+path.Base(words[0])+" is its interpreter)"
			}
		case strings.HasPrefix(words[0], "/") || s.Artifact != "":
			s.Binary, s.Why["binary"] = words[0], unitFile+" ExecStart"
		}
		if v := unit.Dstgen["version"]; v != "" {
			s.Version = strings.Join(unitWords(m, p, &s, v), " ")
		}
		if v := unit.Dstgen["package"]; v != "" {
			s.Package, s.Why["package"] = v, unitFile+" X-Dstgen-Package"
		}
		// In a fixed order: the scripts they name become configs in it.
		for _, k := range []struct {
			key string
			dst *string
		}{{"init", &s.Init}, {"bootstrap", &s.BootstrapCommand}, {"rank", &s.BootstrapRank},
			{"bootstrap-health", &s.BootstrapHealth}, {"health", &s.Health}} {
			if v := unit.Dstgen[k.key]; v != "" {
				*k.dst = strings.Join(unitWords(m, p, &s, v), " ")
				s.Why[k.key] = unitFile + " X-Dstgen-" + unitKeyName(k.key) + ", reading its files from this host's work dir"
			}
		}
	} else if len(m.Artifacts) > 0 {
		a := m.Artifacts[0]
		s.Artifact = artifactOf(m, &s, a)
		bin := "{{ .Host.Workdir }}/bin/" + path.Base(s.Artifact)
		s.Binary, s.Why["binary"] = bin, "the build artifact "+a.Path
		s.Command, s.Why["command"] = bin, "the build artifact (add its flags)"
	}
	for _, d := range p.Deploy {
		for i, c := range d.Commands {
			line := d.File
			if i < len(d.CommandLines) {
				line = d.File + ":" + strconv.Itoa(d.CommandLines[i])
			}
			if mm := installRE.FindStringSubmatch(c); mm != nil && s.Package == "" {
				var pkgs []string
				for _, w := range strings.Fields(mm[1]) {
					if !strings.HasPrefix(w, "-") && !strings.ContainsAny(w, "&|;<>$`'\"") {
						pkgs = append(pkgs, w)
					}
				}
				if len(pkgs) > 0 {
					s.Package, s.Why["package"] = strings.Join(pkgs, " "), line
				}
			}
			if i := strings.Index(c, " #"); i > 0 {
				c = strings.TrimSpace(c[:i]) // a trailing shell comment
			}
			if s.Health == "" && isHealthCommand(c) {
				s.Health, s.Why["health"] = hostAddresses(c, "{{ .Host.Address }}"), line+" (its example addresses replaced by this host's)"
				// The SUT's own binary checks it: the copy deploy uploads.
				if w := strings.Fields(s.Health); s.Binary != "" && len(w) > 0 && w[0] == path.Base(s.Binary) && w[0] != s.Binary {
					s.Health = s.Binary + strings.TrimPrefix(s.Health, w[0])
				}
			}
		}
	}
	// The installed version: a package's own (the SUT's, whatever runs
	// it), else the binary's --version; never an interpreter's. The
	// unit's own X-Dstgen-Version wins.
	switch {
	case s.Version != "":
		s.Why["version"] = unitFile + " X-Dstgen-Version"
	case s.Package != "" && s.Artifact == "":
		pkg := strings.Fields(s.Package)[0]
		s.Version = "dpkg-query -W -f '${Version}' " + pkg + " 2>/dev/null || rpm -q --qf '%{VERSION}-%{RELEASE}' " + pkg
		s.Why["version"] = "the package " + pkg + " (" + s.Why["package"] + ")"
	case interp:
		s.Why["version"] = unitFile + " runs an interpreter: name the SUT's package in install.package, or a command that prints the SUT's version"
	case s.Binary != "" && s.Artifact == "" && strings.HasPrefix(s.Binary, "/"):
		s.Version, s.Why["version"] = s.Binary+" --version", unitFile+" ExecStart"
	}
	m.SUT = s
	for _, a := range p.DeployArtifacts {
		if a.Kind != "systemd" && len(m.DeployArtifacts) < maxEnvDeployArtifacts {
			m.DeployArtifacts = append(m.DeployArtifacts, oneline.Fold(deployLine(a)))
		}
	}
	fillDriver(m, p, pl)
}

// checkSUTTemplates refuses what `dstgen deploy` would refuse in the
// SUT's own config templates, at init already and at the template's line:
// a value that is no template fact, or a role no host of env.example.yml
// has (a server list over .Roles.zk renders empty when the hosts are
// "zookeeper").
func checkSUTTemplates(p *Profile, pl *plan.Plan) error {
	hosts, _ := hostsFor(p, pl)
	var roles []string
	for _, h := range hosts {
		for _, r := range h.Roles {
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	slices.Sort(roles)
	for _, c := range p.Configs {
		if c.problem != nil {
			return c.problem
		}
		for _, r := range c.roleRefs {
			if !slices.Contains(roles, r.Role) {
				return fileline.Errorf(c.File, r.Line, "unknown role %q: no host init proposes has it (roles: %s); the SUT's templates may name one role besides client, which the SUT's hosts then carry",
					r.Role, strings.Join(roles, ", "))
			}
		}
	}
	return nil
}

// interpreters run the SUT rather than being it: a unit that starts one
// names the SUT in its arguments (a jar, a main class, a script).
var interpreters = map[string]bool{
	"java": true, "python": true, "python3": true, "node": true, "ruby": true, "perl": true,
	"php": true, "dotnet": true, "sh": true, "bash": true, "erl": true, "beam.smp": true,
}

// jarOf is the jar a `java … -jar FILE` line runs, "" for a class path
// and main class (no single file is the SUT then).
func jarOf(words []string) string {
	for i, w := range words {
		if w == "-jar" && i+1 < len(words) && !strings.ContainsAny(words[i+1], "$*{") {
			return words[i+1]
		}
	}
	return ""
}

// maxReadyTimeoutS caps the health wait a unit's TimeoutStartSec= sets
// (a unit may allow its start far longer than a test should wait).
const maxReadyTimeoutS = 600

// unitKeyName is an X-Dstgen key as the docs spell it (bootstrap-health →
// Bootstrap-Health).
func unitKeyName(key string) string {
	parts := strings.Split(key, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// unitWords rewrites the words of one of the unit's commands (ExecStart,
// an X-Dstgen key) from where the unit's host keeps its files to where
// deploy puts them on each host: a config template's target (by base
// name) → <workdir>/etc/<target>; a script of this repository named by an
// absolute path (/etc/app/start.sh for scripts/start.sh) → installed as a
// config too, at <workdir>/etc/<name>; a path ending in secrets/<name> of
// an X-Dstgen-Secret → <workdir>/secrets/<name>, where deploy installs it.
func unitWords(m *model, p *Profile, s *sutModel, cmd string) []string {
	words := strings.Fields(cmd)
	for i, w := range words {
		base := path.Base(w)
		if dir := path.Dir(w); path.Base(dir) == "secrets" && slices.Contains(s.Secrets, base) {
			words[i] = "{{ .Host.Workdir }}/secrets/" + base
			continue
		}
		matched := false
		for _, c := range p.Configs {
			if base == c.Target {
				words[i], matched = "{{ .Host.Workdir }}/etc/"+c.Target, true
			}
		}
		if matched || i == 0 || !strings.HasPrefix(w, "/") {
			continue
		}
		for _, t := range p.Toolbox {
			if path.Base(t.Path) != base || path.Ext(base) == "" {
				continue
			}
			fi, err := os.Stat(filepath.Join(p.Root, filepath.FromSlash(t.Path)))
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			tmpl := path.Join(m.SUTRel, t.Path)
			if !slices.ContainsFunc(s.Configs, func(c sutConfigModel) bool { return c.Template == tmpl }) {
				data, _ := os.ReadFile(filepath.Join(p.Root, filepath.FromSlash(t.Path)))
				s.Configs = append(s.Configs, sutConfigModel{Template: tmpl, Source: t.Path, Static: !bytes.Contains(data, []byte("{{")), Script: true})
			}
			words[i] = "{{ .Host.Workdir }}/etc/" + base
			break
		}
	}
	return words
}

// sutName reduces the project name to what env.yml's sut.name allows
// (letters, digits, '-', '_', at most 32): it names a job and a unit.
func sutName(project string) string {
	var b strings.Builder
	for _, r := range project {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	if len(n) > 32 {
		n = strings.TrimRight(n[:32], "-")
	}
	if n == "" {
		return "sut"
	}
	return n
}

// artifactOf is what sut.install.artifact names for a: a Go main
// package's directory, which deploy builds for each host's OS/arch, else
// the build's output, uploaded as it is.
func artifactOf(m *model, s *sutModel, a artifactModel) string {
	if a.GoPackage != "" {
		return path.Join(m.SUTRel, a.GoPackage)
	}
	s.BuildFirst = true
	return path.Join(m.SUTRel, a.Path)
}

// isHealthCommand reports whether a deploy-doc line asks the SUT whether
// it is healthy (etcdctl endpoint health, curl …/health, kvnode -check,
// redis-cli -h ADDR ping, mysqladmin ping, pg_isready), rather than the
// service manager.
func isHealthCommand(c string) bool {
	f := strings.Fields(c)
	if len(f) == 0 || strings.Contains(c, "systemctl") || strings.Contains(c, "journalctl") {
		return false
	}
	for i, w := range f {
		// ping as a subcommand asks the SUT; ping(8) itself asks the network.
		if w == "health" || (w == "ping" && i > 0) || w == "-check" || w == "--check" || path.Base(w) == "pg_isready" || strings.HasSuffix(w, "/health") || strings.HasSuffix(w, "/healthz") {
			return true
		}
	}
	return false
}

// hostAddresses replaces every host:port list in c by one host:port whose
// host is addr (a template expression) and whose port is the first item's,
// and every IPv4 address given alone but loopback by addr.
func hostAddresses(c, addr string) string {
	words := strings.Fields(c)
	for i, w := range words {
		if mm := hostPortListRE.FindStringSubmatch(w); mm != nil {
			words[i] = mm[1] + addr + ":" + mm[2]
		} else if bareIPv4RE.MatchString(w) && !strings.HasPrefix(w, "127.") {
			words[i] = addr
		}
	}
	return strings.Join(words, " ")
}

// roleAddresses replaces every host:port list in c by the list of the
// hosts of role (each with the first item's port).
func roleAddresses(c, role string) string {
	words := strings.Fields(c)
	for i, w := range words {
		if mm := hostPortListRE.FindStringSubmatch(w); mm != nil {
			words[i] = "{{ range $i, $h := index .Roles " + quoteTmpl(role) + " }}{{ if $i }},{{ end }}" + mm[1] + "{{ $h.Address }}:" + mm[2] + "{{ end }}"
		}
	}
	return strings.Join(words, " ")
}

func quoteTmpl(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// fillDriver finds a Go workload driver the SUT's docs run with `go run
// ./DIR …`: deploy builds DIR for each client host and uploads it, and the
// benchmark command runs the uploaded binary against the hosts of the SUT's
// role instead of the docs' local addresses.
func fillDriver(m *model, p *Profile, pl *plan.Plan) {
	for _, d := range p.Deploy {
		for i, c := range d.Commands {
			mm := goRunRE.FindStringSubmatch(strings.TrimSpace(c))
			if mm == nil {
				continue
			}
			dir := path.Clean(mm[1])
			m.DriverDir = path.Join(m.SUTRel, dir)
			m.DriverWhy = d.File
			if i < len(d.CommandLines) {
				m.DriverWhy += ":" + strconv.Itoa(d.CommandLines[i])
			}
			if strings.HasPrefix(m.BenchCommand, "TODO(") {
				args := strings.TrimSpace(mm[2])
				if contractDriver(filepath.Join(p.Root, filepath.FromSlash(dir))) {
					args = dropContractFlags(args)
				}
				m.BenchCommand = strings.TrimSpace("{{ .Host.Workdir }}/bin/" + path.Base(dir) + " " + roleAddresses(args, m.SUT.Role))
				m.TODOs = dropTODO(m.TODOs, "benchmark.command", "test.workload_command")
			}
			break
		}
		if m.DriverDir != "" {
			break
		}
	}
	if m.DriverDir == "" {
		fillContractDriver(m, p)
	}
	if pl == nil {
		return
	}
	for _, sc := range pl.Scenarios {
		if sc.M == nil {
			continue
		}
		mod, chk := strings.ToLower(sc.M.Model), strings.ToLower(sc.M.Checker)
		if strings.Contains(chk, "lineariz") && (strings.Contains(mod, "register") || strings.Contains(mod, "kv") || strings.Contains(mod, "key-value")) {
			m.BenchModel, m.BenchChecker, m.BenchModelWhy = "kv", "linearizability", sc.ID+" §7.M (per-key "+sc.M.Model+", "+sc.M.Checker+")"
			return
		}
	}
}

// fillContractDriver takes, when no docs line runs a driver, the first Go
// main package the scan found that is built on dstgen's driver package:
// what `dstgen driver new` writes, often as a module of its own in a
// repository that is no Go module (a deployment repo). Such a driver reads
// the SUT's hosts from DSTGEN_SUT_HOSTS, so its benchmark command is the
// uploaded binary alone.
func fillContractDriver(m *model, p *Profile) {
	for _, a := range p.Artifacts {
		if a.GoPackage == "" || !contractDriver(filepath.Join(p.Root, filepath.FromSlash(a.GoPackage))) {
			continue
		}
		dir := path.Clean(a.GoPackage)
		m.DriverDir = path.Join(m.SUTRel, dir)
		m.DriverWhy = a.File + " (a Go main package on github.com/dstgen/dstgen/driver)"
		if strings.HasPrefix(m.BenchCommand, "TODO(") {
			m.BenchCommand = "{{ .Host.Workdir }}/bin/" + path.Base(dir)
			m.TODOs = dropTODO(m.TODOs, "benchmark.command", "test.workload_command")
		}
		return
	}
}

// contractDriver reports whether the Go package in dir is built on
// dstgen's driver package: it reads DSTGEN_RATE, DSTGEN_DURATION_S,
// DSTGEN_SEED and DSTGEN_RUN_ID itself (docs/driver-contract.md §8).
func contractDriver(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(`"github.com/dstgen/dstgen/driver"`)) {
			return true
		}
	}
	return false
}

// contractFlagRE is a flag the driver contract's variables already give
// (with its value): a docs line's "-rate 200" would override
// benchmark.rate for every run.
var contractFlagRE = lazyre.New(`(^|\s)--?(rate|duration|seed|run-id)(=\S+|\s+\S+)`)

// dropContractFlags removes those flags from a docs line's arguments.
func dropContractFlags(args string) string {
	return strings.Join(strings.Fields(contractFlagRE.ReplaceAllString(args, " ")), " ")
}

func dropTODO(qs []Question, ids ...string) []Question {
	var out []Question
	for _, q := range qs {
		keep := true
		for _, id := range ids {
			if q.ID == id || q.EnvKey == id {
				keep = false
			}
		}
		if keep {
			out = append(out, q)
		}
	}
	return out
}
