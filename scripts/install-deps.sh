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
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev curl prometheus
  openjdk-17-jdk-headless util-linux procps
  # benchmarks: references measured in the same run
  jattach time strace
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get install)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
