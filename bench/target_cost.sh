#!/usr/bin/env bash
# target_cost.sh: what sampling costs the watched process. mmap_latency (one
# thread looping mmap 64 KiB + touch + munmap, with --mappings N extra
# mappings so that one smaps read is long) measures its worst and p99.9
# mmap+munmap latency while
#   baseline         nothing reads its memory map;
#   memtrimd         memtrimd samples it (--target.pid, nothing else set);
#   pmap -X          `pmap -X PID` runs at the same smaps rate as memtrimd.
# Two rates, each run for the same time per configuration:
#   default: memtrimd's defaults (status every 10 s, smaps every 60 s) against
#            pmap -X every 60 s; few reads per run, so little statistical power;
#   fast:    memtrimd --sample.interval=1s --smaps.interval=1s (memtrimd reads
#            smaps only on a sample tick, so both are needed for 1 s) against
#            pmap -X every 1 s.
# Configurations run back to back in a rotating order, ROUNDS times; every run
# has its own mmap_latency process. The reader starts first; the measured
# period begins once its start-up is over (memtrimd: healthy and its first
# sample, with the first smaps read, taken; pmap: its first read done), so the
# table shows steady-state sampling. "smaps reads" counts the reads inside the
# measured period.
#
# Per run mmap_latency reports the worst and p99.9 latency, and the operations
# during which it slept (a voluntary context switch: waiting for the mmap lock)
# with the worst of those: the long tail of the others is mostly preemption by
# other work on a shared machine.
#
#   bench/target_cost.sh BUILD_DIR [--rounds N] [--default-rounds N]
#                        [--fast-seconds S] [--default-seconds S] [--mappings N]
#                        [--only fast|default]
#
# Defaults: 3 rounds of 30 s (fast), 2 rounds of 125 s (default: smaps reads at
# 0, 60 and 120 s), 5000 mappings; about 17 minutes in all.
#
# Needs pmap (procps). Builds nothing; stops everything it started, by pid, on
# exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/exporter_lib.sh
. "$here/exporter_lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--rounds N] [--default-rounds N] [--fast-seconds S] [--default-seconds S] [--mappings N] [--only fast|default]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$1
shift
rounds=3
default_rounds=2
fast_seconds=30
default_seconds=125
mappings=5000
groups=(fast default)
num() { [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) num "$@"; rounds=$2; shift 2 ;;
    --default-rounds) num "$@"; default_rounds=$2; shift 2 ;;
    --fast-seconds) num "$@"; fast_seconds=$2; shift 2 ;;
    --default-seconds) num "$@"; default_seconds=$2; shift 2 ;;
    --mappings) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; mappings=$2; shift 2 ;;
    --only) [[ $# -ge 2 && "$2" =~ ^(fast|default)$ ]] || usage; groups=("$2"); shift 2 ;;
    *) usage ;;
  esac
done

memtrimd=$build/daemon/memtrimd
mmap_latency=$build/bench/mmap_latency
[[ -x "$memtrimd" ]] || die "$memtrimd not found: build $build first"
[[ -x "$mmap_latency" ]] || die "$mmap_latency not found: build $build first"
pmap=$(command -v pmap) || die "pmap not found (procps)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_target_cost.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
memtrimd=$(snapshot_memtrimd "$build" "$tmp")

# pmap_loop PID INTERVAL COUNTFILE: pmap -X PID every INTERVAL seconds
# (start to start) until PID exits; one line in COUNTFILE per read.
pmap_loop() {
  local pid=$1 interval_us=$(($2 * 1000000)) countfile=$3 next now d
  next=${EPOCHREALTIME/./}
  while kill -0 "$pid" 2>/dev/null; do
    "$pmap" -X "$pid" >/dev/null 2>&1 && echo read >>"$countfile"
    next=$((next + interval_us))
    # Sleep until the next start in slices, so the loop ends soon after PID.
    while kill -0 "$pid" 2>/dev/null; do
      now=${EPOCHREALTIME/./}
      d=$((next - now))
      ((d > 0)) || break
      ((d > 200000)) && d=200000
      sleep "0.$(printf '%06d' "$d")"
    done
  done
}

# run_one GROUP CONFIG ROUND SECONDS INTERVAL: one mmap_latency run; appends
# "group config round reads key=value..." to $tmp/runs.
run_one() {
  local group=$1 config=$2 round=$3 secs=$4 interval=$5
  local d=$tmp/$group.$config.$round lpid rpid reads=0 t_md t_go t_end s0 s1 i
  mkdir -p "$d"
  "$mmap_latency" --seconds "$secs" --mappings "$mappings" --ready-file "$d/ready" \
    --start-file "$d/go" >"$d/out" &
  lpid=$!
  track_pid "$lpid"
  wait_for_file "$d/ready" "$lpid" 60
  # Start the reader and let its start-up (memtrimd: process start, runtime
  # detection, first sample; pmap: its first read) pass before the measured
  # period: in production memtrimd starts once, then samples for days.
  case $config in
    baseline) rpid= ;;
    memtrimd)
      if [[ "$group" == fast ]]; then
        start_memtrimd "$memtrimd" "$d/memtrimd.log" --target.pid "$lpid" \
          --sample.interval "${interval}s" --smaps.interval "${interval}s"
      else
        start_memtrimd "$memtrimd" "$d/memtrimd.log" --target.pid "$lpid"
      fi
      t_md=${EPOCHREALTIME/./}
      rpid=$MEMTRIMD_PID
      for ((i = 0; i < 200; i++)); do
        curl -fsS --max-time 5 -o "$d/metrics0" "http://127.0.0.1:$MEMTRIMD_PORT/metrics" || true
        grep -q '^memtrimd_smaps_age_seconds' "$d/metrics0" 2>/dev/null && break
        sleep 0.05
      done
      s0=$(metric_value "$d/metrics0" memtrimd_samples_total)
      ;;
    pmap)
      pmap_loop "$lpid" "$interval" "$d/reads" &
      rpid=$!
      track_pid "$rpid"
      wait_for_file "$d/reads" "$rpid" 30
      ;;
  esac
  t_go=${EPOCHREALTIME/./}
  touch "$d/go"
  wait "$lpid" || die "mmap_latency failed ($group $config $round)"
  t_end=${EPOCHREALTIME/./}
  untrack_pid "$lpid"
  case $config in
    memtrimd)
      curl -fsS --max-time 5 -o "$d/metrics" "http://127.0.0.1:$MEMTRIMD_PORT/metrics" || true
      cp "$d/metrics" "$tmp/last.metrics" 2>/dev/null || true
      s1=$(metric_value "$d/metrics" memtrimd_samples_total)
      if [[ "$group" == fast ]]; then
        # Every sample reads smaps at this rate.
        reads=$((${s1:-0} - ${s0:-0}))
      else
        # smaps every 60 s from memtrimd's start.
        reads=$(((t_end - t_md) / 60000000 - (t_go - t_md) / 60000000))
      fi
      stop_pid "$rpid"
      untrack_pid "$rpid"
      ;;
    pmap)
      wait "$rpid" 2>/dev/null || true
      untrack_pid "$rpid"
      reads=$(($(wc -l <"$d/reads") - 1))
      ;;
  esac
  echo "$group $config $round $reads $(tr '\n' ' ' <"$d/out")" >>"$tmp/runs"
  log "$group $config round $round: reads $reads; $(tr '\n' ' ' <"$d/out")"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/runs"
configs=(baseline memtrimd pmap)
for group in "${groups[@]}"; do
  if [[ "$group" == fast ]]; then
    secs=$fast_seconds interval=1 n=$rounds
  else
    secs=$default_seconds interval=60 n=$default_rounds
  fi
  for ((r = 1; r <= n; r++)); do
    # Rotate the order so that no configuration always runs first or last.
    for ((i = 0; i < 3; i++)); do
      c=${configs[$(((i + r - 1) % 3))]}
      log "== $group round $r: $c (${secs}s)"
      run_one "$group" "$c" "$r" "$secs" "$interval"
    done
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

echo "### Target-side cost: memtrimd vs pmap -X (target_cost.sh)"
echo
machine_description
echo "- target: mmap_latency --mappings $mappings (64 KiB mmap + touch + munmap in a loop, $((mappings)) extra one-page mappings)"
echo "- $(memtrimd_build "$tmp/last.metrics" "$memtrimd-daemon"); $("$pmap" -V 2>&1 | head -1)"
echo "- configurations in rotating order; fast: $rounds rounds of ${fast_seconds}s a run, default: $default_rounds rounds of ${default_seconds}s a run"
echo "- load average at start: $load_start; at end: $load_end"
echo
python3 - "$tmp/runs" <<'PY'
import statistics, sys
runs = []
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[4:])
    runs.append(dict(group=f[0], config=f[1], round=int(f[2]), reads=int(f[3]),
                     **{k: float(v) for k, v in kv.items()}))
names = {"baseline": "baseline (nothing reads)", "memtrimd": "memtrimd", "pmap": "pmap -X"}
rates = {"fast": "1 s", "default": "60 s (memtrimd defaults)"}
print("| smaps rate | reader | runs | smaps reads | ops | p99.9 us (median of runs) | p99.99 us (median) "
      "| worst us (median of runs) | worst us (max) | ops that slept, per read | ms in ops that slept, per read "
      "| worst slept op us (max) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
summary = {}
for group in ("fast", "default"):
    for config in ("baseline", "memtrimd", "pmap"):
        sel = [r for r in runs if r["group"] == group and r["config"] == config]
        if not sel:
            continue
        reads = sum(r["reads"] for r in sel)
        ops = sum(r["ops"] for r in sel)
        p999 = statistics.median(r["p999_us"] for r in sel)
        p9999 = statistics.median(r["p9999_us"] for r in sel)
        wmed = statistics.median(r["worst_us"] for r in sel)
        wmax = max(r["worst_us"] for r in sel)
        slept = sum(r["slept_ops"] for r in sel)
        swmax = max(r["slept_worst_us"] for r in sel)
        slept_ms = sum(r["slept_total_ms"] for r in sel)
        per_read = f"{slept / reads:.1f}" if reads else f"({slept:.0f} in all)"
        ms_per_read = f"{slept_ms / reads:.1f}" if reads else f"({slept_ms:.1f} in all)"
        summary[(group, config)] = (wmax, wmed, p999, swmax)
        print(f"| {rates[group]} | {names[config]} | {len(sel)} | {reads} | {ops:.0f} | {p999:.0f} | {p9999:.0f} "
              f"| {wmed:.0f} | {wmax:.0f} | {per_read} | {ms_per_read} | {swmax:.0f} |")
print()
for group in ("fast", "default"):
    m, p = summary.get((group, "memtrimd")), summary.get((group, "pmap"))
    if m and p:
        v = "PASS" if m[0] < p[0] else "FAIL"
        print(f"- {rates[group]}: worst stall under memtrimd {m[0]:.0f} us vs under pmap -X {p[0]:.0f} us"
              f" (median of runs' worst {m[1]:.0f} vs {p[1]:.0f} us; p99.9 {m[2]:.0f} vs {p[2]:.0f} us;"
              f" worst slept op {m[3]:.0f} vs {p[3]:.0f} us): {v}")
print()
print("Per run:")
print()
print("| rate | reader | round | smaps reads | ops | p50 us | p99.9 us | worst us | worst at s | ops that slept | worst slept op us | involuntary switches |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    print(f"| {r['group']} | {names[r['config']]} | {r['round']} | {r['reads']} | {r['ops']:.0f} | {r['p50_us']:.0f} "
          f"| {r['p999_us']:.0f} | {r['worst_us']:.0f} | {r['worst_at_s']:.1f} | {r['slept_ops']:.0f} "
          f"| {r['slept_worst_us']:.0f} | {r['nonvoluntary_ctxt_switches']:.0f} |")
PY
