package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/exitcode"
)

func TestServeBadInputExits2(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing RESULTS", []string{"serve", filepath.Join(dir, "nope")}, "no such file or directory"},
		{"RESULTS is a file", []string{"serve", file}, "is not a directory"},
		{"port out of range", []string{"serve", dir, "--port", "70000"}, "--port 70000"},
		{"port in use", []string{"serve", dir, "--port", busyPort}, "listen"},
		{"two RESULTS", []string{"serve", dir, dir}, "accepts at most 1 arg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, c.args...)
			if code != exitcode.BadInput || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("code %d, stderr %q (want exit 2 and one line with %q), stdout %q", code, errOut, c.want, out)
			}
		})
	}
}

func TestServeDefaultResultsNamesWhereItLooked(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, errOut := runCLI(t, "serve", "--port", "0")
	if code != exitcode.BadInput || !strings.Contains(errOut, "looked for testing/results and ./results") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

// TestServeListsAndShutsDownOnCancel runs the command as a user does: it
// prints the URL, answers on it, and exits 0 once its context (SIGINT or
// SIGTERM in main) is cancelled.
func TestServeListsAndShutsDownOnCancel(t *testing.T) {
	results := t.TempDir()
	sess := filepath.Join(results, "myplan", "20260601T100000Z")
	if err := os.MkdirAll(filepath.Join(sess, "artifacts", "S1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sess, "artifacts", "S1", "history.jsonl"), []byte(`{"op_id":"1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	var errb strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", results, "--port", "0"}, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	url := ""
	for url == "" && sc.Scan() {
		lines = append(lines, sc.Text())
		if u, ok := strings.CutPrefix(sc.Text(), "url="); ok {
			url = u
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" || !strings.HasPrefix(url, "http://127.0.0.1:") || lines[0] != "results="+results+" sessions=1" {
		cancel()
		t.Fatalf("output %q, stderr %q", lines, errb.String())
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for path, want := range map[string]string{"": "myplan/20260601T100000Z", "file/myplan/20260601T100000Z/artifacts/S1/history.jsonl": `"op_id"`} {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", url+path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q", url+path, resp.StatusCode, want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Errorf("exit %d after cancel, stderr %q", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of its context's cancel")
	}
	if _, err := client.Get(url); err == nil {
		t.Errorf("still answering after shutdown")
	}
}
