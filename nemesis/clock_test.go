package nemesis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/session"
)

func TestClockSkewRefusals(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	cases := []struct {
		name    string
		params  map[string]string
		wantErr string
	}{
		{"not opted in", map[string]string{"offset": "30s"}, "clock-skew is opt-in"},
		{"allow not true", map[string]string{"offset": "30s", "allow": "yes"}, "set params allow=true"},
		{"no offset", map[string]string{"allow": "true"}, "params offset is required"},
		{"bad offset", map[string]string{"allow": "true", "offset": "30"}, `params offset "30"`},
		{"zero offset", map[string]string{"allow": "true", "offset": "0s"}, "nothing to skew"},
		// A namespace host runs on this kernel: its clock is this machine's.
		{"same kernel", map[string]string{"allow": "true", "offset": "30s"}, "shares the control node's kernel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mustNemesis(t, "clock-skew").Inject(ctx, x, Fault{Epoch: "S6-w1", Targets: hosts, Params: c.params})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line with %q", err, c.wantErr)
			}
			if _, err := os.Stat(undoDir(hosts[0].Workdir)); !os.IsNotExist(err) {
				t.Errorf("a refused clock-skew armed an undo: %v", err)
			}
		})
	}
}

// fakeDate is a `date` for the scripts under test: it keeps a simulated
// host clock as an offset from the real one in a file, so `date -s` moves
// only that. Everything else in the scripts runs for real.
const fakeDate = `#!/bin/sh
skew=$(cat "$DSTGEN_TEST_SKEW")
case "$1" in
+%s%N) echo $(( $(/bin/date +%s%N) + skew )) ;;
+%s) echo $(( ($(/bin/date +%s%N) + skew) / 1000000000 )) ;;
-s) t=${2#@}; sec=${t%.*}; frac=$(echo "${t#*.}" | sed 's/^0*//; s/^$/0/')
    [ -n "$DSTGEN_TEST_DATE_FAIL" ] && { echo "date: cannot set date: Operation not permitted" >&2; exit 1; }
    echo $(( sec * 1000000000 + frac - $(/bin/date +%s%N) )) > "$DSTGEN_TEST_SKEW"
    echo "$2" >> "$DSTGEN_TEST_SET" ;;
*) exec /bin/date "$@" ;;
esac
`

// fakeClockHost is a local shell whose `date` is fakeDate: a host with
// its own clock, which this kernel cannot give a namespace.
type fakeClockHost struct {
	dir, skew, set string
	fail           bool
}

func newFakeClockHost(t *testing.T) *fakeClockHost {
	t.Helper()
	dir := t.TempDir()
	f := &fakeClockHost{dir: dir, skew: filepath.Join(dir, "skew"), set: filepath.Join(dir, "set")}
	if err := os.WriteFile(filepath.Join(dir, "date"), []byte(fakeDate), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.skew, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeClockHost) Run(ctx context.Context, h env.Host, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+f.dir+":"+os.Getenv("PATH"), "DSTGEN_TEST_SKEW="+f.skew, "DSTGEN_TEST_SET="+f.set)
	if f.fail {
		cmd.Env = append(cmd.Env, "DSTGEN_TEST_DATE_FAIL=1")
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// skewNow is the simulated host clock's offset from the real one.
func (f *fakeClockHost) skewNow(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(f.skew)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(n)
}

func (f *fakeClockHost) sets(t *testing.T) int {
	b, _ := os.ReadFile(f.set)
	return len(strings.Fields(string(b)))
}

func TestClockSetScriptComputesTheNewTime(t *testing.T) {
	cases := []struct {
		now    string
		offset time.Duration
		want   string
	}{
		{"1700000000123456789", 30 * time.Second, "@1700000030.123456789"},
		{"1700000000123456789", -2 * time.Minute, "@1699999880.123456789"},
		{"1700000000000000005", 1500 * time.Millisecond, "@1700000001.500000005"},
	}
	for _, c := range cases {
		t.Run(c.offset.String(), func(t *testing.T) {
			dir := t.TempDir()
			shim := "#!/bin/sh\ncase \"$1\" in +%s%N) echo " + c.now + ";; -s) echo \"$2\" > " + filepath.Join(dir, "set") + ";; esac\n"
			if err := os.WriteFile(filepath.Join(dir, "date"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", "-c", clockSetScript(c.offset))
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "set"))
			if strings.TrimSpace(string(got)) != c.want {
				t.Errorf("date -s %q, want %q", strings.TrimSpace(string(got)), c.want)
			}
		})
	}
}

func TestClockSkewOnAHostWithItsOwnClock(t *testing.T) {
	ctx := context.Background()
	n := clockSkewNemesis{localBootID: func() (string, error) { return "control-node-boot-id", nil }}
	hostOf := func(t *testing.T) Host {
		return Host{Host: env.Host{Name: "far"}, Workdir: t.TempDir()}
	}
	params := map[string]string{"allow": "true", "offset": "30s"}

	t.Run("inject, evidence, heal", func(t *testing.T) {
		f, h := newFakeClockHost(t), hostOf(t)
		a, err := n.Inject(ctx, f, Fault{Epoch: "S6-w1", Targets: []Host{h}, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		if s := f.skewNow(t); (s - 30*time.Second).Abs() > time.Second {
			t.Fatalf("host clock off by %s after inject, want 30s", s)
		}
		ev, err := a.Evidence(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != "clock_offset" || ev.Verdict != session.SignalChanged || ev.Delta == nil || (time.Duration(*ev.Delta)-30*time.Second).Abs() > time.Second {
			t.Errorf("evidence %+v, want clock_offset changed by ≈30s", ev)
		}
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if s := f.skewNow(t); s.Abs() > time.Second {
			t.Errorf("host clock off by %s after heal, want ≈0", s)
		}
		// Heal again, then HealAll: the clock is moved back once only.
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := HealAll(ctx, f, []Host{h}); err != nil {
			t.Fatal(err)
		}
		if s, k := f.skewNow(t), f.sets(t); s.Abs() > time.Second || k != 2 {
			t.Errorf("after heal, heal, HealAll: off by %s with %d date -s, want ≈0 and 2", s, k)
		}
	})
	t.Run("HealAll after a crash", func(t *testing.T) {
		f, h := newFakeClockHost(t), hostOf(t)
		if _, err := n.Inject(ctx, f, Fault{Epoch: "S6-w2", Targets: []Host{h}, Params: map[string]string{"allow": "true", "offset": "-2m"}}); err != nil {
			t.Fatal(err)
		}
		removed, err := HealAll(ctx, f, []Host{h})
		if err != nil {
			t.Fatal(err)
		}
		if s := f.skewNow(t); s.Abs() > time.Second || len(removed) != 1 || removed[0].What != "undo S6-w2.clock-skew" {
			t.Errorf("after HealAll: off by %s, removed %+v; want ≈0 and the undo", s, removed)
		}
	})
	t.Run("HealAll after NTP put the clock right", func(t *testing.T) {
		// The run died mid-window; NTP corrected the skewed clock; then
		// `dstgen heal --all`. An undo of "now − offset" would skew it the
		// other way: it puts it back to its reference instead.
		f, h := newFakeClockHost(t), hostOf(t)
		if _, err := n.Inject(ctx, f, Fault{Epoch: "S6-w5", Targets: []Host{h}, Params: params}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.skew, []byte("0\n"), 0o644); err != nil { // NTP
			t.Fatal(err)
		}
		if _, err := HealAll(ctx, f, []Host{h}); err != nil {
			t.Fatal(err)
		}
		if s := f.skewNow(t); s.Abs() > time.Second {
			t.Errorf("after NTP and HealAll the host clock is off by %s, want ≈0", s)
		}
	})
	t.Run("undo armed, skew never applied", func(t *testing.T) {
		f, h := newFakeClockHost(t), hostOf(t)
		if err := armUndo(ctx, f, h, "S6-w3", clockUndoKind, clockUndoScript(h.Workdir, "S6-w3", 30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := HealAll(ctx, f, []Host{h}); err != nil {
			t.Fatal(err)
		}
		if s, k := f.skewNow(t), f.sets(t); s != 0 || k != 0 {
			t.Errorf("an undo of a skew never applied moved the clock by %s (%d date -s)", s, k)
		}
	})
	t.Run("date -s fails", func(t *testing.T) {
		f, h := newFakeClockHost(t), hostOf(t)
		f.fail = true
		_, err := n.Inject(ctx, f, Fault{Epoch: "S6-w4", Targets: []Host{h}, Params: params})
		if err == nil || !strings.Contains(err.Error(), "Operation not permitted") {
			t.Fatalf("err %v, want date's refusal", err)
		}
		if _, err := os.Stat(skewMarker(h.Workdir, "S6-w4")); !os.IsNotExist(err) {
			t.Errorf("marker left after a failed date -s: %v", err)
		}
		f.fail = false
		if _, err := HealAll(ctx, f, []Host{h}); err != nil || f.sets(t) != 0 {
			t.Errorf("HealAll after a failed skew: %v, %d date -s; want none", err, f.sets(t))
		}
	})
}
