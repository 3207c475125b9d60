package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/shell"
)

// The remote half of the job protocol lives in this file as POSIX sh text so
// that it can be run and tested with a local `sh -c` exactly as it runs on a
// host. Every value spliced into a script goes through Quote; the scripts
// never build command text from remote output.

// jobIDPattern is the job ID grammar: it doubles as a remote directory name,
// so it forbids everything a shell or a path could interpret.
var jobIDPattern = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$`)

// ValidateJobID rejects an ID that could not be a job directory name. IDs are
// rejected, never rewritten: a silently sanitized ID would name a different
// job than the caller asked about.
func ValidateJobID(id string) error {
	if !jobIDPattern.MatchString(id) {
		return fmt.Errorf("invalid job id %q: want 1-64 of [A-Za-z0-9._-], not starting with '-' or '.'", id)
	}
	return nil
}

// remotePath renders a remote path as a shell word. A leading "~" stays
// outside the quotes so the remote shell still expands it to $HOME; the rest
// is quoted like any other value.
func remotePath(p string) string {
	switch {
	case p == "~":
		return `"$HOME"`
	case strings.HasPrefix(p, "~/"):
		return `"$HOME"/` + shell.Quote(p[2:])
	}
	return shell.Quote(p)
}

// jobShellLib is prepended to every job script. jstat prints one job's
// status as key=value lines. A job is running while its pid is alive on the
// same boot and no rc was written; lost when neither holds (killed with its
// wrapper, host rebooted); a job dir younger than startGraceS without a pid
// is still starting and reported running.
const jobShellLib = `
startGraceS=10
bootid() { cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo none; }
rd() { v=; [ -f "$1" ] && IFS= read -r v <"$1"; printf '%s' "$v"; }
` + pstartFunc + `
# isrun PID START: PID is alive and, when its start time was recorded, is
# still the same process (not a reused pid).
isrun() {
	case $1 in ''|*[!0-9]*) return 1;; esac
	kill -0 "$1" 2>/dev/null || return 1
	[ -z "$2" ] || [ "$(pstart "$1")" = "$2" ]
}
jstat() {
	d=$1
	if [ ! -d "$d" ]; then echo status=absent; return 0; fi
	pid=$(rd "$d/pid"); rc=$(rd "$d/rc"); st=$(rd "$d/start"); en=$(rd "$d/end")
	boot=$(rd "$d/boot"); sig=$(rd "$d/stopped")
	now=$(date +%s)
	case $st in ''|*[!0-9]*) st=$now;; esac
	case $pid in *[!0-9]*) pid=;; esac
	if [ -n "$rc" ]; then
		s=finished
		case $en in ''|*[!0-9]*) en=$now;; esac
	elif [ -n "$pid" ] && [ "$boot" = "$(bootid)" ] && { isrun "$pid" "$(rd "$d/pstart")" || isrun "$(rd "$d/pgid")" "$(rd "$d/pgstart")"; }; then
		# The command is alive, or it just exited and its wrapper (the
		# group leader) is still writing rc: running, not lost.
		s=running; en=$now
	elif [ -z "$pid" ] && [ $((now - st)) -lt $startGraceS ]; then
		s=running; en=$now
	else
		s=lost; en=$now
	fi
	echo "status=$s"
	echo "pid=$pid"
	echo "rc=$rc"
	echo "start=$st"
	echo "elapsed=$((en - st))"
	[ -n "$sig" ] && echo "stopped=$sig"
	return 0
}
`

// pstartFunc defines pstart PID: the process's start time in clock ticks
// since boot (field 22 of /proc/PID/stat, read after the last ')' since
// the command name may hold spaces), or nothing without /proc. Recorded
// next to pid and pgid, it tells the job's own process from a later one
// that reused the pid. It holds no single quote: it is also spliced into
// a single-quoted sh -c argument.
const pstartFunc = `pstart() { s=$(cat /proc/$1/stat 2>/dev/null) || return 0; s=${s##*) }; set -- $s; printf %s "${20}"; }`

// jobWrapper is the detached process. It records its own pid as the process
// group (setsid made it the leader), runs the command in a child shell that
// records its pid from inside and execs the command (so pid names the
// command itself), then records end time and rc. It traps TERM/INT so that a
// `job stop` reaches the command but the wrapper survives to record the
// command's real exit status.
const jobWrapper = `d=$1; shift
` + pstartFunc + `
pstart $$ >"$d/pgstart"
echo $$ >"$d/pgid"
trap : TERM INT
sh -c '(` + pstartFunc + `; pstart $$ >"$0/pstart"); echo $$ >"$0/pid.tmp" && mv -f "$0/pid.tmp" "$0/pid" && exec "$@"' "$d" "$@"
rc=$?
date +%s >"$d/end"
echo $rc >"$d/rc.tmp" && mv -f "$d/rc.tmp" "$d/rc"
`

// jobDirExpr returns the shell prologue that sets w (workdir) and d (job dir).
func jobDirExpr(workdir, id string) string {
	return "w=" + remotePath(workdir) + "\nid=" + shell.Quote(id) + "\nd=\"$w/jobs/$id\"\n"
}

// startScript launches argv as job id under workdir. A job dir that exists
// and is running answers its status with already=1 and starts nothing; a
// terminal one is moved to jobs/.archive so its files are not lost. mkdir of
// the job dir is the lock between two concurrent starts. The launched command
// is a single simple command with every fd redirected, so the SSH session
// does not wait for it.
func startScript(workdir, id string, argv []string) string {
	var b strings.Builder
	b.WriteString(jobShellLib)
	b.WriteString(jobDirExpr(workdir, id))
	fmt.Fprintf(&b, `want=%s
# same: the running job was started with the argv asked for now. Its argv
# file (or, for a job of an older dstgen, meta's cmd line) is compared; a
# job so young that it has neither counts as the same.
same() {
	if [ -f "$d/argv" ]; then [ "$(cat "$d/argv")" = "$want" ]; return; fi
	[ -f "$d/meta" ] || return 0
	[ "$(sed -n 's/^cmd=//p' "$d/meta")" = "$want" ]
}
already() { echo already=1; same || echo differs=1; jstat "$d"; exit 0; }
mkdir -p "$w/jobs" || { echo "error=cannot create job directory"; exit 3; }
if [ -d "$d" ]; then
	s=$(jstat "$d" | sed -n 's/^status=//p')
	if [ "$s" = running ]; then already; fi
	mkdir -p "$w/jobs/.archive" && mv "$d" "$w/jobs/.archive/$id.$(date +%%s).$$" || { echo "error=cannot archive previous run"; exit 3; }
fi
if ! mkdir "$d" 2>/dev/null; then already; fi
printf '%%s' "$want" >"$d/argv"
bootid >"$d/boot"
date +%%s >"$d/start"
{
	echo "id=$id"
	echo "start_utc=$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)"
	printf 'cmd=%%s\n' %s
} >"$d/meta"
S=; command -v setsid >/dev/null 2>&1 && S=setsid
cd "$w" || { echo "error=cannot enter workdir"; exit 3; }
$S nohup sh -c %s dstgen-job "$d" %s </dev/null >"$d/stdout" 2>"$d/stderr" &
i=0
while [ ! -s "$d/pid" ] && [ ! -f "$d/rc" ] && [ $i -lt 60 ]; do sleep 0.03 2>/dev/null || sleep 1; i=$((i+1)); done
echo started=1
jstat "$d"
`, shell.Quote(shell.QuoteArgs(argv)), shell.Quote(shell.QuoteArgs(argv)), shell.Quote(jobWrapper), shell.QuoteArgs(argv))
	return b.String()
}

// statusScript prints one job's status.
func statusScript(workdir, id string) string {
	return jobShellLib + jobDirExpr(workdir, id) + "jstat \"$d\"\n"
}

// stopScript sends TERM to the job's process group, waits up to grace for the
// command to exit, then KILLs the group. The signal used is recorded in
// "stopped"; when the wrapper died with the group the rc is recorded here as
// 128+signal, as a shell would. Stopping a terminal or absent job changes
// nothing and answers its status.
func stopScript(workdir, id string, grace time.Duration) string {
	ticks := int(grace / (100 * time.Millisecond))
	return jobShellLib + jobDirExpr(workdir, id) + fmt.Sprintf(`s=$(jstat "$d" | sed -n 's/^status=//p')
if [ "$s" != running ]; then jstat "$d"; exit 0; fi
pid=$(rd "$d/pid"); pg=$(rd "$d/pgid")
case $pid in ''|*[!0-9]*) pid=;; esac
case $pg in ''|*[!0-9]*) pg=$pid;; esac
if [ -z "$pid" ]; then sleep 1; pid=$(rd "$d/pid"); case $pid in ''|*[!0-9]*) echo "error=job has no pid yet"; exit 3;; esac; pg=$pid; fi
# No "--" before a negative pid: dash's kill builtin rejects it, and the
# fallback would then signal the command alone and orphan its children.
# The job counts as alive while anything of its group is: a child that
# ignores TERM must still get the KILL.
alive() { kill -0 "-$pg" 2>/dev/null || kill -0 "$pid" 2>/dev/null; }
kill -TERM "-$pg" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
sig=TERM; code=143; i=0
while alive && [ $i -lt %d ]; do sleep 0.1 2>/dev/null || sleep 1; i=$((i+1)); done
if alive; then
	kill -KILL "-$pg" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
	sig=KILL; code=137; i=0
	while alive && [ $i -lt 30 ]; do sleep 0.1 2>/dev/null || sleep 1; i=$((i+1)); done
fi
i=0
while [ ! -f "$d/rc" ] && kill -0 "$pg" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05 2>/dev/null || sleep 1; i=$((i+1)); done
echo $sig >"$d/stopped"
if [ ! -f "$d/rc" ]; then date +%%s >"$d/end"; echo $code >"$d/rc.tmp" && mv -f "$d/rc.tmp" "$d/rc"; fi
jstat "$d"
`, ticks)
}

// listScript prints every job under workdir as records separated by "--".
// Directory names that are not valid job IDs are skipped rather than echoed,
// so a hostile name cannot forge output lines.
func listScript(workdir string) string {
	return jobShellLib + "w=" + remotePath(workdir) + `
[ -d "$w/jobs" ] || exit 0
for d in "$w"/jobs/*; do
	[ -d "$d" ] || continue
	id=${d##*/}
	case $id in ''|-*|.*|*[!A-Za-z0-9._-]*) continue;; esac
	echo "job=$id"
	jstat "$d"
	echo --
done
`
}

// logsScript prints the last lines of one of the job's streams, capped in
// bytes so a runaway log cannot flood the caller.
func logsScript(workdir, id, stream string, lines, maxBytes int) string {
	return jobShellLib + jobDirExpr(workdir, id) + fmt.Sprintf(`[ -d "$d" ] || { echo "error=job absent" >&2; exit 4; }
[ -f "$d/%s" ] || exit 0
tail -n %d "$d/%s" | tail -c %d
`, stream, lines, stream, maxBytes)
}

// parseRecords splits key=value script output into records separated by
// "--" lines. Lines without "=" are ignored (tool noise).
func parseRecords(out []byte) []map[string]string {
	var recs []map[string]string
	cur := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "--" {
			if len(cur) > 0 {
				recs = append(recs, cur)
			}
			cur = map[string]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			continue
		}
		cur[k] = v
	}
	if len(cur) > 0 {
		recs = append(recs, cur)
	}
	return recs
}

// errNoStatus means a job script answered without a status line: the remote
// shell failed before reaching jstat.
var errNoStatus = errors.New("no status in job script output")

// jobStatusFrom builds a JobStatus from one parsed record.
func jobStatusFrom(host, id string, rec map[string]string) (JobStatus, error) {
	st := JobStatus{Host: host, ID: id, Status: rec["status"]}
	if e := rec["error"]; e != "" {
		return st, errors.New(e)
	}
	switch st.Status {
	case StatusRunning, StatusFinished, StatusLost, StatusAbsent:
	case "":
		return st, errNoStatus
	default:
		return st, fmt.Errorf("unknown job status %q", st.Status)
	}
	if v := rec["pid"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return st, fmt.Errorf("bad pid %q", v)
		}
		st.PID = n
	}
	if v := rec["rc"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return st, fmt.Errorf("bad rc %q", v)
		}
		st.RC = &n
	}
	if v := rec["start"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return st, fmt.Errorf("bad start %q", v)
		}
		st.Started = time.Unix(n, 0).UTC()
	}
	if v := rec["elapsed"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			n = 0
		}
		st.Elapsed = time.Duration(n) * time.Second
	}
	st.Stopped = rec["stopped"]
	st.Already = rec["already"] == "1"
	if st.Already && rec["differs"] == "1" && st.Status == StatusRunning {
		st.Status = StatusAlreadyRunning
	}
	if rec["started"] == "1" {
		st.Status = StatusStarted
	}
	return st, nil
}

// JobStartScript is the shell text StartJob sends to start argv as job id
// under workdir (its output is StartJob's to parse): deploy records it so
// that an undo script on the host — run by `dstgen heal`, maybe long after
// the process that wrote it is gone — can bring a killed SUT back exactly
// the way deploy started it.
func JobStartScript(workdir, id string, argv []string) string { return startScript(workdir, id, argv) }

// JobStopScript is the shell text StopJob sends to stop job id under
// workdir (TERM, grace, KILL): the orchestrator arms it as the undo of a
// run's workload, so `dstgen heal --all` stops the workload a dead run
// left going.
func JobStopScript(workdir, id string, grace time.Duration) string {
	return stopScript(workdir, id, grace)
}
