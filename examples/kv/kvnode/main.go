// Command kvnode is one replica of the examples/kv store (package
// examples/kv/node): a static leader orders every write and acks it after a
// majority; followers forward client reads and writes to the leader — or,
// with -stale-reads (the bug switch, also KV_STALE_READS=1), answer reads
// from their own possibly stale copy.
//
//	kvnode -id 1 -listen 127.0.0.1:7001 -peers 1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103 -leader 1 [-stale-reads] [-timeout 500ms]
//
//	kvnode -config /etc/kvnode/kvnode.conf   # the same flags, one "name = value" per line
//
//	kvnode -check 127.0.0.1:7001   # health probe: exit 0 when GET /health answers 200
//
// It prints "kvnode id=N listen=ADDR leader=L stale_reads=BOOL" once it
// listens, and exits 0 on SIGTERM or SIGINT. A bad flag or KV_STALE_READS
// value is one line on stderr and exit 2. The HTTP API is in
// examples/kv/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/examples/kv/node"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// usageError is a bad flag or variable: exit 2.
type usageError struct{ error }

// parse reads the flags (and KV_STALE_READS) into a node config and the
// listen address.
func parse(args []string, getenv func(string) string) (node.Config, string, error) {
	fs := flag.NewFlagSet("kvnode", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	id := fs.Int("id", 0, "this node's id, 1..n")
	listen := fs.String("listen", "", "HTTP listen address for clients and peers, host:port")
	peers := fs.String("peers", "", "how this node reaches each node: ID=HOST:PORT,...")
	leader := fs.Int("leader", 1, "the static leader's id")
	stale := fs.Bool("stale-reads", false, "THE BUG: followers answer reads from their own state (also KV_STALE_READS=1)")
	timeout := fs.Duration("timeout", 500*time.Millisecond, "majority-ack and replication timeout")
	config := fs.String("config", "", "a file of flag = value lines (# comments); the command line wins")
	if err := fs.Parse(args); err != nil {
		return node.Config{}, "", usageError{err}
	}
	if fs.NArg() > 0 {
		return node.Config{}, "", usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *config != "" {
		if err := readConfig(fs, *config); err != nil {
			return node.Config{}, "", usageError{err}
		}
	}
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		return node.Config{}, "", usageError{fmt.Errorf("-listen %q: want host:port", *listen)}
	}
	ps, err := node.ParsePeers(*peers)
	if err != nil {
		return node.Config{}, "", usageError{err}
	}
	cfg := node.Config{ID: *id, Leader: *leader, Peers: ps, StaleReads: *stale, Timeout: *timeout}
	if v := getenv("KV_STALE_READS"); v != "" && !flagSet(fs, "stale-reads") {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return node.Config{}, "", usageError{fmt.Errorf("KV_STALE_READS=%q: want 1, 0, true or false", v)}
		}
		cfg.StaleReads = b
	}
	if err := cfg.Validate(); err != nil {
		return node.Config{}, "", usageError{err}
	}
	return cfg, *listen, nil
}

// readConfig sets, from the file at p, every flag the command line did
// not give: one "name = value" per line, blank lines and # comments
// skipped. A line that is not a known flag is an error naming it.
func readConfig(fs *flag.FlagSet, p string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("-config: %w", err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "config" || fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: %q: want name = value with a kvnode flag", p, i+1, line)
		}
		if flagSet(fs, name) {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", p, i+1, name, err)
		}
	}
	return nil
}

// flagSet says whether the command line gave the flag (a flag wins over
// its variable).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// checkTimeout bounds the health probe of -check.
const checkTimeout = 2 * time.Second

// check is `kvnode -check ADDR`: the health probe env.yml's sut.health
// runs, so a host needs no curl. Exit 0 when GET http://ADDR/health
// answers 200, 1 otherwise (one line on stderr).
func check(ctx context.Context, addr string, stderr io.Writer) int {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		fmt.Fprintf(stderr, "kvnode: -check %q: want host:port\n", addr)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		fmt.Fprintln(stderr, "kvnode: -check:", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "kvnode: %s not healthy: %v\n", addr, err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "kvnode: %s not healthy: %s\n", addr, resp.Status)
		return 1
	}
	return 0
}

// run is main without the process: the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 2 && (args[0] == "-check" || args[0] == "--check") {
		return check(ctx, args[1], stderr)
	}
	cfg, listen, err := parse(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "usage: kvnode -id N -listen HOST:PORT -peers ID=HOST:PORT,... [-leader 1] [-stale-reads] [-timeout 500ms]")
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "kvnode:", err)
		return 2
	}
	n, err := node.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "kvnode:", err)
		return 2
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "kvnode: -listen %s: %v\n", listen, err)
		return 2
	}
	fmt.Fprintf(stdout, "kvnode id=%d listen=%s leader=%d stale_reads=%t\n", cfg.ID, ln.Addr(), cfg.Leader, cfg.StaleReads)
	if err := n.Serve(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "kvnode:", err)
		return 1
	}
	return 0
}
