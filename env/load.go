package env

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Defaults and ceilings of the remote contract (DESIGN.md "The remote contract").
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
	nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	// Addresses are DNS names, IPv4 or (bracket-less) IPv6 literals.
	addrRE = regexp.MustCompile(`^[A-Za-z0-9._:%-]+$`)
	userRE = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]*$`)
)

// Load reads and validates an env.yml. Every error names the file and line
// ("env.yml:12: reason") and never echoes a value that looks like key
// material. Defaults are filled in and the single-host remote:/bastion:
// shorthand is folded into Hosts and SSH.Jump, so callers only ever look at
// Hosts, SSH and Workdir.
func Load(path string) (*Env, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	return Parse(path, data)
}

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
		return nil, l.yamlErr(err)
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
		return nil, l.yamlErr(err)
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
	return fmt.Errorf("%s:%d: %s", l.name, line, fmt.Sprintf(format, args...))
}

var lineRE = regexp.MustCompile(`line (\d+): (.*)`)

// yamlErr turns yaml.v3's "yaml: line N: msg" / TypeError into file:line form.
func (l *loader) yamlErr(err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return l.errf(n, "%s", firstLine(m[2]))
	}
	return l.errf(1, "%s", firstLine(strings.TrimPrefix(msg, "yaml: ")))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
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

func (l *loader) normalize(e *Env) error {
	s := &e.SSH
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
	if err := l.workdir(e); err != nil {
		return err
	}
	if err := l.foldShorthand(e); err != nil {
		return err
	}
	if err := l.hosts(e); err != nil {
		return err
	}
	if j := s.Jump; j != nil {
		base := []any{"ssh", "jump"}
		if e.Bastion != nil {
			base = []any{"bastion"}
		}
		ln := l.line(base...)
		if j.Host == "" {
			return l.errf(ln, "jump host: host is empty")
		}
		if !addrRE.MatchString(j.Host) || strings.HasPrefix(j.Host, "-") {
			return l.errf(ln, "jump host: %q is not a host name or IP address", j.Host)
		}
		if j.Port == 0 {
			j.Port = DefaultPort
		} else if err := l.port(j.Port, "jump port", ln); err != nil {
			return err
		}
		if j.User == "" {
			j.User = s.User
		} else if !userRE.MatchString(j.User) {
			return l.errf(ln, "jump user %q is not a valid user name", j.User)
		}
		if j.Key == "" {
			j.Key = s.Key
		} else if j.Key, err = l.path(e, j.Key, ln); err != nil {
			return err
		}
	}
	return l.dstgen(e)
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
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", l.errf(line, "expand ~: %v", err)
		}
		p = filepath.Join(home, p[1:])
	} else if strings.HasPrefix(p, "~") {
		return "", l.errf(line, "~user paths are not supported; write the full path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(e.Path), p)
	}
	return filepath.Clean(p), nil
}

func (l *loader) workdir(e *Env) error {
	if e.Workdir == "" {
		e.Workdir = DefaultWorkdir
		return nil
	}
	ln := l.line("workdir")
	w := e.Workdir
	if !strings.HasPrefix(w, "/") {
		return l.errf(ln, "workdir must be an absolute remote path")
	}
	if strings.ContainsAny(w, "\x00\n\r") {
		return l.errf(ln, "workdir contains a control character")
	}
	for _, part := range strings.Split(w, "/") {
		if part == ".." {
			return l.errf(ln, "workdir must not contain ..")
		}
	}
	// Cleanup tasks remove things under the workdir; "/" would be a disaster.
	if c := pathClean(w); c == "/" {
		return l.errf(ln, "workdir must not be /")
	}
	e.Workdir = pathClean(w)
	return nil
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

func (l *loader) hosts(e *Env) error {
	if len(e.Hosts) == 0 {
		return l.errf(l.line("hosts"), "no hosts: set hosts: (a list) or remote.host")
	}
	seen := map[string]bool{}
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
		if h.Port == 0 {
			h.Port = e.SSH.Port
		} else if err := l.port(h.Port, "host "+h.Name+": port", ln); err != nil {
			return err
		}
		if h.User == "" {
			h.User = e.SSH.User
		} else if !userRE.MatchString(h.User) {
			return l.errf(ln, "host %s: user %q is not a valid user name", h.Name, h.User)
		}
		if h.Key == "" {
			h.Key = e.SSH.Key
		} else {
			var err error
			if h.Key, err = l.path(e, h.Key, ln); err != nil {
				return err
			}
		}
		for _, r := range h.Roles {
			if !nameRE.MatchString(r) || strings.HasPrefix(r, "-") {
				return l.errf(ln, "host %s: role %q: use only letters, digits, '.', '_' and '-'", h.Name, r)
			}
		}
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
