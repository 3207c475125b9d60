package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dstgen/dstgen/testbed/netns"
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
		if netns.Exists(h.NS) {
			// Everything in it goes first: a process there keeps the tmpfs busy.
			pids, err := netns.PIDs(ctx, h.NS)
			if err != nil {
				fail(fmt.Errorf("%s: %w", h.Name, err))
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			for _, pid := range pids {
				if !netns.Gone(ctx, pid, stopWait) {
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
		if h.NSCreated || strings.HasPrefix(h.Veth, vethPrefix) {
			had := netns.Exists(h.NS) && h.NSCreated
			l := netns.Link{NS: h.NS, Veth: h.Veth, Address: h.Address}
			if !h.NSCreated {
				l.NS = "" // the veth only
			}
			killed, err := netns.RemoveLink(ctx, l)
			for _, pid := range killed { // started since the kill above
				removed = append(removed, fmt.Sprintf("process %s pid=%d", h.Name, pid))
			}
			if err != nil {
				fail(fmt.Errorf("%s: %w", h.Name, err))
			}
			if had && !netns.Exists(h.NS) {
				removed = append(removed, "netns "+h.NS)
			}
		}
	}
	if st.BridgeCreated {
		if _, err := net.InterfaceByName(st.Bridge); err == nil {
			if err := netns.RemoveBridge(ctx, st.Bridge); err != nil {
				fail(err)
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
