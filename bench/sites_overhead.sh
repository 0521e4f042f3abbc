#!/usr/bin/env bash
# sites_overhead.sh: what the agent's allocation sampler costs a program,
# against the anchors measured in the same run on the same machine:
#
#   off           the agent preloaded, sampling never turned on (what every
#                 preloaded program runs today)
#   on            the same, sampling turned on at the default mean of 512 KiB
#                 and the default budget of --max-rate samples a second
#                 ("sampling on 524288 max_rate=10000" to the agent's socket,
#                 what memtrimd --collector.sites sends) right when the timed
#                 part starts
#   unbounded     the same without a budget ("max_rate=0": the period stays
#                 at 512 KiB whatever the program allocates)
#   jemalloc      libjemalloc.so.2 preloaded, no profiling
#   jemalloc_prof the same with MALLOC_CONF=prof:true,lg_prof_sample:19 (its
#                 own sampler at the same mean, 2^19 = 512 KiB)
#   heaptrack     heaptrack 1.4 recording every call (not a sampler)
#
# on two programs: malloc_churn (bench/malloc_churn.c: --churn-threads
# threads, 4 by default, doing nothing but malloc/free of blocks of 16 B to
# 64 KiB, uniform: many bytes a second in few calls, the worst case for a
# sampler by bytes) and, unless --no-mariadb, mariadbd under sysbench oltp_read_write
# (a real server; 2 client threads). Each variant runs --reps times,
# interleaved, and the median is reported, with the target's VmRSS at the
# end of the run (the sampler's tables are in it). Losses are against "off"
# (for "on", "unbounded" and heaptrack) and against "jemalloc" (for
# jemalloc_prof). --variants picks some (e.g. "off on unbounded"); "off"
# is always run. The "on" runs also print the period the budget settled on
# and the samples a second it let through (the agent's "sites" at the end).
#
#   bench/sites_overhead.sh BUILD_DIR [--seconds N] [--reps N] [--no-mariadb]
#                           [--churn-threads N] [--max-rate N] [--variants "LIST"]
#
# Root is needed for mariadbd (--user=mysql). About 10 minutes with the
# defaults (20 s runs, 3 reps).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--seconds N] [--reps N] [--no-mariadb] [--churn-threads N]" \
    "[--max-rate N] [--variants LIST]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
build=$(cd "$1" && pwd)
shift
seconds=20
reps=3
mariadb=1
churn_threads=4
max_rate=10000
variants=(off on unbounded jemalloc jemalloc_prof heaptrack)
while [[ $# -gt 0 ]]; do
  case $1 in
    --churn-threads | --max-rate)
      [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || usage
      if [[ $1 == --churn-threads ]]; then churn_threads=$2; else max_rate=$2; fi
      shift 2
      ;;
    --variants)
      [[ $# -ge 2 ]] || usage
      read -r -a variants <<< "off ${2//off/}"
      shift 2
      ;;
    --seconds | --reps)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage
      if [[ $1 == --seconds ]]; then seconds=$2; else reps=$2; fi
      shift 2
      ;;
    --no-mariadb)
      mariadb=0
      shift
      ;;
    *) usage ;;
  esac
done

agent=$build/collectors/agent/libmemtrimd_agent.so
churn=$build/bench/malloc_churn
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
for f in "$agent" "$churn" "$jemalloc"; do
  [[ -e "$f" ]] || die "$f not found (build $build; scripts/install-deps.sh installs libjemalloc2)"
done
if [[ " ${variants[*]} " == *" heaptrack "* ]]; then
  command -v heaptrack > /dev/null || die "heaptrack is not installed (apt-get install heaptrack)"
fi
period=524288

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_sites_overhead.XXXXXX")
chmod 0755 "$tmp"
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

# agent_command SOCKET LINE: one request to the agent; prints the answer.
agent_command() {
  python3 - "$1" "$2" << 'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode(errors="replace"))
PY
}

# The environment and command prefix of a variant.
variant_env() {
  case $1 in
    off | on | unbounded) echo "LD_PRELOAD=$agent MEMTRIMD_AGENT_SOCKET=$tmp/agent.%p.sock" ;;
    jemalloc) echo "LD_PRELOAD=$jemalloc" ;;
    jemalloc_prof) echo "LD_PRELOAD=$jemalloc MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:19,prof_prefix:$tmp/jeprof" ;;
    heaptrack) echo "" ;;
  esac
}
variant_prefix() {
  case $1 in
    heaptrack) echo "heaptrack -o $tmp/heaptrack.$2" ;;
    *) echo "" ;;
  esac
}

# The pid of the program a variant started: heaptrack runs it as a child.
program_pid() {
  local launcher=$1 name=$2 p
  if [[ $(cat "/proc/$launcher/comm" 2> /dev/null) == "$name" ]]; then
    echo "$launcher"
    return
  fi
  for p in $(pgrep -P "$launcher"); do
    if [[ $(cat "/proc/$p/comm" 2> /dev/null) == "$name" ]]; then
      echo "$p"
      return
    fi
  done
}

turn_on() { # PID MAX_RATE
  local pid=$1 answer
  answer=$(agent_command "$tmp/agent.$pid.sock" "sampling on $period max_rate=$2") ||
    die "sampling on: no answer from the agent of $pid"
  [[ ${answer%%$'\n'*} == 0 ]] || die "sampling on refused: $answer"
}

# What the budget did: the period in force, how often it was raised, and the
# samples a second since "on".
budget_note() { # PID
  agent_command "$tmp/agent.$1.sock" sites | awk -F= -v now="$(awk '{print $1}' /proc/uptime)" '
    /^period=/ {p = $2} /^raised=/ {r = $2} /^samples=/ {n = $2} /^started_ns=/ {s = $2}
    END { printf "period %d KiB, raised %d times, %.0f samples/s", p / 1024, r, n / (now - s / 1e9) }'
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2> /dev/null || echo 0; }

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# --- malloc_churn ---------------------------------------------------------------
declare -A churn_ops churn_cpu churn_rss
for ((rep = 1; rep <= reps; rep++)); do
  for v in "${variants[@]}"; do
    rm -f "$tmp/ready" "$tmp/go"
    # shellcheck disable=SC2046,SC2086  # word splitting of the variant's words
    env $(variant_env "$v") $(variant_prefix "$v" "churn.$rep") "$churn" --threads "$churn_threads" \
      --max-size 65536 --uniform --seconds "$seconds" --ready-file "$tmp/ready" --go-file "$tmp/go" \
      > "$tmp/out" 2> "$tmp/err" &
    launcher=$!
    track_pid "$launcher"
    wait_for_file "$tmp/ready" "$launcher" 120
    pid=$(cat "$tmp/ready")
    # The timed part starts once sampling is on (the switch can take a
    # second while the program's threads keep both cores busy).
    [[ $v == on ]] && turn_on "$pid" "$max_rate"
    [[ $v == unbounded ]] && turn_on "$pid" 0
    touch "$tmp/go"
    sleep $((seconds / 2))
    rss=$(rss_kib "$pid")
    [[ $v == on || $v == unbounded ]] && log "churn $v rep $rep: $(budget_note "$pid")"
    wait "$launcher" || die "malloc_churn ($v) failed: $(cat "$tmp/err")"
    untrack_pid "$launcher"
    ops=$(sed -n 's/^ops_per_second=//p' "$tmp/out")
    cpu_ops=$(sed -n 's/^ops_per_cpu_second=//p' "$tmp/out")
    log "churn $v rep $rep: $ops ops/s, $cpu_ops per CPU second, VmRSS $rss KiB"
    churn_ops[$v]+="$ops "
    churn_cpu[$v]+="$cpu_ops "
    churn_rss[$v]+="$rss "
    rm -f "$tmp"/heaptrack.* "$tmp"/jeprof*
  done
done

# --- mariadbd under sysbench ------------------------------------------------------
declare -A db_tps db_rss
if ((mariadb)); then
  command -v mariadbd > /dev/null && command -v sysbench > /dev/null ||
    die "mariadb-server and sysbench are needed (or --no-mariadb)"
  [[ $(id -u) -eq 0 ]] || die "mariadbd --user=mysql needs root (or --no-mariadb)"
  data=$tmp/data
  # mariadbd drops to mysql before it binds its socket: a directory of its own.
  install -d -o mysql -g mysql "$tmp/run"
  sock=$tmp/run/mysqld.sock
  mariadb-install-db --no-defaults --user=mysql --datadir="$data" \
    --auth-root-authentication-method=normal --skip-test-db > "$tmp/install.log" 2>&1 ||
    die "mariadb-install-db failed: $(tail -5 "$tmp/install.log")"
  start_db() { # VARIANT
    # shellcheck disable=SC2046,SC2086
    env $(variant_env "$1") $(variant_prefix "$1" "db") mariadbd --no-defaults --user=mysql \
      --datadir="$data" --socket="$sock" --skip-networking --pid-file="$data/mysqld.pid" \
      --innodb-buffer-pool-size=64M > "$tmp/db.log" 2>&1 &
    DB_LAUNCHER=$!
    track_pid "$DB_LAUNCHER"
    local deadline=$((SECONDS + 120))
    until mariadb -S "$sock" -uroot -e 'SELECT 1' > /dev/null 2>&1; do
      kill -0 "$DB_LAUNCHER" 2> /dev/null || die "mariadbd ($1) exited: $(tail -5 "$tmp/db.log")"
      ((SECONDS < deadline)) || die "mariadbd ($1) did not answer"
      sleep 0.2
    done
    DB_PID=$(program_pid "$DB_LAUNCHER" mariadbd)
    [[ -n $DB_PID ]] || die "no mariadbd process under $DB_LAUNCHER"
  }
  stop_db() {
    mariadb -S "$sock" -uroot -e 'SHUTDOWN' > /dev/null 2>&1 || true
    stop_pid "$DB_LAUNCHER"
    untrack_pid "$DB_LAUNCHER"
  }
  sb=(sysbench oltp_read_write --db-driver=mysql --mysql-socket="$sock" --mysql-user=root
    --tables=4 --table-size=20000 --threads=2)
  start_db off
  mariadb -S "$sock" -uroot -e 'CREATE DATABASE sbtest'
  "${sb[@]}" prepare > "$tmp/prepare.log" 2>&1 || die "sysbench prepare failed"
  stop_db
  for ((rep = 1; rep <= reps; rep++)); do
    for v in "${variants[@]}"; do
      start_db "$v"
      [[ $v == on ]] && turn_on "$DB_PID" "$max_rate"
      [[ $v == unbounded ]] && turn_on "$DB_PID" 0
      "${sb[@]}" --time="$seconds" run > "$tmp/run.log" 2>&1 || die "sysbench run ($v) failed"
      rss=$(rss_kib "$DB_PID")
      [[ $v == on || $v == unbounded ]] && log "mariadb $v rep $rep: $(budget_note "$DB_PID")"
      tps=$(sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' "$tmp/run.log")
      log "mariadb $v rep $rep: $tps tps, VmRSS $rss KiB"
      db_tps[$v]+="$tps "
      db_rss[$v]+="$rss "
      stop_db
      rm -f "$tmp"/heaptrack.* "$tmp"/jeprof*
    done
  done
fi

# --- the table --------------------------------------------------------------------
loss() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f %%", (1 - a / b) * 100 }'; }
print_table() { # TITLE UNIT ARRAY_OPS ARRAY_RSS
  local title=$1 unit=$2
  local -n ops_of=$3 rss_of=$4
  [[ -n ${ops_of[off]:-} ]] || return 0
  local base_off base_je
  base_off=$(tr ' ' '\n' <<< "${ops_of[off]}" | { grep . || true; } | median)
  base_je=$(tr ' ' '\n' <<< "${ops_of[jemalloc]:-}" | { grep . || true; } | median)
  rss_off=$(tr ' ' '\n' <<< "${rss_of[off]}" | { grep . || true; } | median)
  rss_je=$(tr ' ' '\n' <<< "${rss_of[jemalloc]:-}" | { grep . || true; } | median)
  echo
  echo "$title (median of $reps runs of ${seconds} s)"
  echo
  echo "| variant | $unit | loss | VmRSS at the end | extra RSS |"
  echo "|---|---:|---:|---:|---:|"
  for v in "${variants[@]}"; do
    local m r base rbase
    m=$(tr ' ' '\n' <<< "${ops_of[$v]}" | { grep . || true; } | median)
    r=$(tr ' ' '\n' <<< "${rss_of[$v]}" | { grep . || true; } | median)
    base=$base_off rbase=$rss_off
    if [[ $v == jemalloc* ]]; then base=$base_je rbase=$rss_je; fi
    printf '| %s | %s | %s | %s MiB | %s MiB |\n' "$v" "$m" \
      "$([[ $v == off || $v == jemalloc ]] && echo "-" || loss "$m" "$base")" \
      "$(awk -v k="$r" 'BEGIN { printf "%.1f", k / 1024 }')" \
      "$([[ $v == off || $v == jemalloc ]] && echo "-" || awk -v a="$r" -v b="$rbase" 'BEGIN { printf "%+.1f", (a - b) / 1024 }')"
  done
}
machine_description
print_table "malloc_churn, $churn_threads threads, 16 B - 64 KiB uniform" "malloc/free pairs per second" churn_ops churn_rss
# The same runs per second of the program's own CPU time: on a machine other
# work shares, what a pair costs (the wall-clock rate also measures them).
print_table "malloc_churn, the same runs, per CPU second" "pairs per CPU second" churn_cpu churn_rss
print_table "mariadbd 10.11, sysbench oltp_read_write, 2 threads" "transactions per second" db_tps db_rss
echo
echo "loss: against off (on, unbounded, heaptrack) or against jemalloc (jemalloc_prof); on: at most $max_rate samples a second."
