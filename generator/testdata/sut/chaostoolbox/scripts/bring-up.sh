#!/usr/bin/env bash
# bring-up.sh [N|--down] — start or stop a local N-node lockd cluster.
set -euo pipefail
if [ "${1:-}" = "--down" ]; then
  pkill -f 'lockd -listen 127.0.0.1' || true
  exit 0
fi
n=${1:-3}
peers=""
for i in $(seq 1 "$n"); do peers="${peers:+$peers,}127.0.0.1:$((8500 + i))"; done
for i in $(seq 1 "$n"); do
  mkdir -p "/tmp/lockd-$i"
  nohup ./lockd -listen "127.0.0.1:$((8500 + i))" -peers "$peers" -data-dir "/tmp/lockd-$i" >"/tmp/lockd-$i/log" 2>&1 &
done
