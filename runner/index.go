package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/internal/atomicfile"
)

// DefaultSessionDir is where the job index lives when no --session is given.
const DefaultSessionDir = "results/.jobs"

// IndexEntry is what the control node remembers about a job it started, so
// that a later process (the runner may be killed at any point) can find the
// job again without trusting its own memory.
type IndexEntry struct {
	Host    string    `json:"host"`
	Address string    `json:"address,omitempty"`
	Port    int       `json:"port,omitempty"`
	ID      string    `json:"job"`
	PID     int       `json:"pid,omitempty"`
	Workdir string    `json:"workdir"`
	Started time.Time `json:"started,omitzero"`
	Status  string    `json:"status,omitempty"` // last status seen
	Updated time.Time `json:"updated"`
}

// JobIndex is the local job index file, <session>/.dstgen/jobs.json. Writers
// take an exclusive flock and replace the file by rename, so concurrent
// dstgen processes never see a torn index.
type JobIndex struct {
	Path string
}

// NewJobIndex returns the index of a session directory ("" = default).
func NewJobIndex(sessionDir string) JobIndex {
	if sessionDir == "" {
		sessionDir = DefaultSessionDir
	}
	return JobIndex{Path: filepath.Join(sessionDir, ".dstgen", "jobs.json")}
}

// Load returns every entry; a missing index is empty, not an error.
func (x JobIndex) Load() ([]IndexEntry, error) {
	b, err := os.ReadFile(x.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job index: %w", err)
	}
	var es []IndexEntry
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(b, &es); err != nil {
		return nil, fmt.Errorf("%s: bad job index: %w", x.Path, err)
	}
	return es, nil
}

// Find returns the entry for host and id.
func (x JobIndex) Find(host, id string) (IndexEntry, bool, error) {
	es, err := x.Load()
	if err != nil {
		return IndexEntry{}, false, err
	}
	for _, e := range es {
		if e.Host == host && e.ID == id {
			return e, true, nil
		}
	}
	return IndexEntry{}, false, nil
}

// Put inserts or replaces the entry for (e.Host, e.ID).
func (x JobIndex) Put(e IndexEntry) error {
	if err := os.MkdirAll(filepath.Dir(x.Path), 0o755); err != nil {
		return fmt.Errorf("create job index dir: %w", err)
	}
	lock, err := os.OpenFile(x.Path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("open job index lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock job index: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway

	es, err := x.Load()
	if err != nil {
		return err
	}
	e.Updated = time.Now().UTC()
	i := slices.IndexFunc(es, func(o IndexEntry) bool { return o.Host == e.Host && o.ID == e.ID })
	if i >= 0 {
		if e.Started.IsZero() {
			e.Started = es[i].Started
		}
		if e.PID == 0 {
			e.PID = es[i].PID
		}
		es[i] = e
	} else {
		es = append(es, e)
	}
	b, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		return fmt.Errorf("encode job index: %w", err)
	}
	if err := atomicfile.Write(x.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write job index: %w", err)
	}
	return nil
}

// MergeJobs combines a host's remote listing with the index entries for that
// host: a job known to both is "both"; one only in the index (its directory
// gone, or the host unreachable for listing) is reported absent from the
// index's point of view so the caller can still status or stop it by id.
func MergeJobs(host string, remote []JobStatus, idx []IndexEntry) []JobStatus {
	out := slices.Clone(remote)
	for _, e := range idx {
		if e.Host != host {
			continue
		}
		i := slices.IndexFunc(out, func(s JobStatus) bool { return s.ID == e.ID })
		if i >= 0 {
			out[i].Source = "both"
			continue
		}
		out = append(out, JobStatus{Host: host, ID: e.ID, PID: e.PID, Started: e.Started, Status: StatusAbsent, Source: "index"})
	}
	slices.SortFunc(out, func(a, b JobStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}
