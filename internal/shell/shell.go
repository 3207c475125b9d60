// Package shell quotes values for a POSIX shell. Every value dstgen sends
// to a remote shell or writes into a generated script goes through Quote,
// so no string from a plan, env.yml, a scenario name or a SUT file name can
// run a command. It is a leaf: the generator quotes without importing the
// SSH runner.
package shell

import "strings"

// Quote returns s as one POSIX shell word. Single quotes leave nothing to
// expand; an embedded single quote is closed, escaped and reopened.
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
