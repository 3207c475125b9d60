package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/dstgen/dstgen/proxy"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

func newProxyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxy serve|list|stats|toxic|disable|enable",
		Short: "An embedded Toxiproxy placed in the SUT's traffic path: latency, bandwidth, loss per connection, partitions, with live traffic counters",
		Long: `dstgen proxy runs an embedded Toxiproxy (github.com/Shopify/toxiproxy/v2)
and talks to its HTTP API. Put it in the SUT's path: start it on a host
with one --proxy per address to intercept, then point the SUT's clients or
peers at the proxy's listen address instead of the real one. Faults are
Toxiproxy toxics added to a proxy (latency, bandwidth, timeout, reset_peer,
slicer, limit_data, slow_close), or a disabled proxy (a partition of what
talks through it). No root needed.

Every proxy carries live traffic counters (bytes each way, connections),
which move while a connection is open: they are the injector-side
evidence that a fault on the proxy touched real traffic.

Exit: 0 ok; 2 bad input, an address in use, or an API that does not answer
(named).`,
	}
	cmd.AddCommand(newProxyServeCmd(), newProxyListCmd(), newProxyStatsCmd(), newProxyToxicCmd(),
		newProxyEnableCmd("disable", false), newProxyEnableCmd("enable", true))
	return cmd
}

func newProxyServeCmd() *cobra.Command {
	var api string
	var specs []string
	cmd := &cobra.Command{
		Use:   "serve [--api ADDR] [--proxy NAME=LISTEN>UPSTREAM ...]",
		Short: "Run the proxy server until SIGTERM/SIGINT (meant to run as a dstgen job)",
		Long: `Run the embedded Toxiproxy with its HTTP API on --api (default
127.0.0.1:8474, loopback only: the API can cut any proxied traffic) and the
named proxies listening. Prints one line per proxy, then serves until
SIGTERM or SIGINT. An address already in use is a one-line error (exit 2).
Run it detached with: dstgen job start --host H --id proxy -- dstgen proxy serve …`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var sp []proxy.Spec
			seen := map[string]bool{}
			for _, s := range specs {
				p, err := proxy.ParseSpec(s)
				if err != nil {
					return err
				}
				if seen[p.Name] {
					return fmt.Errorf("proxy %s: named twice", p.Name)
				}
				seen[p.Name] = true
				sp = append(sp, p)
			}
			w := cmd.OutOrStdout()
			err := proxy.Serve(cmd.Context(), api, sp, cmd.ErrOrStderr(), func(addr string, s *proxy.Server) {
				for _, p := range sp {
					l, _ := s.Listen(p.Name)
					fmt.Fprintln(w, runner.FormatKV([][2]string{{"proxy", p.Name}, {"listen", l}, {"upstream", p.Upstream}}))
				}
				fmt.Fprintln(w, runner.FormatKV([][2]string{{"api", addr}, {"status", "serving"}}))
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(w, runner.FormatKV([][2]string{{"api", api}, {"status", "stopped"}}))
			return nil
		},
	}
	cmd.Flags().StringVar(&api, "api", proxy.DefaultAPI, "address of the HTTP API")
	cmd.Flags().StringArrayVar(&specs, "proxy", nil, "a proxy to create: NAME=LISTEN>UPSTREAM (repeatable)")
	return cmd
}

func apiFlag(cmd *cobra.Command, api *string) {
	cmd.Flags().StringVar(api, "api", proxy.DefaultAPI, "address of the proxy's HTTP API")
}

// proxyLine is one proxy as key=value pairs.
func proxyLine(p proxy.Proxy) string {
	var ts []string
	for _, t := range p.Toxics {
		ts = append(ts, t.Name+":"+t.Type+":"+t.Stream)
	}
	kv := [][2]string{{"proxy", p.Name}, {"enabled", strconv.FormatBool(p.Enabled)}, {"listen", p.Listen}, {"upstream", p.Upstream},
		{"toxics", strings.Join(ts, ",")}}
	return runner.FormatKV(append(kv, statsKV(p)...))
}

func statsKV(p proxy.Proxy) [][2]string {
	if !p.Counted {
		return [][2]string{{"counters", "none (not a dstgen proxy server)"}}
	}
	s := p.Stats
	return [][2]string{{"connections", strconv.FormatInt(s.Connections, 10)}, {"bytes_upstream", strconv.FormatInt(s.BytesUpstream, 10)},
		{"bytes_downstream", strconv.FormatInt(s.BytesDownstream, 10)}, {"bytes", strconv.FormatInt(s.Bytes(), 10)}}
}

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newProxyListCmd() *cobra.Command {
	var api string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--api ADDR] [--json]",
		Short: "List the proxies: enabled, toxics, traffic counters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := proxy.NewClient(api).Proxies(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(cmd.OutOrStdout(), map[string]any{"api": api, "proxies": ps})
			}
			for _, p := range ps {
				fmt.Fprintln(cmd.OutOrStdout(), proxyLine(p))
			}
			return nil
		},
	}
	apiFlag(cmd, &api)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newProxyStatsCmd() *cobra.Command {
	var api string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats NAME [--api ADDR] [--json]",
		Short: "Bytes and connections that went through one proxy since it was created",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := proxy.NewClient(api).Proxy(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(cmd.OutOrStdout(), p.Stats)
			}
			fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV(append([][2]string{{"proxy", p.Name}}, statsKV(p)...)))
			return nil
		},
	}
	apiFlag(cmd, &api)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newProxyToxicCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "toxic add|remove",
		Short: "Add or remove a toxic (a fault) on a proxy",
	}
	cmd.AddCommand(newProxyToxicAddCmd(), newProxyToxicRemoveCmd())
	return cmd
}

// parseAttr reads k=v; a number or true/false is sent as such, since
// Toxiproxy's toxics decode typed attributes.
func parseAttr(s string) (string, any, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", nil, fmt.Errorf("--attr %q: want KEY=VALUE, e.g. latency=200", s)
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return k, n, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return k, f, nil
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return k, b, nil
	}
	return k, v, nil
}

func newProxyToxicAddCmd() *cobra.Command {
	var api, typ, stream, name string
	var attrs []string
	var toxicity float32
	cmd := &cobra.Command{
		Use:   "add NAME --type TYPE --toxic-name TAG [--attr K=V ...] [--stream downstream|upstream] [--toxicity 1.0]",
		Short: "Add a toxic to proxy NAME (types: latency, bandwidth, timeout, reset_peer, slicer, limit_data, slow_close)",
		Long: `Add a toxic to proxy NAME. Attributes are the toxic's own (Toxiproxy's
documentation): latency latency=MS jitter=MS; bandwidth rate=KB/s;
timeout timeout=MS (0 = hold data until removed); reset_peer timeout=MS;
slicer average_size= size_variation= delay=US; limit_data bytes=N;
slow_close delay=MS. --toxicity is the fraction of connections it applies
to. The stream is the direction: downstream (upstream → client, the
default) or upstream (client → upstream).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if typ == "" || name == "" {
				return errors.New("toxic add: --type and --toxic-name are required")
			}
			t := proxy.Toxic{Name: name, Type: typ, Stream: stream, Toxicity: toxicity, Attributes: map[string]any{}}
			for _, a := range attrs {
				k, v, err := parseAttr(a)
				if err != nil {
					return err
				}
				t.Attributes[k] = v
			}
			got, err := proxy.NewClient(api).AddToxic(cmd.Context(), args[0], t)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV([][2]string{{"proxy", args[0]}, {"toxic", got.Name}, {"type", got.Type},
				{"stream", got.Stream}, {"toxicity", strconv.FormatFloat(float64(got.Toxicity), 'g', -1, 32)}, {"added", "yes"}}))
			return nil
		},
	}
	apiFlag(cmd, &api)
	cmd.Flags().StringVar(&typ, "type", "", "toxic type")
	cmd.Flags().StringVar(&name, "toxic-name", "", "the toxic's name (dstgen's faults use dstgen-<epoch>)")
	cmd.Flags().StringArrayVar(&attrs, "attr", nil, "a toxic attribute KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&stream, "stream", "downstream", "downstream or upstream")
	cmd.Flags().Float32Var(&toxicity, "toxicity", 1.0, "fraction of connections the toxic applies to (0..1)")
	return cmd
}

// absent says whether err means there is nothing left to undo: the
// proxy or toxic is not there, or no server listens (its toxics died
// with it).
func absent(err error) bool {
	return errors.Is(err, proxy.ErrNotFound) || errors.Is(err, syscall.ECONNREFUSED)
}

func newProxyToxicRemoveCmd() *cobra.Command {
	var api string
	var missingOK bool
	cmd := &cobra.Command{
		Use:   "remove NAME TAG [--missing-ok]",
		Short: "Remove toxic TAG from proxy NAME",
		Long: `Remove toxic TAG from proxy NAME. With --missing-ok (what undo scripts
use), a toxic, proxy or server that is not there is success: removed=absent.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := proxy.NewClient(api).RemoveToxic(cmd.Context(), args[0], args[1])
			state := "yes"
			if err != nil {
				if !missingOK || !absent(err) {
					return err
				}
				state = "absent"
			}
			fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV([][2]string{{"proxy", args[0]}, {"toxic", args[1]}, {"removed", state}}))
			return nil
		},
	}
	apiFlag(cmd, &api)
	cmd.Flags().BoolVar(&missingOK, "missing-ok", false, "succeed when the toxic, proxy or server is not there")
	return cmd
}

func newProxyEnableCmd(verb string, enabled bool) *cobra.Command {
	var api string
	var missingOK bool
	short := "Disable proxy NAME: close its listener and every connection through it (a partition)"
	if enabled {
		short = "Enable proxy NAME again (heal a partition made by disable)"
	}
	cmd := &cobra.Command{
		Use:   verb + " NAME [--missing-ok]",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := proxy.NewClient(api).SetEnabled(cmd.Context(), args[0], enabled)
			state := strconv.FormatBool(enabled)
			if err != nil {
				if !missingOK || !absent(err) {
					return err
				}
				state = "absent"
			}
			fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV([][2]string{{"proxy", args[0]}, {"enabled", state}}))
			return nil
		},
	}
	apiFlag(cmd, &api)
	cmd.Flags().BoolVar(&missingOK, "missing-ok", false, "succeed when the proxy or server is not there")
	return cmd
}
