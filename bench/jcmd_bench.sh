#!/usr/bin/env bash
# jcmd_bench.sh: one diagnostic command sent to the same JVM by three
# clients, side by side in one run: `memtrimd jcmd`, jattach (C), and the
# JDK's jcmd (which starts a JVM per call). Per call: wall time, CPU
# (user+sys) and peak RSS, from GNU time; and whether the client started any
# process (strace -f).
#
#   bench/jcmd_bench.sh BUILD_DIR [CALLS]     (CALLS for memtrimd and jattach; jcmd gets CALLS/10)
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

# Runs one client N times; prints "median_wall_ms p90_wall_ms median_cpu_ms".
# Each child is reaped with wait4, so CPU is that call's own (GNU time's 10 ms
# resolution is too coarse for these times).
measure() {
  python3 - "$@" <<'PY'
import os, statistics, sys, time
n, argv = int(sys.argv[1]), sys.argv[2:]
wall, cpu = [], []
for _ in range(n):
    t0 = time.perf_counter()
    # posix_spawn (vfork-like): the child's peak RSS is its own, not a copy
    # of this Python process.
    devnull = os.open(os.devnull, os.O_WRONLY)
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    os.close(devnull)
    _, status, ru = os.wait4(pid, 0)
    wall.append((time.perf_counter() - t0) * 1000)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(argv)}")
    cpu.append((ru.ru_utime + ru.ru_stime) * 1000)
wall.sort()
p90 = wall[min(len(wall) - 1, int(len(wall) * 0.9))]
print(f"{statistics.median(wall):.2f} {p90:.2f} {statistics.median(cpu):.2f}")
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
for cmd in "VM.version" "VM.native_memory summary"; do
  # shellcheck disable=SC2086
  for client in memtrimd jattach jcmd; do
    case $client in
      memtrimd) argv=("$memtrimd" jcmd --pid "$jvm" $cmd); n=$calls ;;
      jattach) argv=(/usr/bin/jattach "$jvm" jcmd "$cmd"); n=$calls ;;
      jcmd) argv=("$jdk/bin/jcmd" "$jvm" $cmd); n=$(( calls / 10 > 3 ? calls / 10 : 3 )) ;;
    esac
    read -r p50 p90 cpu < <(measure "$n" "${argv[@]}")
    rss=$(peak_rss "${argv[@]}")
    procs=$(spawned "${argv[@]}")
    printf '| %s | %s | %d | %s | %s | %s | %s | %s |\n' "$cmd" "$client" "$n" "$p50" "$p90" "$cpu" "$rss" "$procs"
  done
done
