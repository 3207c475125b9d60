// Package testbed is `dstgen testbed up N | down | env`: N simulated hosts
// on this machine — network namespaces on one bridge (10.77.0.0/24), an
// sshd in each with its own host key, its own work dir and a small tmpfs
// data dir (namespaces share the filesystem) — and the env.yml and
// known_hosts that reach them (docs/testbed.md).
//
// Everything Up makes is recorded in testbed.json before it is made, so
// Down removes exactly that, processes by PID, also after Up crashed half
// way. Up converges: it makes only what is missing, so a second Up finds
// everything in place and says so.
package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/testbed/netns"
)

// Names and addresses the testbed uses (docs/testbed.md §2).
const (
	// Bridge is the root-namespace bridge every host's veth is on.
	Bridge = "dstgen-tb0"
	// BridgeAddr is the control node's address on Bridge.
	BridgeAddr = netns.ControlAddr
	// Subnet is the testbed network; it is also testsupport/sshtest's, which
	// is why tests hold sshtest.LockNet while a testbed is up.
	Subnet = netns.Subnet
	// User is the login user: a uid-0 alias with /bin/sh as its shell, so
	// faults can run as root without root's slow interactive bash setup.
	User = "dstgen-tb"
	// DefaultDir is where the testbed lives unless --dir names another.
	DefaultDir = "/var/lib/dstgen/testbed"
	// MaxHosts bounds N.
	MaxHosts = 20
	// DefaultDataMiB is the size of each host's tmpfs data dir: small, so
	// the disk-full nemesis fills it at once and never the real disk.
	DefaultDataMiB = 256
	// StateFile is the record of what Up made, in the testbed dir.
	StateFile = "testbed.json"
	// StateFormat is the format tag of StateFile.
	StateFormat = "dstgen-testbed/1"

	sshdPath       = "/usr/sbin/sshd"
	firstHostOctet = 11 // h1 is 10.77.0.11, hN is 10.77.0.(10+N)
	nsPrefix       = "dstgen-tb-"
	vethPrefix     = "dstgen-tbv"
	maxDataMiB     = 4096
	sshdWait       = 5 * time.Second  // sshd listening, per Up
	cmdTimeout     = 10 * time.Second // one ip/useradd/sshd invocation
	stopWait       = 2 * time.Second  // a process gone after its signal
)

// Config is what `testbed up` was asked for.
type Config struct {
	Dir     string   // testbed dir; "" = DefaultDir
	N       int      // hosts, 1..MaxHosts
	Roles   []string // one per host; nil = the recorded roles, else DefaultRoles
	DataMiB int      // tmpfs size per data dir; 0 = the recorded size, else DefaultDataMiB
}

// State is testbed.json: everything Up made, written before each thing is
// made, so Down can undo a crashed Up too.
type State struct {
	Format        string      `json:"format"`
	Dir           string      `json:"dir"`
	N             int         `json:"n"`
	DataMiB       int         `json:"data_mib"`
	Bridge        string      `json:"bridge"`
	BridgeCreated bool        `json:"bridge_created"`
	User          string      `json:"user"`
	UserCreated   bool        `json:"user_created"`
	Key           string      `json:"key"` // client private key
	KnownHosts    string      `json:"known_hosts"`
	EnvFile       string      `json:"env_file"`
	Hosts         []HostState `json:"hosts"`
}

// HostState is one simulated host.
type HostState struct {
	Name      string   `json:"name"` // h1..hN
	NS        string   `json:"netns"`
	Veth      string   `json:"veth"` // root-namespace end; eth0 inside
	Address   string   `json:"address"`
	Port      int      `json:"port"`
	Roles     []string `json:"roles"`
	Workdir   string   `json:"workdir"`
	DataDir   string   `json:"data_dir"`
	SSHDir    string   `json:"ssh_dir"` // host key, sshd_config, pid file, log
	NSCreated bool     `json:"netns_created"`
	Mounted   bool     `json:"mounted"` // tmpfs on DataDir
	PID       int      `json:"sshd_pid"`
	HostKey   string   `json:"host_key"` // "ssh-ed25519 AAAA…"

	restart bool // this Up changed what a running sshd already read
}

// DefaultRoles is every host "sut" except the last, which is "client"
// when there are at least two.
func DefaultRoles(n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = "sut"
	}
	if n >= 2 {
		r[n-1] = "client"
	}
	return r
}

// safePath is what a testbed dir may contain: it is written unquoted into
// sshd_config, where blanks split values and % expands tokens.
var (
	safePath = lazyre.New(`^/[A-Za-z0-9/._+-]*$`)
	roleName = lazyre.New(`^[A-Za-z0-9_.-]+$`)
)

// normalize fills the defaults and checks c; prev is the recorded state
// (nil when none), whose roles a later `up` without --roles keeps.
func (c Config) normalize(prev *State) (Config, error) {
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return c, fmt.Errorf("--dir %q: %w", c.Dir, err)
	}
	c.Dir = filepath.Clean(abs)
	if c.Dir == "/" || !safePath.MatchString(c.Dir) {
		return c, fmt.Errorf("--dir %q: want an absolute path of letters, digits and / . _ + - (it is written into sshd_config), not /", c.Dir)
	}
	if c.N < 1 || c.N > MaxHosts {
		return c, fmt.Errorf("%d hosts: want 1..%d", c.N, MaxHosts)
	}
	if c.DataMiB == 0 {
		c.DataMiB = DefaultDataMiB
		if prev != nil {
			c.DataMiB = prev.DataMiB
		}
	}
	if c.DataMiB < 1 || c.DataMiB > maxDataMiB {
		return c, fmt.Errorf("data dir size %d MiB: want 1..%d", c.DataMiB, maxDataMiB)
	}
	if c.Roles == nil {
		if prev != nil && len(prev.Hosts) == c.N {
			for _, h := range prev.Hosts {
				c.Roles = append(c.Roles, strings.Join(h.Roles, "+"))
			}
		} else {
			c.Roles = DefaultRoles(c.N)
		}
	}
	if len(c.Roles) != c.N {
		return c, fmt.Errorf("--roles names %d role(s) for %d hosts: want one per host, e.g. %s", len(c.Roles), c.N, strings.Join(DefaultRoles(c.N), ","))
	}
	for i, r := range c.Roles {
		for _, part := range strings.Split(r, "+") {
			if !roleName.MatchString(part) {
				return c, fmt.Errorf("--roles: host %d: role %q: want letters, digits, _ . - (several joined by +)", i+1, part)
			}
		}
	}
	return c, nil
}

// hostRoles splits one --roles entry ("sut+client") into its roles.
func hostRoles(r string) []string { return strings.Split(r, "+") }

// plan is the state a testbed of c has when everything is made; what was
// already made (prev) is carried over so Down still knows it.
func plan(c Config, prev *State) *State {
	st := &State{Format: StateFormat, Dir: c.Dir, N: c.N, DataMiB: c.DataMiB, Bridge: Bridge, User: User,
		Key:        filepath.Join(c.Dir, "id_ed25519"),
		KnownHosts: filepath.Join(c.Dir, "known_hosts"),
		EnvFile:    filepath.Join(c.Dir, "env.yml")}
	if prev != nil {
		st.BridgeCreated, st.UserCreated = prev.BridgeCreated, prev.UserCreated
	}
	for i := 1; i <= c.N; i++ {
		name := "h" + strconv.Itoa(i)
		base := filepath.Join(c.Dir, "hosts", name)
		h := HostState{Name: name, NS: nsPrefix + strconv.Itoa(i), Veth: vethPrefix + strconv.Itoa(i),
			Address: "10.77.0." + strconv.Itoa(firstHostOctet+i-1), Port: 22, Roles: hostRoles(c.Roles[i-1]),
			Workdir: filepath.Join(base, "work"), DataDir: filepath.Join(base, "work", "data"), SSHDir: filepath.Join(base, "ssh")}
		if prev != nil && i <= len(prev.Hosts) {
			p := prev.Hosts[i-1]
			h.NSCreated, h.Mounted, h.PID, h.HostKey = p.NSCreated, p.Mounted, p.PID, p.HostKey
		}
		st.Hosts = append(st.Hosts, h)
	}
	return st
}

// ErrNoTestbed is the cause LoadState gives when dir has no testbed.json.
var ErrNoTestbed = errors.New("no testbed")

// LoadState reads dir's testbed.json; an absent file wraps ErrNoTestbed.
func LoadState(dir string) (*State, error) {
	p := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s (dstgen testbed up N makes one)", ErrNoTestbed, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read testbed state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if st.Format != StateFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", p, st.Format, StateFormat)
	}
	if st.N != len(st.Hosts) || st.N < 1 || st.N > MaxHosts {
		return nil, fmt.Errorf("%s: n=%d with %d hosts: a damaged record; remove what it names by hand", p, st.N, len(st.Hosts))
	}
	return &st, nil
}

// save writes st to its dir atomically, so a crash leaves the old record or
// the new one, never half of one.
func (st *State) save() error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode testbed state: %w", err)
	}
	return atomicfile.Write(filepath.Join(st.Dir, StateFile), append(data, '\n'), 0o600)
}

// knownHosts is the known_hosts text of every host whose key is known.
func (st *State) knownHosts() []byte {
	var b strings.Builder
	for _, h := range st.Hosts {
		if h.HostKey != "" {
			// Port 22 is written as the bare address, as OpenSSH does.
			fmt.Fprintf(&b, "%s %s\n", h.Address, h.HostKey)
		}
	}
	return []byte(b.String())
}
