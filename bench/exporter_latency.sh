#!/usr/bin/env bash
# exporter_latency.sh: /metrics latency and throughput of memtrimd and of
# prometheus-process-exporter, side by side in one run, both watching the same
# single target, measured with wrk.
#
#   bench/exporter_latency.sh BUILD_DIR [--duration SECONDS] [--rounds N]
#                             [--target jvm|glibc] [--no-close]
#                             [--client-threads N]
#
# Each round runs, back to back and in alternating order (memtrimd first in
# odd rounds, process-exporter first in even ones):
#   wrk -t1 -c1  -d${DURATION}s --latency URL      (one keep-alive connection)
#   wrk -t1 -c32 -d${DURATION}s --latency URL      (32 keep-alive connections)
# and, unless --no-close, the same two with -H 'Connection: close' (a new
# connection per request; wrk's latency then excludes the connect).
# Each round also runs the keep-alive pair against memtrimd's /healthz
# ("memtrimd-healthz"): the same server answering without a body, which is
# the floor this machine's HTTP path and wrk put under any /metrics figure.
#
# wrk shares the machine's cores with the server it measures. One wrk thread
# (an epoll loop) keeps 32 connections busy and drives memtrimd as hard as
# two do, but every further wrk thread is one more runnable thread competing
# with the server's, and the time a wrk thread waits for a core is counted in
# the latency of every response it has not read yet. --client-threads 2 shows
# it: on 2 cores, the same server's p99 at 32 connections is about twice as
# high (docs/benchmarks.md, section 6).
# At 80 % of every wrk run `ss` counts the server's established connections and
# those it has sent anything on, so a server that leaves connections waiting
# shows up: wrk's percentiles only cover requests that were answered.
#
# memtrimd runs with its default intervals, process-exporter with its default
# flags; neither is scraped by anything else. The table gives the median over
# rounds of p50, p99 and requests/s, the smallest count of answered
# connections, and wrk's socket errors summed over rounds.
#
# Needs wrk, curl, ss and prometheus-process-exporter (Debian packages); for
# the jvm target OpenJDK 17. Builds nothing; stops everything it started, by
# pid, on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
# shellcheck source=bench/exporter_lib.sh
. "$here/exporter_lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--duration SECONDS] [--rounds N] [--target jvm|glibc] [--no-close] [--client-threads N]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$1
shift
duration=10
rounds=3
kind=jvm
modes=(keep-alive close)
client_threads=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --duration) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 2 ]] || usage; duration=$2; shift 2 ;;
    --rounds) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 ]] || usage; rounds=$2; shift 2 ;;
    --target) [[ $# -ge 2 && "$2" =~ ^(jvm|glibc)$ ]] || usage; kind=$2; shift 2 ;;
    --no-close) modes=(keep-alive); shift ;;
    --client-threads) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ && "$2" -le 32 ]] || usage; client_threads=$2; shift 2 ;;
    *) usage ;;
  esac
done

memtrimd=$build/daemon/memtrimd
[[ -x "$memtrimd" ]] || die "$memtrimd not found: build $build first"
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v ss >/dev/null || die "ss not found (iproute2)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_exporter_latency.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
memtrimd=$(snapshot_memtrimd "$build" "$tmp")

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tag="mtbench-$$-$RANDOM"
start_target "$kind" "$build" "$tmp" "$tag"
log "target: pid $TARGET_PID, $TARGET_DESC"
start_memtrimd "$memtrimd" "$tmp/memtrimd.log" --target.pid "$TARGET_PID"
start_process_exporter "$tmp" "$tag"
log "memtrimd: pid $MEMTRIMD_PID port $MEMTRIMD_PORT; process-exporter: pid $PE_PID port $PE_PORT group $PE_GROUP"

# Let memtrimd's first sample (and, for a JVM, its first diagnostic commands)
# land, so the exposition has its production size.
sleep 5
curl -fsS --max-time 10 -o "$tmp/md.metrics" "http://127.0.0.1:$MEMTRIMD_PORT/metrics"
curl -fsS --max-time 10 -o "$tmp/pe.metrics" "http://127.0.0.1:$PE_PORT/metrics"
[[ "$(metric_value "$tmp/md.metrics" memtrimd_target_up)" == "1" ]] || die "memtrimd does not see the target"
grep -q "^memtrimd_target_info{.*pid=\"$TARGET_PID\"" "$tmp/md.metrics" || die "memtrimd watches another pid"
read -r pe_groups pe_procs < <(pe_num_procs "$tmp/pe.metrics")
[[ "$pe_groups $pe_procs" == "1 1" ]] || die "process-exporter tracks $pe_groups groups, num_procs $pe_procs (want 1 1)"
md_bytes=$(wc -c <"$tmp/md.metrics")
pe_bytes=$(wc -c <"$tmp/pe.metrics")
md_series=$(grep -vc '^#' "$tmp/md.metrics" || true)
pe_series=$(grep -vc '^#' "$tmp/pe.metrics" || true)

# wrk's "50%  92.00us" / "2.00ms" / "1.20s" -> microseconds.
to_us() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
    else if (v ~ /m$/) { sub(/m$/, "", v); print v * 60e6 }
    else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1e6 }
    else print "nan" }'
}

# run_wrk NAME PORT CONNS MODE ROUND [PATH]: one wrk run; appends a line
# "name conns mode round p50_us p99_us rps requests established answered errors"
# to $tmp/runs.
run_wrk() {
  local name=$1 port=$2 conns=$3 mode=$4 round=$5 path=${6:-/metrics} threads=$client_threads out wpid conn_est conn_ans
  local hdr=()
  ((threads > conns)) && threads=$conns
  [[ "$mode" == close ]] && hdr=(-H 'Connection: close')
  out=$tmp/wrk.$name.$conns.$mode.$round
  wrk -t"$threads" -c"$conns" -d"${duration}s" --latency "${hdr[@]}" \
    "http://127.0.0.1:$port$path" >"$out" 2>&1 &
  wpid=$!
  track_pid "$wpid"
  sleep "$(awk -v d="$duration" 'BEGIN { print d * 0.8 }')"
  read -r conn_est conn_ans < <(served_connections "$port")
  wait "$wpid" || {
    untrack_pid "$wpid"
    cat "$out" >&2
    die "wrk failed"
  }
  untrack_pid "$wpid"
  cat "$out" >&2
  local p50 p99 rps reqs errs
  p50=$(to_us "$(awk '$1 == "50%" { print $2 }' "$out")")
  p99=$(to_us "$(awk '$1 == "99%" { print $2 }' "$out")")
  rps=$(awk '$1 == "Requests/sec:" { print $2 }' "$out")
  reqs=$(awk '/requests in/ { print $1 }' "$out")
  # "Socket errors: connect 0, read 0, write 0, timeout 12" -> "0/0/0/12"
  errs=$(awk '/Socket errors:/ { gsub(",", ""); print $4 "/" $6 "/" $8 "/" $10; f = 1 } END { if (!f) print "0/0/0/0" }' "$out")
  echo "$name $conns $mode $round $p50 $p99 $rps $reqs $conn_est $conn_ans $errs" >>"$tmp/runs"
}

: >"$tmp/runs"
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2 == 1)); then order=(memtrimd process-exporter); else order=(process-exporter memtrimd); fi
  for mode in "${modes[@]}"; do
    for conns in 1 32; do
      for name in "${order[@]}"; do
        port=$MEMTRIMD_PORT
        [[ "$name" == process-exporter ]] && port=$PE_PORT
        log "== round $r: $name, $conns connections, $mode"
        run_wrk "$name" "$port" "$conns" "$mode" "$r"
      done
    done
  done
  for conns in 1 32; do
    log "== round $r: memtrimd /healthz, $conns connections, keep-alive"
    run_wrk memtrimd-healthz "$MEMTRIMD_PORT" "$conns" keep-alive "$r" /healthz
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Both still watching the target at the end?
curl -fsS --max-time 10 -o "$tmp/pe.metrics" "http://127.0.0.1:$PE_PORT/metrics"
read -r pe_groups pe_procs < <(pe_num_procs "$tmp/pe.metrics")
[[ "$pe_groups $pe_procs" == "1 1" ]] || die "process-exporter lost the target (groups $pe_groups, num_procs $pe_procs)"

echo "### /metrics latency: memtrimd vs prometheus-process-exporter (exporter_latency.sh)"
echo
machine_description
echo "- target: pid $TARGET_PID, $TARGET_DESC; both exporters watch only it (process-exporter: group \"$PE_GROUP\", num_procs 1)"
echo "- $(memtrimd_build "$tmp/md.metrics" "$memtrimd-daemon") with default intervals; process-exporter $("$PROCESS_EXPORTER" -version 2>&1 | head -1 | sed 's/.*revision: //; s/)$//') with default flags"
echo "- response body: memtrimd $md_bytes bytes ($md_series samples), process-exporter $pe_bytes bytes ($pe_series samples)"
echo "- $rounds rounds of ${duration}s wrk runs, exporters alternating; wrk threads: $client_threads (at most one per connection); load average at start: $load_start; at end: $load_end"
echo
echo "| exporter | connections | mode | p50 us | p99 us | requests/s | connections answered (min) | wrk socket errors connect/read/write/timeout |"
echo "|---|---:|---|---:|---:|---:|---:|---:|"
python3 - "$tmp/runs" "${modes[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
modes = sys.argv[2:]
def med(xs):
    return statistics.median(xs)
for mode in modes:
    for conns in ("1", "32"):
        for name in ("memtrimd", "process-exporter", "memtrimd-healthz"):
            sel = [r for r in rows if r[0] == name and r[1] == conns and r[2] == mode]
            if not sel:
                continue
            p50 = med([float(r[4]) for r in sel])
            p99 = med([float(r[5]) for r in sel])
            rps = med([float(r[6]) for r in sel])
            est = min(int(r[8]) for r in sel)
            ans = min(int(r[9]) for r in sel)
            errs = "/".join(str(sum(int(r[10].split("/")[i]) for r in sel)) for i in range(4))
            # With Connection: close the sockets come and go: nothing to count.
            answered = f"{ans} of {conns}" if mode == "keep-alive" else "-"
            print(f"| {name} | {conns} | {mode} | {p50:.0f} | {p99:.0f} | {rps:.0f} | {answered} | {errs} |")
print()
print("memtrimd-healthz is memtrimd's /healthz (a 3-byte body): the HTTP floor of the same server.")
for conns in ("1", "32"):
    def p99(name):
        sel = [float(r[5]) for r in rows if r[0] == name and r[1] == conns and r[2] == "keep-alive"]
        return med(sel) if sel else None
    m, h = p99("memtrimd"), p99("memtrimd-healthz")
    if m and h:
        print(f"At {conns} keep-alive connection(s), /metrics p99 is {m / h:.2f}x /healthz p99.")
PY
echo
echo "Per run (connections established / answered at 80 % of the run, keep-alive only):"
echo
echo "| round | exporter | connections | mode | p50 us | p99 us | requests/s | established / answered |"
echo "|---:|---|---:|---|---:|---:|---:|---|"
awk '{ c = ($3 == "keep-alive") ? $9 " / " $10 : "-"
       printf "| %s | %s | %s | %s | %.0f | %.0f | %.0f | %s |\n", $4, $1, $2, $3, $5, $6, $7, c }' "$tmp/runs"
