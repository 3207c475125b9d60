package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// Recorder writes a history from a Go workload driver. It is safe for
// concurrent clients. Timestamps come from one monotonic base and strictly
// increase across all events, so real-time order between processes is
// exact. Each op is written as one line with one Write call when it
// completes, so a crash loses at most the line being written (ops still in
// flight are never recorded, which is what a crash would make of them).
type Recorder struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	last  int64
	next  uint64
	epoch string
	err   error
	buf   []byte
}

// NewRecorder starts a history on w and writes the _meta header. Clock and
// Recorder default to "monotonic" and "in-process".
func NewRecorder(w io.Writer, meta Meta) *Recorder {
	if meta.Clock == "" {
		meta.Clock = "monotonic"
	}
	if meta.Recorder == "" {
		meta.Recorder = "in-process"
	}
	r := &Recorder{w: w, start: time.Now()}
	if meta.Clock == "monotonic" && meta.OriginUnixNS == 0 {
		meta.OriginUnixNS = r.start.UnixNano()
	}
	r.buf = append(AppendMeta(r.buf[:0], meta), '\n')
	if _, err := w.Write(r.buf); err != nil {
		r.err = fmt.Errorf("write history header: %w", err)
	}
	return r
}

// now must be called with r.mu held.
func (r *Recorder) now() int64 {
	t := time.Since(r.start).Nanoseconds()
	if t <= r.last {
		t = r.last + 1
	}
	r.last = t
	return t
}

// SetFaultEpoch marks the fault window now active; ops invoked while it is
// set carry its id. An empty id ends the window.
func (r *Recorder) SetFaultEpoch(id string) {
	r.mu.Lock()
	r.epoch = id
	r.mu.Unlock()
}

// Err returns the first write error; later ops are dropped after one.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Pending is an invoked op awaiting its outcome. Exactly one of Ok, Fail or
// Timeout records it.
type Pending struct {
	r    *Recorder
	op   Op
	done bool
	mu   sync.Mutex
}

// Invoke stamps the invoke time of an op by process on key; input is
// marshalled now, so the caller may reuse it.
func (r *Recorder) Invoke(process, opType, key string, input any) *Pending {
	raw, err := marshalValue(input)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	p := &Pending{r: r, op: Op{
		OpID: strconv.FormatUint(r.next, 10), ProcessID: process, OpType: opType, Key: key,
		Input: raw, InvokeTS: r.now(), FaultEpoch: r.epoch,
	}}
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("op %s input: %w", p.op.OpID, err)
	}
	return p
}

// SetNode records the node / route the client talked to (node_seen).
func (p *Pending) SetNode(node string) *Pending {
	p.mu.Lock()
	p.op.NodeSeen = node
	p.mu.Unlock()
	return p
}

// ID returns the op_id assigned at Invoke.
func (p *Pending) ID() string { return p.op.OpID }

// Ok records a response; output nil is written as null.
func (p *Pending) Ok(output any) error {
	raw, err := marshalValue(output)
	if err != nil {
		return fmt.Errorf("op %s output: %w", p.op.OpID, err)
	}
	return p.finish(func(op *Op, ts int64) { op.CompleteTS = &ts; op.Output = raw })
}

// Fail records an error response: the op definitely did not take effect.
func (p *Pending) Fail(errCode string) error {
	if errCode == "" {
		errCode = "error"
	}
	return p.finish(func(op *Op, ts int64) { op.CompleteTS = &ts; op.Error = errCode })
}

// Timeout records an unknown outcome: the op may or may not have taken
// effect. errCode is kept for diagnosis only.
func (p *Pending) Timeout(errCode string) error {
	return p.finish(func(op *Op, _ int64) { op.TimeoutMarker = true; op.Error = errCode })
}

func (p *Pending) finish(set func(*Op, int64)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return errors.New("op " + p.op.OpID + " already completed")
	}
	p.done = true
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	set(&p.op, r.now())
	if r.err != nil {
		return r.err
	}
	r.buf = append(AppendJSON(r.buf[:0], &p.op), '\n')
	if _, err := r.w.Write(r.buf); err != nil {
		r.err = fmt.Errorf("write op %s: %w", p.op.OpID, err)
		return r.err
	}
	return nil
}

func marshalValue(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(x) == 0 || string(x) == "null" {
			return nil, nil
		}
		return append(json.RawMessage(nil), x...), nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil, err
	}
	return b, nil
}
