package env

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/templates"
)

// HostFacts is what a template knows about one host.
type HostFacts struct {
	Name    string
	Address string
	Port    int
	Workdir string
	Roles   []string
	Vars    map[string]any // the host's own vars: (parameters are in Facts.Vars)
	// Ordinal is the host's 1-based position within each of its roles, in
	// env.yml order: the member number quorum systems want (server.N=,
	// myid, node-id), the same on every host that renders it.
	Ordinal map[string]int
}

// Facts is the data every per-host template sees: the SUT's config
// templates, sut.command, sut.data_dir, health commands and the workload
// command. A member's config is rendered from its own facts, never copied.
//
//	{{ .Host.Name }} {{ .Host.Address }} {{ .Host.Workdir }}
//	{{ range .Roles.etcd }}{{ .Name }}={{ .Address }}{{ end }}
//	{{ .Host.Ordinal.etcd }}  1-based position of this host among the etcd hosts
//	{{ .Vars.client_port }}   parameters, overridden by the host's vars
//	{{ .DataDir }}            sut.data_dir rendered for this host
//	{{ .Benchmark.Rate }}     benchmark.* (after overrides)
type Facts struct {
	Host      HostFacts
	Hosts     []HostFacts            // every host, in env.yml order
	Roles     map[string][]HostFacts // hosts by role, in env.yml order
	Vars      map[string]any         // parameters with this host's vars on top
	DataDir   string                 // "" in the facts sut.data_dir itself is rendered from
	Benchmark Benchmark
	SUT       SUTFacts
}

// SUTFacts are the SUT values a template may cite.
type SUTFacts struct {
	Name  string
	Roles []string
	// Members are the hosts that run the SUT (those of sut.roles, every
	// host when it is empty), in env.yml order: a cluster address lists
	// them, a health check counts them.
	Members []HostFacts
}

// HostWorkdir is h's work dir: its own, or the top-level one.
func (e *Env) HostWorkdir(h Host) string {
	if h.Workdir != "" {
		return h.Workdir
	}
	return e.Workdir
}

func (e *Env) hostFacts(h Host) HostFacts {
	hf := HostFacts{Name: h.Name, Address: h.Address, Port: h.Port, Workdir: e.HostWorkdir(h),
		Roles: slices.Clone(h.Roles), Vars: maps.Clone(h.Vars), Ordinal: map[string]int{}}
	for _, r := range h.Roles {
		for _, o := range e.Hosts {
			if slices.Contains(o.Roles, r) {
				hf.Ordinal[r]++
			}
			if o.Name == h.Name {
				break
			}
		}
	}
	return hf
}

// FactsFor returns the template data of host h. DataDir is rendered from
// sut.data_dir (default <workdir>/data) with the same facts.
func (e *Env) FactsFor(h Host) (Facts, error) {
	f := Facts{Host: e.hostFacts(h), Roles: map[string][]HostFacts{}, Vars: map[string]any{},
		Benchmark: e.Benchmark, SUT: SUTFacts{Name: e.SUT.Name, Roles: slices.Clone(e.SUT.Roles)}}
	for _, o := range e.Hosts {
		hf := e.hostFacts(o)
		f.Hosts = append(f.Hosts, hf)
		for _, r := range o.Roles {
			f.Roles[r] = append(f.Roles[r], hf)
		}
	}
	for _, o := range e.SUTHosts() {
		f.SUT.Members = append(f.SUT.Members, e.hostFacts(o))
	}
	maps.Copy(f.Vars, e.Parameters)
	maps.Copy(f.Vars, h.Vars)
	dd := e.SUT.DataDir
	if dd == "" {
		f.DataDir = path.Join(f.Host.Workdir, "data")
		return f, nil
	}
	out, err := Render("sut.data_dir", dd, f)
	if err != nil {
		return Facts{}, err
	}
	f.DataDir = strings.TrimSpace(out)
	if !strings.HasPrefix(f.DataDir, "/") || path.Clean(f.DataDir) == "/" {
		return Facts{}, fmt.Errorf("sut.data_dir for host %s renders to %q: want an absolute path other than /", h.Name, f.DataDir)
	}
	f.DataDir = path.Clean(f.DataDir)
	return f, nil
}

// HostsWithRole returns the hosts that carry any of roles, in env.yml order.
func (e *Env) HostsWithRole(roles ...string) []Host {
	var out []Host
	for _, h := range e.Hosts {
		if slices.ContainsFunc(h.Roles, func(r string) bool { return slices.Contains(roles, r) }) {
			out = append(out, h)
		}
	}
	return out
}

// SUTHosts are the hosts that run the SUT: those of sut.roles, or every
// host when sut.roles is empty.
func (e *Env) SUTHosts() []Host {
	if len(e.SUT.Roles) == 0 {
		return slices.Clone(e.Hosts)
	}
	return e.HostsWithRole(e.SUT.Roles...)
}

var tmplLineRE = lazyre.New(`^template: ([^:]*):(\d+)(?::\d+)?: (?:executing "[^"]*" at <([^>]*)>: )?(.*)$`)

// Render executes text as a text/template with sprig's functions (the
// engine dstgen init uses) and shellQuote on f. An unknown field or map key is an error,
// never "<no value>": "NAME:LINE: unknown value .Host.Nme: ...", so the
// person editing the template sees which line to fix.
//
// Before it runs, the template is checked as CheckTemplate does, against
// the roles of f (none when f has no Roles map): a role no host has, or a
// fact misspelt in a branch this host does not take, is an error too.
func Render(name, text string, f Facts) (string, error) {
	var roles []string
	if f.Roles != nil {
		roles = slices.Collect(maps.Keys(f.Roles))
	}
	if _, err := CheckTemplate(name, text, roles); err != nil {
		return "", err
	}
	funcs := templates.Funcs()
	// shellQuote makes a value one shell word: a host var or parameter that
	// ends up in sut.command or a health command is not to be trusted.
	funcs["shellQuote"] = shell.Quote
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", templateErr(name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, f); err != nil {
		return "", templateErr(name, err)
	}
	return b.String(), nil
}

func templateErr(name string, err error) error {
	msg := err.Error()
	if m := tmplLineRE.FindStringSubmatch(msg); m != nil {
		what := m[4]
		if m[3] != "" {
			what = "unknown value " + m[3] + ": " + what
		}
		return fmt.Errorf("%s:%s: %s", name, m[2], what)
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(msg, "template: "))
}

// WorkloadInput is what one workload or benchmark run is told through the
// driver contract's environment variables (docs: testing/README.md "The
// driver contract").
type WorkloadInput struct {
	RunID       string
	Seed        int64 // 0 = not set: the driver derives one from RunID
	HistoryPath string
	Scenario    string
	Tier        string
	Benchmark   Benchmark // rate, duration, mode, dataset after overrides
}

// WorkloadEnv returns the DSTGEN_* variables of the driver contract:
// DSTGEN_RUN_ID, DSTGEN_SEED, DSTGEN_HISTORY, DSTGEN_DURATION_S,
// DSTGEN_RATE, DSTGEN_MODE, DSTGEN_DATASET, DSTGEN_SCENARIO, DSTGEN_TIER,
// DSTGEN_SUT_HOSTS (addresses of the SUT's hosts) and DSTGEN_HOSTS_<ROLE>
// for every role (upper case, '-' and '.' as '_'). Values are plain; the
// caller quotes them for the shell.
func (e *Env) WorkloadEnv(in WorkloadInput) []string {
	b := in.Benchmark
	kv := []string{
		"DSTGEN_RUN_ID=" + in.RunID,
		"DSTGEN_HISTORY=" + in.HistoryPath,
		"DSTGEN_RATE=" + strconv.FormatFloat(b.Rate, 'f', -1, 64),
		"DSTGEN_MODE=" + b.Mode,
		"DSTGEN_DATASET=" + b.Dataset,
		"DSTGEN_SCENARIO=" + in.Scenario,
		"DSTGEN_TIER=" + in.Tier,
	}
	// 0 means "not set": the driver keeps its own default rather than
	// being told to run for no time at all.
	if b.Duration > 0 {
		kv = append(kv, fmt.Sprintf("DSTGEN_DURATION_S=%d", b.Duration))
	}
	if in.Seed != 0 {
		kv = append(kv, fmt.Sprintf("DSTGEN_SEED=%d", in.Seed))
	}
	var sut []string
	for _, h := range e.SUTHosts() {
		sut = append(sut, h.Address)
	}
	kv = append(kv, "DSTGEN_SUT_HOSTS="+strings.Join(sut, ","))
	roles := map[string][]string{}
	var order []string
	for _, h := range e.Hosts {
		for _, r := range h.Roles {
			if _, ok := roles[r]; !ok {
				order = append(order, r)
			}
			roles[r] = append(roles[r], h.Address)
		}
	}
	for _, r := range order {
		name := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(r))
		kv = append(kv, "DSTGEN_HOSTS_"+name+"="+strings.Join(roles[r], ","))
	}
	return kv
}
