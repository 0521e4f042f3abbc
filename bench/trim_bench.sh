#!/usr/bin/env bash
# trim_bench.sh: what a trim costs on this machine.
#   1. Duration per GiB given back, through the agent (fragmenter, preloaded)
#      and through the JVM (NativeChurn on OpenJDK 17, System.trim_native_heap),
#      each trimmed by `memtrimd trim --json`.
#   2. The pause a thread that mallocs in the trimmed arena sees (trim_pause),
#      against its own baseline just before.
#
#   bench/trim_bench.sh BUILD_DIR [RUNS]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [RUNS]" >&2; exit 2; }
build=$1
runs=${2:-3}
memtrimd=$build/daemon/memtrimd
agent=$build/collectors/agent/libmemtrimd_agent.so
fragmenter=$build/tests/workloads/fragmenter
trim_pause=$build/bench/trim_pause
classes=$build/tests/workloads/java
java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
for f in "$memtrimd" "$agent" "$fragmenter" "$trim_pause" "$java" "$classes/NativeChurn.class"; do
  [[ -e "$f" ]] || die "$f not found: build $build first"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_trim_bench.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get(sys.argv[2], 0))' "$@"; }

printf '| backend | workload | run | given back (MiB) | duration (ms) | seconds per GiB |\n'
printf '|---|---|---|---|---|---|\n'
for ((r = 1; r <= runs; r++)); do
  rm -f "$tmp/ready"
  LD_PRELOAD=$agent "$fragmenter" --quiet --threads 16 --rounds 4 --burst-mib 32 \
    --ready-file "$tmp/ready" &
  pid=$!
  track_pid "$pid"
  wait_for_file "$tmp/ready" "$pid" 120
  "$memtrimd" trim --pid "$pid" --json > "$tmp/agent.json"
  stop_pid "$pid"
  gb=$(json "$tmp/agent.json" reclaimed_rss_swap_bytes)
  dur=$(json "$tmp/agent.json" duration_seconds)
  python3 -c "import sys; g=float(sys.argv[1]); d=float(sys.argv[2]); print(f'| agent | fragmenter 16x4x32 MiB | $r | {g/2**20:.0f} | {d*1000:.0f} | {d/(g/2**30) if g>0 else float(\"nan\"):.2f} |')" "$gb" "$dur"

  rm -f "$tmp/ready"
  "$java" -cp "$classes" NativeChurn --threads 16 --quiet --ready-file "$tmp/ready" &
  pid=$!
  track_pid "$pid"
  wait_for_file "$tmp/ready" "$pid" 120
  "$memtrimd" trim --pid "$pid" --json > "$tmp/jvm.json"
  stop_pid "$pid"
  gb=$(json "$tmp/jvm.json" reclaimed_rss_swap_bytes)
  dur=$(json "$tmp/jvm.json" duration_seconds)
  python3 -c "import sys; g=float(sys.argv[1]); d=float(sys.argv[2]); print(f'| jvm | NativeChurn 16 threads | $r | {g/2**20:.0f} | {d*1000:.0f} | {d/(g/2**30) if g>0 else float(\"nan\"):.2f} |')" "$gb" "$dur"
done

printf '\n| run | arena fragmented (MiB) | trim duration (ms) | malloc+free worst, baseline (us) | worst during trim (us) | p99.9 baseline / during (us) |\n'
printf '|---|---|---|---|---|---|\n'
for ((r = 1; r <= runs; r++)); do
  d=$tmp/pause.$r
  mkdir -p "$d"
  LD_PRELOAD=$agent "$trim_pause" --dir "$d" --mib 512 --baseline-ms 2000 > "$d/out" &
  pid=$!
  track_pid "$pid"
  wait_for_file "$d/phase-b" "$pid" 120
  "$memtrimd" trim --pid "$pid" --json > "$d/trim.json"
  touch "$d/done"
  wait "$pid"
  untrack_pid "$pid"
  eval "$(tr ' ' '\n' < "$d/out")"
  dur=$(json "$d/trim.json" duration_seconds)
  python3 -c "import sys; print(f'| $r | 512 | {float(sys.argv[1])*1000:.0f} | $baseline_max_us | $during_trim_max_us | $baseline_p999_us / $during_trim_p999_us |')" "$dur"
done
