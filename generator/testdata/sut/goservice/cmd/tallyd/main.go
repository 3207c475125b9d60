// Command tallyd serves a replicated account ledger over HTTP.
package main

import (
	"flag"
	"log"
	"net/http"

	"example.com/tallyd/internal/ledger"
)

func main() {
	config := flag.String("config", "/etc/tallyd/config.yaml", "config file")
	flag.Parse()
	cfg, err := ledger.LoadConfig(*config)
	if err != nil {
		log.Fatalf("load config: %v", err)
	}
	node, err := ledger.Open(cfg)
	if err != nil {
		log.Fatalf("open ledger: %v", err)
	}
	log.Fatal(http.ListenAndServe(cfg.Listen, node.Handler()))
}
