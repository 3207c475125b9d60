// Package netns is the network of simulated hosts: network namespaces,
// each with a veth pair on a root-namespace bridge. `dstgen testbed up`
// makes its hosts with it, and package testsupport/sshtest the hosts of
// the multi-host tests (on a bridge of their own), so there is one
// implementation of the network every multi-host test and the testbed run
// on (docs/testbed.md §2). Every command is bounded and every process is
// stopped by PID.
package netns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The simulated hosts' network.
const (
	// Subnet is where every simulated host's address is.
	Subnet = "10.77.0.0/24"
	// ControlAddr is this machine's address on a bridge of Subnet.
	ControlAddr = "10.77.0.1"
	// Lock is the file every test that puts hosts on Subnet flocks for as
	// long as they are up, across test binaries (sshtest.LockNet): two
	// bridges with ControlAddr would fight over the route.
	Lock = "/run/dstgen-sshtest-net.lock"
)

// Link is one simulated host's network: a namespace whose eth0 is the
// far end of a veth pair on a root-namespace bridge, with its address on
// the bridge's /24.
type Link struct {
	NS      string // network namespace name
	Veth    string // root-namespace end of the veth pair (eth0 inside)
	Address string // eth0's address, on the bridge's /24
}

// MakeBridge makes bridge (when missing) with addr/24 on it, up. made is
// true when it created the bridge. Idempotent.
func MakeBridge(ctx context.Context, bridge, addr string) (made bool, err error) {
	if _, err := net.InterfaceByName(bridge); err != nil {
		if _, err := run(ctx, "ip", "link", "add", "name", bridge, "type", "bridge"); err != nil {
			return false, fmt.Errorf("make bridge: %w", err)
		}
		made = true
	}
	// replace and set are idempotent: a second call re-asserts them cheaply.
	for _, args := range [][]string{
		{"ip", "addr", "replace", addr + "/24", "dev", bridge},
		{"ip", "link", "set", bridge, "up"},
	} {
		if _, err := run(ctx, args...); err != nil {
			return made, fmt.Errorf("set up bridge: %w", err)
		}
	}
	return made, nil
}

// MakeLink makes l's namespace and veth pair on bridge where missing, and
// sets eth0's address and every link up (lo included). made names what it
// created ("netns NS", "veth V"). Idempotent: a veth left half-made by a
// crash is replaced.
func MakeLink(ctx context.Context, bridge string, l Link) (made []string, err error) {
	if !Exists(l.NS) {
		if _, err := run(ctx, "ip", "netns", "add", l.NS); err != nil {
			return made, fmt.Errorf("make netns: %w", err)
		}
		made = append(made, "netns "+l.NS)
	}
	if _, err := run(ctx, "ip", "-n", l.NS, "link", "show", "eth0"); err != nil {
		// A root-side end left from a half-made link goes first.
		if _, lerr := net.InterfaceByName(l.Veth); lerr == nil {
			if _, err := run(ctx, "ip", "link", "del", l.Veth); err != nil {
				return made, fmt.Errorf("remove stale veth: %w", err)
			}
		}
		if _, err := run(ctx, "ip", "link", "add", l.Veth, "type", "veth", "peer", "name", "eth0", "netns", l.NS); err != nil {
			return made, fmt.Errorf("make veth: %w", err)
		}
		made = append(made, "veth "+l.Veth)
	}
	for _, args := range [][]string{
		{"ip", "-n", l.NS, "addr", "replace", l.Address + "/24", "dev", "eth0"},
		{"ip", "-n", l.NS, "link", "set", "eth0", "up"},
		{"ip", "-n", l.NS, "link", "set", "lo", "up"},
		{"ip", "link", "set", l.Veth, "master", bridge},
		{"ip", "link", "set", l.Veth, "up"},
	} {
		if _, err := run(ctx, args...); err != nil {
			return made, fmt.Errorf("set up link: %w", err)
		}
	}
	return made, nil
}

// RemoveLink kills whatever still runs in l's namespace, by PID (never
// this process), then deletes the namespace and a veth left behind. It
// returns the pids it killed; a process that survives SIGKILL is an
// error naming it, and the rest is still removed.
func RemoveLink(ctx context.Context, l Link) ([]int, error) {
	var errs []error
	var killed []int
	if l.NS != "" && Exists(l.NS) {
		pids, err := PIDs(ctx, l.NS)
		if err != nil {
			errs = append(errs, err)
		}
		for _, pid := range pids {
			if pid > 1 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		for _, pid := range pids {
			if pid <= 1 || pid == os.Getpid() {
				continue
			}
			if !Gone(ctx, pid, stopWait) {
				errs = append(errs, fmt.Errorf("pid %d in %s survives SIGKILL", pid, l.NS))
				continue
			}
			killed = append(killed, pid)
		}
		if _, err := run(ctx, "ip", "netns", "del", l.NS); err != nil {
			errs = append(errs, fmt.Errorf("remove netns: %w", err))
		}
	}
	// The veth goes with its namespace; one left by a crash between the
	// two ends is removed here.
	if _, err := net.InterfaceByName(l.Veth); l.Veth != "" && err == nil {
		_, err := run(ctx, "ip", "link", "del", l.Veth)
		if _, still := net.InterfaceByName(l.Veth); err != nil && still == nil {
			errs = append(errs, fmt.Errorf("remove veth: %w", err))
		}
	}
	return killed, errors.Join(errs...)
}

// RemoveBridge deletes bridge when it exists (its veths go with it).
func RemoveBridge(ctx context.Context, bridge string) error {
	if _, err := net.InterfaceByName(bridge); err != nil {
		return nil
	}
	if _, err := run(ctx, "ip", "link", "del", bridge); err != nil {
		return fmt.Errorf("remove bridge: %w", err)
	}
	return nil
}

// Exists reports whether the named network namespace exists.
func Exists(ns string) bool {
	_, err := os.Stat("/run/netns/" + ns)
	return err == nil
}

// PIDs lists the processes in network namespace ns, never this process or pid 1.
func PIDs(ctx context.Context, ns string) ([]int, error) {
	out, err := run(ctx, "ip", "netns", "pids", ns)
	if err != nil {
		return nil, fmt.Errorf("list processes in %s: %w", ns, err)
	}
	var pids []int
	self := os.Getpid()
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != self {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Gone polls until pid no longer exists (or is a zombie), at most wait.
func Gone(ctx context.Context, pid int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, fs.ErrNotExist) {
			return true
		}
		// The state follows the ")" closing the command name.
		if i := strings.LastIndexByte(string(data), ')'); err == nil && i > 0 && i+2 < len(data) && data[i+2] == 'Z' {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdTimeout bounds one ip invocation.
const cmdTimeout = 10 * time.Second

// stopWait bounds the wait for a killed process to be gone.
const stopWait = 2 * time.Second

// run runs one local command, bounded by cmdTimeout; the error names the
// command and the first line it printed.
func run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if first != "" {
			return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, first)
		}
		return string(out), fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
