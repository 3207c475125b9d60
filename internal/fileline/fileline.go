// Package fileline is dstgen's one error type for bad input that has a
// place: "file:line: reason". Every reader of a user's file (plans,
// env.yml, scenarios.yml, histories, run.json, generated Taskfiles) and
// every checker that rejects a history line returns it, so the CLI prints
// the same form everywhere and callers classify errors with errors.As,
// never by matching text.
package fileline

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Error is a failure at a line of a file. Line 0 means the file as a
// whole (it could not be read, or the problem has no single line).
type Error struct {
	File string
	Line int
	Err  error
}

// Errorf returns an *Error at file:line with a formatted reason; %w in
// format wraps a cause, as with fmt.Errorf.
func Errorf(file string, line int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Err: fmt.Errorf(format, args...)}
}

// Error is "file:line: reason", or "file: reason" for line 0.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap gives the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Reason is the message without its place.
func (e *Error) Reason() string { return e.Err.Error() }

// ErrTooLarge is the cause ReadBounded gives for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// ReadBounded reads at most limit bytes of path: a user's file is never
// read without a bound, so /dev/zero or a runaway log cannot exhaust
// memory or hang a command. A larger file is an *Error wrapping
// ErrTooLarge; an unreadable one an *Error wrapping the os error.
func ReadBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &Error{File: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}
