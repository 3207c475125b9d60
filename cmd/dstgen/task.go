package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/internal/gotask"
)

// newTaskCmd is `dstgen task NAME [VAR=val ...] [--dir DIR]`: run a task of
// the generated Taskfile in-process through go-task's library, so a machine
// with only dstgen can use the framework.
func newTaskCmd() *cobra.Command {
	var dir string
	var list bool
	cmd := &cobra.Command{
		Use:   "task NAME [VAR=val ...] [--dir DIR]",
		Short: "Run a task of the generated Taskfile.yml in-process (no task binary needed)",
		Long: `task runs one task of DIR/Taskfile.yml (default: the current directory)
the way "task -x NAME VAR=val" would, using go-task's own library. VAR=val
arguments are command-line variables (e.g. RUN_ID=20260101_120000). When
neither the DSTGEN variable nor the environment sets it, the tasks call this
dstgen binary. --list prints the task names.

Exit codes: the task's own exit code (0 ok, 1 e.g. bench:status running);
2 bad input: no Taskfile, unknown task, malformed VAR=val.`,
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
			if list {
				names, err := gotask.Tasks(dir)
				if err != nil {
					return badInput(fmt.Errorf("task: %s", oneLine(err.Error())))
				}
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
				return nil
			}
			vars := map[string]string{}
			for _, a := range args[1:] {
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "" {
					return badInput(fmt.Errorf("task: argument %q is not VAR=value", a))
				}
				vars[k] = v
			}
			if _, ok := vars["DSTGEN"]; !ok && os.Getenv("DSTGEN") == "" {
				if exe, err := os.Executable(); err == nil {
					vars["DSTGEN"] = exe
				}
			}
			err := gotask.Run(cmd.Context(), dir, args[0], vars, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err == nil {
				return nil
			}
			if code, ok := gotask.ExitCode(err); ok {
				return withCode(code, errors.New(oneLine(err.Error())))
			}
			return badInput(fmt.Errorf("task: %s", oneLine(err.Error())))
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory holding Taskfile.yml")
	cmd.Flags().BoolVar(&list, "list", false, "list the task names and exit")
	return cmd
}

// oneLine folds go-task's multi-line errors into the one-line reason the
// CLI contract asks for.
func oneLine(s string) string {
	return strings.TrimPrefix(strings.Join(strings.Fields(s), " "), "task: ")
}
