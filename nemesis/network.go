package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/session"
)

// The iptables nemeses. Every rule dstgen adds sits in a chain of the filter
// table whose name starts with Chain: DSTGEN itself for the default hooks
// (jumped from INPUT and OUTPUT), DSTGEN-<HOOKS> for any other hook set
// (hook=FORWARD → DSTGEN-FORWARD, jumped from FORWARD only), so a fault
// asked to sit where local traffic never passes cannot quietly take effect
// through the DSTGEN jump another fault made. Each jump carries the comment
// Tag and each DROP rule the comment "dstgen:<epoch>". The undo script of
// a fault deletes exactly the rules it added, by their spec, and, when that leaves
// the chain empty, the chain and its jumps too, so a healed host shows no
// dstgen rule in `iptables -S`.

// undoKindIptables is the undo kind of every iptables fault.
const undoKindIptables = "iptables"

// hookChains are the filter-table chains a DSTGEN jump may be made from.
var hookChains = []string{"FORWARD", "INPUT", "OUTPUT"}

// partitionNemesis is one iptables row; shape computes its rules.
type partitionNemesis struct {
	info  Info
	shape func(f Fault, ips ipSet) ([]hostRules, error)
}

// hookParam and the other iptables params, as Info.Params lists them.
const hookParam = "hook=INPUT,OUTPUT: the filter chains the dstgen jump is made from for this fault (INPUT, OUTPUT, FORWARD); FORWARD alone puts the rules where local traffic never passes (a deliberately absent landing signal)"

// viaParam routes partition-full and leader-isolation through `dstgen
// proxy` (proxied.go): the targets' proxies are disabled, no root needed.
const viaParam = "via=iptables: iptables | proxy (partition-full, leader-isolation: disable the targets' `dstgen proxy` proxies instead; no root, see proxy_api, proxies)"

// ViaProxy reports whether a fault's params route it through `dstgen
// proxy` rather than iptables, so that the run's pre-flight does not ask
// for root and iptables.
func ViaProxy(params map[string]string) bool { return params["via"] == "proxy" }

func networkNemeses() []Nemesis {
	mk := func(id, summary string, shape func(Fault, ipSet) ([]hostRules, error), extra ...string) Nemesis {
		return partitionNemesis{
			info: Info{
				ID: id, Group: "network", Summary: summary, BuiltIn: true,
				Needs:    []string{"root", "iptables"},
				Params:   append(extra, hookParam, viaParam),
				Injector: "iptables_counter (DROP packets of this epoch's rules, all hosts); target check iptables_rules",
				Victim:   "RPC timeouts / error-rate jump in the history during the window; a leader change",
			},
			shape: shape,
		}
	}
	return []Nemesis{
		mk("partition-full", "full partition between the targets and the rest of the cluster, both ways", shapeFull),
		mk("partition-asym", "one way only: the targets drop what they receive from the rest (direction=in, the default) or what they send it (direction=out)", shapeAsym,
			"direction=in: in (the targets are deaf to the rest) or out (the rest hears nothing from the targets)"),
		mk("partition-minority", "a minority (the targets when they are a proper minority, else chosen by the seed) cut off from the majority, both ways", shapeMinority),
		mk("partition-majority", "the minority/majority split, and the majority also drops what the clients send it", shapeMajority),
		mk("leader-isolation", "the target (the live leader) cut off from its peers, both ways; clients still reach it", shapeLeader),
		mk("partition-bridge", "two halves that both still see one middle node (chosen by the seed)", shapeBridge),
		mk("partition-ring", "each node sees only its two ring neighbours (ring order from the seed), so majorities overlap", shapeRing),
		mk("metadata-outage", "on the targets, traffic to and from addr:port dropped", shapeMetadata,
			"addr=(required): the metadata store's IPv4 address",
			"port=(required): its port",
			"proto=tcp: tcp or udp"),
	}
}

// Info describes the row.
func (p partitionNemesis) Info() Info { return p.info }

// Prime reads the proxies' counters ahead of a partition through the
// proxy; an iptables partition's counters start at 0 with its rules and
// need no reading ahead.
func (p partitionNemesis) Prime(ctx context.Context, x Exec, f Fault) (any, error) {
	if !ViaProxy(f.Params) {
		return nil, nil
	}
	return primeProxied(ctx, x, f)
}

// ipSet maps a host name to its IPv4 address.
type ipSet map[string]string

// dropRule is one DROP rule: in matches packets arriving from addr (the
// INPUT side, -s), !in packets leaving for addr (the OUTPUT side, -d).
type dropRule struct {
	in    bool
	addr  string
	proto string // "" = any protocol; with port: tcp or udp
	port  string
}

// args is the rule's match, without chain, comment and target, ready for
// the shell: the flags are literal, the values quoted.
func (r dropRule) args() string {
	side, portFlag := "-d", "--dport"
	if r.in {
		side, portFlag = "-s", "--sport"
	}
	a := side + " " + shell.Quote(r.addr)
	if r.port != "" {
		a += " -p " + shell.Quote(r.proto) + " " + portFlag + " " + shell.Quote(r.port)
	}
	return a
}

// hostRules is what one host gets.
type hostRules struct {
	host  Host
	rules []dropRule
}

// plan accumulates rules per host in the order hosts were first seen.
type plan struct {
	order []string
	hosts map[string]*hostRules
}

func newPlan() *plan { return &plan{hosts: map[string]*hostRules{}} }

func (p *plan) add(h Host, r dropRule) {
	hr, ok := p.hosts[h.Name]
	if !ok {
		hr = &hostRules{host: h}
		p.hosts[h.Name] = hr
		p.order = append(p.order, h.Name)
	}
	if !slices.Contains(hr.rules, r) {
		hr.rules = append(hr.rules, r)
	}
}

// cut makes a and b unable to reach each other: each side drops what
// arrives from the other and what it would send to it.
func (p *plan) cut(ips ipSet, a, b []Host) {
	for _, x := range a {
		for _, y := range b {
			if x.Name == y.Name {
				continue
			}
			p.add(x, dropRule{in: true, addr: ips[y.Name]})
			p.add(x, dropRule{addr: ips[y.Name]})
			p.add(y, dropRule{in: true, addr: ips[x.Name]})
			p.add(y, dropRule{addr: ips[x.Name]})
		}
	}
}

func (p *plan) list() []hostRules {
	out := make([]hostRules, 0, len(p.order))
	for _, n := range p.order {
		out = append(out, *p.hosts[n])
	}
	return out
}

// splitTargets returns f.Targets as members of f.Cluster and the rest of
// the cluster; a target outside the cluster is an error.
func splitTargets(f Fault) (in, rest []Host, err error) {
	names := map[string]bool{}
	for _, t := range f.Targets {
		if !slices.ContainsFunc(f.Cluster, func(h Host) bool { return h.Name == t.Name }) {
			return nil, nil, fmt.Errorf("target %s is not a host of the cluster", t.Name)
		}
		names[t.Name] = true
	}
	for _, h := range f.Cluster {
		if names[h.Name] {
			in = append(in, h)
		} else {
			rest = append(rest, h)
		}
	}
	return in, rest, nil
}

func shapeFull(f Fault, ips ipSet) ([]hostRules, error) {
	t, rest, err := splitTargets(f)
	if err != nil {
		return nil, err
	}
	if len(t) == 0 || len(rest) == 0 {
		return nil, fmt.Errorf("needs targets that are a non-empty proper subset of the cluster (%d targets, %d cluster hosts)", len(f.Targets), len(f.Cluster))
	}
	p := newPlan()
	p.cut(ips, t, rest)
	return p.list(), nil
}

func shapeLeader(f Fault, ips ipSet) ([]hostRules, error) {
	if len(f.Targets) != 1 {
		return nil, fmt.Errorf("needs exactly one target (the leader), got %d", len(f.Targets))
	}
	return shapeFull(f, ips)
}

func shapeAsym(f Fault, ips ipSet) ([]hostRules, error) {
	t, rest, err := splitTargets(f)
	if err != nil {
		return nil, err
	}
	if len(t) == 0 || len(rest) == 0 {
		return nil, fmt.Errorf("needs targets that are a non-empty proper subset of the cluster (%d targets, %d cluster hosts)", len(f.Targets), len(f.Cluster))
	}
	in := true
	switch d := f.Params["direction"]; d {
	case "", "in":
	case "out":
		in = false
	default:
		return nil, fmt.Errorf("direction %q: want in (the targets drop what they receive) or out (what they send)", d)
	}
	p := newPlan()
	for _, x := range t {
		for _, y := range rest {
			p.add(x, dropRule{in: in, addr: ips[y.Name]})
		}
	}
	return p.list(), nil
}

// permute is the cluster in an order drawn from pick. The generator is
// PCG (its output is specified) and the shuffle is written out here, so
// the same pick gives the same order in every dstgen version.
func permute(hosts []Host, pick int64) []Host {
	out := slices.Clone(hosts)
	r := rand.NewPCG(uint64(pick), 0x64737467656e) // "dstgen"
	for i := len(out) - 1; i > 0; i-- {
		j := int(r.Uint64() % uint64(i+1))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// minoritySplit splits the cluster: the targets when they are a proper
// minority (fewer than half), else the first ⌊(n-1)/2⌋ (at least 1) of
// the pick's order.
func minoritySplit(f Fault) (minority, majority []Host, err error) {
	n := len(f.Cluster)
	if n < 2 {
		return nil, nil, fmt.Errorf("needs a cluster of at least 2 hosts, got %d", n)
	}
	t, rest, err := splitTargets(f)
	if err == nil && len(t) > 0 && 2*len(t) < n {
		return t, rest, nil
	}
	m := max(1, (n-1)/2)
	order := permute(f.Cluster, f.Pick)
	minority = order[:m]
	for _, h := range f.Cluster { // the majority in env.yml order
		if !slices.ContainsFunc(minority, func(x Host) bool { return x.Name == h.Name }) {
			majority = append(majority, h)
		}
	}
	return minority, majority, nil
}

func shapeMinority(f Fault, ips ipSet) ([]hostRules, error) {
	mi, ma, err := minoritySplit(f)
	if err != nil {
		return nil, err
	}
	p := newPlan()
	p.cut(ips, mi, ma)
	return p.list(), nil
}

func shapeMajority(f Fault, ips ipSet) ([]hostRules, error) {
	mi, ma, err := minoritySplit(f)
	if err != nil {
		return nil, err
	}
	p := newPlan()
	p.cut(ips, mi, ma)
	for _, c := range f.Clients {
		if slices.ContainsFunc(f.Cluster, func(h Host) bool { return h.Name == c.Name || ips[h.Name] == ips[c.Name] }) {
			continue // a client on a cluster host is already on one side
		}
		for _, h := range ma {
			p.add(h, dropRule{in: true, addr: ips[c.Name]})
		}
	}
	return p.list(), nil
}

// shapeBridge: the pick's order puts the middle node first; the others
// split into two halves that cannot see each other but both see it.
func shapeBridge(f Fault, ips ipSet) ([]hostRules, error) {
	if len(f.Cluster) < 3 {
		return nil, fmt.Errorf("needs a cluster of at least 3 hosts, got %d", len(f.Cluster))
	}
	order := permute(f.Cluster, f.Pick)
	others := order[1:]
	half := len(others) / 2
	p := newPlan()
	p.cut(ips, others[:half], others[half:])
	return p.list(), nil
}

// shapeRing: each node of the pick's ring order keeps its two neighbours
// and is cut from every other node.
func shapeRing(f Fault, ips ipSet) ([]hostRules, error) {
	n := len(f.Cluster)
	if n < 4 {
		return nil, fmt.Errorf("needs a cluster of at least 4 hosts (with %d every node is a neighbour of every other, so nothing would be cut)", n)
	}
	order := permute(f.Cluster, f.Pick)
	p := newPlan()
	for i := range order {
		for j := i + 1; j < n; j++ {
			if d := j - i; d == 1 || d == n-1 {
				continue
			}
			p.cut(ips, order[i:i+1], order[j:j+1])
		}
	}
	return p.list(), nil
}

// shapeMetadata: on every target, drop what goes to addr:port and what
// comes back from it.
func shapeMetadata(f Fault, _ ipSet) ([]hostRules, error) {
	addr, port, proto := f.Params["addr"], f.Params["port"], f.Params["proto"]
	if addr == "" || port == "" {
		return nil, fmt.Errorf("needs params addr (the metadata store's IPv4 address) and port, got addr=%q port=%q", addr, port)
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return nil, fmt.Errorf("param addr=%q: want an IPv4 address", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("param port=%q: want a port number 1..65535", port)
	}
	if proto == "" {
		proto = "tcp"
	}
	if proto != "tcp" && proto != "udp" {
		return nil, fmt.Errorf("param proto=%q: want tcp or udp", proto)
	}
	if len(f.Targets) == 0 {
		return nil, fmt.Errorf("needs at least one target")
	}
	p := newPlan()
	for _, t := range f.Targets {
		p.add(t, dropRule{addr: a.String(), proto: proto, port: port})
		p.add(t, dropRule{in: true, addr: a.String(), proto: proto, port: port})
	}
	return p.list(), nil
}

// parseHooks reads param hook into the chain the rules go to and the
// chains that jump to it.
func parseHooks(v string) (chain string, hooks []string, err error) {
	if strings.TrimSpace(v) == "" {
		return Chain, []string{"INPUT", "OUTPUT"}, nil
	}
	for _, s := range strings.Split(v, ",") {
		s = strings.ToUpper(strings.TrimSpace(s))
		if !slices.Contains(hookChains, s) {
			return "", nil, fmt.Errorf("param hook=%q: %q is not one of INPUT, OUTPUT, FORWARD", v, s)
		}
		if !slices.Contains(hooks, s) {
			hooks = append(hooks, s)
		}
	}
	slices.Sort(hooks)
	if slices.Equal(hooks, []string{"INPUT", "OUTPUT"}) {
		return Chain, hooks, nil
	}
	return Chain + "-" + strings.Join(hooks, "-"), hooks, nil
}

// resolveIPs gives every host the fault may name an IPv4 address: the
// Address itself when it is one, else what the control node resolves it
// to (the first IPv4 address).
func resolveIPs(ctx context.Context, f Fault) (ipSet, error) {
	ips := ipSet{}
	for _, group := range [][]Host{f.Cluster, f.Targets, f.Clients} {
		for _, h := range group {
			if _, ok := ips[h.Name]; ok {
				continue
			}
			a, err := netip.ParseAddr(h.Address)
			if err == nil {
				if !a.Is4() {
					return nil, fmt.Errorf("host %s: address %s is not IPv4 (ip6tables is not supported)", h.Name, h.Address)
				}
				ips[h.Name] = a.String()
				continue
			}
			addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", h.Address)
			if err != nil || len(addrs) == 0 {
				return nil, fmt.Errorf("host %s: resolve %s to an IPv4 address: %v", h.Name, h.Address, err)
			}
			ips[h.Name] = addrs[0].Unmap().String()
		}
	}
	return ips, nil
}

// comment is the tag of one epoch's rules.
func comment(epoch string) string { return Tag + ":" + epoch }

// iptablesUndo deletes this epoch's rules from chain, each by its full
// spec (not by rule number, which another heal running at the same time
// could shift), then removes the chain and its jumps if nothing is left in
// it. It is idempotent, and every loop is bounded: each pass deletes one
// rule or stops.
func iptablesUndo(chain, epoch string, rules []dropRule) string {
	c := shell.Quote(chain)
	var b strings.Builder
	b.WriteString(sbinPath)
	b.WriteString("command -v iptables >/dev/null 2>&1 || exit 0\n")
	fmt.Fprintf(&b, "iptables -w -S %s >/dev/null 2>&1 || exit 0\n", c)
	for _, r := range rules {
		fmt.Fprintf(&b, "i=0; while [ $i -lt 64 ] && iptables -w -D %s %s -m comment --comment %s -j DROP 2>/dev/null; do i=$((i+1)); done\n",
			c, r.args(), shell.Quote(comment(epoch)))
	}
	fmt.Fprintf(&b, "if [ \"$(iptables -w -S %s | grep '^-A ' | grep -vc %s)\" = 0 ]; then\n", c, shell.Quote(controlComment))
	fmt.Fprintf(&b, "  for h in %s; do i=0; while [ $i -lt 64 ] && iptables -w -D \"$h\" -j %s -m comment --comment %s 2>/dev/null; do i=$((i+1)); done; done\n", strings.Join(hookChains, " "), c, Tag)
	fmt.Fprintf(&b, "  iptables -w -F %s && iptables -w -X %s || exit 1\n", c, c)
	b.WriteString("fi\n")
	return b.String()
}

// controlComment tags the rules that keep dstgen's own SSH line open.
const controlComment = Tag + "-control"

// controlExempt is the shell text that puts, first in chain, two RETURN
// rules for the SSH session this script runs in (its client address and
// sshd's port, from $SSH_CONNECTION): whatever the fault drops, dstgen's
// own line to this host — the control node's, or the jump host's — stays
// up, so the window's heal and `dstgen heal --all` can always reach it
// (docs/nemesis.md §6). Added once; without an IPv4 SSH session (a local
// shell) there is nothing to exempt.
func controlExempt(c string) string {
	return `set -- ${SSH_CONNECTION:-}
case "${1:-}" in *:*|"") ;; *)
	for r in "-s $1 -p tcp --dport $4" "-d $1 -p tcp --sport $4"; do
		iptables -w -C ` + c + ` $r -m comment --comment ` + controlComment + ` -j RETURN 2>/dev/null || iptables -w -I ` + c + ` 1 $r -m comment --comment ` + controlComment + ` -j RETURN
	done;;
esac
`
}

// iptablesApply makes the chain, the jumps to it (once), the control
// node's exemption (once) and the rules.
func iptablesApply(chain string, hooks []string, epoch string, rules []dropRule) string {
	c := shell.Quote(chain)
	var b strings.Builder
	b.WriteString("set -e\n" + sbinPath)
	b.WriteString("command -v iptables >/dev/null 2>&1 || { echo 'iptables not installed' >&2; exit 127; }\n")
	fmt.Fprintf(&b, "iptables -w -S %s >/dev/null 2>&1 || iptables -w -N %s\n", c, c)
	b.WriteString(controlExempt(c))
	for _, h := range hooks {
		fmt.Fprintf(&b, "iptables -w -C %s -j %s -m comment --comment %s 2>/dev/null || iptables -w -I %s 1 -j %s -m comment --comment %s\n",
			h, c, Tag, h, c, Tag)
	}
	for _, r := range rules {
		fmt.Fprintf(&b, "iptables -w -A %s %s -m comment --comment %s -j DROP\n", c, r.args(), shell.Quote(comment(epoch)))
	}
	return b.String()
}

// Inject resolves the shape, arms the undo script on every host it
// touches, then applies the rules; a failure heals what was applied.
func (p partitionNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	id := p.info.ID
	switch v := f.Params["via"]; {
	case v == "proxy" && (id == "partition-full" || id == "leader-isolation"):
		return injectProxied(ctx, x, f)
	case v != "" && v != "iptables":
		return nil, fmt.Errorf("%s %s: via=%q: want iptables, or proxy for partition-full and leader-isolation", id, f.Epoch, v)
	}
	if err := f.checkTag(); err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	chain, hooks, err := parseHooks(f.Params["hook"])
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	ips, err := resolveIPs(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	hrs, err := p.shape(f, ips)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	a := &iptablesActive{x: x, epoch: f.Epoch, tag: f.tag(), lease: leaseOf(f), chain: chain, hooks: hooks, hosts: hrs, last: map[string]int64{}}
	if err := a.each(ctx, func(ctx context.Context, hr hostRules) error {
		return armUndo(ctx, x, hr.host, f.tag(), undoKindIptables, iptablesUndo(chain, f.tag(), hr.rules))
	}); err != nil {
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	if err := a.each(ctx, func(ctx context.Context, hr hostRules) error {
		script := iptablesApply(chain, hooks, f.tag(), hr.rules) + deadmanScript(hr.host, f.tag(), undoKindIptables, leaseOf(f))
		if _, err := x.Run(ctx, hr.host.Host, script); err != nil {
			return fmt.Errorf("%s: add iptables rules: %w", hr.host.Name, err)
		}
		return nil
	}); err != nil {
		if herr := a.Heal(context.WithoutCancel(ctx)); herr != nil {
			return nil, fmt.Errorf("%s %s: %w (and healing what was applied: %v)", id, f.Epoch, err, herr)
		}
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	return a, nil
}

// iptablesActive is an applied partition.
type iptablesActive struct {
	x     Exec
	epoch string
	tag   string // what its rules' comments and undo script carry
	lease int    // seconds each evidence reading renews the dead-man timers for
	chain string
	hooks []string
	hosts []hostRules

	mu   sync.Mutex
	last map[string]int64 // host → the highest packet count read so far
}

// each runs fn for every host, hosts in parallel (each host once), and
// joins the errors in host order.
func (a *iptablesActive) each(ctx context.Context, fn func(context.Context, hostRules) error) error {
	errs := make([]error, len(a.hosts))
	var g errgroup.Group
	for i, hr := range a.hosts {
		g.Go(func() error { errs[i] = fn(ctx, hr); return nil })
	}
	_ = g.Wait()
	var msgs []string
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// chainRule is one rule of `iptables -L -v -x -n` that carries the tag.
type chainRule struct {
	pkts int64
	line string
}

// parseListing returns the rules of an `iptables -L <chain> -v -x -n`
// listing whose comment is exactly tag: the first column is the packet
// count, and the comment is printed as "/* tag */".
func parseListing(out, tag string) []chainRule {
	want := "/* " + tag + " */"
	var rs []chainRule
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, want) {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			continue
		}
		rs = append(rs, chainRule{pkts: n, line: strings.Join(fs, " ")})
	}
	return rs
}

// listScript prints the chain with counters, or nothing when it is gone.
func (a *iptablesActive) listScript() string {
	c := shell.Quote(a.chain)
	return fmt.Sprintf(sbinPath+"iptables -w -S %s >/dev/null 2>&1 || exit 0\niptables -w -L %s -v -x -n\n", c, c)
}

// Evidence sums the packet counters of this epoch's DROP rules over every
// host. A host whose rules are gone (healed) counts with its last reading,
// so evidence read after heal still says what the window did.
func (a *iptablesActive) Evidence(ctx context.Context) (session.Evidence, error) {
	counts := make([]int64, len(a.hosts))
	found := make([]bool, len(a.hosts))
	idx := map[string]int{}
	for i, hr := range a.hosts {
		idx[hr.host.Name] = i
	}
	err := a.each(ctx, func(ctx context.Context, hr hostRules) error {
		out, err := a.x.Run(ctx, hr.host.Host, renewScript(hr.host, a.tag, undoKindIptables, a.lease)+a.listScript())
		if err != nil {
			return fmt.Errorf("%s: read iptables counters: %w", hr.host.Name, err)
		}
		rs := parseListing(out, comment(a.tag))
		i := idx[hr.host.Name]
		for _, r := range rs {
			counts[i] += r.pkts
		}
		found[i] = len(rs) > 0
		return nil
	})
	if err != nil {
		return session.Evidence{}, fmt.Errorf("evidence for %s: %w", a.epoch, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var sum int64
	var raw []string
	for i, hr := range a.hosts {
		n := counts[i]
		note := ""
		if last := a.last[hr.host.Name]; last > n {
			n = last
			if !found[i] {
				note = " (rules gone; last reading)"
			}
		}
		a.last[hr.host.Name] = n
		sum += n
		raw = append(raw, fmt.Sprintf("%s=%d%s", hr.host.Name, n, note))
	}
	ev := session.Evidence{
		Kind:    "iptables_counter",
		Name:    "DROP packets " + comment(a.tag),
		Before:  json.RawMessage("0"),
		After:   json.RawMessage(strconv.FormatInt(sum, 10)),
		Raw:     a.chain + ": " + strings.Join(raw, " "),
		Verdict: session.SignalUnchanged,
	}
	d := float64(sum)
	ev.Delta = &d
	if sum > 0 {
		ev.Verdict = session.SignalChanged
	}
	return ev, nil
}

// checkScript prints, for each hook, "jump <hook> yes|no", then the
// chain's listing.
func (a *iptablesActive) checkScript() string {
	c := shell.Quote(a.chain)
	var b strings.Builder
	b.WriteString(sbinPath)
	for _, h := range a.hooks {
		fmt.Fprintf(&b, "if iptables -w -C %s -j %s -m comment --comment %s 2>/dev/null; then echo 'jump %s yes'; else echo 'jump %s no'; fi\n", h, c, Tag, h, h)
	}
	fmt.Fprintf(&b, "iptables -w -S %s >/dev/null 2>&1 || exit 0\niptables -w -L %s -v -x -n\n", c, c)
	return b.String()
}

// TargetCheck proves the rules sit where the traffic passes: on every
// host, all of this epoch's rules are in the chain and the chain is
// jumped from each hook. Rules hooked from FORWARD only are present but
// on a path the hosts' own traffic never takes, so that is unchanged.
func (a *iptablesActive) TargetCheck(ctx context.Context) (*session.Evidence, error) {
	raws := make([]string, len(a.hosts))
	oks := make([]bool, len(a.hosts))
	want, got := 0, 0
	var mu sync.Mutex
	for _, hr := range a.hosts {
		want += len(hr.rules)
	}
	err := a.each(ctx, func(ctx context.Context, hr hostRules) error {
		out, err := a.x.Run(ctx, hr.host.Host, a.checkScript())
		if err != nil {
			return fmt.Errorf("%s: check iptables rules: %w", hr.host.Name, err)
		}
		var missing []string
		for _, line := range strings.Split(out, "\n") {
			if h, ok := strings.CutPrefix(line, "jump "); ok && strings.HasSuffix(h, " no") {
				missing = append(missing, "no jump from "+strings.TrimSuffix(h, " no"))
			}
		}
		rs := parseListing(out, comment(a.tag))
		if len(rs) < len(hr.rules) {
			missing = append(missing, fmt.Sprintf("%d of %d rules", len(rs), len(hr.rules)))
		}
		var lines []string
		for _, r := range rs {
			lines = append(lines, r.line)
		}
		mu.Lock()
		defer mu.Unlock()
		got += len(rs)
		for i := range a.hosts {
			if a.hosts[i].host.Name == hr.host.Name {
				oks[i] = len(missing) == 0
				status := "ok"
				if len(missing) > 0 {
					status = "MISSING " + strings.Join(missing, ", ")
				}
				raws[i] = fmt.Sprintf("%s %s: %s", hr.host.Name, status, strings.Join(lines, " | "))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("target check for %s: %w", a.epoch, err)
	}
	ev := &session.Evidence{
		Kind: "iptables_rules",
		// Before is the count before the inject (none of this window's
		// rules existed), After the count found; the name says how many
		// were expected, so "0→8" reads as "8 rules appeared".
		Name:    fmt.Sprintf("rules %s in %s (hooked from %s), %d expected", comment(a.tag), a.chain, strings.Join(a.hooks, ", "), want),
		Before:  json.RawMessage("0"),
		After:   json.RawMessage(strconv.Itoa(got)),
		Raw:     strings.Join(raws, "\n"),
		Verdict: session.SignalChanged,
	}
	if !slices.Contains(a.hooks, "INPUT") && !slices.Contains(a.hooks, "OUTPUT") {
		ev.Verdict = session.SignalUnchanged
		ev.Raw = "hooked from " + strings.Join(a.hooks, ",") + " only: the hosts' own traffic never crosses it\n" + ev.Raw
	}
	for _, ok := range oks {
		if !ok {
			ev.Verdict = session.SignalUnchanged
		}
	}
	return ev, nil
}

// Heal runs the undo script on every host the fault touched.
func (a *iptablesActive) Heal(ctx context.Context) error {
	err := a.each(ctx, func(ctx context.Context, hr hostRules) error {
		return runUndo(ctx, a.x, hr.host, a.tag, undoKindIptables)
	})
	if err != nil {
		return fmt.Errorf("heal %s: %w", a.epoch, err)
	}
	return nil
}
