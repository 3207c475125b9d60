package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/proxy"
	"github.com/dstgen/dstgen/session"
)

// The network faults through `dstgen proxy` (an embedded Toxiproxy in the
// SUT's traffic path), for kernels without netem and for partition-full
// with params via=proxy. Each target host runs its own proxy server; the
// fault is a toxic named dstgen-<epoch> on that server's proxies (or the
// proxies disabled, for a partition), and the evidence is the proxies'
// own traffic counters over the window.

// undoKindProxy is the undo kind of every proxy fault.
const undoKindProxy = "proxy"

// ProxyEvidenceKind is the evidence kind of the proxy faults: bytes that
// went through the faulted proxies during the window.
const ProxyEvidenceKind = "proxy_counter"

// proxyToxic is one toxic a fault adds to each of its proxies.
type proxyToxic struct {
	suffix string // appended to the tag: "" or "-up"
	proxy.Toxic
}

// proxyPlan is what a fault does on every proxy: add toxics, or disable.
type proxyPlan struct {
	toxics  []proxyToxic
	disable bool
	note    string // said in Raw (e.g. the loss approximation)
}

// proxyTag names the toxics of one fault.
func proxyTag(epoch string) string { return Tag + "-" + epoch }

// proxyNameRE is what a proxy name in params proxies may be.
var proxyNameRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// planProxied maps a nemesis and its params onto toxics.
func planProxied(f Fault) (proxyPlan, error) {
	ms := func(name, def string) (int64, error) {
		v := f.Params[name]
		if v == "" {
			v = def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("param %s=%q: want a duration like 200ms", name, v)
		}
		return d.Milliseconds(), nil
	}
	streams := func(t proxy.Toxic) ([]proxyToxic, error) {
		switch s := f.Params["stream"]; s {
		case "", "downstream", "upstream":
			if s == "" {
				s = "downstream"
			}
			t.Stream = s
			return []proxyToxic{{Toxic: t}}, nil
		case "both":
			up := t
			up.Stream, t.Stream = "upstream", "downstream"
			up.Attributes = map[string]any{}
			for k, v := range t.Attributes {
				up.Attributes[k] = v
			}
			return []proxyToxic{{Toxic: t}, {suffix: "-up", Toxic: up}}, nil
		default:
			return nil, fmt.Errorf("param stream=%q: want downstream, upstream or both", s)
		}
	}
	switch f.Nemesis {
	case "latency", "slow-follower":
		if f.Nemesis == "slow-follower" && len(f.Targets) != 1 {
			return proxyPlan{}, fmt.Errorf("needs exactly one target (the follower), got %d", len(f.Targets))
		}
		d, err := ms("delay", "200ms")
		if err != nil {
			return proxyPlan{}, err
		}
		j, err := ms("jitter", "0ms")
		if err != nil {
			return proxyPlan{}, err
		}
		ts, err := streams(proxy.Toxic{Type: "latency", Toxicity: 1, Attributes: map[string]any{"latency": d, "jitter": j}})
		return proxyPlan{toxics: ts}, err
	case "bandwidth":
		v := f.Params["rate"]
		if v == "" {
			v = "1mbit"
		}
		kb, err := rateKBps(v)
		if err != nil {
			return proxyPlan{}, fmt.Errorf("param rate=%q: %w", v, err)
		}
		ts, err := streams(proxy.Toxic{Type: "bandwidth", Toxicity: 1, Attributes: map[string]any{"rate": kb}})
		return proxyPlan{toxics: ts, note: fmt.Sprintf("bandwidth %s = %d KB/s per connection", v, kb)}, err
	case "packet-loss":
		v := f.Params["loss"]
		if v == "" {
			v = "30%"
		}
		frac, err := lossFraction(v)
		if err != nil {
			return proxyPlan{}, fmt.Errorf("param loss=%q: %w", v, err)
		}
		typ := f.Params["loss_toxic"]
		if typ == "" {
			typ = "reset_peer"
		}
		if typ != "reset_peer" && typ != "timeout" {
			return proxyPlan{}, fmt.Errorf("param loss_toxic=%q: want reset_peer or timeout", typ)
		}
		ts, err := streams(proxy.Toxic{Type: typ, Toxicity: float32(frac), Attributes: map[string]any{"timeout": int64(0)}})
		return proxyPlan{toxics: ts, note: fmt.Sprintf("approximates loss per connection, not per packet: %s on %s of the connections (a TCP proxy cannot drop single packets)", typ, v)}, err
	case "partition-full", "leader-isolation":
		return proxyPlan{disable: true, note: "proxies disabled: their listeners and connections closed"}, nil
	case "packet-dup", "packet-reorder":
		return proxyPlan{}, fmt.Errorf("not possible through a TCP proxy: it sees a byte stream, not packets; %s needs tc netem on the host", f.Nemesis)
	}
	return proxyPlan{}, fmt.Errorf("no proxy form (the proxy does latency, slow-follower, bandwidth, packet-loss and partition-full)")
}

// rateRE is a tc-style rate: a number and kbit|mbit|gbit|bit|bps|kbps|mbps
// (bit units are bits per second, bps units bytes per second).
var proxyRateRE = lazyre.New(`^([0-9]+(?:\.[0-9]+)?)([kmg]?)(bit|bps)$`)

// rateKBps converts a tc-style rate to Toxiproxy's bandwidth unit, KB/s
// (at least 1: 0 would stop the traffic, which is a partition, not a cap).
func rateKBps(v string) (int64, error) {
	m := proxyRateRE.FindStringSubmatch(strings.ToLower(v))
	if m == nil {
		return 0, errors.New("want a rate like 1mbit, 500kbit or 100kbps")
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m[2]]
	bytesPerS := n * mult
	if m[3] == "bit" {
		bytesPerS /= 8
	}
	kb := int64(math.Round(bytesPerS / 1000))
	if kb < 1 {
		kb = 1
	}
	return kb, nil
}

// lossFraction reads "30%" or "0.3" as a fraction in (0, 1].
func lossFraction(v string) (float64, error) {
	s, pct := strings.CutSuffix(v, "%")
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("want a share like 30%")
	}
	if pct {
		n /= 100
	}
	if n <= 0 || n > 1 {
		return 0, errors.New("want a share in (0%, 100%]")
	}
	return n, nil
}

// proxyHost is one target host's faulted proxies.
type proxyHost struct {
	host    Host
	bin     string
	api     string
	proxies []string
	before  map[string]proxy.Stats
	// cut is each proxy's counters right after it was disabled (a
	// partition): bytes between the first reading and the disable are
	// traffic from before the fault, not through it.
	cut map[string]proxy.Stats
	// primed is each proxy's counters read ahead of the window (Prime):
	// what moved between then and the disable is the SUT's traffic just
	// before the fault.
	primed map[string]proxy.Stats
}

// cli is the command line of one `dstgen proxy` call on the host.
func (h proxyHost) cli(args ...string) string {
	q := []string{shell.Quote(h.bin), "proxy"}
	for _, a := range args {
		q = append(q, shell.Quote(a))
	}
	return strings.Join(append(q, "--api", shell.Quote(h.api)), " ")
}

// list reads the host's proxies.
func (h proxyHost) list(ctx context.Context, x Exec) (map[string]proxy.Proxy, error) {
	out, err := x.Run(ctx, h.host.Host, h.cli("list", "--json"))
	if err != nil {
		return nil, fmt.Errorf("%s: dstgen proxy list: %w", h.host.Name, err)
	}
	var doc struct {
		Proxies []proxy.Proxy `json:"proxies"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("%s: dstgen proxy list --json: %w", h.host.Name, err)
	}
	m := map[string]proxy.Proxy{}
	for _, p := range doc.Proxies {
		m[p.Name] = p
	}
	return m, nil
}

// undoScript removes the fault's toxics (or re-enables the proxies); each
// call succeeds when there is nothing left to undo.
func (h proxyHost) undoScript(epoch string, plan proxyPlan) string {
	var b strings.Builder
	b.WriteString("rc=0\n")
	for _, p := range h.proxies {
		if plan.disable {
			fmt.Fprintf(&b, "%s >/dev/null || rc=1\n", h.cli("enable", p, "--missing-ok"))
			continue
		}
		for _, t := range plan.toxics {
			fmt.Fprintf(&b, "%s >/dev/null || rc=1\n", h.cli("toxic", "remove", p, proxyTag(epoch)+t.suffix, "--missing-ok"))
		}
	}
	b.WriteString("exit $rc")
	return b.String()
}

// injectProxied applies a network fault through the `dstgen proxy` on
// each target host: the binary at params proxy_bin (default
// <workdir>/bin/dstgen), the API at params proxy_api (default
// 127.0.0.1:8474), the proxies of params proxies (default every proxy of
// that API). The undo script is on each host before its proxies change;
// a failure part way heals what was applied.
func injectProxied(ctx context.Context, x Exec, f Fault) (Active, error) {
	if err := f.checkTag(); err != nil {
		return nil, fmt.Errorf("%s via proxy: %w", f.Nemesis, err)
	}
	fail := func(err error) (Active, error) {
		return nil, fmt.Errorf("%s %s via proxy: %w", f.Nemesis, f.Epoch, err)
	}
	plan, err := planProxied(f)
	if err != nil {
		return fail(err)
	}
	if len(f.Targets) == 0 {
		return fail(errors.New("no target host"))
	}
	var want []string
	if s := f.Params["proxies"]; s != "" {
		for _, n := range strings.Split(s, ",") {
			n = strings.TrimSpace(n)
			if !proxyNameRE.MatchString(n) {
				return fail(fmt.Errorf("param proxies: %q is not a proxy name", n))
			}
			want = append(want, n)
		}
	}
	a := &proxyActive{x: x, epoch: f.Epoch, tag: f.tag(), plan: plan}
	primed, _ := f.Primed.(proxyPrime)
	for _, t := range f.Targets {
		h := newProxyHost(t, f)
		h.primed = primed.stats[t.Name]
		ps, err := h.list(ctx, x)
		if err != nil {
			return a.failHealed(ctx, fail, err)
		}
		h.proxies = want
		if len(want) == 0 {
			for n := range ps {
				h.proxies = append(h.proxies, n)
			}
			sort.Strings(h.proxies)
		}
		if len(h.proxies) == 0 {
			return a.failHealed(ctx, fail, fmt.Errorf("%s: the proxy server at %s has no proxy: nothing of the SUT's traffic goes through it", t.Name, h.api))
		}
		for _, n := range h.proxies {
			p, ok := ps[n]
			if !ok {
				return a.failHealed(ctx, fail, fmt.Errorf("%s: the proxy server at %s has no proxy %q", t.Name, h.api, n))
			}
			h.before[n] = p.Stats
		}
		if err := armUndo(ctx, x, t, f.tag(), undoKindProxy, h.undoScript(f.tag(), plan)); err != nil {
			return a.failHealed(ctx, fail, err)
		}
		a.hosts = append(a.hosts, h)
		for _, n := range h.proxies {
			var cmd string
			if plan.disable {
				cmd = h.cli("disable", n)
			} else {
				for _, tx := range plan.toxics {
					attrs := make([]string, 0, len(tx.Attributes))
					for k, v := range tx.Attributes {
						attrs = append(attrs, "--attr", fmt.Sprintf("%s=%v", k, v))
					}
					args := append([]string{"toxic", "add", n, "--type", tx.Type, "--toxic-name", proxyTag(f.tag()) + tx.suffix,
						"--stream", tx.Stream, "--toxicity", strconv.FormatFloat(float64(tx.Toxicity), 'g', -1, 32)}, attrs...)
					if cmd != "" {
						cmd += " && "
					}
					cmd += h.cli(args...)
				}
			}
			if _, err := x.Run(ctx, t.Host, cmd); err != nil {
				return a.failHealed(ctx, fail, fmt.Errorf("%s: proxy %s: %w", t.Name, n, err))
			}
		}
		if plan.disable {
			ps, err := h.list(ctx, x)
			if err != nil {
				return a.failHealed(ctx, fail, err)
			}
			for _, n := range h.proxies {
				h.cut[n] = ps[n].Stats
			}
		}
	}
	return a, nil
}

// proxyActive is an applied proxy fault.
type proxyActive struct {
	x     Exec
	epoch string
	tag   string // its toxics' names and undo scripts: <session>.<epoch>
	plan  proxyPlan
	hosts []proxyHost
}

// proxyPrime is the targets' proxy counters read ahead of the window.
type proxyPrime struct {
	stats map[string]map[string]proxy.Stats // host → proxy → counters
}

// newProxyHost is target t's proxy server as f's params name it.
func newProxyHost(t Host, f Fault) proxyHost {
	h := proxyHost{host: t, bin: f.Params["proxy_bin"], api: f.Params["proxy_api"], before: map[string]proxy.Stats{}, cut: map[string]proxy.Stats{}}
	if h.bin == "" {
		h.bin = path.Join(t.Workdir, "bin", "dstgen")
	}
	if h.api == "" {
		h.api = proxy.DefaultAPI
	}
	return h
}

// primeProxied reads the counters of every target's proxies ahead of the
// window: a partition through the proxy is proven only if the SUT moved
// bytes through them in the second before the cut, not since the proxy
// started.
func primeProxied(ctx context.Context, x Exec, f Fault) (any, error) {
	pr := proxyPrime{stats: map[string]map[string]proxy.Stats{}}
	for _, t := range f.Targets {
		h := newProxyHost(t, f)
		ps, err := h.list(ctx, x)
		if err != nil {
			return nil, err
		}
		m := map[string]proxy.Stats{}
		for n, p := range ps {
			m[n] = p.Stats
		}
		pr.stats[t.Name] = m
	}
	return pr, nil
}

// failHealed heals what was applied so far and reports err.
func (a *proxyActive) failHealed(ctx context.Context, fail func(error) (Active, error), err error) (Active, error) {
	if herr := a.Heal(context.WithoutCancel(ctx)); herr != nil {
		return fail(fmt.Errorf("%w (and healing what was applied: %v)", err, herr))
	}
	return fail(err)
}

// Evidence is the bytes through the faulted proxies since injection, from
// the proxies' own counters. Changed needs traffic AND the fault still on
// every proxy (toxic listed / proxy disabled); for a partition, changed
// means the proxy carried traffic before and none since.
func (a *proxyActive) Evidence(ctx context.Context) (session.Evidence, error) {
	var before, after, cut, first, primed int64
	var raw []string
	missing, unprimed := false, false
	for _, h := range a.hosts {
		ps, err := h.list(ctx, a.x)
		if err != nil {
			return session.Evidence{}, fmt.Errorf("evidence for %s: %w", a.epoch, err)
		}
		for _, n := range h.proxies {
			b := h.before[n]
			p, ok := ps[n]
			if !ok {
				missing = true
				raw = append(raw, fmt.Sprintf("%s/%s: proxy gone", h.host.Name, n))
				continue
			}
			on := a.faultOn(p)
			if !on {
				missing = true
			}
			before += b.Bytes()
			if pb, ok := h.primed[n]; ok {
				first += b.Bytes() - pb.Bytes()
				primed += pb.Bytes()
			} else {
				first += b.Bytes()
				unprimed = true
			}
			after += p.Stats.Bytes()
			c, ok := h.cut[n]
			if !ok {
				c = b
			}
			cut += c.Bytes()
			atCut := ""
			if ok {
				atCut = fmt.Sprintf(" (%d when disabled)", c.Bytes())
			}
			raw = append(raw, fmt.Sprintf("%s/%s: bytes %d→%d%s connections %d→%d fault=%s", h.host.Name, n, b.Bytes(), p.Stats.Bytes(), atCut, b.Connections, p.Stats.Connections,
				map[bool]string{true: "on", false: "gone"}[on]))
		}
	}
	if a.plan.disable {
		// A partition is judged from the moment the proxies were
		// disabled: what passed before that was not through the fault.
		before = cut
		if unprimed {
			raw = append(raw, "no reading ahead of the window: traffic before the cut counted since the proxy started")
		} else {
			raw = append(raw, fmt.Sprintf("%d bytes in the second before the cut", first))
		}
	}
	d := float64(after - before)
	if a.plan.note != "" {
		raw = append(raw, a.plan.note)
	}
	name := "bytes through " + proxyTag(a.epoch) + "'s proxies"
	if a.plan.disable {
		// Equal numbers are the landing here; the name says so, so that a
		// reader of "783687→783687" does not take it for no effect.
		name = "bytes through " + proxyTag(a.epoch) + "'s disabled proxies (no byte since the disable = the cut held)"
	}
	ev := session.Evidence{
		Kind: ProxyEvidenceKind, Name: name,
		Before: json.RawMessage(strconv.FormatInt(before, 10)), After: json.RawMessage(strconv.FormatInt(after, 10)),
		Delta: &d, Raw: strings.Join(raw, "; "),
	}
	switch {
	case missing:
		ev.Verdict = session.SignalAbsent
	case a.plan.disable && first == 0:
		ev.Verdict = session.SignalUnchanged // carried no traffic just before the cut: the SUT is not behind it
	case a.plan.disable && d == 0:
		ev.Verdict = session.SignalChanged // traffic stopped
	case a.plan.disable:
		ev.Verdict = session.SignalAmbiguous // bytes moved through a disabled proxy
	case d > 0:
		ev.Verdict = session.SignalChanged
	default:
		ev.Verdict = session.SignalUnchanged
	}
	return ev, nil
}

// faultOn says whether p still carries this fault.
func (a *proxyActive) faultOn(p proxy.Proxy) bool {
	if a.plan.disable {
		return !p.Enabled
	}
	for _, t := range a.plan.toxics {
		if !p.HasToxic(proxyTag(a.tag) + t.suffix) {
			return false
		}
	}
	return true
}

// TargetCheck proves the fault sits on the proxies it was meant for: the
// toxic is listed on each (or each is disabled).
func (a *proxyActive) TargetCheck(ctx context.Context) (*session.Evidence, error) {
	kind, name := "proxy_toxic", proxyTag(a.tag)
	if a.plan.disable {
		kind, name = "proxy_disabled", "enabled=false"
	}
	ev := &session.Evidence{Kind: kind, Name: name, Verdict: session.SignalChanged}
	var raw []string
	for _, h := range a.hosts {
		ps, err := h.list(ctx, a.x)
		if err != nil {
			return nil, fmt.Errorf("target check for %s: %w", a.epoch, err)
		}
		for _, n := range h.proxies {
			p, ok := ps[n]
			on := ok && a.faultOn(p)
			if !on {
				ev.Verdict = session.SignalAbsent
			}
			raw = append(raw, fmt.Sprintf("%s/%s (%s>%s): %s", h.host.Name, n, p.Listen, p.Upstream, map[bool]string{true: "on", false: "absent"}[on]))
		}
	}
	ev.Raw = strings.Join(raw, "; ")
	return ev, nil
}

// Heal runs each host's undo script; it is idempotent.
func (a *proxyActive) Heal(ctx context.Context) error {
	var errs []string
	for _, h := range a.hosts {
		if err := runUndo(ctx, a.x, h.host, a.tag, undoKindProxy); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
