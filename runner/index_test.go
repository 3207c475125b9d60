package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestJobIndexConcurrentPut(t *testing.T) {
	x := NewJobIndex(t.TempDir())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := x.Put(IndexEntry{Host: "h", ID: fmt.Sprintf("j%02d", i), PID: 100 + i, Workdir: "/w"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	es, err := x.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 20 {
		t.Fatalf("index holds %d entries after 20 concurrent puts, want 20", len(es))
	}
	// Update keeps pid and start when the update does not know them.
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := x.Put(IndexEntry{Host: "h", ID: "j03", PID: 7, Started: start}); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(IndexEntry{Host: "h", ID: "j03", Status: StatusFinished}); err != nil {
		t.Fatal(err)
	}
	e, ok, err := x.Find("h", "j03")
	if err != nil || !ok || e.PID != 7 || !e.Started.Equal(start) || e.Status != StatusFinished {
		t.Errorf("after update = %+v ok=%v err=%v", e, ok, err)
	}
	if _, ok, _ := x.Find("other", "j03"); ok {
		t.Error("Find matched the wrong host")
	}
}

func TestJobIndexBadFile(t *testing.T) {
	dir := t.TempDir()
	x := NewJobIndex(dir)
	if es, err := x.Load(); err != nil || es != nil {
		t.Fatalf("missing index = %v, %v", es, err)
	}
	if err := os.MkdirAll(filepath.Dir(x.Path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(x.Path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Load(); err == nil || !strings.Contains(err.Error(), x.Path) {
		t.Errorf("bad index error = %v, want one naming %s", err, x.Path)
	}
	if err := x.Put(IndexEntry{Host: "h", ID: "a"}); err == nil {
		t.Error("Put over a corrupt index succeeded and would have dropped its entries")
	}
}

func TestMergeJobs(t *testing.T) {
	remote := []JobStatus{{Host: "h", ID: "b", Status: StatusRunning, Source: "remote"}}
	idx := []IndexEntry{{Host: "h", ID: "b"}, {Host: "h", ID: "a", PID: 9}, {Host: "g", ID: "c"}}
	got := MergeJobs("h", remote, idx)
	var s []string
	for _, j := range got {
		s = append(s, j.ID+":"+j.Status+":"+j.Source)
	}
	if strings.Join(s, ",") != "a:absent:index,b:running:both" {
		t.Errorf("merge = %v", s)
	}
	if remote[0].Source != "remote" {
		t.Error("MergeJobs modified its input")
	}
}
