#!/usr/bin/env bash
# exporter_footprint.sh: memtrimd's own RSS and CPU time next to
# prometheus-process-exporter's, both watching the same single target at their
# default settings and both scraped every 15 s, for MINUTES minutes.
#
#   bench/exporter_footprint.sh BUILD_DIR [--minutes M] [--target jvm|glibc]
#                               [--scrape-interval SECONDS] [--page-every SECONDS]
#
# memtrimd runs with only --web.listen-address (a free 127.0.0.1 port) and
# --target.pid: status every 10 s, smaps every 60 s, JVM diagnostic commands
# every 60 s, a trim every 5 min. process-exporter runs with its defaults
# (which read the target's smaps_rollup and every thread's stat, and scan all
# of /proc, on every scrape) and a config matching only the target.
#
# One loop scrapes both every --scrape-interval (15 s, Prometheus' default
# scrape interval is 1 min; 15 s is the usual setting) and reads both
# exporters' VmRSS every 5 s. CPU is utime+stime from /proc/<pid>/stat: the
# measured window starts after both answered their first scrape (start-up is
# reported apart) and ends after the last scrape. "per hour" figures are the
# window's CPU time scaled to 3600 s: an extrapolation unless MINUTES is 60.
#
# --page-every N also loads memtrimd's incident page (/) every N seconds, as
# a browser showing it does (it reloads itself every sample interval, 10 s):
# what an engineer watching the page costs memtrimd.
#
# Needs curl and prometheus-process-exporter; for the jvm target OpenJDK 17.
# Builds nothing; stops everything it started, by pid, on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/exporter_lib.sh
. "$here/exporter_lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--minutes M] [--target jvm|glibc] [--scrape-interval SECONDS] [--page-every SECONDS]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$1
shift
minutes=15
kind=jvm
scrape=15
page_every=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; minutes=$2; shift 2 ;;
    --target) [[ $# -ge 2 && "$2" =~ ^(jvm|glibc)$ ]] || usage; kind=$2; shift 2 ;;
    --scrape-interval) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; scrape=$2; shift 2 ;;
    --page-every) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; page_every=$2; shift 2 ;;
    *) usage ;;
  esac
done

memtrimd=$build/daemon/memtrimd
[[ -x "$memtrimd" ]] || die "$memtrimd not found: build $build first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_exporter_footprint.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
memtrimd=$(snapshot_memtrimd "$build" "$tmp")

hz=$(getconf CLK_TCK)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
procs_on_machine=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)
tag="mtbench-$$-$RANDOM"
start_target "$kind" "$build" "$tmp" "$tag"
log "target: pid $TARGET_PID, $TARGET_DESC"
start_memtrimd "$memtrimd" "$tmp/memtrimd.log" --target.pid "$TARGET_PID"
start_process_exporter "$tmp" "$tag"
md=$MEMTRIMD_PID
pe=$PE_PID
log "memtrimd: pid $md port $MEMTRIMD_PORT; process-exporter: pid $pe port $PE_PORT group $PE_GROUP"

scrape_both() {
  curl -fsS --max-time 10 -o "$tmp/md.metrics" "http://127.0.0.1:$MEMTRIMD_PORT/metrics" || die "memtrimd scrape failed"
  curl -fsS --max-time 10 -o "$tmp/pe.metrics" "http://127.0.0.1:$PE_PORT/metrics" || die "process-exporter scrape failed"
  scrapes=$((scrapes + 1))
}

load_page() {
  curl -fsS --max-time 10 -o "$tmp/md.page" "http://127.0.0.1:$MEMTRIMD_PORT/" || die "memtrimd page failed"
  pages=$((pages + 1))
}

scrapes=0
pages=0
scrape_both
((page_every > 0)) && load_page
scrapes=0
pages=0
md_cpu0=$(cpu_ticks "$md")
pe_cpu0=$(cpu_ticks "$pe")
md_rss0=$(status_kib "$md" VmRSS)
pe_rss0=$(status_kib "$pe" VmRSS)
md_rss_max=$md_rss0
pe_rss_max=$pe_rss0
t0=$EPOCHREALTIME
end=$((SECONDS + minutes * 60))
next_scrape=$((SECONDS + scrape))
next_page=$((SECONDS + page_every))
log "measuring for $minutes min (scrape every ${scrape}s)"
while ((SECONDS < end)); do
  if ((SECONDS >= next_scrape)); then
    scrape_both
    next_scrape=$((next_scrape + scrape))
  fi
  if ((page_every > 0 && SECONDS >= next_page)); then
    load_page
    next_page=$((next_page + page_every))
  fi
  r=$(status_kib "$md" VmRSS) || die "memtrimd exited"
  ((r > md_rss_max)) && md_rss_max=$r
  r=$(status_kib "$pe" VmRSS) || die "process-exporter exited"
  ((r > pe_rss_max)) && pe_rss_max=$r
  if ((SECONDS % 60 < 5)); then
    log "$(date -u +%T) memtrimd VmRSS ${md_rss_max} KiB max, CPU $(cpu_ticks "$md") ticks; process-exporter VmRSS ${pe_rss_max} KiB max, CPU $(cpu_ticks "$pe") ticks"
  fi
  sleep 5 &
  track_pid $!
  wait $! || true
  untrack_pid $!
done
scrape_both
t1=$EPOCHREALTIME
md_cpu1=$(cpu_ticks "$md")
pe_cpu1=$(cpu_ticks "$pe")
md_rss1=$(status_kib "$md" VmRSS)
pe_rss1=$(status_kib "$pe" VmRSS)
md_hwm=$(status_kib "$md" VmHWM)
pe_hwm=$(status_kib "$pe" VmHWM)
# What the end RSS is made of: anonymous (the process's own heap and stacks)
# and file-backed (mapped binaries and shared libraries, shared with every
# other process that maps them); Pss divides shared pages among their users.
md_anon=$(status_kib "$md" RssAnon)
pe_anon=$(status_kib "$pe" RssAnon)
md_file=$(status_kib "$md" RssFile)
pe_file=$(status_kib "$pe" RssFile)
md_pss=$(awk '$1 == "Pss:" { print $2 }' "/proc/$md/smaps_rollup")
pe_pss=$(awk '$1 == "Pss:" { print $2 }' "/proc/$pe/smaps_rollup")
((md_rss1 > md_rss_max)) && md_rss_max=$md_rss1
((pe_rss1 > pe_rss_max)) && pe_rss_max=$pe_rss1
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

read -r pe_groups pe_procs < <(pe_num_procs "$tmp/pe.metrics")
[[ "$pe_groups $pe_procs" == "1 1" ]] || die "process-exporter lost the target (groups $pe_groups, num_procs $pe_procs)"
[[ "$(metric_value "$tmp/md.metrics" memtrimd_target_up)" == "1" ]] || die "memtrimd lost the target"
md_samples=$(metric_value "$tmp/md.metrics" memtrimd_samples_total)
md_trims=$(awk '/^memtrimd_trim_runs_total\{/ { s += $NF } END { print s + 0 }' "$tmp/md.metrics")
md_jvm=$(grep -c '^memtrimd_jvm_' "$tmp/md.metrics" || true)

echo "### RSS and CPU: memtrimd vs prometheus-process-exporter (exporter_footprint.sh)"
echo
machine_description
echo "- target: pid $TARGET_PID, $TARGET_DESC; both exporters watch only it (process-exporter: group \"$PE_GROUP\", num_procs 1)"
echo "- $(memtrimd_build "$tmp/md.metrics" "$memtrimd-daemon"), default intervals; process-exporter $("$PROCESS_EXPORTER" -version 2>&1 | head -1 | sed 's/.*revision: //; s/)$//'), default flags"
echo "- both scraped every ${scrape}s ($scrapes scrapes each in the window); processes on the machine at start: $procs_on_machine"
if ((page_every > 0)); then
  echo "- memtrimd's incident page (/) loaded every ${page_every}s: $pages loads in the window, the last $(wc -c < "$tmp/md.page") bytes"
else
  echo "- memtrimd's incident page (/) not loaded"
fi
echo "- memtrimd in the window: memtrimd_samples_total $md_samples at the end, $md_trims trim runs, $md_jvm memtrimd_jvm_* samples in the exposition"
echo "- load average at start: $load_start; at end: $load_end"
echo
python3 - "$t0" "$t1" "$hz" \
  memtrimd "$md_cpu0" "$md_cpu1" "$md_rss0" "$md_rss_max" "$md_rss1" "$md_hwm" "$md_anon" "$md_file" "$md_pss" \
  process-exporter "$pe_cpu0" "$pe_cpu1" "$pe_rss0" "$pe_rss_max" "$pe_rss1" "$pe_hwm" "$pe_anon" "$pe_file" "$pe_pss" <<'PY'
import sys
t0, t1, hz = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
secs = t1 - t0
rows = [sys.argv[4:14], sys.argv[14:24]]
print(f"Window: {secs / 60:.1f} min; CPU per hour = window CPU x 3600 / {secs:.0f} s"
      + (" (extrapolated)" if secs < 3500 else "") + ".")
print()
print("| exporter | CPU at window start, s (start-up) | CPU in window, s | CPU s per hour | VmRSS start KiB "
      "| VmRSS max KiB | VmRSS end KiB | VmHWM KiB | end: RssAnon / RssFile KiB | end: Pss KiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
res = {}
for name, c0, c1, r0, rmax, r1, hwm, anon, file_, pss in rows:
    c0, c1 = int(c0) / hz, int(c1) / hz
    per_hour = (c1 - c0) * 3600 / secs
    res[name] = (per_hour, int(rmax))
    print(f"| {name} | {c0:.2f} | {c1 - c0:.2f} | {per_hour:.1f} | {r0} | {rmax} | {r1} | {hwm} "
          f"| {anon} / {file_} | {pss} |")
print()
(mc, mr), (pc, pr) = res["memtrimd"], res["process-exporter"]
print(f"- memtrimd max VmRSS {mr} KiB = {mr / 1024:.2f} MiB, {mr / pr:.2f} of process-exporter's {pr} KiB"
      f" (targets: < 8 MiB: {'PASS' if mr < 8192 else 'FAIL'}; < 0.5: {'PASS' if mr < pr / 2 else 'FAIL'})")
print(f"- CPU per hour: memtrimd {mc:.1f} s, process-exporter {pc:.1f} s"
      f" ({mc / pc:.2f}x)" if pc > 0 else "")
PY
