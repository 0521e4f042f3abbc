#!/usr/bin/env bash
# incident_page_sources.sh: the record of which code the pictures of the
# incident page (docs/images/incident-page-*.png) show.
#
#   scripts/incident_page_sources.sh write   # after making the pictures
#   scripts/incident_page_sources.sh check   # exit 1 when they are older than the page
#
# docs/images/incident-page.sha256 holds, in sha256sum's format, the
# pictures and the sources the page is rendered from: daemon/report/
# incident_page.{cc,h} and every header of this repository incident_page.cc
# includes, with its .cc (the sections, charts and findings whose words and
# shapes the page shows). `check` recomputes that list and compares: a change
# to any of those files, a picture replaced by hand, or a new include makes
# it fail until scripts/incident_page_screenshots.sh (which calls `write`)
# has made the pictures again. Comments count as changes too: the record
# cannot tell them apart, and a picture made again costs a few minutes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
record=docs/images/incident-page.sha256

# The files, one per line, relative to the repository, sorted.
inputs() {
  local page=daemon/report/incident_page.cc header
  {
    echo docs/images/incident-page-glibc.png
    echo docs/images/incident-page-jvm.png
    echo "$page"
    echo "${page%.cc}.h"
    # Headers of this repository (a generated one, as build_info.h, is not).
    sed -n 's/^#include "\([^"]*\.h\)".*/\1/p' "$root/$page" | while read -r header; do
      [[ -f "$root/$header" ]] || continue
      echo "$header"
      [[ -f "$root/${header%.h}.cc" ]] && echo "${header%.h}.cc"
    done
  } | sort -u
}

current() {
  # shellcheck disable=SC2046 # one path a word; the paths have no spaces
  (cd "$root" && sha256sum $(inputs))
}

case "${1:-}" in
  write)
    current >"$root/$record"
    echo "$record"
    ;;
  check)
    if [[ ! -f "$root/$record" ]]; then
      echo "$record is missing: run scripts/incident_page_screenshots.sh (as root)" >&2
      exit 1
    fi
    if ! diff -u "$root/$record" <(current) >&2; then
      echo "The incident page's pictures are older than the page (lines above: - as they" \
        "were made, + now). Run scripts/incident_page_screenshots.sh BUILD_DIR as root" \
        "to make them again; it rewrites $record." >&2
      exit 1
    fi
    echo "the pictures are of the current page ($(inputs | wc -l) files in $record)"
    ;;
  *)
    echo "usage: $0 write|check" >&2
    exit 2
    ;;
esac
