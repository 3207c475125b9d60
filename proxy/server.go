// Package proxy embeds Toxiproxy (github.com/Shopify/toxiproxy/v2) as
// `dstgen proxy`: a userspace TCP proxy placed in a SUT's traffic path so
// that latency, bandwidth caps, per-connection loss and partitions can be
// injected where the kernel has no netem qdisc, without root.
//
// The server is Toxiproxy's own (its proxies, toxics and HTTP API
// handlers); this package builds the router itself so that the server can
// be shut down under a context, and adds what dstgen needs for landing
// evidence: a live traffic counter on every proxy. Toxiproxy's Prometheus
// byte counters (served on /metrics) only move when a connection closes,
// so a long-lived peer connection would show no traffic during a fault
// window; the counter here is a pass-through toxic placed first in each
// direction's chain, which counts every chunk as it passes, and counts a
// connection when its link starts (docs/nemesis.md §7: evidence is a change
// on the object dstgen altered).
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// DefaultAPI is where `dstgen proxy serve` listens for its HTTP API by
// default: loopback only, since the API can cut any proxied traffic.
const DefaultAPI = "127.0.0.1:8474"

// CounterPrefix names the counting toxics the server puts on every proxy.
// They are not faults: the client hides them, and the server refuses to
// remove or change them.
const CounterPrefix = "dstgen-counter"

// counterType is the registered toxic type of the counters.
const counterType = "dstgen_counter"

// The two counters of a proxy, one per direction.
const (
	counterUp   = CounterPrefix + "-upstream"
	counterDown = CounterPrefix + "-downstream"
)

// shutdownWait bounds how long Serve waits for API requests in flight.
const shutdownWait = 5 * time.Second

func init() {
	// Toxiproxy's extension point for new toxics is its registry; the
	// counter must be registered before any proxy is created.
	toxics.Register(counterType, new(countToxic))
}

// countToxic passes every chunk through unchanged and counts its bytes;
// NewState runs once per link (one per connection and direction), so it
// counts connections. toxics.New makes a fresh value per added toxic, so
// each proxy direction has its own counts.
type countToxic struct {
	bytes atomic.Int64
	conns atomic.Int64
}

// NewState is called by Toxiproxy when a link (a connection) starts.
func (t *countToxic) NewState() interface{} {
	t.conns.Add(1)
	return nil
}

// Pipe forwards chunks until the link closes or Toxiproxy interrupts the
// stub to rebuild the chain (a toxic added or removed behind it).
func (t *countToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			t.bytes.Add(int64(len(c.Data)))
			stub.Output <- c
		}
	}
}

// Spec is one proxy to create: traffic to Listen is forwarded to Upstream.
type Spec struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
}

// ParseSpec reads NAME=LISTEN>UPSTREAM (the --proxy flag).
func ParseSpec(s string) (Spec, error) {
	name, rest, ok := strings.Cut(s, "=")
	listen, upstream, ok2 := strings.Cut(rest, ">")
	if !ok || !ok2 || name == "" || listen == "" || upstream == "" {
		return Spec{}, fmt.Errorf("proxy %q: want NAME=LISTEN>UPSTREAM, e.g. peer=127.0.0.1:12380>127.0.0.1:2380", s)
	}
	if strings.HasPrefix(name, CounterPrefix) || strings.ContainsAny(name, "/ \t") {
		return Spec{}, fmt.Errorf("proxy %q: name must not contain '/' or spaces nor start with %s", s, CounterPrefix)
	}
	for _, a := range []string{listen, upstream} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return Spec{}, fmt.Errorf("proxy %q: %q is not HOST:PORT: %w", s, a, err)
		}
	}
	return Spec{Name: name, Listen: listen, Upstream: upstream}, nil
}

// Stats is the traffic one proxy carried since it was created.
type Stats struct {
	Proxy string `json:"proxy"`
	// Connections accepted and linked to the upstream.
	Connections int64 `json:"connections"`
	// BytesUpstream went client → upstream, BytesDownstream upstream →
	// client, counted as they entered the proxy's toxic chain.
	BytesUpstream   int64 `json:"bytes_upstream"`
	BytesDownstream int64 `json:"bytes_downstream"`
}

// Bytes is the traffic in both directions.
func (s Stats) Bytes() int64 { return s.BytesUpstream + s.BytesDownstream }

// Server is an embedded Toxiproxy server with counted proxies.
type Server struct {
	api *toxiproxy.ApiServer
	reg *prometheus.Registry
}

// NewServer makes a server with no proxies. Toxiproxy's own log lines
// (errors only: it logs every connection at lower levels) go to logw.
func NewServer(logw io.Writer) *Server {
	if logw == nil {
		logw = io.Discard
	}
	reg := prometheus.NewRegistry()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(reg), zerolog.New(logw).Level(zerolog.ErrorLevel).With().Timestamp().Logger())
	api.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	reg.MustRegister(api.Metrics.ProxyMetrics.Collectors()...)
	return &Server{api: api, reg: reg}
}

// Add creates a proxy with its counters and starts it listening when
// enabled. A listen address that is taken is an error naming it.
func (s *Server) Add(sp Spec, enabled bool) error {
	p := toxiproxy.NewProxy(s.api, sp.Name, sp.Listen, sp.Upstream)
	// The counters go into the chain before the proxy accepts anything,
	// so every connection is counted from its first byte.
	for _, c := range []struct{ name, stream string }{{counterUp, "upstream"}, {counterDown, "downstream"}} {
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1}`, c.name, counterType, c.stream)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return fmt.Errorf("proxy %s: add traffic counter: %w", sp.Name, err)
		}
	}
	if err := s.api.Collection.Add(p, false); err != nil {
		return fmt.Errorf("proxy %s: %w", sp.Name, err)
	}
	if enabled {
		if err := p.Start(); err != nil {
			_ = s.api.Collection.Remove(sp.Name)
			return fmt.Errorf("proxy %s: listen %s: %w", sp.Name, sp.Listen, err)
		}
	}
	return nil
}

// Listen returns the address a proxy really listens on (Spec.Listen may
// name port 0).
func (s *Server) Listen(name string) (string, error) {
	p, err := s.api.Collection.Get(name)
	if err != nil {
		return "", fmt.Errorf("proxy %s: %w", name, err)
	}
	p.Lock()
	defer p.Unlock()
	return p.Listen, nil
}

// Stats reads the counters of every proxy, sorted by name.
func (s *Server) Stats() []Stats {
	var out []Stats
	for name, p := range s.api.Collection.Proxies() {
		st := Stats{Proxy: name}
		if t, ok := counterOf(p, counterUp); ok {
			st.BytesUpstream = t.bytes.Load()
			st.Connections = t.conns.Load()
		}
		if t, ok := counterOf(p, counterDown); ok {
			st.BytesDownstream = t.bytes.Load()
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Proxy < out[j].Proxy })
	return out
}

func counterOf(p *toxiproxy.Proxy, name string) (*countToxic, bool) {
	w := p.Toxics.GetToxic(name)
	if w == nil {
		return nil, false
	}
	t, ok := w.Toxic.(*countToxic)
	return t, ok
}

// Close stops every proxy and closes their connections.
func (s *Server) Close() {
	for _, p := range s.api.Collection.Proxies() {
		p.Stop()
	}
}

// Handler is the HTTP API: Toxiproxy's own endpoints (the toxiproxy-cli
// and client libraries work against it), plus GET /dstgen/stats and the
// Prometheus /metrics. POST /proxies creates counted proxies; /reset
// removes every toxic but the counters; the counters cannot be changed.
func (s *Server) Handler() http.Handler {
	a := s.api
	r := mux.NewRouter()
	r.HandleFunc("/reset", s.reset).Methods("POST")
	r.HandleFunc("/proxies", a.ProxyIndex).Methods("GET")
	r.HandleFunc("/proxies", s.create).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", a.ProxyShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}", a.ProxyUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", a.ProxyDelete).Methods("DELETE")
	r.HandleFunc("/proxies/{proxy}/toxics", a.ToxicIndex).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics", a.ToxicCreate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", a.ToxicShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", guardCounter(a.ToxicUpdate)).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", guardCounter(a.ToxicDelete)).Methods("DELETE")
	r.HandleFunc("/version", a.Version).Methods("GET")
	r.HandleFunc("/dstgen/stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	}).Methods("GET")
	r.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	return http.TimeoutHandler(r, 25*time.Second, "")
}

// guardCounter refuses to change or remove a traffic counter: the
// evidence of every fault on the proxy would go with it.
func guardCounter(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(mux.Vars(r)["toxic"], CounterPrefix) {
			writeJSON(w, http.StatusForbidden, apiError{Message: "the dstgen traffic counters cannot be changed or removed", Status: http.StatusForbidden})
			return
		}
		next(w, r)
	}
}

// apiError is Toxiproxy's error body.
type apiError struct {
	Message string `json:"error"`
	Status  int    `json:"status"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// create is POST /proxies with counters added (Toxiproxy's own handler
// would make an uncounted proxy).
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	in := struct {
		Spec
		Enabled *bool `json:"enabled"`
	}{}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "bad request body: " + err.Error(), Status: http.StatusBadRequest})
		return
	}
	if _, err := ParseSpec(in.Name + "=" + in.Listen + ">" + in.Upstream); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Message: err.Error(), Status: http.StatusBadRequest})
		return
	}
	if err := s.Add(in.Spec, in.Enabled == nil || *in.Enabled); err != nil {
		code := http.StatusConflict
		var ae *toxiproxy.ApiError
		if errors.As(err, &ae) {
			code = ae.StatusCode
		}
		writeJSON(w, code, apiError{Message: err.Error(), Status: code})
		return
	}
	p, _ := s.api.Collection.Get(in.Name)
	writeJSON(w, http.StatusCreated, p)
}

// reset is Toxiproxy's POST /reset (every proxy enabled, every toxic
// removed) keeping the counters.
func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	for _, p := range s.api.Collection.Proxies() {
		if err := p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			writeJSON(w, http.StatusInternalServerError, apiError{Message: fmt.Sprintf("proxy %s: %v", p.Name, err), Status: http.StatusInternalServerError})
			return
		}
		for _, t := range p.Toxics.GetToxicArray() {
			tw, ok := t.(*toxics.ToxicWrapper)
			if !ok || strings.HasPrefix(tw.Name, CounterPrefix) {
				continue
			}
			if err := p.Toxics.RemoveToxic(r.Context(), tw.Name); err != nil {
				writeJSON(w, http.StatusInternalServerError, apiError{Message: fmt.Sprintf("proxy %s: remove %s: %v", p.Name, tw.Name, err), Status: http.StatusInternalServerError})
				return
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// Serve runs the server: the API on apiAddr, the proxies of specs
// created and listening, until ctx ends; then the API is shut down
// (bounded) and every proxy stopped. ready, when not nil, is called with
// the API's address once everything listens. A taken address (API or
// proxy) is an error naming it, returned before anything is served.
func Serve(ctx context.Context, apiAddr string, specs []Spec, logw io.Writer, ready func(api string, s *Server)) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", apiAddr)
	if err != nil {
		return fmt.Errorf("proxy API: %w", err)
	}
	s := NewServer(logw)
	defer s.Close()
	for _, sp := range specs {
		if err := s.Add(sp, true); err != nil {
			ln.Close()
			return err
		}
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String(), s)
	}
	select {
	case err := <-done:
		return fmt.Errorf("proxy API %s: %w", apiAddr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	return nil
}
