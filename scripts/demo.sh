#!/usr/bin/env bash
# The demo: installs dependencies, builds memtrimd, starts the bundled
# workload that fragments glibc arenas (with the trim agent preloaded), starts
# memtrimd against it, shows the metrics URL and an `inspect` table, then
# trims once and shows what came back. memtrimd keeps trimming on its
# schedule afterwards, and the demo prints each scheduled trim and each
# change of the interval (the schedule backs off while trims give nothing
# back). Ctrl-C stops everything it started.
#
# Usage: scripts/demo.sh [--skip-install] [--build-dir DIR] [--port N] [--seconds N]
#   --seconds N   stop by itself after N seconds (default: run until Ctrl-C)
set -euo pipefail
cd "$(dirname "$0")/.."

install=1
build_dir=build/release
port=8486
seconds=0
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-install) install=0 ;;
    --build-dir) build_dir="$2"; shift ;;
    --port) port="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    *) echo "demo: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ "$install" = 1 ]; then
  bash scripts/install-deps.sh
  cmake --preset release
  cmake --build --preset release -j "$(nproc)" --target memtrimd fragmenter memtrimd_agent
  build_dir=build/release
fi
memtrimd="$build_dir/daemon/memtrimd"
fragmenter="$build_dir/tests/workloads/fragmenter"
agent="$(cd "$build_dir/collectors/agent" && pwd)/libmemtrimd_agent.so"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "demo: stopping"; exit 0' INT TERM

# Polls a condition (a shell command) every 0.2 s for up to $1 seconds.
wait_for() {
  local limit=$1; shift
  local tries=$((limit * 5))
  while [ "$tries" -gt 0 ]; do
    if eval "$@"; then return 0; fi
    sleep 0.2
    tries=$((tries - 1))
  done
  return 1
}

echo "== starting the workload: 16 threads take turns allocating 32 MiB bursts of small"
echo "   chunks, free 98% of them and keep the rest. glibc keeps the freed memory."
echo "   (with LD_PRELOAD=libmemtrimd_agent.so, so memtrimd can make it trim)"
LD_PRELOAD="$agent" "$fragmenter" --ready-file "$work/ready" --tag demo &
pids+=($!)
frag_pid=$!
wait_for 60 "[ -f '$work/ready' ]" || { echo "demo: the workload did not get ready" >&2; exit 1; }

echo
echo "== starting memtrimd (it picks the workload by its command line)"
# The schedule's settings are spelled out (they are the defaults but for the
# interval) because the text below explains them.
"$memtrimd" --web.listen-address="127.0.0.1:$port" --target.match="fragmenter.*--tag demo" \
  --sample.interval=2s --smaps.interval=10s --trim.interval=1m --trim.floor=1MiB \
  --trim.unproductive-runs=3 --trim.max-interval=1h --trim.reset-growth=64MiB \
  2>"$work/memtrimd.log" &
pids+=($!)
url="http://127.0.0.1:$port/metrics"
if ! wait_for 20 "curl -sf '$url' 2>/dev/null | grep -q '^memtrimd_glibc_arena_heaps{'"; then
  cat "$work/memtrimd.log" >&2
  echo "demo: memtrimd did not come up" >&2
  exit 1
fi

echo
echo "Metrics: $url"
echo
curl -s "$url" | grep -E '^memtrimd_(target_up|target_resident_memory_bytes|glibc_arena_heap|glibc_main_arena|target_memory_limit)'
echo
echo "== memtrimd inspect --pid $frag_pid"
"$memtrimd" inspect --pid "$frag_pid"
echo
echo "== memtrimd trim --pid $frag_pid   (one trim now, measured from outside)"
"$memtrimd" trim --pid "$frag_pid"
echo
echo "memtrimd keeps sampling and trims on a schedule: every minute (+-10%) while"
echo "trims pay. After 3 trims in a row that give back less than 1 MiB each it"
echo "waits twice as long (2m, 4m, ... up to 1h), since a trim pauses the program's"
echo "threads on the arena it trims. This workload allocates only at its start and"
echo "the trim above took its free memory, so the next trims find little and the"
echo "interval grows. When the arena heaps grow by 64 MiB again it goes back to"
echo "every minute."
if [ "$seconds" -gt 0 ]; then
  echo "(stopping after $seconds s)"
  sleep "$seconds"
else
  echo "Each scheduled trim and each change of the interval follow, as memtrimd"
  echo "reports them on $url"
  echo "(also http://127.0.0.1:$port/report); press Ctrl-C to stop."
  # One series of the scrape: the value of NAME{pid="<the workload>"...}.
  value_of() {
    sed -n "s/^$1{pid=\"$frag_pid\"${2:-}} \([-0-9.e+]*\)\$/\1/p" <<<"$metrics" | head -n 1
  }
  whole() { awk -v v="$1" 'BEGIN { printf "%d", v }'; }
  last_at=""
  last_interval=""
  while kill -0 "$frag_pid" 2>/dev/null; do
    metrics=$(curl -s --max-time 2 "$url" || true)
    at=$(value_of memtrimd_trim_last_success_timestamp_seconds)
    interval=$(value_of memtrimd_trim_interval_seconds)
    if [ -n "$at" ] && [ "$at" != "$last_at" ]; then
      gave=$(value_of memtrimd_trim_last_reclaimed_bytes ',measure="rss_swap"')
      printf '%s  scheduled trim: gave back %s MiB\n' "$(date -u -d "@$(whole "$at")" +%T)" \
        "$(awk -v b="${gave:-0}" 'BEGIN { printf "%.1f", b / 1048576 }')"
      last_at=$at
    fi
    if [ -n "$interval" ] && [ "$interval" != "$last_interval" ]; then
      if [ -n "$last_interval" ] && awk -v a="$interval" -v b="$last_interval" 'BEGIN { exit !(a > b) }'; then
        echo "          backing off: 3 trims in a row gave back under 1 MiB; next trims every $(whole "$interval") s"
      elif [ -n "$last_interval" ]; then
        echo "          the arena heaps grew by 64 MiB: back to every $(whole "$interval") s"
      fi
      last_interval=$interval
    fi
    sleep 2
  done
fi
