package runner

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/fileline"
)

// Bounds of the remote contract. MaxTimeout is the hard ceiling of every
// SSH round trip; DialTimeout bounds TCP connect + SSH handshake.
const (
	MaxTimeout  = 30 * time.Second
	DialTimeout = 10 * time.Second
	// maxSessions stays below OpenSSH's default MaxSessions (10) so that a
	// busy host still has channels free for SFTP and the kill sessions of
	// timed-out commands.
	maxSessions = 6
	jumpSlot    = "\x00jump"
)

// Options tune a Pool. The zero value is the strict default: 30 s bound,
// known_hosts enforced, no diagnostics.
type Options struct {
	// Timeout bounds every round trip; 0 means MaxTimeout and anything
	// larger is capped to it (the CLI rejects such values before).
	Timeout time.Duration
	// AcceptNewHosts trusts an unknown host key on first use and appends it
	// to known_hosts. A changed key is refused regardless.
	AcceptNewHosts bool
	// Log receives diagnostics (reconnects, accepted keys), one whole line
	// per Write and one Write at a time; may be nil.
	Log io.Writer
	// Holder, when set, routes connections through the per-user
	// connection holder (see holder.go) so that they outlive the process;
	// nil connects directly. Any failure of the holder itself falls back
	// to a direct connection.
	Holder *Holder
}

// Pool holds one SSH connection per host, shared by every session of the
// process (what ControlMaster does for OpenSSH): a connection is dialled on
// first use, kept alive with keepalive@openssh.com, dropped when it dies
// and redialled by the next caller. Safe for concurrent use.
type Pool struct {
	env *env.Env
	opt Options

	mu     sync.Mutex
	slots  map[string]*slot
	closed bool

	khMu  sync.Mutex // serialises known_hosts reads and appends
	logMu sync.Mutex // one diagnostic line at a time: Options.Log need not be safe for concurrent use

	// holderOff is set once the holder failed this Pool: every later dial
	// goes direct, so a dead holder costs one fallback, not one per host.
	holderOff atomic.Bool
	// authSock overrides SSH_AUTH_SOCK; the holder dials with the agent
	// of the CLI call it serves, not its own environment's.
	authSock *string
	// bare leaves the "env.yml:LINE: host NAME (ADDR)" prefix off dial
	// errors: a holder's caller adds its own.
	bare bool
}

// slot is one host's connection state. lock is a channel so that waiting
// for another goroutine's dial respects the caller's context.
type slot struct {
	lock chan struct{}
	c    *conn
	sem  chan struct{}
}

type conn struct {
	host      string
	client    *ssh.Client
	viaHolder bool
	// hostname and hostKey are what the handshake verified, kept so that
	// the holder can re-verify a reused connection against known_hosts.
	hostname string
	remote   net.Addr
	hostKey  ssh.PublicKey
	dead     chan struct{} // closed when the SSH connection is gone
	// grouping is what the host's shell offers the command wrapper
	// (groupUnknown until a probe said), learnt once per connection.
	grouping  atomic.Int32
	closing   atomic.Bool // set by close, before dead is closed
	closeOnce sync.Once

	sftpMu sync.Mutex
	sftp   *sftp.Client
}

func (c *conn) alive() bool {
	if c.closing.Load() {
		return false
	}
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

func (c *conn) close() {
	c.closing.Store(true)
	c.closeOnce.Do(func() { _ = c.client.Close() })
}

// NewPool returns a Pool for the hosts of e. It dials nothing until used.
func NewPool(e *env.Env, o Options) *Pool {
	if o.Timeout <= 0 || o.Timeout > MaxTimeout {
		o.Timeout = MaxTimeout
	}
	return &Pool{env: e, opt: o, slots: map[string]*slot{}}
}

// Close closes every connection. Runs in flight fail with status "error".
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	slots := p.slots
	p.slots = map[string]*slot{}
	p.mu.Unlock()
	for _, s := range slots {
		s.lock <- struct{}{}
		if s.c != nil {
			s.c.sftpMu.Lock()
			if s.c.sftp != nil {
				_ = s.c.sftp.Close()
			}
			s.c.sftpMu.Unlock()
			s.c.close()
		}
		<-s.lock
	}
	return nil
}

func (p *Pool) logf(format string, args ...any) {
	if p.opt.Log != nil {
		line := fmt.Sprintf("dstgen: "+format+"\n", args...)
		// Dials, keepalives and sessions log from their own goroutines
		// (go test -race: two of them wrote one bytes.Buffer at once).
		p.logMu.Lock()
		defer p.logMu.Unlock()
		_, _ = io.WriteString(p.opt.Log, line)
	}
}

// bound is the time budget of one round trip: the smallest of
// Options.Timeout, env.yml's timeout_s and the caller's deadline.
func (p *Pool) bound(ctx context.Context) time.Duration {
	b := p.opt.Timeout
	if s := p.env.SSH.TimeoutS; s > 0 && time.Duration(s)*time.Second < b {
		b = time.Duration(s) * time.Second
	}
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left < b {
			b = left
		}
	}
	return b
}

func (p *Pool) slot(name string) (*slot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("connection pool is closed")
	}
	s := p.slots[name]
	if s == nil {
		s = &slot{lock: make(chan struct{}, 1), sem: make(chan struct{}, maxSessions)}
		p.slots[name] = s
	}
	return s, nil
}

// conn returns the live connection to h, dialling when there is none.
// fresh reports whether it was dialled by this call.
func (p *Pool) conn(ctx context.Context, h env.Host) (c *conn, fresh bool, err error) {
	s, err := p.slot(h.Name)
	if err != nil {
		return nil, false, err
	}
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("connect to %s: %w", displayName(h.Name), ctx.Err())
	}
	defer func() { <-s.lock }()
	if s.c != nil && s.c.alive() {
		return s.c, false, nil
	}
	if s.c != nil {
		p.logf("host %s: connection lost, reconnecting", displayName(h.Name))
		s.c.close()
		s.c = nil
	}
	c, err = p.dial(ctx, h)
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		// Close ran while we dialled; nobody would ever close this one.
		c.close()
		return nil, false, errors.New("connection pool is closed")
	}
	s.c = c
	return c, true, nil
}

// drop closes c, which failed under its caller, so that the next caller
// for its host redials. A holder connection that failed means the holder
// went away or lost its upstream, so later dials of this Pool go direct:
// decided here, because watch, which decides it for a connection that ends
// on its own, sees this close as ours and would not (TestHolderKilledMidCall
// under -race started a new holder instead).
func (p *Pool) drop(c *conn) {
	if c.viaHolder {
		p.holderOff.Store(true)
	}
	c.close()
}

// withDefaults fills what env.Load would: hosts built by hand get the same
// defaults rather than port 0 or an empty user.
func withDefaults(h env.Host) env.Host {
	if h.Port == 0 {
		h.Port = env.DefaultPort
	}
	if h.User == "" {
		h.User = env.DefaultUser
	}
	return h
}

// knownHostsOf is h's known_hosts file: its own, else ssh.known_hosts.
func (p *Pool) knownHostsOf(h env.Host) string {
	if h.KnownHosts != "" {
		return h.KnownHosts
	}
	return p.env.SSH.KnownHosts
}

// jumpOf is h's jump host: its own, else ssh.jump; nil for the jump host
// itself.
func (p *Pool) jumpOf(h env.Host) *env.Jump {
	if isJump(h.Name) {
		return nil
	}
	if h.Jump != nil {
		return h.Jump
	}
	return p.env.SSH.Jump
}

// dialErr prefixes a dial failure with the host the way every dial error
// starts, so that the user can find the entry to fix: "env.yml:LINE: host
// NAME (ADDR:PORT): ...", a *fileline.Error when env.yml gave the host a
// line. A holder's pool (bare) returns err as is: its caller adds its own
// prefix.
func (p *Pool) dialErr(h env.Host, err error) error {
	if p.bare {
		return err
	}
	h = withDefaults(h)
	what := fmt.Sprintf("host %s (%s)", displayName(h.Name), net.JoinHostPort(h.Address, strconv.Itoa(h.Port)))
	if h.Line > 0 && p.env.Path != "" {
		return fileline.Errorf(p.env.Path, h.Line, "%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (p *Pool) dial(ctx context.Context, h env.Host) (*conn, error) {
	h = withDefaults(h)
	if p.opt.Holder != nil && !p.holderOff.Load() && !isJump(h.Name) {
		c, err := p.dialHolder(ctx, h)
		if err == nil {
			return c, nil
		}
		var ue *upstreamError
		if errors.As(err, &ue) || ctx.Err() != nil {
			// The holder dialled and failed the same way a direct dial
			// would (refused key, unreachable host): say so, do not retry.
			return nil, p.dialErr(h, err)
		}
		p.holderOff.Store(true)
		p.logf("connection holder unavailable (%v); connecting directly", err)
	}
	return p.dialDirect(ctx, h)
}

func (p *Pool) dialDirect(ctx context.Context, h env.Host) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
	kh := p.knownHostsOf(h)
	cfg, done, err := p.clientConfig(addr, kh, h.User, h.Key)
	if err != nil {
		return nil, p.dialErr(h, err)
	}
	defer done()
	c := &conn{host: h.Name, dead: make(chan struct{}), hostname: addr}
	verify := cfg.HostKeyCallback
	cfg.HostKeyCallback = func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		if err := verify(hostname, remote, key); err != nil {
			return err
		}
		c.hostKey, c.remote = key, remote
		return nil
	}

	var nc net.Conn
	if j := p.jumpOf(h); j != nil {
		jh := withDefaults(env.Host{Name: jumpName(j, kh), Address: j.Host, Port: j.Port, User: j.User, Key: j.Key, KnownHosts: kh})
		jc, _, err := p.conn(dctx, jh)
		if err != nil {
			return nil, p.dialErr(h, err)
		}
		nc, err = jc.client.DialContext(dctx, "tcp", addr)
		if err != nil {
			return nil, p.dialErr(h, fmt.Errorf("connect through jump host %s: %w", net.JoinHostPort(jh.Address, strconv.Itoa(jh.Port)), err))
		}
	} else {
		d := net.Dialer{Timeout: DialTimeout}
		nc, err = d.DialContext(dctx, "tcp", addr)
		if err != nil {
			return nil, p.dialErr(h, fmt.Errorf("connect: %w", err))
		}
	}
	client, err := handshake(dctx, nc, addr, cfg)
	if err != nil {
		return nil, p.dialErr(h, err)
	}
	c.client = client
	p.watch(c)
	go p.keepalive(c, p.keepaliveEvery())
	return c, nil
}

// watch closes c.dead when the connection ends. A holder connection that
// ends without our asking means the holder went away (killed, idle exit
// racing a call, lost its upstream): later dials of this Pool go direct.
func (p *Pool) watch(c *conn) {
	go func() {
		_ = c.client.Wait()
		if c.viaHolder && !c.closing.Load() {
			p.holderOff.Store(true)
		}
		close(c.dead)
	}()
}

// jumpName is the pool slot of a jump host: one per jump identity, so two
// hosts behind different jumps (or verified against different
// known_hosts files) never share a jump connection.
func jumpName(j *env.Jump, knownHosts string) string {
	return jumpSlot + " " + j.User + "@" + j.Host + ":" + strconv.Itoa(j.Port) + " " + j.Key + " " + knownHosts
}

func isJump(name string) bool { return strings.HasPrefix(name, jumpSlot) }

// keepaliveEvery is env.yml's keepalive_s, capped at a third of the round
// trip bound. The keepalive is what unblocks SFTP calls (pkg/sftp takes no
// context) on a peer that went silent: it drops the connection after one
// interval plus a two-interval reply wait, so the cap keeps that within
// the bound (30 s, or less with --timeout) whatever keepalive_s says.
func (p *Pool) keepaliveEvery() time.Duration {
	every := time.Duration(p.env.SSH.KeepaliveS) * time.Second
	if every <= 0 {
		return 0
	}
	return min(every, max(p.bound(context.Background())/3, time.Second))
}

func displayName(name string) string {
	if isJump(name) {
		return "jump host"
	}
	return name
}

// handshake runs the SSH handshake on nc, closing nc when ctx ends first:
// ssh.NewClientConn has no context and a silent server would hang it.
func handshake(ctx context.Context, nc net.Conn, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	type res struct {
		c     ssh.Conn
		chans <-chan ssh.NewChannel
		reqs  <-chan *ssh.Request
		err   error
	}
	ch := make(chan res, 1)
	go func() {
		c, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
		ch <- res{c, chans, reqs, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			_ = nc.Close()
			return nil, r.err
		}
		return ssh.NewClient(r.c, r.chans, r.reqs), nil
	case <-ctx.Done():
		_ = nc.Close()
		if r := <-ch; r.err == nil {
			_ = r.c.Close()
		}
		return nil, fmt.Errorf("handshake: %w", ctx.Err())
	}
}

// keepalive sends keepalive@openssh.com every interval and closes the
// connection when a reply does not come within two intervals (OpenSSH's
// ServerAliveCountMax=2), so a silently dead peer is noticed and dropped.
func (p *Pool) keepalive(c *conn, every time.Duration) {
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.dead:
			return
		case <-t.C:
		}
		errc := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			errc <- err
		}()
		wait := time.NewTimer(max(2*every, 2*time.Second))
		select {
		case err := <-errc:
			wait.Stop()
			if err != nil {
				p.logf("host %s: keepalive failed: %v; dropping connection", displayName(c.host), err)
				c.close()
				return
			}
		case <-wait.C:
			p.logf("host %s: no keepalive reply; dropping connection", displayName(c.host))
			c.close()
			return
		case <-c.dead:
			wait.Stop()
			return
		}
	}
}

// clientConfig builds the SSH config for one dial. done releases the agent
// connection once the handshake is over.
func (p *Pool) clientConfig(addr, knownHosts, user, keyPath string) (*ssh.ClientConfig, func(), error) {
	var signers []ssh.Signer
	encrypted := false
	if keyPath != "" {
		pem, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, nil, fmt.Errorf("read key: %w", err)
		}
		s, err := ssh.ParsePrivateKey(pem)
		var pm *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &pm):
			encrypted = true
		case err != nil:
			return nil, nil, fmt.Errorf("key %s is not a usable private key: %v", keyPath, err)
		default:
			signers = append(signers, s)
		}
	}
	done := func() {}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if p.authSock != nil {
		sock = *p.authSock
	}
	useAgent := sock != "" && (p.env.SSH.Agent || keyPath == "" || encrypted)
	if useAgent {
		ac, err := net.DialTimeout("unix", sock, 2*time.Second)
		if err != nil {
			if len(signers) == 0 {
				return nil, nil, fmt.Errorf("ssh-agent at SSH_AUTH_SOCK unreachable: %v%s", err, encHint(encrypted, keyPath))
			}
		} else {
			done = func() { _ = ac.Close() }
			as, err := agent.NewClient(ac).Signers()
			if err == nil {
				signers = append(signers, as...)
			}
		}
	}
	if len(signers) == 0 {
		done()
		switch {
		case encrypted && sock == "":
			return nil, nil, fmt.Errorf("key %s is passphrase-protected and no ssh-agent is running (SSH_AUTH_SOCK unset); dstgen never prompts: load it with ssh-add or use an unencrypted key", keyPath)
		case encrypted:
			return nil, nil, fmt.Errorf("key %s is passphrase-protected and the ssh-agent holds no keys; load it with ssh-add", keyPath)
		default:
			return nil, nil, errors.New("no SSH credentials: set ssh.key in env.yml or run an ssh-agent (SSH_AUTH_SOCK)")
		}
	}
	cfg := &ssh.ClientConfig{
		User:              user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		HostKeyCallback:   p.hostKeyCallback(knownHosts),
		HostKeyAlgorithms: p.knownAlgorithms(knownHosts, addr),
		Timeout:           DialTimeout,
	}
	return cfg, done, nil
}

func encHint(encrypted bool, keyPath string) string {
	if encrypted {
		return fmt.Sprintf(" (key %s is passphrase-protected and needs the agent)", keyPath)
	}
	return ""
}

// knownHosts loads the known_hosts callback of path; a missing file knows
// nobody (and hostKeyCallback says that it is missing).
func knownHostsFile(path string) (ssh.HostKeyCallback, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return func(string, net.Addr, ssh.PublicKey) error { return &knownhosts.KeyError{} }, nil
	}
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, fmt.Errorf("read known_hosts %s: %w", path, err)
	}
	return cb, nil
}

// knownAlgorithms restricts the negotiated host key algorithms to the types
// known_hosts already holds for addr. Without it the server may present
// another of its keys (say RSA when ed25519 is recorded) and a genuine
// host would look like a mismatch.
func (p *Pool) knownAlgorithms(path, addr string) []string {
	p.khMu.Lock()
	cb, err := knownHostsFile(path)
	p.khMu.Unlock()
	if err != nil {
		return nil
	}
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	var ke *knownhosts.KeyError
	if !errors.As(cb(addr, &net.TCPAddr{}, probe), &ke) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		t := k.Key.Type()
		list := []string{t}
		if t == ssh.KeyAlgoRSA {
			list = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, a := range list {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// hostKeyCallback verifies against the known_hosts file path. Refusals
// give the SHA256 fingerprint so the user can compare it out of band;
// the caller prefixes the host.
func (p *Pool) hostKeyCallback(path string) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		return p.verifyHostKey(path, hostname, remote, key, p.opt.AcceptNewHosts)
	}
}

func (p *Pool) verifyHostKey(path, hostname string, remote net.Addr, key ssh.PublicKey, acceptNew bool) error {
	p.khMu.Lock()
	defer p.khMu.Unlock()
	if _, ok := remote.(*net.TCPAddr); !ok {
		remote = &net.TCPAddr{}
	}
	cb, err := knownHostsFile(path)
	if err != nil {
		return err
	}
	err = cb(hostname, remote, key)
	if err == nil {
		return nil
	}
	fp := ssh.FingerprintSHA256(key)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return fmt.Errorf("refusing host key %s %s: %v", key.Type(), fp, err)
	}
	if len(ke.Want) > 0 {
		w := ke.Want[0]
		return fmt.Errorf("HOST KEY MISMATCH, refusing: server offered %s %s but %s:%d records %s %s (possible man-in-the-middle; fix known_hosts only if the change is expected)",
			key.Type(), fp, w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key))
	}
	if !acceptNew {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("unknown host key %s %s: known_hosts %s does not exist (create it with `ssh-keyscan%s %s >> %s` after checking the fingerprint, or run once with --accept-new-host), refusing",
				key.Type(), fp, path, keyscanPort(hostname), keyscanHost(hostname), path)
		}
		return fmt.Errorf("unknown host key %s %s (not in %s), refusing; verify it and rerun with --accept-new-host to trust it on first use", key.Type(), fp, path)
	}
	if err := appendKnownHost(path, hostname, key); err != nil {
		return fmt.Errorf("accept new host key: %w", err)
	}
	p.logf("host %s: accepted new host key %s %s into %s", hostname, key.Type(), fp, path)
	return nil
}

// keyscanHost and keyscanPort split a dialled "host:port" for the
// ssh-keyscan hint.
func keyscanHost(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return h
}

func keyscanPort(hostport string) string {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil || port == "22" {
		return ""
	}
	return " -p " + port
}

func appendKnownHost(path, hostname string, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = "\n" + line
		}
	}
	if _, err := f.WriteString(line); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// SFTP returns h's SFTP client, opened once per connection and reopened
// after the connection was dropped. Callers must not Close it; Pool.Close
// does.
func (p *Pool) SFTP(ctx context.Context, h env.Host) (*sftp.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, p.bound(ctx))
	defer cancel()
	c, _, err := p.conn(ctx, h)
	if err != nil {
		return nil, err
	}
	c.sftpMu.Lock()
	defer c.sftpMu.Unlock()
	if c.sftp != nil {
		return c.sftp, nil
	}
	type res struct {
		s   *sftp.Client
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := sftp.NewClient(c.client)
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("open sftp on %s: %w", h.Name, r.err)
		}
		c.sftp = r.s
		return r.s, nil
	case <-ctx.Done():
		// A subsystem request that does not answer means a wedged
		// connection: drop it so the next call starts clean.
		p.drop(c)
		return nil, fmt.Errorf("open sftp on %s: %w", h.Name, ctx.Err())
	}
}
