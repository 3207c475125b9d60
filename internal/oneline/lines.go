// Package oneline cuts command output and error text down to the one line a
// reason, a log entry or a key=value field may hold (docs/real-env-test.md
// §5: every failure is one line). It is a leaf, shared by every package
// that quotes a remote command's output.
package oneline

import "strings"

// First is s without surrounding white space, up to its first line break.
func First(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// Cut is First(s) at most max runes long, "…" marking a cut.
func Cut(s string, max int) string {
	s = First(s)
	if r := []rune(s); max > 0 && len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// Last is the last non-blank line of s, trimmed.
func Last(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// Fold is s on one line: every run of white space, line breaks included,
// becomes one space.
func Fold(s string) string { return strings.Join(strings.Fields(s), " ") }
