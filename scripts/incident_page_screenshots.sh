#!/usr/bin/env bash
# incident_page_screenshots.sh: makes docs/images/incident-page-{glibc,jvm}.png,
# the pictures of the incident page (README.md, docs/incident-page.md), and
# records which sources of the page they show in
# docs/images/incident-page.sha256 (scripts/incident_page_sources.sh; the
# test incident_page_pictures_current fails once those sources change).
#
#   sudo scripts/incident_page_screenshots.sh BUILD_DIR
#
# They are the screenshots the incident page's acceptance test takes
# (tests/integration/incident_page_test.cc): a node-mode memtrimd at a 2 s
# sample interval, over TLS with basic auth and a Content-Security-Policy of
# default-src 'self', watching the fragmenter workload (8 threads, 2 rounds
# of 16 MiB bursts, the preload agent, trims opted in) under a 192 MiB
# memory limit and the BufferPools JVM (Debian's OpenJDK 17, -Xmx64m, NMT
# summary, the agent, 8 direct buffers of 1 MiB) under a 256 MiB limit,
# opened in headless Chromium at 1100x1500 once the JVM's NMT split and the
# fragmenter's first trim are in and the charts hold
# MEMTRIMD_PAGE_HISTORY_SECONDS (default 180) of history. The test's checks
# run too: a failing test leaves the images as they were.
#
# The limits are real memory cgroups (v1's memory hierarchy, else cgroup
# v2), so it runs as root. The test makes its cgroups under one this script
# makes, and removes them; whatever a killed test leaves there (its
# processes, its cgroups) this script ends and removes on its way out.
#
# Builds nothing: build BUILD_DIR's integration_tests first, from the sources
# the pictures are to show (the record is of the working tree's files).
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tests=$build/tests/integration_tests
[[ -x "$tests" ]] || { echo "$tests not found: build $build first" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "$0: run as root (the targets run in memory cgroups)" >&2; exit 1; }

# Where a memory cgroup can be made: this shell's own group in v1's memory
# hierarchy, else the v2 root (a v2 group holding processes cannot give its
# children the memory controller; the root can).
own_v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
if [[ -n "$own_v1" && -f "/sys/fs/cgroup/memory$own_v1/memory.limit_in_bytes" ]]; then
  parent=/sys/fs/cgroup/memory${own_v1%/}/memtrimd-screenshots.$$
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
    echo +memory >/sys/fs/cgroup/cgroup.subtree_control
  parent=/sys/fs/cgroup/memtrimd-screenshots.$$
else
  echo "$0: no cgroup memory controller (neither v1 nor v2)" >&2
  exit 1
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/incident_page_screenshots.XXXXXX")
cleanup() {
  # Children first (find -depth), then the parent. A group that still holds
  # processes holds the test's (it made every group under $parent): they
  # are ended by pid, and the group removed once they are gone.
  if [[ -d "$parent" ]]; then
    while IFS= read -r dir; do
      for _ in $(seq 100); do
        pids=$(cat "$dir/cgroup.procs" 2>/dev/null || true)
        [[ -z "$pids" ]] && break
        # shellcheck disable=SC2086 # one pid a word
        kill -KILL $pids 2>/dev/null || true
        sleep 0.1
      done
      rmdir "$dir" 2>/dev/null || echo "$0: cannot remove $dir" >&2
    done < <(find "$parent" -depth -type d)
  fi
  rm -rf "$out"
}
trap cleanup EXIT
mkdir "$parent"
if [[ -f "$parent/cgroup.subtree_control" ]]; then
  echo +memory >"$parent/cgroup.subtree_control"
fi

MEMTRIMD_TEST_CGROUP_PARENT=$parent \
  MEMTRIMD_PAGE_HISTORY_SECONDS=${MEMTRIMD_PAGE_HISTORY_SECONDS:-180} \
  MEMTRIMD_PAGE_SCREENSHOTS=$out "$tests" \
  --gtest_filter='IncidentPageTest.ChromiumShowsTheReportsNumbersForAJvmPerJdkAndAGlibcProgram'
mkdir -p "$root/docs/images"
for name in glibc jvm; do
  cp "$out/incident-page-$name.png" "$root/docs/images/incident-page-$name.png"
  echo "docs/images/incident-page-$name.png"
done
"$root/scripts/incident_page_sources.sh" write
