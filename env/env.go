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
	SUT        SUT            `yaml:"sut"`        // how deploy installs, configures, runs and checks the SUT
	Dstgen     Dstgen         `yaml:"dstgen"`

	// Remote and Bastion are the single-host form of docs/real-env-test.md §6;
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
	// Config is the OpenSSH client config file whose Host blocks fill
	// what env.yml leaves unset (default ~/.ssh/config, "none" = do not
	// read one; the DSTGEN_SSH_CONFIG environment variable wins over it).
	Config string `yaml:"config"`
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
	Name string `yaml:"name"`
	// Address is what you would type after ssh: an IP, a DNS name, or a
	// Host alias of the OpenSSH config (ssh.config). For an alias, the
	// config's HostName, Port, User, IdentityFile, UserKnownHostsFile and
	// ProxyJump fill what env.yml does not set; after Load, Address is the
	// resolved HostName.
	Address string   `yaml:"address"`
	Port    int      `yaml:"port"`
	User    string   `yaml:"user"`
	Key     string   `yaml:"key"`
	Roles   []string `yaml:"roles"`
	// Workdir is this host's remote work dir (default: the top-level
	// workdir). Hosts that share one filesystem (network namespaces,
	// containers with a shared mount) need one each.
	Workdir string `yaml:"workdir"`
	// Vars are this host's own template values; they win over parameters.
	Vars map[string]any `yaml:"vars"`
	// KnownHosts and Jump override ssh.known_hosts and ssh.jump for this
	// host ("" / nil = the ssh: value); ~/.ssh/config may fill them. After
	// Load both hold this host's effective value (Jump nil = connect
	// directly), like Port, User and Key.
	KnownHosts string `yaml:"known_hosts"`
	Jump       *Jump  `yaml:"jump"`
	// Sources says where each SSH value of this host came from, by field
	// (address, port, user, key, known_hosts, jump): "env.yml:12",
	// "~/.ssh/config:4" or "default". Filled by Load.
	Sources map[string]string `yaml:"-"`
	Line    int               `yaml:"-"` // line in env.yml
}

// Benchmark holds the parameters the runner may override (docs/real-env-test.md §10.1).
type Benchmark struct {
	Mode     string  `yaml:"mode"`
	Dataset  string  `yaml:"dataset"`
	Rate     float64 `yaml:"rate"`
	Duration int     `yaml:"duration"` // seconds
	Command  string  `yaml:"command"`  // workload command run by bench:start; a per-host template
	// Driver is a local Go main package (relative to env.yml) that deploy
	// builds for each client host's OS/arch and uploads as
	// <workdir>/bin/<base name>; "" = the command needs no upload.
	Driver string `yaml:"driver"`
	Seed   int64  `yaml:"seed"` // 0 = derived from the run id
	// Model and Checker name the oracle analyze runs on a collected
	// benchmark history (dstgen check --model/--checker); "" = none.
	Model   string `yaml:"model"`
	Checker string `yaml:"checker"`
}

// SUT says how deploy brings the system under test up on the hosts of its
// roles. Command, DataDir, config destinations and health commands are
// per-host templates (see Facts).
type SUT struct {
	Name  string   `yaml:"name"`  // short name: job id sut-<name>, transient unit dstgen-<name>
	Roles []string `yaml:"roles"` // hosts with one of these roles run the SUT; deploy touches no other
	// Run is how the SUT process is supervised: auto (systemd when the
	// host has it, else a dstgen job), systemd (a transient unit) or job.
	Run     string  `yaml:"run"`
	Install Install `yaml:"install"`
	Command string  `yaml:"command"`  // the SUT's foreground command on one host
	DataDir string  `yaml:"data_dir"` // the SUT's real data dir; clean:data wipes it
	// Init runs on a member, inside its start, before its command when
	// its data dir is empty (e.g. mariadb-install-db): a per-host
	// template; "" = nothing to initialise.
	Init string `yaml:"init"`
	// Bootstrap makes every start of the SUT ordered (docs/env-yml.md
	// §7.1): when no member runs, the highest ranked one starts first with
	// Bootstrap.Command and the others join once it is healthy; nil = the
	// members start side by side.
	Bootstrap *Bootstrap `yaml:"bootstrap"`
	Configs   []Config   `yaml:"configs"`
	// Health is one command per role that exits 0 when the SUT answers
	// on this host ("" = no check for that role).
	Health map[string]string `yaml:"health"`
	// StopUnits are systemd units (e.g. the distro package's own) stopped
	// before dstgen starts the SUT, so they cannot hold its ports.
	StopUnits []string `yaml:"stop_units"`
	// ReadyTimeoutS bounds how long deploy waits for health after start.
	ReadyTimeoutS int `yaml:"ready_timeout_s"`
	// Secrets are names of random secrets (a database password the SUT's
	// init creates and the workload logs in with): deploy makes each once
	// on the control node and installs it at <workdir>/secrets/<name> on
	// every host, so no value is in env.yml, a command line or a log.
	Secrets []string `yaml:"secrets"`
}

// Bootstrap is sut.bootstrap: how the first member of a cluster that
// must be bootstrapped (a Galera cluster, a replica set) starts, and how
// dstgen picks that member. Both are per-host templates.
type Bootstrap struct {
	// Command is the bootstrap member's foreground command (e.g. mariadbd
	// --wsrep-new-cluster); the other members run sut.command.
	Command string `yaml:"command"`
	// Rank runs on every member while none runs and prints one line: an
	// integer, optionally followed by a note (the highest bootstraps, ties
	// to the first in hosts order), or "refuse: <reason>" when this member
	// must not bootstrap; a non-zero exit refuses too.
	Rank string `yaml:"rank"`
	// Health is the bootstrap member's health command while it is the
	// only member (a Galera node is Synced in a cluster of 1, which the
	// cluster's sut.health refuses); "" = sut.health of its roles.
	Health string `yaml:"health"`
}

// Install is what deploy installs on a SUT host and how it verifies it.
type Install struct {
	Package string `yaml:"package"` // distro package(s) installed when Binary is missing
	// Artifact is a local build output (relative to env.yml) uploaded to
	// <workdir>/bin, or a Go main package directory deploy builds for each
	// host's OS/arch and uploads as <workdir>/bin/<dir name>.
	Artifact string `yaml:"artifact"`
	Binary   string `yaml:"binary"`  // path or name on the host that must exist after install
	Version  string `yaml:"version"` // command that prints the installed version
}

// Config is one config template rendered per host and installed at Dest.
type Config struct {
	Template string `yaml:"template"` // local template file (relative to env.yml)
	Dest     string `yaml:"dest"`     // remote path (a per-host template); default <workdir>/etc/<base>
	Line     int    `yaml:"-"`
}

// Dstgen is the dstgen: section (docs/real-env-test.md §6 "dstgen additions").
type Dstgen struct {
	PlanPath      string          `yaml:"plan_path"`
	Scenarios     []string        `yaml:"scenarios"`
	Seeds         []int64         `yaml:"seeds"`
	Tier          string          `yaml:"tier"`          // smoke | hardening | release
	SSHTimeoutS   int             `yaml:"ssh_timeout_s"` // same as ssh.timeout_s (docs/real-env-test.md §6 spelling)
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
