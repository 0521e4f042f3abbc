#!/usr/bin/env bash
# sites_node.sh: what --collector.sites costs memtrimd itself in node mode,
# against the same node watched without it, in the same run:
#
#   off  memtrimd --targets=node --jvm.load-agent (the agent loaded into
#        every JVM, sampling never turned on)
#   on   the same with --collector.sites (the sampler turned on in every
#        target, each target's sites read, named and kept every
#        --sites.interval, 30 s by default)
#
#   bench/sites_node.sh BUILD_DIR [--seconds N] [--jvms J] [--glibc G]
#
# Targets, each with the run's marker in its command line:
#   - J JVMs (20): GcLoop (idle after start-up), -Xmx32m, round robin over
#     every JDK under /usr/lib/jvm; memtrimd loads the agent into each.
#   - G glibc programs (30): fragmenter --threads 2 --rounds 1 --burst-mib 4
#     with libmemtrimd_agent.so preloaded; each thread's bursts keep
#     blocks of many sizes live from its own stacks.
# "off" runs first, then "on" (the agent stays loaded in the JVMs). Each
# waits until every target is watched (and, for "on", until every target's
# sites were read once, or 3 minutes), then measures N seconds (120, four
# sites reads): VmRSS every second (mean and max), VmHWM at the end, CPU as
# utime+stime over the window's wall time in % of one core. The difference
# divided by the targets is what sites cost per target.
#
# Prints a markdown table on stdout (details on stderr). Needs curl and a
# JDK. Builds nothing; stops everything it started, by pid, on any exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/exporter_lib.sh
. "$here/exporter_lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--seconds N] [--jvms J] [--glibc G]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$(cd "$1" && pwd)
shift
seconds=120
n_jvm=20
n_glibc=30
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; seconds=$2; shift 2 ;;
    --jvms) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; n_jvm=$2; shift 2 ;;
    --glibc) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; n_glibc=$2; shift 2 ;;
    *) usage ;;
  esac
done
n_all=$((n_jvm + n_glibc))
((n_all >= 1)) || usage

fragmenter=$build/tests/workloads/fragmenter
classes=$build/tests/workloads/java
agent=$build/collectors/agent/libmemtrimd_agent.so
for f in "$build/daemon/memtrimd" "$fragmenter" "$agent"; do
  [[ -e "$f" ]] || die "$f not found: build $build first"
done
((n_jvm == 0)) || [[ -f "$classes/GcLoop.class" ]] || die "$classes/GcLoop.class not found: build $build first"

find_jdks
((n_jvm == 0 || ${#jdks[@]} > 0)) || die "no JDK under /usr/lib/jvm"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_sites_node.XXXXXX")
cleanup() {
  local p
  for p in "${BENCH_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
memtrimd=$(snapshot_memtrimd "$build" "$tmp")
cp "$agent" "$tmp/bin/" && agent=$tmp/bin/libmemtrimd_agent.so
hz=$(getconf CLK_TCK)
marker="mtsites-$$-$RANDOM"

mkdir -p "$tmp/ready"
pids=()
for ((i = 0; i < n_jvm; i++)); do
  java=${jdks[$((i % ${#jdks[@]}))]}
  "$java" "-Dmemtrimd.bench=${marker}-j$i" -Xmx32m -cp "$classes" GcLoop \
    --ready-file "$tmp/ready/j$i" >"$tmp/j$i.log" 2>&1 &
  track_pid $!
  pids+=($!)
done
for ((i = 0; i < n_glibc; i++)); do
  env "LD_PRELOAD=$agent" "$fragmenter" --threads 2 --rounds 1 --burst-mib 4 --quiet \
    --tag "${marker}-g$i" --ready-file "$tmp/ready/g$i" >"$tmp/g$i.log" 2>&1 &
  track_pid $!
  pids+=($!)
done
log "starting $n_jvm JVMs and $n_glibc glibc programs, marker $marker"
deadline=$((SECONDS + 300))
while (($(find "$tmp/ready" -type f ! -name '*.tmp' | wc -l) < n_all)); do
  ((SECONDS < deadline)) || die "targets not ready after 300 s"
  sleep 0.5
done
log "all $n_all targets ready"

# measure NAME ARGS...: one memtrimd with ARGS; sets row_NAME.
measure() {
  local name=$1
  shift
  start_memtrimd "$memtrimd" "$tmp/memtrimd.$name.log" --targets=node \
    "--targets.match=${marker}-(j|g)[0-9]+" --targets.min-rss=0 --jvm.load-agent "$@"
  local md=$MEMTRIMD_PID port=$MEMTRIMD_PORT
  local ready_by=$((SECONDS + 180)) watched=0 read=0
  while ((SECONDS < ready_by)); do
    curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" >"$tmp/m.$name" 2>/dev/null || true
    watched=$(metric_value "$tmp/m.$name" memtrimd_targets_watched)
    read=$(grep -c '^memtrimd_native_sites_sampler_bytes{' "$tmp/m.$name" || true)
    if [[ ${watched:-0} -ge $n_all && ( $name == off || $read -ge $n_all ) ]]; then break; fi
    sleep 1
  done
  log "$name: $watched watched, sites of $read read; measuring $seconds s"
  local t0 c0 c1 t1 sum=0 max=0 n=0 rss
  t0=$(date +%s.%N)
  c0=$(cpu_ticks "$md")
  for ((s = 0; s < seconds; s++)); do
    rss=$(status_kib "$md" VmRSS)
    sum=$((sum + rss))
    ((rss <= max)) || max=$rss
    n=$((n + 1))
    sleep 1
  done
  c1=$(cpu_ticks "$md")
  t1=$(date +%s.%N)
  local hwm held dropped
  hwm=$(status_kib "$md" VmHWM)
  curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" >"$tmp/m.$name" 2>/dev/null || true
  held=$(awk '$1 == "memtrimd_sites_memory_bytes{kind=\"held\"}" { print $2 }' "$tmp/m.$name")
  dropped=$(awk '$1 ~ /^memtrimd_sites_dropped_total\{/ { s += $2 } END { print s + 0 }' "$tmp/m.$name")
  local cpu
  cpu=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" \
    'BEGIN { printf "%.2f", 100 * (b - a) / hz / (t1 - t0) }')
  printf -v "row_$name" '%s %s %s %s %s %s %s' "$((sum / n))" "$max" "$hwm" "$cpu" "$read" \
    "${held:-0}" "$dropped"
  stop_pid "$md"
}

row_off='' row_on=''
measure off
measure on --collector.sites

read -r off_mean off_max off_hwm off_cpu _ _ _ <<<"$row_off"
read -r on_mean on_max on_hwm on_cpu on_read on_held on_dropped <<<"$row_on"
per_target=$(awk -v a="$off_mean" -v b="$on_mean" -v n="$n_all" 'BEGIN { printf "%.0f", (b - a) / n }')

echo "### Sites in node mode: $n_jvm JVMs (agent loaded by --jvm.load-agent) + $n_glibc glibc programs (agent preloaded)"
echo
echo "Command: \`bench/sites_node.sh $(basename "$(dirname "$build")")/$(basename "$build") --seconds $seconds --jvms $n_jvm --glibc $n_glibc\`"
echo
machine_description
echo
echo "| memtrimd | VmRSS mean (KiB) | VmRSS max (KiB) | VmHWM (KiB) | CPU (% of a core) |"
echo "|---|---|---|---|---|"
echo "| without sites | $off_mean | $off_max | $off_hwm | $off_cpu |"
echo "| --collector.sites | $on_mean | $on_max | $on_hwm | $on_cpu |"
echo "| ratio on / off | $(awk -v a="$off_mean" -v b="$on_mean" 'BEGIN { printf "%.2f", b / a }') | $(awk -v a="$off_max" -v b="$on_max" 'BEGIN { printf "%.2f", b / a }') | $(awk -v a="$off_hwm" -v b="$on_hwm" 'BEGIN { printf "%.2f", b / a }') | $(awk -v a="$off_cpu" -v b="$on_cpu" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }') |"
echo
echo "Sites read for $on_read of $n_all targets; memory per target with sites on: $per_target KiB of VmRSS (mean difference / targets); the sites budget held $on_held bytes (the symbol cache's cap included), $on_dropped dropped."
