package deploy

import (
	"github.com/dstgen/dstgen/nemesis"
)

// NemesisHosts is the nemesis view of every prepared host: its work
// dir and, on SUT hosts, how to find, restart and read the SUT: the job's
// pid file and logs, or the systemd unit where modes[host] is
// RunSystemd; the script that starts it the way deploy does; the rendered
// data dir.
func (d *Deployer) NemesisHosts(modes map[string]string) []nemesis.Host {
	out := make([]nemesis.Host, 0, len(d.Hosts))
	for _, h := range d.Hosts {
		nh := nemesis.Host{Host: h.Host, Workdir: h.Workdir}
		if h.RunsSUT {
			nh.SUT = &nemesis.SUT{DataDir: h.Facts.DataDir}
			mode := RunJob
			if modes[h.Name] == RunSystemd {
				mode = RunSystemd
			}
			if h.Command != "" {
				nh.SUT.StartScript = d.startScript(h, mode)
			}
			if mode == RunSystemd {
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
