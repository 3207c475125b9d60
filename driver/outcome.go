package driver

// The three outcomes of docs/driver-contract.md §3.2, as Client.Do reports
// them: a nil error is a response, Fail a definite failure, anything else
// an unknown outcome.

import (
	"context"
	"errors"
	"net"
	"syscall"
)

// outcome is the error Fail and Unknown return.
type outcome struct {
	definite bool
	code     string
	err      error
}

func (o *outcome) Error() string {
	if o.err == nil {
		return o.code
	}
	return o.code + ": " + o.err.Error()
}

func (o *outcome) Unwrap() error { return o.err }

// Fail is what Do returns for an error answer that definitely did not
// take effect (a refused connection: the request never left; a
// validation error): the op is recorded failed with code as its error.
func Fail(code string) error {
	if code == "" {
		code = "error"
	}
	return &outcome{definite: true, code: code}
}

// Unknown is what Do returns when the op may or may not have taken effect
// and the code should say why (a server's "request timed out", a reset
// mid-request). Any other non-nil error from Do is unknown too, with a
// code from the error: "timeout" for a deadline, "conn-reset" for a
// reset, "indeterminate" otherwise. err, which may be nil, is kept for
// the summary's first error.
func Unknown(code string, err error) error {
	if code == "" {
		_, code = classify(err)
	}
	return &outcome{code: code, err: err}
}

// classify maps Do's error onto a definite failure or an unknown outcome,
// with the code recorded in the history's error column.
func classify(err error) (definite bool, code string) {
	var o *outcome
	var ne net.Error
	switch {
	case errors.As(err, &o):
		return o.definite, o.code
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return false, "timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return false, "conn-reset"
	}
	return false, "indeterminate"
}
