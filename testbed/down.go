package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Down removes what dir's testbed.json says Up made: every sshd by its pid,
// then whatever else still runs in the namespaces (sessions, SUT jobs) by
// pid, the tmpfs mounts, the namespaces, the bridge, the login user and the
// files. It returns one line per thing removed; none, and no error, when
// nothing was up. A step that fails does not stop the others; the record
// stays until everything is gone, so Down can be run again.
func Down(ctx context.Context, dir string) ([]string, error) {
	if dir == "" {
		dir = DefaultDir
	}
	st, err := LoadState(dir)
	if errors.Is(err, ErrNoTestbed) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	fail := func(err error) { errs = append(errs, err) }
	for i := range st.Hosts {
		h := &st.Hosts[i]
		for _, pid := range uniq(h.PID, readPID(pidFile(h))) {
			if !isSSHD(pid, h.NS) {
				continue // gone, or the pid now names another process
			}
			if err := stopPID(ctx, pid); err != nil {
				fail(fmt.Errorf("%s: stop sshd: %w", h.Name, err))
				continue
			}
			removed = append(removed, fmt.Sprintf("sshd %s pid=%d", h.Name, pid))
		}
		if nsExists(h.NS) {
			pids, err := nsPIDs(ctx, h.NS)
			if err != nil {
				fail(fmt.Errorf("%s: %w", h.Name, err))
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			for _, pid := range pids {
				if !gone(ctx, pid, stopWait) {
					fail(fmt.Errorf("%s: pid %d in %s survives SIGKILL", h.Name, pid, h.NS))
					continue
				}
				removed = append(removed, fmt.Sprintf("process %s pid=%d", h.Name, pid))
			}
		}
		if h.Mounted {
			if err := unmount(h.DataDir); err != nil {
				fail(fmt.Errorf("%s: %w", h.Name, err))
			} else {
				removed = append(removed, "tmpfs "+h.DataDir)
				h.Mounted = false
			}
		}
		if h.NSCreated && nsExists(h.NS) {
			if _, err := run(ctx, "ip", "netns", "del", h.NS); err != nil {
				fail(fmt.Errorf("%s: remove netns: %w", h.Name, err))
			} else {
				removed = append(removed, "netns "+h.NS)
			}
		}
		// The veth goes with its namespace; one left by a crash between the
		// two ends is removed here.
		if _, err := net.InterfaceByName(h.Veth); err == nil && strings.HasPrefix(h.Veth, vethPrefix) {
			_, err := run(ctx, "ip", "link", "del", h.Veth)
			if _, still := net.InterfaceByName(h.Veth); err != nil && still == nil {
				fail(fmt.Errorf("%s: remove veth: %w", h.Name, err))
			} else if err == nil {
				removed = append(removed, "veth "+h.Veth)
			}
		}
	}
	if st.BridgeCreated {
		if _, err := net.InterfaceByName(st.Bridge); err == nil {
			if _, err := run(ctx, "ip", "link", "del", st.Bridge); err != nil {
				fail(fmt.Errorf("remove bridge: %w", err))
			} else {
				removed = append(removed, "bridge "+st.Bridge)
			}
		}
	}
	if st.UserCreated {
		if _, err := run(ctx, "id", "-u", st.User); err == nil {
			// -f: every process of uid 0 counts as the alias's; without it
			// userdel refuses while any root process runs.
			if _, err := runAccount(ctx, "userdel", "-f", st.User); err != nil {
				fail(fmt.Errorf("remove user: %w", err))
			} else {
				removed = append(removed, "user "+st.User)
			}
		}
	}
	if len(errs) > 0 {
		_ = st.save()
		return removed, errors.Join(errs...)
	}
	// Files last: the record goes only when everything it names is gone.
	for _, p := range []string{filepath.Join(dir, "hosts"), filepath.Join(dir, "home"), st.Key, st.Key + ".pub",
		st.KnownHosts, filepath.Join(dir, "authorized_keys"), st.EnvFile, filepath.Join(dir, StateFile)} {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("remove %s: %w", p, err)
		}
	}
	removed = append(removed, "files "+dir)
	_ = os.Remove(dir) // only when empty: the dir may hold the user's own files
	return removed, nil
}

// uniq is the positive pids of ps without repeats.
func uniq(ps ...int) []int {
	var out []int
	for _, p := range ps {
		if p > 1 && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// nsPIDs lists the processes in network namespace ns.
func nsPIDs(ctx context.Context, ns string) ([]int, error) {
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

// unmount removes the tmpfs on dir; one still busy (a process outside the
// namespaces has its cwd there) is detached so it goes when released.
func unmount(dir string) error {
	mounted, err := isMountPoint(dir)
	if err != nil || !mounted {
		return err
	}
	err = syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}
