package checker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dstgen/dstgen/history"
)

// FileReport is what RunFile found in a history file.
type FileReport struct {
	Meta    history.Meta
	OpsRead int
	// Bad are the lines that are not ops; Invalid the records that break
	// docs/history-and-checkers.md §2.1 (a recorder bug); Weak what the
	// checker needs and the history lacks (§2.2). Each names file:line.
	Bad     []error
	Invalid []error
	Weak    []string
	Result  Result
}

// RunFile reads the history file at path, validates every record and runs
// spec's checker on it: the whole of `dstgen check`. The isolation checker
// takes the file a block at a time as it is read (history.ScanFile) and
// keeps its own compact copy of each transaction, so neither the file nor
// its ops are ever in memory whole, and each transaction is decoded once
// for validation and check alike; the other checkers read the file
// (history.ReadFile) and then check. The error is Run's (bad input), or
// the file's when it cannot be read; what was found is in the report.
func RunFile(ctx context.Context, spec Spec, path string, final *FinalState) (FileReport, error) {
	spec.History = path
	id := spec.Checker
	if id == "" {
		var ok bool
		if id, ok = Pick(normalizeModel(spec.Model), ""); !ok {
			return FileReport{}, modelErr{fmt.Errorf("no default checker for model %q; pass one", spec.Model)}
		}
		spec.Checker = id
	}
	if id == Serializability {
		return runIsolationFile(ctx, spec, path)
	}
	meta, ops, bad, err := history.ReadFile(path)
	if err != nil {
		return FileReport{}, err
	}
	rep := FileReport{Meta: meta, OpsRead: len(ops), Bad: bad}
	// Validation and the check read the ops only: each runs while the
	// other waits on a core.
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep.Invalid = history.Validate(path, ops, nil)
		rep.Weak = history.Weak(meta, ops, Needs(id, spec.Model))
	}()
	res, err := Run(ctx, spec, ops, final)
	<-done
	rep.Result = res
	return rep, err
}

// errStopped ends a scan that ran out of time.
const errStopped = errorString("time limit reached while reading")

// runIsolationFile is RunFile for the isolation checker: the time limit
// covers reading too, since the check loads as the file is read.
func runIsolationFile(ctx context.Context, spec Spec, path string) (FileReport, error) {
	start := time.Now()
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := newIso(ctx, spec)
	if err != nil {
		return FileReport{}, err
	}
	var rep FileReport
	v := history.NewValidator(path, nil)
	var weak history.WeakCounter
	// Each batch is validated with the decoder's verdict on its
	// transactions, before it is loaded.
	s.onBatch = func(ops []history.Op, d *txnDecoder) {
		rep.Invalid = append(rep.Invalid, v.Check(ops, func(i int) error {
			if err := d.txns[i].err; err != errNotTxn {
				return err
			}
			return nil
		})...)
	}
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	reserved := false
	err = history.ScanFile(path, func(meta history.Meta, b history.Block) error {
		if ctx.Err() != nil {
			// Past the limit (or cancelled) nothing more is read: the
			// check below is then cut short, never a pass.
			return errStopped
		}
		rep.Meta = meta
		rep.Bad = append(rep.Bad, b.Bad...)
		rep.OpsRead += len(b.Ops)
		weak.Add(b.Ops)
		if err := s.add(b.Ops); err != nil {
			return err
		}
		if !reserved && len(b.Ops) > 0 && b.Size > 0 {
			reserved = true
			s.reserve(float64(size) / float64(b.Size))
		}
		return nil
	})
	if err != nil && err != errStopped {
		return FileReport{}, err
	}
	rep.Weak = weak.Reasons(rep.Meta, Needs(Serializability, spec.Model))
	res, err := s.check()
	if err != nil {
		return FileReport{}, err
	}
	rep.Result = finish(res, Serializability, spec, start)
	return rep, nil
}
