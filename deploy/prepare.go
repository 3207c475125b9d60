// Package deploy brings the system under test up on the hosts of its roles,
// from the sut: and benchmark: sections of env.yml, and touches nothing on
// the control node beyond a temporary build of the workload driver.
//
// Data flows down through three stages:
//
//	prepare.go  env.yml → one Host per machine: its facts, its rendered
//	            config files, SUT command and health commands (pure, no I/O
//	            beyond reading the local templates)
//	remote.go   the actions over SSH: install and verify, configure, start /
//	            stop / status as a transient systemd unit or a dstgen job,
//	            health, clean data
//	driver.go   build the workload driver for each client host's OS/arch
//	            and upload it
//
// Every member's config is rendered from its own facts (env.Facts), never
// copied, and is installed under the host's own work dir unless
// sut.configs[].dest says otherwise, so simulated hosts that share one
// filesystem (network namespaces) never share a file. The SUT runs from
// sut.command, supervised by systemd where the host boots with it
// (`systemd-run`, unit dstgen-<name>) and as a dstgen job elsewhere
// (containers, namespaces and many CI machines have no systemd).
package deploy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/fileline"
)

// Run modes of sut.run; "auto", the default, resolves to one of them per
// host (Deployer.mode).
const (
	RunSystemd = "systemd"
	RunJob     = "job"
)

// Config is one config file rendered for one host.
type Config struct {
	Template string // the template as env.yml names it, for messages
	Dest     string // remote path
	Data     []byte
}

// Health is one role's health command rendered for one host.
type Health struct {
	Role    string
	Command string
}

// Host is everything deploy does on one machine, rendered in advance so
// that a template error stops the deploy before any host is touched.
type Host struct {
	env.Host
	Facts   env.Facts
	Workdir string
	RunsSUT bool     // the host has a role of sut.roles
	Configs []Config // SUT hosts only
	Command string   // SUT hosts only: sut.command rendered
	// Init, BootstrapCommand and Rank are sut.init, sut.bootstrap.command
	// and sut.bootstrap.rank rendered (SUT hosts only; "" = not set).
	Init             string
	BootstrapCommand string
	Rank             string
	BootstrapHealth  string   // sut.bootstrap.health rendered ("" = Health)
	Binary           string   // SUT hosts only: sut.install.binary rendered
	Version          string   // SUT hosts only: sut.install.version rendered
	Health           []Health // one per role of the host that declares one
}

// Prepare renders every host's configs, SUT command and health commands.
// The first template error is returned as "TEMPLATE:LINE: …" naming the
// host it was rendered for.
func Prepare(e *env.Env) ([]Host, error) {
	sutHosts := map[string]bool{}
	for _, h := range e.SUTHosts() {
		sutHosts[h.Name] = true
	}
	sources := make([]string, len(e.SUT.Configs))
	for i, c := range e.SUT.Configs {
		b, err := os.ReadFile(localPath(e, c.Template))
		if err != nil {
			return nil, fileline.Errorf(e.Path, c.Line, "sut.configs[%d]: read template: %w", i, err)
		}
		sources[i] = string(b)
	}
	var out []Host
	for _, h := range e.Hosts {
		f, err := e.FactsFor(h)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		dh := Host{Host: h, Facts: f, Workdir: e.HostWorkdir(h), RunsSUT: sutHosts[h.Name]}
		for _, r := range h.Roles {
			cmd, ok := e.SUT.Health[r]
			if !ok || strings.TrimSpace(cmd) == "" {
				continue
			}
			s, err := env.Render("sut.health."+r, cmd, f)
			if err != nil {
				return nil, fmt.Errorf("host %s: %w", h.Name, err)
			}
			dh.Health = append(dh.Health, Health{Role: r, Command: strings.TrimSpace(s)})
		}
		if dh.RunsSUT {
			if err := prepareSUT(e, &dh, sources); err != nil {
				return nil, fmt.Errorf("host %s: %w", h.Name, err)
			}
		}
		out = append(out, dh)
	}
	return out, nil
}

func prepareSUT(e *env.Env, dh *Host, sources []string) error {
	// Every per-host value is rendered here, once, so a template error
	// stops the deploy before any host is touched.
	for _, v := range []struct {
		name, text string
		dst        *string
	}{
		{"sut.command", e.SUT.Command, &dh.Command},
		{"sut.init", e.SUT.Init, &dh.Init},
		{"sut.bootstrap.command", bootstrapField(e, func(b *env.Bootstrap) string { return b.Command }), &dh.BootstrapCommand},
		{"sut.bootstrap.rank", bootstrapField(e, func(b *env.Bootstrap) string { return b.Rank }), &dh.Rank},
		{"sut.bootstrap.health", bootstrapField(e, func(b *env.Bootstrap) string { return b.Health }), &dh.BootstrapHealth},
		{"sut.install.binary", e.SUT.Install.Binary, &dh.Binary},
		{"sut.install.version", e.SUT.Install.Version, &dh.Version},
	} {
		if strings.TrimSpace(v.text) == "" {
			continue
		}
		s, err := env.Render(v.name, v.text, dh.Facts)
		if err != nil {
			return err
		}
		*v.dst = strings.TrimSpace(s)
	}
	seen := map[string]string{}
	for i, c := range e.SUT.Configs {
		name := displayPath(e, c.Template)
		data, err := env.Render(name, sources[i], dh.Facts)
		if err != nil {
			return err
		}
		dest := path.Join(dh.Workdir, "etc", installedName(c.Template))
		if c.Dest != "" {
			d, err := env.Render(fmt.Sprintf("sut.configs[%d].dest", i), c.Dest, dh.Facts)
			if err != nil {
				return err
			}
			dest = strings.TrimSpace(d)
		}
		if !strings.HasPrefix(dest, "/") || strings.HasSuffix(dest, "/") {
			return fileline.Errorf(e.Path, c.Line, "config %s: destination %q is not an absolute file path", name, dest)
		}
		dest = path.Clean(dest)
		if prev, dup := seen[dest]; dup {
			return fileline.Errorf(e.Path, c.Line, "configs %s and %s are both installed as %s", prev, name, dest)
		}
		seen[dest] = name
		dh.Configs = append(dh.Configs, Config{Template: name, Dest: dest, Data: []byte(data)})
	}
	return nil
}

// bootstrapField is one field of sut.bootstrap, "" when it is not set.
func bootstrapField(e *env.Env, f func(*env.Bootstrap) string) string {
	if e.SUT.Bootstrap == nil {
		return ""
	}
	return f(e.SUT.Bootstrap)
}

// installedName is the file name a template is installed under: its base
// without the template suffix (etcd.conf.yml.tmpl → etcd.conf.yml).
func installedName(tmpl string) string {
	b := filepath.Base(tmpl)
	for _, suf := range []string{".tmpl", ".template", ".example", ".sample", ".in"} {
		if s, ok := strings.CutSuffix(b, suf); ok && s != "" {
			return s
		}
	}
	return b
}

// localPath resolves a local file named in env.yml relative to it.
func localPath(e *env.Env, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(e.Path), p)
}

// displayPath names a local file relative to env.yml's directory when it
// sits below it, so messages read like the env.yml that named it.
func displayPath(e *env.Env, p string) string {
	p = localPath(e, p)
	if rel, err := filepath.Rel(filepath.Dir(e.Path), p); err == nil && !filepath.IsAbs(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}

// SUTHosts returns the prepared hosts that run the SUT.
func SUTHosts(hs []Host) []Host {
	return slices.DeleteFunc(slices.Clone(hs), func(h Host) bool { return !h.RunsSUT })
}

// unsafeDataDir refuses data dirs whose removal would wreck a host: a
// top-level directory or one of the system's own trees.
func unsafeDataDir(p string) bool {
	p = path.Clean(p)
	if strings.Count(p, "/") < 2 {
		return true // "/", "/var", "/data", ...
	}
	for _, sys := range []string{"/usr/", "/etc/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/boot/", "/proc/", "/sys/", "/dev/"} {
		if strings.HasPrefix(p+"/", sys) && strings.Count(p, "/") < 3 {
			return true
		}
	}
	return false
}
