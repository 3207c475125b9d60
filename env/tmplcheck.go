package env

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/templates"
)

// TemplateRole is a role a template names (.Roles.R, index .Roles "R"),
// at the line that names it.
type TemplateRole struct {
	Role string
	Line int
}

// CheckTemplate parses text as Render does and checks what it reads from
// the facts without running it, so a branch that this host would not take
// is checked too: every value read from the top-level data must be a fact
// (.Host.Nme is not), and with roles non-nil every role it names must be
// one of roles (a role no host carries renders nothing; an error says so).
// It returns the roles the template names, in the order it names them;
// the error is a *fileline.Error at the template's line.
func CheckTemplate(name, text string, roles []string) ([]TemplateRole, error) {
	funcs := templates.Funcs()
	funcs["shellQuote"] = func(string) string { return "" }
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, templateErr(name, err)
	}
	c := &tmplChecker{name: name, tree: t.Tree, roles: roles}
	if t.Tree != nil {
		c.walk(t.Tree.Root, true)
	}
	return c.found, c.err
}

type tmplChecker struct {
	name  string
	tree  *parse.Tree
	roles []string
	found []TemplateRole
	err   error
}

var factsType = reflect.TypeFor[Facts]()

func (c *tmplChecker) line(n parse.Node) int {
	loc, _ := c.tree.ErrorContext(n)
	// loc is "name:line:col"; the name may hold ':' itself.
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 0
	}
	l, _ := strconv.Atoi(parts[len(parts)-2])
	return l
}

func (c *tmplChecker) fail(n parse.Node, format string, args ...any) {
	if c.err == nil {
		c.err = fileline.Errorf(c.name, c.line(n), format, args...)
	}
}

// walk visits n; top says whether dot is the template's data (outside
// range and with, whose bodies move dot elsewhere).
func (c *tmplChecker) walk(n parse.Node, top bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			c.walk(x, top)
		}
	case *parse.ActionNode:
		c.walk(n.Pipe, top)
	case *parse.IfNode:
		c.walk(n.Pipe, top)
		c.walk(n.List, top)
		c.walk(n.ElseList, top)
	case *parse.RangeNode:
		c.walk(n.Pipe, top)
		c.walk(n.List, false)
		c.walk(n.ElseList, top)
	case *parse.WithNode:
		c.walk(n.Pipe, top)
		c.walk(n.List, false)
		c.walk(n.ElseList, top)
	case *parse.TemplateNode:
		c.walk(n.Pipe, top)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, cmd := range n.Cmds {
			c.walk(cmd, top)
		}
	case *parse.CommandNode:
		c.index(n, top)
		for _, a := range n.Args {
			c.walk(a, top)
		}
	case *parse.ChainNode:
		c.walk(n.Node, top)
	case *parse.FieldNode:
		if top {
			c.chain(n, n.Ident)
		}
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			c.chain(n, n.Ident[1:])
		}
	}
}

// chain checks a field chain read from the top-level data.
func (c *tmplChecker) chain(n parse.Node, idents []string) {
	t := factsType
	for i, id := range idents {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := t.FieldByName(id)
			if !ok || !f.IsExported() {
				c.fail(n, "unknown value .%s: no such template fact (docs/env-yml.md §10)", strings.Join(idents[:i+1], "."))
				return
			}
			t = f.Type
		case reflect.Map:
			if (i == 1 && idents[0] == "Roles") || idents[i-1] == "Ordinal" {
				c.role(n, id, "."+strings.Join(idents[:i+1], "."))
			}
			return // keys of Vars and Ordinal are the env's, not the template's
		default:
			return // a slice or a scalar: the engine reports what follows
		}
	}
}

// index checks `index .Roles "R"`, which renders nothing for a role no
// host has instead of failing.
func (c *tmplChecker) index(n *parse.CommandNode, top bool) {
	if len(n.Args) < 3 {
		return
	}
	if id, ok := n.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "index" {
		return
	}
	roles := false
	switch a := n.Args[1].(type) {
	case *parse.FieldNode:
		roles = top && slices.Equal(a.Ident, []string{"Roles"})
	case *parse.VariableNode:
		roles = slices.Equal(a.Ident, []string{"$", "Roles"})
	}
	if s, ok := n.Args[2].(*parse.StringNode); ok && roles {
		c.role(n, s.Text, fmt.Sprintf("index .Roles %q", s.Text))
	}
}

func (c *tmplChecker) role(n parse.Node, role, expr string) {
	c.found = append(c.found, TemplateRole{Role: role, Line: c.line(n)})
	if c.roles != nil && !slices.Contains(c.roles, role) {
		known := slices.Clone(c.roles)
		slices.Sort(known)
		c.fail(n, "unknown role %q (%s): no host has it (roles: %s)", role, expr, strings.Join(known, ", "))
	}
}
