package author

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// manifests are the SUT files author mode never writes, whatever a plan
// says: build manifests and lock files decide what the SUT is.
var manifests = map[string]bool{
	"go.mod": true, "go.sum": true, "go.work": true, "go.work.sum": true,
	"cargo.toml": true, "cargo.lock": true,
	"package.json": true, "package-lock.json": true, "yarn.lock": true, "pnpm-lock.yaml": true, "tsconfig.json": true,
	"pyproject.toml": true, "setup.py": true, "setup.cfg": true, "requirements.txt": true, "poetry.lock": true,
	"pom.xml": true, "build.gradle": true, "build.gradle.kts": true,
}

// cleanTarget checks a plan's Target test file before anything touches
// the disk and returns it as a clean SUT-relative slash path. The refusals
// are the ones a reviewer must see: outside the tree, a manifest, inside
// .git, or a file the skeleton's language does not write.
func cleanTarget(target string, lang language) (string, error) {
	t := strings.TrimSpace(target)
	if t == "" {
		return "", errors.New("empty Target test file")
	}
	if strings.ContainsRune(t, '\\') || strings.ContainsRune(t, 0) {
		return "", fmt.Errorf("target %q: use a forward-slash SUT-relative path", t)
	}
	if path.IsAbs(t) || filepath.IsAbs(t) {
		return "", fmt.Errorf("target %q is absolute; it must be relative to the SUT root", t)
	}
	for _, part := range strings.Split(t, "/") {
		if part == ".." {
			return "", fmt.Errorf("target %q leaves the SUT tree (..)", t)
		}
	}
	rel := path.Clean(t)
	if rel == "." || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("target %q is not a file inside the SUT tree", t)
	}
	base := path.Base(rel)
	if manifests[strings.ToLower(base)] {
		return "", fmt.Errorf("target %q is the SUT's manifest %s; author mode never writes it", t, base)
	}
	for _, part := range strings.Split(rel, "/") {
		// Case-insensitive: on a case-insensitive file system .GIT is .git.
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("target %q is inside .git", t)
		}
	}
	ext := path.Ext(base)
	ok := false
	for _, e := range lang.exts {
		ok = ok || strings.EqualFold(ext, e)
	}
	if !ok {
		return "", fmt.Errorf("target %q does not end in %s, the extension of a %s skeleton", t, strings.Join(lang.exts, " or "), lang.name)
	}
	return rel, nil
}

// checkNoSymlink refuses a target whose final name is a symlink (it could
// point at a manifest or outside the tree) and reports, through the
// os.Root, a directory on the way that leaves the tree. It returns whether
// the target exists.
func checkNoSymlink(root *os.Root, rel string) (bool, error) {
	// A symlinked directory on the way, even one that stays inside the
	// tree, could lead into .git or onto a manifest's directory under a
	// name the checks above never saw: author mode writes only through
	// real directories.
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := root.Lstat(filepath.FromSlash(dir))
		if errors.Is(err, fs.ErrNotExist) {
			break // created below, as a real directory
		}
		if err != nil {
			return false, fmt.Errorf("target %q: %w", rel, rootErr(err))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if _, err := root.Stat(filepath.FromSlash(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, fmt.Errorf("target %q: %w", rel, rootErr(err)) // it leaves the tree
			}
			return false, fmt.Errorf("target %q: %s is a symlink on the way; author mode writes only through real directories", rel, dir)
		}
	}
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) {
		// The directory part may still be a symlink out of the tree:
		// os.Root reports that as an escape, anything else not existing
		// is fine (it is created).
		dir := path.Dir(rel)
		if dir == "." {
			return false, nil
		}
		if _, err := root.Stat(filepath.FromSlash(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("target %q: %w", rel, rootErr(err))
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("target %q: %w", rel, rootErr(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return true, fmt.Errorf("target %q is a symlink; author mode writes only regular files", rel)
	}
	if !fi.Mode().IsRegular() {
		return true, fmt.Errorf("target %q exists and is not a regular file", rel)
	}
	return true, nil
}

// rootErr names an os.Root escape in words a plan author understands.
func rootErr(err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return errors.New("a symlink on the way leaves the SUT tree")
	}
	return err
}

// siblingPath is where --on-exists sibling writes: <stem>.new.<ext> beside
// the target (s1_test.go → s1_test.new.go).
func siblingPath(rel string) string {
	ext := path.Ext(rel)
	return strings.TrimSuffix(rel, ext) + ".new" + ext
}
