package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// What the demo writes into the generated framework, the way a user
// would: env.yml from env.example.yml (hosts, ssh, sut, capabilities) and
// the TODOs of scenarios.yml (workload commands, the partition's params).

// missingCaps are capability flags (env.yml dstgen.capabilities) a
// machine with only Go lacks: root, iptables, netem, namespaces, systemd.
var missingCaps = lazyre.New(`(?i)iptables|netem|tc_|^tc$|netns|namespace|root|sudo|systemd|faketime|stress`)

// example reads what env.yml keeps from env.example.yml.
type example struct {
	planPath string
	sutRole  string
	caps     map[string]bool
}

func (s *stack) readExample() (example, error) {
	p := filepath.Join(s.testing, "env.example.yml")
	b, err := os.ReadFile(p)
	if err != nil {
		return example{}, fmt.Errorf("read %s: %w", p, err)
	}
	var doc struct {
		SUT struct {
			Roles []string `yaml:"roles"`
		} `yaml:"sut"`
		Dstgen struct {
			PlanPath     string          `yaml:"plan_path"`
			Capabilities map[string]bool `yaml:"capabilities"`
		} `yaml:"dstgen"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return example{}, fmt.Errorf("%s: %w", p, err)
	}
	ex := example{planPath: doc.Dstgen.PlanPath, sutRole: "kv", caps: map[string]bool{}}
	if len(doc.SUT.Roles) > 0 {
		ex.sutRole = doc.SUT.Roles[0]
	}
	for k := range doc.Dstgen.Capabilities {
		ex.caps[k] = !missingCaps.MatchString(k)
	}
	return ex, nil
}

// writeEnv writes testing/env.yml; staleReads is the bug switch, a
// parameter the sut.command template turns into -stale-reads.
func (s *stack) writeEnv(staleReads bool) error {
	d := s.d
	ex, err := s.readExample()
	if err != nil {
		return err
	}
	q := strconv.Quote
	bin := d.bin
	var b strings.Builder
	fmt.Fprintf(&b, `# env.yml — written by dstgen demo from env.example.yml: every host is an
# SSH server inside the demo process on 127.0.0.1 (strict host key checking
# against the demo's own known_hosts), the SUT is examples/kv.
ssh:
  user: %s
  key: %s
  agent: false
  known_hosts: %s
  port: 22
  timeout_s: 30
  keepalive_s: 5
  config: none
  jump: null
workdir: %s
hosts:
`, q(currentUser()), q(filepath.Join(s.dir, "ssh", "id_ed25519")), q(filepath.Join(s.dir, "ssh", "known_hosts")), q(filepath.Join(s.dir, "hosts", "default")))
	for i, h := range s.hosts {
		role, vars := "client", "{}"
		if i < len(nodeNames) {
			// peers: how this replica reaches the others (its out- proxies).
			var peers []string
			for j := range nodeNames {
				if j != i {
					peers = append(peers, fmt.Sprintf("%d=%s", j+1, loopback(s.outs[[2]int{i, j}])))
				}
			}
			role, vars = ex.sutRole, fmt.Sprintf("{id: %d, port: %d, peers: %q}", i+1, s.ports[i], strings.Join(peers, ","))
		}
		fmt.Fprintf(&b, "  - name: %s\n    address: 127.0.0.1\n    port: %d\n    roles: [%s]\n    workdir: %s\n    vars: %s\n",
			q(h.Name), h.Port(), q(role), q(h.Workdir), vars)
	}
	fmt.Fprintf(&b, `benchmark:
  mode: "mixed"
  dataset: ""
  rate: 0
  duration: 5
  seed: 0
  command: %s
  driver: ""
  model: "kv"
  checker: "linearizability"
sut:
  name: "kv"
  roles: [%s]
  run: job
  install:
    package: ""
    artifact: ""
    binary: %s
    version: ""
  command: %s
  data_dir: "{{ .Host.Workdir }}/data"
  configs: []
  health:
    %s: %s
  stop_units: []
  ready_timeout_s: 30
parameters:
  bench_host: "client"
  # The bug switch: true makes sut.command pass -stale-reads.
  stale_reads: %t
dstgen:
  plan_path: %s
  scenarios: []
  seeds: [1]
  tier: smoke
  poll_interval_s: 10
  max_polls: 60
  capabilities:
`, q(filepath.Join(bin, "workload")+" -endpoints "+s.endpoints()), q(ex.sutRole), q(filepath.Join(bin, "kvnode")),
		q(filepath.Join(bin, "kvnode")+" -id {{ .Host.Vars.id }} -listen 127.0.0.1:{{ .Host.Vars.port }} -peers {{ .Host.Vars.peers }} -leader 1{{ if .Vars.stale_reads }} -stale-reads{{ end }}"),
		ex.sutRole, q(d.health),
		staleReads, q(ex.planPath))
	keys := make([]string, 0, len(ex.caps))
	for k := range ex.caps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "    %s: %t\n", k, ex.caps[k])
	}
	p := filepath.Join(s.testing, "env.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// quiesce is a command that exits 0 once every replica answers its
// health probe (all replicas listen on this machine's loopback).
func (s *stack) quiesce() string {
	var c []string
	for _, p := range s.ports {
		c = append(c, strings.ReplaceAll(s.d.health, "{{ .Host.Vars.port }}", strconv.Itoa(p)))
	}
	return strings.Join(c, " && ")
}

// endpoints are the kvnodes' client addresses, for the workload.
func (s *stack) endpoints() string {
	var e []string
	for _, p := range s.ports {
		e = append(e, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return strings.Join(e, ",")
}

// fillScenarios replaces scenarios.yml's workload TODOs with the demo's
// workload command, sizes the runs for a demo (the smoke tier's
// duration), and points S2's partition at node 3's proxy.
func (s *stack) fillScenarios() error {
	p := filepath.Join(s.testing, "scenarios.yml")
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if len(root.Content) == 0 {
		return fmt.Errorf("%s: empty", p)
	}
	list := mapGet(root.Content[0], "scenarios")
	if list == nil || list.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: no scenarios list", p)
	}
	wl := filepath.Join(s.d.bin, "workload") + " -endpoints " + s.endpoints()
	found := map[string]bool{}
	for _, e := range list.Content {
		id := scalar(mapGet(e, "id"))
		found[id] = true
		w := mapGet(e, "workload")
		if w == nil {
			continue
		}
		mapSet(w, "command", wl)
		// Recovery is over when every replica answers again (the hint
		// generated above each entry).
		q := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		mapPut(e, "quiesce", q)
		mapSet(q, "command", s.quiesce())
		mapSet(q, "timeout", "20s")
		if f := mapGet(e, "faults"); id == "S2" && f != nil && f.Kind == yaml.SequenceNode && len(f.Content) > 0 {
			flt := f.Content[0]
			mapSet(flt, "nemesis", "partition-full")
			mapSet(flt, "targets", nodeNames[len(nodeNames)-1])
			params := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			mapPut(flt, "params", params)
			mapSet(params, "via", "proxy")
			mapSet(params, "proxy_api", s.api)
			mapSet(params, "proxies", s.cutProxies(len(nodeNames)-1))
			mapSet(params, "proxy_bin", s.d.cfg.Exe)
		}
	}
	for _, id := range []string{"S1", "S2"} {
		if !found[id] {
			return fmt.Errorf("%s: no scenario %s (the plan of examples/kv changed?)", p, id)
		}
	}
	out, err := yaml.Marshal(&root)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mapPut sets key to v, replacing a value that is there.
func mapPut(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v.HeadComment, v.LineComment = m.Content[i+1].HeadComment, m.Content[i+1].LineComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}

// mapSet sets key to the string s (double-quoted, like the generator).
func mapSet(m *yaml.Node, key, s string) {
	mapPut(m, key, &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle})
}

func scalar(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
