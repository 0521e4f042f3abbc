#!/usr/bin/env bash
# Installs everything memtrimd's build, tests, demo and benchmarks need on
# Debian 12 (bookworm). Run as root. Safe to run again: apt-get skips what is
# already installed.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang-format
  # libraries memtrimd links
  prometheus-cpp-dev libcivetweb-dev libspdlog-dev libfmt-dev libcli11-dev zlib1g-dev
  libyaml-cpp-dev libssl-dev libcrypt-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev curl prometheus
  openjdk-17-jdk-headless util-linux procps
  # heap profiles are read back by Go's pprof (go tool pprof)
  golang-go
  # the preload agent in a real server that drops root (mariadbd --user), driven by sysbench
  mariadb-server sysbench
  # benchmarks: references measured in the same run
  jattach time strace wrk prometheus-process-exporter iproute2
  # deployment checks: rule and dashboard tests, manifest lint
  python3 python3-yaml yamllint
  # TLS tests make their certificates with the openssl command
  openssl
  # the .deb: dpkg-shlibdeps computes its Depends (scripts/build-deb.sh),
  # help2man makes its manual page from memtrimd --help; its test installs
  # it in a clean bookworm rootfs made by mmdebstrap (below) and runs
  # Debian's package checker, lintian, on it
  dpkg-dev help2man lintian
  # the incident page's acceptance test opens / in a headless browser
  chromium
  # the allocators a target may run on: the fragmenter is built for and
  # preloaded with each (jemalloc, tcmalloc, mimalloc, and musl-gcc)
  libjemalloc2 libjemalloc-dev libtcmalloc-minimal4 libgoogle-perftools-dev
  libmimalloc2.0 libmimalloc-dev musl-tools
  # the fuzz preset: clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
  # container images without a registry (scripts/build-image.sh): Debian base
  # images made by mmdebstrap, built and run by root podman with runc
  # (deploy/docker/containers.conf says why runc); catatonit is the init of
  # the pause image podman builds for a pod (tests/container/pod_test.py)
  podman mmdebstrap runc catatonit
)

# kubectl (for `kubectl kustomize`) and Node.js (for the offline schema
# check of the rendered manifests) may already come from another source
# (a cloud SDK, NodeSource); Debian's packages would conflict with those, so
# they are installed only when the command is missing.
command -v kubectl > /dev/null || packages+=(kubernetes-client)
command -v node > /dev/null || packages+=(nodejs)
command -v npm > /dev/null || packages+=(npm)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get install)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The schema packages the manifest check uses, pinned by the lock file.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -f "$here/tests/manifests/package-lock.json" ] && [ ! -d "$here/tests/manifests/node_modules" ]; then
  npm ci --prefix "$here/tests/manifests" --no-audit --no-fund --loglevel=error
fi
