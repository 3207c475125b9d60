// Command dstgen turns a claim-driven test plan into a runnable test
// framework (init), runs it on real hosts over SSH (exec, job, push,
// collect, probe), and turns what it collected into verdicts (check,
// analyze). See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command: 0 ok, 1 the checked thing is not so,
// 2 bad input or environment. Commands with a richer contract (check: 3 =
// unknown; exec: timeout) return their own codes through exitError.
const (
	exitOK       = 0
	exitNotSo    = 1
	exitBadInput = 2
)

// exitError carries an exit code to main. A nil err means "exit silently
// with code" (the command already printed what it had to say).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// badInput wraps err as a one-line exit-2 failure.
func badInput(err error) error { return &exitError{code: exitBadInput, err: err} }

// withCode returns an error that makes dstgen exit with code; err may be nil.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes dstgen with args and returns the process exit code. Tests call
// it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "dstgen: %v\n", ee.err)
		}
		return ee.code
	}
	// Cobra usage errors (unknown flag, wrong arg count) are bad input.
	fmt.Fprintf(stderr, "dstgen: %v\n", err)
	return exitBadInput
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "dstgen",
		Short:         "Generate, run and judge distributed-systems tests from a claim-driven plan",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		// generator (issue: dstgen init)
		newLintCmd(), newScanCmd(), newInitCmd(), newTaskCmd(), newPlanCmd(),
		// author mode: the plan's skeletons into the SUT's tree
		newAuthorCmd(),
		// runner
		newExecCmd(), newJobCmd(), newPushCmd(), newCollectCmd(), newProbeCmd(),
		// deploy: the SUT and the workload driver on the hosts
		newDeployCmd(), newSUTCmd(), newBenchCmd(), newRebootCmd(),
		// scenario runs: the orchestrator, heal, the fault catalog by hand
		newRunCmd(), newHealCmd(), newNemesisCmd(),
		// the userspace TCP fault proxy (Toxiproxy) for hosts without netem
		newProxyCmd(),
		// analyzer
		newCheckCmd(), newAnalyzeCmd(), newReduceCmd(),
		// testbed: simulated hosts on this machine
		newTestbedCmd(),
		// the demo on a built-in default, and the stored runs in a browser
		newDemoCmd(), newServeCmd(),
	)
	root.SetHelpCommand(newHelpCmd()) // help also prints the docs/ reference pages
	return withVersion(root)
}
