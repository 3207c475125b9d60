// Package atomicfile writes a file so that a reader, or a process killed
// mid-write, sees either the old file or the new one, never half of it:
// run.json while a run goes (docs/dst-run.md §7), reports, the holder's
// key, the testbed's state. It is the one writer of that kind in dstgen,
// built on renameio (a temporary file in a directory on the same file
// system, fsync, rename).
package atomicfile

import (
	"fmt"
	"io/fs"

	"github.com/google/renameio/v2"
)

// Write replaces path with data, mode exactly (not masked by the umask,
// not copied from the file it replaces).
func Write(path string, data []byte, mode fs.FileMode) error {
	f, err := renameio.NewPendingFile(path, renameio.WithStaticPermissions(mode))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Cleanup()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
