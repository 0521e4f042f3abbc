#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (ctest).
#
#   scripts/test.sh              dev (its ctest run includes the .deb built by
#                                scripts/build-deb.sh and installed in a clean
#                                Debian 12 chroot: label package), then
#                                asan (AddressSanitizer and
#                                UndefinedBehaviorSanitizer over the tests
#                                that run memtrimd's code: the unit tests in
#                                one process, each JVM test on Debian's JDK;
#                                no source-only checks, no fuzz replays, no
#                                image or package), then fuzz (every libFuzzer target
#                                for a short time), then deb (the plain
#                                Release build as distributions make it,
#                                with warnings as errors and no tests: the
#                                packaging preset installed under /usr, the
#                                build the .deb is made from, so after the
#                                dev pass built it for the package test it
#                                is not compiled twice)
#   scripts/test.sh PRESET...    only those presets (dev, asan, fuzz,
#                                release, packaging, deb)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- dev asan fuzz deb
fi

bash scripts/install-deps.sh
for preset in "$@"; do
  echo "=== $preset"
  cmake --preset "$preset"
  cmake --build --preset "$preset" -j "$(nproc)"
  if [ "$preset" = packaging ] || [ "$preset" = deb ]; then
    continue # a build check: it has no tests
  fi
  # Integration tests start real processes and servers on 127.0.0.1; two at
  # a time suits a 2-core machine.
  ctest --preset "$preset" -j 2 --timeout 300
done
