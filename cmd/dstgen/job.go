package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

// exitUnreachable is the job commands' exit code for a host that did not
// answer within the round-trip bound: not an answer about the job, which
// may well still be running. Pollers wait and poll again.
const exitUnreachable = 3

// unreachable prints st (status=unreachable host= error=) and exits 3 when
// err says the host did not answer; ok is false otherwise.
func unreachable(w io.Writer, asJSON bool, st runner.JobStatus, err error) (bool, error) {
	if !runner.IsUnreachable(err) {
		return false, nil
	}
	if perr := printJob(w, asJSON, true, st); perr != nil {
		return true, perr
	}
	return true, exitcode.New(exitUnreachable, nil)
}

// jobFlags are shared by the job subcommands.
type jobFlags struct {
	runnerFlags
	host    string
	id      string
	session string
}

func (f *jobFlags) register(cmd *cobra.Command, needID bool) {
	f.runnerFlags.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.host, "host", "", "host name from env.yml (may be omitted when the job index knows the job)")
	fl.StringVar(&f.session, "session", runner.DefaultSessionDir, "session directory holding the local job index (.dstgen/jobs.json)")
	if needID {
		fl.StringVar(&f.id, "id", "", "job id: 1-64 of [A-Za-z0-9._-], not starting with '-' or '.'")
	}
}

// target resolves --host (or, without it, the host the index recorded for
// --id) to exactly one host. A job started by a process that has since been
// killed is found this way by the next one.
func (f *jobFlags) target(e *env.Env, idx runner.JobIndex) (env.Host, error) {
	name := f.host
	if name == "" {
		if f.id == "" {
			return env.Host{}, errors.New("--host is required")
		}
		es, err := idx.Load()
		if err != nil {
			return env.Host{}, err
		}
		var found []string
		for _, x := range es {
			if x.ID == f.id {
				found = append(found, x.Host)
			}
		}
		switch len(found) {
		case 0:
			return env.Host{}, fmt.Errorf("--host is required: job %s is not in the index %s", f.id, idx.Path)
		case 1:
			name = found[0]
		default:
			return env.Host{}, fmt.Errorf("--host is required: job %s is in the index for hosts %v", f.id, found)
		}
	}
	hosts, err := e.Select(name)
	if err != nil {
		return env.Host{}, fmt.Errorf("%s: %w", e.Path, err)
	}
	if len(hosts) != 1 {
		return env.Host{}, fmt.Errorf("--host %s names %d hosts; a job lives on exactly one", name, len(hosts))
	}
	return hosts[0], nil
}

// open validates the id, loads env.yml and returns what every job
// subcommand on one job (all but list) needs. Errors are exit-2 material.
func (f *jobFlags) open() (*env.Env, *runner.Pool, env.Host, runner.JobIndex, error) {
	idx := runner.NewJobIndex(f.session)
	if f.id == "" {
		return nil, nil, env.Host{}, idx, errors.New("--id is required")
	}
	if err := runner.ValidateJobID(f.id); err != nil {
		return nil, nil, env.Host{}, idx, err
	}
	e, pool, err := f.runnerFlags.open()
	if err != nil {
		return nil, nil, env.Host{}, idx, err
	}
	h, err := f.target(e, idx)
	if err != nil {
		pool.Close()
		return nil, nil, env.Host{}, idx, err
	}
	return e, pool, h, idx, nil
}

// recordStatus notes the status just seen in the index entry of a job the
// index already knows (one it never recorded stays unrecorded). The stored
// entry is updated, not replaced, so what start recorded (address, port)
// survives. Failing to note it only costs a later --host, so it is ignored.
func recordStatus(idx runner.JobIndex, host, id, workdir, status string) {
	if ent, known, _ := idx.Find(host, id); known {
		ent.Workdir, ent.Status = workdir, status
		_ = idx.Put(ent)
	}
}

func printJob(w io.Writer, asJSON, oneLine bool, st runner.JobStatus) error {
	if asJSON {
		return json.NewEncoder(w).Encode(st)
	}
	if oneLine {
		_, err := fmt.Fprintln(w, runner.FormatKV(st.Fields()))
		return err
	}
	for _, kv := range st.Fields() {
		if _, err := fmt.Fprintln(w, runner.FormatKV([][2]string{kv})); err != nil {
			return err
		}
	}
	return nil
}

// statusExit maps a job state to the job status exit contract: 0 finished,
// 1 running, 2 lost or absent (3, unreachable, never gets here).
func statusExit(st runner.JobStatus) error {
	switch st.Status {
	case runner.StatusFinished:
		return nil
	case runner.StatusRunning, runner.StatusStarted:
		return exitcode.New(exitcode.NotSo, nil)
	}
	return exitcode.New(exitcode.BadInput, nil)
}

func newJobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Detached remote jobs: start, status, stop, list, logs",
		Long: `Long work runs as a job: detached on the host (setsid + nohup) under
<workdir>/jobs/<ID>/ with pid, rc (written when the command exits), stdout,
stderr and meta. Every job call is one bounded SSH round trip. A local index
(<session>/.dstgen/jobs.json) remembers which host runs which job, so a new
dstgen process can status, stop or collect jobs an earlier one started.`,
	}
	cmd.AddCommand(newJobStartCmd(), newJobStatusCmd(), newJobStopCmd(), newJobListCmd(), newJobLogsCmd())
	return cmd
}

func newJobStartCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "start --host H --id ID [flags] -- CMD...",
		Short: "Start CMD detached on H as job ID",
		Long: `Start CMD detached on H as job ID and answer within about 2 s:
status=started job=ID pid=N rc= elapsed= host=H

After --, a single argument is run by sh -c on the host (so 'a | b' is a
pipeline); two or more are each quoted and run as one literal command.
Starting an ID that is already running the same command answers its
status and starts nothing; one running a different command answers
status=already-running job=ID pid=N and starts nothing either (exit 1).
A finished or lost run of the ID is moved to jobs/.archive first. A host
that does not answer (retried with backoff within the round-trip bound)
answers status=unreachable host=H error=... (exit 3); starting again is
safe, since a start that did land is then found running.

Exit: 0 started or already running the same command; 1 already running a
different command; 2 bad input or error; 3 host unreachable.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 0 {
				return errors.New("job start: usage: dstgen job start --host H --id ID -- CMD (the command goes after --)")
			}
			if len(args) == 0 {
				return errors.New("job start: no command after --")
			}
			argv := args
			if len(args) == 1 {
				argv = []string{"sh", "-c", args[0]}
			}
			e, pool, h, idx, err := f.open()
			if err != nil {
				return fmt.Errorf("job start: %w", err)
			}
			defer pool.Close()
			st, err := runner.StartJob(cmd.Context(), pool, h, e.HostWorkdir(h), f.id, argv)
			if ok, uerr := unreachable(cmd.OutOrStdout(), f.json, st, err); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: %v\n", err)
				return uerr
			}
			if errors.Is(err, runner.ErrAlreadyRunning) {
				if perr := printJob(cmd.OutOrStdout(), f.json, true, st); perr != nil {
					return perr
				}
				return exitcode.New(exitcode.NotSo, err)
			}
			if err != nil {
				return err
			}
			ierr := idx.Put(runner.IndexEntry{Host: h.Name, Address: h.Address, Port: h.Port, ID: f.id, PID: st.PID,
				Workdir: e.HostWorkdir(h), Started: st.Started, Status: st.Status})
			if err := printJob(cmd.OutOrStdout(), f.json, true, st); err != nil {
				return err
			}
			if ierr != nil {
				// The job runs; only the local memory of it failed. Say so,
				// since a later process would have to pass --host.
				fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: warning: job started but not indexed: %v\n", ierr)
			}
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

func newJobStatusCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "status --host H --id ID",
		Short: "Report a job's state (exit 0 finished, 1 running, 2 lost/absent/error, 3 unreachable)",
		Long: `Report a job's state in one round trip (within about 1 s) as key=value
lines: status=running|finished|lost|absent job= pid= rc= elapsed= host=.
lost means no process and no rc (killed, or the host rebooted).

A host that does not answer is retried with backoff, all attempts within
the round-trip bound (--timeout, at most 30 s); when none answers, the
answer is status=unreachable job= host= error= and exit 3. That says
nothing about the job: wait and poll again, never treat it as lost.

Exit: 0 finished; 1 running; 2 lost, absent or error; 3 host unreachable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, pool, h, idx, err := f.open()
			if err != nil {
				return fmt.Errorf("job status: %w", err)
			}
			defer pool.Close()
			st, err := runner.JobStatusOf(cmd.Context(), pool, h, e.HostWorkdir(h), f.id)
			if ok, uerr := unreachable(cmd.OutOrStdout(), f.json, st, err); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: %v\n", err)
				return uerr
			}
			if err != nil {
				return err
			}
			recordStatus(idx, h.Name, f.id, e.HostWorkdir(h), st.Status)
			if err := printJob(cmd.OutOrStdout(), f.json, false, st); err != nil {
				return err
			}
			return statusExit(st)
		},
	}
	f.register(cmd, true)
	return cmd
}

func newJobStopCmd() *cobra.Command {
	var f jobFlags
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "stop --host H --id ID [--grace D]",
		Short: "TERM the job's process group, wait --grace, KILL, record",
		Long: `Send TERM to the job's process group, wait up to --grace for it to
exit, then KILL the group, and record stopped=TERM|KILL and the rc. Stopping
a job that is not running changes nothing (idempotent), so a stop that
got status=unreachable (exit 3: the host did not answer within the bound)
is simply sent again.

Exit: 0 the job is not running any more; 2 absent, bad input or error;
3 host unreachable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 || grace > runner.MaxStopGrace {
				return fmt.Errorf("job stop: --grace %v outside 0..%v", grace, runner.MaxStopGrace)
			}
			e, pool, h, idx, err := f.open()
			if err != nil {
				return fmt.Errorf("job stop: %w", err)
			}
			defer pool.Close()
			st, err := runner.StopJob(cmd.Context(), pool, h, e.HostWorkdir(h), f.id, grace)
			if ok, uerr := unreachable(cmd.OutOrStdout(), f.json, st, err); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: %v\n", err)
				return uerr
			}
			if err != nil {
				return err
			}
			recordStatus(idx, h.Name, f.id, e.HostWorkdir(h), st.Status)
			if err := printJob(cmd.OutOrStdout(), f.json, false, st); err != nil {
				return err
			}
			switch st.Status {
			case runner.StatusFinished, runner.StatusLost:
				return nil
			case runner.StatusAbsent:
				return exitcode.New(exitcode.BadInput, fmt.Errorf("job stop: no job %s on %s", f.id, h.Name))
			}
			return exitcode.New(exitcode.BadInput, fmt.Errorf("job stop: job %s on %s still %s", f.id, h.Name, st.Status))
		},
	}
	f.register(cmd, true)
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "time between TERM and KILL (at most 20s)")
	return cmd
}

func newJobListCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "list [--host TARGET]",
		Short: "List jobs from the hosts' job dirs and the local index",
		Long: `List every job found in <workdir>/jobs/ on the hosts of --host (a name,
role:R or all; default all), merged with the local index: source=remote,
index or both. One key=value line per job, or --json; a host that did not
answer within the bound is one status=unreachable host= error= line.

Exit: 0 listed; 2 bad input or a host could not be listed; 3 a host was
unreachable (and none failed otherwise).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.host == "" {
				f.host = "all"
			}
			idx := runner.NewJobIndex(f.session)
			es, err := idx.Load()
			if err != nil {
				return fmt.Errorf("job list: %w", err)
			}
			e, pool, err := f.runnerFlags.open()
			if err != nil {
				return fmt.Errorf("job list: %w", err)
			}
			defer pool.Close()
			hosts, err := e.Select(f.host)
			if err != nil {
				return fmt.Errorf("job list: %s: %w", e.Path, err)
			}
			var all []runner.JobStatus
			var failed, unreach bool
			for _, h := range hosts {
				jobs, err := runner.ListJobs(cmd.Context(), pool, h, e.HostWorkdir(h))
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: %v\n", err)
					if runner.IsUnreachable(err) {
						unreach = true
						all = append(all, runner.JobStatus{Host: h.Name, Status: runner.StatusUnreachable, Err: err.Error()})
						continue
					}
					failed = true
				}
				all = append(all, runner.MergeJobs(h.Name, jobs, es)...)
			}
			out := cmd.OutOrStdout()
			if f.json {
				if all == nil {
					all = []runner.JobStatus{}
				}
				if err := json.NewEncoder(out).Encode(map[string]any{"jobs": all}); err != nil {
					return err
				}
			} else {
				for _, j := range all {
					fmt.Fprintln(out, runner.FormatKV(j.Fields()))
				}
			}
			switch {
			case failed:
				return exitcode.New(exitcode.BadInput, nil)
			case unreach:
				return exitcode.New(exitUnreachable, nil)
			}
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}

func newJobLogsCmd() *cobra.Command {
	var f jobFlags
	var lines int
	var stderr bool
	cmd := &cobra.Command{
		Use:   "logs --host H --id ID [--lines N] [--stderr]",
		Short: "Print the tail of a job's stdout (or stderr)",
		Long: `Print the last --lines lines (at most 10000, and at most 1 MiB) of the
job's stdout, or of its stderr with --stderr. A host that does not answer
within the bound prints status=unreachable host= error= on stderr (stdout
holds only log text) and exits 3.

Exit: 0 printed; 2 absent job, bad input or error; 3 host unreachable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lines <= 0 || lines > runner.MaxLogLines {
				return fmt.Errorf("job logs: --lines %d outside 1..%d", lines, runner.MaxLogLines)
			}
			e, pool, h, _, err := f.open()
			if err != nil {
				return fmt.Errorf("job logs: %w", err)
			}
			defer pool.Close()
			out, err := runner.JobLogs(cmd.Context(), pool, h, e.HostWorkdir(h), f.id, lines, stderr)
			if runner.IsUnreachable(err) {
				st := runner.JobStatus{Host: h.Name, ID: f.id, Status: runner.StatusUnreachable, Err: err.Error()}
				fmt.Fprintln(cmd.ErrOrStderr(), runner.FormatKV(st.Fields()))
				return exitcode.New(exitUnreachable, nil)
			}
			if err != nil {
				return err
			}
			if f.json {
				stream := "stdout"
				if stderr {
					stream = "stderr"
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]string{"host": h.Name, "job": f.id, "stream": stream, "text": string(out)})
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f.register(cmd, true)
	cmd.Flags().IntVar(&lines, "lines", 50, "lines to show (1..10000)")
	cmd.Flags().BoolVar(&stderr, "stderr", false, "show stderr instead of stdout")
	return cmd
}
