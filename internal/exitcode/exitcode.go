// Package exitcode is the one way an error says which exit code it stands
// for: 0 ok, 1 the thing checked is not so, 2 bad input or environment,
// and the richer codes some commands document (check's 3 = unknown, exec's
// 124 = a host hit the bound). cmd/dstgen decides the process exit code
// once, in main, with Of; a package that knows the class of its failure
// (the orchestrator's "a unit could not run") returns an *Error, and every
// other error is bad input or environment.
package exitcode

import (
	"errors"
	"fmt"
)

// The codes every command shares.
const (
	OK       = 0
	NotSo    = 1
	BadInput = 2
)

// Error is an error with its exit code. A nil Err means "exit silently
// with Code": the command already printed what it had to say.
type Error struct {
	Code int
	Err  error
}

// New returns an error that makes dstgen exit with code; err may be nil.
func New(code int, err error) error { return &Error{Code: code, Err: err} }

// Error is the cause's message, or "exit N" without one.
func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap gives the cause.
func (e *Error) Unwrap() error { return e.Err }

// Of is the exit code err stands for: 0 for nil, the code of the first
// *Error in its chain, else BadInput (usage errors, unreadable files and
// unreachable hosts alike: docs/real-env-test.md §5).
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return BadInput
}

// Message is what main prints for err, "" for a silent exit.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Err == nil {
		return ""
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
