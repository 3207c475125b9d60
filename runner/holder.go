package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/env"
	"golang.org/x/crypto/ssh"
)

// The connection holder keeps a user's pooled SSH connections open between
// CLI calls, as OpenSSH's ControlMaster/ControlPersist does: the first
// runner command starts it (detached, in its own session), every later one
// reaches its hosts through it, and it exits after an idle timeout.
//
// Protocol: one unix connection per pooled host connection of a CLI call,
// speaking SSH itself (golang.org/x/crypto/ssh, no client auth: the
// socket's directory is private and the holder checks the peer's uid).
// The first request names the target ("dial@dstgen", its full connection
// identity); every channel the CLI then opens (exec sessions, kill
// sessions, the sftp subsystem) is opened on the upstream connection and
// proxied verbatim, so stdout, stderr, exit status and SFTP reach the
// caller exactly as on a direct connection. The upstream connection is
// keyed on the whole identity (address, port, user, key path, known_hosts
// path, jump, agent socket, trust-on-first-use): a call with other
// settings never gets a connection verified under different ones, and a
// reused connection's host key is checked against known_hosts again.

// Holder says where the per-user connection holder lives and how to start
// one. See DefaultHolderDir.
type Holder struct {
	// Dir is the private directory of the socket: owned by the user and
	// not accessible to group or others, else it is refused.
	Dir string
	// Start is the command line that serves Dir (ServeHolder), started
	// detached when no holder answers; nil only uses a running holder.
	Start []string
}

// DefaultHolderIdle is how long a holder stays without a request.
const DefaultHolderIdle = 10 * time.Minute

// Files of a holder directory.
const (
	holderSock = "sock"
	holderPub  = "holder.pub" // the holder's ephemeral host key
	holderPID  = "holder.pid"
	holderLog  = "holder.log"
	holderLock = "holder.lock" // held by the serving holder
)

const (
	dialRequest = "dial@dstgen"
	// holderStartWait bounds how long a call waits for a holder it
	// started to listen; past it the call connects directly.
	holderStartWait = 3 * time.Second
	// holderHandshake bounds the local SSH handshake with the holder.
	holderHandshake = 3 * time.Second
	holderLogMax    = 1 << 20
)

// buildDir is where this build's holder lives inside a holder directory:
// build-<id>/, id naming this binary (its path, size and modification
// time). A client only ever talks to a holder of its own build — never to
// one an older dstgen, or a test binary, left serving (DESIGN: one holder
// per build).
func buildDir(dir string) string { return filepath.Join(dir, "build-"+buildID()) }

// buildID is a short hash of this executable's identity; "unknown" when
// the executable cannot be found.
func buildID() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return "unknown"
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", exe, fi.Size(), fi.ModTime().UnixNano()))
	return hex.EncodeToString(sum[:6])
}

// retireOtherBuilds asks the holders of other builds in dir to exit
// (SIGTERM, by the pid each wrote, after checking that pid still runs a
// holder): a new build replaces them instead of leaving them serving, and
// keeping their SSH sessions open, until they idle out.
func retireOtherBuilds(dir, mine string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "build-") || sub == mine {
			continue
		}
		b, err := os.ReadFile(filepath.Join(sub, holderPID))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), "holder-serve") {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
}

// DefaultHolderDir is $XDG_RUNTIME_DIR/dstgen when XDG_RUNTIME_DIR is set,
// else /tmp/dstgen-<uid>: private to the user either way, never shared.
func DefaultHolderDir() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "dstgen")
	}
	return filepath.Join(os.TempDir(), "dstgen-"+strconv.Itoa(os.Getuid()))
}

// checkPrivate refuses path unless it is owned by us, of the wanted kind,
// and closed to group and others: a holder directory or socket that
// someone else could control would see every command of the user.
func checkPrivate(path string, kind fs.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case kind == fs.ModeDir && !fi.IsDir():
		return fmt.Errorf("%s is not a directory", path)
	case kind == fs.ModeSocket && fi.Mode()&fs.ModeSocket == 0:
		return fmt.Errorf("%s is not a socket", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is owned by uid %d, not %d: refusing a holder another user controls", path, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o: refusing, it must not be accessible to group or others (chmod 700)", path, perm)
	}
	return nil
}

// ensurePrivateDir creates dir (0700) when create is set and it is missing,
// then checks it.
func ensurePrivateDir(dir string, create bool) error {
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create holder dir: %w", err)
		}
	}
	return checkPrivate(dir, fs.ModeDir)
}

// upstreamError is a dial failure the holder reports: it reached for the
// host and failed as a direct dial would (refused key, unreachable host),
// so retrying directly would only fail again.
type upstreamError struct{ msg string }

func (e *upstreamError) Error() string { return e.msg }

// holderDialReq is a connection's full identity, as the CLI call sees it.
// Every field takes part in the holder's pool key.
type holderDialReq struct {
	Address    string    `json:"address"`
	Port       int       `json:"port"`
	User       string    `json:"user"`
	Key        string    `json:"key"`
	KnownHosts string    `json:"known_hosts"`
	Jump       *env.Jump `json:"jump,omitempty"`
	Agent      bool      `json:"agent"`
	AuthSock   string    `json:"auth_sock"`
	AcceptNew  bool      `json:"accept_new"`
	KeepaliveS int       `json:"keepalive_s"`
}

type holderDialReply struct {
	Err string   `json:"err,omitempty"`
	Log []string `json:"log,omitempty"`
	// Grouping is the upstream connection's probed command grouping
	// (groupGrouped, groupPlain; groupUnknown when the probe did not
	// answer), so a call through the holder does not re-probe the host on
	// every command (see wrap).
	Grouping int32 `json:"grouping,omitempty"`
}

// holderLink is the SSH configuration of the private unix link between a
// CLI call and its holder: the holder's ephemeral host key is still
// verified (FixedHostKey), but the key exchange is plain curve25519 — the
// post-quantum hybrid x/crypto prefers guards recorded traffic against a
// future quantum computer, which a socket in a 0700 directory on this
// machine never crosses, and it is most of the handshake's CPU.
var holderLink = ssh.Config{
	KeyExchanges: []string{ssh.KeyExchangeCurve25519},
	Ciphers:      []string{ssh.CipherAES128GCM, ssh.CipherChaCha20Poly1305},
}

func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// holderRequest is h's identity under p's settings. Paths are made
// absolute: the holder runs in /.
func (p *Pool) holderRequest(h env.Host) holderDialReq {
	r := holderDialReq{
		Address: h.Address, Port: h.Port, User: h.User, Key: absPath(h.Key),
		KnownHosts: absPath(p.knownHostsOf(h)), Agent: p.env.SSH.Agent,
		AuthSock: os.Getenv("SSH_AUTH_SOCK"), AcceptNew: p.opt.AcceptNewHosts,
		KeepaliveS: p.env.SSH.KeepaliveS,
	}
	if p.authSock != nil {
		r.AuthSock = *p.authSock
	}
	if j := p.jumpOf(h); j != nil {
		jj := *j
		jj.Key = absPath(jj.Key)
		r.Jump = &jj
	}
	return r
}

// dialHolder reaches h through the holder, starting one when none answers
// and Holder.Start is set. An *upstreamError is the host's failure; any
// other error is the holder's, and the caller connects directly.
func (p *Pool) dialHolder(ctx context.Context, h env.Host) (*conn, error) {
	hd := p.opt.Holder
	if err := ensurePrivateDir(hd.Dir, hd.Start != nil); err != nil {
		return nil, err
	}
	bd := buildDir(hd.Dir)
	if err := ensurePrivateDir(bd, hd.Start != nil); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, DialTimeout+2*time.Second)
	defer cancel()
	nc, err := p.holderConnect(hctx, hd, bd)
	if err != nil {
		return nil, err
	}
	pub, err := readHolderKey(bd)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	sctx, scancel := context.WithTimeout(hctx, holderHandshake)
	client, err := handshake(sctx, nc, "holder", &ssh.ClientConfig{Config: holderLink, User: "dstgen", HostKeyCallback: ssh.FixedHostKey(pub), Timeout: holderHandshake})
	scancel()
	if err != nil {
		return nil, fmt.Errorf("holder handshake: %w", err)
	}
	body, _ := json.Marshal(p.holderRequest(h))
	ok, payload, err := sendRequest(hctx, client, dialRequest, body)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("holder dial request: %w", err)
	}
	var rep holderDialReply
	if err := json.Unmarshal(payload, &rep); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("holder dial reply: %w", err)
	}
	for _, l := range rep.Log {
		p.logf("%s", strings.TrimPrefix(l, "dstgen: "))
	}
	if !ok {
		_ = client.Close()
		return nil, &upstreamError{msg: rep.Err}
	}
	c := &conn{host: h.Name, client: client, viaHolder: true, dead: make(chan struct{})}
	c.grouping.Store(rep.Grouping)
	p.watch(c)
	go p.keepalive(c, p.keepaliveEvery())
	return c, nil
}

// sendRequest is Client.SendRequest bounded by ctx: a stopped holder never
// answers.
func sendRequest(ctx context.Context, c *ssh.Client, name string, body []byte) (bool, []byte, error) {
	type res struct {
		ok  bool
		p   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		ok, p, err := c.SendRequest(name, true, body)
		ch <- res{ok, p, err}
	}()
	select {
	case r := <-ch:
		return r.ok, r.p, r.err
	case <-ctx.Done():
		_ = c.Close()
		return false, nil, ctx.Err()
	}
}

func readHolderKey(dir string) (ssh.PublicKey, error) {
	path := filepath.Join(dir, holderPub)
	if err := checkPrivate(path, 0); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, fmt.Errorf("holder key %s: %w", path, err)
	}
	return k, nil
}

// holderConnect connects to the holder's socket, starting a holder when
// there is none (no socket, or a stale one nobody listens on).
func (p *Pool) holderConnect(ctx context.Context, hd *Holder, bd string) (net.Conn, error) {
	sock := filepath.Join(bd, holderSock)
	connect := func() (net.Conn, error) {
		if err := checkPrivate(sock, fs.ModeSocket); err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: time.Second}
		return d.DialContext(ctx, "unix", sock)
	}
	nc, err := connect()
	if err == nil || hd.Start == nil {
		return nc, err
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ECONNREFUSED) {
		return nil, err
	}
	retireOtherBuilds(hd.Dir, bd)
	if err := startHolder(hd, bd); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(holderStartWait)
	for {
		nc, err = connect()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return nc, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startHolder runs hd.Start detached: its own session (setsid), no stdin,
// output to holder.log in the private dir, working dir /. It must never
// hold the caller's stdout, or `$(dstgen exec …)` would wait for it.
func startHolder(hd *Holder, bd string) error {
	path := filepath.Join(bd, holderLog)
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if fi, err := os.Stat(path); err == nil && fi.Size() > holderLogMax {
		flags |= os.O_TRUNC
	}
	lf, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return fmt.Errorf("holder log: %w", err)
	}
	defer lf.Close()
	cmd := exec.Command(hd.Start[0], hd.Start[1:]...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start holder: %w", err)
	}
	// Reap it if it exits while we still run (a second holder finding
	// the directory already served); otherwise init adopts it.
	go func() { _ = cmd.Wait() }()
	return nil
}
