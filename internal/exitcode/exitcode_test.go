package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	cause := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"nil", nil, OK, ""},
		{"plain error is bad input", cause, BadInput, "boom"},
		{"not so", New(NotSo, cause), NotSo, "boom"},
		{"wrapped keeps its code", fmt.Errorf("run: %w", New(3, cause)), 3, "run: boom"},
		{"silent", New(NotSo, nil), NotSo, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.err); got != tc.code {
				t.Errorf("Of = %d, want %d", got, tc.code)
			}
			if got := Message(tc.err); got != tc.msg {
				t.Errorf("Message = %q, want %q", got, tc.msg)
			}
		})
	}
}
