// Package testsupport holds what only tests import, kept out of internal/
// so that the product's leaf packages import nothing above them: sshtest
// (real OpenSSH sshd servers under a dedicated /bin/sh user, ssh-agent,
// network-namespace hosts on testbed's bridge), fixture (histories and
// session directories written the way drivers and the orchestrator write
// them) and golden (golden files refreshed with -update).
package testsupport
