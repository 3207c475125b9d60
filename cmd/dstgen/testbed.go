package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testbed"
	"github.com/spf13/cobra"
)

// newTestbedCmd is `dstgen testbed up N | down | env` (docs/testbed.md).
func newTestbedCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "testbed up N | down | env",
		Short: "N simulated hosts on this machine: network namespaces on a bridge, an sshd in each, env.yml and known_hosts",
		Long: `testbed brings up N hosts on this machine for CI, the etcd example and
anyone without spare machines: network namespaces dstgen-tb-1.. on bridge
dstgen-tb0 (10.77.0.1/24), host i at 10.77.0.(10+i), each with its own sshd
and host key, work dir DIR/hosts/hI/work and a tmpfs data dir
DIR/hosts/hI/data (256 MiB), reached as the uid-0 login user dstgen-tb with
the key DIR/id_ed25519 and DIR/known_hosts. DIR/env.yml reaches them; so
does any env.yml after "dstgen testbed env --into FILE". Root only.
DIR/testbed.json records what up made; down removes exactly that.
See docs/testbed.md.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", testbed.DefaultDir, "testbed dir: keys, known_hosts, env.yml, per-host dirs, testbed.json")
	cmd.AddCommand(newTestbedUpCmd(&dir), newTestbedDownCmd(&dir), newTestbedEnvCmd(&dir))
	return cmd
}

// testbedFail prints "dstgen testbed: reason" and exits 2: every failure of
// testbed is the environment or the input.
func testbedFail(cmd *cobra.Command, err error) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "dstgen testbed: %v\n", err)
	return exitcode.New(exitcode.BadInput, nil)
}

// testbedPreflight is root and the tools, before anything is touched.
func testbedPreflight(cmd *cobra.Command) error {
	if err := testbed.CheckRoot(os.Geteuid()); err != nil {
		return testbedFail(cmd, err)
	}
	if err := testbed.CheckTools(exec.LookPath); err != nil {
		return testbedFail(cmd, err)
	}
	return nil
}

func newTestbedUpCmd(dir *string) *cobra.Command {
	var roles string
	var dataMiB int
	cmd := &cobra.Command{
		Use:   "up N [--dir D] [--roles r1,r2,...] [--data-mib M]",
		Short: "Bring up N hosts (1-20), or find them up; prints one line per host and the env.yml path",
		Long: `up makes N network namespaces on bridge dstgen-tb0 with an sshd each and
writes DIR/env.yml and DIR/known_hosts. It converges: what exists is kept,
what is missing is made, so a second up with the same N prints status=already-up.
A testbed of another N in DIR is refused (down it first).

--roles gives one role per host, comma-separated (several for one host
joined by +, e.g. sut+client); default the recorded roles, else every
host sut and the last client when N >= 2. --data-mib sets the tmpfs size
of each data dir (default the recorded size, else 256); a second up with
another size resizes the mounted tmpfs.

Exit: 0 up; 2 not root, a tool missing (with its apt package), 10.77.0.0/24
already on another interface (named), bad input, or a step failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 || n > testbed.MaxHosts {
				return testbedFail(cmd, fmt.Errorf("up %q: want a number of hosts 1..%d", args[0], testbed.MaxHosts))
			}
			if err := testbedPreflight(cmd); err != nil {
				return err
			}
			c := testbed.Config{Dir: *dir, N: n}
			if cmd.Flags().Changed("data-mib") {
				c.DataMiB = dataMiB // unset: the recorded size, for a second up
			}
			if roles != "" {
				c.Roles = strings.Split(roles, ",")
			}
			res, err := testbed.Up(cmd.Context(), c)
			w := cmd.OutOrStdout()
			if res != nil {
				for _, m := range res.Made {
					fmt.Fprintln(w, runner.FormatKV([][2]string{{"made", m}}))
				}
			}
			if err != nil {
				return testbedFail(cmd, err)
			}
			st := res.State
			for _, h := range st.Hosts {
				fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Name}, {"address", h.Address}, {"port", strconv.Itoa(h.Port)},
					{"roles", strings.Join(h.Roles, ",")}, {"netns", h.NS}, {"sshd_pid", strconv.Itoa(h.PID)},
					{"workdir", h.Workdir}, {"data_dir", h.DataDir}}))
			}
			status := "up"
			if res.AlreadyUp() {
				status = "already-up"
			}
			fmt.Fprintln(w, runner.FormatKV([][2]string{{"status", status}, {"hosts", strconv.Itoa(st.N)}, {"env", st.EnvFile},
				{"key", st.Key}, {"known_hosts", st.KnownHosts}, {"user", st.User}}))
			return nil
		},
	}
	cmd.Flags().StringVar(&roles, "roles", "", "one role per host, comma-separated (default: sut, the last host client when N >= 2)")
	cmd.Flags().IntVar(&dataMiB, "data-mib", testbed.DefaultDataMiB, "size of each host's tmpfs data dir in MiB")
	return cmd
}

func newTestbedDownCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down [--dir D]",
		Short: "Remove everything testbed up made (by its record, processes by pid); exit 0 when nothing was up",
		Long: `down reads DIR/testbed.json and removes what it names: each sshd by pid,
whatever else still runs in the namespaces (sessions, SUT jobs) by pid, the
tmpfs mounts, the namespaces and veths, the bridge, the login user (only if
up created it) and the files up wrote. It prints one removed= line per
thing, and status=down (or status=nothing-up).

Exit: 0 removed or nothing was up; 2 not root, or a step failed (the record
is kept so down can be run again).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := testbedPreflight(cmd); err != nil {
				return err
			}
			removed, err := testbed.Down(cmd.Context(), *dir)
			w := cmd.OutOrStdout()
			for _, r := range removed {
				fmt.Fprintln(w, runner.FormatKV([][2]string{{"removed", r}}))
			}
			if err != nil {
				return testbedFail(cmd, err)
			}
			status := "down"
			if len(removed) == 0 {
				status = "nothing-up"
			}
			fmt.Fprintln(w, runner.FormatKV([][2]string{{"status", status}, {"dir", *dir}}))
			return nil
		},
	}
}

func newTestbedEnvCmd(dir *string) *cobra.Command {
	var into string
	cmd := &cobra.Command{
		Use:   "env [--dir D] [--into FILE]",
		Short: "Print the testbed's ssh: and hosts: YAML, or put them into an existing env.yml",
		Long: `env prints the ssh: and hosts: sections that reach the testbed in DIR.

--into FILE rewrites only the ssh: and hosts: sections of FILE (an
env.yml; when it does not exist, the env.example.yml beside it that
dstgen init wrote), keeping every other section and every comment, and
dropping remote:/bastion: (the single-host spellings of the same). The
result must load as an env.yml, or FILE is left as it was.

Exit: 0 printed or written; 2 no testbed in DIR, or FILE unreadable or
not a valid env.yml afterwards (file:line).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := testbed.LoadState(*dir)
			if err != nil {
				if errors.Is(err, os.ErrPermission) {
					return testbedFail(cmd, testbed.ErrNeedsRoot)
				}
				return testbedFail(cmd, err)
			}
			if into != "" {
				if err := testbed.EnvInto(into, st); err != nil {
					return testbedFail(cmd, err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV([][2]string{{"wrote", into}, {"hosts", strconv.Itoa(st.N)}}))
				return nil
			}
			out, err := testbed.EnvYAML(st)
			if err != nil {
				return testbedFail(cmd, err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "env.yml whose ssh: and hosts: sections to rewrite (other sections and comments kept)")
	return cmd
}
