#!/usr/bin/env bash
# slow-link.sh DEV DELAY — add latency on one interface (needs the netem qdisc).
set -euo pipefail
tc qdisc replace dev "${1:?dev}" root netem delay "${2:-100ms}"
