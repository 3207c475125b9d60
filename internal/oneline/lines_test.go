package oneline

import "testing"

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		in                string
		first, last, fold string
		cut3              string
	}{
		{"", "", "", "", ""},
		{"one", "one", "one", "one", "one"},
		{"  a b \n c\r\n d \n\n", "a b", "d", "a b c d", "a b"},
		{"\n\n  x\n", "x", "x", "x", "x"},
		{"héllo wörld\nrest", "héllo wörld", "rest", "héllo wörld rest", "hél…"},
	} {
		if got := First(tc.in); got != tc.first {
			t.Errorf("First(%q) = %q, want %q", tc.in, got, tc.first)
		}
		if got := Last(tc.in); got != tc.last {
			t.Errorf("Last(%q) = %q, want %q", tc.in, got, tc.last)
		}
		if got := Fold(tc.in); got != tc.fold {
			t.Errorf("Fold(%q) = %q, want %q", tc.in, got, tc.fold)
		}
		if got := Cut(tc.in, 3); got != tc.cut3 {
			t.Errorf("Cut(%q, 3) = %q, want %q", tc.in, got, tc.cut3)
		}
	}
}
