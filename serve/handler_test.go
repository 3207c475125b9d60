package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secret = "TOP-SECRET-outside-results"

// newTestServer builds the fixture RESULTS tree with a secret file beside
// it and symlinks inside it that point at the secret.
func newTestServer(t *testing.T) (*Server, string) {
	t.Helper()
	results := buildResults(t)
	outside := filepath.Join(filepath.Dir(results), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := filepath.Join(results, filepath.FromSlash(relDone))
	for link, target := range map[string]string{
		filepath.Join(sess, "artifacts", "leak.txt"):    filepath.Join(outside, "secret.txt"),
		filepath.Join(sess, "artifacts", "leakrel.txt"): filepath.Join("..", "..", "..", "..", "outside", "secret.txt"),
		filepath.Join(results, "linkdir"):               outside,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(results)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, results
}

func TestHandlerRefusesPathsOutOfResults(t *testing.T) {
	s, _ := newTestServer(t)
	cases := []struct {
		method, target string
		want           []int
	}{
		{"GET", "/file/../outside/secret.txt", []int{400}},
		{"GET", "/file/%2e%2e/outside/secret.txt", []int{400}},
		{"GET", "/file/%2E%2E/%2e%2e/outside/secret.txt", []int{400}},
		{"GET", "/file/mini%2f..%2f..%2foutside%2fsecret.txt", []int{400}},
		{"GET", "/file/%2Ftmp%2Fsecret.txt", []int{400}},
		{"GET", "/file/..%5coutside%5csecret.txt", []int{400}},
		{"GET", `/file/..\outside\secret.txt`, []int{400}},
		{"GET", "/file//etc/passwd", []int{400}},
		{"GET", "/file/./mini/20260610T100000Z/session-log.md", []int{400}},
		{"GET", "/file/" + relDone + "/artifacts/leak.txt", []int{404}},
		{"GET", "/file/" + relDone + "/artifacts/leakrel.txt", []int{404}},
		{"GET", "/file/linkdir/secret.txt", []int{404}},
		{"GET", "/file/" + relDone + "/artifacts", []int{404}}, // no directory listing
		{"GET", "/file/", []int{400}},
		{"GET", "/session/../outside/", []int{400}},
		{"GET", "/session/linkdir/", []int{404}},
		{"GET", "/session/mini/", []int{404}}, // a plan dir is no session
		{"GET", "/file/" + relDone + "/session-log.md%00.txt", []int{400}},
		{"POST", "/file/" + relDone + "/session-log.md", []int{405}},
		{"PUT", "/file/" + relDone + "/session-log.md", []int{405}},
		{"DELETE", "/", []int{405}},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.target, nil)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if !contains(c.want, rec.Code) {
				t.Errorf("status %d, want one of %v (body %q)", rec.Code, c.want, rec.Body.String())
			}
			if strings.Contains(rec.Body.String(), secret) {
				t.Errorf("body leaks the secret")
			}
		})
	}
}

// TestRealServerRefusesRawTraversal sends request lines byte for byte over
// TCP, so no client library cleans the path first.
func TestRealServerRefusesRawTraversal(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, target := range []string{
		"/file/../outside/secret.txt",
		"/file/%2e%2e/outside/secret.txt",
		"/file/" + relDone + "/../../../outside/secret.txt",
		"/file/linkdir/secret.txt",
		"/file/" + relDone + "/artifacts/leak.txt",
	} {
		status, body := rawGet(t, ts.Listener.Addr().String(), target)
		if !strings.HasPrefix(status, "HTTP/1.1 400") && !strings.HasPrefix(status, "HTTP/1.1 404") {
			t.Errorf("GET %s: %q, want 400 or 404", target, status)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s leaks the secret", target)
		}
	}
}

func rawGet(t *testing.T, addr, target string) (string, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target)
	br := bufio.NewReader(c)
	status, _ := br.ReadString('\n')
	rest, _ := io.ReadAll(io.LimitReader(br, 1<<20))
	return strings.TrimSpace(status), string(rest)
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestHandlerServesSessionFilesReadOnly(t *testing.T) {
	s, results := newTestServer(t)
	cases := []struct {
		method, target, ctype, body string
	}{
		{"GET", "/file/" + relInconclusive + "/artifacts/S1/history.jsonl", "text/plain; charset=utf-8", `"op_id"`},
		{"GET", "/file/" + relInconclusive + "/findings/report.html", "text/html; charset=utf-8", "Findings: quorumkv-core-guarantees"},
		{"GET", "/file/" + relInconclusive + "/findings/S1-run-linearizability.html", "text/html; charset=utf-8", "<script"},
		{"GET", "/file/" + relInconclusive + "/artifacts/S1/run.json", "application/json", `"dst-run/1"`},
		{"GET", "/file/" + relInconclusive + "/session-log.md", "text/plain; charset=utf-8", ""},
		{"HEAD", "/file/" + relInconclusive + "/findings/report.json", "application/json", ""},
		{"GET", "/static/style.css", "text/css; charset=utf-8", ".badge"},
		{"GET", "/", "text/html; charset=utf-8", relDone},
		{"GET", "/session/" + relDone + "/", "text/html; charset=utf-8", "report (HTML)"},
		{"GET", "/session/" + relRaw + "/", "text/html; charset=utf-8", "dstgen analyze " + results + "/" + relRaw},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(c.method, c.target, nil))
			h := rec.Header()
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			if got := h.Get("Content-Type"); got != c.ctype {
				t.Errorf("Content-Type %q, want %q", got, c.ctype)
			}
			if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v: want Cache-Control no-store and nosniff", h)
			}
			if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
				t.Errorf("CSP %q", csp)
			}
			if strings.HasPrefix(c.target, "/file/") && !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("a RESULTS file is served without the sandbox CSP: %q", h.Get("Content-Security-Policy"))
			}
			if c.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD has a body")
			}
			if !strings.Contains(rec.Body.String(), c.body) {
				t.Errorf("body lacks %q:\n%.600s", c.body, rec.Body.String())
			}
		})
	}
}

func TestContentType(t *testing.T) {
	for name, want := range map[string]string{
		"history.jsonl": "text/plain; charset=utf-8", "sut.log": "text/plain; charset=utf-8",
		"report.html": "text/html; charset=utf-8", "run.json": "application/json", "junit.xml": "text/xml; charset=utf-8",
		"bench.params": "text/plain; charset=utf-8", "shot.PNG": "image/png", "x.exe": "text/plain; charset=utf-8",
	} {
		if got := ContentType(name); got != want {
			t.Errorf("ContentType(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestHandlerServesASingleSession: RESULTS may be one session directory;
// its page is /session/ and its files are /file/<name>.
func TestHandlerServesASingleSession(t *testing.T) {
	results := buildResults(t)
	s, err := New(filepath.Join(results, filepath.FromSlash(relDone)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for target, want := range map[string]string{
		"/":                                `href="/session/"`,
		"/session/":                        `href="/file/findings/report.html"`,
		"/file/findings/report.html":       "Findings: mini",
		"/file/artifacts/S1/history.jsonl": `"op_id"`,
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, body lacks %q:\n%.400s", target, rec.Code, want, rec.Body.String())
		}
	}
}
