// Package runner is dstgen's remote contract (docs/real-env-test.md): it
// reaches hosts over SSH and gives every caller the same bounded,
// verifiable primitives, and knows nothing of plans, scenarios or
// verdicts.
//
// Data flows down through its files:
//
//	transport.go      one SSH connection per host (env.yml's settings, host
//	                  keys verified against known_hosts, keepalives,
//	                  reconnect on drop), every round trip bounded by 30 s
//	holder*.go        the per-user connection holder behind a private unix
//	                  socket, so connections outlive one CLI call (like
//	                  ControlPersist); one holder per build
//	exec.go           Pool.Run: one bounded command, its stdout, stderr and
//	                  status (ok, failed, timeout, unreachable); fan-out
//	script.go         Script and Shell: a script's stdout or "exit N: why",
//	                  the one way dstgen runs a script on a host
//	job*.go index.go  detached jobs (setsid + nohup, pid and rc recorded by
//	                  the child): start, status, stop, list, logs
//	sftp.go           push and collect, atomic and sha256-verified; a remote
//	                  name never lands outside its local directory
//	clock.go probe*.go  a host's clock against this machine's (NTP-style),
//	                  and its capability matrix, each capability probed by
//	                  doing it (package capability holds it against a plan)
package runner
