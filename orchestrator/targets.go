package orchestrator

import (
	"context"
	"errors"

	"github.com/dstgen/dstgen/nemesis"
)

// Resolve turns a target expression into hosts of cluster.
func Resolve(ctx context.Context, expr string, cluster []nemesis.Host, pick int64, leader func(context.Context) (string, error)) ([]nemesis.Host, error) {
	return nil, errors.New("not implemented")
}

// MatchHost finds the host a leader query's output names.
func MatchHost(out string, hosts []nemesis.Host) (nemesis.Host, bool) {
	return nemesis.Host{}, false
}
