// Package demo is `dstgen demo`: the main job on a built-in default. It
// builds the example SUT examples/kv, simulates its hosts with SSH servers
// inside the dstgen process (sshd.go), puts a `dstgen proxy` in front of
// every replica's peer traffic, generates the framework with `dstgen init`,
// fills env.yml and scenarios.yml the way a user would, and drives the
// generated Taskfile through `dstgen task`: validate, deploy, the smoke and
// partition scenarios, analyze; and, at the same time on a second set of
// hosts (parts.go), the same partition with the stale-reads bug switched
// on, re-run with the same seed. The histories are judged by the same
// analyzer as any other run (docs/demo.md).
package demo
