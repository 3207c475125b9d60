// Package orchestrator is `dstgen run`: it turns one unit of
// testing/scenarios.yml (a scenario or one §7.M.S arm) into a session
// directory the analyzer judges (package session, run.json "dst-run/1";
// docs/dst-run.md §7 describes every stage and field).
//
// Data flows down through the stages of one unit (run.go), each of which
// appends a timestamped line to session-log.md and prints it:
//
//	pre-flight   reach, the nemeses' Info.Needs, every host's clock (preflight.go)
//	schedule     Schedule: a pure function of seed + scenarios.yml (schedule.go)
//	deploy check the SUT up on its hosts, else "run `task deploy` first"
//	metrics      collect-metrics.sh start on every host that has it
//	workload     job wl-<unit>-<session> on the client host, the driver contract's env
//	faults       per window: Resolve targets (targets.go), victim before, Inject,
//	             TargetCheck, injector and victim evidence polled, Heal (signals.go)
//	heal         nemesis.HealAll on every host — also deferred with a context of
//	             its own, so an error, SIGINT/SIGTERM or a timeout still heals
//	quiesce      scenario.quiesce.command until it exits 0, bounded
//	stop         the workload ends by itself (duration + 30 s), else StopJob
//	collect      history, final state, job and SUT logs, metrics over SFTP
//	stamp        windows put on the history's clock (ToHistory), fault_epoch
//	             stamped (StampFile), workload figures (Throughput) (timeline.go)
//
// The run record is written before the first stage (attempted false) and
// after each stage that changes it, atomically (session.go), so a run
// killed at any point leaves its partial record. exec.go adapts the runner
// pool to nemesis.Exec and builds the nemesis view of the hosts from
// deploy; detach.go runs the whole command in the background and answers
// `dstgen run status|stop` from the session's files alone.
package orchestrator
