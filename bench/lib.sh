# shellcheck shell=bash
# Shell helpers for the benchmark drivers (sourced, not run).
#
# Every process a driver starts is recorded with track_pid and stopped by pid
# in stop_tracked (SIGTERM, then SIGKILL after a grace period), which the
# drivers call from their EXIT trap.

BENCH_PIDS=()

log() { printf '%s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

track_pid() { BENCH_PIDS+=("$1"); }

untrack_pid() {
  local keep=() p
  for p in "${BENCH_PIDS[@]}"; do
    [[ "$p" == "$1" ]] || keep+=("$p")
  done
  BENCH_PIDS=("${keep[@]}")
}

# run_tracked CMD...: runs CMD in the background and waits for it, so a
# signal to this script is handled at once (bash defers traps while a
# foreground child runs) and the EXIT trap can stop CMD by pid. Returns CMD's
# exit status.
run_tracked() {
  local pid rc=0
  "$@" &
  pid=$!
  track_pid "$pid"
  wait "$pid" || rc=$?
  untrack_pid "$pid"
  return "$rc"
}

# Stops one pid: SIGTERM, up to 10 s (a driver script needs a moment to stop
# its own children), then SIGKILL. Reaps it if it is our child.
stop_pid() {
  local pid=$1 i
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || {
    wait "$pid" 2>/dev/null || true
    return 0
  }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    # A zombie child still answers kill -0; wait reaps it.
    if [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == "Z" ]]; then break; fi
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != "Z" ]]; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# Stops everything track_pid recorded, newest first.
stop_tracked() {
  local i
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do
    stop_pid "${BENCH_PIDS[$i]}"
  done
  BENCH_PIDS=()
}

# find_jdks: sets the array jdks to every JDK's java under /usr/lib/jvm, once
# each (the Debian names are symlinks to the same few).
find_jdks() {
  local d real
  local -A seen=()
  jdks=()
  for d in /usr/lib/jvm/*/; do
    [[ -x "$d/bin/java" ]] || continue
    real=$(readlink -f "$d/bin/java")
    [[ -z "${seen[$real]:-}" ]] || continue
    seen[$real]=1
    jdks+=("$real")
  done
}

# wait_for_file PATH PID SECONDS: polls until PATH exists; fails if PID exits
# first or the deadline passes.
wait_for_file() {
  local path=$1 pid=$2 secs=$3
  local deadline=$((SECONDS + secs))
  while [[ ! -e "$path" ]]; do
    kill -0 "$pid" 2>/dev/null || die "process $pid exited before writing $path"
    ((SECONDS < deadline)) || die "no $path after ${secs}s"
    sleep 0.05
  done
}

# A TCP port on 127.0.0.1 that nothing listens on right now (start_memtrimd
# retries if another process takes it first).
free_port() {
  local port used
  used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 40000))
    grep -qx "$port" <<<"$used" || {
      echo "$port"
      return 0
    }
  done
  return 1
}

# start_memtrimd MEMTRIMD LOGFILE ARGS...: starts memtrimd on a free
# 127.0.0.1 port and waits until /healthz answers 200. Sets MEMTRIMD_PID and
# MEMTRIMD_PORT (and tracks the pid).
start_memtrimd() {
  local bin=$1 logfile=$2
  shift 2
  local attempt port pid deadline
  # shellcheck disable=SC2034  # results for the caller
  for attempt in 1 2 3 4 5; do
    port=$(free_port) || die "no free port found"
    "$bin" --web.listen-address "127.0.0.1:$port" "$@" >"$logfile" 2>&1 &
    pid=$!
    track_pid "$pid"
    deadline=$((SECONDS + 15))
    while ((SECONDS < deadline)); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null; then
        MEMTRIMD_PID=$pid
        MEMTRIMD_PORT=$port
        return 0
      fi
      sleep 0.05
    done
    stop_pid "$pid"
    if grep -qi 'cannot listen' "$logfile"; then
      log "port $port taken, retrying (attempt $attempt)"
      continue
    fi
    cat "$logfile" >&2
    die "memtrimd did not become healthy on port $port"
  done
  die "memtrimd could not listen after 5 attempts"
}

# metric_value FILE NAME: the value of the first unlabelled sample NAME (or of
# NAME{...} when it only has labelled ones), as printed in the exposition.
metric_value() {
  awk -v n="$2" '
    $1 == n { print $2; found = 1; exit }
    index($1, n "{") == 1 && !lab { lab = $NF }
    END { if (!found && lab != "") print lab }' "$1"
}

# Machine description for result tables.
machine_description() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  printf -- '- nproc: %s\n' "$(nproc)"
  printf -- '- CPU: %s\n' "${cpu:-unknown}"
  printf -- '- kernel: %s\n' "$(uname -sr)"
  printf -- '- date: %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
}
