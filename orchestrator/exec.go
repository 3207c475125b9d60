package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
)

// PoolExec is the nemesis.Exec of a real run: one bounded round trip on
// the host's pooled SSH connection per script.
type PoolExec struct{ Pool *runner.Pool }

// Run runs script with /bin/sh on h and returns its stdout; a non-zero
// exit is an error with the first line of stderr.
func (x PoolExec) Run(ctx context.Context, h env.Host, script string) (string, error) {
	var out, errb bytes.Buffer
	res, err := x.Pool.Run(ctx, h, script, nil, &out, &errb)
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w", h.Name, err)
	}
	if res.ExitCode != 0 {
		return out.String(), fmt.Errorf("%s: exit %d%s", h.Name, res.ExitCode, firstLineSuffix(errb.String()))
	}
	return out.String(), nil
}

// firstLineSuffix is ": <first line of s>", or "" when s is blank.
func firstLineSuffix(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return ": " + s
}

// NemesisHosts builds the nemesis view of every prepared host: its work
// dir and, on SUT hosts, how to find, restart and read the SUT: the job's
// pid file and logs, or the systemd unit where modes[host] is
// deploy.RunSystemd; the rendered data dir.
func NemesisHosts(d *deploy.Deployer, modes map[string]string) []nemesis.Host {
	out := make([]nemesis.Host, 0, len(d.Hosts))
	for _, h := range d.Hosts {
		nh := nemesis.Host{Host: h.Host, Workdir: h.Workdir}
		if h.RunsSUT {
			dh := h
			nh.SUT = &nemesis.SUT{
				DataDir: h.Facts.DataDir,
				Start:   func(ctx context.Context) error { return d.StartHost(ctx, dh) },
			}
			if modes[h.Name] == deploy.RunSystemd {
				nh.SUT.Unit = d.Unit()
			} else {
				nh.SUT.PIDFile = d.PIDFile(h)
				nh.SUT.Logs = d.JobLogs(h)
			}
		}
		out = append(out, nh)
	}
	return out
}

// SUTOnly keeps the hosts that run the SUT, in order.
func SUTOnly(hs []nemesis.Host) []nemesis.Host {
	var out []nemesis.Host
	for _, h := range hs {
		if h.SUT != nil {
			out = append(out, h)
		}
	}
	return out
}

// byName picks the hosts of hs named in names, in hs's order.
func byName(hs []nemesis.Host, names []string) []nemesis.Host {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []nemesis.Host
	for _, h := range hs {
		if want[h.Name] {
			out = append(out, h)
		}
	}
	return out
}

// toEnv is the env.Host of each host.
func toEnv(hs []nemesis.Host) []env.Host {
	out := make([]env.Host, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.Host)
	}
	return out
}
