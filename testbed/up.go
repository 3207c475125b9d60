package testbed

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/testbed/netns"
	"golang.org/x/crypto/ssh"
)

// UpResult is what Up did.
type UpResult struct {
	State *State
	// Made lists what this call created or started ("netns dstgen-tb-1",
	// "sshd h1 pid=123"); empty when everything was already up.
	Made []string
}

// AlreadyUp reports whether Up found everything in place.
func (r *UpResult) AlreadyUp() bool { return len(r.Made) == 0 }

// Up makes the testbed c asks for, or finds it made. The caller has
// checked CheckRoot and CheckTools. A testbed of another size in the same
// dir is refused: Down it first.
func Up(ctx context.Context, c Config) (*UpResult, error) {
	dir := c.Dir
	if dir == "" {
		dir = DefaultDir
	}
	prev, err := LoadState(dir)
	if err != nil && !errors.Is(err, ErrNoTestbed) {
		return nil, err
	}
	if prev != nil && prev.N != c.N {
		return nil, fmt.Errorf("the testbed at %s has %d host(s), not %d: dstgen testbed down --dir %s first", prev.Dir, prev.N, c.N, prev.Dir)
	}
	c, err = c.normalize(prev)
	if err != nil {
		return nil, err
	}
	own := ""
	if prev != nil && prev.BridgeCreated {
		own = Bridge
	}
	ifs, err := LocalIfaces()
	if err != nil {
		return nil, err
	}
	if err := CheckSubnetFree(ifs, own); err != nil {
		return nil, err
	}
	u := &upper{st: plan(c, prev), res: &UpResult{}}
	u.res.State = u.st
	if prev != nil {
		for i, h := range u.st.Hosts {
			if old := prev.Hosts[i].Roles; strings.Join(old, "+") != strings.Join(h.Roles, "+") {
				u.made(fmt.Sprintf("roles %s %s (were %s)", h.Name, strings.Join(h.Roles, "+"), strings.Join(old, "+")))
			}
		}
	}
	if err := u.run(ctx); err != nil {
		return u.res, err
	}
	return u.res, nil
}

// upper carries one Up: the state it keeps saving and what it made.
type upper struct {
	st  *State
	res *UpResult
}

func (u *upper) made(what string) { u.res.Made = append(u.res.Made, what) }

func (u *upper) run(ctx context.Context) error {
	st := u.st
	for _, d := range []string{st.Dir, filepath.Join(st.Dir, "hosts")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("make testbed dir: %w", err)
		}
	}
	// The login user's home: sshd changes into it; nothing is kept there.
	if err := os.MkdirAll(filepath.Join(st.Dir, "home"), 0o700); err != nil {
		return fmt.Errorf("make testbed dir: %w", err)
	}
	if err := st.save(); err != nil {
		return err
	}
	steps := []func(context.Context) error{u.user, u.clientKey, u.bridge}
	for _, s := range steps {
		if err := s(ctx); err != nil {
			return err
		}
	}
	for i := range st.Hosts {
		if err := u.host(ctx, &st.Hosts[i]); err != nil {
			return fmt.Errorf("%s: %w", st.Hosts[i].Name, err)
		}
	}
	if err := atomicfile.Write(st.KnownHosts, st.knownHosts(), 0o644); err != nil {
		return err
	}
	if err := u.sshds(ctx); err != nil {
		return err
	}
	envYAML, err := EnvYAML(st)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(st.EnvFile, envYAML, 0o644); err != nil {
		return err
	}
	return st.save()
}

// user makes the uid-0 login user unless it exists. One this dir did not
// make is used only if it is the uid-0 alias, and Down leaves it.
func (u *upper) user(ctx context.Context) error {
	st := u.st
	out, err := run(ctx, "id", "-u", st.User)
	switch {
	case err == nil && strings.TrimSpace(out) != "0":
		return fmt.Errorf("user %s exists with uid %s, not 0: remove it (userdel %s) or it cannot run faults", st.User, strings.TrimSpace(out), st.User)
	case err != nil:
		// Recorded first: a crash right after useradd still lets Down remove it.
		st.UserCreated = true
		if err := st.save(); err != nil {
			return err
		}
		// -o -u 0: a second name for uid 0; -g 0 -N: no group of its own;
		// -M: its home is the testbed dir's, made above.
		if _, err := runAccount(ctx, "useradd", "-o", "-u", "0", "-g", "0", "-N", "-M", "-d", filepath.Join(st.Dir, "home"), "-s", "/bin/sh", "-c", "dstgen testbed login", st.User); err != nil {
			return fmt.Errorf("make login user: %w", err)
		}
		u.made("user " + st.User)
	}
	// sshd with UsePAM no refuses an account whose password field is
	// locked ("!"); "*" is no password, not locked.
	if _, err := runAccount(ctx, "usermod", "-p", "*", st.User); err != nil {
		return fmt.Errorf("unlock login user: %w", err)
	}
	return nil
}

// clientKey makes the user's ed25519 key pair and authorized_keys.
func (u *upper) clientKey(_ context.Context) error {
	st := u.st
	pubPath := st.Key + ".pub"
	pubLine, err := os.ReadFile(pubPath)
	if _, kerr := os.Stat(st.Key); err != nil || kerr != nil {
		line, err := newKey(st.Key)
		if err != nil {
			return fmt.Errorf("make client key: %w", err)
		}
		pubLine = []byte(line + " dstgen-testbed\n")
		if err := atomicfile.Write(pubPath, pubLine, 0o644); err != nil {
			return err
		}
		u.made("key " + st.Key)
	}
	return atomicfile.Write(filepath.Join(st.Dir, "authorized_keys"), pubLine, 0o644)
}

// newKey writes a fresh unencrypted ed25519 private key to path (0600) and
// returns its public key as an authorized_keys line without comment.
func newKey(path string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		return "", err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))), nil
}

// bridge makes the bridge with the control node's address, up; a bridge
// it creates is recorded before it is made.
func (u *upper) bridge(ctx context.Context) error {
	st := u.st
	if _, err := net.InterfaceByName(st.Bridge); err != nil {
		st.BridgeCreated = true
		if err := st.save(); err != nil {
			return err
		}
	}
	made, err := netns.MakeBridge(ctx, st.Bridge, BridgeAddr)
	if made {
		u.made("bridge " + st.Bridge)
	}
	return err
}

// host makes h's namespace, link, dirs, tmpfs and sshd files.
func (u *upper) host(ctx context.Context, h *HostState) error {
	st := u.st
	if !netns.Exists(h.NS) {
		h.NSCreated = true
		if err := st.save(); err != nil {
			return err
		}
	}
	made, err := netns.MakeLink(ctx, st.Bridge, netns.Link{NS: h.NS, Veth: h.Veth, Address: h.Address})
	for _, m := range made {
		u.made(m)
	}
	if err != nil {
		return err
	}
	for _, d := range []string{h.Workdir, h.DataDir, h.SSHDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("make host dir: %w", err)
		}
	}
	mounted, err := isMountPoint(h.DataDir)
	if err != nil {
		return err
	}
	if mounted && h.Mounted {
		if err := u.resize(h); err != nil {
			return err
		}
	}
	if !mounted {
		h.Mounted = true
		if err := st.save(); err != nil {
			return err
		}
		opts := "size=" + strconv.Itoa(st.DataMiB) + "m,mode=0755"
		if err := syscall.Mount("dstgen-tb-"+h.Name, h.DataDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", h.DataDir, err)
		}
		u.made("tmpfs " + h.DataDir)
		// A running sshd copied the mount table when it started (ip netns
		// exec gives it a private one): restart it so sessions see the tmpfs.
		h.restart = true
	}
	keyPath := filepath.Join(h.SSHDir, "ssh_host_ed25519_key")
	if _, err := os.Stat(keyPath); err != nil || h.HostKey == "" {
		line, err := newKey(keyPath)
		if err != nil {
			return fmt.Errorf("make host key: %w", err)
		}
		h.HostKey = line
		h.restart = true // a running sshd still serves the old key
		u.made("host key " + h.Name)
	}
	return atomicfile.Write(filepath.Join(h.SSHDir, "sshd_config"), sshdConfig(st, h), 0o600)
}

// sshdConfig is h's sshd_config: key-only login of the uid-0 alias.
func sshdConfig(st *State, h *HostState) []byte {
	lines := []string{
		"# Written by dstgen testbed up; removed by dstgen testbed down.",
		"Port " + strconv.Itoa(h.Port),
		"ListenAddress " + h.Address,
		"HostKey " + filepath.Join(h.SSHDir, "ssh_host_ed25519_key"),
		"PidFile " + pidFile(h),
		"AuthorizedKeysFile " + filepath.Join(st.Dir, "authorized_keys"),
		"AllowUsers " + st.User,
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		// --dir may be below a world-writable dir such as /tmp, which
		// StrictModes rejects; every file it reads is root's own.
		"StrictModes no",
		"UseDNS no",
		"MaxStartups 100:30:200",
		"MaxSessions 64",
		"LogLevel VERBOSE",
		"Subsystem sftp internal-sftp",
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// resize remounts h's tmpfs when its size is not the one asked for; the
// files on it stay (a tmpfs cannot shrink below what it holds: that is
// refused).
func (u *upper) resize(h *HostState) error {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(h.DataDir, &fs); err != nil {
		return fmt.Errorf("statfs %s: %w", h.DataDir, err)
	}
	want := uint64(u.st.DataMiB) << 20
	if fs.Blocks*uint64(fs.Bsize) == want {
		return nil
	}
	opts := "size=" + strconv.Itoa(u.st.DataMiB) + "m"
	if err := syscall.Mount("", h.DataDir, "", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("resize tmpfs on %s to %d MiB: %w", h.DataDir, u.st.DataMiB, err)
	}
	u.made(fmt.Sprintf("tmpfs %s resized to %d MiB", h.DataDir, u.st.DataMiB))
	return nil
}

func pidFile(h *HostState) string { return filepath.Join(h.SSHDir, "sshd.pid") }
func logFile(h *HostState) string { return filepath.Join(h.SSHDir, "sshd.log") }

// sshds starts every sshd not running (or due a restart) and
// waits, bounded by sshdWait in all, until each listens.
func (u *upper) sshds(ctx context.Context) error {
	st := u.st
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege-separation dir
		return fmt.Errorf("make /run/sshd: %w", err)
	}
	var started []*HostState
	for i := range st.Hosts {
		h := &st.Hosts[i]
		if h.PID > 0 && isSSHD(h.PID, h.NS) {
			if !h.restart && listening(ctx, h) {
				continue
			}
			if err := stopPID(ctx, h.PID); err != nil {
				return fmt.Errorf("%s: restart sshd: %w", h.Name, err)
			}
		}
		h.PID = 0
		_ = os.Remove(pidFile(h))
		if _, err := run(ctx, "ip", "netns", "exec", h.NS, sshdPath, "-f", filepath.Join(h.SSHDir, "sshd_config"), "-E", logFile(h)); err != nil {
			return fmt.Errorf("%s: start sshd: %w%s", h.Name, err, logTail(h))
		}
		started = append(started, h)
	}
	deadline := time.Now().Add(sshdWait)
	for _, h := range started {
		for {
			if pid := readPID(pidFile(h)); pid > 0 && isSSHD(pid, h.NS) && listening(ctx, h) {
				h.PID = pid
				u.made(fmt.Sprintf("sshd %s pid=%d", h.Name, pid))
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				h.PID = readPID(pidFile(h)) // Down still stops it by this pid
				_ = st.save()
				return fmt.Errorf("%s: sshd not listening on %s:%d after %s%s", h.Name, h.Address, h.Port, sshdWait, logTail(h))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := st.save(); err != nil {
			return err
		}
	}
	return nil
}

// listening reports whether h's sshd accepts a TCP connection now.
func listening(ctx context.Context, h *HostState) bool {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(h.Address, strconv.Itoa(h.Port)))
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// logTail is the last line of h's sshd log, for an error message.
func logTail(h *HostState) string {
	data, err := os.ReadFile(logFile(h))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if last := lines[len(lines)-1]; last != "" {
		return " (sshd log: " + last + ")"
	}
	return ""
}

// readPID reads a pid file; 0 when absent or not a pid.
func readPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0
	}
	return pid
}

// isSSHD reports whether pid is an sshd in network namespace ns, so a
// recycled pid is never signalled.
func isSSHD(pid int, ns string) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "sshd" {
		return false
	}
	return sameFile("/proc/"+strconv.Itoa(pid)+"/ns/net", "/run/netns/"+ns)
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// isMountPoint reports whether something is mounted on dir (dir has no
// blanks: normalize refuses them, so mountinfo needs no unescaping).
func isMountPoint(dir string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	return false, nil
}

// stopPID sends SIGTERM, then SIGKILL after stopWait, and waits (bounded)
// until pid is gone.
func stopPID(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	if netns.Gone(ctx, pid, stopWait) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if netns.Gone(ctx, pid, stopWait) {
		return nil
	}
	return fmt.Errorf("pid %d still there %s after SIGKILL", pid, stopWait)
}

// runAccount runs useradd, usermod or userdel. They take the password
// file's lock, which other test binaries' and users' account commands hold
// for a while (lckpwdf waits up to 15 s, then "cannot lock /etc/passwd;
// try again later"): a failure to get it is retried, 4 tries at most,
// each bounded by accountTimeout.
func runAccount(ctx context.Context, args ...string) (string, error) {
	var out string
	var err error
	for i := 0; i < 4; i++ {
		actx, cancel := context.WithTimeout(ctx, accountTimeout)
		out, err = runBounded(actx, args...)
		cancel()
		if err == nil || ctx.Err() != nil || !(strings.Contains(out, "lock") || errors.Is(err, context.DeadlineExceeded)) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(time.Second):
		}
	}
	return out, err
}

// accountTimeout bounds one account command: longer than lckpwdf's own
// 15 s wait for the password file's lock.
const accountTimeout = 20 * time.Second

// run runs one local command, bounded by cmdTimeout, and returns its
// output; the error names the command and the first line it printed.
func run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	return runBounded(ctx, args...)
}

// runBounded is run under the caller's bound.
func runBounded(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	// sshd daemonizes: a child still holding the output pipe must not
	// keep us waiting.
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
