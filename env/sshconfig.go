package env

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/oneline"
)

// SSHConfigEnv names the environment variable that overrides the OpenSSH
// client config file Load reads (a path, or "none"); it wins over
// ssh.config in env.yml so tests and CI can keep a developer's
// ~/.ssh/config out of the picture.
const SSHConfigEnv = "DSTGEN_SSH_CONFIG"

// defaultSSHConfig is read when neither SSHConfigEnv nor ssh.config says
// otherwise; a missing default file is no error.
const defaultSSHConfig = "~/.ssh/config"

// maxSSHConfigBytes bounds the config file read (OpenSSH configs are a few
// KiB; anything this large is not one).
const maxSSHConfigBytes = 4 << 20

// sshConfig is a parsed OpenSSH client config file (ssh_config(5)).
type sshConfig struct {
	shown string // path as named in errors and Host.Sources
	cfg   *ssh_config.Config
}

// sshValue is one directive found for an alias.
type sshValue struct {
	val  string
	line int
}

// parseLineCol matches ssh_config's "(line, col): message" errors.
var parseLineCol = lazyre.New(`^\((\d+), \d+\): (.*)$`)

// loadSSHConfig reads the config file env.yml asks for: SSHConfigEnv, else
// ssh.config, else ~/.ssh/config. It returns nil when the choice is "none"
// or the default file does not exist.
func (l *loader) loadSSHConfig(e *Env) (*sshConfig, error) {
	p, explicit, inEnvFile := defaultSSHConfig, false, false
	ln := l.line("ssh", "config")
	where := func(format string, args ...any) error { return l.errf(ln, "ssh.config: "+format, args...) }
	if v, ok := os.LookupEnv(SSHConfigEnv); ok && v != "" {
		p, explicit = v, true
		where = func(format string, args ...any) error {
			return fmt.Errorf("%s=%s: %s", SSHConfigEnv, v, fmt.Sprintf(format, args...))
		}
	} else if e.SSH.Config != "" {
		// Writing the default out (env.example.yml does) is still the
		// default: a machine without ~/.ssh/config is normal.
		p, explicit, inEnvFile = e.SSH.Config, e.SSH.Config != defaultSSHConfig, true
	}
	if p == "none" {
		return nil, nil
	}
	if strings.ContainsAny(p, "\x00\n\r") {
		return nil, where("path contains a control character")
	}
	shown := p // "~/.ssh/config" stays readable in errors and Sources
	full, err := expandHome(p)
	if err != nil {
		return nil, where("%v", err)
	}
	if !filepath.IsAbs(full) {
		// ssh.config is relative to env.yml like every path in it; the
		// environment variable to the current directory.
		if inEnvFile {
			full = filepath.Join(filepath.Dir(e.Path), full)
		} else if full, err = filepath.Abs(full); err != nil {
			return nil, where("%v", err)
		}
		shown = full
	}
	data, err := readBounded(full, maxSSHConfigBytes)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, where("read OpenSSH config: %v", err)
	}
	cfg, err := ssh_config.DecodeBytes(data)
	if err != nil {
		msg := oneline.First(strings.TrimSpace(err.Error()))
		line := 1
		if m := parseLineCol.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.TrimPrefix(m[2], "ssh_config: ")
		}
		return nil, fileline.Errorf(shown, line, "%s (set ssh.config: none in env.yml to skip this file)", msg)
	}
	return &sshConfig{shown: shown, cfg: cfg}, nil
}

// readBounded reads a regular file of at most limit bytes. The file is
// checked before it is opened: opening a FIFO blocks until a writer comes,
// and a device has no size, so only a regular file is read.
func readBounded(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := fileline.ReadBounded(path, limit)
	if errors.Is(err, fileline.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, err
}

// expandHome expands a leading ~ or ~/ (not ~user).
func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		if strings.HasPrefix(p, "~") {
			return "", errors.New("~user paths are not supported; write the full path")
		}
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expand ~: %w", err)
	}
	return filepath.Join(home, p[1:]), nil
}

// get returns the first value of key for alias, as OpenSSH does ("for each
// parameter, the first obtained value will be used"), with the line of its
// directive (of the Include line when it came from an included file).
func (c *sshConfig) get(alias, key string) (sshValue, bool) {
	if c == nil {
		return sshValue{}, false
	}
	for _, h := range c.cfg.Hosts {
		if !h.Matches(alias) {
			continue
		}
		for _, n := range h.Nodes {
			switch t := n.(type) {
			case *ssh_config.KV:
				if strings.EqualFold(t.Key, key) {
					return sshValue{val: strings.TrimSpace(t.Value), line: t.Pos().Line}, true
				}
			case *ssh_config.Include:
				if v := t.Get(alias, key); v != "" {
					return sshValue{val: strings.TrimSpace(v), line: t.Pos().Line}, true
				}
			}
		}
	}
	return sshValue{}, false
}

// src is the Host.Sources form of a directive's line.
func (c *sshConfig) src(v sshValue) string { return fmt.Sprintf("%s:%d", c.shown, v.line) }

func (c *sshConfig) errf(v sshValue, format string, args ...any) error {
	return fileline.Errorf(c.shown, v.line, format, args...)
}

// tokens expands the ssh_config(5) tokens dstgen can know without
// connecting: %h (the host name), %d (local home), %r (remote user), %%.
// Any other token is an error rather than a literal '%x' in a path.
func (c *sshConfig) tokens(v sshValue, host, user string) (string, error) {
	if !strings.Contains(v.val, "%") {
		return v.val, nil
	}
	var b strings.Builder
	s := v.val
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", c.errf(v, "%q ends in a lone %%", s)
		}
		i++
		switch s[i] {
		case '%':
			b.WriteByte('%')
		case 'h':
			b.WriteString(host)
		case 'r':
			b.WriteString(user)
		case 'd':
			home, err := os.UserHomeDir()
			if err != nil {
				return "", c.errf(v, "expand %%d: %v", err)
			}
			b.WriteString(home)
		default:
			return "", c.errf(v, "token %%%c is not supported by dstgen (only %%h, %%r, %%d, %%%%)", s[i])
		}
	}
	return b.String(), nil
}

// path expands tokens and ~ in a file directive; a relative path is taken
// from the current directory, as ssh(1) does.
func (c *sshConfig) path(v sshValue, host, user string) (string, error) {
	p, err := c.tokens(v, host, user)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(p, "\x00\n\r") {
		return "", c.errf(v, "path contains a control character")
	}
	if p, err = expandHome(p); err != nil {
		return "", c.errf(v, "%v", err)
	}
	if !filepath.IsAbs(p) {
		if p, err = filepath.Abs(p); err != nil {
			return "", c.errf(v, "%v", err)
		}
	}
	return filepath.Clean(p), nil
}

// port parses a Port directive.
func (c *sshConfig) port(v sshValue) (int, error) {
	n, err := strconv.Atoi(v.val)
	if err != nil || n < 1 || n > 65535 {
		return 0, c.errf(v, "Port %q is not a port number 1-65535", v.val)
	}
	return n, nil
}

// user checks a User directive against the same alphabet as env.yml users.
func (c *sshConfig) user(v sshValue) (string, error) {
	if !userRE.MatchString(v.val) {
		return "", c.errf(v, "User %q is not a valid user name", v.val)
	}
	return v.val, nil
}

// hostName resolves the HostName of alias (tokens expanded), or "" when
// the config has none.
func (c *sshConfig) hostName(alias string) (string, sshValue, error) {
	v, ok := c.get(alias, "HostName")
	if !ok {
		return "", v, nil
	}
	h, err := c.tokens(v, alias, "")
	if err != nil {
		return "", v, err
	}
	if h == "" || !addrRE.MatchString(h) || strings.HasPrefix(h, "-") {
		return "", v, c.errf(v, "HostName %q is not a host name or IP address", h)
	}
	return h, v, nil
}

// knownHosts returns the first file of UserKnownHostsFile for alias.
func (c *sshConfig) knownHosts(alias, user string) (string, sshValue, error) {
	v, ok := c.get(alias, "UserKnownHostsFile")
	if !ok {
		return "", v, nil
	}
	// Several files may be listed; dstgen verifies against one, the first,
	// which is also the one ssh(1) writes new keys to.
	fields := strings.Fields(v.val)
	if len(fields) == 0 {
		return "", v, c.errf(v, "UserKnownHostsFile has no value")
	}
	first := v
	first.val = strings.Trim(fields[0], `"`)
	p, err := c.path(first, alias, user)
	return p, v, err
}

// jump resolves a ProxyJump value ([user@]host[:port], or ssh://...) into
// a Jump; the jump host may itself be an alias of this file, resolved one
// level (its HostName, User, Port and IdentityFile; not its own ProxyJump).
// It returns nil for "none".
func (c *sshConfig) jump(v sshValue, defUser, defKey string) (*Jump, error) {
	s := v.val
	if strings.EqualFold(s, "none") {
		return nil, nil
	}
	if strings.Contains(s, ",") {
		return nil, c.errf(v, "ProxyJump %q has several hops; dstgen supports one jump host", s)
	}
	s = strings.TrimPrefix(s, "ssh://")
	j := &Jump{}
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		j.User, s = s[:at], s[at+1:]
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 {
			host, port = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Count(s, ":") == 1 {
		host, port = s[:i], s[i+1:]
	}
	if host == "" || !addrRE.MatchString(host) || strings.HasPrefix(host, "-") {
		return nil, c.errf(v, "ProxyJump host %q is not a host name or IP address", host)
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, c.errf(v, "ProxyJump port %q is not a port number 1-65535", port)
		}
		j.Port = n
	}
	alias := host
	j.Host = host
	if hn, _, err := c.hostName(alias); err != nil {
		return nil, err
	} else if hn != "" {
		j.Host = hn
	}
	if pj, ok := c.get(alias, "ProxyJump"); ok && !strings.EqualFold(pj.val, "none") && pj.val != v.val {
		return nil, c.errf(pj, "jump host %s has a ProxyJump of its own; dstgen resolves one level of jump", alias)
	}
	if j.User == "" {
		if u, ok := c.get(alias, "User"); ok {
			var err error
			if j.User, err = c.user(u); err != nil {
				return nil, err
			}
		} else {
			j.User = defUser
		}
	} else if !userRE.MatchString(j.User) {
		return nil, c.errf(v, "ProxyJump user %q is not a valid user name", j.User)
	}
	if j.Port == 0 {
		if p, ok := c.get(alias, "Port"); ok {
			var err error
			if j.Port, err = c.port(p); err != nil {
				return nil, err
			}
		} else {
			j.Port = DefaultPort
		}
	}
	j.Key = defKey
	if k, ok := c.get(alias, "IdentityFile"); ok {
		var err error
		if j.Key, err = c.path(k, alias, j.User); err != nil {
			return nil, err
		}
	}
	return j, nil
}
