package generator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// TouchedFile is one file a change touches, from git's diff stat.
type TouchedFile struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`   // -1 for a binary file
	Deleted int    `json:"deleted"` // -1 for a binary file
}

// Bounds of the diff: git gets this long and this much output.
const (
	gitTimeout   = 30 * time.Second
	maxDiffBytes = 4 << 20
)

// DiffStat returns the files that change ref touches below dir: `git diff
// --numstat REF` (the machine form of --stat, whose paths git shortens),
// run in dir with ref as one argument after --end-of-options, never through
// a shell, within gitTimeout. ref is a commit (changes since it) or a range
// ("a..b"). A ref git does not know is an error carrying git's own reason.
func DiffStat(ctx context.Context, dir, ref string) ([]TouchedFile, error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return nil, fmt.Errorf("git diff: %q is not a commit or range", ref)
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "-c", "core.quotePath=false", "diff",
		"--no-color", "--no-ext-diff", "--no-renames", "--relative", "--numstat", "-z", "--end-of-options", ref, "--")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stdout limitedBuffer
	stdout.limit = maxDiffBytes
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("git diff %s: no answer within %s", ref, gitTimeout)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg := strings.TrimSpace(stderr.String())
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = msg[:i]
			}
			return nil, fmt.Errorf("git diff %s: %s", ref, msg)
		}
		return nil, fmt.Errorf("git diff %s: %w", ref, err)
	}
	out := stdout.Bytes()
	if stdout.Len() >= maxDiffBytes {
		// The last record may be cut: keep only whole ones.
		out = out[:bytes.LastIndexByte(out, 0)+1]
	}
	return parseNumstat(out), nil
}

// parseNumstat reads `git diff --numstat -z` output: "added\tdeleted\tpath\0"
// per file ("-\t-\t" for binary files).
func parseNumstat(out []byte) []TouchedFile {
	var files []TouchedFile
	for _, rec := range strings.Split(string(out), "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 || f[2] == "" {
			continue
		}
		num := func(s string) int {
			n, err := strconv.Atoi(s)
			if err != nil {
				return -1
			}
			return n
		}
		files = append(files, TouchedFile{Path: f[2], Added: num(f[0]), Deleted: num(f[1])})
	}
	return files
}

// limitedBuffer keeps the first limit bytes written to it and discards the
// rest, so a huge diff cannot exhaust memory.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
