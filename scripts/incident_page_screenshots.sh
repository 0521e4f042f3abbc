#!/usr/bin/env bash
# incident_page_screenshots.sh: makes docs/images/incident-page-{glibc,jvm}.png,
# the README's pictures of the incident page.
#
#   scripts/incident_page_screenshots.sh BUILD_DIR
#
# They are the screenshots the incident page's acceptance test takes
# (tests/integration/incident_page_test.cc): a node-mode memtrimd at a 2 s
# sample interval watching the fragmenter workload (8 threads, 2 rounds of
# 16 MiB bursts, the preload agent, trims opted in) and the BufferPools JVM
# (Debian's OpenJDK 17, -Xmx64m, NMT summary, the agent, 8 direct buffers of
# 1 MiB), opened in headless Chromium at 1100x1500 once the JVM's NMT split
# and the fragmenter's first trim are in. The test's checks run too: a
# failing test leaves the images as they were.
#
# Builds nothing: build BUILD_DIR's integration_tests first.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tests=$build/tests/integration_tests
[[ -x "$tests" ]] || { echo "$tests not found: build $build first" >&2; exit 1; }

out=$(mktemp -d "${TMPDIR:-/tmp}/incident_page_screenshots.XXXXXX")
trap 'rm -rf "$out"' EXIT
MEMTRIMD_PAGE_SCREENSHOTS=$out "$tests" \
  --gtest_filter='IncidentPageTest.ChromiumShowsTheReportsNumbersForAJvmPerJdkAndAGlibcProgram'
mkdir -p "$root/docs/images"
for name in glibc jvm; do
  cp "$out/incident-page-$name.png" "$root/docs/images/incident-page-$name.png"
  echo "docs/images/incident-page-$name.png"
done
