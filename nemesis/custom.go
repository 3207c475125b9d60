package nemesis

import (
	"context"
	"errors"
)

func customNemeses() []Nemesis { return []Nemesis{customNemesis{id: "custom"}} }

// customNemesis runs Fault.Custom's commands (to be written).
type customNemesis struct{ id string }

func (c customNemesis) Info() Info {
	return Info{ID: c.id, Group: "cluster", BuiltIn: true, Summary: "inject / heal / evidence commands written in scenarios.yml"}
}

func (c customNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	return nil, errors.New("custom: not written yet")
}
