package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/session"
)

// The tc netem nemeses. On each target's interface dstgen adds a root prio
// qdisc with handle netemHandle (a qdisc carries no comment, so that handle
// is dstgen's tag on it) whose fourth band holds the netem qdisc, and u32
// filters send only the SUT's traffic there: packets to the other cluster
// hosts and the clients. Everything else — dstgen's own SSH session first
// of all — goes through the first band untouched, so a latency or loss
// fault never slows dstgen's line, and the netem qdisc's counters count
// the SUT's packets only (docs/nemesis.md §6). The undo deletes the root
// qdisc only while it is still dstgen's. Where the kernel has no netem
// ("Specified qdisc kind is unknown") the same fault goes through the
// proxy (injectProxied).

// netemHandle is the handle of every root qdisc dstgen adds; netemChild
// that of the netem qdisc in its band netemBand.
const (
	netemHandle = "d57:"
	netemChild  = "d58:"
	netemBand   = "d57:4"
)

// undoKindNetem is the undo kind of every netem fault.
const undoKindNetem = "netem"

// netemNemesis is one tc netem row.
type netemNemesis struct {
	info Info
	// args builds what follows "netem" from the fault's params.
	args func(f Fault) ([]string, error)
	// dropped: the evidence is the qdisc's dropped count (packet-loss),
	// else its sent packets.
	dropped bool
	// fallback applies the fault where the kernel has no netem:
	// injectProxied, replaced in tests.
	fallback func(ctx context.Context, x Exec, f Fault) (Active, error)
}

const devParam = "dev=(the interface holding the host's address, from `ip -o addr`): the interface the qdisc goes on"

func netemNemeses() []Nemesis {
	mk := func(id, group, summary string, dropped bool, args func(Fault) ([]string, error), params ...string) Nemesis {
		counter := "sent packets"
		if dropped {
			counter = "dropped packets"
		}
		return netemNemesis{
			info: Info{
				ID: id, Group: group, Summary: summary, BuiltIn: true,
				Needs:    []string{"root", "tc-netem"},
				Params:   append(params, devParam),
				Injector: "qdisc_counter (the netem qdisc's " + counter + " since injection, from `tc -s qdisc show`); target check qdisc; through the proxy where the kernel has no netem: the proxy's counters",
				Victim:   "a latency shift / error-rate jump in the history during the window",
			},
			args: args, dropped: dropped, fallback: injectProxied,
		}
	}
	return []Nemesis{
		mk("latency", "network", "added latency on the targets' traffic (tc netem delay)", false, argsDelay("200ms", false),
			"delay=200ms: added delay", "jitter=(none): delay variation"),
		mk("packet-loss", "network", "packet loss on the targets' traffic (tc netem loss)", true, argsOne("loss", "30%", percentRE),
			"loss=30%: share of packets dropped"),
		mk("bandwidth", "network", "bandwidth cap on the targets' traffic (tc netem rate)", false, argsOne("rate", "1mbit", rateRE),
			"rate=1mbit: the cap (tc units: kbit, mbit, gbit, bps, …)"),
		mk("slow-follower", "cluster", "one follower's traffic delayed (tc netem delay on the one target)", false, argsDelay("200ms", true),
			"delay=200ms: added delay", "jitter=(none): delay variation"),
		mk("packet-dup", "network", "packet duplication on the targets' traffic (tc netem duplicate)", false, argsOne("duplicate", "10%", percentRE),
			"duplicate=10%: share of packets sent twice"),
		mk("packet-reorder", "network", "packet reordering on the targets' traffic (tc netem delay + reorder)", false, argsReorder,
			"reorder=25%: share of packets sent at once, ahead of the delayed rest", "delay=50ms: the delay the others get"),
	}
}

var (
	timeRE    = lazyre.New(`^[0-9]+(\.[0-9]+)?(us|ms|s)$`)
	percentRE = lazyre.New(`^[0-9]+(\.[0-9]+)?%$`)
	rateRE    = lazyre.New(`^[0-9]+(\.[0-9]+)?([kmgt]?(bit|bps)|[KMGT]i?(bit|bps))$`)
	devRE     = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,14}$`)
)

// param returns params[name] or def, checked against re.
func param(f Fault, name, def string, re *lazyre.Regexp) (string, error) {
	v, ok := f.Params[name]
	if !ok || v == "" {
		v = def
	}
	if !re.MatchString(v) {
		return "", fmt.Errorf("param %s=%q: want the form %s", name, v, map[*lazyre.Regexp]string{timeRE: "200ms", percentRE: "30%", rateRE: "1mbit"}[re])
	}
	return v, nil
}

func argsDelay(def string, oneTarget bool) func(Fault) ([]string, error) {
	return func(f Fault) ([]string, error) {
		if oneTarget && len(f.Targets) != 1 {
			return nil, fmt.Errorf("needs exactly one target (the follower), got %d", len(f.Targets))
		}
		d, err := param(f, "delay", def, timeRE)
		if err != nil {
			return nil, err
		}
		a := []string{"delay", d}
		if f.Params["jitter"] != "" {
			j, err := param(f, "jitter", "", timeRE)
			if err != nil {
				return nil, err
			}
			a = append(a, j)
		}
		return a, nil
	}
}

func argsOne(name, def string, re *lazyre.Regexp) func(Fault) ([]string, error) {
	return func(f Fault) ([]string, error) {
		v, err := param(f, name, def, re)
		if err != nil {
			return nil, err
		}
		return []string{name, v}, nil
	}
}

// argsReorder: netem reorders only when it delays, so reorder comes with
// a delay.
func argsReorder(f Fault) ([]string, error) {
	d, err := param(f, "delay", "50ms", timeRE)
	if err != nil {
		return nil, err
	}
	r, err := param(f, "reorder", "25%", percentRE)
	if err != nil {
		return nil, err
	}
	return []string{"delay", d, "reorder", r}, nil
}

// Info describes the row.
func (n netemNemesis) Info() Info { return n.info }

// netemAddCmd is the script that adds the qdiscs and filters on dev: the
// prio root, the netem child with args, a filter keeping this SSH session
// (its client address and sshd's port, from $SSH_CONNECTION) in the first
// band, and one filter per SUT peer address into the netem band.
func netemAddCmd(dev string, args, peers []string) string {
	d := shell.Quote(dev)
	var b strings.Builder
	b.WriteString(sbinPath + "set -e\n")
	fmt.Fprintf(&b, "tc qdisc add dev %s root handle %s prio bands 4 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", d, netemHandle)
	fmt.Fprintf(&b, "tc qdisc add dev %s parent %s handle %s netem %s\n", d, netemBand, netemChild, shell.QuoteArgs(args))
	fmt.Fprintf(&b, `set -- ${SSH_CONNECTION:-}
case "${1:-}" in *:*|"") ;; *) tc filter add dev %s parent %s protocol ip prio 1 u32 match ip dst "$1"/32 match ip sport "$4" 0xffff flowid %s1;; esac
`, d, netemHandle, netemHandle)
	for _, p := range peers {
		fmt.Fprintf(&b, "tc filter add dev %s parent %s protocol ip prio 2 u32 match ip dst %s flowid %s\n", d, netemHandle, shell.Quote(p+"/32"), netemBand)
	}
	return b.String()
}

// netemUndo deletes the root qdisc of dev (its netem child and filters go
// with it) while it is dstgen's.
func netemUndo(dev string) string {
	d := shell.Quote(dev)
	return sbinPath + fmt.Sprintf("if tc qdisc show dev %s 2>/dev/null | grep -q '^qdisc [a-z]* %s root'; then tc qdisc del dev %s root; fi\n", d, netemHandle, d)
}

// netemPeers are the addresses whose traffic from target t is the SUT's:
// every other cluster host and every client.
func netemPeers(f Fault, ips ipSet, t Host) []string {
	var out []string
	for _, h := range append(append([]Host(nil), f.Cluster...), f.Clients...) {
		if a := ips[h.Name]; h.Name != t.Name && a != "" && a != ips[t.Name] && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// devScript prints the interface that holds addr.
func devScript(addr string) string {
	return fmt.Sprintf(sbinPath+"ip -o -4 addr show | awk -v a=%s '{split($4, p, \"/\"); if (p[1] == a) {sub(/@.*/, \"\", $2); print $2; exit}}'", shell.Quote(addr))
}

// noNetem says whether a tc error means the kernel (or the host) has no
// netem, the one case the proxy stands in for.
func noNetem(err error) (reason string, ok bool) {
	switch s := err.Error(); {
	case strings.Contains(s, "qdisc kind is unknown"), strings.Contains(s, "Unknown qdisc"):
		return "kernel has no netem qdisc", true
	case strings.Contains(s, "tc: not found"), strings.Contains(s, "tc: command not found"):
		return "tc is not installed", true
	}
	return "", false
}

// netemHost is one target with its qdisc.
type netemHost struct {
	host   Host
	dev    string
	peers  []string // the addresses its filters send into the netem band
	before qdiscStats
}

// Inject adds the qdisc on every target, the undo armed first. If the
// first target's kernel has no netem, the fault goes through the proxy
// instead, and an error from that names both reasons.
func (n netemNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	id := n.info.ID
	if err := f.checkTag(); err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	args, err := n.args(f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	if len(f.Targets) == 0 {
		return nil, fmt.Errorf("%s %s: needs at least one target", id, f.Epoch)
	}
	if d := f.Params["dev"]; d != "" && !devRE.MatchString(d) {
		return nil, fmt.Errorf("%s %s: param dev=%q: not an interface name", id, f.Epoch, d)
	}
	ips, err := resolveIPs(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	a := &netemActive{x: x, epoch: f.Epoch, tag: f.tag(), lease: leaseOf(f), dropped: n.dropped}
	fail := func(err error) (Active, error) {
		if herr := a.Heal(context.WithoutCancel(ctx)); herr != nil {
			return nil, fmt.Errorf("%s %s: %w (and healing what was applied: %v)", id, f.Epoch, err, herr)
		}
		return nil, fmt.Errorf("%s %s: %w", id, f.Epoch, err)
	}
	for i, t := range f.Targets {
		dev, err := n.device(ctx, x, f, t)
		if err != nil {
			return fail(err)
		}
		if err := armUndo(ctx, x, t, f.tag(), undoKindNetem, netemUndo(dev)); err != nil {
			return fail(err)
		}
		peers := netemPeers(f, ips, t)
		if len(peers) == 0 {
			return fail(fmt.Errorf("%s: no other cluster host or client: nothing of the SUT's traffic to shape", t.Name))
		}
		a.hosts = append(a.hosts, netemHost{host: t, dev: dev, peers: peers})
		out, err := x.Run(ctx, t.Host, netemAddCmd(dev, args, peers)+"tc -s qdisc show dev "+shell.Quote(dev)+"\n"+deadmanScript(t, f.tag(), undoKindNetem, leaseOf(f)))
		if err != nil {
			if reason, ok := noNetem(err); ok && i == 0 {
				if herr := a.Heal(context.WithoutCancel(ctx)); herr != nil {
					return nil, fmt.Errorf("%s %s: tc netem: %s; removing its undo script: %v", id, f.Epoch, reason, herr)
				}
				pa, perr := n.fallback(ctx, x, f)
				if perr != nil {
					return nil, fmt.Errorf("%s %s: tc netem: %s; proxy: %w", id, f.Epoch, reason, perr)
				}
				return pa, nil
			}
			return fail(fmt.Errorf("%s: tc qdisc add on %s: %w", t.Name, dev, err))
		}
		a.hosts[i].before, _ = parseQdiscStats(out)
	}
	return a, nil
}

// device is param dev, or the interface holding the target's address.
func (n netemNemesis) device(ctx context.Context, x Exec, f Fault, t Host) (string, error) {
	if d := f.Params["dev"]; d != "" {
		return d, nil
	}
	ips, err := resolveIPs(ctx, Fault{Targets: []Host{t}})
	if err != nil {
		return "", err
	}
	out, err := x.Run(ctx, t.Host, devScript(ips[t.Name]))
	if err != nil {
		return "", fmt.Errorf("%s: find the interface of %s: %w", t.Name, ips[t.Name], err)
	}
	dev := strings.TrimSpace(out)
	if !devRE.MatchString(dev) {
		return "", fmt.Errorf("%s: no interface holds %s (`ip -o addr`); set param dev", t.Name, ips[t.Name])
	}
	return dev, nil
}

// qdiscStats are the counters of dstgen's netem qdisc.
type qdiscStats struct {
	found   bool
	sent    int64 // packets
	dropped int64
}

var sentRE = lazyre.New(`Sent [0-9]+ bytes ([0-9]+) pkt \(dropped ([0-9]+)`)

// parseQdiscStats reads `tc -s qdisc show dev D`: the block of dstgen's
// netem child qdisc, whose next "Sent … pkt (dropped …" line holds its
// counters — packets of the SUT's traffic only, since only the filters
// to its peers lead there.
func parseQdiscStats(out string) (qdiscStats, error) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "qdisc netem "+netemChild+" ") {
			continue
		}
		for _, m := range lines[i+1:] {
			if strings.HasPrefix(m, "qdisc ") {
				break
			}
			if g := sentRE.FindStringSubmatch(m); g != nil {
				s, _ := strconv.ParseInt(g[1], 10, 64)
				d, _ := strconv.ParseInt(g[2], 10, 64)
				return qdiscStats{found: true, sent: s, dropped: d}, nil
			}
		}
		return qdiscStats{found: true}, fmt.Errorf("netem qdisc %s without a Sent line", netemChild)
	}
	return qdiscStats{}, nil
}

// netemActive is an applied netem fault.
type netemActive struct {
	x       Exec
	epoch   string
	tag     string // what its undo script carries: <session>.<epoch>
	lease   int    // seconds each evidence reading renews the dead-man timers for
	dropped bool
	hosts   []netemHost
}

// Evidence is the qdisc counter's change since injection, summed over the
// targets.
func (a *netemActive) Evidence(ctx context.Context) (session.Evidence, error) {
	var before, after int64
	var raw []string
	for _, h := range a.hosts {
		out, err := a.x.Run(ctx, h.host.Host, renewScript(h.host, a.tag, undoKindNetem, a.lease)+sbinPath+"tc -s qdisc show dev "+shell.Quote(h.dev))
		if err != nil {
			return session.Evidence{}, fmt.Errorf("evidence for %s: %s: tc -s qdisc show: %w", a.epoch, h.host.Name, err)
		}
		st, _ := parseQdiscStats(out)
		b, n := h.before.sent, st.sent
		if a.dropped {
			b, n = h.before.dropped, st.dropped
		}
		if !st.found {
			n = b
		}
		before += b
		after += n
		raw = append(raw, fmt.Sprintf("%s %s: %d→%d%s", h.host.Name, h.dev, b, n, map[bool]string{false: " (qdisc gone)", true: ""}[st.found]))
	}
	name := "netem " + netemChild + " sent packets (the SUT's traffic to its peers)"
	if a.dropped {
		name = "netem " + netemChild + " dropped packets (the SUT's traffic to its peers)"
	}
	d := float64(after - before)
	ev := session.Evidence{
		Kind: "qdisc_counter", Name: name,
		Before: json.RawMessage(strconv.FormatInt(before, 10)), After: json.RawMessage(strconv.FormatInt(after, 10)),
		Delta: &d, Raw: strings.Join(raw, " "), Verdict: session.SignalUnchanged,
	}
	if d > 0 {
		ev.Verdict = session.SignalChanged
	}
	return ev, nil
}

// TargetCheck proves dstgen's qdiscs sit on each target's interface — the
// prio root and the netem child in its band — and that a filter leads
// each of the SUT's peer addresses there.
func (a *netemActive) TargetCheck(ctx context.Context) (*session.Evidence, error) {
	ev := &session.Evidence{Kind: "qdisc", Name: "netem " + netemChild + " under prio " + netemHandle + " root, SUT peers filtered into it", Verdict: session.SignalChanged}
	var raw []string
	for _, h := range a.hosts {
		d := shell.Quote(h.dev)
		out, err := a.x.Run(ctx, h.host.Host, sbinPath+"tc qdisc show dev "+d+"\necho ---\ntc filter show dev "+d+" parent "+netemHandle)
		if err != nil {
			return nil, fmt.Errorf("target check for %s: %s: %w", a.epoch, h.host.Name, err)
		}
		qd, filters, _ := strings.Cut(out, "---")
		root := strings.Contains(qd, "qdisc prio "+netemHandle+" root")
		child := strings.Contains(qd, "qdisc netem "+netemChild+" parent "+netemBand)
		n := strings.Count(filters, "flowid "+netemBand)
		line := fmt.Sprintf("%s %s: prio root %v, netem child %v, %d of %d peer filters", h.host.Name, h.dev, root, child, n, len(h.peers))
		if !root || !child || n < len(h.peers) {
			ev.Verdict = session.SignalUnchanged
			line += " MISSING"
		}
		raw = append(raw, line)
	}
	ev.Raw = strings.Join(raw, "\n")
	return ev, nil
}

// Heal runs the undo script on every target that got one.
func (a *netemActive) Heal(ctx context.Context) error {
	var errs []string
	for _, h := range a.hosts {
		if err := runUndo(ctx, a.x, h.host, a.tag, undoKindNetem); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal %s: %s", a.epoch, strings.Join(errs, "; "))
	}
	return nil
}
