#!/usr/bin/env bash
# jcmd_bench.sh: one diagnostic command sent to the same JVM by three
# clients, side by side in one run: `memtrimd jcmd`, jattach (C), and the
# JDK's jcmd (which starts a JVM per call). Per call: wall time, CPU
# (user+sys) and peak RSS, from GNU time; and whether the client started any
# process (strace -f).
#
#   bench/jcmd_bench.sh BUILD_DIR [CALLS]     (CALLS for memtrimd and jattach; jcmd gets CALLS/10)
#
# memtrimd and jattach take turns call by call; jcmd runs after them.
#
# Needs: a JDK 17 at /usr/lib/jvm/java-17-openjdk-amd64, jattach, GNU time, strace.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [CALLS]" >&2; exit 2; }
build=$1
calls=${2:-100}
jdk=/usr/lib/jvm/java-17-openjdk-amd64
memtrimd=$build/daemon/memtrimd
classes=$build/tests/workloads/java
for bin in "$memtrimd" "$jdk/bin/java" "$jdk/bin/jcmd" /usr/bin/jattach /usr/bin/time /usr/bin/strace; do
  [[ -x "$bin" ]] || die "$bin not found"
done
[[ -f "$classes/NativeChurn.class" ]] || die "$classes/NativeChurn.class not found: build $build first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_jcmd_bench.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

"$jdk/bin/java" -XX:NativeMemoryTracking=summary -cp "$classes" NativeChurn --threads 4 --quiet \
  --ready-file "$tmp/ready" &
track_pid $!
jvm=$!
wait_for_file "$tmp/ready" "$jvm" 90
# Warm up: the first call starts the attach listener.
"$memtrimd" jcmd --pid "$jvm" VM.version > /dev/null

# Runs each client N times, the clients taking turns call by call (so a busy
# stretch of a shared machine lands on all of them alike). Clients are
# separated by "--". Prints one line per client: "median_wall_ms
# p90_wall_ms median_cpu_ms". Each child is reaped with wait4, so CPU is that
# call's own (GNU time's 10 ms resolution is too coarse for these times).
measure() {
  python3 - "$@" <<'PY'
import os, statistics, sys, time
n = int(sys.argv[1])
clients, cur = [], []
for a in sys.argv[2:]:
    if a == "--":
        clients.append(cur)
        cur = []
    else:
        cur.append(a)
clients.append(cur)
wall = [[] for _ in clients]
cpu = [[] for _ in clients]
for _ in range(n):
    for i, argv in enumerate(clients):
        t0 = time.perf_counter()
        # posix_spawn (vfork-like): the child's peak RSS is its own, not a
        # copy of this Python process.
        devnull = os.open(os.devnull, os.O_WRONLY)
        pid = os.posix_spawn(argv[0], argv, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                           (os.POSIX_SPAWN_DUP2, devnull, 2)])
        os.close(devnull)
        _, status, ru = os.wait4(pid, 0)
        wall[i].append((time.perf_counter() - t0) * 1000)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {' '.join(argv)}")
        cpu[i].append((ru.ru_utime + ru.ru_stime) * 1000)
for w, c in zip(wall, cpu):
    w.sort()
    p90 = w[min(len(w) - 1, int(len(w) * 0.9))]
    print(f"{statistics.median(w):.2f} {p90:.2f} {statistics.median(c):.2f}")
PY
}

# Peak RSS of one call, from GNU time (a small parent, so the figure is the
# client's own; a Python parent's pages would be counted in).
peak_rss() {
  /usr/bin/time -f %M -o "$tmp/rss" "$@" > /dev/null 2>&1 || die "failed: $*"
  cat "$tmp/rss"
}

# Processes a client starts besides itself (clone/fork/vfork that create a
# process, and execve after the first).
spawned() {
  strace -f -qq -e trace=execve,fork,vfork -o "$tmp/strace" "$@" > /dev/null 2>&1 || true
  local execs
  execs=$(grep -c 'execve(' "$tmp/strace" || true)
  echo $((execs - 1))
}

printf '| command | client | calls | wall p50 (ms) | wall p90 (ms) | CPU p50 (ms) | peak RSS (KiB) | processes started |\n'
printf '|---|---|---|---|---|---|---|---|\n'
row() {  # cmd client calls p50 p90 cpu argv...
  local cmd=$1 client=$2 n=$3 p50=$4 p90=$5 cpu=$6
  shift 6
  printf '| %s | %s | %d | %s | %s | %s | %s | %s |\n' "$cmd" "$client" "$n" "$p50" "$p90" "$cpu" \
    "$(peak_rss "$@")" "$(spawned "$@")"
}

for cmd in "VM.version" "VM.native_memory summary"; do
  # shellcheck disable=SC2086
  m_argv=("$memtrimd" jcmd --pid "$jvm" $cmd)
  j_argv=(/usr/bin/jattach "$jvm" jcmd "$cmd")
  # shellcheck disable=SC2086
  c_argv=("$jdk/bin/jcmd" "$jvm" $cmd)
  { read -r m50 m90 mcpu; read -r j50 j90 jcpu; } < <(measure "$calls" "${m_argv[@]}" -- "${j_argv[@]}")
  n_jcmd=$(( calls / 10 > 3 ? calls / 10 : 3 ))
  read -r c50 c90 ccpu < <(measure "$n_jcmd" "${c_argv[@]}")
  row "$cmd" memtrimd "$calls" "$m50" "$m90" "$mcpu" "${m_argv[@]}"
  row "$cmd" jattach "$calls" "$j50" "$j90" "$jcpu" "${j_argv[@]}"
  row "$cmd" jcmd "$n_jcmd" "$c50" "$c90" "$ccpu" "${c_argv[@]}"
done
