package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/generator"
)

func newDriverCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "driver",
		Short: "Workload drivers (driver new: a skeleton on the driver contract)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDriverNewCmd())
	return cmd
}

func newDriverNewCmd() *cobra.Command {
	var lang, out, name string
	var force bool
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Write a compiling workload-driver skeleton with the driver contract done and a TODO where the client calls go",
		Long: `driver new writes a workload driver into --out (default ./<name>): main.go,
a Go main package on github.com/dstgen/dstgen/driver, which reads every
DSTGEN_* variable (each also a flag), paces ops at DSTGEN_RATE, bounds each
by a per-op timeout, records the history, continues a client as a new
process after an unknown outcome, and stops on the duration or SIGTERM
(dstgen help driver-contract, §8). Only the calls to the system under test
are left, marked TODO; the skeleton builds and runs as it is, and every op
fails as unsupported until they are filled in.

When --out is in no Go module, a go.mod is written too, requiring
github.com/dstgen/dstgen at this dstgen's version (a dstgen built from a
working tree knows none: add it with go get, or go mod edit -replace to a
checkout). Inside a module, main.go uses that module's requirements.

An existing file is never overwritten without --force.

Exit codes: 0 written; 2 an unknown --lang, a bad --name, an existing file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDriverNew(cmd, lang, out, name, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&lang, "lang", "go", "the skeleton's language (go)")
	f.StringVar(&out, "out", "", "the directory to write to (default ./<name>)")
	f.StringVar(&name, "name", "workload", "the driver's name: its program, its stderr prefix, a new go.mod's module")
	f.BoolVar(&force, "force", false, "overwrite existing files")
	return cmd
}

func runDriverNew(cmd *cobra.Command, lang, out, name string, force bool) error {
	if out == "" {
		out = name
	}
	dir, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("driver new: --out %q: %w", out, err)
	}
	mod := enclosingModule(dir)
	version := moduleVersion()
	if version == "devel" {
		version = ""
	}
	files, err := generator.DriverSkeleton(lang, name, version, mod == "")
	if err != nil {
		return fmt.Errorf("driver new: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	// Refuse before writing anything: never half a skeleton.
	for _, n := range names {
		if p := filepath.Join(out, n); !force {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("driver new: %s exists; --force overwrites it", p)
			}
		}
	}
	for _, n := range names {
		if err := writeNew(filepath.Join(out, n), files[n], force); err != nil {
			return fmt.Errorf("driver new: %w", err)
		}
	}
	w := cmd.OutOrStdout()
	written := mod == ""
	if written {
		mod = filepath.Join(out, "go.mod")
	}
	fmt.Fprintf(w, "driver=%s lang=%s name=%s module=%s written=%s\n", filepath.Join(out, "main.go"), lang, name, mod, strings.Join(names, ","))
	var steps []string
	switch data, _ := os.ReadFile(mod); {
	case written && version != "":
		steps = append(steps, "cd "+out+" && go mod tidy")
	case !bytes.Contains(data, []byte("github.com/dstgen/dstgen")):
		steps = append(steps, "cd "+out+" && go get github.com/dstgen/dstgen@latest (or go mod edit -replace github.com/dstgen/dstgen=<your checkout>) && go mod tidy")
	}
	steps = append(steps, "fill in the TODOs of Do in "+filepath.Join(out, "main.go"), "go build, and run it by hand as its doc comment shows")
	_, err = fmt.Fprintf(w, "next: %s\n", strings.Join(steps, "; "))
	return err
}

// enclosingModule is the go.mod of the module dir is in (dir itself or a
// parent), or "" when there is none.
func enclosingModule(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, "go.mod"); fileExists(p) {
			return p
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
