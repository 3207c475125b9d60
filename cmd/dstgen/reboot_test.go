package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// bootSeq is a fake host's answers to the boot id read, one per poll;
// past the end it repeats the last one.
type bootSeq struct {
	answers []bootAnswer
	calls   int
}

type bootAnswer struct {
	id  string
	err error
}

func (b *bootSeq) read(ctx context.Context) (string, error) {
	a := b.answers[min(b.calls, len(b.answers)-1)]
	b.calls++
	return a.id, a.err
}

// TestWaitBoot: the wait after a reboot ends when the boot id differs
// from the one read before (saying so, with both ids), keeps polling
// through "unreachable" and "same id", and times out with a one-line
// reason naming the last state.
func TestWaitBoot(t *testing.T) {
	down := errors.New("dial tcp 10.77.0.10:22: connect: connection refused\nmore detail")
	fast := bootPoll{every: time.Millisecond, probe: 50 * time.Millisecond, bound: 2 * time.Second}
	for _, tc := range []struct {
		name      string
		answers   []bootAnswer
		wantErr   string // "" = back
		wantOut   string
		wantCalls int // exact when back
	}{
		{"back after unreachable and old id", []bootAnswer{{"old", nil}, {"", down}, {"", down}, {"new", nil}},
			"", "host=h1 rebooted=yes boot_id=old→new after=", 4},
		{"back at the first poll", []bootAnswer{{"new", nil}}, "", "polls=1", 1},
		{"empty boot id is not back", []bootAnswer{{"", nil}, {"new", nil}}, "", "polls=2", 2},
		{"never goes down", []bootAnswer{{"old", nil}}, "not back with a new boot id after 2s (last: answers with the old boot id (not rebooted yet))", "", 0},
		{"never comes back", []bootAnswer{{"", down}}, "not back with a new boot id after 2s (last: unreachable: dial tcp 10.77.0.10:22: connect: connection refused)", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := &bootSeq{answers: tc.answers}
			var w bytes.Buffer
			err := waitBoot(context.Background(), "h1", "old", seq.read, fast, &w)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err %v, want back", err)
				}
				if !strings.Contains(w.String(), tc.wantOut) || strings.Count(w.String(), "\n") != 1 {
					t.Errorf("output %q lacks %q (one line)", w.String(), tc.wantOut)
				}
				if seq.calls != tc.wantCalls {
					t.Errorf("%d polls, want %d", seq.calls, tc.wantCalls)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "\n") || w.Len() != 0 {
				t.Errorf("reason not one line or output on timeout: %q %q", err, w.String())
			}
			if limit := int(fast.bound/fast.every) + 1; seq.calls > limit {
				t.Errorf("%d polls, more than the bound's %d", seq.calls, limit)
			}
		})
	}
}

// TestWaitBootCancelled: a cancelled context ends the wait at once with
// the cause, whatever the bound.
func TestWaitBootCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	seq := &bootSeq{answers: []bootAnswer{{"old", nil}}}
	err := waitBoot(ctx, "h1", "old", seq.read, bootPoll{every: time.Hour, probe: time.Hour, bound: time.Hour}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "waiting for h1 to come back: context canceled") || seq.calls != 0 {
		t.Errorf("err %v after %d polls", err, seq.calls)
	}
}

// TestRebootRefusesSharedKernel: a real sshd on this machine shares its
// kernel, so reboot --confirm refuses it (exit 1, the reason on the
// host's line) and sends nothing.
func TestRebootRefusesSharedKernel(t *testing.T) {
	envPath, _, _, _ := jobCLIEnv(t, 1)
	code, out, errOut := runCLI(t, "reboot", "all", "--confirm", "--env", envPath)
	if code != 1 || !strings.Contains(out, "host=h1 reboot=refused") || !strings.Contains(out, "shares the control node's kernel") || strings.Contains(out, "reboot=sent") {
		t.Errorf("exit %d out %q err %q", code, out, errOut)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "refused h1") {
		t.Errorf("stderr not one line naming h1: %q", errOut)
	}
}
