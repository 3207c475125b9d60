package generator

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/plan"
)

// harnessDir is where `task deploy` uploads the SUT's harness scripts a
// scenario's run wiring names, under every host's work dir.
const harnessDir = "harness"

// harnessFile is one SUT file the run wiring names: its path from the
// testing/ dir (what `dstgen push` uploads) and its name under
// <workdir>/harness.
type harnessFile struct{ Local, Name string }

// wireScenarios fills each scenario's run wiring from the plan
// (docs/plan-format.md §9.6): the workload command from its Driver
// command, the final-state dump, the leader query and the quiesce check
// (the header's when the scenario names none). A first word that is the
// workload driver's name runs the driver deploy uploads to <workdir>/bin;
// a word naming a file of the SUT's tree runs its copy in
// <workdir>/harness, which `task deploy` uploads (m.Harness).
func wireScenarios(m *model, pl *plan.Plan, root string) {
	if pl == nil {
		return
	}
	driver := ""
	if m.DriverDir != "" {
		driver = path.Base(m.DriverDir)
	}
	names := map[string]string{} // SUT-relative path → name under harness/
	taken := map[string]bool{}
	rewrite := func(field string) string {
		cmd, ok := plan.Command(field)
		if !ok {
			return ""
		}
		words := strings.Fields(cmd)
		for i, w := range words {
			switch {
			case i == 0 && driver != "" && (w == driver || w == "./"+driver):
				words[i] = `"$DSTGEN_WORKDIR/bin/` + driver + `"`
			case sutFile(root, w):
				rel := path.Clean(strings.TrimPrefix(w, "./"))
				name, ok := names[rel]
				if !ok {
					// Two scripts of one name in different dirs keep
					// their dirs in the name, so neither overwrites the
					// other under harness/.
					name = path.Base(rel)
					if taken[name] {
						name = strings.ReplaceAll(rel, "/", "-")
					}
					names[rel], taken[name] = name, true
					m.Harness = append(m.Harness, harnessFile{Local: path.Join(m.SUTRel, rel), Name: name})
				}
				words[i] = `"$DSTGEN_WORKDIR/` + harnessDir + "/" + name + `"`
			}
		}
		return strings.Join(words, " ")
	}
	for i := range pl.Scenarios {
		s := &pl.Scenarios[i]
		if i >= len(m.Scenarios) {
			break
		}
		sm := &m.Scenarios[i]
		if c := rewrite(s.DriverCommand); c != "" {
			sm.Command = c
		}
		sm.FinalState = rewrite(s.FinalState)
		sm.LeaderQuery = rewrite(pl.LeaderQueryOf(s))
		q := pl.QuiesceOf(s)
		if c := rewrite(q); c != "" {
			sm.Quiesce = c
			sm.QuiesceTimeout = "30s"
			if d := plan.Within(q); d > 0 {
				sm.QuiesceTimeout = d.String()
			}
		}
	}
}

// sutFile reports whether the command word w names a regular file of the
// SUT's tree (a harness script such as scripts/leader.sh): relative,
// inside the root, and there.
func sutFile(root, w string) bool {
	w = strings.TrimPrefix(w, "./")
	if root == "" || w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "$\"'`=") || !filepath.IsLocal(w) || !strings.Contains(w, "/") && !strings.Contains(w, ".") {
		return false
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(w)))
	return err == nil && fi.Mode().IsRegular()
}

// harnessPush is the `dstgen push` argument list of the harness files, for
// the Taskfile's deploy:upload ("" when there are none).
func harnessPush(hs []harnessFile) string {
	var args []string
	for _, h := range hs {
		args = append(args, shell.Quote(h.Local))
	}
	return strings.Join(args, " ")
}
