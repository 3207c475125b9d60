package demo

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// The demo's simulated hosts are SSH servers inside the dstgen process, so
// the runner, the nemesis and the generated Taskfile talk real SSH (host
// key verification, public-key auth, exec, SFTP) without an sshd, root or
// a remote machine. A command runs as the current user with /bin/sh, the
// way OpenSSH's sshd runs it for a login whose shell is /bin/sh.

// handshakeTimeout bounds an SSH handshake: a client that connects and
// says nothing must not hold a goroutine forever.
const handshakeTimeout = 10 * time.Second

// outputDrain bounds how long a finished command's output pipes may stay
// open (held by a child that did not redirect them) before the exit
// status is sent anyway; sshd would wait for them, a demo must not hang.
const outputDrain = 2 * time.Second

// Keys are the demo's SSH credentials: the client key every host accepts.
type Keys struct {
	// Signer is the client's private key.
	Signer ssh.Signer
	// PEM is the client's private key in OpenSSH format, for a key file.
	PEM []byte
}

// NewKeys makes a fresh ed25519 client key.
func NewKeys() (Keys, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Keys{}, fmt.Errorf("client key: %w", err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return Keys{}, fmt.Errorf("client key: %w", err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "dstgen demo client")
	if err != nil {
		return Keys{}, fmt.Errorf("client key: %w", err)
	}
	return Keys{Signer: s, PEM: pem.EncodeToMemory(blk)}, nil
}

// WriteKey writes the client key to path with mode 0600 (ssh refuses
// group- or world-readable keys).
func (k Keys) WriteKey(path string) error {
	if err := os.WriteFile(path, k.PEM, 0o600); err != nil {
		return fmt.Errorf("write client key: %w", err)
	}
	return nil
}

// Host is one simulated host: an SSH server on 127.0.0.1 with its own
// host key and work dir.
type Host struct {
	// Name is the host's name in env.yml.
	Name string
	// Workdir is where its commands start and its files live.
	Workdir string

	env     []string // on top of this process's environment, for every command
	hostKey ssh.Signer
	ln      net.Listener
	cfg     *ssh.ServerConfig
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	procs map[*os.Process]struct{}
}

// StartHost starts the SSH server of host name on 127.0.0.1 (a free port),
// accepting only client's public key. Commands run in workdir (created),
// with env (KEY=value) on top of this process's environment: the demo puts
// its bin/ first on PATH there, as an install would on a real host. It
// serves until Close or until ctx ends.
func StartHost(ctx context.Context, name, workdir string, client ssh.PublicKey, avoid []int, env ...string) (*Host, error) {
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		return nil, fmt.Errorf("host %s: work dir: %w", name, err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("host %s: host key: %w", name, err)
	}
	hk, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("host %s: host key: %w", name, err)
	}
	want := client.Marshal()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if string(k.Marshal()) == string(want) {
				return nil, nil
			}
			return nil, errors.New("unknown public key")
		},
	}
	cfg.AddHostKey(hk)
	ln, err := listenAvoiding(avoid)
	if err != nil {
		return nil, fmt.Errorf("host %s: listen: %w", name, err)
	}
	h := &Host{Name: name, Workdir: workdir, env: env, hostKey: hk, ln: ln, cfg: cfg,
		conns: map[net.Conn]struct{}{}, procs: map[*os.Process]struct{}{}}
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.wg.Add(1)
	go h.accept()
	go func() {
		<-h.ctx.Done()
		_ = h.ln.Close()
	}()
	return h, nil
}

// Port is the port the host's SSH server listens on.
// listenAvoiding listens on a loopback port the kernel picks, never one
// of avoid: ports the demo reserved for its kvnodes and proxies and
// closed again until they bind, which the kernel would otherwise hand to
// the next listener (a concurrent part's sshd took a proxy's port: "bind:
// address already in use"). A refused pick stays open until the end, so
// it is not picked again; at most 64 tries.
func listenAvoiding(avoid []int) (net.Listener, error) {
	var skipped []net.Listener
	defer func() {
		for _, l := range skipped {
			_ = l.Close()
		}
	}()
	for range 64 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		if !slices.Contains(avoid, ln.Addr().(*net.TCPAddr).Port) {
			return ln, nil
		}
		skipped = append(skipped, ln)
	}
	return nil, errors.New("no loopback port outside the reserved ones in 64 tries")
}

func (h *Host) Port() int { return h.ln.Addr().(*net.TCPAddr).Port }

// KnownHostsLine is the host's known_hosts entry ([127.0.0.1]:port key).
func (h *Host) KnownHostsLine() string {
	return knownhosts.Line([]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(h.Port()))}, h.hostKey.PublicKey())
}

// Close stops accepting, kills the process groups of commands still
// running in a session (not detached jobs: they left the session on
// purpose, and are stopped the way a user stops them), closes every
// connection and waits for the handlers.
func (h *Host) Close() error {
	h.cancel()
	_ = h.ln.Close()
	h.mu.Lock()
	for c := range h.conns {
		_ = c.Close()
	}
	for p := range h.procs {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("host %s: handlers still running 10s after close", h.Name)
	}
}

func (h *Host) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return // closed
		}
		h.mu.Lock()
		if h.ctx.Err() != nil {
			h.mu.Unlock()
			_ = c.Close()
			return
		}
		h.conns[c] = struct{}{}
		h.wg.Add(1)
		h.mu.Unlock()
		go func() {
			defer h.wg.Done()
			defer func() {
				h.mu.Lock()
				delete(h.conns, c)
				h.mu.Unlock()
				_ = c.Close()
			}()
			h.serveConn(c)
		}()
	}
}

func (h *Host) serveConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(c, h.cfg)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	defer sc.Close()
	go func() {
		for r := range reqs {
			// keepalive@openssh.com is how the runner tells a live
			// connection from a dead one; anything else is refused.
			if r.WantReply {
				_ = r.Reply(r.Type == "keepalive@openssh.com", nil)
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.session(ch, creqs)
		}()
	}
}

// session serves one session channel: env, exec and the sftp subsystem.
func (h *Host) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	for r := range reqs {
		switch r.Type {
		case "env":
			var kv struct{ Name, Value string }
			if err := ssh.Unmarshal(r.Payload, &kv); err != nil {
				_ = r.Reply(false, nil)
				continue
			}
			env = append(env, kv.Name+"="+kv.Value)
			_ = r.Reply(true, nil)
		case "exec":
			var p struct{ Command string }
			if err := ssh.Unmarshal(r.Payload, &p); err != nil {
				_ = r.Reply(false, nil)
				continue
			}
			_ = r.Reply(true, nil)
			go drain(reqs)
			code := h.run(ch, p.Command, env)
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
			return
		case "subsystem":
			var p struct{ Name string }
			if err := ssh.Unmarshal(r.Payload, &p); err != nil || p.Name != "sftp" {
				_ = r.Reply(false, nil)
				continue
			}
			srv, err := sftp.NewServer(ch, sftp.WithServerWorkingDirectory(h.Workdir))
			if err != nil {
				_ = r.Reply(false, nil)
				continue
			}
			_ = r.Reply(true, nil)
			go drain(reqs)
			code := 0
			if err := srv.Serve(); err != nil && !errors.Is(err, io.EOF) {
				code = 1
			}
			_ = srv.Close()
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
			return
		default:
			// pty-req, shell, x11, agent forwarding: not a demo host's job.
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
		}
	}
}

// drain answers the requests that arrive after a session started (e.g. a
// signal) so the client never waits on a reply.
func drain(reqs <-chan *ssh.Request) {
	for r := range reqs {
		if r.WantReply {
			_ = r.Reply(false, nil)
		}
	}
}

// run runs command with /bin/sh in its own process group and returns its
// exit status (128+signal when killed, as a shell reports it).
func (h *Host) run(ch ssh.Channel, command string, env []string) int {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = h.Workdir
	cmd.Env = append(append(append(os.Environ(), h.env...), "HOME="+h.Workdir, "DSTGEN_DEMO_HOST="+h.Name), env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputDrain
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "dstgen demo: stdin: %v\n", err)
		return 255
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "dstgen demo: %v\n", err)
		return 255
	}
	h.mu.Lock()
	h.procs[cmd.Process] = struct{}{}
	h.mu.Unlock()
	// Stdin is copied by our own goroutine and never waited for: a client
	// that never sends EOF must not keep the session open after the
	// command exited.
	go func() {
		_, _ = io.Copy(in, ch)
		_ = in.Close()
	}()
	err = cmd.Wait()
	h.mu.Lock()
	delete(h.procs, cmd.Process)
	h.mu.Unlock()
	if cmd.ProcessState == nil {
		return 255
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := cmd.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	_ = err
	return 255
}

// WriteKnownHosts writes the known_hosts file of hosts to path.
func WriteKnownHosts(path string, hosts []*Host) error {
	var b []byte
	for _, h := range hosts {
		b = append(b, h.KnownHostsLine()+"\n"...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	return nil
}
