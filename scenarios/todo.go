package scenarios

import (
	"fmt"
	"strings"
)

// TODO is the cause of an error TODOs returns: a value the plan did not
// state well enough to run. Path names the field as the generator's TODO
// ids do ("S1.workload.command", "S4/api.oracle.checker").
type TODO struct {
	Path  string
	Value string
}

// Error is "<path> is still TODO(…): <value>".
func (t *TODO) Error() string {
	v := t.Value
	if len(v) > 200 {
		v = v[:200] + "…"
	}
	return fmt.Sprintf("%s is still a TODO: %s", t.Path, strings.TrimSpace(v))
}

// TODOs lists every string value of the file that still starts with
// "TODO(", in file order, each a *fileline.Error at its line wrapping a
// *TODO (errors.As gives the field's path). A File not made by Load or
// Parse has none recorded.
func (f *File) TODOs() []error {
	out := make([]error, 0, len(f.todos))
	for _, t := range f.todos {
		out = append(out, t.err)
	}
	return out
}

// TODOsOf is TODOs restricted to one scenario entry (its tiers, workload,
// faults, oracle and arms); an arm id ("S4/api") means its scenario's
// entry. An unknown id has none.
func (f *File) TODOsOf(id string) []error {
	sid, _, _ := strings.Cut(id, "/")
	idx := -1
	for i := range f.Scenarios {
		if f.Scenarios[i].ID == sid {
			idx = i
			break
		}
	}
	var out []error
	for _, t := range f.todos {
		if idx >= 0 && t.scenario == idx {
			out = append(out, t.err)
		}
	}
	return out
}
