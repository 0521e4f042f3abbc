#!/usr/bin/env bash
# run.sh: runs every memtrimd benchmark against a build and prints a markdown
# summary (results: docs/benchmarks.md).
#
#   bench/run.sh BUILD_DIR [--quick]
#
#   1. smaps_bench (Google Benchmark, 5 repetitions interleaved, medians) against a live
#      many_mappings --mappings 5000: read+parse and collect vs the raw read.
#   2. rss_soak.sh: memtrimd's own RSS over 10,000 samples with a full smaps
#      read in every sample.
#   3. metrics_latency: /metrics vs /healthz over keep-alive and fresh
#      connections, against a memtrimd watching
#      fragmenter --threads 8 --rounds 2 --burst-mib 16.
#
# --quick: 2 repetitions, 2,000 soak samples, 500 requests (a smoke test; not
# for published numbers).
#
# It builds nothing: configure with -DMEMTRIMD_BUILD_TESTS=ON (the workloads)
# and build the default target first. The detailed output of each step goes to
# stderr, the summary to stdout. Everything it starts is stopped by pid on
# exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--quick]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$1
shift
reps=5
soak_samples=10000
requests=2000
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) reps=2; soak_samples=2000; requests=500; shift ;;
    *) usage ;;
  esac
done

memtrimd=$build/daemon/memtrimd
fragmenter=$build/tests/workloads/fragmenter
smaps_bench=$build/bench/smaps_bench
metrics_latency=$build/bench/metrics_latency
for bin in "$memtrimd" "$fragmenter" "$build/tests/workloads/many_mappings" "$metrics_latency"; do
  [[ -x "$bin" ]] || die "$bin not found: build $build first (with -DMEMTRIMD_BUILD_TESTS=ON)"
done
[[ -x "$smaps_bench" ]] || die "$smaps_bench not found: is Google Benchmark (libbenchmark-dev) installed?"

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_bench.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. smaps_bench ----------------------------------------------------------
log "== smaps_bench"
# Random interleaving spreads the repetitions of all benchmarks over the run,
# so a slow patch of a shared machine does not land on one benchmark only.
run_tracked "$smaps_bench" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true >"$tmp/smaps.txt" 2>&1 || {
  cat "$tmp/smaps.txt" >&2
  die "smaps_bench failed"
}
cat "$tmp/smaps.txt" >&2

# --- 2. rss_soak -----------------------------------------------------------------
log "== rss_soak.sh"
run_tracked "$here/rss_soak.sh" "$build" --samples "$soak_samples" >"$tmp/soak.txt" || {
  cat "$tmp/soak.txt" >&2
  die "rss_soak.sh failed"
}
cat "$tmp/soak.txt" >&2

# --- 3. metrics_latency ------------------------------------------------------------
log "== metrics_latency"
frag_args=(--threads 8 --rounds 2 --burst-mib 16)
"$fragmenter" "${frag_args[@]}" --ready-file "$tmp/frag.ready" --quiet &
frag_pid=$!
track_pid "$frag_pid"
wait_for_file "$tmp/frag.ready" "$frag_pid" 120
# Default intervals (10s samples, 60s smaps): what a scrape sees in production.
start_memtrimd "$memtrimd" "$tmp/memtrimd.log" --target.pid "$frag_pid"
md_port=$MEMTRIMD_PORT
curl -fsS --max-time 5 -o "$tmp/metrics" "http://127.0.0.1:$md_port/metrics"
arena_heaps=$(metric_value "$tmp/metrics" memtrimd_glibc_arena_heaps)
series=$(grep -vc '^#' "$tmp/metrics" || true)
run_tracked "$metrics_latency" --port "$md_port" --requests "$requests" >"$tmp/latency.txt" 2>&1 || {
  cat "$tmp/latency.txt" >&2
  die "metrics_latency failed"
}
cat "$tmp/latency.txt" >&2
stop_tracked
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- Summary -------------------------------------------------------------------
# "BM_X_median  6915 us  6901 us  5 ..." -> "BM_X 6915 6901" (wall, CPU; all in us)
medians=$(awk '$1 ~ /_median$/ && $3 == "us" && $5 == "us" {
  sub(/_median$/, "", $1); print $1, $2, $4 }' "$tmp/smaps.txt")
raw_cpu=$(awk '$1 == "BM_RawRead" { print $3 }' <<<"$medians")
status_raw_cpu=$(awk '$1 == "BM_StatusRawRead" { print $3 }' <<<"$medians")

echo "## memtrimd benchmarks"
echo
machine_description
build_type=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$build/CMakeCache.txt" 2>/dev/null || true)
echo "- build: $(basename "$build") (${build_type:-unknown})"
echo "- load average (1, 5, 15 min) at start: $load_start; at end: $load_end"
echo
echo "### smaps read (smaps_bench, median of $reps repetitions)"
echo
grep -m1 '^many_mappings' "$tmp/smaps.txt" || true
echo
echo "| benchmark | median wall us | median CPU us | CPU ratio to its raw read |"
echo "|---|---:|---:|---:|"
for name in BM_RawRead BM_ReadLines BM_ReadAndParse BM_Collect BM_ParseOnly \
  BM_StatusRawRead BM_StatusReadAndParse; do
  read -r wall cpu < <(awk -v n="$name" '$1 == n { print $2, $3 }' <<<"$medians") || continue
  ref=$raw_cpu
  [[ "$name" == BM_Status* ]] && ref=$status_raw_cpu
  ratio=$(awk -v a="$cpu" -v b="$ref" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
  echo "| $name | $wall | $cpu | $ratio |"
done
echo
grep '^ratio ' "$tmp/smaps.txt" | sed 's/^/- /' || true
echo
echo "### memtrimd RSS soak (rss_soak.sh)"
echo
sed -n '/^| samples/,$p' "$tmp/soak.txt" | grep -v '^rss_soak:'
echo
echo "### /metrics latency (metrics_latency)"
echo
echo "memtrimd with default intervals watching fragmenter ${frag_args[*]}:" \
  "memtrimd_glibc_arena_heaps $arena_heaps, $series samples in the exposition."
echo
cat "$tmp/latency.txt"
