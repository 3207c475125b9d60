package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/internal/fileline"
	"go.yaml.in/yaml/v4"
)

// envFileLimit bounds the env.yml EnvInto reads.
const envFileLimit = 4 << 20

// EnvYAML is the env.yml of st: its ssh: and hosts: sections, nothing else
// (docs/testbed.md §3).
func EnvYAML(st *State) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	sshKey, sshVal := sshSection(st)
	sshKey.HeadComment = fmt.Sprintf("Written by `dstgen testbed up %d --dir %s`: %d network namespace(s) on bridge %s (%s).\n"+
		"`dstgen testbed env --into testing/env.yml` puts these two sections into an existing env.yml.", st.N, st.Dir, st.N, st.Bridge, Subnet)
	hostsKey, hostsVal := hostsSection(st)
	root.Content = append(root.Content, sshKey, sshVal, hostsKey, hostsVal)
	out, err := encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}})
	if err != nil {
		return nil, err
	}
	return spaceSections(out), nil
}

// EnvInto rewrites the ssh: and hosts: sections of the env.yml at path
// with st's, keeping every other section and comment. When path does not
// exist, the env.example.yml beside it (what `dstgen init` writes) is the
// starting point. remote: and bastion:, the single-host spellings of
// hosts: and ssh.jump, are dropped. The result must load with env.Parse;
// otherwise nothing is written and the error has its file:line.
func EnvInto(path string, st *State) error {
	src := path
	data, err := fileline.ReadBounded(src, envFileLimit)
	if errors.Is(err, fs.ErrNotExist) {
		src = filepath.Join(filepath.Dir(path), "env.example.yml")
		data, err = fileline.ReadBounded(src, envFileLimit)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: no such file, and no env.example.yml beside it (dstgen init writes one)", path)
		}
	}
	if err != nil {
		return fmt.Errorf("read env.yml: %w", err)
	}
	out, err := rewriteEnv(src, data, st)
	if err != nil {
		return err
	}
	if _, err := env.Parse(path, out); err != nil {
		return fmt.Errorf("the rewritten env.yml does not load: %w", err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(src); err == nil {
		mode = fi.Mode().Perm()
	}
	return atomicfile.Write(path, out, mode)
}

// rewriteEnv is EnvInto on bytes: name is for error messages.
func rewriteEnv(name string, data []byte, st *State) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fileline.Errorf(name, root.Line, "top level must be a mapping (key: value)")
	}
	sshKey, sshVal := sshSection(st)
	hostsKey, hostsVal := hostsSection(st)
	section := map[string][2]*yaml.Node{"ssh": {sshKey, sshVal}, "hosts": {hostsKey, hostsVal}}
	has := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		has[root.Content[i].Value] = true
	}
	// remote: is the single-host spelling of hosts:, bastion: of ssh.jump;
	// the new section takes the place of the one it replaces.
	standsFor := map[string]string{"remote": "hosts", "bastion": "ssh"}
	var kept []*yaml.Node
	placed := map[string]bool{}
	carry := "" // head comments of dropped keys, for the next kept key
	keep := func(k, v *yaml.Node) {
		if carry != "" {
			k.HeadComment = strings.TrimSpace(carry + "\n" + k.HeadComment)
			carry = ""
		}
		kept = append(kept, k, v)
	}
	place := func(name string, old *yaml.Node, oldVal *yaml.Node) {
		placed[name] = true
		k, v := section[name][0], section[name][1]
		// The key's comments stay; the old value's comments describe values
		// that are gone, except its line comment.
		k.HeadComment, k.LineComment, k.FootComment = old.HeadComment, old.LineComment, old.FootComment
		v.LineComment = oldVal.LineComment
		keep(k, v)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch name := k.Value; name {
		case "ssh", "hosts":
			if !placed[name] { // a duplicate key: env.Parse refuses the file anyway
				place(name, k, v)
			}
		case "remote", "bastion":
			if s := standsFor[name]; !has[s] && !placed[s] {
				place(s, k, &yaml.Node{})
				continue
			}
			if k.HeadComment != "" {
				carry = strings.TrimSpace(carry + "\n" + k.HeadComment)
			}
		case "parameters":
			retargetBenchHost(v, st)
			keep(k, v)
		case "dstgen":
			noSystemd(v)
			keep(k, v)
		default:
			keep(k, v)
		}
	}
	for _, name := range []string{"ssh", "hosts"} {
		if !placed[name] {
			keep(section[name][0], section[name][1])
		}
	}
	root.Content = kept
	out, err := encode(&doc)
	if err != nil {
		return nil, err
	}
	return spaceSections(out), nil
}

// retargetBenchHost points parameters.bench_host at the testbed's first
// client host (else its last host) when it names no testbed host: the
// generated value comes from the SUT's docs ("client-1"), and a bench host
// that does not exist would stop the benchmark and the scenario runs.
func retargetBenchHost(params *yaml.Node, st *State) {
	if params.Kind != yaml.MappingNode || len(st.Hosts) == 0 {
		return
	}
	for i := 0; i+1 < len(params.Content); i += 2 {
		if params.Content[i].Value != "bench_host" {
			continue
		}
		v := params.Content[i+1]
		for _, h := range st.Hosts {
			if h.Name == v.Value {
				return
			}
		}
		pick := st.Hosts[len(st.Hosts)-1].Name
		for _, h := range st.Hosts {
			if slices.Contains(h.Roles, "client") {
				pick = h.Name
				break
			}
		}
		old := v.Value
		*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: pick, Style: yaml.DoubleQuotedStyle,
			LineComment: fmt.Sprintf("# dstgen testbed: was %q, not a testbed host", old)}
		return
	}
}

// noSystemd turns dstgen.capabilities.systemd off where the generated
// env.yml asks for it: a network namespace has no systemd (its SUT runs as
// a supervised dstgen job, and the kill nemeses restart it), so validate
// would otherwise block the scenarios that name it.
func noSystemd(dstgen *yaml.Node) {
	if dstgen.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(dstgen.Content); i += 2 {
		if dstgen.Content[i].Value != "capabilities" || dstgen.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		caps := dstgen.Content[i+1]
		for j := 0; j+1 < len(caps.Content); j += 2 {
			if caps.Content[j].Value == "systemd" && caps.Content[j+1].Value != "false" {
				*caps.Content[j+1] = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false",
					LineComment: "# dstgen testbed: network namespaces have no systemd; the SUT runs as a dstgen job"}
			}
		}
	}
}

// spaceSections puts a blank line before every top-level section (a key at
// column 0 with the comment lines right above it) that lacks one: the YAML
// encoder keeps comments but drops blank lines, and env.yml files are
// written with a blank line between sections.
func spaceSections(data []byte) []byte {
	lines := strings.Split(string(data), "\n")
	blankBefore := make([]bool, len(lines))
	for i, l := range lines {
		if l == "" || l[0] == ' ' || l[0] == '#' || l[0] == '-' {
			continue
		}
		j := i
		for j > 0 && strings.HasPrefix(lines[j-1], "#") {
			j--
		}
		if j > 0 && lines[j-1] != "" {
			blankBefore[j] = true
		}
	}
	var b strings.Builder
	for i, l := range lines {
		if blankBefore[i] {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

func encode(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode env.yml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode env.yml: %w", err)
	}
	return b.Bytes(), nil
}

// sshSection is `ssh: {user, key, known_hosts, config: none}`: the
// testbed's own files, and no ~/.ssh/config that could redirect 10.77.0.x.
func sshSection(st *State) (*yaml.Node, *yaml.Node) {
	m := mapping(
		str("user"), str(st.User),
		str("key"), str(st.Key),
		str("known_hosts"), str(st.KnownHosts),
		str("config"), str("none"),
	)
	return str("ssh"), m
}

// hostsSection is one entry per host: name, address, port, roles, workdir
// and vars.data_dir.
func hostsSection(st *State) (*yaml.Node, *yaml.Node) {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, h := range st.Hosts {
		roles := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, r := range h.Roles {
			roles.Content = append(roles.Content, str(r))
		}
		vars := mapping(str("data_dir"), str(h.DataDir))
		vars.Style = yaml.FlowStyle
		hm := mapping(
			str("name"), str(h.Name),
			str("address"), str(h.Address),
			str("port"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(h.Port)},
			str("roles"), roles,
			str("workdir"), str(h.Workdir),
			str("vars"), vars,
		)
		hm.Content[1].LineComment = "netns " + h.NS + ", tmpfs " + strconv.Itoa(st.DataMiB) + " MiB on data_dir"
		seq.Content = append(seq.Content, hm)
	}
	return str("hosts"), seq
}

// mapping builds a block mapping from key, value node pairs.
func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: kv}
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
