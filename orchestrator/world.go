package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
)

// Hosts is where a run meets the machines: every round trip of a unit
// goes through it — a script (the readings, the nemeses), a detached job
// (the workload), a file copied back (the history, the logs) — so RunUnit
// runs against fakes in its unit tests and against the SSH pool in
// `dstgen run` (NewHosts). Each call is bounded by its context and by the
// transport's 30 s ceiling.
type Hosts interface {
	nemesis.Exec
	// Probe is every host's reach, clock (NTP-style, against this
	// machine's) and capability matrix, hosts at once (runner.Probe),
	// the binaries bins among the capabilities.
	Probe(ctx context.Context, hs []env.Host, bins ...string) []runner.HostCaps
	// Clock measures h's clock against this machine's again (NTP-style):
	// the driver's after the run, for the drift since pre-flight.
	Clock(ctx context.Context, h env.Host) (runner.ClockSample, error)
	StartJob(ctx context.Context, h env.Host, workdir, id string, argv []string) (runner.JobStatus, error)
	JobStatus(ctx context.Context, h env.Host, workdir, id string) (runner.JobStatus, error)
	StopJob(ctx context.Context, h env.Host, workdir, id string, grace time.Duration) (runner.JobStatus, error)
	// Fetch copies remote files or dirs of h into the local dir into; a
	// remote name never lands outside it.
	Fetch(ctx context.Context, h env.Host, remotes []string, into string) ([]runner.FileResult, error)
}

// SUT is the deployed system as a run sees it: which hosts run it and how
// a nemesis finds, restarts and reads it there (package deploy in `dstgen
// run`, NewSUT).
type SUT interface {
	// Hosts is the nemesis view of every env.yml host; modes names the
	// supervisor of each SUT host (deploy.RunSystemd or deploy.RunJob), a
	// host missing from it is taken to run the SUT as a dstgen job.
	Hosts(modes map[string]string) []nemesis.Host
	// Modes asks each SUT host how the SUT runs there; a host that does
	// not answer is left out.
	Modes(ctx context.Context) map[string]string
	// Deployed is false when env.yml has no sut.command: the workload
	// talks to what is there, and there are no SUT logs of dstgen's.
	Deployed() bool
	// Check is nil when the SUT runs and answers on every SUT host.
	Check(ctx context.Context) error
	// Render renders a command template (the workload, the final-state
	// dump) with host's facts.
	Render(name, text, host string) (string, error)
}

// NewHosts is Hosts over the SSH pool.
func NewHosts(p *runner.Pool) Hosts { return poolHosts{runner.Shell{Pool: p}} }

type poolHosts struct{ runner.Shell }

func (p poolHosts) Probe(ctx context.Context, hs []env.Host, bins ...string) []runner.HostCaps {
	return runner.Probe(ctx, p.Pool, hs, bins...)
}

func (p poolHosts) Clock(ctx context.Context, h env.Host) (runner.ClockSample, error) {
	return runner.MeasureClock(ctx, p.Pool, h, runner.ClockSamples)
}

func (p poolHosts) StartJob(ctx context.Context, h env.Host, workdir, id string, argv []string) (runner.JobStatus, error) {
	return runner.StartJob(ctx, p.Pool, h, workdir, id, argv)
}

func (p poolHosts) JobStatus(ctx context.Context, h env.Host, workdir, id string) (runner.JobStatus, error) {
	return runner.JobStatusOf(ctx, p.Pool, h, workdir, id)
}

func (p poolHosts) StopJob(ctx context.Context, h env.Host, workdir, id string, grace time.Duration) (runner.JobStatus, error) {
	return runner.StopJob(ctx, p.Pool, h, workdir, id, grace)
}

func (p poolHosts) Fetch(ctx context.Context, h env.Host, remotes []string, into string) ([]runner.FileResult, error) {
	return runner.Collect(ctx, p.Pool, h, remotes, into, nil)
}

// NewSUT is the SUT deploy brought up from env.yml's sut: section.
func NewSUT(d *deploy.Deployer) SUT { return deployed{d} }

type deployed struct{ d *deploy.Deployer }

func (s deployed) Hosts(modes map[string]string) []nemesis.Host { return s.d.NemesisHosts(modes) }

func (s deployed) Modes(ctx context.Context) map[string]string {
	modes := map[string]string{}
	for _, h := range deploy.SUTHosts(s.d.Hosts) {
		if m, err := s.d.Mode(ctx, h); err == nil {
			modes[h.Name] = m
		}
	}
	return modes
}

func (s deployed) Deployed() bool {
	return len(deploy.SUTHosts(s.d.Hosts)) > 0 && strings.TrimSpace(s.d.Env.SUT.Command) != ""
}

func (s deployed) Check(ctx context.Context) error { return deployCheck(ctx, s.d) }

func (s deployed) Render(name, text, host string) (string, error) {
	for _, h := range s.d.Hosts {
		if h.Name == host {
			return env.Render(name, text, h.Facts)
		}
	}
	return env.Render(name, text, env.Facts{})
}

// deployCheck requires the SUT up on its hosts (dstgen sut status; the
// health commands where env.yml has them): no silent deploy. It says what
// it found; the advice is the caller's (before a run: deploy first; as
// recovery after a heal: the SUT did not come back).
func deployCheck(ctx context.Context, d *deploy.Deployer) error {
	sts, err := d.Status(ctx)
	if err != nil {
		return fmt.Errorf("deploy check: %w", err)
	}
	var down []string
	for _, s := range sts {
		if s.State != "running" {
			down = append(down, s.Host+"="+s.State)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("deploy check: the SUT is not running on %s", strings.Join(down, ", "))
	}
	for _, h := range d.Health(ctx) {
		if !h.OK {
			return fmt.Errorf("deploy check: health of %s (%s) failed: %s", h.Host, h.Role, h.Output)
		}
	}
	return nil
}
