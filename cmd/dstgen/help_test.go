package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/docs"
)

// TestHelpCommand: `dstgen help` lists the reference topics after the usage,
// `dstgen help <topic>` prints the page byte for byte, `dstgen help
// <command>` is still the command's own help, and an unknown name is a
// one-line exit-2 reason that lists the topics.
func TestHelpCommand(t *testing.T) {
	verdicts, err := os.ReadFile("../../docs/verdicts.md")
	if err != nil {
		t.Fatal(err)
	}
	topics := docs.Topics()
	if len(topics) == 0 {
		t.Fatal("docs.Topics() is empty")
	}
	var list []string
	for _, tp := range topics {
		list = append(list, tp.Name)
	}

	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings, in order
		exact  []byte   // the whole stdout, when set
		stderr string
	}{
		{"no argument lists topics", []string{"help"}, 0,
			[]string{"Usage:", "dstgen [command]", "Reference topics (dstgen help <topic>):", "  verdicts", topicTitle(t, "verdicts")}, nil, ""},
		{"topic prints the page", []string{"help", "verdicts"}, 0, nil, verdicts, ""},
		{"topic with .md", []string{"help", "verdicts.md"}, 0, nil, verdicts, ""},
		{"command help", []string{"help", "init"}, 0, []string{"Usage:", "dstgen init", "--dry-run"}, nil, ""},
		{"subcommand help", []string{"help", "job", "start"}, 0, []string{"Usage:", "dstgen job start"}, nil, ""},
		{"unknown topic", []string{"help", "nosuchtopic"}, 2, nil, []byte{},
			`dstgen: help: unknown command or topic "nosuchtopic"; topics: ` + strings.Join(list, ", ") + " (or a command: dstgen help)\n"},
		{"index is no topic", []string{"help", "README"}, 2, nil, []byte{}, `unknown command or topic "README"`},
		{"path is no topic", []string{"help", "../go.mod"}, 2, nil, []byte{}, `unknown command or topic "../go.mod"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, strings.NewReader(""), &stdout, &stderr)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout.String(), stderr.String())
			}
			if c.exact != nil && !bytes.Equal(stdout.Bytes(), c.exact) {
				t.Errorf("stdout is not the expected %d bytes (got %d):\n%.400s", len(c.exact), stdout.Len(), stdout.String())
			}
			rest := stdout.String()
			for _, s := range c.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", s, stdout.String())
				}
				rest = rest[i+len(s):]
			}
			if c.code == 2 {
				if n := strings.Count(stderr.String(), "\n"); n != 1 {
					t.Errorf("stderr has %d lines, want one:\n%s", n, stderr.String())
				}
			}
			if c.stderr != "" && !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.stderr)
			} else if c.stderr == "" && stderr.Len() > 0 {
				t.Errorf("unexpected stderr: %s", stderr.String())
			}
		})
	}
}

func topicTitle(t *testing.T, name string) string {
	t.Helper()
	for _, tp := range docs.Topics() {
		if tp.Name == name {
			if tp.Title == "" {
				t.Fatalf("topic %s has no title", name)
			}
			return tp.Title
		}
	}
	t.Fatalf("no topic %s", name)
	return ""
}
