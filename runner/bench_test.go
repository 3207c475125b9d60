package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

const benchCmds = 200

// benchHosts starts 4 real sshd trusted by one known_hosts file.
func benchHosts(b *testing.B) (*env.Env, []*sshtest.Server, *sshtest.Keys) {
	b.Helper()
	sshtest.Require(b)
	k := sshtest.NewKeys(b)
	srvs := sshtest.StartTrusted(b, k, 4)
	e, err := env.Load(k.WriteEnv(b, srvs, nil, ""))
	if err != nil {
		b.Fatal(err)
	}
	return e, srvs, k
}

// spread runs benchCmds commands, benchCmds/len(hosts) per host, hosts in
// parallel and each host's commands one after another: the same shape for
// every variant.
func spread(n int, each func(host int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range benchCmds / n {
				if err := each(i); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// viaPool: a fresh Pool per round, so its 4 dials are paid like the
// ControlMaster's 4 master connections.
func viaPool(e *env.Env) error {
	p := NewPool(e, Options{})
	defer p.Close()
	return spread(len(e.Hosts), func(i int) error {
		r, err := p.Run(context.Background(), e.Hosts[i], "true", nil, nil, nil)
		if err != nil || r.ExitCode != 0 {
			return fmt.Errorf("pool run: %v %+v", err, r)
		}
		return nil
	})
}

func sshArgs(k *sshtest.Keys, s *sshtest.Server, extra ...string) []string {
	a := []string{"-F", "/dev/null", "-i", k.Key, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + k.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		"-o", "ConnectTimeout=10", "-p", strconv.Itoa(s.Port), "-l", sshtest.User}
	a = append(a, extra...)
	return append(a, s.Host, "true")
}

// viaSSH: a loop of OpenSSH ssh, one connection per command; with cm, the
// same loop multiplexed over a ControlMaster per host (ControlPersist).
func viaSSH(k *sshtest.Keys, srvs []*sshtest.Server, cmDir string) error {
	var cm [][]string
	for i := range srvs {
		if cmDir != "" {
			cm = append(cm, []string{"-o", "ControlMaster=auto", "-o", "ControlPersist=60",
				"-o", "ControlPath=" + filepath.Join(cmDir, "cm-"+strconv.Itoa(i))})
		} else {
			cm = append(cm, nil)
		}
	}
	err := spread(len(srvs), func(i int) error {
		out, err := exec.Command("ssh", sshArgs(k, srvs[i], cm[i]...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ssh: %v: %s", err, out)
		}
		return nil
	})
	if cmDir != "" {
		for i := range srvs {
			a := append([]string{"-O", "exit"}, sshArgs(k, srvs[i], cm[i]...)...)
			_ = exec.Command("ssh", a[:len(a)-1]...).Run()
		}
	}
	return err
}

// BenchmarkTrue200 runs 200 `true` over 4 real sshd three ways in one run;
// the ratio sub-benchmark times all three in each iteration and reports
// plain-ssh/pool and pool/controlmaster (goals: >= 5, <= 1.5).
func BenchmarkTrue200(b *testing.B) {
	e, srvs, k := benchHosts(b)
	cmRoot := b.TempDir()
	round := 0
	cmDir := func() string {
		round++
		d := filepath.Join(cmRoot, strconv.Itoa(round))
		_ = os.MkdirAll(d, 0o700)
		return d
	}
	report := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*benchCmds)/1000, "ms/cmd")
	}
	b.Run("pool", func(b *testing.B) {
		t0 := time.Now()
		for b.Loop() {
			if err := viaPool(e); err != nil {
				b.Fatal(err)
			}
		}
		report(b, t0)
	})
	b.Run("ssh-plain", func(b *testing.B) {
		t0 := time.Now()
		for b.Loop() {
			if err := viaSSH(k, srvs, ""); err != nil {
				b.Fatal(err)
			}
		}
		report(b, t0)
	})
	b.Run("ssh-controlmaster", func(b *testing.B) {
		t0 := time.Now()
		for b.Loop() {
			if err := viaSSH(k, srvs, cmDir()); err != nil {
				b.Fatal(err)
			}
		}
		report(b, t0)
	})
	b.Run("ratio", func(b *testing.B) {
		var pool, plain, cm time.Duration
		for b.Loop() {
			t0 := time.Now()
			if err := viaPool(e); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := viaSSH(k, srvs, ""); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := viaSSH(k, srvs, cmDir()); err != nil {
				b.Fatal(err)
			}
			pool, plain, cm = pool+t1.Sub(t0), plain+t2.Sub(t1), cm+time.Since(t2)
		}
		b.ReportMetric(float64(plain)/float64(pool), "plain/pool")
		b.ReportMetric(float64(pool)/float64(cm), "pool/cm")
	})
}

// BenchmarkJobStartStatus starts a job and polls its status 100 times per
// iteration, reporting start latency and status p50/p99 (goals: start <= 2
// s, status p99 <= 1 s).
func BenchmarkJobStartStatus(b *testing.B) {
	sshtest.Require(b)
	k := sshtest.NewKeys(b)
	srv := sshtest.Start(b, k, sshtest.Options{})
	k.Trust(b, srv)
	wd := sshtest.Workdir(b)
	e, err := env.Load(k.WriteEnv(b, []*sshtest.Server{srv}, nil, ""))
	if err != nil {
		b.Fatal(err)
	}
	p := NewPool(e, Options{})
	defer p.Close()
	h := e.Hosts[0]
	ctx := context.Background()
	var starts, polls []time.Duration
	i := 0
	for b.Loop() {
		i++
		id := "bench-" + strconv.Itoa(i)
		t0 := time.Now()
		st, err := StartJob(ctx, p, h, wd, id, []string{"sleep", "30"})
		starts = append(starts, time.Since(t0))
		if err != nil || st.Status != StatusStarted {
			b.Fatalf("start: %+v %v", st, err)
		}
		for range 100 {
			t := time.Now()
			s, err := JobStatusOf(ctx, p, h, wd, id)
			polls = append(polls, time.Since(t))
			if err != nil || s.Status != StatusRunning {
				b.Fatalf("status: %+v %v", s, err)
			}
		}
		if _, err := StopJob(ctx, p, h, wd, id, 0); err != nil {
			b.Fatal(err)
		}
	}
	pct := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(starts, 0.5), "start-p50-ms")
	b.ReportMetric(pct(starts, 0.99), "start-max-ms")
	b.ReportMetric(pct(polls, 0.5), "status-p50-ms")
	b.ReportMetric(pct(polls, 0.99), "status-p99-ms")
}
