#!/usr/bin/env bash
# allocator_bench.sh: what one read of the allocator's own figures and one
# release cost through the preload agent, on every allocator a target may run
# on (glibc, and jemalloc, tcmalloc and mimalloc preloaded), against statm,
# smaps_rollup and the agent's ping measured in the same run on the same
# target (allocator_bench.cc says how each is timed).
#
# For each allocator: starts the fragmenter (a fragmented heap with 64 MiB
# freed last) with that allocator and the agent in LD_PRELOAD, waits until it
# is ready, runs allocator_bench against it and stops it. About 1-2 minutes.
#
#   bench/allocator_bench.sh BUILD_DIR [--reads N] [--releases N]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--reads N] [--releases N]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$1
shift
reads=500
releases=50
while [[ $# -gt 0 ]]; do
  case $1 in
    --reads | --releases)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage
      if [[ $1 == --reads ]]; then reads=$2; else releases=$2; fi
      shift 2
      ;;
    *) usage ;;
  esac
done

agent=$build/collectors/agent/libmemtrimd_agent.so
fragmenter=$build/tests/workloads/fragmenter
bench=$build/bench/allocator_bench
for f in "$agent" "$fragmenter" "$bench"; do
  [[ -e "$f" ]] || die "$f not found: build $build first"
done
libdir=/usr/lib/x86_64-linux-gnu
# allocator name and the shared object preloaded for it ("" = glibc's own).
allocators=(glibc: "jemalloc:$libdir/libjemalloc.so.2"
  "tcmalloc:$libdir/libtcmalloc_minimal.so.4" "mimalloc:$libdir/libmimalloc.so.2")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_allocator_bench.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

"$bench" --header > "$tmp/rows"
for entry in "${allocators[@]}"; do
  name=${entry%%:*}
  so=${entry#*:}
  if [[ -n "$so" && ! -e "$so" ]]; then
    log "$so not found: skipping $name (scripts/install-deps.sh installs it)"
    continue
  fi
  log "== $name"
  rm -f "$tmp/ready"
  LD_PRELOAD=${so:+$so:}$agent "$fragmenter" --quiet --threads 8 --rounds 4 --burst-mib 16 \
    --free-mib 64 --ready-file "$tmp/ready" 2> "$tmp/$name.err" &
  pid=$!
  track_pid "$pid"
  wait_for_file "$tmp/ready" "$pid" 120
  log "$(grep -E '^(VmRSS|RssAnon)' "/proc/$pid/status" | tr -s ' \t' ' ' | paste -sd ' ')"
  run_tracked "$bench" --pid "$pid" --label "$name" --reads "$reads" --releases "$releases" \
    >> "$tmp/rows" || die "allocator_bench failed on $name: $(cat "$tmp/$name.err")"
  stop_pid "$pid"
  untrack_pid "$pid"
done

machine_description
printf -- '- fragmenter: --threads 8 --rounds 4 --burst-mib 16 --free-mib 64\n'
printf -- '- %s reads of each kind, interleaved; 1 + %s releases\n\n' "$reads" "$releases"
for table in reads releases; do
  grep -P "^$table\t" "$tmp/rows" | cut -f2-
  printf '\n'
done
