// Command lockd is a lease-based distributed lock server.
package main

import (
	"flag"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("listen", ":8500", "listen address")
	peers := flag.String("peers", "", "comma-separated peer addresses")
	dataDir := flag.String("data-dir", "/var/lib/lockd", "data directory")
	flag.Parse()
	log.Printf("lockd on %s peers=%s data=%s", *addr, *peers, *dataDir)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
