package deploy

import (
	"time"

	"github.com/dstgen/dstgen/nemesis"
)

// NemesisHosts is the nemesis view of every prepared host: its work
// dir and, on SUT hosts, how to find, restart and read the SUT: the job's
// pid file and logs, or the systemd unit where modes[host] is
// RunSystemd; the script that starts it the way deploy does; the rendered
// data dir.
func (d *Deployer) NemesisHosts(modes map[string]string) []nemesis.Host {
	out := make([]nemesis.Host, 0, len(d.Hosts))
	var members []nemesis.Host
	for _, h := range d.Hosts {
		nh := nemesis.Host{Host: h.Host, Workdir: h.Workdir}
		if h.RunsSUT {
			nh.SUT = &nemesis.SUT{DataDir: h.Facts.DataDir}
			mode := RunJob
			if modes[h.Name] == RunSystemd {
				mode = RunSystemd
			}
			if h.Command != "" {
				nh.SUT.StartScript = d.startScript(h, mode, false)
			}
			if d.Env.SUT.Bootstrap != nil {
				b := &nemesis.Bootstrap{StartScript: d.startScript(h, mode, true), Rank: h.Rank, First: h.BootstrapHealth,
					Ready: time.Duration(d.Env.SUT.ReadyTimeoutS) * time.Second}
				for _, hc := range h.Health {
					b.Health = append(b.Health, hc.Command)
				}
				nh.SUT.Bootstrap = b
			}
			if mode == RunSystemd {
				nh.SUT.Unit = d.Unit()
			} else {
				nh.SUT.PIDFile = d.PIDFile(h)
				nh.SUT.Logs = d.JobLogs(h)
			}
		}
		out = append(out, nh)
		if nh.SUT != nil && nh.SUT.Bootstrap != nil {
			members = append(members, nh)
		}
	}
	// Every member sees the whole cluster (the shared *Bootstrap of each
	// copy points at the same slice).
	for _, m := range members {
		m.SUT.Bootstrap.Cluster = members
	}
	return out
}
