#!/usr/bin/env bash
# bench.sh --duration S --rate N — acquire/release load against the local cluster.
set -euo pipefail
go run ./tests/chaos/loadgen "$@"
