package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/generator"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/plan"
)

// planNewReport is the --json output of dstgen plan new: what an agent
// needs to fill the scaffold in.
type planNewReport struct {
	File    string                     `json:"file"`
	Slug    string                     `json:"slug"`
	Mode    string                     `json:"mode"`
	Change  string                     `json:"change,omitempty"`
	Touched []generator.TouchedFile    `json:"touched,omitempty"`
	Claims  []generator.CandidateClaim `json:"claims"`
	// More counts the candidates ranked below the --max-claims cut.
	More  int `json:"more_claims"`
	TODOs int `json:"todos"` // markers lint reports until each is replaced
}

func newPlanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Work with test plans (plan new: a draft plan from the scan)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPlanNewCmd())
	return cmd
}

// slugRE is the kebab-case a slug must be: it names a file and the
// session directory.
var slugRE = lazyre.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func newPlanNewCmd() *cobra.Command {
	var (
		sut, mode, change, slug, out string
		maxClaims                    int
		force, asJSON                bool
	)
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Write a draft plan (§0–§9) from the SUT scan, with a TODO wherever a person must decide",
		Long: `plan new scans the SUT (--sut, default the current directory) and writes a
draft plan to docs/testing-plans/<slug>.md inside it (--out elsewhere), with
every section of the plan format in canonical order (dstgen help plan-format):

  header      date, mode, SUT name, --change, author "dstgen plan new", status draft
  §1          project-wide unless --change names a change; then change-scoped
              with the files git diff --stat REF lists (--mode overrides)
  §1b         the candidate claims ranked highest (at most --max-claims, default
              15): sentences of the SUT's docs and code comments that promise a
              guarantee, scored by the promise's kind and words and by where they
              live (core packages above docs above tools and tests; changelogs,
              contribution guides, TODO lists and licences are not read); each
              with its file:line, the words that picked it and Inferred? yes
  §0, §6b     the SUT's own deploy artifacts (Dockerfiles, compose, Helm,
              Kubernetes, Procfiles, Makefile cluster targets)
  §3          the existing test toolbox the scan found, grouped by subsystem
  §6b         toolchains, binaries and the fault tools the proposed nemeses need
  §7          one scenario stub per claim; its kind proposes the §7.M model and
              checker (linearizable → kv + linearizability, at-least-once →
              queue + no-lost-ack, durability → log + no-lost-ack after kill-9,
              an isolation level → serializability at that level)

The SUT is named after the repository: its module path without a /vN
suffix, its package or crate name, else the directory. Ranking and fields:
dstgen help plan-format §15.

Everything a person must decide is a TODO(<id>: hint) marker. A scaffold is
not a plan: dstgen lint reports every marker as an error at its line, so
dstgen init refuses the file until each is replaced.

--json prints the file, the candidate claims (with kind, score, where, why
and merged places) and the TODO count as JSON. An existing file is never
overwritten without --force.

Exit codes: 0 written; 2 bad flags, an unknown --change, an existing file,
or a SUT that cannot be scanned.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlanNew(cmd, planNewArgs{sut: sut, mode: mode, change: change, slug: slug, out: out, maxClaims: maxClaims, force: force, asJSON: asJSON})
		},
	}
	f := cmd.Flags()
	f.StringVar(&sut, "sut", ".", "the SUT directory to scan")
	f.StringVar(&mode, "mode", "", "plan mode: change-scoped or project-wide (default change-scoped with --change, else project-wide)")
	f.StringVar(&change, "change", "", "the commit or range under test (its files come from git diff --stat REF)")
	f.StringVar(&slug, "slug", "", "the plan's kebab-case slug (default <sut>-<change> or <sut>-guarantees)")
	f.StringVar(&out, "out", "", "the file to write (default <sut>/docs/testing-plans/<slug>.md)")
	f.IntVar(&maxClaims, "max-claims", generator.DefaultMaxClaims, "list at most this many candidate claims, best first")
	f.BoolVar(&force, "force", false, "overwrite an existing file")
	f.BoolVar(&asJSON, "json", false, "print the candidate claims as JSON")
	return cmd
}

type planNewArgs struct {
	sut, mode, change, slug, out string
	maxClaims                    int
	force, asJSON                bool
}

func runPlanNew(cmd *cobra.Command, a planNewArgs) error {
	if a.mode == "" {
		// A plan names a change only when --change does; without one it
		// is for the whole system (docs/plan-format.md §15).
		a.mode = generator.ModeProjectWide
		if a.change != "" {
			a.mode = generator.ModeChangeScoped
		}
	}
	if a.maxClaims < 1 {
		return fmt.Errorf("plan new: --max-claims %d: want at least 1", a.maxClaims)
	}
	if a.mode != generator.ModeChangeScoped && a.mode != generator.ModeProjectWide {
		return fmt.Errorf("plan new: --mode %q is not change-scoped or project-wide", a.mode)
	}
	ctx := cmd.Context()
	p, err := generator.Scan(ctx, a.sut, generator.ScanOptions{})
	if err != nil {
		return fmt.Errorf("plan new: %w", err)
	}
	if a.slug == "" {
		a.slug = defaultSlug(p.Name, a.change)
	}
	if !slugRE.MatchString(a.slug) {
		return fmt.Errorf("plan new: --slug %q is not kebab-case (a-z, 0-9, single dashes)", a.slug)
	}
	if a.out == "" {
		a.out = filepath.Join(p.Root, "docs", "testing-plans", a.slug+".md")
	}
	if _, err := os.Lstat(a.out); err == nil && !a.force {
		return fmt.Errorf("plan new: %s exists; --force overwrites it", a.out)
	}
	o := generator.ScaffoldOptions{Slug: a.slug, Date: time.Now().UTC().Format(time.DateOnly), Mode: a.mode, Change: a.change}
	if a.change != "" && a.mode == generator.ModeChangeScoped {
		files, err := generator.DiffStat(ctx, p.Root, a.change)
		if err != nil {
			return fmt.Errorf("plan new: %w", err)
		}
		if len(files) > maxListedFiles {
			o.TouchedMore = len(files) - maxListedFiles
			files = files[:maxListedFiles]
		}
		o.Touched = files
	}
	var more int
	if o.Claims, more, err = generator.FindClaims(ctx, p, a.maxClaims); err != nil {
		return fmt.Errorf("plan new: %w", err)
	}
	md := generator.Scaffold(p, o)
	if err := writeNew(a.out, md, a.force); err != nil {
		return fmt.Errorf("plan new: %w", err)
	}
	todos := 0
	if pl, err := plan.ParseBytes(a.out, md); err == nil {
		for _, pr := range plan.Lint(pl) {
			if pr.Rule == plan.RuleTODO {
				todos++
			}
		}
	}
	w := cmd.OutOrStdout()
	if a.asJSON {
		claims := o.Claims
		if claims == nil {
			claims = []generator.CandidateClaim{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // claims quote "<prefix>" and "p99 < 5ms" as written
		rep := planNewReport{File: a.out, Slug: a.slug, Mode: a.mode, Change: a.change, Touched: o.Touched, Claims: claims, More: more, TODOs: todos}
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("plan new: write JSON: %w", err)
		}
		return nil
	}
	_, err = fmt.Fprintf(w, "plan=%s slug=%s mode=%s claims=%d more_claims=%d todos=%d\nnext: replace every TODO(...) in %s, then dstgen lint %s\n",
		a.out, a.slug, a.mode, len(o.Claims), more, todos, a.out, a.out)
	return err
}

// maxListedFiles bounds §1's "Files touched" list; the rest is a count.
const maxListedFiles = 200

// defaultSlug is <sut>-<change> (the ref made kebab-case) or
// <sut>-guarantees.
func defaultSlug(name, change string) string {
	kebab := func(s string) string {
		var b strings.Builder
		dash := false
		for _, r := range strings.ToLower(s) {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				b.WriteRune(r)
				dash = false
			} else if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		return strings.Trim(b.String(), "-")
	}
	s := kebab(name)
	if s == "" {
		s = "sut"
	}
	if c := kebab(change); c != "" {
		return s + "-" + c
	}
	return s + "-guarantees"
}

// writeNew writes data to path through a temp file in its directory: a
// hard link publishes it only if path does not exist (so a file that
// appeared since the check is not clobbered), a rename replaces it with
// --force. Nothing is left half-written.
func writeNew(path string, data []byte, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".plan-new-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if force {
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; --force overwrites it", path)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
