package orchestrator

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/session"
)

// TestSessionLayoutAndRunRecord: the session dirs exist, the log gets
// timestamped lines, and a run record written by WriteRun loads back
// through the analyzer's loader.
func TestSessionLayoutAndRunRecord(t *testing.T) {
	dir := session.NewDir(t.TempDir(), "my-plan", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if !strings.HasSuffix(dir, filepath.Join("my-plan", "20260102T030405Z")) {
		t.Fatalf("session dir %s", dir)
	}
	var out bytes.Buffer
	s, err := openSession(dir, "my-plan", "plan.md", &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{session.LogsDir, session.MetricsDir, session.ArtifactsDir} {
		if st, err := os.Stat(filepath.Join(dir, d)); err != nil || !st.IsDir() {
			t.Errorf("%s missing: %v", d, err)
		}
	}
	s.Logf("unit=%s phase=%s", "S1", "fault")
	log, _ := os.ReadFile(filepath.Join(dir, session.SessionLog))
	if !strings.HasPrefix(string(log), "# Session log: my-plan @ 20260102T030405Z") || !strings.Contains(string(log), "Z unit=S1 phase=fault\n") || out.String() != "unit=S1 phase=fault\n" {
		t.Errorf("log %q out %q", log, out.String())
	}
	if h, err := session.ReadHeader(dir); err != nil || h.SessionDir != dir || h.Plan != "plan.md" {
		t.Errorf("header %+v %v", h, err)
	}
	p := filepath.Join(s.ArtifactDir("S4/api"), "run.json")
	if !strings.HasSuffix(p, filepath.Join("artifacts", "S4", "api", "run.json")) {
		t.Errorf("arm artifact dir %s", p)
	}
	if err := writeRun(p, &session.Run{Scenario: "S4", Arm: "S4/api", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	r, err := session.LoadRun(p)
	if err != nil || r.Seed != 3 || r.Attempted || r.ID() != "S4/api" {
		t.Errorf("loaded %+v %v", r, err)
	}
	if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temp file left: %v", err)
	}
}

func TestJobIDFits(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, unit := range []string{"S1", long} {
		id := jobID("wl", unit, "20260102T030405Z")
		if len(id) > 64 || !strings.HasSuffix(id, "-20260102T030405Z") || !strings.HasPrefix(id, "wl-") {
			t.Errorf("jobID(%q) = %q", unit, id)
		}
	}
}

// TestStatusOf covers the three states of a detached run from its files.
func TestStatusOf(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pid   int
		rc    string
		state string
	}{
		{"running: our own pid, no rc", os.Getpid(), "", StateRunning},
		{"finished: rc written", gone.Process.Pid, "0", stateFinished},
		{"lost: pid gone, no rc", gone.Process.Pid, "", StateLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(tc.pid)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.rc != "" {
				if err := os.WriteFile(filepath.Join(dir, rcFile), []byte(tc.rc+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, session.SessionLog), []byte("- 2026-01-01T00:00:00Z checkpoint scenario=S1 phase=fault elapsed=3s ops=4 window=S1-w1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := StatusOf(dir)
			if err != nil || s.State != tc.state || s.Phase != "fault" || s.Unit != "S1" {
				t.Errorf("%+v %v", s, err)
			}
		})
	}
	if _, err := StatusOf(t.TempDir()); err == nil {
		t.Error("a dir without run.pid gave a status")
	}
}

// TestKeepBest: a later reading replaces an earlier one only when it is
// stronger, so one "changed" mid-window is not lost to an "unchanged"
// after the system recovered.
func TestKeepBest(t *testing.T) {
	var cur *session.Evidence
	for _, v := range []string{session.SignalAbsent, session.SignalChanged, session.SignalUnchanged} {
		cur = keepBest(cur, session.Evidence{Kind: "k", Verdict: v})
	}
	if cur.Verdict != session.SignalChanged {
		t.Errorf("kept %s", cur.Verdict)
	}
}
