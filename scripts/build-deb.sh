#!/usr/bin/env bash
# Builds the Debian package of memtrimd (the `deb` preset: a Release build
# with warnings as errors, no tests, installed under /usr, stripped; CPack's
# DEB generator, Depends from dpkg-shlibdeps) in build/deb, and prints the
# .deb's path on the last line. Needs what scripts/install-deps.sh installs
# (dpkg-dev comes with build-essential; a JDK gives the agent its JVM support).
#
#   scripts/build-deb.sh            # then: apt install ./build/deb/memtrimd_<version>_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset deb > /dev/null
cmake --build --preset deb -j "$(nproc)"
# The package's name is fixed by the version; an older one in the directory
# is left by an earlier version and must not be taken for this one.
rm -f build/deb/memtrimd_*.deb
cpack --preset deb > build/deb/cpack.log 2>&1 || {
  cat build/deb/cpack.log >&2
  exit 1
}
debs=(build/deb/memtrimd_*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
  echo "build-deb: cpack made no single build/deb/memtrimd_*.deb" >&2
  cat build/deb/cpack.log >&2
  exit 1
fi
echo "$(pwd)/${debs[0]}"
