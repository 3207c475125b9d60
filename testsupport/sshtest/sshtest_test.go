package sshtest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

func dial(t *testing.T, k *Keys, s *Server) *ssh.Client {
	t.Helper()
	pem, err := os.ReadFile(k.Key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := knownhosts.New(k.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", s.Addr, &ssh.ClientConfig{User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: cb, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", s.Addr, err, s.Log())
	}
	return c
}

func output(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.Output(cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(out)
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestStartLoginKillAndCleanup(t *testing.T) {
	Require(t)
	var pid int
	t.Run("server", func(t *testing.T) {
		k := NewKeys(t)
		s := Start(t, k, Options{})
		pid = s.PID
		k.Trust(t, s)
		c := dial(t, k, s)
		defer c.Close()
		if got := output(t, c, "id -un; echo $0"); got != User+"\nsh\n" {
			t.Fatalf("got %q", got)
		}
		if n := s.Accepted(); n != 1 {
			t.Fatalf("Accepted() = %d, want 1", n)
		}
		if n := KillSessionChildren(t, s); n < 1 {
			t.Fatalf("killed %d session processes", n)
		}
		errc := make(chan error, 1)
		go func() { errc <- c.Wait() }()
		select {
		case <-errc:
		case <-time.After(5 * time.Second):
			t.Fatal("connection still up after KillSessionChildren")
		}
		// The listener survives: a new connection works.
		c2 := dial(t, k, s)
		defer c2.Close()
		output(t, c2, "true")
	})
	if alive(pid) {
		t.Fatalf("sshd %d still running after cleanup", pid)
	}
}

func TestEncryptedKeyAndAgent(t *testing.T) {
	Require(t)
	k := NewKeys(t)
	pem, _ := os.ReadFile(k.EncryptedKey)
	if _, err := ssh.ParsePrivateKey(pem); err == nil {
		t.Fatal("EncryptedKey parses without a passphrase")
	}
	sock := StartAgent(t)
	AddKey(t, sock, k.EncryptedKey, k.Passphrase)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys, err := agent.NewClient(c).List()
	if err != nil || len(keys) != 1 {
		t.Fatalf("agent holds %d keys (%v), want 1", len(keys), err)
	}
	if !strings.HasPrefix(k.PublicKeys[1], keys[0].Type()+" ") || !strings.Contains(k.PublicKeys[1], strings.Fields(keys[0].String())[1]) {
		t.Fatalf("agent key %s is not EncryptedKey", keys[0].String())
	}
}

func TestNewNetReachableAndCleaned(t *testing.T) {
	Require(t)
	var names []string
	var bridge string
	t.Run("net", func(t *testing.T) {
		nt := NewNet(t, 2)
		bridge = nt.Bridge
		k := NewKeys(t)
		var srvs []*Server
		for _, h := range nt.Hosts {
			names = append(names, h.NS)
			srvs = append(srvs, Start(t, k, Options{NetNS: h.NS, Addr: h.Addr}))
		}
		k.Trust(t, srvs...)
		for i, s := range srvs {
			if s.Addr != nt.Hosts[i].Addr+":22" {
				t.Errorf("addr %s", s.Addr)
			}
			c := dial(t, k, s)
			// Each namespace has its own network: eth0 carries its address.
			if got := output(t, c, "ip -4 -o addr show eth0 2>/dev/null || cat /proc/net/fib_trie"); !strings.Contains(got, nt.Hosts[i].Addr) {
				t.Errorf("host %d does not see its address: %s", i, got)
			}
			c.Close()
		}
	})
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, n := range names {
		if strings.Contains(string(out), n) {
			t.Errorf("netns %s left behind", n)
		}
	}
	if err := exec.Command("ip", "link", "show", bridge).Run(); err == nil {
		t.Errorf("bridge %s left behind", bridge)
	}
}

func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 31 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(3 * time.Second)
	for len(descendants(cmd.Process.Pid, "sleep")) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	kids := descendants(cmd.Process.Pid, "sleep")
	if len(kids) != 2 {
		t.Fatalf("descendants = %v, want 2 sleeps", kids)
	}
	for _, p := range kids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	if got := descendants(cmd.Process.Pid, "nonexistent-comm"); len(got) != 0 {
		t.Fatalf("filter by comm failed: %v", got)
	}
}

// TestWorkdirKillsJobsAndCleans: a job group recorded under jobs/*/pgid is
// killed when the test that made the workdir ends, and the dir is removed;
// a pgid file holding junk is skipped, not fatal.
func TestWorkdirKillsJobsAndCleans(t *testing.T) {
	job := exec.Command("sleep", "60")
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- job.Wait() }()
	defer func() { _ = job.Process.Kill() }()

	var wd string
	t.Run("use", func(t *testing.T) {
		wd = Workdir(t)
		st, err := os.Stat(wd)
		if err != nil || st.Mode().Perm() != 0o777 {
			t.Fatalf("workdir %s: %v %v, want mode 0777", wd, st, err)
		}
		for id, pgid := range map[string]string{"j1": strconv.Itoa(job.Process.Pid) + "\n", "junk": "x1\n"} {
			d := filepath.Join(wd, "jobs", id)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "pgid"), []byte(pgid), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	select {
	case err := <-exited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("job ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("job group still running after the workdir's test ended")
	}
	if _, err := os.Stat(wd); !os.IsNotExist(err) {
		t.Errorf("workdir %s not removed: %v", wd, err)
	}
}
