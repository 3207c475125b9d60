// Package env owns testing/env.yml: where the test runs (hosts, SSH, remote
// workdir, parameters). It never holds secrets: keys are paths, and the
// agent is referenced through SSH_AUTH_SOCK.
package env

// Env is a loaded env.yml.
type Env struct {
	Path       string         `yaml:"-"`
	SSH        SSH            `yaml:"ssh"`
	Workdir    string         `yaml:"workdir"` // remote work dir; default /opt/dstgen
	Hosts      []Host         `yaml:"hosts"`
	Benchmark  Benchmark      `yaml:"benchmark"`
	Parameters map[string]any `yaml:"parameters"` // SUT-specific values for scripts
	Dstgen     Dstgen         `yaml:"dstgen"`

	// Remote and Bastion are the single-host form of real-env-test.md §6;
	// Load folds them into Hosts[0] (name "remote") and SSH.Jump.
	Remote  *Remote  `yaml:"remote"`
	Bastion *Bastion `yaml:"bastion"`
}

// SSH is how every host is reached unless the host overrides it.
type SSH struct {
	User       string `yaml:"user"`        // default root
	Key        string `yaml:"key"`         // private key path; "" = agent only
	Agent      bool   `yaml:"agent"`       // also offer the agent's keys; the agent (SSH_AUTH_SOCK) is always used when key is empty or passphrase-protected
	KnownHosts string `yaml:"known_hosts"` // default ~/.ssh/known_hosts
	Port       int    `yaml:"port"`        // default 22
	TimeoutS   int    `yaml:"timeout_s"`   // per round trip; default and ceiling 30
	KeepaliveS int    `yaml:"keepalive_s"` // default 5
	Jump       *Jump  `yaml:"jump"`        // ProxyJump host, optional
}

// Jump is a ProxyJump host.
type Jump struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	User string `yaml:"user"`
	Key  string `yaml:"key"`
}

// Host is one machine under test.
type Host struct {
	Name    string   `yaml:"name"`
	Address string   `yaml:"address"`
	Port    int      `yaml:"port"`
	User    string   `yaml:"user"`
	Key     string   `yaml:"key"`
	Roles   []string `yaml:"roles"`
	Line    int      `yaml:"-"` // line in env.yml
}

// Benchmark holds the parameters the runner may override (real-env-test §10.1).
type Benchmark struct {
	Mode     string  `yaml:"mode"`
	Dataset  string  `yaml:"dataset"`
	Rate     float64 `yaml:"rate"`
	Duration int     `yaml:"duration"` // seconds
	Command  string  `yaml:"command"`  // workload command run by bench:start
}

// Dstgen is the dstgen: section (real-env-test.md §6 "dstgen additions").
type Dstgen struct {
	PlanPath      string          `yaml:"plan_path"`
	Scenarios     []string        `yaml:"scenarios"`
	Seeds         []int64         `yaml:"seeds"`
	Tier          string          `yaml:"tier"`          // smoke | hardening | release
	SSHTimeoutS   int             `yaml:"ssh_timeout_s"` // same as ssh.timeout_s (spec §6 spelling)
	PollIntervalS int             `yaml:"poll_interval_s"`
	MaxPolls      int             `yaml:"max_polls"`
	Capabilities  map[string]bool `yaml:"capabilities"`
}

// Remote is the single-host shorthand (`remote.host`, ...).
type Remote struct {
	Host   string `yaml:"host"`
	User   string `yaml:"user"`
	SSHKey string `yaml:"ssh_key"`
	Port   int    `yaml:"port"`
}

// Bastion is the single-host jump shorthand (`bastion.enabled`, ...).
type Bastion struct {
	Enabled bool   `yaml:"enabled"`
	Host    string `yaml:"host"`
	User    string `yaml:"user"`
	SSHKey  string `yaml:"ssh_key"`
	Port    int    `yaml:"port"`
}
