package runner

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/atomicfile"
	"golang.org/x/crypto/ssh"
)

// holderChannels bounds the channels a holder keeps open on one upstream
// connection: below OpenSSH's default MaxSessions (10), which every CLI
// call sharing that connection counts against.
const holderChannels = 9

// ErrHolderRunning is ServeHolder's answer when another holder already
// serves the directory.
var ErrHolderRunning = errors.New("another holder serves this directory")

// ServeHolder serves the connection holder on dir until ctx ends or no
// request came for idle (0 means DefaultHolderIdle). It refuses a dir that
// is not the user's own and private. log gets one line per event, never a
// secret (key material stays in memory; only paths and addresses are
// named).
func ServeHolder(ctx context.Context, dir string, idle time.Duration, log io.Writer) error {
	if idle <= 0 {
		idle = DefaultHolderIdle
	}
	if log == nil {
		log = io.Discard
	}
	if err := ensurePrivateDir(dir, true); err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	// This build's own directory: a client of another build never finds
	// this holder (buildDir).
	dir = buildDir(dir)
	if err := ensurePrivateDir(dir, true); err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, holderLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return ErrHolderRunning
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("holder: host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return fmt.Errorf("holder: host key: %w", err)
	}
	// The key goes in before the socket: a client that sees the socket
	// can always verify whom it talks to.
	if err := atomicfile.Write(filepath.Join(dir, holderPub), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	sock := filepath.Join(dir, holderSock)
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("holder: listen: %w", err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, holderPID), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	defer os.Remove(filepath.Join(dir, holderPID))

	cfg := &ssh.ServerConfig{Config: holderLink, NoClientAuth: true}
	cfg.AddHostKey(signer)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &holderServer{ctx: ctx, cfg: cfg, log: log, pools: map[string]*holderEntry{}, last: time.Now()}
	fmt.Fprintf(log, "dstgen holder: pid %d serving %s, idle exit after %s\n", os.Getpid(), sock, idle)

	go func() {
		t := time.NewTicker(min(max(idle/10, 10*time.Millisecond), time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				_ = ln.Close()
				return
			case <-t.C:
			}
			if s.idleFor() >= idle {
				fmt.Fprintf(log, "dstgen holder: idle for %s; exiting\n", idle)
				cancel()
			}
		}
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.closeAll()
			return fmt.Errorf("holder: accept: %w", err)
		}
		go s.serve(nc)
	}
	s.closeAll()
	return nil
}

type holderServer struct {
	ctx context.Context
	cfg *ssh.ServerConfig
	log io.Writer

	mu     sync.Mutex
	pools  map[string]*holderEntry // by connection identity
	active int                     // CLI connections open now
	last   time.Time               // last connect or disconnect
}

// holderEntry is one connection identity: its own Pool (so its own
// known_hosts, key, agent and jump) and the channel budget of its
// upstream connection.
type holderEntry struct {
	pool   *Pool
	sem    chan struct{}
	dialMu sync.Mutex // one dial at a time, so capture belongs to it

	logMu   sync.Mutex
	capture *[]string
	log     io.Writer
}

// Write receives the entry's Pool diagnostics: during a dial they go back
// to the CLI call (accepted host keys must be seen by the user), else to
// the holder's log.
func (e *holderEntry) Write(b []byte) (int, error) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	if e.capture != nil {
		*e.capture = append(*e.capture, string(b))
		return len(b), nil
	}
	return e.log.Write(b)
}

func (s *holderServer) idleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return 0
	}
	return time.Since(s.last)
}

func (s *holderServer) enter(delta int) {
	s.mu.Lock()
	s.active += delta
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *holderServer) closeAll() {
	s.mu.Lock()
	pools := s.pools
	s.pools = map[string]*holderEntry{}
	s.mu.Unlock()
	for _, e := range pools {
		_ = e.pool.Close()
	}
}

func (s *holderServer) entry(req holderDialReq) *holderEntry {
	key, _ := json.Marshal(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.pools[string(key)]; e != nil {
		return e
	}
	e := &holderEntry{sem: make(chan struct{}, holderChannels), log: s.log}
	ev := &env.Env{SSH: env.SSH{User: req.User, Key: req.Key, Agent: req.Agent, KnownHosts: req.KnownHosts, KeepaliveS: req.KeepaliveS}}
	e.pool = NewPool(ev, Options{AcceptNewHosts: req.AcceptNew, Log: e})
	sock := req.AuthSock
	e.pool.authSock = &sock
	e.pool.bare = true
	s.pools[string(key)] = e
	return e
}

// upstream returns the verified upstream connection for req and the
// diagnostics of its dial.
func (s *holderServer) upstream(req holderDialReq) (*holderEntry, *conn, []string, error) {
	e := s.entry(req)
	e.dialMu.Lock()
	defer e.dialMu.Unlock()
	var logs []string
	e.logMu.Lock()
	e.capture = &logs
	e.logMu.Unlock()
	defer func() {
		e.logMu.Lock()
		e.capture = nil
		e.logMu.Unlock()
	}()
	h := env.Host{Name: net.JoinHostPort(req.Address, strconv.Itoa(req.Port)), Address: req.Address, Port: req.Port,
		User: req.User, Key: req.Key, KnownHosts: req.KnownHosts, Jump: req.Jump}
	ctx, cancel := context.WithTimeout(s.ctx, DialTimeout)
	defer cancel()
	c, fresh, err := e.pool.conn(ctx, h)
	if err != nil {
		return nil, nil, logs, err
	}
	if !fresh {
		// known_hosts may have changed since the dial: a key the user
		// removed must not keep being trusted through the holder.
		if err := e.pool.verifyHostKey(req.KnownHosts, c.hostname, c.remote, c.hostKey, false); err != nil {
			e.pool.drop(c)
			return nil, nil, logs, fmt.Errorf("pooled connection: %w", err)
		}
	}
	return e, c, logs, nil
}

// serve is one CLI connection: peer check, handshake, the dial request,
// then every channel proxied to the upstream connection.
func (s *holderServer) serve(nc net.Conn) {
	defer nc.Close()
	if err := peerIsMe(nc); err != nil {
		fmt.Fprintf(s.log, "dstgen holder: refused a connection: %v\n", err)
		return
	}
	s.enter(1)
	defer s.enter(-1)
	_ = nc.SetDeadline(time.Now().Add(holderHandshake))
	sc, chans, reqs, err := ssh.NewServerConn(nc, s.cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	var first *ssh.Request
	select {
	case first = <-reqs:
	case <-time.After(holderHandshake):
	}
	if first == nil || first.Type != dialRequest {
		return
	}
	_ = nc.SetDeadline(time.Time{})
	var req holderDialReq
	if err := json.Unmarshal(first.Payload, &req); err != nil {
		_ = first.Reply(false, mustJSON(holderDialReply{Err: "bad dial request: " + err.Error()}))
		return
	}
	e, up, logs, err := s.upstream(req)
	if err != nil {
		_ = first.Reply(false, mustJSON(holderDialReply{Err: err.Error(), Log: logs}))
		return
	}
	if err := first.Reply(true, mustJSON(holderDialReply{Log: logs, Grouping: probeGrouping(s.ctx, up)})); err != nil {
		return
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for r := range reqs {
			// The CLI's keepalive: answer for the upstream connection.
			_ = r.Reply(r.Type == "keepalive@openssh.com" && up.alive(), nil)
		}
	}()
	go func() {
		select {
		case <-up.dead:
			_ = sc.Close()
		case <-done:
		}
	}()
	for ch := range chans {
		go proxyChannel(ch, up, e.sem, done)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// proxyChannel opens nc's channel on the upstream connection and relays
// data, stderr, requests (exec, subsystem, signal, exit-status), EOF and
// close both ways. The downstream side is closed only after every byte of
// upstream output went out, so an exit status never overtakes output.
func proxyChannel(nc ssh.NewChannel, up *conn, sem chan struct{}, done <-chan struct{}) {
	select {
	case sem <- struct{}{}:
	case <-done:
		_ = nc.Reject(ssh.ResourceShortage, "caller gone")
		return
	case <-up.dead:
		_ = nc.Reject(ssh.ConnectionFailed, "upstream connection lost")
		return
	case <-time.After(MaxTimeout):
		_ = nc.Reject(ssh.ResourceShortage, fmt.Sprintf("holder: no free channel on the upstream connection within %s", MaxTimeout))
		return
	}
	defer func() { <-sem }()
	type opened struct {
		ch   ssh.Channel
		reqs <-chan *ssh.Request
		err  error
	}
	oc := make(chan opened, 1)
	go func() {
		ch, reqs, err := up.client.OpenChannel(nc.ChannelType(), nc.ExtraData())
		oc <- opened{ch, reqs, err}
	}()
	var o opened
	select {
	case o = <-oc:
	case <-done:
		go func() {
			if o := <-oc; o.err == nil {
				_ = o.ch.Close()
			}
		}()
		_ = nc.Reject(ssh.ConnectionFailed, "caller gone")
		return
	}
	if o.err != nil {
		var oce *ssh.OpenChannelError
		if errors.As(o.err, &oce) {
			_ = nc.Reject(oce.Reason, oce.Message)
		} else {
			_ = nc.Reject(ssh.ConnectionFailed, o.err.Error())
		}
		return
	}
	uch := o.ch
	dch, dreqs, err := nc.Accept()
	if err != nil {
		_ = uch.Close()
		return
	}
	go func() {
		_, _ = io.Copy(uch, dch)
		_ = uch.CloseWrite()
	}()
	go func() {
		for r := range dreqs {
			ok, err := uch.SendRequest(r.Type, r.WantReply, r.Payload)
			_ = r.Reply(ok && err == nil, nil)
		}
		// The caller closed its channel (done, or killed a timed-out
		// command's session): close upstream too.
		_ = uch.Close()
	}()
	var out sync.WaitGroup
	out.Add(2)
	go func() {
		defer out.Done()
		_, _ = io.Copy(dch, uch)
	}()
	go func() {
		defer out.Done()
		_, _ = io.Copy(dch.Stderr(), uch.Stderr())
	}()
	for r := range o.reqs {
		ok, err := dch.SendRequest(r.Type, r.WantReply, r.Payload)
		_ = r.Reply(ok && err == nil, nil)
	}
	out.Wait()
	_ = dch.CloseWrite()
	_ = dch.Close()
}
