// Package session owns the session directory layout and the run.json
// record: the contract between the runner (which writes them) and the
// analyzer (which reads them). If something is not recorded in run.json,
// for the analyzer it did not happen.
//
// # Layout
//
// A plan session lives in testing/results/<plan-slug>/<UTC YYYYMMDDTHHMMSSZ>/:
//
//	session-log.md          timeline, toolbox, capability matrix (docs/report-format.md §2)
//	logs/                   per scenario and host
//	metrics/                CSV samples per host
//	artifacts/<ID>/         run.json, history.jsonl, final.json for scenario <ID>
//	artifacts/<S>/<arm>/    the same for arm "<S>/<arm>" (e.g. artifacts/S4/api/)
//	findings/               written by analyze
//
// Real-env-test runs, results/run_<YYYYMMDD_HHMMSS>/{benchmark,metrics,logs},
// are sessions too; their run records may sit under benchmark/<ID>/ or
// artifacts/<ID>/.
//
// One run record per seed: a scenario dir holds run.json and/or
// run-seed-<n>.json files (any mix). A record's history defaults to the
// sibling history.jsonl (history-seed-<n>.jsonl for run-seed-<n>.json) and
// its final-state dump to final.json (final-seed-<n>.json); the "history"
// and "final_state" fields override that with a path relative to the run
// file's directory that may not leave it.
//
// # run.json (schema "dst-run/1")
//
// A record holds measurements, not judgements: the analyzer derives the
// budget tier met from nodes/config_size, started_at..ended_at, the fault
// windows whose landing evidence it accepts, and the distinct seeds over
// all records of the scenario; it re-judges "landed" from the evidence
// objects rather than trusting the runner's flag (docs/nemesis.md §6: the
// injector's OK is never evidence).
//
// Times (started_at, ended_at) are RFC 3339 UTC. Every *_ns field is
// nanoseconds on the run's monotonic clock, with the same origin as the
// history's invoke_ts/complete_ts, so windows and ops can be compared.
// Unknown fields, malformed JSON, a wrong type or an unknown schema are
// errors located to file:line.
//
//	schema              "dst-run/1" (required)
//	scenario            plan scenario id, "S1" (required)
//	arm                 arm id "S4/api" when the record is for a §7.M.S arm
//	attempted           false ⇒ the runner declared it but did not try (NOT-RUN)
//	started_at/ended_at run start/end stamps; measured duration = ended-started
//	seed                PRNG seed of this run
//	re_run_of           {file, seed}: the record this run repeats with the same
//	                    seed/config/fault sequence (decides FAIL-reproducible)
//	tier                budget tier the runner ran at: smoke|hardening|release
//	                    (the tier claimed, red flag 6)
//	plan_path           plan file the run came from (analyze uses it if no --plan)
//	nodes               cluster size measured (tier dimension "N nodes")
//	config_size         other size dimensions by unit: {"tenants": 4, "keys": 20}
//	capabilities[]      capability rows {requirement, present, version, source}
//	missing_capability  {requirement, reason}: a required capability was missing
//	                    and the run could not proceed (INCONCLUSIVE-env)
//	workload            {command, exit_status, ops_produced, planned_rate (ops/s),
//	                    tolerance (fraction, default 0.2), interval_ns,
//	                    throughput[] {start_ns, ops, errors, p50_ms, p95_ms, p99_ms},
//	                    first_op_ns, last_op_ns, all_started_ns}
//	fault_windows[]     docs/nemesis.md §7: {fault_epoch, nemesis, target|targets,
//	                    scheduled_at_ns, injected_at_ns, reverted_at_ns,
//	                    injector_ok (the injector said OK — never evidence),
//	                    injector_evidence, victim_evidence, target_check, landed}
//	                    where each evidence is {kind, name, before, after, delta,
//	                    raw, verdict: changed|unchanged|ambiguous|absent};
//	                    target_check is the proof the fault hit the right object
//	                    (rule in the right chain, qdisc on the SUT interface, …)
//	oracle              for oracles that ran on the remote side: {checkers[], ran,
//	                    outcome: valid|invalid|unknown, ops_consumed, anomalies,
//	                    evidence, html, scope}
//	recovery            {nominal, evidence, nominal_at_ns}: back to nominal after
//	                    the last heal, and when that was seen (history clock)
//	log_scan            {markers[], found, accounted, hits[]}: error markers in SUT
//	                    logs, and how many of them the oracle accounted for
//	baseline            {compared, harness_hash, config_hash,
//	                    baseline_harness_hash, baseline_config_hash, rebaselined}
//	clock               monotonic|wall: the recorder's timestamp source
//	recorder            {mechanism: in-process|external probe|server-side audit|
//	                    combined, hides_retries: does the client library retry
//	                    transparently}
//	topologies[]        cluster topologies exercised, e.g. ["N=3", "N=5"]
//	failovers           count of leader changes / node replacements observed
//	surfaces[]          boundary surfaces the run exercised
//	controls            {positive, denied, side_channel}: boundary controls checked
//	fairness            {dimension, groups[] {group, p99_ms, throughput, error_rate}}
//	claim               {failover_based, size_generic, statistical}: overrides the
//	                    analyzer's reading of the claim for the weak-oracle N/A escapes.
//	                    statistical: false declares a deterministic single-interleaving
//	                    test: red flag 10 and weak-oracle item 11 become N/A
//	                    ("declared deterministic (single-interleaving)"). Without it a
//	                    serious (§7.M) claim at the hardening or release tier needs
//	                    ≥ 3 distinct seeds with the same verdict (docs/verdicts.md §4.2),
//	                    whatever the plan's budget says; one run declaring true wins
//	                    over another declaring false
//	history             history file (default see above)
//	final_state         final-state dump (default see above)
//	notes               free text
package session
