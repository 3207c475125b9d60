package nemesis

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/shell"
)

// Tag marks what dstgen adds to a host: the iptables chain and rule
// comments, fill-file names, proxy job ids. HealAll removes exactly what
// carries it.
const Tag = "dstgen"

// Chain is the iptables chain (in the filter table) that holds every
// partition rule; INPUT and OUTPUT jump to it from a rule commented Tag.
const Chain = "DSTGEN"

// epochRE is what a fault epoch (and an undo kind) may contain: it is part
// of a file name and of an iptables comment.
var epochRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// checkName refuses an epoch or kind that could leave the undo directory.
func checkName(what, s string) error {
	if !epochRE.MatchString(s) {
		return fmt.Errorf("%s %q: want letters, digits, '.', '_' or '-' (at most 64)", what, s)
	}
	return nil
}

// undoDir is where a host keeps the undo scripts of its live faults.
func undoDir(workdir string) string { return path.Join(workdir, "nemesis", "active") }

// undoPath is the undo script of one fault on a host.
func undoPath(workdir, epoch, kind string) string {
	return path.Join(undoDir(workdir), epoch+"."+kind+".sh")
}

// armUndo writes the script that undoes a fault onto the host, before the
// fault is applied. The script must be idempotent: HealAll may run it after
// Heal already did, or before the fault was ever applied.
func armUndo(ctx context.Context, x Exec, h Host, epoch, kind, script string) error {
	if err := checkName("fault epoch", epoch); err != nil {
		return err
	}
	if err := checkName("undo kind", kind); err != nil {
		return err
	}
	p := undoPath(h.Workdir, epoch, kind)
	cmd := fmt.Sprintf("mkdir -p %s && printf '%%s\\n' %s > %s.tmp && mv %s.tmp %s",
		shell.Quote(undoDir(h.Workdir)), shell.Quote("# dstgen undo "+epoch+" "+kind+"\n"+script),
		shell.Quote(p), shell.Quote(p), shell.Quote(p))
	if _, err := x.Run(ctx, h.Host, cmd); err != nil {
		return fmt.Errorf("%s: write undo script for %s: %w", h.Name, epoch, err)
	}
	return nil
}

// Guard arms script as the undo of something a run started on h that is
// not a fault — the run's workload job — under the same tag scheme
// (<tag>.<kind>.sh), so `dstgen heal --all` (HealAll) undoes it after the
// run died; Unguard removes it without running it once the run undid it
// itself.
func Guard(ctx context.Context, x Exec, h Host, tag, kind, script string) error {
	return armUndo(ctx, x, h, tag, kind, script)
}

// Unguard removes the undo script Guard armed, without running it.
func Unguard(ctx context.Context, x Exec, h Host, tag, kind string) error {
	if err := checkName("undo tag", tag); err != nil {
		return err
	}
	if _, err := x.Run(ctx, h.Host, "rm -f "+shell.Quote(undoPath(h.Workdir, tag, kind))); err != nil {
		return fmt.Errorf("%s: remove the %s guard of %s: %w", h.Name, kind, tag, err)
	}
	return nil
}

// runUndo runs one fault's undo script and removes it (and its lease)
// once it succeeded. A script that is not there has nothing left to undo.
func runUndo(ctx context.Context, x Exec, h Host, epoch, kind string) error {
	cmd := undoOnce + "dstgen_undo " + shell.Quote(undoPath(h.Workdir, epoch, kind)) + "\ncase $? in 0|3) ;; 4) echo 'another heal of this fault still holds its lock' >&2; exit 1;; *) exit 1;; esac"
	if _, err := x.Run(ctx, h.Host, cmd); err != nil {
		return fmt.Errorf("%s: heal %s (%s): %w", h.Name, epoch, kind, err)
	}
	return nil
}

// sbinPath puts the sbin dirs on PATH in front of every script that runs
// iptables, tc or ip: a non-root login shell's PATH (Debian's default for
// users) lacks them, and "iptables not installed" would be a lie.
const sbinPath = "PATH=$PATH:/usr/sbin:/sbin:/usr/local/sbin\n"

// leaseSuffix names a dead-man timer's lease beside its undo script.
const leaseSuffix = ".lease"

// undoOnce defines the shell function dstgen_undo PATH [TOKEN], which
// runs one undo script at most once at a time and removes it (and its
// lease) when it succeeded. A window's heal, `dstgen heal --all` and the
// dead-man timer can meet on the same script (a lease that runs out while
// the heal is under way); two runs at once undo each other's steps (one
// deletes the chain the other is flushing) and the loser reports a heal
// that failed. The lock is a directory beside the script (mkdir is
// atomic) holding its holder's pid, so that a holder that died (an SSH
// session cut mid-heal) does not block the next; the wait is bounded (200
// tenths of a second, inside one round trip's 30 s). With TOKEN (the
// dead-man timer's), the script runs only if its lease still names that
// token: while the timer waited, a heal may have removed the script and
// the next injection of the epoch armed its own.
// Returns 0 ran and removed, 1 the script failed (its output is the
// caller's), 3 nothing of its own there, 4 the lock was never freed.
const undoOnce = `dstgen_undo() {
  _n=0
  until mkdir "$1.run" 2>/dev/null; do
    _p=$(cat "$1.run/pid" 2>/dev/null)
    if [ -n "$_p" ] && ! kill -0 "$_p" 2>/dev/null; then rm -rf "$1.run"; continue; fi
    _n=$((_n+1)); [ $_n -lt 200 ] || return 4
    sleep 0.1 2>/dev/null || sleep 1
  done
  echo $$ > "$1.run/pid"
  _t=; [ -z "${2:-}" ] || read -r _ _t < "$1` + leaseSuffix + `" 2>/dev/null
  if [ ! -f "$1" ] || [ "$_t" != "${2:-}" ]; then _r=3
  elif sh "$1"; then rm -f "$1" "$1` + leaseSuffix + `"; _r=0
  else _r=1; fi
  rm -rf "$1.run"
  return $_r
}
`

// defaultLease is Fault.Lease's default.
const defaultLease = 30 * time.Second

// maxDeadmanTicks bounds a dead-man timer's loop: a day of one-second
// ticks, however often it is renewed.
const maxDeadmanTicks = 86400

// leaseOf is f's lease in whole seconds, at least 1.
func leaseOf(f Fault) int {
	l := f.Lease
	if l <= 0 {
		l = defaultLease
	}
	return max(int(l/time.Second), 1)
}

// renewScript extends the lease of one fault's dead-man timer on a host
// by lease seconds from now; put in front of the script that reads the
// fault's evidence, it costs no round trip of its own.
func renewScript(h Host, tag, kind string, lease int) string {
	l := shell.Quote(undoPath(h.Workdir, tag, kind) + leaseSuffix)
	return fmt.Sprintf("[ -f %[1]s ] && read -r _ t < %[1]s && echo \"$(( $(date +%%s) + %[2]d )) $t\" > %[1]s\n", l, lease)
}

// deadmanScript starts the dead-man timer of one fault on a host: a
// detached process (one simple command, every fd redirected, so the SSH
// session does not wait for it) that runs the fault's undo script once
// the lease has run out without a renewal, and exits as soon as the undo
// script or its lease is gone (healed). Its loop is bounded
// (maxDeadmanTicks).
//
// The lease file reads "<deadline> <token>", the token this injection's
// own: a timer whose fault was healed can still be asleep when the same
// epoch is injected again (a rerun, heal then re-inject), and the new
// undo script exists before its lease is written. Without the token that
// old timer would read no deadline and run the new fault's undo half-way
// through its apply; with it, a lease that is missing or names another
// token ends the old timer instead.
func deadmanScript(h Host, tag, kind string, lease int) string {
	u := undoPath(h.Workdir, tag, kind)
	loop := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do [ -f "$1" ] || exit 0; read -r d t < "$2" 2>/dev/null || exit 0; [ "$t" = "$3" ] || exit 0; [ "$(date +%%s)" -ge "$d" ] && break; sleep 1; i=$((i+1)); done; dstgen_undo "$1" "$3"`, maxDeadmanTicks)
	loop = undoOnce + loop
	return "tok=$$.$(date +%s%N)\n" +
		fmt.Sprintf("echo \"$(( $(date +%%s) + %d )) $tok\" > %s\n", lease, shell.Quote(u+leaseSuffix)) +
		"S=; command -v setsid >/dev/null 2>&1 && S=setsid\n" +
		fmt.Sprintf("$S nohup sh -c %s dstgen-deadman %s %s \"$tok\" </dev/null >/dev/null 2>&1 &\n", shell.Quote(loop), shell.Quote(u), shell.Quote(u+leaseSuffix))
}

// healOrdered restarts, by the bootstrap rule, the members whose undo
// scripts HealAll listed as ordered (pending[i] for hosts[i]) and removes
// those scripts once their members run; a member without the ordering
// (env.yml no longer says sut.bootstrap) gets the guarded plain restart.
func healOrdered(ctx context.Context, x Exec, hosts []Host, pending [][]string) ([]Removed, error) {
	var down, plain []Host
	var errs []string
	for i, h := range hosts {
		if len(pending[i]) == 0 {
			continue
		}
		switch {
		case ordered([]Host{h}):
			down = append(down, h)
		case h.SUT != nil && h.SUT.StartScript != "":
			plain = append(plain, h)
		default:
			errs = append(errs, fmt.Sprintf("%s: undo %s: the SUT has no start command dstgen can run", h.Name, strings.Join(pending[i], ", ")))
		}
	}
	ok := map[string]string{}
	if len(down) > 0 {
		tctx, cancel := context.WithTimeout(ctx, orderedBound(down)+startWait)
		what, err := orderedRestart(tctx, x, down)
		cancel()
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			for _, h := range down {
				ok[h.Name] = what
			}
		}
	}
	for _, h := range plain {
		if _, err := x.Run(ctx, h.Host, restartUndo(h.SUT)); err != nil {
			errs = append(errs, fmt.Sprintf("%s: restart the SUT: %v", h.Name, err))
			continue
		}
		ok[h.Name] = "restarted without ordering"
	}
	var out []Removed
	for i, h := range hosts {
		what, done := ok[h.Name]
		if !done {
			continue
		}
		for _, name := range pending[i] {
			p := shell.Quote(path.Join(undoDir(h.Workdir), name+".sh"))
			if _, err := x.Run(ctx, h.Host, "rm -f "+p+" "+shell.Quote(path.Join(undoDir(h.Workdir), name+".sh"+leaseSuffix))); err != nil {
				errs = append(errs, fmt.Sprintf("%s: remove undo %s: %v", h.Name, name, err))
				continue
			}
			out = append(out, Removed{Host: h.Name, What: "undo " + name + " (" + what + ")"})
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// Removed is one thing HealAll took away.
type Removed struct {
	Host string
	What string // "undo S1-w1.iptables", "iptables chain DSTGEN", "fill file /data/.dstgen-fill-S3-w1"
}

// healAllScript runs every undo script, then sweeps what carries the tag
// even without one (a crash between applying a fault and recording it
// cannot happen, since the script comes first, but a hand-made rule
// copied from a log can): the DSTGEN chain and its jumps, fill files in
// the SUT data dir. It prints one "removed <what>" line per thing.
func healAllScript(h Host, keep []string) string { return sweepScript(h, false, keep) }

// leftoversScript lists what healAllScript would remove, one "left <what>"
// line per thing, and changes nothing.
func leftoversScript(h Host) string { return sweepScript(h, true, nil) }

// sweepScript is healAllScript, or with list only its listing. The undo
// scripts of the tags in keep are left alone.
func sweepScript(h Host, list bool, keep []string) string {
	var b strings.Builder
	b.WriteString(sbinPath)
	dir := shell.Quote(undoDir(h.Workdir))
	skip := ""
	for _, t := range keep {
		skip += "case \"$(basename \"$f\")\" in " + shell.Quote(t+".") + "*) continue;; esac; "
	}
	if list {
		fmt.Fprintf(&b, "for f in %s/*.sh; do [ -f \"$f\" ] && echo \"left undo $(basename \"$f\" .sh)\"; done\n", dir)
	} else {
		// An ordered restart's undo is the caller's to carry out, over
		// the whole cluster (ordered.go): listed, not run.
		b.WriteString(undoOnce)
		fmt.Fprintf(&b, "for f in %s/*.sh; do [ -f \"$f\" ] || continue; %scase \"$f\" in *.%s.sh) echo \"ordered $(basename \"$f\" .sh)\"; continue;; esac; dstgen_undo \"$f\" >/dev/null 2>&1; case $? in 0) echo \"removed undo $(basename \"$f\" .sh)\";; 3) ;; *) echo \"failed undo $(basename \"$f\" .sh)\";; esac; done\n", dir, skip, orderedUndoKind)
	}
	// iptables: every DSTGEN and DSTGEN-<hooks> chain, the jumps to it
	// first (-w waits for the xtables lock).
	b.WriteString(`if command -v iptables >/dev/null 2>&1; then
  for ch in $(iptables -w -S 2>/dev/null | awk '$1=="-N" && ($2=="` + Chain + `" || $2 ~ /^` + Chain + `-/) {print $2}'); do
`)
	if list {
		b.WriteString("    echo \"left iptables chain $ch\"\n")
	} else {
		b.WriteString(`    for c in INPUT OUTPUT FORWARD; do while iptables -w -D $c -j $ch -m comment --comment ` + Tag + ` 2>/dev/null; do echo "removed iptables jump $c to $ch"; done; done
    iptables -w -F $ch && iptables -w -X $ch && echo "removed iptables chain $ch"
`)
	}
	b.WriteString("  done\nfi\n")
	// tc: a qdisc carries no comment; dstgen's root qdiscs have handle
	// d57: (netem.go), and only those are deleted.
	b.WriteString(`if command -v tc >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
  for d in $(ip -o link show | awk -F': ' '{sub(/@.*/,"",$2); print $2}'); do
    if tc qdisc show dev "$d" 2>/dev/null | grep -q '^qdisc [a-z]* ` + netemHandle + ` root'; then `)
	if list {
		b.WriteString(`echo "left qdisc ` + netemHandle + ` on $d"; fi
`)
	} else {
		b.WriteString(`tc qdisc del dev "$d" root && echo "removed qdisc ` + netemHandle + ` on $d"; fi
`)
	}
	b.WriteString("  done\nfi\n")
	if h.SUT != nil && h.SUT.DataDir != "" {
		verb := `rm -f "$f" && echo "removed fill file $f"`
		if list {
			verb = `echo "left fill file $f"`
		}
		fmt.Fprintf(&b, "for f in %s/.%s-fill-*; do [ -e \"$f\" ] || continue; %s; done\n", shell.Quote(h.SUT.DataDir), Tag, verb)
	}
	b.WriteString("exit 0\n")
	return b.String()
}

// Leftovers lists, on every host at once, what an earlier run (or a hand
// injection) left that HealAll would remove — undo scripts, DSTGEN
// chains, dstgen's qdiscs, fill files — and changes nothing: a run's
// pre-flight refuses to start on a host still faulted (docs/dst-run.md
// §7, pre-flight). An unreachable host is an error naming it.
func Leftovers(ctx context.Context, x Exec, hosts []Host) ([]Removed, error) {
	res := make([][]Removed, len(hosts))
	errs := make([]string, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := x.Run(ctx, h.Host, leftoversScript(h))
			for _, line := range strings.Split(out, "\n") {
				if what, ok := strings.CutPrefix(line, "left "); ok {
					res[i] = append(res[i], Removed{Host: h.Name, What: what})
				}
			}
			if err != nil {
				errs[i] = fmt.Sprintf("%s: list leftovers: %v", h.Name, err)
			}
		}()
	}
	wg.Wait()
	var out []Removed
	for _, r := range res {
		out = append(out, r...)
	}
	var msgs []string
	for _, e := range errs {
		if e != "" {
			msgs = append(msgs, e)
		}
	}
	if len(msgs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// HealAll removes every fault dstgen may have left on the hosts, whoever
// made it and whenever, and says what it removed. Hosts are healed at
// once, each in its own round trip, so hosts that hang cost their own
// bound only and never starve the ones that answer; the output is in
// hosts' order. An unreachable host is an error naming it, and the others
// are still healed. The guards (Guard) of the tags in keep are left to
// their owner: a live run heals its faults but stops its own workload
// itself, after the quiesce.
func HealAll(ctx context.Context, x Exec, hosts []Host, keep ...string) ([]Removed, error) {
	type result struct {
		removed []Removed
		errs    []string
	}
	res := make([]result, len(hosts))
	pending := make([][]string, len(hosts)) // ordered undo tags per host
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdout, err := x.Run(ctx, h.Host, healAllScript(h, keep))
			for _, line := range strings.Split(stdout, "\n") {
				if name, ok := strings.CutPrefix(line, "ordered "); ok {
					pending[i] = append(pending[i], name)
				} else if what, ok := strings.CutPrefix(line, "removed "); ok {
					res[i].removed = append(res[i].removed, Removed{Host: h.Name, What: what})
				} else if what, ok := strings.CutPrefix(line, "failed "); ok {
					res[i].errs = append(res[i].errs, fmt.Sprintf("%s: %s did not succeed", h.Name, what))
				}
			}
			if err != nil {
				msg := err.Error()
				if !strings.HasPrefix(msg, h.Name+":") { // the transport's errors name the host already
					msg = h.Name + ": " + msg
				}
				res[i].errs = append(res[i].errs, msg)
			}
		}()
	}
	wg.Wait()
	var out []Removed
	var errs []string
	rm, err := healOrdered(ctx, x, hosts, pending)
	out = append(out, rm...)
	if err != nil {
		errs = append(errs, err.Error())
	}
	for _, r := range res {
		out = append(out, r.removed...)
		errs = append(errs, r.errs...)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return out, nil
}
