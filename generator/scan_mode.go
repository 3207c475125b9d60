package generator

import (
	"strings"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// Completeness modes (docs/real-env-test.md §2.2).
const (
	ModeFast = "Fast"
	ModeSemi = "Semi"
	ModeFull = "Full"
)

// The four parts of "complete docs" (docs/real-env-test.md §2.2), as listed in
// Completeness.Missing.
const (
	MissingBuild   = "build instructions"
	MissingInstall = "install steps"
	MissingConfig  = "config examples"
	MissingService = "service-management commands"
)

var (
	buildCmd   = lazyre.New(`\b(make|go build|go install|cargo build|cmake|npm (?:run )?build|just|gradle|mvn|bazel build|meson|ninja)\b`)
	installCmd = lazyre.New(`\b(install|apt-get|apt|yum|dnf|dpkg|rpm|cp|mv|scp|rsync|tar|curl|wget|unzip|mkdir)\b`)
	serviceCmd = lazyre.New(`\b(systemctl|service \S+ (?:start|stop|restart|status)|supervisorctl|rc-service|launchctl|docker compose|docker-compose)\b`)
	installish = lazyre.New(`(?i)\b(install|deploy|quick ?start|getting started|set ?up)`)
)

// decideMode fills Completeness and Questions from what the scan found.
func decideMode(p *Profile) {
	var hasBuild, hasInstall, hasService bool
	for _, b := range p.Build {
		if len(b.Commands) > 0 && b.Kind != "make" && b.Kind != "just" {
			hasBuild = true
		}
		for _, t := range b.Targets {
			switch t {
			case "build", "all", "release":
				hasBuild = true
			case "install", "deploy":
				hasInstall = true
			case "start", "stop", "restart", "service", "service-start":
				hasService = true
			}
		}
	}
	for _, d := range p.Deploy {
		for _, c := range d.Commands {
			// A SUT installed from distro packages has nothing to build.
			if buildCmd.MatchString(c) || installRE.MatchString(c) {
				hasBuild = true
			}
			if serviceCmd.MatchString(c) {
				hasService = true
			}
			// Any command under an install/deploy heading is an install
			// step; elsewhere only commands that look like installing count.
			if installish.MatchString(d.Section) || installish.MatchString(d.File) || installCmd.MatchString(c) {
				hasInstall = true
			}
		}
	}
	if len(p.Units) > 0 {
		hasService = true // a unit is managed with systemctl start/stop <name>
	}
	c := Completeness{IntentClear: len(p.Plans) > 0}
	if !hasBuild {
		c.Missing = append(c.Missing, MissingBuild)
	}
	if !hasInstall {
		c.Missing = append(c.Missing, MissingInstall)
	}
	if len(p.Configs) == 0 {
		c.Missing = append(c.Missing, MissingConfig)
	}
	if !hasService {
		c.Missing = append(c.Missing, MissingService)
	}
	c.DocsComplete = len(c.Missing) == 0
	switch {
	case c.DocsComplete && c.IntentClear:
		c.Mode = ModeFast
	case c.DocsComplete || c.IntentClear:
		c.Mode = ModeSemi
	default:
		c.Mode = ModeFull
	}
	p.Completeness = c
	p.Questions = questions(p)
}

// questions returns the open questions for the profile's mode. SSH access is
// asked in every mode: no scan or plan can know the target host. Each
// question carries a default inferred from the scan where there is one.
func questions(p *Profile) []Question {
	d := defaults(p)
	ssh := []Question{
		{ID: "remote.host", Group: "ssh", EnvKey: "remote.host", Text: "Target host (IP or name) to test on?", Default: ""},
		{ID: "ssh.user", Group: "ssh", EnvKey: "ssh.user", Text: "SSH user (root or passwordless sudo)?", Default: "root"},
		{ID: "ssh.key", Group: "ssh", EnvKey: "ssh.key", Text: "SSH private key path (empty = use the ssh-agent)?", Default: "~/.ssh/id_ed25519"},
		{ID: "ssh.bastion", Group: "ssh", EnvKey: "ssh.jump.host", Text: "Bastion / jump host (user@host:port), if any?", Default: "none"},
	}
	c := p.Completeness
	var qs []Question
	switch {
	case c.Mode == ModeFast:
		qs = append(qs, ssh...)
		qs = append(qs,
			Question{ID: "test.workload_command", Group: "test", EnvKey: "benchmark.command", Text: "Workload command that drives the SUT and writes the op history (the plan does not say)?", Default: d.workload},
			Question{ID: "test.parameters", Group: "test", EnvKey: "benchmark", Text: "Key test parameters (rate ops/s, duration s, dataset)?", Default: "rate=100 duration=60"},
			Question{ID: "cleanup.strategy", Group: "cleanup", Text: "Cleanup between runs: standard (stop, wipe data) or deep (rotate dirs + reboot)?", Default: "standard"},
		)
	case c.Mode == ModeSemi && c.DocsComplete:
		// Deployment is documented; only the test itself is unknown.
		qs = append(qs, ssh...)
		qs = append(qs,
			Question{ID: "test.type", Group: "test", EnvKey: "benchmark.mode", Text: "Test type: correctness, performance, stress or smoke? (no plan found; write one under docs/testing-plans/)", Default: "correctness"},
			Question{ID: "test.workload_command", Group: "test", EnvKey: "benchmark.command", Text: "Workload command to run?", Default: d.workload},
			Question{ID: "test.parameters", Group: "test", EnvKey: "benchmark", Text: "Key test parameters (rate ops/s, duration s, dataset)?", Default: "rate=100 duration=60"},
			Question{ID: "test.metrics", Group: "test", Text: "Metrics that matter (latency percentiles, throughput, a Prometheus endpoint)?", Default: "p50/p95/p99 latency, throughput, cpu, memory"},
		)
	case c.Mode == ModeSemi:
		// The plan says what to test; ask only for the deployment gaps.
		qs = append(qs, ssh...)
		qs = append(qs, Question{ID: "test.workload_command", Group: "test", EnvKey: "benchmark.command", Text: "Workload command that drives the SUT and writes the op history?", Default: d.workload})
		for _, m := range c.Missing {
			switch m {
			case MissingBuild:
				qs = append(qs, Question{ID: "build.command", Group: "build", Text: "Build command that produces the binaries to deploy?", Default: d.build})
			case MissingInstall:
				qs = append(qs, Question{ID: "deploy.install_path", Group: "deploy", Text: "Install path of the binaries on the remote host?", Default: "/usr/local/bin"})
			case MissingConfig:
				qs = append(qs, Question{ID: "deploy.config_path", Group: "deploy", Text: "Config file location (and format) on the remote host?", Default: d.config})
			case MissingService:
				qs = append(qs, Question{ID: "service.management", Group: "deploy", Text: "How is the service started and stopped (systemd unit name, or a start command)?", Default: d.service})
			}
		}
	default:
		qs = fullQuestionnaire(d, ssh)
	}
	return qs
}

// fullQuestionnaire is the 7-category questionnaire of §2.3, in its three
// batches.
func fullQuestionnaire(d scanDefaults, ssh []Question) []Question {
	var qs []Question
	add := func(batch int, group string, q ...Question) {
		for _, x := range q {
			x.Batch, x.Group = batch, group
			qs = append(qs, x)
		}
	}
	add(1, "environment", ssh...)
	add(1, "environment",
		Question{ID: "remote.port", EnvKey: "ssh.port", Text: "SSH port?", Default: "22"},
		Question{ID: "remote.os_arch", Text: "Remote OS and architecture?", Default: "linux/amd64"})
	add(1, "prerequisites",
		Question{ID: "prereq.packages", Text: "Remote dependencies to install (packages, runtimes)?", Default: "none"},
		Question{ID: "prereq.storage", Text: "Pre-mounted storage the SUT needs (path, NFS/CFS)?", Default: "none"},
		Question{ID: "prereq.kernel", Text: "Kernel version or features required (netem, namespaces, cgroups)?", Default: "any"},
		Question{ID: "prereq.network", Text: "Network access the host needs (registries, mirrors)?", Default: "none"})
	add(2, "build",
		Question{ID: "build.command", Text: "Build command and toolchain?", Default: d.build},
		Question{ID: "build.targets", Text: "Binaries to deploy and their output paths (main + benchmark tool)?", Default: d.artifacts},
		Question{ID: "build.cross", Text: "Cross-compilation target, if the remote differs from this machine?", Default: "none"})
	add(2, "deploy",
		Question{ID: "deploy.install_path", Text: "Install path on the remote host?", Default: "/usr/local/bin"},
		Question{ID: "deploy.config_path", Text: "Config file location and format?", Default: d.config},
		Question{ID: "service.management", Text: "Service management: systemd unit name, or manual start command?", Default: d.service},
		Question{ID: "deploy.dependencies", Text: "Dependent services to configure first (containerd, docker, a database)?", Default: "none"})
	add(3, "test",
		Question{ID: "test.type", EnvKey: "benchmark.mode", Text: "Test type: performance, stress, correctness or smoke?", Default: "correctness"},
		Question{ID: "test.workload_command", EnvKey: "benchmark.command", Text: "Test binary and arguments (the workload command)?", Default: d.workload},
		Question{ID: "test.parameters", EnvKey: "benchmark", Text: "Parameters: rate, duration, concurrency, dataset?", Default: "rate=100 duration=60"},
		Question{ID: "test.expected_runtime", Text: "Expected runtime of one run?", Default: "10m"})
	add(3, "metrics",
		Question{ID: "metrics.system", Text: "System metrics to sample?", Default: "cpu, memory, disk io, network"},
		Question{ID: "metrics.application", Text: "Application metrics endpoint (Prometheus URL), if any?", Default: "none"},
		Question{ID: "metrics.logs", Text: "Log sources to collect (journal unit, files)?", Default: d.logs})
	add(3, "cleanup",
		Question{ID: "cleanup.strategy", Text: "Cleanup between runs: standard or deep (rotate dirs + reboot)?", Default: "standard"},
		Question{ID: "cleanup.rotate_dirs", Text: "Data directories to rotate on deep cleanup?", Default: "none"},
		Question{ID: "cleanup.reboot", Text: "Reboot for a clean state on deep cleanup?", Default: "no"})
	return qs
}

// scanDefaults are the answers the scan itself suggests.
type scanDefaults struct {
	build, workload, config, service, artifacts, logs string
}

func defaults(p *Profile) scanDefaults {
	d := scanDefaults{config: "none", service: "manual start", logs: "journal"}
	for _, b := range p.Build {
		for i, t := range b.Targets {
			if b.Kind == "make" && (t == "build" || t == "all") {
				d.build = b.Commands[i]
				break
			}
		}
		if d.build != "" {
			break
		}
	}
	if d.build == "" {
		for _, b := range p.Build {
			if len(b.Commands) > 0 {
				d.build = b.Commands[0]
				break
			}
		}
	}
	for _, doc := range p.Deploy {
		for _, c := range doc.Commands {
			if strings.Contains(c, "workload") && d.workload == "" {
				d.workload = c
			}
		}
	}
	if d.workload == "" {
		for _, t := range p.Toolbox {
			if t.Role == "workload" && t.Line == 0 {
				d.workload = "./" + t.Path
				break
			}
		}
	}
	if len(p.Configs) > 0 {
		d.config = "/etc/" + p.Name + "/" + p.Configs[0].Target
	}
	if len(p.Units) > 0 {
		d.service = "systemd unit " + p.Units[0].Name
		d.logs = "journalctl -u " + p.Units[0].Name
	}
	var names []string
	for _, a := range p.Artifacts {
		names = appendUnique(names, a.Path)
	}
	d.artifacts = strings.Join(names, ", ")
	return d
}
