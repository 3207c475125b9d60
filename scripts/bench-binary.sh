#!/usr/bin/env bash
# Measures dstgen's binary against an older commit's, in one run on one
# machine: size, module count (`go version -m`), and `dstgen --version`
# wall time (median of RUNS runs; hyperfine when installed). The base
# binary may not know --version: it still starts, runs its package init
# and exits, which is the start-up cost being compared.
#
#   scripts/bench-binary.sh [BASE_COMMIT]     # default 0914534
#   RUNS=50 scripts/bench-binary.sh
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-0914534}
runs=${RUNS:-20}
work=$(mktemp -d)
wt="$work/base"
cleanup() {
  git worktree remove --force "$wt" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

git worktree add -q --detach "$wt" "$base"
echo "==> build base ($base) and new (working tree)"
(cd "$wt" && go build -o "$work/dstgen-base" ./cmd/dstgen)
go build -o "$work/dstgen-new" ./cmd/dstgen
go build -o "$work/dstgen-task" ./cmd/dstgen-task

size() { stat -c %s "$1"; }
mods() { go version -m "$1" | grep -c $'^\tdep' || true; }

# median_ms BIN: median wall time of "BIN --version" in milliseconds.
median_ms() {
  if command -v hyperfine >/dev/null 2>&1; then
    hyperfine -N -i --warmup 3 --runs "$runs" --export-json "$work/h.json" "$1 --version" >/dev/null 2>&1
    python3 -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$work/h.json"
  else
    local t0 t1
    for _ in $(seq 3); do "$1" --version >/dev/null 2>&1 || true; done
    for _ in $(seq "$runs"); do
      t0=$(date +%s%N); "$1" --version >/dev/null 2>&1 || true; t1=$(date +%s%N)
      echo $(( (t1 - t0) / 1000 ))
    done | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f\n", m/1000}'
  fi
}

bs=$(size "$work/dstgen-base"); ns=$(size "$work/dstgen-new"); ts=$(size "$work/dstgen-task")
bm=$(mods "$work/dstgen-base"); nm=$(mods "$work/dstgen-new"); tm=$(mods "$work/dstgen-task")
bt=$(median_ms "$work/dstgen-base"); nt=$(median_ms "$work/dstgen-new")
ratio() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[1])/float(sys.argv[2])))' "$1" "$2"; }
printf '%-28s %14s %14s %8s\n' "" "base $base" "new" "new/base"
printf '%-28s %14s %14s %8s\n' "dstgen size (MB)" "$(awk "BEGIN{printf \"%.1f\", $bs/1e6}")" "$(awk "BEGIN{printf \"%.1f\", $ns/1e6}")" "$(ratio "$ns" "$bs")"
printf '%-28s %14s %14s %8s\n' "dstgen modules" "$bm" "$nm" "$(ratio "$nm" "$bm")"
printf '%-28s %14s %14s %8s\n' "dstgen --version (ms, p50)" "$bt" "$nt" "$(ratio "$nt" "$bt")"
printf '%-28s %14s %14s\n' "dstgen-task size (MB)" "-" "$(awk "BEGIN{printf \"%.1f\", $ts/1e6}")"
printf '%-28s %14s %14s\n' "dstgen-task modules" "-" "$tm"
