#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (ctest).
# Usage: scripts/test.sh [preset]   (dev by default; asan and release work too)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"

bash scripts/install-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
# Integration tests start real processes and servers on 127.0.0.1; two at a
# time suits a 2-core machine.
ctest --preset "$preset" -j 2 --timeout 300
