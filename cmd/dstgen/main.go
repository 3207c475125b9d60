// Command dstgen turns a claim-driven test plan into a runnable test
// framework (init), runs it on real hosts over SSH (exec, job, push,
// collect, probe), and turns what it collected into verdicts (check,
// analyze). See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/spf13/cobra"
)

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
	// The exit code is decided here, once: an error that carries one
	// (exitcode.New, a unit that could not run) says it; every other
	// error, cobra's usage errors included, is bad input (exit 2).
	err := root.ExecuteContext(ctx)
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(stderr, "dstgen: %s\n", msg)
	}
	return exitcode.Of(err)
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
		// workload drivers: a skeleton on the driver contract
		newDriverCmd(),
	)
	root.SetHelpCommand(newHelpCmd()) // help also prints the docs/ reference pages
	return withVersion(root)
}
