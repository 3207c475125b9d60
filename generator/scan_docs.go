package generator

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// unitDstgenPrefix starts the [Service] keys a unit holds for dstgen
// (X-Dstgen-Bootstrap=, X-Dstgen-Health=, …; docs/env-yml.md §7.2).
const unitDstgenPrefix = "X-Dstgen-"

// parseUnit reads a systemd unit: the (last non-empty) ExecStart= of
// [Service], its X-Dstgen-* keys, and the ordering/dependency and
// Conflicts= lists of [Unit]. systemd lets a
// later empty ExecStart= reset earlier ones; the last assignment wins here.
func parseUnit(data []byte) Unit {
	var u Unit
	section := ""
	seen := map[string]bool{}
	lines := splitLines(data)
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSpace(strings.TrimSuffix(line, "\\")) + " " + strings.TrimSpace(lines[i])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.Trim(line, "[] ")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case section == "Service" && k == "ExecStart":
			u.ExecStart, u.Line = v, lineNo
			if v == "" {
				u.Line = 0
			}
		case section == "Service" && k == "TimeoutStartSec":
			u.TimeoutStartS = systemdSeconds(v)
		case section == "Unit" && k == "Conflicts":
			for _, c := range strings.Fields(v) {
				if !slices.Contains(u.Conflicts, c) {
					u.Conflicts = append(u.Conflicts, c)
				}
			}
		case section == "Service" && len(k) > len(unitDstgenPrefix) && strings.EqualFold(k[:len(unitDstgenPrefix)], unitDstgenPrefix):
			key := strings.ToLower(k[len(unitDstgenPrefix):])
			if u.Dstgen == nil {
				u.Dstgen = map[string]string{}
			}
			if key == "secret" && u.Dstgen[key] != "" && v != "" {
				v = u.Dstgen[key] + " " + v // a list: one key per secret, or several names in one
			}
			u.Dstgen[key] = v
		case section == "Unit" && (k == "Requires" || k == "Wants" || k == "After" || k == "BindsTo" || k == "Requisite"):
			for _, dep := range strings.Fields(v) {
				if !seen[dep] {
					seen[dep] = true
					u.Requires = append(u.Requires, dep)
				}
			}
		}
	}
	return u
}

// systemdSecondsRE is a systemd time span of the usual forms: 90, 90s,
// 5min, 1min 30s (no fractions, no larger units).
var systemdSecondsRE = lazyre.New(`^(?:(\d{1,6})\s*min\s*)?(?:(\d{1,7})\s*s?(?:ec)?)?$`)

// systemdSeconds is a time span in seconds; 0 when unset, "infinity" or
// a form not read here.
func systemdSeconds(v string) int {
	m := systemdSecondsRE.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0
	}
	n := 0
	if m[1] != "" {
		mins, _ := strconv.Atoi(m[1])
		n += 60 * mins
	}
	if m[2] != "" {
		secs, _ := strconv.Atoi(m[2])
		n += secs
	}
	if n < 0 || n > 1<<20 {
		return 0
	}
	return n
}

// configKeys lists the top-level keys of a config template when its format
// is cheap to read; nil when the format is unknown or the file does not
// parse (a template may hold placeholders that break the syntax).
func configKeys(target string, data []byte) []string {
	ext := strings.ToLower(path.Ext(target))
	if target == ".env" {
		ext = ".env"
	}
	switch ext {
	case ".yml", ".yaml":
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
			return nil
		}
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil
		}
		var keys []string
		for i := 0; i+1 < len(m.Content); i += 2 {
			keys = appendUnique(keys, m.Content[i].Value)
		}
		return keys
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil
		}
		var keys []string
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return keys
			}
			k, ok := t.(string)
			if !ok {
				return keys
			}
			keys = appendUnique(keys, k)
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return keys
			}
		}
		return keys
	case ".toml", ".ini", ".conf", ".cfg", ".properties", ".env":
		return iniKeys(data, ext == ".toml")
	}
	return nil
}

// iniKeys reads TOML/INI-like files: keys before the first section, then
// each section (table) name once. For TOML a dotted table "a.b" counts as
// its top-level key "a".
func iniKeys(data []byte, toml bool) []string {
	var keys []string
	inSection := false
	for _, line := range splitLines(data) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if t[0] == '[' {
			name := strings.TrimSpace(strings.Trim(t, "[]"))
			if toml {
				name, _, _ = strings.Cut(name, ".")
				name = strings.Trim(strings.TrimSpace(name), `"`)
			}
			if name != "" {
				keys = appendUnique(keys, name)
			}
			inSection = true
			continue
		}
		if inSection {
			continue
		}
		i := strings.IndexAny(t, "=:")
		if i <= 0 {
			continue
		}
		k := strings.TrimSpace(strings.TrimPrefix(t[:i], "export "))
		if toml {
			k, _, _ = strings.Cut(k, ".")
			k = strings.Trim(k, `"`)
		}
		if k != "" && !strings.ContainsAny(k, " \t") {
			keys = appendUnique(keys, k)
		}
	}
	return keys
}

// mdSection is one heading of a markdown document and the shell commands in
// fenced blocks under it (before the next heading of any level).
type mdSection struct {
	title string
	level int
	line  int
	cmds  []string
	lines []int
}

var atxHeading = lazyre.New(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)

// parseMarkdown splits a document into sections and extracts shell commands
// from fenced blocks: every non-comment line of sh/bash blocks (joining
// backslash continuations), only the prompted lines of console blocks.
// Content before the first heading is a level-0 section with no title.
func parseMarkdown(data []byte) []mdSection {
	secs := []mdSection{{}}
	lines := splitLines(data)
	fence := ""      // the opening fence while inside a block
	shell := false   // block language is a shell
	console := false // block shows prompts and output
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trim := strings.TrimLeft(line, " ")
		if fence != "" {
			if isFenceClose(line, fence) {
				fence = ""
				continue
			}
			if !shell {
				continue
			}
			cmd := strings.TrimSpace(line)
			start := i + 1
			if console {
				switch {
				case strings.HasPrefix(cmd, "$ "), strings.HasPrefix(cmd, "# "), strings.HasPrefix(cmd, "> "):
					cmd = strings.TrimSpace(cmd[2:])
				default:
					continue
				}
			} else if strings.HasPrefix(cmd, "$ ") {
				cmd = strings.TrimSpace(cmd[2:])
			}
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) && !isFenceClose(lines[i+1], fence) {
				i++
				cmd = strings.TrimSpace(strings.TrimSuffix(cmd, "\\")) + " " + strings.TrimSpace(lines[i])
			}
			if cmd == "" || strings.HasPrefix(cmd, "#") {
				continue
			}
			sec := &secs[len(secs)-1]
			sec.cmds = append(sec.cmds, cmd)
			sec.lines = append(sec.lines, start)
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			if len(line)-len(trim) > 3 {
				continue
			}
			n := 0
			for n < len(trim) && trim[n] == trim[0] {
				n++
			}
			fence = trim[:n]
			info := strings.ToLower(strings.TrimSpace(trim[n:]))
			if f := strings.Fields(info); len(f) > 0 {
				info = strings.Trim(f[0], "{}.")
			}
			switch info {
			case "", "sh", "bash", "shell", "zsh", "shell-session", "console", "terminal", "shellsession":
				shell = true
			default:
				shell = false
			}
			console = info == "console" || info == "shell-session" || info == "terminal" || info == "shellsession"
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			secs = append(secs, mdSection{title: strings.TrimSpace(m[2]), level: len(m[1]), line: i + 1})
		}
	}
	return secs
}

func isFenceClose(line, fence string) bool {
	t := strings.TrimLeft(line, " ")
	return strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == ""
}

// deployHeading matches README headings that hold install/deploy steps.
var deployHeading = lazyre.New(`(?i)\b(install|installation|deploy|deployment|quick ?start|getting started|set ?up|configur|service|systemd|running|build|operat|cluster|workload|usage)`)

// addDoc records the install/deploy sections of a markdown document. In a
// README only headings that say so count (and their subsections); in a
// dedicated document (INSTALL.md, docs/deploy*.md) every section does.
func (s *scanner) addDoc(rel string, data []byte, dedicated bool) {
	secs := parseMarkdown(data)
	if dedicated {
		added := false
		for _, sec := range secs {
			if len(sec.cmds) == 0 {
				continue
			}
			s.p.Deploy = append(s.p.Deploy, DeployDoc{File: rel, Section: sec.title, Line: sec.line, Commands: sec.cmds, CommandLines: sec.lines})
			added = true
		}
		if !added {
			d := DeployDoc{File: rel}
			for _, sec := range secs {
				if sec.title != "" {
					d.Section, d.Line = sec.title, sec.line
					break
				}
			}
			s.p.Deploy = append(s.p.Deploy, d)
		}
		return
	}
	for i := 0; i < len(secs); i++ {
		sec := secs[i]
		if sec.level == 0 || !deployHeading.MatchString(sec.title) {
			continue
		}
		d := DeployDoc{File: rel, Section: sec.title, Line: sec.line, Commands: sec.cmds, CommandLines: sec.lines}
		// Subsections belong to the section that introduced them.
		for i+1 < len(secs) && secs[i+1].level > sec.level {
			i++
			d.Commands = append(d.Commands, secs[i].cmds...)
			d.CommandLines = append(d.CommandLines, secs[i].lines...)
		}
		s.p.Deploy = append(s.p.Deploy, d)
	}
}

// cmdPos anchors a tool name where a shell would run it: line start, after
// a separator, sudo/exec/timeout, or inside $(…). "command -v iptables" or a
// prose mention does not make a script a fault injector.
const cmdPos = `(?m)(?:^\s*[@-]*|[;&|(]\s*|\bsudo\s+(?:-\S+\s+)*|\bexec\s+|\btimeout\s+\S+\s+|\$\(\s*|\bxargs\s+|\brun:\s*)`

// Role signatures, matched on lowercased text with comments removed.
var (
	faultContent   = lazyre.New(cmdPos + `(iptables|ip6tables|nft|tc qdisc|tc\s+\S+\s+qdisc|toxiproxy-cli|pumba|blockade|dmsetup|chaosctl|kill -(?:9|kill|stop|sigkill|sigstop)|pkill -(?:9|kill)|killall -9|ip link set \S+ down)(?:\s|$)`)
	bringUpContent = lazyre.New(cmdPos + `(docker[ -]compose(?:\s+-f\s+\S+)? up|docker run|systemctl (?:start|restart)|kind create cluster|vagrant up|minikube start|nohup|etcd\b.*--initial-cluster)`)
	benchContent   = lazyre.New(cmdPos + `(wrk|fio|ycsb|pgbench|vegeta|hey|ab -n|go test -bench|cargo bench|sysbench)(?:\s|$)`)
	obsContent     = lazyre.New(cmdPos + `(prometheus|vmstat|iostat|mpstat|journalctl|perf record|node_exporter)(?:\s|$)`)
	suiteContent   = lazyre.New(cmdPos + `(jepsen|go test|cargo test|pytest|bats|npm test)(?:\s|$)`)
)

// roleByContent finds the first line of text that betrays a toolbox role.
// Fault injection outranks the rest: a script that partitions while it
// runs a workload is first of all a fault injector.
func roleByContent(text string) (role, why string, line int) {
	low := stripComments(strings.ToLower(text))
	for _, c := range []struct {
		re   *lazyre.Regexp
		role string
	}{
		{faultContent, "fault-injector"},
		{bringUpContent, "bring-up"},
		{benchContent, "bench"},
		{obsContent, "observability"},
		{suiteContent, "driver"},
	} {
		loc := c.re.FindStringSubmatchIndex(low)
		if loc == nil {
			continue
		}
		line = strings.Count(low[:loc[2]], "\n") + 1
		return c.role, "runs " + low[loc[2]:loc[3]], line
	}
	return "", "", 0
}

// stripComments blanks shell comment lines (keeping line numbers), so a
// script that mentions iptables in a comment is not a fault injector.
func stripComments(text string) string {
	if !strings.Contains(text, "#") {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// roleWords maps name tokens to roles, in priority order.
var roleWords = []struct {
	role  string
	words []string
}{
	{"fault-injector", []string{"chaos", "partition", "nemesis", "fault", "faults", "netem", "kill", "isolate", "heal", "toxiproxy", "blockade", "inject"}},
	{"workload", []string{"workload", "loadgen", "client"}},
	{"bench", []string{"bench", "benchmark", "benchmarks", "perf", "load", "loadtest", "soak", "stress"}},
	{"bring-up", []string{"cluster", "up", "bringup", "bring", "down", "teardown", "localnet", "devnet", "compose", "provision"}},
	{"test-suite", []string{"integration", "e2e", "stability", "smoke", "jepsen"}},
	{"observability", []string{"metrics", "monitor", "monitoring", "prometheus", "grafana", "pprof", "logs", "collect"}},
}

// roleByName classifies by the tokens of a target or file name
// ("cluster-up" → bring-up, "partition.sh" → fault-injector).
func roleByName(name string) (role, why string) {
	base := strings.ToLower(name)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	toks := strings.FieldsFunc(base, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for _, rw := range roleWords {
		for _, w := range rw.words {
			for _, t := range toks {
				if t == w {
					return rw.role, "name matches " + w
				}
			}
		}
	}
	return "", ""
}

func (s *scanner) addToolboxScript(rel, name string, data []byte) {
	role, why := roleByName(name)
	r2, w2, line := roleByContent(string(data))
	switch {
	case role == "" && r2 != "":
		role, why = r2, w2
	case role != "" && r2 != "":
		why += "; " + w2
	case role == "":
		role, why, line = "other", "file under "+path.Dir(rel)+"/", 0
	default:
		line = 0
	}
	if line > 0 {
		why += " (line " + strconv.Itoa(line) + ")"
	}
	s.p.Toolbox = append(s.p.Toolbox, Tool{Path: rel, Role: role, Why: why, Line: line})
}

// addToolboxSuite records a test-suite directory (tests/chaos, ...) once.
func (s *scanner) addToolboxSuite(dir string) {
	parts := strings.Split(dir, "/")
	root := dir
	for i := range parts {
		if toolboxKind(strings.Join(parts[:i+1], "/")) == kindToolboxSuite {
			root = strings.Join(parts[:i+1], "/")
			break
		}
	}
	if s.suites[root] {
		return
	}
	s.suites[root] = true
	role, why := roleByName(path.Base(root))
	if role == "" || role == "bring-up" {
		role = "test-suite"
	}
	if why == "" {
		why = "test directory"
	}
	s.p.Toolbox = append(s.p.Toolbox, Tool{Path: root + "/", Role: role, Why: "test suite directory (" + why + ")"})
}

var ciContent = lazyre.New(`\b(iptables|tc qdisc|netem|toxiproxy(?:-cli)?|chaos[a-z-]*|pumba|jepsen|blockade|litmus|kill -9|dmsetup)\b`)

// addCI records a CI file when it wires fault tooling; CI that only builds
// and unit-tests is not part of a test toolbox.
func (s *scanner) addCI(rel string, data []byte) {
	var hits []string
	first := 0
	for i, line := range splitLines(data) {
		low := strings.ToLower(line)
		if strings.HasPrefix(strings.TrimSpace(low), "#") {
			continue
		}
		for _, m := range ciContent.FindAllString(low, -1) {
			if first == 0 {
				first = i + 1
			}
			hits = appendUnique(hits, strings.TrimSuffix(m, "-cli"))
		}
	}
	if len(hits) == 0 {
		return
	}
	if len(hits) > 6 {
		hits = hits[:6]
	}
	s.p.Toolbox = append(s.p.Toolbox, Tool{Path: rel, Role: "ci-wiring", Why: "CI runs " + strings.Join(hits, ", "), Line: first})
}
