package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

// rebootWait bounds the wait for one host to come back.
const rebootWait = 5 * time.Minute

func newRebootCmd() *cobra.Command {
	var f runnerFlags
	var confirm bool
	cmd := &cobra.Command{
		Use:   "reboot TARGET [--confirm]",
		Short: "Reboot hosts and wait until each is back with a new boot id; refuses hosts that share the control node's kernel",
		Long: `Reboot TARGET (a host, role:R, all) and wait, polling with bounded SSH
round trips, until each host answers again with a new boot id; a host
that is back prints "host=H rebooted=yes boot_id=OLD→NEW after=D".

A host whose kernel is the control node's (a network namespace or a
container on this machine: its boot id equals ours) is refused: rebooting
it would reboot the machine dstgen runs on. So is a container (its own
"reboot" restarts nothing a test can rely on). Without --confirm nothing is
rebooted: the command lists what it would do and exits 2.

Exit: 0 every host rebooted and back; 1 a host refused or did not come back
within 5 minutes; 2 bad input or no --confirm.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, pool, hosts, err := f.openTarget("", args[0])
			if err != nil {
				return err
			}
			defer pool.Close()
			w := cmd.OutOrStdout()
			ctx := cmd.Context()
			local := readBootID()
			var ok []env.Host
			var boot []string
			var refused []string
			for _, h := range hosts {
				id, container, err := bootFacts(ctx, pool, h)
				reason := ""
				switch {
				case err != nil:
					reason = "unreachable: " + err.Error()
				case id == "":
					reason = "no boot id readable: cannot tell when it is back"
				case local != "" && id == local:
					reason = "shares the control node's kernel (network namespace or local container): rebooting it would reboot this machine"
				case container != "":
					reason = "runs in a " + container + " container: restart the container instead"
				}
				if reason != "" {
					refused = append(refused, h.Name)
					fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Name}, {"reboot", "refused"}, {"reason", reason}}))
					continue
				}
				ok, boot = append(ok, h), append(boot, id)
			}
			if !confirm {
				for _, h := range ok {
					fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Name}, {"reboot", "would"}}))
				}
				return fmt.Errorf("reboot: %d host(s) would be rebooted; pass --confirm (task clean:reboot CONFIRM=yes) to do it", len(ok))
			}
			var failed []string
			for i, h := range ok {
				if err := rebootHost(ctx, pool, h, boot[i], w); err != nil {
					failed = append(failed, h.Name+": "+err.Error())
					fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Name}, {"reboot", "failed"}, {"reason", err.Error()}}))
				}
			}
			if len(refused)+len(failed) > 0 {
				return exitcode.New(exitcode.NotSo, fmt.Errorf("reboot: refused %s; failed %s", listOr(refused), listOr(failed)))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&confirm, "confirm", false, "really reboot the hosts")
	return cmd
}

// bootFacts reads h's boot id and the container it runs in ("" for none)
// in one small round trip: nothing is changed on the host to find out.
func bootFacts(ctx context.Context, pool *runner.Pool, h env.Host) (bootID, container string, err error) {
	var out bytes.Buffer
	_, err = pool.Run(ctx, h, `echo "boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
c=
if [ -f /.dockerenv ]; then c=docker; elif [ -f /run/.containerenv ]; then c=podman
elif command -v systemd-detect-virt >/dev/null 2>&1; then c=$(systemd-detect-virt -c 2>/dev/null); [ "$c" = none ] && c=; fi
echo "container=$c"`, nil, &out, io.Discard)
	if err != nil {
		return "", "", err
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "boot_id="); ok {
			bootID = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(l, "container="); ok {
			container = strings.TrimSpace(v)
		}
	}
	return bootID, container, nil
}

// readBootID is the control node's boot id ("" when unreadable, which
// then matches no host).
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func listOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// rebootHost asks h to reboot and waits until it answers with a boot id
// other than before (waitBoot).
func rebootHost(ctx context.Context, pool *runner.Pool, h env.Host, before string, w io.Writer) error {
	if before == "" {
		return errors.New("no boot id recorded before the reboot: cannot tell when it is back")
	}
	// The reboot is delayed so this round trip returns before sshd dies.
	_, _ = pool.Run(ctx, h, `if [ "$(id -u)" -eq 0 ]; then S=; else S="sudo -n"; fi; nohup sh -c "sleep 1; $S reboot" >/dev/null 2>&1 </dev/null &`, nil, io.Discard, io.Discard)
	fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Name}, {"reboot", "sent"}, {"boot_id", before}}))
	read := func(ctx context.Context) (string, error) {
		var out bytes.Buffer
		_, err := pool.Run(ctx, h, "cat /proc/sys/kernel/random/boot_id", nil, &out, io.Discard)
		return strings.TrimSpace(out.String()), err
	}
	return waitBoot(ctx, h.Name, before, read, bootPoll{every: rebootEvery, probe: rebootProbe, bound: rebootWait}, w)
}

// Polling of a rebooting host: a round trip every rebootEvery, each
// bounded by rebootProbe, for rebootWait in all.
const (
	rebootEvery = 5 * time.Second
	rebootProbe = 10 * time.Second
)

// bootPoll bounds waitBoot: the pause between polls, one poll, the whole
// wait. Tests shrink it; the command uses the constants above.
type bootPoll struct{ every, probe, bound time.Duration }

// waitBoot polls read (each call bounded by p.probe) every p.every until
// it returns a boot id other than before, for p.bound at most. A host that
// does not answer is what a reboot looks like, so an error is only kept as
// the last state for the timeout's reason. It prints
// "host=H rebooted=yes boot_id=OLD→NEW after=Ns polls=N" when the host is
// back.
func waitBoot(ctx context.Context, host, before string, read func(context.Context) (string, error), p bootPoll, w io.Writer) error {
	start := time.Now()
	deadline := start.Add(p.bound)
	last := "no answer yet"
	maxPolls := int(p.bound/max(p.every, time.Millisecond)) + 1 // the deadline is the real bound; this caps the loop count too
	for i := 0; i < maxPolls && time.Now().Before(deadline); i++ {
		t := time.NewTimer(min(p.every, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for %s to come back: %w", host, context.Cause(ctx))
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, min(p.probe, max(time.Until(deadline), time.Millisecond)))
		now, err := read(rctx)
		cancel()
		switch {
		case err != nil:
			last = "unreachable: " + oneline.First(err.Error())
		case now == "":
			last = "answers, but no boot id readable"
		case now == before:
			last = "answers with the old boot id (not rebooted yet)"
		default:
			fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", host}, {"rebooted", "yes"}, {"boot_id", before + "→" + now},
				{"after", time.Since(start).Round(time.Second).String()}, {"polls", fmt.Sprint(i + 1)}}))
			return nil
		}
	}
	return fmt.Errorf("not back with a new boot id after %s (last: %s)", p.bound, last)
}
