#!/usr/bin/env bash
# partition.sh isolate|heal PORT — cut a lockd node off from its peers.
set -euo pipefail
action=${1:?isolate|heal}
port=${2:?peer port}
case "$action" in
  isolate)
    iptables -I INPUT -p tcp --dport "$port" -j DROP -m comment --comment lockd-chaos
    iptables -I OUTPUT -p tcp --sport "$port" -j DROP -m comment --comment lockd-chaos
    ;;
  heal)
    iptables -D INPUT -p tcp --dport "$port" -j DROP -m comment --comment lockd-chaos || true
    iptables -D OUTPUT -p tcp --sport "$port" -j DROP -m comment --comment lockd-chaos || true
    ;;
  *) echo "usage: $0 isolate|heal PORT" >&2; exit 2 ;;
esac
