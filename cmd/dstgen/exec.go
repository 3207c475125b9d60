package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

// exitTimeout is exec's distinct exit code when any host timed out: 124, as
// GNU timeout and docs/real-env-test.md §11 use it.
const exitTimeout = runner.ExitTimeout

// execOutputCap bounds what --json keeps of each stream per host.
const execOutputCap = 1 << 20

func newExecCmd() *cobra.Command {
	var f runnerFlags
	var parallel int
	var serveDir string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "exec TARGET [flags] -- CMD...",
		Short: "Run a command on hosts over SSH, bounded by 30 s per round trip",
		Long: `Run a command on TARGET (a host name, role:R, all, or a comma list) over
the pooled SSH connection of each host.

After --, a single argument is passed to the remote shell as a shell
string (so 'ls | wc -l' is a pipeline); two or more arguments are each
quoted and run as one literal command line (so -- rm -f 'a b' removes one
file). Every value is quoted before it reaches the remote shell. Local
stdin is not forwarded (like ssh -n): use dstgen push for files.

Every round trip is bounded by --timeout (default and ceiling 30s). A
command that outlives it is killed with its whole process group on the
remote and reported status=timeout.

Output: remote stdout/stderr go to stdout/stderr, each line prefixed
"[host] " when there is more than one host; then one summary line per host
on stderr: host= status=ok|failed|timeout|error exit= elapsed=; with
--quiet only for the hosts whose command did not exit 0 (the generated
Taskfile uses it, so the stderr an error report quotes is the failure's).
--json prints {"results":[...]} on stdout instead, with each host's output.

Exit: 0 all ok; 1 some command exited non-zero; 124 some host timed out;
2 bad input, unreachable host or refused host key (one-line reason).
When several apply, the highest priority wins: 2, then 124, then 1.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if serveDir != "" {
				return serveHolder(cmd, serveDir, f.idle)
			}
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				return errors.New("exec: usage: dstgen exec TARGET -- CMD... (the command goes after --)")
			}
			if dash != 1 {
				return fmt.Errorf("exec: want exactly one TARGET before --, got %d", dash)
			}
			words := args[dash:]
			if len(words) == 0 {
				return errors.New("exec: no command after --")
			}
			if parallel < 0 {
				return fmt.Errorf("exec: --parallel %d: must be ≥ 0 (0 = all hosts at once)", parallel)
			}
			remote := words[0]
			if len(words) > 1 {
				remote = shell.QuoteArgs(words)
			}
			_, pool, hosts, err := f.openTarget("", args[0])
			if err != nil {
				return err
			}
			defer pool.Close()
			var results []runner.Result
			if f.json {
				results, err = execJSON(cmd, pool, hosts, remote, parallel)
				if err != nil {
					return err
				}
			} else {
				results = execText(cmd, pool, hosts, remote, parallel, quiet)
			}
			return execExit(results)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&parallel, "parallel", 10, "hosts to run on at the same time (0 = all)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "summary line on stderr only for a host whose command did not exit 0")
	// The connection holder is this binary re-executed by the first runner
	// command (see runnerFlags.holder); not for people.
	cmd.Flags().StringVar(&serveDir, holderServeFlag, "", "serve the connection holder on this private directory")
	_ = cmd.Flags().MarkHidden(holderServeFlag)
	return cmd
}

// holderServeFlag is exec's hidden flag that turns the process into the
// connection holder.
const holderServeFlag = "holder-serve"

// serveHolder runs the holder until its idle timeout or SIGTERM. A second
// holder racing for the same directory exits 0: the first one serves.
func serveHolder(cmd *cobra.Command, dir string, idle time.Duration) error {
	err := runner.ServeHolder(cmd.Context(), dir, idle, cmd.ErrOrStderr())
	if errors.Is(err, runner.ErrHolderRunning) {
		return nil
	}
	if err != nil {
		return err
	}
	return nil
}

func execText(cmd *cobra.Command, pool *runner.Pool, hosts []env.Host, remote string, parallel int, quiet bool) []runner.Result {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var outMu, errMu sync.Mutex
	var lws []*runner.LineWriter
	var lwMu sync.Mutex
	results := pool.RunEach(cmd.Context(), hosts, remote, parallel, func(h env.Host) (io.Writer, io.Writer) {
		if len(hosts) == 1 {
			return stdout, stderr
		}
		prefix := "[" + h.Name + "] "
		so := runner.NewLineWriter(stdout, &outMu, prefix)
		se := runner.NewLineWriter(stderr, &errMu, prefix)
		lwMu.Lock()
		lws = append(lws, so, se)
		lwMu.Unlock()
		return so, se
	})
	for _, lw := range lws {
		lw.Flush()
	}
	for _, r := range results {
		if quiet && r.Status == runner.StatusOK {
			continue
		}
		fmt.Fprintln(stderr, runner.Summary(r))
	}
	return results
}

// capBuffer keeps the first execOutputCap bytes and notes the rest.
type capBuffer struct {
	mu        sync.Mutex
	b         bytes.Buffer
	truncated bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := execOutputCap - c.b.Len(); room < len(p) {
		c.truncated = true
		if room > 0 {
			c.b.Write(p[:room])
		}
		return len(p), nil
	}
	c.b.Write(p)
	return len(p), nil
}

type execJSONResult struct {
	Host      string `json:"host"`
	Status    string `json:"status"`
	Exit      int    `json:"exit"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Error     string `json:"error,omitempty"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
}

func execJSON(cmd *cobra.Command, pool *runner.Pool, hosts []env.Host, remote string, parallel int) ([]runner.Result, error) {
	outs := make(map[string][2]*capBuffer, len(hosts))
	for _, h := range hosts {
		outs[h.Name] = [2]*capBuffer{{}, {}}
	}
	results := pool.RunEach(cmd.Context(), hosts, remote, parallel, func(h env.Host) (io.Writer, io.Writer) {
		b := outs[h.Name]
		return b[0], b[1]
	})
	doc := struct {
		Results []execJSONResult `json:"results"`
	}{}
	for _, r := range results {
		b := outs[r.Host]
		doc.Results = append(doc.Results, execJSONResult{
			Host: r.Host, Status: r.Status, Exit: r.ExitCode, ElapsedMS: r.Elapsed.Milliseconds(), Error: r.Err,
			Stdout: b[0].b.String(), Stderr: b[1].b.String(), Truncated: b[0].truncated || b[1].truncated,
		})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return results, fmt.Errorf("exec: write json: %w", err)
	}
	return results, nil
}

// execExit maps per-host results to exec's exit code (see the command's
// Long help for the priority).
func execExit(results []runner.Result) error {
	var firstErr string
	nErr, timeout, failed := 0, false, false
	for _, r := range results {
		switch r.Status {
		case runner.StatusError:
			if nErr == 0 {
				firstErr = r.Err
			}
			nErr++
		case runner.StatusTimeout:
			timeout = true
		case runner.StatusFailed:
			failed = true
		}
	}
	switch {
	case nErr == 1:
		return errors.New(firstErr)
	case nErr > 1:
		return fmt.Errorf("%s (and %d more hosts failed to run)", firstErr, nErr-1)
	case timeout:
		return exitcode.New(exitTimeout, nil)
	case failed:
		return exitcode.New(exitcode.NotSo, nil)
	}
	return nil
}
