package env

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/oneline"
)

// Defaults and ceilings of the remote contract (docs/env-yml.md §2 and §3).
const (
	DefaultUser       = "root"
	DefaultPort       = 22
	DefaultWorkdir    = "/opt/dstgen"
	DefaultTimeoutS   = 30
	MaxTimeoutS       = 30
	DefaultKeepaliveS = 5
	maxKeepaliveS     = 3600
)

var (
	// Host names and roles end up in job paths, log prefixes and remote
	// shells; a narrow alphabet keeps every one of those uses boring.
	nameRE = lazyre.New(`^[A-Za-z0-9._-]+$`)
	// Addresses are DNS names, IPv4 or (bracket-less) IPv6 literals.
	addrRE = lazyre.New(`^[A-Za-z0-9._:%-]+$`)
	userRE = lazyre.New(`^[A-Za-z0-9._][A-Za-z0-9._-]*$`)
	// A work dir is a plain absolute path (see (*loader).workdir).
	workdirRE = lazyre.New(`^/[A-Za-z0-9._+/-]*$`)
)

// Load reads and validates an env.yml. Every error names the file and line
// ("env.yml:12: reason") and never echoes a value that looks like key
// material. Defaults are filled in and the single-host remote:/bastion:
// shorthand is folded into Hosts and SSH.Jump, so callers only ever look at
// Hosts, SSH and Workdir.
//
// A host address that names a Host block of the OpenSSH client config
// (DSTGEN_SSH_CONFIG, else ssh.config, else ~/.ssh/config when it exists)
// takes the block's HostName, Port, User, IdentityFile, UserKnownHostsFile
// and ProxyJump for what env.yml leaves unset; Host.Sources records where
// each SSH value came from.
func Load(path string) (*Env, error) {
	data, err := fileline.ReadBounded(path, maxEnvBytes)
	if fe := (*fileline.Error)(nil); errors.As(err, &fe) && !errors.Is(err, fileline.ErrTooLarge) {
		return nil, fmt.Errorf("read env file: %w", fe.Err)
	}
	if err != nil {
		return nil, err // path: file too large
	}
	return Parse(path, data)
}

// maxEnvBytes bounds the env.yml Load reads: a hand-written file of hosts
// is kilobytes, and a device such as /dev/zero must not exhaust memory.
const maxEnvBytes = 4 << 20

// Parse is Load on bytes already read; name is used in error messages and
// to resolve relative key paths.
func Parse(name string, data []byte) (*Env, error) {
	l := &loader{name: name}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, l.errf(1, "empty file; expected hosts: or remote:")
		}
		return nil, l.yamlErr(err, data)
	}
	if len(doc.Content) == 0 {
		return nil, l.errf(1, "empty file; expected hosts: or remote:")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, l.errf(root.Line, "top level must be a mapping (key: value)")
	}
	// Key material is rejected before decoding: yaml type errors quote the
	// offending value, and a key must never reach an error message.
	if err := l.rejectKeyMaterial(root, ""); err != nil {
		return nil, err
	}
	if err := l.checkKeys(root, reflect.TypeOf(Env{}), ""); err != nil {
		return nil, err
	}
	var e Env
	if err := root.Decode(&e); err != nil {
		return nil, l.yamlErr(err, data)
	}
	e.Path = name
	l.root = root
	if err := l.normalize(&e); err != nil {
		return nil, err
	}
	return &e, nil
}

type loader struct {
	name string
	root *yaml.Node
}

func (l *loader) errf(line int, format string, args ...any) error {
	if line < 1 {
		line = 1
	}
	return fileline.Errorf(l.name, line, format, args...)
}

// maxPrefixProbes bounds how far yamlErr looks back for the start of an
// unclosed quote or flow collection (one short parse per line).
const maxPrefixProbes = 200

// yamlErr turns a yaml load error into one "file:line: reason" line naming
// the line of the offending token. yaml.v3 reported the line where the
// enclosing construct started (and, for parser errors, 0-based: the line
// above it, often a comment), so errors pointed several lines too high;
// yaml v4's LoadError carries the problem mark itself. data is the whole
// document, used to find where an unclosed quote began.
func (l *loader) yamlErr(err error, data []byte) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) {
		return l.errf(1, "%s", oneline.First(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	msg := oneline.First(le.Message)
	line := le.Mark.Line
	if le.ContextMsg != "" && le.ContextMark.Line > 0 && le.ContextMark.Line != line {
		msg += fmt.Sprintf(" (%s at line %d)", le.ContextMsg, le.ContextMark.Line)
	}
	if le.Stage == yaml.ScannerStage || le.Stage == yaml.ParserStage {
		if start, why := l.unclosedBefore(data, line); start > 0 {
			return l.errf(start, "%s (yaml then failed at line %d: %s)", why, line, oneline.First(le.Message))
		}
	}
	return l.errf(line, "%s", msg)
}

// unclosedBefore finds an unclosed quoted scalar or flow collection that
// opened before line bad and swallowed the lines up to it (the usual cause
// of "did not find expected key" far below a missing closing quote). Every
// prefix of a YAML document cut at a line end parses, except one that ends
// inside such a construct; so the first line of the run of failing
// prefixes just above bad is where the construct opened. It returns 0 when
// the prefix just above bad parses (the error is on line bad itself).
func (l *loader) unclosedBefore(data []byte, bad int) (int, string) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if bad-1 > len(lines) {
		return 0, ""
	}
	why := ""
	for j, probes := bad-1, 0; j >= 1 && probes < maxPrefixProbes; j, probes = j-1, probes+1 {
		var n yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:j], nil), &n)
		if err == nil {
			if j == bad-1 {
				return 0, ""
			}
			return j + 1, why
		}
		var le *yaml.LoadError
		if !errors.As(err, &le) {
			return 0, ""
		}
		// "while scanning a quoted scalar", "while parsing a flow sequence"
		why = oneline.First(le.Message)
		if c, ok := strings.CutPrefix(le.ContextMsg, "while "); ok {
			_, what, _ := strings.Cut(c, " a ")
			why = "unclosed " + what
		}
	}
	return 0, ""
}

// looksLikeKey reports whether a scalar holds private key material rather
// than a path to it.
func looksLikeKey(s string) bool {
	return strings.Contains(s, "-----BEGIN") || strings.Contains(s, "PRIVATE KEY-----") ||
		strings.Contains(s, "b3BlbnNzaC1rZXktdjE") // base64 of "openssh-key-v1"
}

func (l *loader) rejectKeyMaterial(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if looksLikeKey(n.Value) {
			where := path
			if where == "" {
				where = "a value"
			}
			return l.errf(n.Line, "%s looks like inline private key material; env.yml holds key file paths only (value not shown)", where)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if looksLikeKey(k.Value) {
				return l.errf(k.Line, "a key name looks like inline private key material (value not shown)")
			}
			if err := l.rejectKeyMaterial(n.Content[i+1], join(path, k.Value)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := l.rejectKeyMaterial(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := l.rejectKeyMaterial(c, path); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		// Aliases point at nodes checked where they are defined.
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// checkKeys rejects keys that no field of t declares: a typo such as
// "timout_s" must not silently fall back to a default.
func (l *loader) checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return l.errf(n.Line, "%s: expected a mapping", orTop(path))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if seen[k.Value] {
				return l.errf(k.Line, "%s: duplicate key", join(path, k.Value))
			}
			seen[k.Value] = true
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				return l.errf(k.Line, "unknown key %q%s", join(path, k.Value), knownKeys(t))
			}
			if err := l.checkKeys(v, f.Type, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return l.errf(n.Line, "%s: expected a list", orTop(path))
		}
		for i, c := range n.Content {
			if err := l.checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return l.errf(n.Line, "%s: expected a mapping", orTop(path))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := l.checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key && name != "-" && name != "" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func knownKeys(t reflect.Type) string {
	var ks []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "-" && name != "" {
			ks = append(ks, name)
		}
	}
	return "; known keys: " + strings.Join(ks, ", ")
}

// line returns the line of the node at path (string keys, int indices),
// or of the deepest ancestor found, so every error can point somewhere.
func (l *loader) line(path ...any) int {
	n := l.root
	best := 1
	if n != nil {
		best = n.Line
	}
	for _, p := range path {
		if n == nil {
			break
		}
		var next *yaml.Node
		switch p := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						best = n.Content[i].Line
						next = n.Content[i+1]
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && p < len(n.Content) {
				next = n.Content[p]
				best = next.Line
			}
		}
		n = next
	}
	return best
}

// explicitSSH records which ssh: values env.yml set, before defaults are
// filled: an explicit value wins over ~/.ssh/config, a default does not.
type explicitSSH struct {
	user, port, key, knownHosts, jump bool
}

func (l *loader) normalize(e *Env) error {
	s := &e.SSH
	ex := explicitSSH{user: s.User != "", port: s.Port != 0, key: s.Key != "", knownHosts: s.KnownHosts != ""}
	if s.User == "" {
		s.User = DefaultUser
	} else if !userRE.MatchString(s.User) {
		return l.errf(l.line("ssh", "user"), "ssh.user %q is not a valid user name", s.User)
	}
	if s.Port == 0 {
		s.Port = DefaultPort
	} else if err := l.port(s.Port, "ssh.port", l.line("ssh", "port")); err != nil {
		return err
	}
	if err := l.timeout(e); err != nil {
		return err
	}
	switch {
	case s.KeepaliveS == 0:
		s.KeepaliveS = DefaultKeepaliveS
	case s.KeepaliveS < 0 || s.KeepaliveS > maxKeepaliveS:
		return l.errf(l.line("ssh", "keepalive_s"), "ssh.keepalive_s must be between 1 and %d", maxKeepaliveS)
	}
	var err error
	if s.Key, err = l.path(e, s.Key, l.line("ssh", "key")); err != nil {
		return err
	}
	if s.KnownHosts == "" {
		s.KnownHosts = "~/.ssh/known_hosts"
	}
	if s.KnownHosts, err = l.path(e, s.KnownHosts, l.line("ssh", "known_hosts")); err != nil {
		return err
	}
	if e.Workdir == "" {
		e.Workdir = DefaultWorkdir
	} else if e.Workdir, err = l.workdir(e.Workdir, "workdir", l.line("workdir")); err != nil {
		return err
	}
	if err := l.foldShorthand(e); err != nil {
		return err
	}
	if j := s.Jump; j != nil {
		ex.jump = true
		if err := l.jump(e, j, "jump host", l.sshJumpLine(e)); err != nil {
			return err
		}
	}
	sc, err := l.loadSSHConfig(e)
	if err != nil {
		return err
	}
	if err := l.hosts(e, ex, sc); err != nil {
		return err
	}
	if err := l.sut(e); err != nil {
		return err
	}
	if err := l.benchmark(e); err != nil {
		return err
	}
	return l.dstgen(e)
}

// sshJumpLine is the line of ssh.jump, or of bastion: when that set it.
func (l *loader) sshJumpLine(e *Env) int {
	if e.Bastion != nil && e.Bastion.Enabled {
		return l.line("bastion")
	}
	return l.line("ssh", "jump")
}

// jump validates a jump host and fills its defaults from ssh:.
func (l *loader) jump(e *Env, j *Jump, what string, ln int) error {
	if j.Host == "" {
		return l.errf(ln, "%s: host is empty", what)
	}
	if !addrRE.MatchString(j.Host) || strings.HasPrefix(j.Host, "-") {
		return l.errf(ln, "%s: %q is not a host name or IP address", what, j.Host)
	}
	if j.Port == 0 {
		j.Port = DefaultPort
	} else if err := l.port(j.Port, what+" port", ln); err != nil {
		return err
	}
	if j.User == "" {
		j.User = e.SSH.User
	} else if !userRE.MatchString(j.User) {
		return l.errf(ln, "%s user %q is not a valid user name", what, j.User)
	}
	if j.Key == "" {
		j.Key = e.SSH.Key
	} else {
		var err error
		if j.Key, err = l.path(e, j.Key, ln); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) port(p int, what string, line int) error {
	if p < 1 || p > 65535 {
		return l.errf(line, "%s %d is out of range 1-65535", what, p)
	}
	return nil
}

// timeout applies the 30 s ceiling: a larger value is an error rather than
// a silent cap, because the user asked for something dstgen will not do.
func (l *loader) timeout(e *Env) error {
	check := func(v int, what string, line int) error {
		if v < 0 || v > MaxTimeoutS {
			return l.errf(line, "%s %d: must be between 1 and %d (the hard ceiling of every SSH round trip)", what, v, MaxTimeoutS)
		}
		return nil
	}
	if err := check(e.SSH.TimeoutS, "ssh.timeout_s", l.line("ssh", "timeout_s")); err != nil {
		return err
	}
	if d := e.Dstgen.SSHTimeoutS; d != 0 {
		ln := l.line("dstgen", "ssh_timeout_s")
		if err := check(d, "dstgen.ssh_timeout_s", ln); err != nil {
			return err
		}
		if e.SSH.TimeoutS != 0 && e.SSH.TimeoutS != d {
			return l.errf(ln, "dstgen.ssh_timeout_s %d disagrees with ssh.timeout_s %d; set one", d, e.SSH.TimeoutS)
		}
		e.SSH.TimeoutS = d
	}
	if e.SSH.TimeoutS == 0 {
		e.SSH.TimeoutS = DefaultTimeoutS
	}
	return nil
}

// path expands ~ and makes a relative path relative to the env file, so the
// same env.yml works from any cwd (task runs from testing/).
func (l *loader) path(e *Env, p string, line int) (string, error) {
	if p == "" {
		return "", nil
	}
	if strings.ContainsAny(p, "\x00\n\r") {
		return "", l.errf(line, "path contains a control character")
	}
	p, err := expandHome(p)
	if err != nil {
		return "", l.errf(line, "%v", err)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(e.Path), p)
	}
	return filepath.Clean(p), nil
}

// workdir checks a remote work dir (what names it in errors) and returns
// it cleaned.
func (l *loader) workdir(w, what string, ln int) (string, error) {
	if !strings.HasPrefix(w, "/") {
		return "", l.errf(ln, "%s must be an absolute remote path", what)
	}
	if strings.ContainsAny(w, "\x00\n\r") {
		return "", l.errf(ln, "%s contains a control character", what)
	}
	// The work dir reaches shell commands through per-host templates
	// (sut.command, benchmark.command, health) that a person writes
	// without quoting: a plain path keeps every one of them one word.
	if !workdirRE.MatchString(w) {
		return "", l.errf(ln, "%s %q: use only letters, digits and . _ - + / (it is part of generated shell commands)", what, w)
	}
	for _, part := range strings.Split(w, "/") {
		if part == ".." {
			return "", l.errf(ln, "%s must not contain ..", what)
		}
	}
	// Cleanup tasks remove things under the workdir; "/" would be a disaster.
	if c := pathClean(w); c == "/" {
		return "", l.errf(ln, "%s must not be /", what)
	}
	return pathClean(w), nil
}

func pathClean(p string) string {
	return filepath.ToSlash(filepath.Clean(p))
}

func (l *loader) foldShorthand(e *Env) error {
	if r := e.Remote; r != nil {
		ln := l.line("remote")
		if len(e.Hosts) > 0 {
			return l.errf(ln, "use either remote: (one host) or hosts:, not both")
		}
		if r.Host == "" {
			return l.errf(ln, "remote.host not set in env.yml")
		}
		e.Hosts = []Host{{Name: "remote", Address: r.Host, Port: r.Port, User: r.User, Key: r.SSHKey, Line: ln}}
	}
	if b := e.Bastion; b != nil && b.Enabled {
		if e.SSH.Jump != nil {
			return l.errf(l.line("bastion"), "use either bastion: or ssh.jump:, not both")
		}
		e.SSH.Jump = &Jump{Host: b.Host, Port: b.Port, User: b.User, Key: b.SSHKey}
	}
	return nil
}

// varRE is a template-usable key: {{ .Vars.client_port }} needs an
// identifier, so a key such as "client-port" would only be reachable
// through index and is almost certainly a typo.
var varRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// hostField maps a Host field to its key in hosts[i] and in remote:.
var hostField = map[string][2]string{
	"address": {"address", "host"}, "port": {"port", "port"}, "user": {"user", "user"},
	"key": {"key", "ssh_key"}, "known_hosts": {"known_hosts", ""}, "jump": {"jump", ""},
	"workdir": {"workdir", ""}, "vars": {"vars", ""},
}

// hostLine is the line of field in host i (or of the host entry).
func (l *loader) hostLine(e *Env, i int, field string) int {
	if e.Remote != nil {
		if k := hostField[field][1]; k != "" {
			return l.line("remote", k)
		}
		return l.line("remote")
	}
	return l.line("hosts", i, hostField[field][0])
}

func (l *loader) at(line int) string { return fmt.Sprintf("%s:%d", l.name, line) }

func (l *loader) hosts(e *Env, ex explicitSSH, sc *sshConfig) error {
	if len(e.Hosts) == 0 {
		return l.errf(l.line("hosts"), "no hosts: set hosts: (a list) or remote.host")
	}
	seen := map[string]bool{}
	addrs := map[string]string{} // address|port -> first host name
	for i := range e.Hosts {
		h := &e.Hosts[i]
		at := []any{"hosts", i}
		if e.Remote != nil {
			at = []any{"remote"}
		}
		if h.Line == 0 {
			h.Line = l.line(at...)
		}
		ln := h.Line
		if h.Name == "" {
			return l.errf(ln, "host %d: name is empty", i+1)
		}
		if !nameRE.MatchString(h.Name) || strings.HasPrefix(h.Name, "-") {
			return l.errf(ln, "host name %q: use only letters, digits, '.', '_' and '-' (not leading '-')", h.Name)
		}
		if h.Name == "all" {
			return l.errf(ln, "host name \"all\" is reserved for the all target")
		}
		if seen[h.Name] {
			return l.errf(ln, "host name %q is used twice", h.Name)
		}
		seen[h.Name] = true
		if h.Address == "" {
			return l.errf(ln, "host %s: address is empty", h.Name)
		}
		if !addrRE.MatchString(h.Address) || strings.HasPrefix(h.Address, "-") {
			return l.errf(ln, "host %s: address %q is not a host name or IP address", h.Name, h.Address)
		}
		if err := l.hostSSH(e, i, ex, sc); err != nil {
			return err
		}
		k := strings.ToLower(h.Address) + "|" + strconv.Itoa(h.Port)
		if first, dup := addrs[k]; dup {
			return l.errf(ln, "host %s: address %s port %d is already host %s's (two entries for one sshd)", h.Name, h.Address, h.Port, first)
		}
		addrs[k] = h.Name
		for _, r := range h.Roles {
			if !nameRE.MatchString(r) || strings.HasPrefix(r, "-") {
				return l.errf(ln, "host %s: role %q: use only letters, digits, '.', '_' and '-'", h.Name, r)
			}
		}
		if h.Workdir != "" {
			var err error
			if h.Workdir, err = l.workdir(h.Workdir, "host "+h.Name+": workdir", l.hostLine(e, i, "workdir")); err != nil {
				return err
			}
		}
		if e.Remote == nil {
			if vn := l.node("hosts", i, "vars"); vn != nil && vn.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(vn.Content); j += 2 {
					if k := vn.Content[j]; !varRE.MatchString(k.Value) {
						return l.errf(k.Line, "host %s: vars key %q: use letters, digits and '_', not starting with a digit (templates read it as .Vars.%s)", h.Name, k.Value, k.Value)
					}
				}
			}
		}
	}
	return nil
}

// hostSSH resolves the SSH fields of host i by precedence: the host's own
// value, an explicit ssh: value, the OpenSSH config's Host block for the
// address, the default; and records each one's source in h.Sources.
func (l *loader) hostSSH(e *Env, i int, ex explicitSSH, sc *sshConfig) error {
	h := &e.Hosts[i]
	s := &e.SSH
	ln := h.Line
	alias := h.Address
	h.Sources = map[string]string{"address": l.at(l.hostLine(e, i, "address"))}
	hn, v, err := sc.hostName(alias)
	if err != nil {
		return err
	}
	if hn != "" {
		h.Address = hn
		h.Sources["address"] = sc.src(v)
	}

	switch v, ok := sc.get(alias, "Port"); {
	case h.Port != 0:
		if err := l.port(h.Port, "host "+h.Name+": port", ln); err != nil {
			return err
		}
		h.Sources["port"] = l.at(l.hostLine(e, i, "port"))
	case ex.port:
		h.Port, h.Sources["port"] = s.Port, l.at(l.line("ssh", "port"))
	case ok:
		if h.Port, err = sc.port(v); err != nil {
			return err
		}
		h.Sources["port"] = sc.src(v)
	default:
		h.Port, h.Sources["port"] = s.Port, "default"
	}

	switch v, ok := sc.get(alias, "User"); {
	case h.User != "":
		if !userRE.MatchString(h.User) {
			return l.errf(ln, "host %s: user %q is not a valid user name", h.Name, h.User)
		}
		h.Sources["user"] = l.at(l.hostLine(e, i, "user"))
	case ex.user:
		h.User, h.Sources["user"] = s.User, l.at(l.line("ssh", "user"))
	case ok:
		if h.User, err = sc.user(v); err != nil {
			return err
		}
		h.Sources["user"] = sc.src(v)
	default:
		h.User, h.Sources["user"] = s.User, "default"
	}

	switch v, ok := sc.get(alias, "IdentityFile"); {
	case h.Key != "":
		if h.Key, err = l.path(e, h.Key, ln); err != nil {
			return err
		}
		h.Sources["key"] = l.at(l.hostLine(e, i, "key"))
	case ex.key:
		h.Key, h.Sources["key"] = s.Key, l.at(l.line("ssh", "key"))
	case ok && !strings.EqualFold(v.val, "none"):
		if h.Key, err = sc.path(v, alias, h.User); err != nil {
			return err
		}
		h.Sources["key"] = sc.src(v)
	default:
		h.Key, h.Sources["key"] = s.Key, "default" // "" = the agent only
	}

	kh, kv, err := sc.knownHosts(alias, h.User)
	if err != nil {
		return err
	}
	switch {
	case h.KnownHosts != "":
		kl := l.hostLine(e, i, "known_hosts")
		if h.KnownHosts, err = l.path(e, h.KnownHosts, kl); err != nil {
			return err
		}
		h.Sources["known_hosts"] = l.at(kl)
	case ex.knownHosts:
		h.KnownHosts, h.Sources["known_hosts"] = s.KnownHosts, l.at(l.line("ssh", "known_hosts"))
	case kh != "":
		h.KnownHosts, h.Sources["known_hosts"] = kh, sc.src(kv)
	default:
		h.KnownHosts, h.Sources["known_hosts"] = s.KnownHosts, "default"
	}

	switch v, ok := sc.get(alias, "ProxyJump"); {
	case h.Jump != nil:
		jl := l.hostLine(e, i, "jump")
		if err := l.jump(e, h.Jump, "host "+h.Name+": jump host", jl); err != nil {
			return err
		}
		h.Sources["jump"] = l.at(jl)
	case ex.jump:
		j := *s.Jump
		h.Jump, h.Sources["jump"] = &j, l.at(l.sshJumpLine(e))
	case ok:
		if h.Jump, err = sc.jump(v, s.User, s.Key); err != nil {
			return err
		}
		h.Sources["jump"] = sc.src(v) // also for ProxyJump none (nil)
	default:
		h.Sources["jump"] = "default" // nil: connect directly
	}
	return nil
}

// node returns the node at path (string keys, int indices), or nil.
func (l *loader) node(path ...any) *yaml.Node {
	n := l.root
	for _, p := range path {
		if n == nil {
			return nil
		}
		var next *yaml.Node
		switch p := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						next = n.Content[i+1]
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && p >= 0 && p < len(n.Content) {
				next = n.Content[p]
			}
		}
		n = next
	}
	return n
}

// Defaults of the sut: section.
const (
	DefaultSUTName       = "sut"
	DefaultReadyTimeoutS = 60
	maxSUTName           = 32
)

// sutNameRE keeps sut.name usable as a job id (sut-<name>) and a systemd
// unit name (dstgen-<name>) without quoting.
var sutNameRE = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

// secretNameRE keeps a sut.secrets name one plain file name.
var secretNameRE = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

func (l *loader) sut(e *Env) error {
	u := &e.SUT
	switch u.Run {
	case "":
		u.Run = "auto"
	case "auto", "systemd", "job":
	default:
		return l.errf(l.line("sut", "run"), "sut.run %q: want auto, systemd or job", u.Run)
	}
	if u.Name == "" {
		u.Name = DefaultSUTName
	} else if !sutNameRE.MatchString(u.Name) || len(u.Name) > maxSUTName {
		return l.errf(l.line("sut", "name"), "sut.name %q: use 1-%d letters, digits, '_' and '-' (not leading '-'); it names the job and the systemd unit", u.Name, maxSUTName)
	}
	have := map[string]bool{}
	for _, h := range e.Hosts {
		for _, r := range h.Roles {
			have[r] = true
		}
	}
	for i, r := range u.Roles {
		if !have[r] {
			return l.errf(l.line("sut", "roles", i), "sut.roles: no host has role %q", r)
		}
	}
	switch {
	case u.ReadyTimeoutS == 0:
		u.ReadyTimeoutS = DefaultReadyTimeoutS
	case u.ReadyTimeoutS < 0:
		return l.errf(l.line("sut", "ready_timeout_s"), "sut.ready_timeout_s must not be negative")
	}
	if err := l.bootstrap(e); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, n := range u.Secrets {
		if !secretNameRE.MatchString(n) {
			return l.errf(l.line("sut", "secrets", i), "sut.secrets[%d] %q: a name of 1-64 letters, digits, '_', '.' and '-' (not leading '.' or '-'); it names a file", i, n)
		}
		if seen[n] {
			return l.errf(l.line("sut", "secrets", i), "sut.secrets[%d] %q is listed twice", i, n)
		}
		seen[n] = true
	}
	var err error
	if u.Install.Artifact, err = l.path(e, u.Install.Artifact, l.line("sut", "install", "artifact")); err != nil {
		return err
	}
	for i := range u.Configs {
		c := &u.Configs[i]
		c.Line = l.line("sut", "configs", i)
		tl := l.line("sut", "configs", i, "template")
		if c.Template == "" {
			return l.errf(c.Line, "sut.configs[%d]: template is empty", i)
		}
		if c.Template, err = l.path(e, c.Template, tl); err != nil {
			return err
		}
		st, err := os.Stat(c.Template)
		if err != nil {
			return l.errf(tl, "sut.configs[%d].template: %v", i, err)
		}
		if !st.Mode().IsRegular() {
			return l.errf(tl, "sut.configs[%d].template %s is not a regular file", i, c.Template)
		}
	}
	return nil
}

// bootstrap checks sut.bootstrap: an ordered start needs both of its
// commands, sut.command for the members that join, and a health command
// for every SUT role, since the others start only once the bootstrap
// member answers.
func (l *loader) bootstrap(e *Env) error {
	u := &e.SUT
	b := u.Bootstrap
	if b == nil {
		return nil
	}
	ln := l.line("sut", "bootstrap")
	if strings.TrimSpace(b.Command) == "" {
		return l.errf(l.line("sut", "bootstrap", "command"), "sut.bootstrap.command is empty: it starts the first member (e.g. mariadbd --wsrep-new-cluster)")
	}
	if strings.TrimSpace(b.Rank) == "" {
		return l.errf(l.line("sut", "bootstrap", "rank"), "sut.bootstrap.rank is empty: dstgen compares the members before one bootstraps (a command printing an integer per member; the highest bootstraps)")
	}
	if strings.TrimSpace(u.Command) == "" {
		return l.errf(ln, "sut.bootstrap needs sut.command: the command the other members start with to join the bootstrap member")
	}
	var roles []string
	for _, h := range e.SUTHosts() {
		for _, r := range h.Roles {
			if (len(u.Roles) == 0 || slices.Contains(u.Roles, r)) && !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	for _, r := range roles {
		if strings.TrimSpace(u.Health[r]) == "" {
			return l.errf(ln, "sut.bootstrap needs a sut.health command for role %q: the other members start only once the bootstrap member answers it", r)
		}
	}
	if len(roles) == 0 {
		return l.errf(ln, "sut.bootstrap: no SUT host has a role, so no sut.health command can say the bootstrap member answers")
	}
	return nil
}

func (l *loader) benchmark(e *Env) error {
	b := &e.Benchmark
	if b.Driver == "" {
		return nil
	}
	ln := l.line("benchmark", "driver")
	var err error
	if b.Driver, err = l.path(e, b.Driver, ln); err != nil {
		return err
	}
	st, err := os.Stat(b.Driver)
	if err != nil {
		return l.errf(ln, "benchmark.driver: %v", err)
	}
	if !st.IsDir() {
		return l.errf(ln, "benchmark.driver %s is not a directory (a Go main package)", b.Driver)
	}
	return nil
}

func (l *loader) dstgen(e *Env) error {
	d := &e.Dstgen
	switch d.Tier {
	case "", "smoke", "hardening", "release":
	default:
		return l.errf(l.line("dstgen", "tier"), "dstgen.tier %q: want smoke, hardening or release", d.Tier)
	}
	if d.PollIntervalS < 0 {
		return l.errf(l.line("dstgen", "poll_interval_s"), "dstgen.poll_interval_s must not be negative")
	}
	if d.MaxPolls < 0 {
		return l.errf(l.line("dstgen", "max_polls"), "dstgen.max_polls must not be negative")
	}
	if e.Benchmark.Rate < 0 || e.Benchmark.Duration < 0 {
		return l.errf(l.line("benchmark"), "benchmark.rate and benchmark.duration must not be negative")
	}
	return nil
}
