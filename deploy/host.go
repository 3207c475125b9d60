package deploy

import (
	"context"
	"path"
)

// JobID is the dstgen job the SUT runs as on a host without systemd
// ("sut-<name>").
func (d *Deployer) JobID() string { return d.jobID() }

// Unit is the transient systemd unit the SUT runs as where the host boots
// with systemd ("dstgen-<name>.service").
func (d *Deployer) Unit() string { return d.unit() }

// Mode says how the SUT is supervised on h: RunSystemd or RunJob (sut.run
// auto is resolved on the host).
func (d *Deployer) Mode(ctx context.Context, h Host) (string, error) { return d.mode(ctx, h) }

// StartHost starts the SUT on one host (its unit or its job) without
// waiting for health: what a nemesis uses to bring a killed member back.
func (d *Deployer) StartHost(ctx context.Context, h Host) error { return d.startHost(ctx, h, false) }

// PIDFile is the pid file of the SUT's job on h (empty under systemd,
// where the unit's MainPID says it).
func (d *Deployer) PIDFile(h Host) string {
	return path.Join(h.Workdir, "jobs", d.jobID(), "pid")
}

// JobLogs are the SUT job's stdout and stderr files on h.
func (d *Deployer) JobLogs(h Host) []string {
	dir := path.Join(h.Workdir, "jobs", d.jobID())
	return []string{path.Join(dir, "stdout"), path.Join(dir, "stderr")}
}
