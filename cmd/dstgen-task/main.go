// Command dstgen-task runs one task of a generated Taskfile.yml in-process
// through go-task's own library, the way `task -x NAME VAR=val` would: it
// is what `dstgen task` runs, so that a machine without the task binary
// can use the generated framework.
//
// It is a separate binary because go-task's executor is most of dstgen's
// weight: its dependency tree (remote Taskfiles: go-getter, cloud storage
// SDKs, grpc; a syntax highlighter) is some 80 MB and 100 ms of package
// init. Kept out of dstgen, every other dstgen command starts in a few
// milliseconds. Install it beside dstgen:
//
//	go install github.com/dstgen/dstgen/cmd/dstgen@latest github.com/dstgen/dstgen/cmd/dstgen-task@latest
//
// Usage: dstgen-task [--dir DIR] [--list] [--] NAME [VAR=val ...]
//
// Exit codes: the task's own exit code (0 ok, 1 e.g. bench:status
// running); 2 bad input (no Taskfile, unknown task, malformed VAR=val).
// Reasons are printed as dstgen's, "dstgen: …", one line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/dstgen/dstgen/internal/gotask"
	"github.com/dstgen/dstgen/internal/gotask/taskcheck"
)

const exitBadInput = 2

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes dstgen-task with args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dstgen-task", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", ".", "directory holding Taskfile.yml")
	list := fs.Bool("list", false, "list the task names and exit")
	version := fs.Bool("version", false, "print the version and exit")
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "dstgen: task: %s\n", fmt.Sprintf(format, a...))
		return exitBadInput
	}
	if err := fs.Parse(args); err != nil {
		return bad("%v", err)
	}
	switch {
	case *version:
		fmt.Fprintln(stdout, moduleVersion())
		return 0
	case *list:
		names, err := gotask.Tasks(*dir)
		if err != nil {
			return bad("%s", taskcheck.Reason(err))
		}
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
		return 0
	case fs.NArg() < 1:
		return bad("NAME is required")
	}
	vars := map[string]string{}
	for _, a := range fs.Args()[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return bad("argument %q is not VAR=value", a)
		}
		vars[k] = v
	}
	err := gotask.Run(ctx, *dir, fs.Arg(0), vars, stdout, stderr)
	if err == nil {
		return 0
	}
	if code, ok := gotask.ExitCode(err); ok {
		fmt.Fprintf(stderr, "dstgen: %s\n", taskcheck.Reason(err))
		return code
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintf(stderr, "dstgen: task %s: interrupted\n", fs.Arg(0))
		return 130
	}
	return bad("%s", taskcheck.Reason(err))
}

// moduleVersion is dstgen's module version, or "devel" for a build from a
// working tree.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
