package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/oneline"
)

// maxFileBytes bounds what Load reads: a generated scenarios.yml is tens of
// kilobytes, and a device or a runaway file must not exhaust memory.
const maxFileBytes = 4 << 20

// maxDepth bounds the nesting the decoder follows; the schema is six
// levels deep, so anything deeper is not a scenarios.yml (and a bound
// keeps a hostile file of nested aliases from recursing without end).
const maxDepth = 32

// maxNodes bounds the values the decoder visits. Aliases are followed
// where they are used, so a file of aliases to lists of aliases could
// otherwise stand for billions of values; a real scenarios.yml has a few
// thousand.
const maxNodes = 200_000

// Load reads and validates a scenarios.yml (docs/scenarios-yml.md). Every
// error is a *fileline.Error naming the file and, where there is one, the
// line of the offending node.
func Load(path string) (*File, error) {
	data, err := fileline.ReadBounded(path, maxFileBytes)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load on bytes already read; name is the file named in errors
// and kept as File.Path. Unknown keys are rejected (a typo such as
// "timout" must not fall back to a default), as are wrong types, bad
// durations and duplicate ids; the first problem found is returned.
// A TODO(…) value is not an error here: TODOs and TODOsOf list them, so a
// generated file parses and the orchestrator refuses only what it runs.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{name: name, lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, d.errf(1, "empty file; want version: 1 and scenarios:")
		}
		return nil, d.yamlErr(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, d.errf(extra.Line, "a second YAML document; scenarios.yml holds one")
	} else if !errors.Is(err, io.EOF) {
		return nil, d.yamlErr(err)
	}
	if len(doc.Content) == 0 {
		return nil, d.errf(1, "empty file; want version: 1 and scenarios:")
	}
	root := doc.Content[0]
	var f File
	if err := d.value(root, reflect.ValueOf(&f).Elem(), "", "", 0); err != nil {
		return nil, err
	}
	f.Path = name
	f.todos = d.todos
	for i := range f.Scenarios {
		f.Scenarios[i].file = name
	}
	if err := d.validate(&f, root); err != nil {
		return nil, err
	}
	return &f, nil
}

// decoder walks the yaml node tree into the schema types itself rather
// than through yaml's struct decoding, so that every error (unknown key,
// wrong type) carries the line of its own node, and every key's line is
// kept for the checks that run after decoding.
type decoder struct {
	name string
	// lines maps a positional path ("scenarios[0].faults[1].at") to the
	// line of its key (or list item).
	lines map[string]int
	todos []todoAt
	nodes int // values visited so far, bounded by maxNodes
}

// todoAt is one TODO(…) value: the index of the scenario entry it sits in
// (-1 outside any) and its error.
type todoAt struct {
	scenario int
	err      *fileline.Error
}

func (d *decoder) errf(line int, format string, args ...any) *fileline.Error {
	if line < 1 {
		line = 1
	}
	return fileline.Errorf(d.name, line, format, args...)
}

// yamlErr turns a yaml syntax error into one file:line line: yaml v4's
// LoadError carries the mark of the offending token itself.
func (d *decoder) yamlErr(err error) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) {
		return d.errf(1, "%s", oneline.First(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	msg := oneline.First(le.Message)
	if le.ContextMsg != "" && le.ContextMark.Line > 0 && le.ContextMark.Line != le.Mark.Line {
		// An unclosed quote or [ / { swallows the lines after it; the
		// line to fix is where it opened, not where yaml gave up.
		for _, c := range []string{"while scanning a quoted scalar", "while parsing a flow"} {
			if strings.HasPrefix(le.ContextMsg, c) {
				_, what, _ := strings.Cut(le.ContextMsg, " a ")
				return d.errf(le.ContextMark.Line, "unclosed %s (yaml then failed at line %d: %s)", what, le.Mark.Line, msg)
			}
		}
		msg += fmt.Sprintf(" (%s at line %d)", le.ContextMsg, le.ContextMark.Line)
	}
	return d.errf(le.Mark.Line, "%s", msg)
}

// shown is how a value appears in an error: quoted and cut short, so a
// pasted blob never floods the one-line reason.
func shown(s string) string {
	const limit = 60
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

var lineType = reflect.TypeOf(0)

// value decodes n into v. key is the positional path (the lines map's
// key); show is the path errors name, where a scenario or arm is called
// by its id ("S1.faults[0].at") once its id is known.
func (d *decoder) value(n *yaml.Node, v reflect.Value, key, show string, depth int) error {
	if depth > maxDepth {
		return d.errf(n.Line, "%s: nested deeper than %d levels", orTop(show), maxDepth)
	}
	if d.nodes++; d.nodes > maxNodes {
		return d.errf(n.Line, "%s: more than %d values (aliases expanding without end?)", orTop(show), maxNodes)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return d.errf(n.Line, "%s: alias without an anchor", orTop(show))
		}
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // the zero value: nil pointer, empty string, no list
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.value(n, p.Elem(), key, show, depth+1); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Struct:
		return d.structValue(n, v, key, show, depth)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n.Line, "%s: want a list", orTop(show))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			ck, cs := fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("%s[%d]", show, i)
			d.lines[ck] = c.Line
			if err := d.value(c, s.Index(i), ck, cs, depth+1); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errf(n.Line, "%s: want a mapping", orTop(show))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, c := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.errf(k.Line, "%s: a key must be a plain name", orTop(show))
			}
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				return d.errf(k.Line, "%s: duplicate key", join(show, k.Value))
			}
			d.lines[join(key, k.Value)] = k.Line
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.value(c, e, join(key, k.Value), join(show, k.Value), depth+1); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.errf(n.Line, "%s: want a string", orTop(show))
		}
		v.SetString(n.Value)
		if strings.HasPrefix(strings.TrimSpace(n.Value), "TODO(") {
			d.todos = append(d.todos, todoAt{scenario: scenarioIndex(key),
				err: d.errf(n.Line, "%w", &TODO{Path: show, Value: n.Value})})
		}
	case reflect.Int, reflect.Float64, reflect.Bool:
		want := map[reflect.Kind]string{reflect.Int: "a whole number", reflect.Float64: "a number", reflect.Bool: "true or false"}[v.Kind()]
		if n.Kind != yaml.ScalarNode {
			return d.errf(n.Line, "%s: want %s", orTop(show), want)
		}
		p := reflect.New(v.Type())
		if err := n.Decode(p.Interface()); err != nil {
			return d.errf(n.Line, "%s %s: want %s", orTop(show), shown(n.Value), want)
		}
		v.Set(p.Elem())
	default:
		return d.errf(n.Line, "%s: internal error: no decoder for %s", orTop(show), v.Type())
	}
	return nil
}

// structValue decodes a mapping into a schema struct: every key must be a
// field's yaml name, once; a field Line tagged "-" gets the mapping's line.
func (d *decoder) structValue(n *yaml.Node, v reflect.Value, key, show string, depth int) error {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		return d.errf(n.Line, "%s: want a mapping", orTop(show))
	}
	if f, ok := t.FieldByName("Line"); ok && f.Type == lineType {
		v.FieldByIndex(f.Index).SetInt(int64(n.Line))
	}
	// A scenario or arm is named by its id in errors about its fields.
	if _, ok := fieldByTag(t, "id"); ok {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "id" && n.Content[i+1].Kind == yaml.ScalarNode && strings.TrimSpace(n.Content[i+1].Value) != "" {
				show = n.Content[i+1].Value
			}
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, c := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return d.errf(k.Line, "%s: a key must be a plain name", orTop(show))
		}
		if seen[k.Value] {
			return d.errf(k.Line, "%s: duplicate key", join(show, k.Value))
		}
		seen[k.Value] = true
		f, ok := fieldByTag(t, k.Value)
		if !ok {
			return d.errf(k.Line, "unknown key %s%s", shown(join(show, k.Value)), knownKeys(t))
		}
		d.lines[join(key, k.Value)] = k.Line
		if err := d.value(c, v.FieldByIndex(f.Index), join(key, k.Value), join(show, k.Value), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// scenarioIndex reads the scenario entry a positional path sits in:
// "scenarios[3].workload.command" → 3; -1 outside any.
func scenarioIndex(key string) int {
	rest, ok := strings.CutPrefix(key, "scenarios[")
	if !ok {
		return -1
	}
	var i int
	if _, err := fmt.Sscanf(rest, "%d]", &i); err != nil {
		return -1
	}
	return i
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key && name != "-" && name != "" && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func knownKeys(t reflect.Type) string {
	var ks []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "-" && name != "" && t.Field(i).IsExported() {
			ks = append(ks, name)
		}
	}
	return "; known keys: " + strings.Join(ks, ", ")
}
