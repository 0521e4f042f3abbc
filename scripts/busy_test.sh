#!/usr/bin/env bash
# Runs the test suite several times in a row while two processes burn CPU
# beside it, the way a shared CI machine or a busy node would. A test that
# only passes on an idle machine (it measures speed, or needs an operation
# to be slow) fails here.
#
#   scripts/busy_test.sh [--runs N] [--burners N] [PRESET...]
#
# Defaults: 3 runs, 2 burners, preset dev. The presets are built first (as
# scripts/test.sh does, dependencies included); then each run is one ctest
# of each preset. The burners are plain busy loops at normal priority, one
# per CPU of a 2-core machine; they are stopped by pid when the script ends,
# however it ends. Prints one line per run and exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
burners=2
presets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --burners) burners="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "busy_test: unknown option $1" >&2; exit 2 ;;
    *) presets+=("$1"); shift ;;
  esac
done
[ ${#presets[@]} -gt 0 ] || presets=(dev)
case "$runs$burners" in
  *[!0-9]*) echo "busy_test: --runs and --burners take whole numbers" >&2; exit 2 ;;
esac

bash scripts/install-deps.sh
for preset in "${presets[@]}"; do
  cmake --preset "$preset" > /dev/null
  cmake --build --preset "$preset" -j "$(nproc)"
done

burner_pids=()
stop_burners() {
  for pid in "${burner_pids[@]}"; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in "${burner_pids[@]}"; do
    wait "$pid" 2> /dev/null || true
  done
}
trap stop_burners EXIT
for _ in $(seq "$burners"); do
  bash -c 'while :; do :; done' &
  burner_pids+=($!)
done

logdir=$(mktemp -d)
failed=0
for run in $(seq "$runs"); do
  for preset in "${presets[@]}"; do
    log="$logdir/run$run-$preset.log"
    start=$(date +%s)
    if ctest --preset "$preset" -j 2 --timeout 300 > "$log" 2>&1; then
      result=passed
    else
      result=FAILED
      failed=1
    fi
    summary=$(grep -E "tests passed|tests failed" "$log" | tail -1)
    echo "run $run/$runs $preset: $result in $(( $(date +%s) - start )) s with $burners burners: $summary"
    if [ "$result" = FAILED ]; then
      sed -n '/The following tests FAILED/,$p' "$log"
    fi
  done
done
echo "logs: $logdir"
exit "$failed"
