package runner

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/oneline"
)

// Script runs script with /bin/sh on h in one bounded round trip and
// returns its stdout. A non-zero exit is an error "exit N: <why>", why
// being the first line of stderr, else the last line of stdout (a script
// that reports its failure on stdout still says why). It is the one way
// dstgen runs a script on a host: deploy's actions, the orchestrator's
// readings and, through Shell, every nemesis.
func Script(ctx context.Context, p *Pool, h env.Host, script string) (string, error) {
	var out, errb bytes.Buffer
	res, err := p.Run(ctx, h, script, nil, &out, &errb)
	if err != nil {
		return out.String(), err
	}
	if res.ExitCode != 0 {
		why := oneline.First(errb.String())
		if why == "" {
			why = oneline.Last(out.String())
		}
		if why == "" {
			return out.String(), fmt.Errorf("exit %d", res.ExitCode)
		}
		return out.String(), fmt.Errorf("exit %d: %s", res.ExitCode, why)
	}
	return out.String(), nil
}

// Shell is Script with the host named in every error: the nemesis.Exec of
// a real run, whose faults span several hosts.
type Shell struct{ Pool *Pool }

// Run is Script on h; an error starts with h's name.
func (s Shell) Run(ctx context.Context, h env.Host, script string) (string, error) {
	out, err := Script(ctx, s.Pool, h, script)
	if err != nil && !strings.HasPrefix(err.Error(), h.Name+":") {
		err = fmt.Errorf("%s: %w", h.Name, err)
	}
	return out, err
}
