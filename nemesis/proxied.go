package nemesis

import (
	"context"
	"errors"
)

// injectProxied applies a network fault through the `dstgen proxy` on the
// targets' traffic path (to be written).
func injectProxied(ctx context.Context, x Exec, f Fault) (Active, error) {
	return nil, errors.New("proxy faults: not written yet")
}
