package nemesis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dstgen/dstgen/session"
)

// tmpfsDir mounts a small tmpfs on a new directory and unmounts it when
// the test ends: the kind of data dir the testbed gives disk-full.
func tmpfsDir(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// statfsFree is the free space of dir, read here.
func statfsFree(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

func TestDiskFullFillsTmpfsAndHealRestores(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	dir := tmpfsDir(t, "8m")
	hosts[0].SUT = &SUT{DataDir: dir}
	before := statfsFree(t, dir)
	a, err := mustNemesis(t, "disk-full").Inject(ctx, x, Fault{Epoch: "S5-w1", Targets: hosts})
	if err != nil {
		t.Fatal(err)
	}
	if free := statfsFree(t, dir); free > fullMargin {
		t.Errorf("free %d bytes after disk-full, want ≈ 0", free)
	}
	err = os.WriteFile(filepath.Join(dir, "sut-write"), make([]byte, 64<<10), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a write into the full data dir: %v, want ENOSPC", err)
	}
	_ = os.Remove(filepath.Join(dir, "sut-write"))
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "free_bytes" || ev.Verdict != session.SignalChanged || ev.Delta == nil || *ev.Delta >= 0 || !strings.Contains(ev.Raw, "ENOSPC") {
		t.Errorf("evidence %+v, want free_bytes changed with a negative delta and the ENOSPC probe", ev)
	}
	tc, err := a.TargetCheck(ctx)
	if err != nil || tc == nil || tc.Verdict != session.SignalChanged {
		t.Errorf("target check %+v, %v; want the fill file non-empty", tc, err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if free := statfsFree(t, dir); free < before-fullMargin {
		t.Errorf("free %d after heal, want back near %d", free, before)
	}
	if _, err := os.Stat(fillPath(dir, "S5-w1")); !os.IsNotExist(err) {
		t.Errorf("fill file after heal: %v, want gone", err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Errorf("second heal: %v", err)
	}
}

func TestHealAllRemovesFillFilesLeftBehind(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	dir := tmpfsDir(t, "8m")
	hosts[0].SUT = &SUT{DataDir: dir}
	if _, err := mustNemesis(t, "disk-full").Inject(ctx, x, Fault{Epoch: "S5-w2", Targets: hosts}); err != nil {
		t.Fatal(err)
	}
	// A fill file without its undo script (copied by hand from a log) is
	// swept by its tag; a file without the tag stays.
	stray := filepath.Join(dir, ".dstgen-fill-by-hand")
	keep := filepath.Join(dir, "sut-data")
	for _, p := range []string{stray, keep} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := HealAll(ctx, x, hosts)
	if err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, r := range removed {
		what = append(what, r.What)
	}
	if got := strings.Join(what, "|"); got != "undo S5-w2.disk-full|fill file "+stray {
		t.Errorf("removed %q, want the undo and the stray fill file", got)
	}
	for _, p := range []string{fillPath(dir, "S5-w2"), stray} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after HealAll: %v, want gone", p, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("HealAll touched an untagged file: %v", err)
	}
	if free := statfsFree(t, dir); free <= fullMargin {
		t.Errorf("free %d after HealAll, want the space back", free)
	}
}

func TestDiskFullRefusals(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	dir := t.TempDir() // the real disk the tests run on: more than 1MiB free
	cases := []struct {
		name    string
		sut     *SUT
		params  map[string]string
		wantErr string
	}{
		{"free space over max", &SUT{DataDir: dir}, map[string]string{"max": "1MiB"}, "more than max 1MiB; refusing to fill a real disk"},
		{"unreadable max", &SUT{DataDir: dir}, map[string]string{"max": "lots"}, `params max "lots"`},
		{"no data dir", &SUT{PIDFile: "/x"}, nil, "has no data dir"},
		{"no SUT", nil, nil, "has no data dir"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := hosts[0]
			h.SUT = c.sut
			_, err := mustNemesis(t, "disk-full").Inject(ctx, x, Fault{Epoch: "S5-w3", Targets: []Host{h}, Params: c.params})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a refused disk-full wrote %v", ents)
			}
			if _, err := os.Stat(undoDir(h.Workdir)); !os.IsNotExist(err) {
				t.Errorf("a refused disk-full armed an undo: %v", err)
			}
		})
	}
}
