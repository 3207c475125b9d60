// Package runner executes dstgen workflows on remote hosts over SSH:
// bounded exec, detached jobs, SFTP push/collect, fan-out, capability probe.
package runner

import "strings"

// Quote returns s as one POSIX shell word. Every value that reaches a remote
// shell goes through it: single quotes leave nothing to expand, and an
// embedded single quote is closed, escaped and reopened.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=@%+,", r))
	}) < 0 && s[0] != '-' {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuoteArgs quotes each argument and joins them with spaces, so the line
// runs args literally. The first word is also quoted when it holds '=':
// bare, the shell would read NAME=value there as a variable assignment and
// run the next argument as the command instead.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
		if i == 0 && q[i] == a && strings.ContainsRune(a, '=') {
			q[i] = "'" + a + "'"
		}
	}
	return strings.Join(q, " ")
}
