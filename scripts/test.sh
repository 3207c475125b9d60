#!/usr/bin/env bash
# Runs dstgen's whole test suite. Installs what the tests need when it is
# missing (a fresh CI machine has none of it): OpenSSH sshd, iptables,
# iproute2, etcd, MariaDB + Galera + rsync (examples/galera), shellcheck, chromium (the headless browser test of
# `dstgen serve`) from Debian; go-task and staticcheck via
# `go install`. Real-part tests (sshd, network namespaces, iptables) need
# root; as non-root they skip with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:$(go env GOPATH)/bin"
need_apt=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need_apt+=(iptables)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || need_apt+=(iproute2)
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need_apt+=(etcd-client)
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)
[ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
[ -e /usr/lib/galera/libgalera_smm.so ] || need_apt+=(galera-4)
command -v rsync >/dev/null 2>&1 || need_apt+=(rsync)
command -v pgrep >/dev/null 2>&1 || need_apt+=(procps)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "==> apt-get install ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "WARN: missing ${need_apt[*]} and not root; tests that need them will skip" >&2
  fi
fi
command -v task >/dev/null 2>&1 || { echo "==> go install task"; go install github.com/go-task/task/v3/cmd/task@v3.54.0; }
command -v staticcheck >/dev/null 2>&1 || { echo "==> go install staticcheck"; go install honnef.co/go/tools/cmd/staticcheck@v0.8.2; }

echo "==> go mod tidy"
if ! tidy_diff=$(go mod tidy -diff 2>&1); then
  echo "go.mod/go.sum are not tidy: run \`go mod tidy\` and commit the result:" >&2
  echo "$tidy_diff" >&2
  exit 1
fi
echo "==> gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
echo "==> go vet"
go vet ./...
echo "==> staticcheck"
staticcheck ./...
echo "==> go test"
go test -count=1 -timeout 24m "$@" ./...
