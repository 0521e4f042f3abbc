#!/usr/bin/env bash
# stuck_read.sh: how stale do innocent targets get beside a target whose
# reads take seconds, or never end?
#
#   bench/stuck_read.sh DAEMON_DIR WORKLOAD_DIR [--delay-ms LIST] [--seconds N]
#
# DAEMON_DIR holds memtrimd and memtrimd-daemon (e.g. build/dev/daemon, or
# an older build's to compare); WORKLOAD_DIR holds the test workloads
# fragmenter and stuck_fuse (e.g. build/dev/tests/workloads). Needs root
# (stuck_fuse mounts a FUSE filesystem with mount(2)) and /dev/fuse.
#
# For each delay in --delay-ms (comma separated; default 3000,-1: every
# lookup answered after 3 s, and never), one round: stuck_fuse serves an
# empty directory whose lookups wait that long; a fragmenter runs in a mount
# namespace of its own with that directory on /sys/fs/cgroup (memtrimd's
# cgroup reads of it look up paths there, as they would on a hung network
# filesystem), a second fragmenter beside it is the innocent target; memtrimd
# watches both in node mode with a 1 s sample interval. For --seconds (30)
# the script scrapes /healthz and /metrics every 0.5 s (curl --max-time 1)
# and prints: scrapes answered, the largest memtrimd_sample_age_seconds seen
# (the innocent target's figures are as old as the sample), /healthz answers
# that were 200, and then whether SIGTERM ended memtrimd within 10 s. A
# round whose memtrimd never answers prints its log's tail. Everything it
# started is stopped by pid, and the mount undone, on exit.
set -uo pipefail
daemon_dir=$(cd "$1" && pwd)
work_dir=$(cd "$2" && pwd)
shift 2
delays=3000,-1
seconds=30
while [ $# -gt 0 ]; do
  case "$1" in
    --delay-ms) delays=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "stuck_read.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "stuck_read.sh: needs root" >&2; exit 2; }
[ -e /dev/fuse ] || { echo "stuck_read.sh: no /dev/fuse" >&2; exit 2; }

tmp=$(mktemp -d /tmp/stuck-read.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  umount -l "$tmp/mnt" 2>/dev/null
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

wait_file() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

printf '%-10s %-9s %-16s %-9s %s\n' delay_ms answered max_sample_age_s healthz sigterm
IFS=, read -r -a list <<<"$delays"
for delay in "${list[@]}"; do
  round=$tmp/r$delay
  mkdir -p "$round/mnt"
  "$work_dir/stuck_fuse" "$round/mnt" "$round/fuse.ready" "$delay" 2>"$round/fuse.err" &
  fuse=$!; pids+=("$fuse")
  wait_file "$round/fuse.ready" || { echo "stuck_fuse did not start"; cat "$round/fuse.err"; exit 1; }
  frag=(--threads 2 --rounds 1 --burst-mib 8 --keep-permille 1000 --quiet)
  unshare --mount --propagation private -- sh -c \
    "mount --bind '$round/mnt' /sys/fs/cgroup && exec '$work_dir/fragmenter' ${frag[*]} --ready-file '$round/victim.ready'" &
  pids+=("$!")
  "$work_dir/fragmenter" "${frag[@]}" --ready-file "$round/innocent.ready" &
  pids+=("$!")
  wait_file "$round/victim.ready" && wait_file "$round/innocent.ready" || { echo "workloads did not start"; exit 1; }
  "$daemon_dir/memtrimd" --targets=node --targets.match="fragmenter.*$round" --targets.min-rss=0 \
    --sample.interval=1s --trim.interval=0 --web.listen-address=127.0.0.1:0 >"$round/log" 2>&1 &
  m=$!; pids+=("$m")
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*msg="memtrimd started".* ports=\([0-9]*\).*/\1/p' "$round/log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  answered=0 healthy=0 max_age=0 tries=0
  end=$((SECONDS + seconds))
  while [ $SECONDS -lt $end ] && [ -n "$port" ]; do
    tries=$((tries + 1))
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/healthz")
    [ "$code" = 200 ] && healthy=$((healthy + 1))
    age=$(curl -s --max-time 1 "http://127.0.0.1:$port/metrics" | sed -n 's/^memtrimd_sample_age_seconds \(.*\)/\1/p')
    if [ -n "$age" ]; then
      answered=$((answered + 1))
      max_age=$(python3 -c "print(max($max_age, $age))")
    fi
    sleep 0.5
  done
  kill -TERM "$m"
  stopped=no
  for _ in $(seq 100); do if ! kill -0 "$m" 2>/dev/null || grep -q 'msg=stopped' "$round/log"; then stopped=yes; break; fi; sleep 0.1; done
  [ -z "$port" ] && { answered="never"; stopped="$stopped (no port)"; }
  printf '%-10s %-9s %-16s %-9s %s\n' "$delay" "$answered/$tries" "$max_age" "$healthy/$tries" "$stopped"
  [ -z "$port" ] || [ "$answered" = 0 ] && tail -3 "$round/log"
  kill -KILL "$m" "$fuse" 2>/dev/null
  umount -l "$round/mnt" 2>/dev/null
done
