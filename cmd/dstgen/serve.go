package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/serve"
)

// serveFlags are the options of dstgen serve.
type serveFlags struct {
	addr string
	port int
}

// newServeCmd is dstgen serve: the stored sessions in a browser.
func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [RESULTS] [--addr A] [--port N]",
		Short: "Browse the stored sessions (verdicts, reports, visualizations, artifacts) in a web browser",
		Long: `serve starts a small read-only web server over RESULTS (default
testing/results, else ./results) and prints its URL. The index lists every
session newest first with its plan, session verdict, scenario verdicts and
date, filtered by plan and verdict; a session's page opens its report.html,
findings, porcupine visualizations and raw artifacts (histories, run.json,
logs). A session without findings/report.json is listed as not analyzed.

It listens on 127.0.0.1 unless --addr names another address; no request
can read outside RESULTS. Ctrl-C (SIGINT) or SIGTERM shuts it down
gracefully. See docs/serve.md.

Exit codes: 0 after a shutdown by signal; 2 RESULTS missing or the address
cannot be listened on.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1", "address to listen on (another than loopback exposes the results to that network)")
	fl.IntVar(&f.port, "port", 8080, "TCP port (0: any free port)")
	return cmd
}

// defaultResults is testing/results when it exists, else ./results.
func defaultResults() string {
	if st, err := os.Stat(filepath.Join("testing", "results")); err == nil && st.IsDir() {
		return filepath.Join("testing", "results")
	}
	return "results"
}

func runServe(cmd *cobra.Command, args []string, f serveFlags) error {
	results := defaultResults()
	if len(args) == 1 {
		results = args[0]
	}
	if f.port < 0 || f.port > 65535 {
		return fmt.Errorf("serve: --port %d: want 0..65535", f.port)
	}
	if f.addr == "" {
		return errors.New("serve: --addr is empty")
	}
	srv, err := serve.New(results)
	if err != nil {
		if len(args) == 0 {
			err = fmt.Errorf("%w (no RESULTS given: looked for testing/results and ./results)", err)
		}
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(f.addr, strconv.Itoa(f.port)))
	if err != nil {
		return fmt.Errorf("serve: listen: %w", err)
	}
	if ip := net.ParseIP(f.addr); f.addr != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s: anyone who reaches it can read everything under %s\n", f.addr, results)
	}
	all, lerr := srv.Sessions()
	if lerr != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", lerr)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "results=%s sessions=%d\nurl=http://%s/\n", results, len(all), ln.Addr())
	if err := serve.Serve(cmd.Context(), ln, srv); err != nil {
		return err
	}
	return nil
}
