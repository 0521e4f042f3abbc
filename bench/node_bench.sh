#!/usr/bin/env bash
# node_bench.sh: one memtrimd in node mode watching 200 processes (about 20
# JVMs, the rest small glibc programs), at its default intervals, next to
# prometheus-process-exporter watching the same processes, in the same run.
#
#   bench/node_bench.sh BUILD_DIR [--seconds N] [--rounds R] [--page-loads P] [--jvms J] [--glibc G]
#
# Targets, each with a marker (the run's tag and its own id) in its command
# line:
#   - J JVMs (20): GcLoop without --loop (idle after start-up), -Xmx64m,
#     -XX:NativeMemoryTracking=summary, round robin over every JDK found under
#     /usr/lib/jvm; every fourth has MEMTRIMD_TRIM=1 in its environment.
#   - G glibc programs (180): fragmenter --threads 2 --rounds 1 --burst-mib 4
#     (about 3.7 MiB resident, most of it freed but kept by malloc); every third
#     has libmemtrimd_agent.so preloaded and MEMTRIMD_TRIM=1.
# memtrimd: --targets=node --targets.match=<the run's marker>
# --targets.min-rss=0, every other flag at its default (node mode: trims only
# for targets that opted in, no detail families). process-exporter: its
# default flags and a config with one group per process, named by the id the
# cmdline regex captures ({{.Matches.id}}).
#
# After memtrimd reports memtrimd_targets_watched >= J+G and every one of them
# up, and process-exporter reports J+G groups of one process each:
#   1. footprint, N seconds (300): both scraped every 15 s the way Prometheus
#      scrapes (gzip, Prometheus 2's Accept header); VmRSS of both read every
#      second; CPU is utime+stime over the window's wall time, in % of one core.
#   2. latency, R rounds (300): each round scrapes each exporter twice (plain,
#      then gzip with Prometheus's headers) and asks memtrimd's /healthz once
#      (the same server with no body: what the busy machine alone costs),
#      each request a new curl and a new connection, memtrimd first in odd
#      rounds and process-exporter first in even ones, rounds 0.5 s apart.
#      p50/p99 are curl's time_total, nearest rank. memtrimd publishes a
#      snapshot per sample tick (10 s) and renders its page for the first
#      request that sees it; its requests are also reported split into those
#      first to see their snapshot (memtrimd_samples_total changed) and
#      those answered from the cached page.
#   3. the incident page, P loads (100): each load asks memtrimd for / (the
#      node's target table) and for the page of one JVM and of one glibc
#      program (/?pid=N), as a person following a table row does, 0.5 s
#      apart; memtrimd's CPU beyond its rate in the footprint window, per
#      load, and its VmRSS during the loads against the window's, which is
#      what an open page (reloading every 30 s) adds to the figures above.
# Series per target: the samples carrying a target's pid label (memtrimd) or
# group name (process-exporter) in the last plain scrape, by kind.
#
# Prints a markdown report on stdout (details on stderr). Needs curl, gzip,
# python3, prometheus-process-exporter and a JDK (openjdk-17-jdk-headless).
# Builds nothing (needs memtrimd, the workloads and the agent built in
# BUILD_DIR); stops everything it started, by pid, on any exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/exporter_lib.sh
. "$here/exporter_lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--seconds N] [--rounds R] [--page-loads P] [--jvms J] [--glibc G]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$1
shift
seconds=300
rounds=300
page_loads=100
n_jvm=20
n_glibc=180
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; seconds=$2; shift 2 ;;
    --rounds) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; rounds=$2; shift 2 ;;
    --page-loads) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; page_loads=$2; shift 2 ;;
    --jvms) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; n_jvm=$2; shift 2 ;;
    --glibc) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; n_glibc=$2; shift 2 ;;
    *) usage ;;
  esac
done
n_all=$((n_jvm + n_glibc))
((n_all >= 1)) || usage

# What Prometheus 2 sends with every scrape (scrape/scrape.go, acceptHeader).
prom_accept='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
scrape_interval=15

fragmenter=$build/tests/workloads/fragmenter
classes=$build/tests/workloads/java
agent=$build/collectors/agent/libmemtrimd_agent.so
for f in "$build/daemon/memtrimd" "$fragmenter" "$agent"; do
  [[ -e "$f" ]] || die "$f not found: build $build first"
done
((n_jvm == 0)) || [[ -f "$classes/GcLoop.class" ]] || die "$classes/GcLoop.class not found: build $build first"

find_jdks
((n_jvm == 0 || ${#jdks[@]} > 0)) || die "no JDK under /usr/lib/jvm (openjdk-17-jdk-headless)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_node_bench.XXXXXX")
cleanup() {
  # SIGTERM to everything at once (200 JVMs and programs stop in parallel),
  # then stop_tracked waits for each and SIGKILLs what is left.
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
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
marker="mtnode-$$-$RANDOM"
# The regexes match "<marker>-j12" or "<marker>-g7"; memtrimd's own command
# line carries the regex text, which the regex itself does not match.
id_regex="${marker}-(j|g)[0-9]+"

# running PID: the process exists and is not a zombie (an exited child that
# is not reaped yet still answers kill -0).
running() {
  local state
  state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n "$state" && "$state" != Z ]]
}

# Targets. kind_of[pid]: jvm, glibc or glibc+agent.
declare -A kind_of=()
opted_in=0
mkdir -p "$tmp/ready"
start_jvm() {
  local i=$1 java=${jdks[$(($1 % ${#jdks[@]}))]} pid
  local env=()
  ((i % 4 != 0)) || { env+=(MEMTRIMD_TRIM=1); opted_in=$((opted_in + 1)); }
  env "${env[@]}" "$java" "-Dmemtrimd.bench=${marker}-j$i" -Xmx64m -XX:NativeMemoryTracking=summary \
    -cp "$classes" GcLoop --ready-file "$tmp/ready/j$i" >"$tmp/j$i.log" 2>&1 &
  pid=$!
  track_pid "$pid"
  kind_of[$pid]=jvm
  echo "$pid j$i" >>"$tmp/targets"
}
start_glibc() {
  local i=$1 pid kind=glibc
  local env=()
  if ((i % 3 == 0)); then
    env+=("LD_PRELOAD=$agent" MEMTRIMD_TRIM=1)
    kind=glibc+agent
    opted_in=$((opted_in + 1))
  fi
  env "${env[@]}" "$fragmenter" --threads 2 --rounds 1 --burst-mib 4 --quiet \
    --tag "${marker}-g$i" --ready-file "$tmp/ready/g$i" >"$tmp/g$i.log" 2>&1 &
  pid=$!
  track_pid "$pid"
  kind_of[$pid]=$kind
  echo "$pid g$i" >>"$tmp/targets"
}
: >"$tmp/targets"
log "starting $n_jvm JVMs (${jdks[*]:-none}) and $n_glibc glibc programs, marker $marker"
for ((i = 0; i < n_jvm; i++)); do start_jvm "$i"; done
for ((i = 0; i < n_glibc; i++)); do start_glibc "$i"; done
deadline=$((SECONDS + 300))
while :; do
  ready=$(find "$tmp/ready" -type f ! -name '*.tmp' | wc -l)
  ((ready < n_all)) || break
  for p in "${!kind_of[@]}"; do
    running "$p" || die "target $p ($(grep "^$p " "$tmp/targets" | cut -d' ' -f2)) exited before it was ready"
  done
  ((SECONDS < deadline)) || die "only $ready of $n_all targets ready after 300 s"
  sleep 0.5
done
log "all $n_all targets ready"
targets_rss_kib=0
for p in "${!kind_of[@]}"; do
  targets_rss_kib=$((targets_rss_kib + $(status_kib "$p" VmRSS)))
done

start_memtrimd "$memtrimd" "$tmp/memtrimd.log" --targets=node "--targets.match=$id_regex" --targets.min-rss=0
md=$MEMTRIMD_PID
md_started=$SECONDS
cat >"$tmp/process-exporter.yml" <<EOF
process_names:
  - name: "{{.Matches.id}}"
    cmdline:
      - '${marker}-(?P<id>[jg][0-9]+)( |\$)'
EOF
# Ready when it has one group of one process for every target.
pe_tracks_all() {
  [[ "$(awk '/^namedprocess_namegroup_num_procs\{/ { n++; if ($2 == 1) one++ }
             END { printf "%d %d", n, one }' "$1")" == "$n_all $n_all" ]]
}
PE_READY_SECONDS=60 launch_process_exporter "$tmp" pe_tracks_all
pe=$PE_PID
log "memtrimd: pid $md port $MEMTRIMD_PORT; process-exporter: pid $pe port $PE_PORT"

md_url="http://127.0.0.1:$MEMTRIMD_PORT/metrics"
hz_url="http://127.0.0.1:$MEMTRIMD_PORT/healthz"
pe_url="http://127.0.0.1:$PE_PORT/metrics"

# memtrimd is ready when it watches every target and has sampled each (up 1).
md_ready() {
  curl -fsS --max-time 10 -o "$tmp/md.metrics" "$md_url" || return 1
  local watched up
  watched=$(metric_value "$tmp/md.metrics" memtrimd_targets_watched)
  up=$(grep -c '^memtrimd_target_up{.*} 1$' "$tmp/md.metrics" || true)
  log "$(date -u +%T) memtrimd_targets_watched ${watched:-absent}, target_up 1: $up"
  [[ -n "$watched" ]] && ((${watched%.*} >= n_all && up >= n_all))
}
deadline=$((SECONDS + 240))
until md_ready; do
  kill -0 "$md" 2>/dev/null || { cat "$tmp/memtrimd.log" >&2; die "memtrimd exited"; }
  ((SECONDS < deadline)) || { tail -20 "$tmp/memtrimd.log" >&2; die "memtrimd did not watch all $n_all targets within 240 s"; }
  sleep 2 &
  track_pid $!
  wait $! || true
  untrack_pid $!
done
start_wait_s=$((SECONDS - md_started))

# scrape NAME URL MODE: one scrape with a new connection; MODE plain or prom
# (gzip and Prometheus's Accept header). Appends "seconds bytes gzip" to
# $tmp/NAME.MODE; the body is kept in $tmp/NAME.MODE.body.
scrape() {
  local name=$1 url=$2 mode=$3 out code rest enc
  local args=(-sS --max-time 10 -o "$tmp/$name.$mode.body" -D "$tmp/$name.$mode.hdr"
    -w '%{http_code} %{time_total} %{size_download}')
  [[ $mode == plain ]] || args+=(-H 'Accept-Encoding: gzip' -H "Accept: $prom_accept")
  out=$(curl "${args[@]}" "$url") || die "$name scrape failed"
  code=${out%% *}
  rest=${out#* }
  [[ $code == 200 ]] || die "$name answered $code"
  enc=0
  grep -qi '^content-encoding: *gzip' "$tmp/$name.$mode.hdr" && enc=1
  echo "$rest $enc" >>"$tmp/$name.$mode"
  if [[ $name == memtrimd ]]; then
    # memtrimd_samples_total is the snapshot's sequence number: a request
    # that sees a new one was the first to, and rendered the page itself.
    local seq
    if ((enc)); then
      seq=$(gzip -dc <"$tmp/$name.$mode.body" | awk '$1 == "memtrimd_samples_total" { print $2 }')
    else
      seq=$(awk '$1 == "memtrimd_samples_total" { print $2 }' "$tmp/$name.$mode.body")
    fi
    echo "$mode ${seq:-?} $rest" >>"$tmp/memtrimd.order"
  fi
}

rss_max_md=0
rss_max_pe=0
read_rss() {
  local r
  r=$(status_kib "$md" VmRSS) || die "memtrimd exited"
  ((r > rss_max_md)) && rss_max_md=$r
  r=$(status_kib "$pe" VmRSS) || die "process-exporter exited"
  ((r > rss_max_pe)) && rss_max_pe=$r
  return 0
}
pause() {
  sleep "$1" &
  track_pid $!
  wait $! || true
  untrack_pid $!
}

# 1. Footprint.
read_rss
md_rss0=$rss_max_md
pe_rss0=$rss_max_pe
md_cpu0=$(cpu_ticks "$md")
pe_cpu0=$(cpu_ticks "$pe")
t0=$EPOCHREALTIME
end=$((SECONDS + seconds))
next_scrape=$SECONDS
window_start=$SECONDS
rss_by_minute=()
scrapes=0
log "footprint: $seconds s, both scraped every ${scrape_interval}s"
while ((SECONDS < end)); do
  if ((SECONDS >= next_scrape)); then
    scrape memtrimd "$md_url" window
    scrape pe "$pe_url" window
    scrapes=$((scrapes + 1))
    next_scrape=$((next_scrape + scrape_interval))
  fi
  read_rss
  if ((SECONDS - window_start >= 60 * (${#rss_by_minute[@]} + 1))); then
    rss_by_minute+=("$(status_kib "$md" VmRSS)")
    log "$(date -u +%T) memtrimd VmRSS max ${rss_max_md} KiB, CPU $(cpu_ticks "$md") ticks; process-exporter VmRSS max ${rss_max_pe} KiB, CPU $(cpu_ticks "$pe") ticks"
  fi
  pause 1
done
t1=$EPOCHREALTIME
md_cpu1=$(cpu_ticks "$md")
pe_cpu1=$(cpu_ticks "$pe")

# 2. Latency.
log "latency: $rounds rounds of 5 requests"
for ((r = 1; r <= rounds; r++)); do
  # memtrimd first in odd rounds; its gzip request before its plain one in
  # every other pair of rounds, so that both meet new snapshots first.
  if ((r % 4 < 2)); then md_modes=(plain prom); else md_modes=(prom plain); fi
  if ((r % 2)); then
    scrape memtrimd "$md_url" "${md_modes[0]}"
    scrape memtrimd "$md_url" "${md_modes[1]}"
    scrape healthz "$hz_url" plain
    scrape pe "$pe_url" plain
    scrape pe "$pe_url" prom
  else
    scrape pe "$pe_url" plain
    scrape pe "$pe_url" prom
    scrape memtrimd "$md_url" "${md_modes[0]}"
    scrape memtrimd "$md_url" "${md_modes[1]}"
    scrape healthz "$hz_url" plain
  fi
  read_rss
  ((r % 50)) || log "$(date -u +%T) round $r"
  pause 0.5
done
t2=$EPOCHREALTIME
md_cpu2=$(cpu_ticks "$md")
pe_cpu2=$(cpu_ticks "$pe")
read_rss

# 3. The incident page: the node's table, then one JVM's and one glibc
# program's page.
page_jvm=$(awk '$2 ~ /^j/ { print $1; exit }' "$tmp/targets")
page_glibc=$(awk '$2 ~ /^g/ { print $1; exit }' "$tmp/targets")
page_paths=("/")
[[ -z "$page_jvm" ]] || page_paths+=("/?pid=$page_jvm")
[[ -z "$page_glibc" ]] || page_paths+=("/?pid=$page_glibc")
rss_page_max=0
: >"$tmp/page.bytes"
log "incident page: $page_loads loads of ${page_paths[*]}"
page_cpu0=$(cpu_ticks "$md")
t3=$EPOCHREALTIME
for ((r = 1; r <= page_loads; r++)); do
  for path in "${page_paths[@]}"; do
    out=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code} %{size_download}' \
      "http://127.0.0.1:$MEMTRIMD_PORT$path") || die "memtrimd $path failed"
    [[ ${out%% *} == 200 ]] || die "memtrimd $path answered ${out%% *}"
    echo "$path ${out#* }" >>"$tmp/page.bytes"
  done
  r_kib=$(status_kib "$md" VmRSS) || die "memtrimd exited"
  ((r_kib > rss_page_max)) && rss_page_max=$r_kib
  pause 0.5
done
t4=$EPOCHREALTIME
page_cpu1=$(cpu_ticks "$md")
md_rss_end=$(status_kib "$md" VmRSS)
pe_rss_end=$(status_kib "$pe" VmRSS)
md_hwm=$(status_kib "$md" VmHWM)
pe_hwm=$(status_kib "$pe" VmHWM)
md_threads=$(awk '$1 == "Threads:" { print $2 }' "/proc/$md/status")
md_fds=$(find "/proc/$md/fd" -mindepth 1 -maxdepth 1 | wc -l)
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

cp "$tmp/memtrimd.plain.body" "$tmp/md.metrics"
cp "$tmp/pe.plain.body" "$tmp/pe.metrics"
if grep -qi '^content-encoding: *gzip' "$tmp/memtrimd.prom.hdr"; then
  gzip -t <"$tmp/memtrimd.prom.body" || die "memtrimd's gzip answer does not decompress"
fi
for p in "${!kind_of[@]}"; do echo "$p ${kind_of[$p]}"; done >"$tmp/kinds"

echo "### Node mode: $n_all targets, memtrimd vs prometheus-process-exporter (node_bench.sh)"
echo
machine_description
echo "- targets: $n_jvm JVMs (GcLoop, idle; -Xmx64m, NMT summary; JDKs: ${jdks[*]:-none}) and $n_glibc glibc programs (fragmenter --threads 2 --rounds 1 --burst-mib 4; every third with the agent preloaded); $opted_in with MEMTRIMD_TRIM=1; their VmRSS summed at start: $((targets_rss_kib / 1024)) MiB"
echo "- $(memtrimd_build "$tmp/md.metrics" "$memtrimd-daemon"); flags: --targets=node --targets.match='$id_regex' --targets.min-rss=0, the rest default"
echo "- process-exporter $("$PROCESS_EXPORTER" -version 2>&1 | head -1 | sed 's/.*revision: //; s/)$//'), default flags, one group per target: name \"{{.Matches.id}}\", cmdline '${marker}-(?P<id>[jg][0-9]+)( |\$)'"
echo "- memtrimd watched all targets and had sampled each ${start_wait_s} s after it started; footprint window ${seconds} s with $scrapes scrapes of each exporter (every ${scrape_interval} s, gzip + Prometheus Accept); then $rounds latency rounds"
echo "- load average at start: $load_start; at end: $load_end"
echo "- memtrimd VmRSS (KiB) at the start of the window and after each minute of it: $md_rss0 ${rss_by_minute[*]}"
echo "- memtrimd_trim_runs_total at the end, summed over targets (result/reason): $(awk '/^memtrimd_trim_runs_total\{/ {
    r = $0; sub(/.*result="/, "", r); sub(/".*/, "", r); q = $0; sub(/.*reason="/, "", q); sub(/".*/, "", q)
    n[r "/" q] += $NF } END { for (k in n) { printf "%s%s %d", s, k, n[k]; s = "; " } if (!s) printf "none" }' "$tmp/md.metrics")"
echo
python3 - "$tmp" "$hz" "$t0" "$t1" "$t2" "$rounds" \
  "$md_cpu0" "$md_cpu1" "$md_cpu2" "$md_rss0" "$rss_max_md" "$md_rss_end" "$md_hwm" \
  "$pe_cpu0" "$pe_cpu1" "$pe_cpu2" "$pe_rss0" "$rss_max_pe" "$pe_rss_end" "$pe_hwm" "$md_threads" "$md_fds" \
  "$t3" "$t4" "$page_loads" "$page_cpu0" "$page_cpu1" "$rss_page_max" <<'PY'
import collections, math, re, sys
a = sys.argv
t3, t4, page_loads = float(a[23]), float(a[24]), int(a[25])
page_c0, page_c1, rss_page_max = int(a[26]), int(a[27]), int(a[28])
tmp, hz = a[1], float(a[2])
t0, t1, t2 = float(a[3]), float(a[4]), float(a[5])
rounds = int(a[6])
md_c0, md_c1, md_c2 = (int(x) for x in a[7:10])
md_rss0, md_rss_max, md_rss_end, md_hwm = (int(x) for x in a[10:14])
pe_c0, pe_c1, pe_c2 = (int(x) for x in a[14:17])
pe_rss0, pe_rss_max, pe_rss_end, pe_hwm = (int(x) for x in a[17:21])
md_threads, md_fds = a[21], a[22]

def pct(v, p):
    v = sorted(v)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]

def series(name, mode):
    rows = [l.split() for l in open(f"{tmp}/{name}.{mode}")]
    return [float(r[0]) * 1000 for r in rows], [int(r[1]) for r in rows], [int(r[2]) for r in rows]

w1, w2 = t1 - t0, t2 - t1
def cpu_pct(c0, c1, secs):
    return (c1 - c0) / hz / secs * 100

print(f"Footprint window {w1:.0f} s at default intervals; latency phase {w2:.0f} s ({rounds} rounds).")
print()
print("| exporter | CPU % of one core (window) | CPU ms per scrape (latency phase, plain and gzip averaged) | VmRSS start / max / end KiB | VmHWM KiB |")
print("|---|---:|---:|---:|---:|")
for name, c0, c1, c2, r0, rmax, rend, hwm in (
        ("memtrimd", md_c0, md_c1, md_c2, md_rss0, md_rss_max, md_rss_end, md_hwm),
        ("process-exporter", pe_c0, pe_c1, pe_c2, pe_rss0, pe_rss_max, pe_rss_end, pe_hwm)):
    background = (c1 - c0) / w1  # ticks per second without extra scrapes
    per_scrape = ((c2 - c1) - background * w2) / hz * 1000 / (2 * rounds)
    print(f"| {name} | {cpu_pct(c0, c1, w1):.2f} | {per_scrape:.1f} | {r0} / {rmax} / {rend} | {hwm} |")
print()
print("| request | n | p50 ms | p99 ms | max ms | bytes (median) | answered gzip |")
print("|---|---:|---:|---:|---:|---:|---:|")
lat = {}
for name, mode, label in (
        ("memtrimd", "plain", "memtrimd /metrics, plain"),
        ("memtrimd", "prom", "memtrimd /metrics, gzip, Prometheus Accept"),
        ("healthz", "plain", "memtrimd /healthz (the machine's floor)"),
        ("pe", "plain", "process-exporter, plain"),
        ("pe", "prom", "process-exporter, gzip, Prometheus Accept"),
        ("memtrimd", "window", "memtrimd, gzip, every 15 s in the footprint window"),
        ("pe", "window", "process-exporter, gzip, every 15 s in the footprint window")):
    ms, size, gz = series(name, mode)
    lat[(name, mode)] = ms
    print(f"| {label} | {len(ms)} | {pct(ms, 50):.2f} | {pct(ms, 99):.2f} | {max(ms):.2f} "
          f"| {sorted(size)[len(size) // 2]:,} | {sum(gz)}/{len(gz)} |")
print()

# memtrimd's requests split by whether they were the first to see their
# snapshot (and rendered, and for gzip compressed, the page) or not.
print("| memtrimd request | first to see its snapshot: n, p50 / p99 / max ms | answered from the cached page: n, p50 / p99 / max ms |")
print("|---|---:|---:|")
split = collections.defaultdict(lambda: ([], []))
prev = None
for line in open(f"{tmp}/memtrimd.order"):
    mode, seq, secs = line.split()[:3]
    split[mode][0 if seq != prev else 1].append(float(secs) * 1000)
    prev = seq
def cell(v):
    return f"{len(v)}, {pct(v, 50):.2f} / {pct(v, 99):.2f} / {max(v):.2f}" if v else "0"
for mode, label in (("plain", "plain, latency rounds"), ("prom", "gzip, latency rounds"),
                    ("window", "gzip, every 15 s in the footprint window")):
    fresh, cached = split[mode]
    print(f"| {label} | {cell(fresh)} | {cell(cached)} |")
print()

# Series per target.
kinds = dict(l.split() for l in open(f"{tmp}/kinds"))
info = {}
per_pid = collections.Counter()
other = 0
pid_re = re.compile(r'[{,]pid="(\d+)"')
for line in open(f"{tmp}/md.metrics"):
    if line.startswith("#") or not line.strip():
        continue
    m = pid_re.search(line)
    if not m:
        other += 1
        continue
    per_pid[m.group(1)] += 1
    if line.startswith("memtrimd_target_info{"):
        r = re.search(r'runtime="([^"]*)"', line)
        info[m.group(1)] = r.group(1) if r else "?"
by_kind = collections.defaultdict(list)
runtimes = collections.defaultdict(collections.Counter)
for pid, kind in kinds.items():
    by_kind[kind].append(per_pid.get(pid, 0))
    runtimes[kind][info.get(pid, "absent")] += 1
strangers = [p for p in per_pid if p not in kinds]
pe_other = 0
pe_kind_series = collections.defaultdict(list)
pe_per_group = collections.Counter()
for line in open(f"{tmp}/pe.metrics"):
    if line.startswith("#") or not line.strip():
        continue
    m = re.search(r'groupname="([^"]*)"', line)
    if not m:
        pe_other += 1
        continue
    pe_per_group[m.group(1)] += 1
targets = {l.split()[1]: l.split()[0] for l in open(f"{tmp}/targets")}
for gid, n in pe_per_group.items():
    kind = kinds.get(targets.get(gid, ""), "?")
    pe_kind_series[kind].append(n)
print("| target kind | targets | memtrimd runtime label | memtrimd series per target, min / median / max | process-exporter series per target, min / median / max |")
print("|---|---:|---|---:|---:|")
def mmm(v):
    if not v:
        return "-"
    v = sorted(v)
    return f"{v[0]} / {v[len(v) // 2]} / {v[-1]}"
for kind in ("jvm", "glibc", "glibc+agent"):
    if kind not in by_kind:
        continue
    rt = ", ".join(f"{k} x{n}" for k, n in sorted(runtimes[kind].items()))
    print(f"| {kind} | {len(by_kind[kind])} | {rt} | {mmm(by_kind[kind])} | {mmm(pe_kind_series[kind])} |")
md_total = sum(per_pid.values()) + other
pe_total = sum(pe_per_group.values()) + pe_other
print(f"| (not per target) | | | {other} | {pe_other} |")
print(f"| all series in one scrape | | | {md_total:,} | {pe_total:,} |")
print()
missed = [p for p, k in kinds.items() if per_pid.get(p, 0) == 0]
print(f"- memtrimd at the end: {md_threads} threads, {md_fds} open fds; targets without series: {len(missed)}"
      f"; series of pids that are not targets: {len(strangers)}")
rss_mib = md_rss_max / 1024
print(f"- memtrimd max VmRSS {md_rss_max} KiB = {rss_mib:.1f} MiB (target < 24 MiB: {'PASS' if rss_mib < 24 else 'FAIL'}); "
      f"process-exporter {pe_rss_max} KiB ({md_rss_max / pe_rss_max:.2f}x)")
c = cpu_pct(md_c0, md_c1, w1)
print(f"- memtrimd CPU {c:.2f} % of one core (target < 2 %: {'PASS' if c < 2 else 'FAIL'}); "
      f"process-exporter {cpu_pct(pe_c0, pe_c1, w1):.2f} %; memtrimd's CPU before the window (start-up, first discovery and samples): {md_c0 / hz:.1f} s")
# The incident page: CPU beyond the window's background rate, per load.
background = (md_c1 - md_c0) / w1
w4 = t4 - t3
page_ms = ((page_c1 - page_c0) - background * w4) / hz * 1000 / page_loads
sizes = collections.defaultdict(list)
for line in open(f"{tmp}/page.bytes"):
    path, size = line.split()
    sizes["/" if path == "/" else "/?pid=N"].append(int(size))
window_ms_per_30s = (md_c1 - md_c0) / hz * 1000 / w1 * 30
share = page_ms / window_ms_per_30s * 100 if window_ms_per_30s > 0 else float("nan")
print(f"- incident page: {page_loads} loads of / and {len(sizes['/?pid=N']) // max(1, page_loads)} target pages "
      f"(median bytes: / {sorted(sizes['/'])[len(sizes['/']) // 2]:,}"
      + (f", /?pid=N {sorted(sizes['/?pid=N'])[len(sizes['/?pid=N']) // 2]:,}" if sizes['/?pid=N'] else "")
      + f") in {w4:.0f} s: {page_ms:.2f} ms of memtrimd CPU per load beyond its window rate; "
      f"one load every 30 s adds {share:.1f} % to its window CPU "
      f"(target <= 5 %: {'PASS' if share <= 5 else 'FAIL'}); VmRSS max during the loads "
      f"{rss_page_max} KiB against {md_rss_max} KiB before "
      f"({(rss_page_max - md_rss_max) / md_rss_max * 100:+.1f} %)")
for mode, label in (("plain", "plain"), ("prom", "gzip")):
    p99 = pct(lat[("memtrimd", mode)], 99)
    print(f"- memtrimd /metrics p99, {label}: {p99:.2f} ms (target < 20 ms: {'PASS' if p99 < 20 else 'FAIL'}); "
          f"process-exporter {pct(lat[('pe', mode)], 99):.2f} ms")
PY
