package lazyre

import (
	"sync"
	"testing"
)

func TestLazy(t *testing.T) {
	cases := []struct {
		expr, in string
		want     bool
	}{
		{`^a+b$`, "aaab", true},
		{`^a+b$`, "ab c", false},
		{`(?i)kill\s*-9`, "KILL -9", true},
	}
	for _, tc := range cases {
		r := New(tc.expr)
		if r.String() != tc.expr {
			t.Errorf("String() = %q, want %q", r.String(), tc.expr)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got := r.MatchString(tc.in); got != tc.want {
					t.Errorf("%q.MatchString(%q) = %v, want %v", tc.expr, tc.in, got, tc.want)
				}
			}()
		}
		wg.Wait()
		if first, again := r.Re(), r.Re(); first != again {
			t.Errorf("%q compiled more than once", tc.expr)
		}
	}
}

func TestInvalidPanicsAtFirstUse(t *testing.T) {
	r := New(`(`) // no panic here: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression did not panic at its first use")
		}
	}()
	r.MatchString("x")
}
