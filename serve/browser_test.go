package serve

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, which scripts/test.sh installs.
const chromiumPath = "/usr/bin/chromium"

// TestBrowserShowsSessionsAndOpensAReport drives a real headless chromium
// over the fixture RESULTS: the index lists both analyzed sessions newest
// first with their verdict badges, the verdict filter narrows it, a click
// opens a session and another its report.html. Screenshots are kept as
// test artifacts (and copied to $DSTGEN_ARTIFACTS when set).
func TestBrowserShowsSessionsAndOpensAReport(t *testing.T) {
	exe := chromiumPath
	if _, err := os.Stat(exe); err != nil {
		p, lerr := exec.LookPath("chromium")
		if lerr != nil {
			t.Skipf("no chromium (%v; scripts/test.sh installs Debian's chromium)", err)
		}
		exe = p
	}
	s, _ := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopSrv := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- Serve(srvCtx, ln, s) }()
	defer func() {
		stopSrv()
		if err := <-served; err != nil {
			t.Errorf("Serve after shutdown: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()

	profile := t.TempDir()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox, // we run as root in CI
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	var tree []string
	defer func() {
		// Cancelling the allocator kills chromium and waits for it.
		cancelBrowser()
		cancelAlloc()
		if tree != nil {
			assertGone(t, append(tree, processesWith(profile)...))
		}
	}()

	rowsJS := `[...document.querySelectorAll("tr.session a.open")].map(a => a.textContent)`
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("sessions"))); err != nil {
		t.Fatalf("load index: %v", err)
	}
	pid := chromedp.FromContext(bctx).Browser.Process().Pid
	tree = append(descendants(pid), strconv.Itoa(pid))
	t.Logf("chromium pid %d, its processes %v", pid, tree)
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](rowsJS))
	if err != nil {
		t.Fatalf("read index rows: %v", err)
	}
	if want := []string{relDone, relInconclusive, relRaw}; !slices.Equal(rows, want) {
		t.Errorf("index rows %q, want newest first %q", rows, want)
	}
	table, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#sessions tbody")))
	if err != nil {
		t.Fatalf("read index: %v", err)
	}
	for _, want := range []string{"DONE", "INCONCLUSIVE", "S1 FAIL-nondeterministic", "S1 PASS-hardening", "S2 PASS-smoke", NotAnalyzed, "dstgen analyze"} {
		if !strings.Contains(table, want) {
			t.Errorf("index does not show %q:\n%s", want, table)
		}
	}
	// The badge is coloured: its computed background is the pass green.
	bg, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("tr.session .session-verdict")).backgroundColor`))
	if err != nil || bg != "rgb(212, 242, 212)" {
		t.Errorf("first session's badge background %q (%v), want the pass green rgb(212, 242, 212)", bg, err)
	}
	keepScreenshot(t, bctx, "serve-index.png")

	// Filter by verdict with the form, as a person would.
	if err := chromedp.Do(bctx, chromedp.SetValue(chromedp.ID("verdict"), "INCONCLUSIVE")); err != nil {
		t.Fatalf("choose verdict: %v", err)
	}
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.ID("apply"))); err != nil {
		t.Fatalf("submit filter: %v", err)
	}
	rows, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](rowsJS))
	loc, lerr := chromedp.Run(bctx, chromedp.Location())
	if err != nil || lerr != nil || !slices.Equal(rows, []string{relInconclusive}) || !strings.Contains(loc, "verdict=INCONCLUSIVE") {
		t.Errorf("after filtering on INCONCLUSIVE: rows %q at %s (%v, %v)", rows, loc, err, lerr)
	}

	// Into the session, then its report.
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS("a.open"))); err != nil {
		t.Fatalf("open session: %v", err)
	}
	verdict, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("session-verdict")))
	headline, herr := chromedp.Run(bctx, chromedp.Text(chromedp.ID("headline")))
	if err != nil || herr != nil || verdict != "INCONCLUSIVE" || !strings.Contains(headline, "nondeterministic oracle violation (S1)") {
		t.Errorf("session page: verdict %q headline %q (%v, %v)", verdict, headline, err, herr)
	}
	keepScreenshot(t, bctx, "serve-session.png")
	// The porcupine visualization runs its inline script under the
	// sandboxed CSP of RESULTS files: it draws into #canvas.
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(`//a[text()="visualization S1-run-linearizability"]`)); err != nil {
		t.Fatalf("open visualization: %v", err)
	}
	drawn, err := chromedp.Run(bctx, chromedp.Poll[int](`document.querySelectorAll("#canvas svg *").length`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || drawn == 0 {
		t.Errorf("visualization drew %d SVG elements (%v): its script did not run", drawn, err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+sessionURL(relInconclusive)), chromedp.WaitVisible(chromedp.ID("session-verdict"))); err != nil {
		t.Fatalf("back to the session: %v", err)
	}
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(`//a[text()="report (HTML)"]`)); err != nil {
		t.Fatalf("open report.html: %v", err)
	}
	report, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	loc, lerr = chromedp.Run(bctx, chromedp.Location())
	if err != nil || lerr != nil || !strings.HasSuffix(loc, "/file/"+relInconclusive+"/findings/report.html") {
		t.Errorf("report opened at %s (%v, %v)", loc, err, lerr)
	}
	for _, want := range []string{"Findings: quorumkv-core-guarantees @ 20260606T100000Z", "session verdict INCONCLUSIVE", "FAIL-nondeterministic"} {
		if !strings.Contains(report, want) {
			t.Errorf("report.html does not show %q", want)
		}
	}
}

// keepScreenshot saves a full-page PNG under the test's artifact dir and,
// when DSTGEN_ARTIFACTS is set, copies it there.
func keepScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("keep screenshot: %v", err)
		return
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
	if dir := os.Getenv("DSTGEN_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("DSTGEN_ARTIFACTS: %v", err)
			return
		}
		q := filepath.Join(dir, name)
		if err := os.WriteFile(q, png, 0o644); err != nil {
			t.Errorf("copy screenshot to DSTGEN_ARTIFACTS: %v", err)
			return
		}
		t.Logf("screenshot copied to %s", q)
	}
}

// assertGone checks that every process of chromium's tree has exited
// (gone, or a zombie waiting for init to reap it). The wait is bounded:
// chromedp's allocator cancel already killed and waited for the browser.
func assertGone(t *testing.T, pids []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, p := range pids {
			if st, ok := procStat(p); ok && st.state != "Z" {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("chromium processes left running: %v", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type stat struct{ state, ppid string }

// procStat reads a process's state and parent from /proc/PID/stat.
func procStat(pid string) (stat, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return stat{}, false
	}
	// The command name may hold spaces: fields start after its ")".
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return stat{}, false
	}
	return stat{state: f[0], ppid: f[1]}, true
}

// pids lists the numeric entries of /proc.
func pids() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// descendants lists the processes below pid.
func descendants(pid int) []string {
	parent := map[string]string{}
	for _, p := range pids() {
		if st, ok := procStat(p); ok {
			parent[p] = st.ppid
		}
	}
	var out []string
	frontier := []string{strconv.Itoa(pid)}
	for len(frontier) > 0 && len(out) < 10000 {
		next := frontier[0]
		frontier = frontier[1:]
		for p, pp := range parent {
			if pp == next {
				out = append(out, p)
				frontier = append(frontier, p)
			}
		}
	}
	return out
}

// processesWith lists the PIDs whose command line contains s.
func processesWith(s string) []string {
	var out []string
	for _, p := range pids() {
		cmd, err := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
		if err == nil && strings.Contains(string(cmd), s) {
			out = append(out, p)
		}
	}
	return out
}
