package driver

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/history"
)

// counterWL answers every op with answer and dumps a final state that
// records the run's prefix.
type counterWL struct {
	answer   error
	finalErr error
	cfg      *Config
	finals   int
	closed   bool
}

func (w *counterWL) Flags(_ *flag.FlagSet, cfg *Config) { cfg.Name = "cnt" }
func (w *counterWL) Setup(cfg *Config) error            { w.cfg = cfg; return nil }
func (w *counterWL) Client(i int) Client                { return &counterClient{w: w} }
func (w *counterWL) Close() error                       { w.closed = true; return nil }
func (w *counterWL) WriteFinal(context.Context) error {
	w.finals++
	if w.finalErr != nil {
		return w.finalErr
	}
	return os.WriteFile(w.cfg.Final, []byte(w.cfg.Prefix), 0o644)
}

type counterClient struct {
	w *counterWL
	n int
}

func (c *counterClient) Next() (Op, bool) {
	c.n++
	return Op{Type: "write", Key: c.w.cfg.Key("k"), Input: c.n}, true
}

func (c *counterClient) Do(context.Context, Op) (any, error) { return nil, c.w.answer }

func TestExec(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		w        *counterWL
		code     int
		stdout   string
		stderr   []string // in the last line of stderr
		ops      int      // in the history; -1: no history file
		finals   int
		finalOut string
	}{
		{"a run", []string{"-ops", "20", "-clients", "2"}, nil, &counterWL{}, 0,
			"dstgen-driver: ops_produced=20 ok=20 fail=0 unknown=0\n",
			[]string{"cnt: ops=20 ok=20 failed=0 unknown=0 out=", "run_id=r seed=", "prefix=dstgen/r tier=smoke"}, 20, 0, ""},
		{"then the final state", []string{"-ops", "5"}, map[string]string{"DSTGEN_FINAL": "final.json"}, &counterWL{}, 0,
			"dstgen-driver: ops_produced=5 ok=5 fail=0 unknown=0\n", []string{"ops=5"}, 5, 1, "dstgen/r"},
		{"the final state fails", []string{"-ops", "5"}, map[string]string{"DSTGEN_FINAL": "final.json"}, &counterWL{finalErr: errors.New("no member answered")}, 1,
			"dstgen-driver: ops_produced=5 ok=5 fail=0 unknown=0\n", []string{"cnt: no member answered"}, 5, 1, ""},
		{"only the final state", []string{"-final-only"}, map[string]string{"DSTGEN_FINAL": "final.json"}, &counterWL{}, 0,
			"", nil, -1, 1, "dstgen/r"},
		{"nothing succeeded", []string{"-ops", "4"}, map[string]string{"DSTGEN_FINAL": "final.json"}, &counterWL{answer: Fail("refused")}, 1,
			"dstgen-driver: ops_produced=4 ok=0 fail=4 unknown=0\n", []string{"cnt: no operation succeeded (4 issued); first error: refused"}, 4, 0, ""},
		{"bad input", []string{"-ops", "4"}, map[string]string{"DSTGEN_RATE": "fast"}, &counterWL{}, 2,
			"", []string{`cnt: DSTGEN_RATE="fast": want ops/s ≥ 0`}, -1, 0, ""},
		{"help", []string{"-h"}, nil, &counterWL{}, 0, "", []string{"-timeout"}, -1, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"DSTGEN_RUN_ID": "r", "DSTGEN_TIER": "smoke", "DSTGEN_HISTORY": filepath.Join(dir, "sub", "h.jsonl")}
			for k, v := range c.env {
				if k == "DSTGEN_FINAL" {
					v = filepath.Join(dir, v)
				}
				env[k] = v
			}
			var stdout, stderr bytes.Buffer
			code := Exec(context.Background(), c.w, c.args, Env{Getenv: envOf(env), Stdout: &stdout, Stderr: &stderr})
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if code != c.code || stdout.String() != c.stdout {
				t.Errorf("exit %d, stdout %q; want %d, %q (stderr %q)", code, stdout.String(), c.code, c.stdout, stderr.String())
			}
			for _, want := range c.stderr {
				if !strings.Contains(last, want) && !(c.name == "help" && strings.Contains(stderr.String(), want)) {
					t.Errorf("stderr's last line %q lacks %q", last, want)
				}
			}
			if c.code == 2 && len(lines) != 1 {
				t.Errorf("bad input: %d stderr lines, want one: %q", len(lines), stderr.String())
			}
			_, ops, _, err := history.ReadFile(env["DSTGEN_HISTORY"])
			switch {
			case c.ops < 0 && err == nil:
				t.Errorf("a history was written")
			case c.ops >= 0 && (err != nil || len(ops) != c.ops):
				t.Errorf("history: %v, %d ops, want %d", err, len(ops), c.ops)
			}
			if c.w.finals != c.finals {
				t.Errorf("final state written %d times, want %d", c.w.finals, c.finals)
			}
			if got, _ := os.ReadFile(env["DSTGEN_FINAL"]); string(got) != c.finalOut {
				t.Errorf("final state %q, want %q", got, c.finalOut)
			}
			if c.code != 2 && c.name != "help" && !c.w.closed {
				t.Error("the workload was not closed")
			}
		})
	}
}

// A history path that cannot be created is bad input, said in one line.
func TestExecHistoryNotCreatable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := Exec(context.Background(), &counterWL{}, nil, Env{Getenv: envOf(map[string]string{"DSTGEN_RUN_ID": "r", "DSTGEN_HISTORY": filepath.Join(file, "h.jsonl")}),
		Stdout: &bytes.Buffer{}, Stderr: &stderr})
	if code != 2 || !strings.Contains(stderr.String(), "cnt: create the history directory") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q: want 2 and one line", code, stderr.String())
	}
}
