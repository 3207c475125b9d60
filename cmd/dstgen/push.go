package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

func newPushCmd() *cobra.Command {
	var f runnerFlags
	var parallel int
	cmd := &cobra.Command{
		Use:   "push TARGET LOCAL... REMOTE_DIR",
		Short: "Upload files or directories to hosts over SFTP, atomically and sha256-verified",
		Long: `Upload each LOCAL (a file, or a directory recursively; symlinks inside
directories are not followed) into REMOTE_DIR on every host of TARGET (a
host name, role:R or all). A relative REMOTE_DIR is relative to the
workdir of env.yml.

Each file is written to a hidden temp name beside its target, hashed on the
host (sha256sum, or an SFTP re-read when the host lacks it), and renamed
into place only when both sha256 agree. Progress lines for files over 8 MiB
go to stderr.

Output: one line per file and host: host= file= bytes= sha256= status=ok|
mismatch|rejected|error [reason=]; or --json.

Exit: 0 all ok; 1 some file failed sha256 verification; 2 bad input
(unusable local name, missing file) or a host/transfer error.`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if parallel < 0 {
				return fmt.Errorf("push: --parallel %d must be >= 0", parallel)
			}
			e, pool, hosts, err := f.openTarget("push: ", args[0])
			if err != nil {
				return err
			}
			defer pool.Close()
			// A relative REMOTE_DIR is below each host's own work dir: hosts
			// that share a work dir are pushed to together.
			var res []runner.FileResult
			for _, g := range byWorkdir(e, hosts) {
				dir, err := runner.ResolveRemote(g.workdir, args[len(args)-1])
				if err != nil {
					return fmt.Errorf("push: REMOTE_DIR: %w", err)
				}
				rs, err := runner.Push(cmd.Context(), pool, g.hosts, args[1:len(args)-1], dir, parallel, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				res = append(res, rs...)
			}
			if err := printFiles(cmd.OutOrStdout(), f.json, res); err != nil {
				return err
			}
			return filesExit(res)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&parallel, "parallel", 8, "hosts to upload to at the same time (0 = 8)")
	return cmd
}

// printFiles prints transfer results as key=value lines or one JSON object.
func printFiles(w io.Writer, asJSON bool, res []runner.FileResult) error {
	if asJSON {
		if res == nil {
			res = []runner.FileResult{}
		}
		return json.NewEncoder(w).Encode(map[string]any{"files": res})
	}
	for _, r := range res {
		if _, err := fmt.Fprintln(w, runner.FormatKV(r.Fields())); err != nil {
			return err
		}
	}
	return nil
}

// filesExit: 2 when any file was rejected or failed to transfer (bad input
// or environment), else 1 when any failed sha256 verification, else 0.
func filesExit(res []runner.FileResult) error {
	code := filesCode(res)
	if len(res) == 0 {
		return exitcode.New(exitcode.BadInput, errors.New("no files transferred"))
	}
	if code == exitcode.OK {
		return nil
	}
	return exitcode.New(code, nil)
}

// filesCode is the exit code of a transfer's results: 2 when any file was
// rejected or failed to transfer, else 1 when any failed sha256
// verification, else 0.
func filesCode(res []runner.FileResult) int {
	code := exitcode.OK
	for _, r := range res {
		switch r.Status {
		case runner.FileOK:
		case runner.FileMismatch:
			code = max(code, exitcode.NotSo)
		default:
			code = exitcode.BadInput
		}
	}
	return code
}

// workdirGroup is the hosts that share one work dir.
type workdirGroup struct {
	workdir string
	hosts   []env.Host
}

// byWorkdir groups hosts by their work dir, in first-seen order.
func byWorkdir(e *env.Env, hosts []env.Host) []workdirGroup {
	var gs []workdirGroup
	for _, h := range hosts {
		wd := e.HostWorkdir(h)
		i := slices.IndexFunc(gs, func(g workdirGroup) bool { return g.workdir == wd })
		if i < 0 {
			gs = append(gs, workdirGroup{workdir: wd})
			i = len(gs) - 1
		}
		gs[i].hosts = append(gs[i].hosts, h)
	}
	return gs
}
