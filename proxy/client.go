package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// requestTimeout bounds every API call, whatever the caller's context.
const requestTimeout = 10 * time.Second

// Client talks to the HTTP API of a `dstgen proxy serve` (or of a plain
// Toxiproxy server, which has no counters). Toxiproxy's own client
// package takes no context and has no timeout, hence this one.
type Client struct {
	api  string // host:port, for messages
	base string
	hc   *http.Client
}

// NewClient returns a client of the API at addr (host:port or a URL).
func NewClient(addr string) *Client {
	base := addr
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	return &Client{api: addr, base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: requestTimeout}}
}

// Toxic is one toxic on a proxy, as the API lists it.
type Toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// Proxy is one proxy with its toxics (the counters left out) and its
// traffic counters.
type Proxy struct {
	Name     string  `json:"name"`
	Listen   string  `json:"listen"`
	Upstream string  `json:"upstream"`
	Enabled  bool    `json:"enabled"`
	Toxics   []Toxic `json:"toxics"`
	Stats    Stats   `json:"stats"`
	// Counted is false on a server without the dstgen counters.
	Counted bool `json:"counted"`
}

// HasToxic says whether the proxy carries a toxic named name.
func (p Proxy) HasToxic(name string) bool {
	for _, t := range p.Toxics {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ErrNotFound is returned when the API answers 404 (no such proxy or
// toxic).
var ErrNotFound = errors.New("not found")

// do sends one request and decodes a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("proxy API %s: %w", c.api, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("proxy API %s unreachable: %w", c.api, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("proxy API %s: %s %s: read answer: %w", c.api, method, path, err)
	}
	if resp.StatusCode >= 300 {
		var ae apiError
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &ae) == nil && ae.Message != "" {
			msg = ae.Message
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("proxy API %s: %s %s: %s: %w", c.api, method, path, msg, ErrNotFound)
		}
		return fmt.Errorf("proxy API %s: %s %s: %s (HTTP %d)", c.api, method, path, msg, resp.StatusCode)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("proxy API %s: %s %s: decode answer: %w", c.api, method, path, err)
		}
	}
	return nil
}

// unwrapURL drops the "Get \"http://…\":" prefix net/http adds: the
// caller already names the address.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Proxies lists every proxy of the server, sorted by name, with its
// toxics and counters.
func (c *Client) Proxies(ctx context.Context) ([]Proxy, error) {
	var m map[string]Proxy
	if err := c.do(ctx, http.MethodGet, "/proxies", nil, &m); err != nil {
		return nil, err
	}
	var stats []Stats
	counted := true
	if err := c.do(ctx, http.MethodGet, "/dstgen/stats", nil, &stats); err != nil {
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		counted = false // a plain Toxiproxy
	}
	byName := map[string]Stats{}
	for _, s := range stats {
		byName[s.Proxy] = s
	}
	out := make([]Proxy, 0, len(m))
	for name, p := range m {
		p.Name = name
		p.Toxics = visible(p.Toxics)
		p.Stats, p.Counted = byName[name], counted
		p.Stats.Proxy = name
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Proxy returns one proxy; a name the server does not have is an error
// wrapping ErrNotFound.
func (c *Client) Proxy(ctx context.Context, name string) (Proxy, error) {
	all, err := c.Proxies(ctx)
	if err != nil {
		return Proxy{}, err
	}
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, 0, len(all))
	for _, p := range all {
		names = append(names, p.Name)
	}
	return Proxy{}, fmt.Errorf("proxy API %s: no proxy %q (have: %s): %w", c.api, name, strings.Join(names, ", "), ErrNotFound)
}

func visible(ts []Toxic) []Toxic {
	out := []Toxic{}
	for _, t := range ts {
		if !strings.HasPrefix(t.Name, CounterPrefix) {
			out = append(out, t)
		}
	}
	return out
}

// Create makes a proxy on the server, enabled.
func (c *Client) Create(ctx context.Context, sp Spec) error {
	return c.do(ctx, http.MethodPost, "/proxies", sp, nil)
}

// AddToxic adds t to proxy. Stream defaults to downstream and toxicity
// to 1.
func (c *Client) AddToxic(ctx context.Context, proxy string, t Toxic) (Toxic, error) {
	if t.Stream == "" {
		t.Stream = "downstream"
	}
	if t.Stream != "downstream" && t.Stream != "upstream" {
		return Toxic{}, fmt.Errorf("toxic %s: stream %q: want downstream or upstream", t.Name, t.Stream)
	}
	if t.Toxicity < 0 || t.Toxicity > 1 {
		return Toxic{}, fmt.Errorf("toxic %s: toxicity %v: want 0..1", t.Name, t.Toxicity)
	}
	if strings.HasPrefix(t.Name, CounterPrefix) {
		return Toxic{}, fmt.Errorf("toxic %s: the name prefix %s is the server's own", t.Name, CounterPrefix)
	}
	if t.Attributes == nil {
		t.Attributes = map[string]any{}
	}
	var got Toxic
	if err := c.do(ctx, http.MethodPost, "/proxies/"+url.PathEscape(proxy)+"/toxics", t, &got); err != nil {
		return Toxic{}, err
	}
	return got, nil
}

// RemoveToxic removes toxic name from proxy; a toxic that is not there
// is an error wrapping ErrNotFound.
func (c *Client) RemoveToxic(ctx context.Context, proxy, name string) error {
	return c.do(ctx, http.MethodDelete, "/proxies/"+url.PathEscape(proxy)+"/toxics/"+url.PathEscape(name), nil, nil)
}

// SetEnabled enables or disables proxy. A disabled proxy closes its
// listener and every connection through it: a partition of whatever
// talks through it.
func (c *Client) SetEnabled(ctx context.Context, proxy string, enabled bool) error {
	return c.do(ctx, http.MethodPost, "/proxies/"+url.PathEscape(proxy), map[string]bool{"enabled": enabled}, nil)
}
