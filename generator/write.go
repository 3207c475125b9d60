package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Actions Init reports per file (and --dry-run lists without writing).
const (
	ActCreate    = "create"
	ActUpdate    = "update"
	ActUnchanged = "unchanged"
	ActSkip      = "skip (edited)"
	ActForce     = "update (forced over edits)"
)

// Bookkeeping files under the output directory. They are always rewritten:
// they describe the generation, they are not meant to be edited.
const (
	MetaDir      = ".dstgen"
	ManifestPath = MetaDir + "/manifest.json"
	ProfilePath  = MetaDir + "/profile.yml"
)

// neverWritten reports files a person owns; Init refuses to generate them
// even if a template tree names them.
func neverWritten(p string) bool { return p == "env.yml" }

// FileAction is what Init does (or, with --dry-run, would do) to one file.
type FileAction struct {
	Path   string `json:"path"`
	Action string `json:"action"`
}

// Manifest records the sha256 of every generated file as generated, so a
// later run can tell a hand edit (current content ≠ recorded hash) from a
// stale generation (current content = recorded hash).
type Manifest struct {
	Version int               `json:"version"`
	Files   map[string]string `json:"files"` // slash path → sha256 hex
	// SUTFiles are the files `init --agents` wrote outside the output
	// directory, by slash path relative to the SUT root; for AGENTS.md the
	// hash is of dstgen's marked block only, the rest being the project's.
	SUTFiles map[string]string `json:"sut_files,omitempty"`
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readManifest(out string) (Manifest, error) {
	m := Manifest{Version: 1, Files: map[string]string{}}
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(ManifestPath)))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("read manifest %s: %w", filepath.Join(out, ManifestPath), err)
	}
	if m.Files == nil {
		m.Files = map[string]string{}
	}
	return m, nil
}

// planActions decides, per rendered file, what writing it into out means.
// A file present on disk is overwritten only when it is exactly what the
// manifest says dstgen generated (or with force); anything else is a hand
// edit and is kept.
func planActions(out string, files []File, man Manifest, force bool) ([]FileAction, error) {
	acts := make([]FileAction, 0, len(files))
	for _, f := range files {
		if neverWritten(f.Path) {
			return nil, fmt.Errorf("template tree names %s, which dstgen never writes", f.Path)
		}
		cur, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(f.Path)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			acts = append(acts, FileAction{f.Path, ActCreate})
			continue
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", filepath.Join(out, f.Path), err)
		}
		curSum := sum(cur)
		switch {
		case curSum == sum(f.Data):
			acts = append(acts, FileAction{f.Path, ActUnchanged})
		case strings.HasPrefix(f.Path, MetaDir+"/"):
			acts = append(acts, FileAction{f.Path, ActUpdate})
		case man.Files[f.Path] == curSum:
			acts = append(acts, FileAction{f.Path, ActUpdate})
		case force:
			acts = append(acts, FileAction{f.Path, ActForce})
		default:
			acts = append(acts, FileAction{f.Path, ActSkip})
		}
	}
	return acts, nil
}

// newManifest records the hash of what is on disk after this run for every
// generated file: the new content where it was written, the previously
// recorded hash where a hand edit was kept (so the file stays "edited").
func newManifest(files []File, acts []FileAction, old Manifest) Manifest {
	m := Manifest{Version: 1, Files: map[string]string{}}
	for i, f := range files {
		if strings.HasPrefix(f.Path, MetaDir+"/") {
			continue
		}
		if acts[i].Action == ActSkip {
			if h, ok := old.Files[f.Path]; ok {
				m.Files[f.Path] = h
			}
			continue
		}
		m.Files[f.Path] = sum(f.Data)
	}
	return m
}

func (m Manifest) encode() []byte {
	b, _ := json.MarshalIndent(m, "", "  ") // map[string]string cannot fail
	return append(b, '\n')
}

// stage writes files into a fresh directory created next to out (same
// filesystem, so the final renames are atomic) and returns it.
func stage(out string, files []File) (string, error) {
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".dstgen-init-*")
	if err != nil {
		return "", fmt.Errorf("output dir %s is not writable: %w", parent, err)
	}
	// MkdirTemp makes the dir private; it becomes testing/ on first run.
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("stage in %s: %w", parent, err)
	}
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("stage %s: %w", f.Path, err)
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("stage %s: %w", f.Path, err)
		}
		// WriteFile honours the umask; scripts must be executable.
		if err := os.Chmod(p, f.Mode); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("stage %s: %w", f.Path, err)
		}
	}
	return tmp, nil
}

// commit moves the staged files that acts says to write into out. A new
// output directory is one rename; an existing one gets every directory
// created first, then one rename per file, so a failure leaves each file
// either old or new, never half-written.
func commit(tmp, out string, files []File, acts []FileAction) error {
	if _, err := os.Lstat(out); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp, out); err != nil {
			return fmt.Errorf("move generated files to %s: %w", out, err)
		}
		return nil
	}
	var todo []string
	dirs := map[string]bool{}
	for i, f := range files {
		switch acts[i].Action {
		case ActCreate, ActUpdate, ActForce:
			todo = append(todo, f.Path)
			dirs[path.Dir(f.Path)] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		if err := os.MkdirAll(filepath.Join(out, filepath.FromSlash(d)), 0o755); err != nil {
			return fmt.Errorf("output dir %s is not writable: %w", out, err)
		}
	}
	// The manifest goes last: it vouches for what is on disk, so if a
	// rename fails part-way it still describes the files left as they were
	// (otherwise they would read as hand-edited on the next run).
	sort.SliceStable(todo, func(i, j int) bool { return todo[j] == ManifestPath && todo[i] != ManifestPath })
	for _, p := range todo {
		if err := os.Rename(filepath.Join(tmp, filepath.FromSlash(p)), filepath.Join(out, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(out, p), err)
		}
	}
	return nil
}
