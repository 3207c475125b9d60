// Package gotask is the one place dstgen imports go-task's executor
// (github.com/go-task/task/v3): it runs the tasks of a generated Taskfile
// in-process, so a machine without the task binary can use the generated
// framework.
//
// The executor's dependency tree (remote Taskfiles: go-getter, cloud
// storage SDKs, grpc; a syntax highlighter) is some 80 MB and 100 ms of
// package init, so only cmd/dstgen-task links this package; `dstgen task`
// runs that command. The generated-Taskfile check that `dstgen init` needs
// lives in the light sub-package taskcheck.
package gotask

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	task "github.com/go-task/task/v3"
	taskerrors "github.com/go-task/task/v3/errors"
	"github.com/go-task/task/v3/taskfile/ast"
)

// Taskfile is the file name Run and Tasks read in their directory.
const Taskfile = "Taskfile.yml"

func newExecutor(dir string, stdout, stderr io.Writer) (*task.Executor, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("taskfile dir %s: %w", dir, err)
	}
	entry := filepath.Join(abs, Taskfile)
	// go-task walks up the tree looking for a Taskfile; naming the entry
	// point makes sure the one in dir is the one read.
	if _, err := os.Stat(entry); err != nil {
		return nil, fmt.Errorf("taskfile: %w", err)
	}
	e := task.NewExecutor(
		task.WithDir(abs),
		task.WithEntrypoint(entry),
		// Tasks never read the terminal: a prompt must fail, not hang.
		// go-task copies stdin into every command it runs, dynamic
		// variables evaluated at once included: a reader with state
		// (strings.Reader) would be raced over.
		task.WithStdin(noInput{}),
		task.WithStdout(stdout),
		task.WithStderr(stderr),
		task.WithVersionCheck(true),
		task.WithOffline(true),
		task.WithAssumeYes(false),
		task.WithColor(false),
	)
	if err := e.Setup(); err != nil {
		return nil, fmt.Errorf("read %s: %w", entry, err)
	}
	return e, nil
}

// noInput is an empty stdin without state: every Read is EOF.
type noInput struct{}

func (noInput) Read([]byte) (int, error) { return 0, io.EOF }

// Tasks returns the names of the tasks in dir/Taskfile.yml, sorted.
func Tasks(dir string) ([]string, error) {
	e, err := newExecutor(dir, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	var names []string
	for t := range e.Taskfile.Tasks.Values(nil) {
		names = append(names, t.Task)
	}
	sort.Strings(names)
	return names, nil
}

// Run runs one task of dir/Taskfile.yml in-process, like `task NAME K=V...`
// run in dir: vars are command-line variables (they override the
// Taskfile's global vars). Cancelling ctx stops the running commands.
// Use ExitCode to turn the error into the exit status `task -x` would give.
func Run(ctx context.Context, dir, name string, vars map[string]string, stdout, stderr io.Writer) error {
	e, err := newExecutor(dir, stdout, stderr)
	if err != nil {
		return err
	}
	if len(vars) > 0 {
		keys := make([]string, 0, len(vars))
		for k := range vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		cli := ast.NewVars()
		for _, k := range keys {
			cli.Set(k, ast.Var{Value: vars[k]})
		}
		e.Taskfile.Vars.Merge(cli, nil)
	}
	// Look the task up first: go-task answers an unknown name by printing
	// the whole task list, which buries the one-line reason.
	if _, err := e.GetTask(&task.Call{Task: name}); err != nil {
		return err
	}
	return e.Run(ctx, &task.Call{Task: name})
}

// ExitCode maps an error from Run to a process exit status: a failing
// command's own exit code (what `task -x` passes through), 124 for a task
// timeout, and ok=false for errors that are not a task failing (unknown
// task, unreadable Taskfile) — those are bad input.
func ExitCode(err error) (code int, ok bool) {
	if err == nil {
		return 0, true
	}
	var re *taskerrors.TaskRunError
	if errors.As(err, &re) {
		return re.TaskExitCode(), true
	}
	return 0, false
}
