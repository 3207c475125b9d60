package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proxyEcho is a real TCP upstream echoing lines, closed with the test.
func proxyEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// proxyServe starts `dstgen proxy serve` (the real binary) with one proxy
// "echo" in front of a real echo upstream, waits for its serving line and
// returns the API and proxy addresses. At cleanup it is sent SIGTERM by
// its PID and must exit 0 having said status=stopped.
func proxyServe(t *testing.T) (api, listen string) {
	t.Helper()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "proxy", "serve", "--api", "127.0.0.1:0", "--proxy", "echo=127.0.0.1:0>"+proxyEcho(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var rest []string
		timeout := time.After(30 * time.Second)
	drain:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break drain
				}
				rest = append(rest, l)
			case <-timeout:
				_ = cmd.Process.Kill()
				t.Error("proxy serve did not stop within 30s of SIGTERM")
				return
			}
		}
		go func() { exited <- cmd.Wait() }()
		if err := <-exited; err != nil {
			t.Errorf("proxy serve after SIGTERM: %v", err)
		}
		if !strings.Contains(strings.Join(rest, "\n"), "status=stopped") {
			t.Errorf("proxy serve's last lines %q lack status=stopped", rest)
		}
	})
	deadline := time.After(60 * time.Second)
	for api == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("proxy serve exited before serving")
			}
			kv := parseKVLine(l)
			if kv["proxy"] == "echo" {
				listen = kv["listen"]
			}
			if kv["status"] == "serving" {
				api = kv["api"]
			}
		case <-deadline:
			t.Fatal("proxy serve: no status=serving within 60s")
		}
	}
	if listen == "" {
		t.Fatal("proxy serve printed no line for proxy echo")
	}
	return api, listen
}

func parseKVLine(l string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(l) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
}

func echoOnce(t *testing.T, addr, line string) error {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

// TestProxyCommandsEndToEnd drives a real `dstgen proxy serve` process
// with the client subcommands: list (key=value and --json), toxic add and
// remove (with --missing-ok), stats rising with traffic, disable cutting
// new connections and enable restoring them.
func TestProxyCommandsEndToEnd(t *testing.T) {
	api, listen := proxyServe(t)
	code, out, errs := runDstgen(t, "", "proxy", "list", "--api", api)
	if code != 0 || !strings.Contains(out, "proxy=echo enabled=true") || !strings.Contains(out, "bytes=0") {
		t.Fatalf("list: exit %d out %q err %q", code, out, errs)
	}
	code, out, errs = runDstgen(t, "", "proxy", "toxic", "add", "echo", "--api", api, "--type", "latency", "--attr", "latency=50", "--toxic-name", "dstgen-S1-w1")
	if code != 0 || !strings.Contains(out, "toxic=dstgen-S1-w1 type=latency stream=downstream toxicity=1 added=yes") {
		t.Fatalf("toxic add: exit %d out %q err %q", code, out, errs)
	}
	if err := echoOnce(t, listen, "hello"); err != nil {
		t.Fatalf("echo through the proxy: %v", err)
	}
	code, out, _ = runDstgen(t, "", "proxy", "list", "--api", api, "--json")
	var doc struct {
		Proxies []struct {
			Name   string
			Toxics []struct{ Name, Type string }
			Stats  struct {
				Connections     int64 `json:"connections"`
				BytesUpstream   int64 `json:"bytes_upstream"`
				BytesDownstream int64 `json:"bytes_downstream"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Proxies) != 1 {
		t.Fatalf("list --json: exit %d %v %q", code, err, out)
	}
	p := doc.Proxies[0]
	if len(p.Toxics) != 1 || p.Toxics[0].Name != "dstgen-S1-w1" || p.Stats.BytesUpstream < 6 || p.Stats.BytesDownstream < 6 || p.Stats.Connections != 1 {
		t.Errorf("list --json after traffic: %+v", p)
	}
	code, out, _ = runDstgen(t, "", "proxy", "stats", "echo", "--api", api)
	if code != 0 || !strings.Contains(out, "connections=1") || !strings.Contains(out, "bytes_upstream=6") {
		t.Errorf("stats: exit %d %q", code, out)
	}
	if code, out, errs = runDstgen(t, "", "proxy", "toxic", "remove", "echo", "dstgen-S1-w1", "--api", api); code != 0 || !strings.Contains(out, "removed=yes") {
		t.Errorf("toxic remove: exit %d %q %q", code, out, errs)
	}
	if code, _, errs = runDstgen(t, "", "proxy", "toxic", "remove", "echo", "dstgen-S1-w1", "--api", api); code != 2 || !strings.Contains(errs, "toxic not found") {
		t.Errorf("second toxic remove: exit %d %q, want 2 toxic not found", code, errs)
	}
	if code, out, _ = runDstgen(t, "", "proxy", "toxic", "remove", "echo", "dstgen-S1-w1", "--api", api, "--missing-ok"); code != 0 || !strings.Contains(out, "removed=absent") {
		t.Errorf("remove --missing-ok: exit %d %q", code, out)
	}
	if code, out, errs = runDstgen(t, "", "proxy", "disable", "echo", "--api", api); code != 0 || !strings.Contains(out, "enabled=false") {
		t.Fatalf("disable: exit %d %q %q", code, out, errs)
	}
	if err := echoOnce(t, listen, "cut"); err == nil {
		t.Error("a disabled proxy still carried a round trip")
	}
	if code, out, errs = runDstgen(t, "", "proxy", "enable", "echo", "--api", api); code != 0 || !strings.Contains(out, "enabled=true") {
		t.Fatalf("enable: exit %d %q %q", code, out, errs)
	}
	if err := echoOnce(t, listen, "back"); err != nil {
		t.Errorf("after enable: %v", err)
	}
}

// TestProxyCommandsBadInput: every bad input and an API nobody serves
// exit 2 with one line that names the problem.
func TestProxyCommandsBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := free.Addr().String()
	free.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"listen in use", []string{"proxy", "serve", "--api", "127.0.0.1:0", "--proxy", "p=" + taken + ">127.0.0.1:1"}, taken},
		{"api in use", []string{"proxy", "serve", "--api", taken}, taken},
		{"bad spec", []string{"proxy", "serve", "--proxy", "p=127.0.0.1:1"}, "NAME=LISTEN>UPSTREAM"},
		{"twice", []string{"proxy", "serve", "--api", "127.0.0.1:0", "--proxy", "p=127.0.0.1:0>a:1", "--proxy", "p=127.0.0.1:0>a:2"}, "named twice"},
		{"list unreachable", []string{"proxy", "list", "--api", dead}, dead + " unreachable"},
		{"stats unreachable", []string{"proxy", "stats", "p", "--api", dead}, dead + " unreachable"},
		{"disable unreachable", []string{"proxy", "disable", "p", "--api", dead}, dead + " unreachable"},
		{"no type", []string{"proxy", "toxic", "add", "p", "--toxic-name", "x", "--api", dead}, "--type and --toxic-name"},
		{"bad attr", []string{"proxy", "toxic", "add", "p", "--type", "latency", "--toxic-name", "x", "--attr", "latency", "--api", dead}, "KEY=VALUE"},
		{"bad stream", []string{"proxy", "toxic", "add", "p", "--type", "latency", "--toxic-name", "x", "--stream", "both", "--api", dead}, "want downstream or upstream"},
	} {
		code, out, errs := runDstgen(t, "", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d stdout %q stderr %q; want 2 and one line with %q", tc.name, code, out, errs, tc.want)
		}
	}
	// An undo script's remove with no server left is success: the toxics
	// died with it.
	if code, out, errs := runDstgen(t, "", "proxy", "toxic", "remove", "p", "dstgen-S1-w1", "--api", dead, "--missing-ok"); code != 0 || !strings.Contains(out, "removed=absent") {
		t.Errorf("remove --missing-ok without a server: exit %d %q %q", code, out, errs)
	}
}
