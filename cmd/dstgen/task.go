package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/spf13/cobra"
)

// taskRunnerName is the command `dstgen task` runs: go-task's executor
// lives there, not in dstgen, because its dependency tree is most of the
// weight and start-up time of a binary that links it (see cmd/dstgen-task).
const taskRunnerName = "dstgen-task"

// taskStopGrace is how long an interrupted task runner gets to stop its
// commands after SIGTERM before it is killed.
const taskStopGrace = 10 * time.Second

// newTaskCmd is `dstgen task NAME [VAR=val ...] [--dir DIR]`: run a task of
// the generated Taskfile through go-task's library (in dstgen-task), so a
// machine without the task binary can use the framework.
func newTaskCmd() *cobra.Command {
	var dir string
	var list bool
	cmd := &cobra.Command{
		Use:   "task NAME [VAR=val ...] [--dir DIR]",
		Short: "Run a task of the generated Taskfile.yml through go-task's library in dstgen-task (no task binary needed)",
		Long: `task runs one task of DIR/Taskfile.yml (default: the current directory)
the way "task -x NAME VAR=val" would, using go-task's own library in the
companion command dstgen-task (found beside this dstgen binary, else on
PATH; install it with dstgen). VAR=val arguments are command-line
variables (e.g. RUN_ID=20260101_120000). When neither the DSTGEN variable
nor the environment sets it, the tasks call this dstgen binary. --list
prints the task names.

Exit codes: the task's own exit code (0 ok, 1 e.g. bench:status running);
2 bad input: no Taskfile, unknown task, malformed VAR=val, no dstgen-task.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return nil
			}
			if len(args) < 1 {
				return errors.New("task: NAME is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			runnerArgs := []string{"--dir", dir}
			if list {
				runnerArgs = append(runnerArgs, "--list")
			} else {
				dstgenSet := os.Getenv("DSTGEN") != ""
				for _, a := range args[1:] {
					k, _, ok := strings.Cut(a, "=")
					if !ok || k == "" {
						return fmt.Errorf("task: argument %q is not VAR=value", a)
					}
					dstgenSet = dstgenSet || k == "DSTGEN"
				}
				runnerArgs = append(append(runnerArgs, "--"), args...)
				if !dstgenSet {
					if exe, err := os.Executable(); err == nil {
						runnerArgs = append(runnerArgs, "DSTGEN="+exe)
					}
				}
			}
			bin, err := findTaskRunner()
			if err != nil {
				return fmt.Errorf("task: %w", err)
			}
			c := exec.CommandContext(cmd.Context(), bin, runnerArgs...)
			c.Stdout, c.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			// Tasks never read the terminal: a prompt must fail, not hang.
			c.Stdin = nil
			// Interrupted: let go-task stop its commands, then kill.
			c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
			c.WaitDelay = taskStopGrace
			err = c.Run()
			var ee *exec.ExitError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &ee) && ee.ExitCode() >= 0:
				// dstgen-task printed its one-line reason already.
				return exitcode.New(ee.ExitCode(), nil)
			default:
				return fmt.Errorf("task: %s: %w", bin, err)
			}
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory holding Taskfile.yml")
	cmd.Flags().BoolVar(&list, "list", false, "list the task names and exit")
	return cmd
}

// findTaskRunner returns the dstgen-task beside this binary (what
// `go install` of both commands gives), else the one on PATH.
func findTaskRunner() (string, error) {
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), taskRunnerName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(taskRunnerName); err == nil {
		return p, nil
	}
	v := moduleVersion()
	if v == "devel" {
		v = "latest"
	}
	return "", fmt.Errorf("%s (the task runner) is neither beside dstgen nor on PATH: "+
		"install it with `go install github.com/dstgen/dstgen/cmd/%s@%s`, or run `task -x NAME` with go-task",
		taskRunnerName, taskRunnerName, v)
}
