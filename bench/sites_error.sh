#!/usr/bin/env bash
# sites_error.sh: whether the allocation sampler's estimate of a site's live
# bytes is biased, and how far it spreads, by site size. bench/live_set
# holds exactly 200, 50, 10 and 1 MiB at four known functions, in blocks of
# varied sizes (16 B to 256 KiB, log-uniform; malloc, calloc, realloc
# growth), then frees and reallocates most of them again (free+malloc and
# realloc, some from another thread, each site's total kept), beside a
# thread churning short-lived blocks. Each run starts the program with the
# agent preloaded, turns sampling on at the default mean of 512 KiB with the
# default budget as memtrimd does (--period, --max-rate for others) before
# anything is taken, reads the "sites" answer once the live set stands, and
# attributes each stack to a site by the return address the program prints
# (in every stack of the site). Each run draws other sizes (its seed).
#
# Prints, per site: the truth, the mean estimate, the relative error's mean
# and standard deviation over the runs, the mean's standard error, how many
# runs came out high, and the standard deviation theory predicts (sampling
# by bytes: a block of s bytes is taken with p = 1 - e^(-s/T) and then
# stands for s/p bytes; the program sums s^2 (1-p)/p over its blocks).
#
#   bench/sites_error.sh BUILD_DIR [--runs N] [--period BYTES] [--max-rate N]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--runs N] [--period BYTES] [--max-rate N]" >&2
  exit 2
}
[[ $# -ge 1 && -d $1 ]] || usage
build=$(cd "$1" && pwd)
shift
runs=50
period=524288
max_rate=10000
while [[ $# -gt 0 ]]; do
  if [[ $# -ge 2 && $1 == --runs && $2 =~ ^[1-9][0-9]*$ ]]; then
    runs=$2
  elif [[ $# -ge 2 && $1 == --period && $2 =~ ^[1-9][0-9]*$ ]]; then
    period=$2
  elif [[ $# -ge 2 && $1 == --max-rate && $2 =~ ^[0-9]+$ ]]; then
    max_rate=$2
  else
    usage
  fi
  shift 2
done
agent=$build/collectors/agent/libmemtrimd_agent.so
program=$build/bench/live_set
for f in "$agent" "$program"; do [[ -e $f ]] || die "$f not found: build $build first"; done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_sites_error.XXXXXX")
cleanup() {
  stop_tracked
  rm -rf "$tmp"
}
trap cleanup EXIT

# One run: prints one line per site, "<name> <truth> <estimate> <variance>
# <period at the read>".
one_run() { # SEED
  rm -f "$tmp"/go "$tmp"/out
  MEMTRIMD_AGENT_SOCKET="$tmp/agent.%p.sock" LD_PRELOAD="$agent" \
    "$program" "$tmp/go" "$1" "$period" > "$tmp/out" &
  local pid=$!
  track_pid "$pid"
  local deadline=$((SECONDS + 30))
  until grep -qx armed "$tmp/out" 2> /dev/null && [[ -S $tmp/agent.$pid.sock ]]; do
    ((SECONDS < deadline)) || die "live_set not armed"
    sleep 0.02
  done
  BENCH_DIR=$here python3 - "$tmp/agent.$pid.sock" "$tmp/go" "$tmp/out" "$period" "$max_rate" "$pid" << 'PY'
import os, socket, sys, time
sock, go, out, period, max_rate, pid = sys.argv[1:7]
sys.path.insert(0, os.environ["BENCH_DIR"])
import agent_ask
def ask(line):
    return agent_ask.ask(sock, line)
ask("sampling on %s max_rate=%s" % (period, max_rate))
open(go, "w").close()
deadline = time.time() + 120
while "ready\n" not in open(out).read():
    if time.time() > deadline or not os.path.exists("/proc/" + pid):
        sys.exit("live_set never ready")
    time.sleep(0.02)
sites = {}
for line in open(out):
    f = line.split()
    if len(f) == 5 and f[0] == "site":
        sites[int(f[2], 16)] = f[1]
        sites[f[1]] = (int(f[3]), float(f[4]))
est = {name: 0 for name in sites if isinstance(name, str)}
answer = ask("sites")
head = dict(l.split("=", 1) for l in answer.splitlines() if "=" in l and " " not in l)
if int(head.get("dropped_live", 0)) or int(head.get("dropped_stacks", 0)) or "truncated" in head:
    sys.exit("samples dropped: %r" % head)
for line in answer.splitlines():
    f = line.split()
    if not f or f[0] != "stack":
        continue
    for pc in f[7:]:
        name = sites.get(int(pc, 16))
        if isinstance(name, str):
            est[name] += int(f[2])
            break
for name in ("hold_200", "hold_50", "hold_10", "hold_1"):
    truth, var = sites[name]
    print(name, truth, est[name], var, head["period"])
PY
  stop_pid "$pid"
  untrack_pid "$pid"
}

machine_description
echo
: > "$tmp/results"
for ((i = 1; i <= runs; i++)); do
  one_run "$i" > "$tmp/run"
  cat "$tmp/run" >> "$tmp/results"
  log "run $i: $(awk '{printf "%s %+.1f%% ", $1, 100 * ($3 - $2) / $2}' "$tmp/run")"
done
echo "period $((period / 1024)) KiB asked, budget $max_rate samples a second (0: none), $runs runs"
echo
python3 - "$tmp/results" << 'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print("| site | truth | period at the read | mean estimate | error mean ± sd | standard error of the mean | runs high | predicted sd |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in ("hold_200", "hold_50", "hold_10", "hold_1"):
    r = [x for x in rows if x[0] == name]
    n = len(r)
    err = [(int(x[2]) - int(x[1])) / int(x[1]) for x in r]
    mean = sum(err) / n
    sd = math.sqrt(sum((e - mean) ** 2 for e in err) / (n - 1)) if n > 1 else 0.0
    pred = sum(math.sqrt(float(x[3])) / int(x[1]) for x in r) / n
    periods = sorted(int(x[4]) for x in r)
    print("| %s | %.0f MiB | %d-%d KiB | %.2f MiB | %+.1f %% ± %.1f | %.1f %% | %d of %d | %.1f %% |" % (
        name, int(r[0][1]) / 1048576, periods[0] // 1024, periods[-1] // 1024,
        sum(int(x[2]) for x in r) / n / 1048576, 100 * mean, 100 * sd,
        100 * sd / math.sqrt(n), sum(e > 0 for e in err), n, 100 * pred))
PY
