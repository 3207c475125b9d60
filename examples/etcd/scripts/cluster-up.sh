#!/usr/bin/env bash
# cluster-up.sh [--down] — start (or stop) a local 3-member etcd cluster on
# 127.0.0.1 for development and smoke runs. Members listen on
# CLIENT_PORTS / PEER_PORTS and keep their data, logs and pid files under
# DATA_ROOT/<name>. Real tests run one member per host (see README.md).
set -euo pipefail

ETCD=${ETCD:-/usr/bin/etcd}
ETCDCTL=${ETCDCTL:-/usr/bin/etcdctl}
DATA_ROOT=${DATA_ROOT:-/tmp/dstgen-etcd}
read -r -a CLIENT_PORTS <<<"${CLIENT_PORTS:-2379 22379 32379}"
read -r -a PEER_PORTS <<<"${PEER_PORTS:-2380 22380 32380}"
NAMES=(m1 m2 m3)

stop_all() {
  local name pidfile pid i
  # One member at a time: stopping all at once loses quorum mid-shutdown and
  # members then hang in leader transfer until they are killed.
  for name in "${NAMES[@]}"; do
    pidfile="$DATA_ROOT/$name/pid"
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
        for i in $(seq 1 20); do
          kill -0 "$pid" 2>/dev/null || break
          sleep 0.1
        done
      fi
      echo "stopped $name pid=$pid"
    fi
    rm -f "$pidfile"
  done
}

if [ "${1:-}" = "--down" ]; then
  stop_all
  exit 0
fi

command -v "$ETCD" >/dev/null || { echo "ERROR: $ETCD not found; apt-get install etcd-server" >&2; exit 2; }

cluster=""
for i in 0 1 2; do
  cluster="${cluster:+$cluster,}${NAMES[$i]}=http://127.0.0.1:${PEER_PORTS[$i]}"
done

endpoints=""
for i in 0 1 2; do
  name=${NAMES[$i]}
  dir="$DATA_ROOT/$name"
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "$name already running pid=$(cat "$dir/pid")"
  else
    mkdir -p "$dir"
    state=new
    [ -d "$dir/data/member" ] && state=existing
    # One detached process per member, every fd redirected, pid recorded by
    # the child itself so $! never names a short-lived wrapper.
    # shellcheck disable=SC2016 # expanded by the inner sh, on purpose
    setsid sh -c 'echo $$ >"$1/pid"; shift; exec "$@"' sh "$dir" \
      "$ETCD" --name "$name" --data-dir "$dir/data" \
      --listen-client-urls "http://127.0.0.1:${CLIENT_PORTS[$i]}" \
      --advertise-client-urls "http://127.0.0.1:${CLIENT_PORTS[$i]}" \
      --listen-peer-urls "http://127.0.0.1:${PEER_PORTS[$i]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${PEER_PORTS[$i]}" \
      --initial-cluster "$cluster" --initial-cluster-token dstgen-local \
      --initial-cluster-state "$state" \
      >"$dir/etcd.log" 2>&1 </dev/null &
  fi
  endpoints="${endpoints:+$endpoints,}127.0.0.1:${CLIENT_PORTS[$i]}"
done

# Bounded wait: 60 probes, 0.5 s apart.
for i in $(seq 1 60); do
  if ETCDCTL_API=3 "$ETCDCTL" --endpoints "$endpoints" --dial-timeout 1s endpoint health >/dev/null 2>&1; then
    echo "cluster_up endpoints=$endpoints data_root=$DATA_ROOT probes=$i"
    exit 0
  fi
  sleep 0.5
done
echo "ERROR: cluster not healthy after 30s; logs in $DATA_ROOT/*/etcd.log" >&2
exit 1
