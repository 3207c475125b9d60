package generator

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// DeployArtifact is a file of the SUT's own that starts it: a container
// image, a compose service, a Helm chart, a Kubernetes workload, a
// systemd unit, a Procfile process, a Makefile target that brings a
// cluster up. §6b of a drafted plan and env.yml's sut: section start from
// them (docs/plan-format.md §15.5).
type DeployArtifact struct {
	Kind    string   `json:"kind" yaml:"kind"` // dockerfile | compose | helm-chart | kubernetes | systemd | procfile | vagrant | make-target
	File    string   `json:"file" yaml:"file"`
	Line    int      `json:"line,omitempty" yaml:"line,omitempty"`
	Name    string   `json:"name" yaml:"name"`                           // binary, service, chart, Kind/name, unit, process or target
	Command string   `json:"command,omitempty" yaml:"command,omitempty"` // what it runs, as written
	Image   string   `json:"image,omitempty" yaml:"image,omitempty"`     // the image it runs or is built from
	Ports   []string `json:"ports,omitempty" yaml:"ports,omitempty"`
}

// deployKind classifies the deploy files by name and place; kubernetes
// manifests are YAML files under a deploy-ish directory (read to be sure).
func deployKind(name string, d dirInfo) fileKind {
	low := strings.ToLower(name)
	switch {
	case name == "Dockerfile" || name == "Containerfile" || strings.HasPrefix(name, "Dockerfile.") || strings.HasSuffix(low, ".dockerfile"):
		return kindDockerfile
	case composeRE.MatchString(low):
		return kindCompose
	case name == "Chart.yaml":
		return kindHelmChart
	case name == "Procfile" || strings.HasPrefix(name, "Procfile."):
		return kindProcfile
	case name == "Vagrantfile":
		return kindVagrant
	case isYAML(low) && low != "values.yaml" && manifestDir(d.rel):
		return kindManifest
	}
	return kindNone
}

var composeRE = lazyre.New(`^(?:docker-)?compose(?:[.-][\w.-]+)?\.ya?ml$`)

// manifestDir reports a directory that holds Kubernetes manifests or a
// chart's templates.
func manifestDir(rel string) bool {
	for _, p := range strings.Split(rel, "/") {
		switch strings.ToLower(p) {
		case "k8s", "kubernetes", "kube", "manifests", "deploy", "deployment", "deployments", "helm", "charts",
			"kustomize", "kubernetes-deploy", "operator":
			return true
		}
	}
	return false
}

// addDeploy parses one deploy file into its artifacts.
func (s *scanner) addDeploy(k fileKind, rel string, data []byte) {
	var arts []DeployArtifact
	switch k {
	case kindDockerfile:
		if a, ok := parseDockerfile(data); ok {
			arts = append(arts, a)
		}
	case kindCompose:
		arts = parseCompose(data)
	case kindHelmChart:
		if a, ok := parseChart(data); ok {
			arts = append(arts, a)
		}
	case kindManifest:
		arts = parseManifests(data)
	case kindProcfile:
		arts = parseProcfile(data)
	case kindVagrant:
		arts = append(arts, DeployArtifact{Kind: "vagrant", Name: path.Base(rel), Line: vagrantLine(data)})
	}
	for _, a := range arts {
		a.File = rel
		s.p.DeployArtifacts = append(s.p.DeployArtifacts, a)
	}
}

// dockerInstr is one Dockerfile instruction with continuations joined.
type dockerInstr struct {
	op, args string
	line     int
}

func dockerInstrs(data []byte) []dockerInstr {
	var out []dockerInstr
	lines := splitLines(data)
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		start := i
		for strings.HasSuffix(t, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue
			}
			t = strings.TrimSuffix(t, "\\") + " " + next
		}
		op, args, _ := strings.Cut(t, " ")
		out = append(out, dockerInstr{op: strings.ToUpper(op), args: strings.TrimSpace(args), line: start + 1})
	}
	return out
}

// dockerWords is an ENTRYPOINT or CMD argument: a JSON array (exec form)
// or a shell line.
func dockerWords(args string) []string {
	var w []string
	if strings.HasPrefix(args, "[") && json.Unmarshal([]byte(args), &w) == nil {
		return w
	}
	return strings.Fields(args)
}

// parseDockerfile reads the final stage: its base image, exposed ports and
// what it starts (ENTRYPOINT then CMD, at the line of the first of them).
// A Dockerfile that starts nothing is still an image to build.
func parseDockerfile(data []byte) (DeployArtifact, bool) {
	a := DeployArtifact{Kind: "dockerfile"}
	var entry, cmd []string
	entryLine, cmdLine, from := 0, 0, false
	for _, in := range dockerInstrs(data) {
		switch in.op {
		case "FROM":
			f := strings.Fields(in.args)
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				f = f[1:]
			}
			if len(f) > 0 {
				a.Image, from = f[0], true
			}
			entry, cmd, entryLine, cmdLine, a.Ports = nil, nil, 0, 0, nil
		case "EXPOSE":
			a.Ports = append(a.Ports, strings.Fields(in.args)...)
		case "ENTRYPOINT":
			entry, entryLine = dockerWords(in.args), in.line
		case "CMD":
			cmd, cmdLine = dockerWords(in.args), in.line
		}
	}
	if !from {
		return a, false
	}
	words := append(append([]string(nil), entry...), cmd...)
	a.Command = strings.Join(words, " ")
	a.Line = entryLine
	if a.Line == 0 {
		a.Line = cmdLine
	}
	if len(words) > 0 {
		a.Name = path.Base(words[0])
	} else {
		a.Name = a.Image
	}
	return a, true
}

// parseCompose reads a compose file's services: name, image, command and
// ports, at the line of the service's key.
func parseCompose(data []byte) []DeployArtifact {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	services := mapValue(doc.Content[0], "services")
	if services == nil || services.Kind != yaml.MappingNode {
		return nil
	}
	var out []DeployArtifact
	for i := 0; i+1 < len(services.Content); i += 2 {
		k, v := services.Content[i], services.Content[i+1]
		a := DeployArtifact{Kind: "compose", Name: k.Value, Line: k.Line}
		if img := mapValue(v, "image"); img != nil {
			a.Image = img.Value
		}
		a.Command = scalarOrList(mapValue(v, "command"))
		if e := scalarOrList(mapValue(v, "entrypoint")); e != "" {
			a.Command = strings.TrimSpace(e + " " + a.Command)
		}
		if ps := mapValue(v, "ports"); ps != nil && ps.Kind == yaml.SequenceNode {
			for _, p := range ps.Content {
				if p.Kind == yaml.ScalarNode {
					a.Ports = append(a.Ports, p.Value)
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// mapValue is the value of key in a YAML mapping node, nil if absent.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// scalarOrList joins a scalar or a list of scalars with spaces.
func scalarOrList(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var w []string
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				w = append(w, c.Value)
			}
		}
	}
	return strings.Join(w, " ")
}

// parseChart reads a Helm chart's name and app version.
func parseChart(data []byte) (DeployArtifact, bool) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return DeployArtifact{}, false
	}
	name := mapValue(doc.Content[0], "name")
	if name == nil || name.Value == "" {
		return DeployArtifact{}, false
	}
	a := DeployArtifact{Kind: "helm-chart", Name: name.Value, Line: name.Line}
	if v := mapValue(doc.Content[0], "appVersion"); v != nil {
		a.Image = "appVersion " + v.Value
	}
	return a, true
}

// workloadKinds are the Kubernetes kinds that run the SUT's processes.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Pod": true, "Job": true, "ReplicaSet": true}

// parseManifests reads Kubernetes workloads line by line, since a chart's
// templates are not YAML until rendered: per document the kind (its
// line), metadata's name, the first container's image and its command
// and args.
func parseManifests(data []byte) []DeployArtifact {
	var out []DeployArtifact
	var cur *DeployArtifact
	inMeta := false
	listKey := "" // "command" or "args" while reading a block list
	flush := func() {
		if cur != nil && workloadKinds[cur.Kind] {
			out = append(out, DeployArtifact{Kind: "kubernetes", File: "", Line: cur.Line, Name: cur.Kind + "/" + cur.Name,
				Command: strings.TrimSpace(cur.Command), Image: cur.Image, Ports: cur.Ports})
		}
		cur, inMeta, listKey = nil, false, ""
	}
	for i, line := range splitLines(data) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(line, "---") {
			flush()
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		item := strings.TrimPrefix(t, "- ")
		isKV := yamlKeyRE.MatchString(item) // "http://x:1" is a value, not a key
		key, val := "", ""
		if isKV {
			key, val, _ = strings.Cut(item, ":")
			val = strings.Trim(strings.TrimSpace(val), `"'`)
		}
		if indent == 0 {
			listKey = ""
			inMeta = key == "metadata"
			if key == "kind" && isKV {
				flush()
				cur = &DeployArtifact{Kind: val, Line: i + 1}
			}
			continue
		}
		if cur == nil {
			continue
		}
		if listKey != "" && strings.HasPrefix(t, "- ") && !isKV {
			cur.Command += " " + strings.Trim(strings.TrimPrefix(t, "- "), `"'`)
			continue
		}
		listKey = ""
		switch {
		case inMeta && key == "name" && cur.Name == "" && isKV:
			cur.Name = val
		case key == "image" && cur.Image == "" && isKV:
			cur.Image = val
		case (key == "command" || key == "args") && isKV:
			if strings.HasPrefix(val, "[") {
				cur.Command += " " + strings.Join(flowList(val), " ")
			} else if val == "" {
				listKey = key
			} else {
				cur.Command += " " + val
			}
		case key == "containerPort" && isKV:
			cur.Ports = append(cur.Ports, val)
		}
	}
	flush()
	return out
}

// yamlKeyRE is a YAML mapping key at the start of a line: a name, a colon,
// then a space or the end.
var yamlKeyRE = lazyre.New(`^[A-Za-z_][\w.-]*:(?:\s|$)`)

// flowList splits a YAML flow sequence of scalars: ["a", "b"] → a, b.
func flowList(s string) []string {
	var w []string
	if json.Unmarshal([]byte(s), &w) == nil {
		return w
	}
	for _, f := range strings.Split(strings.Trim(s, "[]"), ",") {
		if f = strings.Trim(strings.TrimSpace(f), `"'`); f != "" {
			w = append(w, f)
		}
	}
	return w
}

// procfileRE is a Procfile process: "name: command".
var procfileRE = lazyre.New(`^([A-Za-z0-9_-]+):\s*(\S.*)$`)

// parseProcfile reads the processes goreman or foreman start.
func parseProcfile(data []byte) []DeployArtifact {
	var out []DeployArtifact
	for i, line := range splitLines(data) {
		if m := procfileRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			out = append(out, DeployArtifact{Kind: "procfile", Name: m[1], Command: m[2], Line: i + 1})
		}
	}
	return out
}

// vagrantLine is the line of the box a Vagrantfile boots, else 1.
func vagrantLine(data []byte) int {
	for i, line := range splitLines(data) {
		if strings.Contains(line, ".vm.box") {
			return i + 1
		}
	}
	return 1
}

// clusterRecipeRE is a Makefile recipe that starts the SUT or a cluster.
var clusterRecipeRE = lazyre.New(`\bdocker[- ]compose\b[^\n]*\bup\b|\b(?:docker|podman) run\b|\bgoreman\b|\bforeman start\b|\bkind create cluster\b|\bminikube start\b|\bhelm (?:install|upgrade)\b|\bkubectl (?:apply|create)\b|\bvagrant up\b|\bsystemctl (?:start|restart)\b|\bnomad (?:job )?run\b`)

// clusterTarget reports a Makefile target that brings the SUT up: its
// recipe runs one of the usual starters.
func clusterTarget(t mkTarget) (DeployArtifact, bool) {
	for _, line := range strings.Split(t.recipe, "\n") {
		if clusterRecipeRE.MatchString(line) {
			return DeployArtifact{Kind: "make-target", Name: t.name, Line: t.line, Command: strings.TrimSpace(line)}, true
		}
	}
	return DeployArtifact{}, false
}

// deployFromUnits adds the systemd units as deploy artifacts, so one list
// holds every way the SUT's own files start it.
func (s *scanner) deployFromUnits() {
	for _, u := range s.p.Units {
		s.p.DeployArtifacts = append(s.p.DeployArtifacts, DeployArtifact{Kind: "systemd", File: u.File, Line: u.Line, Name: u.Name, Command: u.ExecStart})
	}
}

// deployLine is one artifact as a summary line: where, what, what it runs.
func deployLine(a DeployArtifact) string {
	at := a.File
	if a.Line > 0 {
		at += ":" + strconv.Itoa(a.Line)
	}
	s := at + " [" + a.Kind + "] " + a.Name
	if a.Command != "" {
		s += " — runs `" + strings.ReplaceAll(redactSecrets(a.Command), "`", "'") + "`"
	}
	if a.Image != "" {
		s += " (" + a.Image + ")"
	}
	if len(a.Ports) > 0 {
		s += " ports " + strings.Join(a.Ports, " ")
	}
	return s
}

// secretArgRE is a flag or variable that carries a secret, and its value.
var secretArgRE = lazyre.New(`(?i)(--?[\w-]*(?:pass|password|passwd|secret|token|apikey|api-key|credential)[\w-]*[= ]|\b[\w]*(?:PASSWORD|SECRET|TOKEN|APIKEY)[\w]*=)("[^"]*"|'[^']*'|\S+)`)

// redactSecrets hides the values of secret-looking flags, so a command
// copied into a summary or env.example.yml carries no password.
func redactSecrets(cmd string) string {
	return secretArgRE.ReplaceAllString(cmd, "${1}<redacted>")
}
