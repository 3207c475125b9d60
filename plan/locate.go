package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LintError is a plan that fails lint: not executable, so `dstgen init`
// generates nothing from it and `dstgen author` writes nothing.
type LintError struct {
	Problems []Problem // errors and warnings, in Lint's order
}

// Error is one line: how many lint errors, and the first as file:line.
func (e *LintError) Error() string {
	first := ""
	if fe := e.first(); fe != nil {
		first = fe.String()
	}
	return fmt.Sprintf("plan fails lint with %d error(s); first: %s", Errors(e.Problems), first)
}

// Unwrap gives the first lint error as a *fileline.Error, so a caller
// finds its file and line with errors.As like every other bad input.
func (e *LintError) Unwrap() error {
	if fe := e.first(); fe != nil {
		return fe.Err()
	}
	return nil
}

func (e *LintError) first() *Problem {
	for i := range e.Problems {
		if e.Problems[i].Severity == SevError {
			return &e.Problems[i]
		}
	}
	return nil
}

// SUTRoot is the system under test's root directory, absolute and with
// symlinks resolved (an os.Root opened on it is one tree): dir when
// given, else the directory above a plan's docs/testing-plans/, else the
// current directory. It must exist, be a directory and be listable.
func SUTRoot(dir, planFile string) (string, error) {
	if dir == "" && planFile != "" {
		d := filepath.Dir(planFile)
		if filepath.Base(d) == "testing-plans" && filepath.Base(filepath.Dir(d)) == "docs" {
			dir = filepath.Dir(filepath.Dir(d))
		}
	}
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("SUT dir %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("SUT dir %s does not exist", dir)
	case err != nil:
		return "", fmt.Errorf("SUT dir %s: %w", dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("SUT dir %s is not a directory", dir)
	}
	f, err := os.Open(abs)
	if err == nil {
		_, err = f.Readdirnames(1)
		f.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("SUT dir %s is not readable: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// Find is the plan to use for the SUT at sut: given (absolute, an
// existing file), else the single docs/testing-plans/*.md; "" when there
// is none. Several are ambiguous: an error listing them.
func Find(sut, given string) (string, error) {
	if given != "" {
		abs, err := filepath.Abs(given)
		if err != nil {
			return "", fmt.Errorf("plan %s: %w", given, err)
		}
		fi, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("plan %s does not exist", given)
		case err != nil:
			return "", fmt.Errorf("plan %s: %w", given, err)
		case fi.IsDir():
			return "", fmt.Errorf("plan %s is a directory", given)
		}
		return abs, nil
	}
	found, err := filepath.Glob(filepath.Join(sut, "docs", "testing-plans", "*.md"))
	if err != nil {
		return "", fmt.Errorf("find plans: %w", err)
	}
	var plans []string
	for _, f := range found {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			plans = append(plans, f)
		}
	}
	switch len(plans) {
	case 0:
		return "", nil
	case 1:
		return plans[0], nil
	}
	names := make([]string, len(plans))
	for i, p := range plans {
		if rel, err := filepath.Rel(sut, p); err == nil {
			names[i] = filepath.ToSlash(rel)
		} else {
			names[i] = p
		}
	}
	return "", fmt.Errorf("%d plans found (%s); pick one with --plan", len(plans), strings.Join(names, ", "))
}
