package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// The benchmarks of this file put `dstgen check`, the whole command (read
// and parse the file, validate every record, check, print), beside the
// anchor of each row of issue 21 in one run, and report ratios: the
// machine is shared, so only figures taken side by side compare. Each
// history is generated from a fixed seed and written to a temporary file.
// "process" is the real binary run as a child (its own start-up included;
// its peak RSS from GNU time); "inprocess" is the same command through
// run(), which is what -cpuprofile sees.

// writeBenchHistory writes ops as a dst-history/1 file and returns its path.
func writeBenchHistory(b *testing.B, ops []history.Op) string {
	b.Helper()
	var buf bytes.Buffer
	if err := fixture.WriteHistory(&buf, &history.Meta{Scenario: "bench", Clock: "monotonic"}, ops); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// checkRun is one `dstgen check` and what it left.
type checkRun struct {
	wall   time.Duration
	code   int
	out    string
	maxRSS int64 // bytes; process runs only
	heap   uint64
}

// timeBin is GNU time, which reports a command's peak RSS. A child's own
// rusage will not do: Go starts it with vfork, and Linux counts the
// parent's resident pages at that moment into the child's maximum, so a
// benchmark that holds the generated history would be measured, not
// dstgen. time forks the command from its own small process.
const timeBin = "/usr/bin/time"

// checkProcess runs the binary as a child process (under GNU time, when
// there is one, for its peak RSS).
func checkProcess(b *testing.B, bin string, args []string) checkRun {
	b.Helper()
	// Collected and swept first: the benchmark's own collector must not
	// run on the cores the child needs.
	runtime.GC()
	debug.FreeOSMemory()
	rssFile := filepath.Join(b.TempDir(), "rss")
	cmd := exec.Command(bin, args...)
	if _, err := os.Stat(timeBin); err == nil {
		cmd = exec.Command(timeBin, append([]string{"-f", "%M", "-o", rssFile, bin}, args...)...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	r := checkRun{wall: time.Since(t0), out: out.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		b.Fatalf("run %s: %v", bin, err)
	}
	// time writes "Command exited with non-zero status N" before the
	// figure when the command fails: the figure is the last line.
	if data, err := os.ReadFile(rssFile); err == nil {
		lines := strings.Fields(string(data))
		if len(lines) == 0 {
			b.Fatalf("%s wrote no figure", timeBin)
		}
		if kb, err := strconv.ParseInt(lines[len(lines)-1], 10, 64); err == nil {
			r.maxRSS = kb << 10
		}
	}
	return r
}

// checkInProcess runs the same command through run() and samples the heap
// in use above the level before it started.
func checkInProcess(args []string) checkRun {
	debug.FreeOSMemory()
	var out, errb bytes.Buffer
	var r checkRun
	r.heap = peakHeapInuse(func() {
		t0 := time.Now()
		r.code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
		r.wall = time.Since(t0)
	})
	r.out = out.String() + errb.String()
	return r
}

// peakHeapInuse runs f and returns the peak heap in use (objects plus
// unused spans, read through runtime/metrics, which does not stop the
// world) while it ran, above the level just before.
func peakHeapInuse(f func()) uint64 {
	read := func(s []metrics.Sample) uint64 {
		metrics.Read(s)
		return s[0].Value.Uint64() + s[1].Value.Uint64()
	}
	sample := func() []metrics.Sample {
		return []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	}
	runtime.GC()
	base := read(sample())
	peak := base
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := sample()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read(s))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak - min(peak, base)
}

func (r checkRun) expect(b *testing.B, how string, code int, want string) {
	b.Helper()
	if r.code != code || !strings.Contains(r.out, want) {
		b.Fatalf("%s: exit %d, want %d with %q\n%.2000s", how, r.code, code, want, r.out)
	}
}

// BenchmarkCheckVsPorcupine is rows 1 and 2 of issue 21: `dstgen check
// --model kv --checker linearizability` on a 100k-op kv history (16
// processes), whole command including the parse of the file, against raw
// porcupine v1.3.1 checking the same ops, already built, with the model a
// porcupine user would write (fixture.PorcupineKV): its check phase alone.
//
//   - valid: 1000 keys, linearizable; porcupine.CheckOperations.
//   - bad-timeouts: 10 keys, 10% of the writes timed out, one stale read;
//     porcupine.CheckOperationsTimeout with 60 s, which it does not finish
//     in (porcupine-hit-limit=1: its time is the limit, so the ratio is a
//     bound). This row takes a minute per iteration.
//
// Every iteration runs the child process, the in-process command and
// porcupine back to back (order alternating), so noise hits all alike;
// process/porcupine and inprocess/porcupine are ratios of summed times
// (below 1: dstgen is faster).
func BenchmarkCheckVsPorcupine(b *testing.B) {
	bin := buildDstgen(b)
	for _, c := range []struct {
		name  string
		ops   func() []history.Op
		code  int
		want  string
		limit time.Duration // porcupine's time limit; 0: none
	}{
		{"valid", func() []history.Op { return fixture.KV(100_000, 1000, 16, 42) }, 0, "outcome=valid", 0},
		{"bad-timeouts", func() []history.Op {
			ops := fixture.KVTimeouts(100_000, 10, 16, 0.1, 42)
			if !fixture.StaleRead(ops) {
				b.Fatal("no read to make stale")
			}
			return ops
		}, 1, "anomaly nonlinearizable", 60 * time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			ops := c.ops()
			path := writeBenchHistory(b, ops)
			raw := fixture.PorcupineOps(ops)
			ops = nil
			args := []string{"check", "--model", "kv", "--checker", "linearizability", path}
			var proc, inproc, theirs time.Duration
			var rss int64
			capped := false
			porc := func() {
				runtime.GC()
				debug.FreeOSMemory()
				t0 := time.Now()
				if c.limit == 0 {
					if !porcupine.CheckOperations(fixture.PorcupineKV, raw) {
						b.Fatal("porcupine: not linearizable, dstgen: valid")
					}
				} else {
					switch r := porcupine.CheckOperationsTimeout(fixture.PorcupineKV, raw, c.limit); r {
					case porcupine.Unknown:
						capped = true
					case porcupine.Ok:
						b.Fatal("porcupine: linearizable, dstgen: anomaly")
					}
				}
				theirs += time.Since(t0)
			}
			ours := func() {
				p := checkProcess(b, bin, args)
				p.expect(b, "process", c.code, c.want)
				i := checkInProcess(args)
				i.expect(b, "in process", c.code, c.want)
				proc, inproc, rss = proc+p.wall, inproc+i.wall, max(rss, p.maxRSS)
			}
			n := 0
			for b.Loop() {
				if n%2 == 0 {
					ours()
					porc()
				} else {
					porc()
					ours()
				}
				n++
			}
			b.ReportMetric(float64(proc)/float64(theirs), "process/porcupine")
			b.ReportMetric(float64(inproc)/float64(theirs), "inprocess/porcupine")
			b.ReportMetric(meanMS(proc, n), "process-ms")
			b.ReportMetric(meanMS(inproc, n), "inprocess-ms")
			b.ReportMetric(meanMS(theirs, n), "porcupine-ms")
			b.ReportMetric(float64(rss)/(1<<20), "process-maxrss-MB")
			if capped {
				b.ReportMetric(1, "porcupine-hit-limit")
			}
			b.ReportMetric(0, "ns/op") // the triple's time is no figure of either side
		})
	}
}

func meanMS(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(max(n, 1))
}

// BenchmarkCheckListAppend is row 3 of issue 21: `dstgen check --model
// txn --checker serializability` (serializable) on list-append histories
// of 100k and 1M transactions (4 micro-ops over 1000 keys, a key retired
// after 32 appends, the default of Jepsen's list-append workload; some aborted, some timed
// out), both sizes in every iteration. It reports each size's time and
// time per transaction, growth (ns/txn at 1M over ns/txn at 100k: 1 is
// linear) and the peak memory: the child's max RSS ("process"), or the
// heap in use above the generated inputs ("inprocess", which -cpuprofile
// sees).
func BenchmarkCheckListAppend(b *testing.B) {
	sizes := []int{100_000, 1_000_000}
	paths := make([]string, len(sizes))
	for i, n := range sizes {
		paths[i] = writeBenchHistory(b, fixture.Txns(1, n, 1000, 4, 32, false))
	}
	runtime.GC()
	args := func(path string) []string {
		return []string{"check", "--model", "txn", "--checker", "serializability", "--level", "serializable", "--timeout", "10m", path}
	}
	report := func(b *testing.B, runs func(i int) checkRun) {
		walls := make([]time.Duration, len(sizes))
		var peak int64
		n := 0
		for b.Loop() {
			for i := range sizes {
				r := runs(i)
				r.expect(b, fmt.Sprint(sizes[i]), 0, "outcome=valid")
				walls[i] += r.wall
				peak = max(peak, r.maxRSS, int64(r.heap))
			}
			n++
		}
		perTxn := func(i int) float64 { return float64(walls[i].Nanoseconds()) / float64(n) / float64(sizes[i]) }
		for i, size := range sizes {
			b.ReportMetric(float64(walls[i].Milliseconds())/1000/float64(n), fmt.Sprintf("s-%dk", size/1000))
			b.ReportMetric(perTxn(i), fmt.Sprintf("ns/txn-%dk", size/1000))
		}
		b.ReportMetric(perTxn(1)/perTxn(0), "growth-1M/100k")
		b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("process", func(b *testing.B) {
		bin := buildDstgen(b)
		report(b, func(i int) checkRun { return checkProcess(b, bin, args(paths[i])) })
	})
	b.Run("inprocess", func(b *testing.B) {
		report(b, func(i int) checkRun { return checkInProcess(args(paths[i])) })
	})
}
