package generator

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteSummary prints the profile as the review a person approves before
// generation (docs/real-env-test.md §2.2: inferred values are shown back): every
// finding with the file (and line) it came from, the mode, and the open
// questions with their defaults.
func WriteSummary(w io.Writer, p *Profile) error {
	bw := bufio.NewWriter(w)
	pf := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	at := func(file string, line int) string {
		if line > 0 {
			return fmt.Sprintf("%s:%d", file, line)
		}
		return file
	}

	pf("SUT profile: %s (%s)\n", p.Name, p.Root)
	if len(p.Language) > 0 {
		pf("Languages: %s\n", strings.Join(p.Language, ", "))
	}
	pf("Files scanned: %d\n", p.FilesScanned)

	pf("\nBuild systems:\n")
	if len(p.Build) == 0 {
		pf("  (none found)\n")
	}
	for _, b := range p.Build {
		pf("  - %s  [%s]\n", b.File, b.Kind)
		for _, c := range limit(b.Commands, 12) {
			pf("      $ %s\n", c)
		}
		if n := len(b.Commands) - 12; n > 0 {
			pf("      … %d more\n", n)
		}
	}
	section(bw, "Artifacts", len(p.Artifacts))
	for _, a := range p.Artifacts {
		pf("  - %s → %s  (build: %s; from %s)\n", a.Name, a.Path, a.Build, a.File)
	}
	section(bw, "Deploy docs", len(p.Deploy))
	for _, d := range p.Deploy {
		title := d.Section
		if title == "" {
			title = "(whole document)"
		}
		pf("  - %s  %q\n", at(d.File, d.Line), title)
		for i, c := range limit(d.Commands, 8) {
			if i < len(d.CommandLines) { // a Profile read back from YAML may lack lines
				pf("      %d: $ %s\n", d.CommandLines[i], c)
			} else {
				pf("      $ %s\n", c)
			}
		}
		if n := len(d.Commands) - 8; n > 0 {
			pf("      … %d more\n", n)
		}
	}
	section(bw, "Systemd units", len(p.Units))
	for _, u := range p.Units {
		pf("  - %s  (%s)\n", u.Name, at(u.File, u.Line))
		pf("      ExecStart=%s\n", u.ExecStart)
		if len(u.Requires) > 0 {
			pf("      depends on: %s\n", strings.Join(u.Requires, " "))
		}
	}
	section(bw, "Deploy artifacts", len(p.DeployArtifacts))
	for _, a := range p.DeployArtifacts {
		pf("  - %s\n", deployLine(a))
	}
	section(bw, "Config templates", len(p.Configs))
	for _, c := range p.Configs {
		keys := ""
		if len(c.Keys) > 0 {
			keys = "  keys: " + strings.Join(limit(c.Keys, 12), ", ")
		}
		pf("  - %s → %s%s\n", c.File, c.Target, keys)
	}
	section(bw, "Toolbox discovered", len(p.Toolbox))
	for _, t := range p.Toolbox {
		pf("  - `%s` — %s (%s)\n", at(t.Path, t.Line), t.Role, t.Why)
	}
	section(bw, "Plans", len(p.Plans))
	for _, pl := range p.Plans {
		pf("  - %s\n", pl)
	}
	if len(p.Warnings) > 0 {
		pf("\nWarnings:\n")
		for _, w := range p.Warnings {
			pf("  - %s\n", w)
		}
	}

	c := p.Completeness
	pf("\nCompleteness: docs complete: %s; intent clear: %s → mode %s\n", yesNo(c.DocsComplete), yesNo(c.IntentClear), c.Mode)
	if len(c.Missing) > 0 {
		pf("  missing: %s\n", strings.Join(c.Missing, "; "))
	}
	pf("\nOpen questions (%d; init asks them on a terminal, otherwise writes TODOs):\n", len(p.Questions))
	for _, q := range p.Questions {
		def := q.Default
		if def == "" {
			def = "(none)"
		}
		pf("  - [%s] %s  default: %s\n", q.ID, q.Text, def)
	}
	return bw.Flush()
}

func section(w io.Writer, title string, n int) {
	fmt.Fprintf(w, "\n%s:\n", title)
	if n == 0 {
		fmt.Fprintf(w, "  (none found)\n")
	}
}

func limit(list []string, n int) []string {
	if len(list) > n {
		return list[:n]
	}
	return list
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
