#!/usr/bin/env bash
# sites_accuracy.sh: how far the allocation sampler's estimate of a site's
# live bytes falls from the truth. site_holder (tests/workloads) holds 200,
# 50 and 10 MiB at three known functions, in blocks of a given size, beside
# two threads churning short-lived blocks; its agent samples at the default
# mean of 512 KiB from before the memory is taken, under the default budget
# of 10,000 samples a second (--max-rate N for another, 0 for none). The
# two churning threads allocate some 16 GB a second: at 512 KiB that is
# about 30,000 samples a second, so the budget raises the period, and the
# error is the one a program that hits the budget gets. "period" is the
# mean period in force at the reads. Each run's "sites"
# answer is attributed to the three functions by the return addresses the
# program prints (the address in hold_N of its call to hold() is in the
# stack), and the estimate compared with the truth. --runs runs per block
# size; prints, per block size and site: the mean estimate, the mean and
# largest relative error, and what theory predicts for the error's standard
# deviation (each block of s bytes is sampled with p = 1 - e^(-s/T) and then
# stands for s/p bytes: sd = sqrt(n * s^2 * (1-p)/p) for n blocks, with T
# the period in force).
#
#   bench/sites_accuracy.sh BUILD_DIR [--runs N] [--max-rate N]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

[[ $# -ge 1 ]] || {
  echo "usage: $0 BUILD_DIR [--runs N]" >&2
  exit 2
}
build=$(cd "$1" && pwd)
shift
runs=10
max_rate=10000
while [[ $# -gt 0 ]]; do
  if [[ $# -ge 2 && $1 == --runs && $2 =~ ^[1-9][0-9]*$ ]]; then
    runs=$2
  elif [[ $# -ge 2 && $1 == --max-rate && $2 =~ ^[0-9]+$ ]]; then
    max_rate=$2
  else
    echo "usage: $0 BUILD_DIR [--runs N] [--max-rate N]" >&2
    exit 2
  fi
  shift 2
done
agent=$build/collectors/agent/libmemtrimd_agent.so
holder=$build/tests/workloads/site_holder
for f in "$agent" "$holder"; do [[ -e $f ]] || die "$f not found: build $build first"; done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_sites_accuracy.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

# One run: prints "hold_200 <estimate> hold_50 <estimate> hold_10 <estimate>".
one_run() { # BLOCK
  rm -f "$tmp"/go "$tmp"/out
  MEMTRIMD_AGENT_SOCKET="$tmp/agent.%p.sock" LD_PRELOAD="$agent" \
    "$holder" 1048576 "$tmp/go" "$1" 2 > "$tmp/out" &
  local pid=$!
  track_pid "$pid"
  local deadline=$((SECONDS + 30))
  until grep -qx armed "$tmp/out" 2> /dev/null && [[ -S $tmp/agent.$pid.sock ]]; do
    ((SECONDS < deadline)) || die "site_holder not armed"
    sleep 0.02
  done
  BENCH_DIR=$here python3 - "$tmp/agent.$pid.sock" "$tmp/go" "$tmp/out" "$max_rate" << 'PY'
import os, socket, sys, time
sock, go, out, max_rate = sys.argv[1:5]
sys.path.insert(0, os.environ["BENCH_DIR"])
import agent_ask
def ask(line):
    return agent_ask.ask(sock, line)
ask("sampling on 524288 max_rate=" + max_rate)
open(go, "w").close()
deadline = time.time() + 60
while "ready\n" not in open(out).read():
    if time.time() > deadline:
        sys.exit("site_holder never ready")
    time.sleep(0.02)
sites = {}
for line in open(out):
    f = line.split()
    if len(f) == 3 and f[0] == "site":
        sites[int(f[2], 16)] = f[1]
est = {name: 0 for name in sites.values()}
answer = ask("sites")
period = [int(l[7:]) for l in answer.splitlines() if l.startswith("period=")][0]
for line in answer.splitlines():
    f = line.split()
    if not f or f[0] != "stack":
        continue
    for pc in f[7:]:
        name = sites.get(int(pc, 16))
        if name:
            est[name] += int(f[2])
            break
print(" ".join("%s %d" % (n, est[n]) for n in ("hold_200", "hold_50", "hold_10")), "period", period)
PY
  stop_pid "$pid"
  untrack_pid "$pid"
}

machine_description
echo
echo "budget: $max_rate samples a second (0: none)"
echo
echo "| block | site | truth | period | mean estimate | mean error | largest error | predicted sd |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
for block in 1048576 65536; do
  : > "$tmp/results"
  for ((i = 1; i <= runs; i++)); do
    one_run "$block" >> "$tmp/results"
    log "block $block run $i: $(tail -1 "$tmp/results")"
  done
  python3 - "$block" "$tmp/results" << 'PY'
import math, sys
block = int(sys.argv[1])
rows = [l.split() for l in open(sys.argv[2]) if l.strip()]
T = sum(float(r[7]) for r in rows) / len(rows)
for i, (name, mib) in enumerate((("hold_200", 200), ("hold_50", 50), ("hold_10", 10))):
    truth = mib * 1048576
    est = [int(r[2 * i + 1]) for r in rows]
    err = [abs(e - truth) / truth for e in est]
    n = truth // block
    p = 1 - math.exp(-block / T)
    sd = math.sqrt(n * block * block * (1 - p) / p) / truth
    print("| %s | %s | %d MiB | %.0f KiB | %.1f MiB | %.1f %% | %.1f %% | %.1f %% |" % (
        "1 MiB" if block == 1048576 else "%d KiB" % (block // 1024), name, mib, T / 1024,
        sum(est) / len(est) / 1048576, 100 * sum(err) / len(err), 100 * max(err), 100 * sd))
PY
done
