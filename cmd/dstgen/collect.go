package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

func newCollectCmd() *cobra.Command {
	var f runnerFlags
	var into string
	cmd := &cobra.Command{
		Use:   "collect TARGET REMOTE... --into DIR",
		Short: "Download remote files or directories over SFTP into DIR, sha256-verified",
		Long: `Download each REMOTE (a file, or a directory recursively) from every host
of TARGET into DIR; with several hosts each lands under DIR/<host>/. A
relative REMOTE is relative to the workdir of env.yml (so jobs/S1 is job
S1's directory).

No remote name can place a file outside DIR: '..' elements, names holding
NUL or a newline, symlinks (never followed, remote or local) and special
files are rejected. Each file lands under a hidden temp name and is renamed
into place only when the host's sha256 of the bytes read equals the sha256
of what reached the local disk. Progress for files over 8 MiB goes to
stderr.

Output: one line per file: host= file= bytes= sha256= status=ok|mismatch|
rejected|error [reason=]; or --json.

Exit: 0 all ok; 1 some file failed sha256 verification; 2 bad input, a
rejected name or a host/transfer error (files already collected are kept).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if into == "" {
				return fmt.Errorf("collect: --into DIR is required")
			}
			e, pool, hosts, err := f.openTarget("collect: ", args[0])
			if err != nil {
				return err
			}
			defer pool.Close()
			// A relative REMOTE is below each host's own work dir.
			var res []runner.FileResult
			remotesOf := func(wd string) []string {
				var out []string
				for _, r := range args[1:] {
					if p, err := runner.ResolveRemote(wd, r); err == nil {
						out = append(out, p)
					}
				}
				return out
			}
			for _, r := range args[1:] {
				if _, err := runner.ResolveRemote(e.Workdir, r); err != nil {
					res = append(res, runner.FileResult{Source: r, Status: runner.FileRejected, Reason: err.Error()})
				}
			}
			// Hosts in parallel (bounded); results keep the host order.
			perHost := make([][]runner.FileResult, len(hosts))
			progress := &syncWriter{w: cmd.ErrOrStderr()}
			var g errgroup.Group
			g.SetLimit(8)
			for i, h := range hosts {
				dir := into
				if len(hosts) > 1 {
					if err := runner.HostDirName(h.Name); err != nil {
						perHost[i] = []runner.FileResult{{Host: h.Name, Status: runner.FileRejected, Reason: err.Error()}}
						continue
					}
					dir = filepath.Join(into, h.Name)
				}
				remotes := remotesOf(e.HostWorkdir(h))
				if len(remotes) == 0 {
					continue
				}
				g.Go(func() error {
					rs, err := runner.Collect(cmd.Context(), pool, h, remotes, dir, progress)
					if err != nil {
						rs = append(rs, runner.FileResult{Host: h.Name, File: dir, Status: runner.FileError, Reason: err.Error()})
					}
					perHost[i] = rs
					return nil
				})
			}
			_ = g.Wait()
			for _, rs := range perHost {
				res = append(res, rs...)
			}
			if err := printFiles(cmd.OutOrStdout(), f.json, res); err != nil {
				return err
			}
			return filesExit(res)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&into, "into", "", "local directory to collect into (created if needed)")
	return cmd
}

// syncWriter serialises progress lines from parallel collects.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
