#!/usr/bin/env bash
# java_frames_overhead.sh: what the Java frames of the allocation sampler
# cost a JVM, beside what sampling without them costs, against the same JVM
# with the agent preloaded and sampling never on, measured in the same run:
#
#   off           the agent preloaded (LD_PRELOAD), sampling never turned on
#   native        sampling on at the default 512 KiB and the default budget
#                 of --max-rate samples a second, native frames only
#                 ("sampling on 524288 max_rate=10000 java=0")
#   java          the same with Java frames ("java=1", memtrimd's default:
#                 the JVMTI setup at "on", an AsyncGetCallTrace walk per
#                 sample on a Java thread)
#   java_unbounded  Java frames without a budget (max_rate=0): the cost per
#                 sample the budget otherwise caps
#
# The program is bench/DeflaterRounds.java (compiled here with the JDK's
# javac): --threads threads doing nothing but Deflater rounds (about 256 KiB
# of zlib state malloc'd and freed each) and a 64 KiB direct buffer every
# 16th round, --depth Java frames deep: a worst case, every thread always
# allocating. Each variant runs --reps times, interleaved, on every JDK
# under /usr/lib/jvm; the median rounds a second is reported, with the
# loss against "off" and, for the sampled variants, the samples a second
# and the Java walks (the agent's "sites" halfway through the run).
#
#   bench/java_frames_overhead.sh BUILD_DIR [--seconds N] [--reps N]
#                                 [--threads N] [--depth N] [--max-rate N]
#
# About 4 minutes with the defaults (10 s runs, 3 reps, two JDKs).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--seconds N] [--reps N] [--threads N] [--depth N] [--max-rate N]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$(cd "$1" && pwd)
shift
seconds=10
reps=3
threads=2
depth=20
max_rate=10000
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || usage
  case $1 in
    --seconds) seconds=$2 ;;
    --reps) reps=$2 ;;
    --threads) threads=$2 ;;
    --depth) depth=$2 ;;
    --max-rate) max_rate=$2 ;;
    *) usage ;;
  esac
  shift 2
done
((seconds >= 2 && reps >= 1 && threads >= 1)) || usage

agent=$build/collectors/agent/libmemtrimd_agent.so
[[ -f $agent ]] || die "no $agent: build first"
period=524288
variants=(off native java java_unbounded)

BENCH_PIDS=()
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_java_frames.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

# ask SOCKET LINE: one request to the agent (bench/agent_ask.py); prints
# the answer's body, or fails with the agent's reason.
ask() {
  python3 - "$here" "$1" "$2" << 'PY'
import sys
sys.path.insert(0, sys.argv[1])
from agent_ask import ask
sys.stdout.write(ask(sys.argv[2], sys.argv[3]))
PY
}

option_of() {
  case $1 in
    native) echo "max_rate=$max_rate java=0" ;;
    java) echo "max_rate=$max_rate java=1" ;;
    java_unbounded) echo "max_rate=0 java=1" ;;
  esac
}

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# What the sampler did by halfway: samples a second since "on" and the
# Java walks (those that found frames, and all).
sampler_note() { # SOCKET
  ask "$1" sites | awk -F= -v now="$(awk '{print $1}' /proc/uptime)" '
    /^samples=/ {n = $2} /^started_ns=/ {s = $2} /^period=/ {p = $2}
    /^java_walks=/ {w = $2} /^java_walks_empty=/ {e = $2}
    END { printf "period %d KiB, %.0f samples/s, %d Java walks (%d empty)", p / 1024, n / (now - s / 1e9), w, e }'
}

find_jdks
((${#jdks[@]} > 0)) || die "no JDK under /usr/lib/jvm"
machine_description >&2

for java in "${jdks[@]}"; do
  home=$(dirname "$(dirname "$java")")
  name=$(basename "$home")
  classes=$tmp/classes.$name
  mkdir -p "$classes"
  "$home/bin/javac" -d "$classes" "$here/DeflaterRounds.java" || die "javac ($name) failed"
  declare -A rounds=()
  for ((rep = 1; rep <= reps; rep++)); do
    for v in "${variants[@]}"; do
      rm -f "$tmp/ready" "$tmp/go"
      LD_PRELOAD=$agent MEMTRIMD_AGENT_SOCKET="$tmp/agent.%p.sock" \
        "$java" -Xmx256m -cp "$classes" DeflaterRounds --threads "$threads" --seconds "$seconds" \
        --depth "$depth" --go-file "$tmp/go" --ready-file "$tmp/ready" > "$tmp/out" 2> "$tmp/err" &
      pid=$!
      track_pid "$pid"
      wait_for_file "$tmp/ready" "$pid" 120
      sock=$tmp/agent.$pid.sock
      wait_for_file "$sock" "$pid" 30
      if [[ $v != off ]]; then
        # The timed part starts once sampling (and the Java setup) is on.
        ask "$sock" "sampling on $period $(option_of "$v")" > /dev/null
      fi
      touch "$tmp/go"
      sleep $((seconds / 2))
      [[ $v == off ]] || log "$name $v rep $rep: $(sampler_note "$sock")"
      wait "$pid" || die "DeflaterRounds ($name, $v) failed: $(cat "$tmp/err")"
      untrack_pid "$pid"
      r=$(sed -n 's/^rounds_per_second=//p' "$tmp/out")
      [[ -n $r ]] || die "no rounds_per_second from DeflaterRounds ($name, $v)"
      log "$name $v rep $rep: $r rounds/s"
      rounds[$v]+="$r "
    done
  done
  echo
  echo "$name: $threads threads, $depth Java frames deep, ${seconds} s runs, median of $reps"
  echo
  echo "| variant | rounds per second | loss against off |"
  echo "|---|---:|---:|"
  base=$(tr ' ' '\n' <<< "${rounds[off]}" | grep . | median)
  for v in "${variants[@]}"; do
    m=$(tr ' ' '\n' <<< "${rounds[$v]}" | grep . | median)
    if [[ $v == off ]]; then
      echo "| $v | $m | - |"
    else
      echo "| $v | $m | $(awk -v b="$base" -v m="$m" 'BEGIN {printf "%.1f %%", (b - m) * 100 / b}') |"
    fi
  done
  unset rounds
done
