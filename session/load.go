package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

// LoadRun reads and validates one run.json. Every error is a *fileline.Error with
// the file and line of the offending value.
func LoadRun(file string) (*Run, error) {
	data, err := fileline.ReadBounded(file, maxRunBytes)
	if fe := (*fileline.Error)(nil); errors.As(err, &fe) {
		return nil, fileline.Errorf(file, 0, "read run record: %w", fe.Err)
	}
	return ParseRun(file, data)
}

// maxRunBytes bounds a run.json: a record of one run is kilobytes, and a
// device or runaway file must not exhaust memory.
const maxRunBytes = 16 << 20

// ParseRun decodes and validates run.json bytes; name is used in errors.
func ParseRun(name string, data []byte) (*Run, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fileline.Errorf(name, 1, "empty run record")
	}
	w := &walker{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data)), lines: map[string]int{}}
	w.dec.UseNumber()
	if err := w.value(reflect.TypeOf(Run{}), "", 0); err != nil {
		return nil, err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return nil, fileline.Errorf(name, w.line(w.dec.InputOffset()), "trailing data after the run record")
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fileline.Errorf(name, w.line(te.Offset), "%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		var pe *time.ParseError
		if errors.As(err, &pe) {
			return nil, fileline.Errorf(name, w.timeLine(pe.Value), "bad RFC 3339 time %q", pe.Value)
		}
		return nil, fileline.Errorf(name, 1, "%w", err)
	}
	r.Path = name
	r.Lines = w.lines
	if err := r.validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// walker checks syntax and field names token by token, recording the line
// of every field, because encoding/json reports neither lines nor the
// position of an unknown field.
type walker struct {
	name  string
	data  []byte
	dec   *json.Decoder
	lines map[string]int
}

const maxDepth = 64

func (w *walker) line(off int64) int {
	if off > int64(len(w.data)) {
		off = int64(len(w.data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(w.data[:off], []byte{'\n'}) + 1
}

// timeLine finds the line of a bad time literal; time errors carry no offset.
func (w *walker) timeLine(v string) int {
	if v == "" {
		return 1
	}
	if i := bytes.Index(w.data, []byte(strconv.Quote(v))); i >= 0 {
		return w.line(int64(i))
	}
	return 1
}

func (w *walker) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fileline.Errorf(w.name, w.line(se.Offset), "malformed JSON: %w", se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fileline.Errorf(w.name, w.line(int64(len(w.data))), "malformed JSON: unexpected end of file (truncated?)")
	}
	return fileline.Errorf(w.name, w.line(w.dec.InputOffset()), "malformed JSON: %w", err)
}

// value consumes one JSON value whose Go type is t (nil: anything goes).
func (w *walker) value(t reflect.Type, p string, depth int) error {
	if depth > maxDepth {
		return fileline.Errorf(w.name, w.line(w.dec.InputOffset()), "JSON nested too deeply")
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(json.RawMessage{}) {
		t = nil
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return w.syntax(err)
			}
			key, _ := kt.(string)
			ln := w.line(w.dec.InputOffset())
			child := key
			if p != "" {
				child = p + "." + key
			}
			var ft reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Struct && t != reflect.TypeOf(time.Time{}):
				f, ok := fieldByTag(t, key)
				if !ok {
					return fileline.Errorf(w.name, ln, "unknown field %q", child)
				}
				ft = f
			case t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			if _, dup := w.lines[child]; dup {
				return fileline.Errorf(w.name, ln, "duplicate field %q", child)
			}
			w.lines[child] = ln
			if err := w.value(ft, child, depth+1); err != nil {
				return err
			}
		}
	case '[':
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			child := fmt.Sprintf("%s[%d]", p, i)
			w.lines[child] = w.line(w.dec.InputOffset())
			if err := w.value(et, child, depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := w.dec.Token(); err != nil { // closing delimiter
		return w.syntax(err)
	}
	return nil
}

func fieldByTag(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

func (r *Run) errAt(field, format string, args ...any) error {
	ln := r.Lines[field]
	if ln == 0 {
		ln = 1
	}
	return fileline.Errorf(r.Path, ln, format, args...)
}

// safeRel reports whether p names a file inside the artifact dir.
func safeRel(p string) bool {
	if p == "" {
		return true
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}

func (r *Run) validate() error {
	switch {
	case r.Schema == "":
		return r.errAt("schema", "missing schema (want %q)", RunSchema)
	case r.Schema != RunSchema:
		return r.errAt("schema", "unknown schema %q (want %q)", r.Schema, RunSchema)
	case strings.TrimSpace(r.Scenario) == "" || strings.ContainsAny(r.Scenario, " /\t\n"):
		return r.errAt("scenario", "scenario id %q must be a non-empty id like S1", r.Scenario)
	case r.Arm != "" && !strings.HasPrefix(r.Arm, r.Scenario+"/"):
		return r.errAt("arm", "arm %q must start with %q", r.Arm, r.Scenario+"/")
	case !slices.Contains([]string{"", "monotonic", "wall"}, r.Clock):
		return r.errAt("clock", "clock %q must be monotonic or wall", r.Clock)
	case !slices.Contains([]string{"", "smoke", "hardening", "release"}, r.Tier):
		return r.errAt("tier", "tier %q must be smoke, hardening or release", r.Tier)
	case !r.StartedAt.IsZero() && !r.EndedAt.IsZero() && r.EndedAt.Before(r.StartedAt):
		return r.errAt("ended_at", "ended_at %s is before started_at %s", r.EndedAt.Format(time.RFC3339), r.StartedAt.Format(time.RFC3339))
	case r.Nodes < 0:
		return r.errAt("nodes", "nodes must be ≥ 0")
	case r.Workload.OpsProduced < 0:
		return r.errAt("workload.ops_produced", "ops_produced must be ≥ 0")
	case r.Workload.PlannedRate < 0 || r.Workload.Tolerance < 0 || r.Workload.Tolerance >= 1:
		return r.errAt("workload", "planned_rate must be ≥ 0 and tolerance in [0,1)")
	case r.Workload.IntervalNS < 0:
		return r.errAt("workload.interval_ns", "interval_ns must be ≥ 0")
	case !safeRel(r.History):
		return r.errAt("history", "history path %q must stay inside the artifact dir", r.History)
	case !safeRel(r.FinalState):
		return r.errAt("final_state", "final_state path %q must stay inside the artifact dir", r.FinalState)
	case r.Failovers != nil && *r.Failovers < 0:
		return r.errAt("failovers", "failovers must be ≥ 0")
	}
	for k, v := range r.ConfigSize {
		if v < 0 {
			return r.errAt("config_size."+k, "config_size %s must be ≥ 0", k)
		}
	}
	for i, c := range r.Capabilities {
		if strings.TrimSpace(c.Requirement) == "" {
			return r.errAt(fmt.Sprintf("capabilities[%d]", i), "capability row without requirement")
		}
	}
	if m := r.MissingCapability; m != nil && strings.TrimSpace(m.Requirement) == "" {
		return r.errAt("missing_capability", "missing_capability needs a requirement")
	}
	for i, iv := range r.Workload.Throughput {
		if iv.Ops < 0 || iv.Errors < 0 {
			return r.errAt(fmt.Sprintf("workload.throughput[%d]", i), "negative op count")
		}
	}
	seen := map[string]bool{}
	for i, w := range r.FaultWindows {
		at := fmt.Sprintf("fault_windows[%d]", i)
		switch {
		case strings.TrimSpace(w.FaultEpoch) == "":
			return r.errAt(at, "fault window without fault_epoch")
		case seen[w.FaultEpoch]:
			return r.errAt(at+".fault_epoch", "duplicate fault_epoch %q", w.FaultEpoch)
		case strings.TrimSpace(w.Nemesis) == "":
			return r.errAt(at, "fault window %s without nemesis id", w.FaultEpoch)
		case w.InjectedAtNS != nil && w.RevertedAtNS != nil && *w.RevertedAtNS < *w.InjectedAtNS:
			return r.errAt(at+".reverted_at_ns", "fault window %s reverted before it was injected", w.FaultEpoch)
		}
		seen[w.FaultEpoch] = true
		// A slice, not a map, so the first bad field reported is always the
		// same one.
		for _, ev := range []struct {
			name string
			e    *Evidence
		}{{"injector_evidence", w.InjectorEvidence}, {"victim_evidence", w.VictimEvidence}, {"target_check", w.TargetCheck}} {
			name, e := ev.name, ev.e
			if e != nil && !slices.Contains([]string{"", SignalChanged, SignalUnchanged, SignalAmbiguous, SignalAbsent, SignalUnknown}, e.Verdict) {
				return r.errAt(at+"."+name+".verdict", "evidence verdict %q must be changed, unchanged, ambiguous, absent or unknown", e.Verdict)
			}
		}
	}
	if o := r.Oracle; o != nil {
		switch {
		case !slices.Contains([]string{"", "valid", "invalid", "unknown"}, o.Outcome):
			return r.errAt("oracle.outcome", "oracle outcome %q must be valid, invalid or unknown", o.Outcome)
		case o.OpsConsumed < 0 || o.Anomalies < 0:
			return r.errAt("oracle", "oracle counts must be ≥ 0")
		}
	}
	if l := r.LogScan; l != nil && (l.Found < 0 || l.Accounted < 0) {
		return r.errAt("log_scan", "log_scan counts must be ≥ 0")
	}
	if rec := r.Recorder; rec != nil && !slices.Contains([]string{"", "in-process", "external probe", "server-side audit", "combined"}, rec.Mechanism) {
		return r.errAt("recorder.mechanism", "recorder mechanism %q must be in-process, external probe, server-side audit or combined", rec.Mechanism)
	}
	return nil
}
