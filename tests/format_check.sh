#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (the checked-in
# .clang-format) makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || { echo "clang-format not installed"; exit 1; }
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run --Werror "$f" > /dev/null 2>&1; then
    echo "not formatted: $f"
    bad=1
  fi
done < <(git ls-files '*.cc' '*.h' | grep -v '^tests/fixtures/')
exit "$bad"
