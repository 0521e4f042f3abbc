#!/usr/bin/env bash
# rss_soak.sh: memtrimd's own RSS over 10,000 samples that each read a full
# smaps of 5,000 mappings.
#
#   bench/rss_soak.sh BUILD_DIR [--samples N] [--mappings N] [--deadline SECONDS]
#
# Starts many_mappings --mappings 5000 and memtrimd watching it with
# --sample.interval 10ms --smaps.interval 10ms (so every sample is a full
# smaps read, the most allocation-heavy path), on a free 127.0.0.1 port. Polls
# /metrics until memtrimd_samples_total >= N and records memtrimd's RSS at
# every 1,000 samples: VmRSS from /proc/<memtrimd>/status and the exported
# process_resident_memory_bytes from the same poll.
#
# Targets: RSS under 8 MiB at every point, and not growing: VmRSS at N samples
# at most 256 KiB above VmRSS at 2,000 samples (the first 2,000 are warm-up:
# allocator arenas and the mapping vector reach their steady size).
# A missed target prints FAIL but exits 0 (it is a report); the exit status is
# 1 only when the soak itself could not run.
#
# Builds nothing. Everything it starts is stopped by pid on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--samples N] [--mappings N] [--deadline SECONDS]" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
build=$1
shift
samples=10000
mappings=5000
deadline_secs=900
while [[ $# -gt 0 ]]; do
  case $1 in
    --samples) samples=$2; shift 2 ;;
    --mappings) mappings=$2; shift 2 ;;
    --deadline) deadline_secs=$2; shift 2 ;;
    *) usage ;;
  esac
done
[[ "$samples" =~ ^[0-9]+$ && "$samples" -ge 2000 ]] || die "--samples must be an integer >= 2000"

memtrimd=$build/daemon/memtrimd
many_mappings=$build/tests/workloads/many_mappings
[[ -x "$memtrimd" ]] || die "$memtrimd not found (build the memtrimd target first)"
[[ -x "$many_mappings" ]] || die "$many_mappings not found (configure with -DMEMTRIMD_BUILD_TESTS=ON)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rss_soak.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$many_mappings" --mappings "$mappings" --ready-file "$tmp/mm.ready" --quiet &
mm_pid=$!
track_pid "$mm_pid"
wait_for_file "$tmp/mm.ready" "$mm_pid" 60

start_memtrimd "$memtrimd" "$tmp/memtrimd.log" --target.pid "$mm_pid" \
  --sample.interval 10ms --smaps.interval 10ms
md_pid=$MEMTRIMD_PID
port=$MEMTRIMD_PORT
log "rss_soak: many_mappings pid $mm_pid ($mappings mappings), memtrimd pid $md_pid on 127.0.0.1:$port"

vmrss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
vmhwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

declare -A at_samples at_vmrss at_exported at_secs
start=$SECONDS
t0=$(date +%s.%N)
next=1000
n=0
while ((next <= samples)); do
  ((SECONDS - start < deadline_secs)) || die "only $n samples after ${deadline_secs}s"
  kill -0 "$md_pid" 2>/dev/null || {
    cat "$tmp/memtrimd.log" >&2
    die "memtrimd exited"
  }
  if ! curl -fsS --max-time 5 -o "$tmp/metrics" "http://127.0.0.1:$port/metrics"; then
    sleep 0.1
    continue
  fi
  rss=$(vmrss_kib "$md_pid")
  v=$(metric_value "$tmp/metrics" memtrimd_samples_total)
  n=$(awk -v v="${v:-0}" 'BEGIN { printf "%d", v }')
  if ((n >= next)); then
    exported=$(metric_value "$tmp/metrics" process_resident_memory_bytes)
    exported=$(awk -v v="${exported:-0}" 'BEGIN { printf "%d", v }')
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    # One poll may cross several thresholds; each gets this poll's values.
    while ((next <= n && next <= samples)); do
      at_samples[$next]=$n
      at_vmrss[$next]=$rss
      at_exported[$next]=$exported
      at_secs[$next]=$secs
      next=$((next + 1000))
    done
    continue
  fi
  # Polling costs the 10 ms sampler CPU too: a few polls a second are enough.
  sleep 0.2
done
hwm=$(vmhwm_kib "$md_pid")
elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
smaps_read=$(metric_value "$tmp/metrics" memtrimd_smaps_read_duration_seconds || true)

limit_kib=$((8 * 1024))
growth_limit_kib=256
max_rss=0
echo
echo "rss_soak: memtrimd --sample.interval 10ms --smaps.interval 10ms watching many_mappings --mappings $mappings"
echo
echo "| samples (threshold) | samples seen | elapsed s | VmRSS KiB | process_resident_memory_bytes |"
echo "|---:|---:|---:|---:|---:|"
for ((k = 1000; k <= samples; k += 1000)); do
  [[ -n "${at_vmrss[$k]:-}" ]] || continue
  printf '| %d | %d | %s | %d | %d |\n' "$k" "${at_samples[$k]}" "${at_secs[$k]}" \
    "${at_vmrss[$k]}" "${at_exported[$k]}"
  if ((at_vmrss[$k] > max_rss)); then max_rss=${at_vmrss[$k]}; fi
done
last=$((samples / 1000 * 1000))
growth_kib=$((at_vmrss[$last] - at_vmrss[2000]))
growth_exported=$((at_exported[$last] - at_exported[2000]))
rate=$(awk -v n="$n" -v t="$elapsed" 'BEGIN { printf "%.0f", n / t }')
echo
echo "- samples: $n in ${elapsed}s ($rate samples/s)${smaps_read:+; last smaps read took ${smaps_read}s}"
echo "- VmHWM at the end: $hwm KiB"
echo "- growth from 2000 to $last samples: VmRSS ${growth_kib} KiB, process_resident_memory_bytes ${growth_exported} B"
size_ok=PASS
grow_ok=PASS
((max_rss < limit_kib)) || size_ok=FAIL
((growth_kib <= growth_limit_kib)) || grow_ok=FAIL
echo "- target RSS < 8 MiB (max VmRSS ${max_rss} KiB): $size_ok"
echo "- target not growing (VmRSS growth 2000->$last <= ${growth_limit_kib} KiB): $grow_ok"
echo "rss_soak: max_vmrss_kib=$max_rss growth_kib=$growth_kib size=$size_ok growth=$grow_ok"
