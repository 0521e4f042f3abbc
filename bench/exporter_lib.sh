# shellcheck shell=bash
# Helpers for the drivers that put memtrimd next to prometheus-process-exporter
# (exporter_latency.sh, exporter_footprint.sh). Sourced after lib.sh; every
# process is started in the background and tracked by pid (track_pid), so the
# driver's EXIT trap (stop_tracked) stops exactly what it started.

PROCESS_EXPORTER=${PROCESS_EXPORTER:-/usr/bin/prometheus-process-exporter}
JAVA=${JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}

# start_target KIND BUILD_DIR TMPDIR TAG: starts the workload both exporters
# watch and waits for its ready file. KIND is jvm (NativeChurn, 4 threads, NMT
# summary on, -Xmx256m) or glibc (fragmenter --threads 8 --rounds 2
# --burst-mib 16). TAG goes on its command line (--tag), so that
# process-exporter's cmdline regex matches this one process and nothing else.
# Sets TARGET_PID and TARGET_DESC.
# shellcheck disable=SC2034  # results for the caller
start_target() {
  local kind=$1 build=$2 dir=$3 tag=$4 pid
  rm -f "$dir/target.ready"
  case $kind in
    jvm)
      [[ -x "$JAVA" ]] || die "$JAVA not found (openjdk-17-jdk-headless)"
      [[ -f "$build/tests/workloads/java/NativeChurn.class" ]] || die "NativeChurn.class not found: build $build first"
      "$JAVA" -XX:NativeMemoryTracking=summary -Xmx256m -cp "$build/tests/workloads/java" \
        NativeChurn --threads 4 --quiet --tag "$tag" --ready-file "$dir/target.ready" &
      pid=$!
      TARGET_DESC="NativeChurn --threads 4 (OpenJDK 17, -Xmx256m, -XX:NativeMemoryTracking=summary)"
      ;;
    glibc)
      [[ -x "$build/tests/workloads/fragmenter" ]] || die "fragmenter not found: build $build first"
      "$build/tests/workloads/fragmenter" --threads 8 --rounds 2 --burst-mib 16 --quiet \
        --tag "$tag" --ready-file "$dir/target.ready" &
      pid=$!
      TARGET_DESC="fragmenter --threads 8 --rounds 2 --burst-mib 16"
      ;;
    *) die "unknown target kind $kind (jvm or glibc)" ;;
  esac
  track_pid "$pid"
  wait_for_file "$dir/target.ready" "$pid" 120
  TARGET_PID=$pid
}

# start_process_exporter TMPDIR TAG ARGS...: starts prometheus-process-exporter
# on a free 127.0.0.1 port with a config that names one group after the
# command ({{.Comm}}) and matches the target's command line by its unique tag;
# waits until its /metrics reports that group with num_procs 1. Sets PE_PID,
# PE_PORT and PE_GROUP.
# shellcheck disable=SC2034  # results for the caller
start_process_exporter() {
  local dir=$1 tag=$2
  shift 2
  cat >"$dir/process-exporter.yml" <<EOF
process_names:
  - name: "{{.Comm}}"
    cmdline:
      - '--tag ${tag}( |\$)'
EOF
  launch_process_exporter "$dir" pe_tracks_one "$@"
  PE_GROUP=$(sed -n 's/^namedprocess_namegroup_num_procs{groupname="\([^"]*\)"} .*/\1/p' "$dir/pe.metrics")
}

# pe_tracks_one FILE: true when a process-exporter exposition has exactly one
# group, of one process.
pe_tracks_one() { [[ "$(pe_num_procs "$1")" == "1 1" ]]; }

# launch_process_exporter TMPDIR READY ARGS...: starts
# prometheus-process-exporter with TMPDIR/process-exporter.yml on a free
# 127.0.0.1 port and scrapes it until `READY FILE` (a command given the saved
# exposition) succeeds, for up to PE_READY_SECONDS (20). Sets PE_PID and
# PE_PORT; TMPDIR/pe.metrics holds the last scrape.
# shellcheck disable=SC2034  # results for the caller
launch_process_exporter() {
  local dir=$1 ready=$2
  shift 2
  local attempt port pid deadline
  [[ -x "$PROCESS_EXPORTER" ]] || die "$PROCESS_EXPORTER not found (apt-get install prometheus-process-exporter)"
  for attempt in 1 2 3 4 5; do
    port=$(free_port) || die "no free port found"
    "$PROCESS_EXPORTER" -config.path "$dir/process-exporter.yml" \
      -web.listen-address "127.0.0.1:$port" "$@" >"$dir/process-exporter.log" 2>&1 &
    pid=$!
    track_pid "$pid"
    deadline=$((SECONDS + ${PE_READY_SECONDS:-20}))
    while ((SECONDS < deadline)) && kill -0 "$pid" 2>/dev/null; do
      if curl -fsS --max-time 5 -o "$dir/pe.metrics" "http://127.0.0.1:$port/metrics" 2>/dev/null &&
        "$ready" "$dir/pe.metrics"; then
        PE_PID=$pid
        PE_PORT=$port
        return 0
      fi
      sleep 0.2
    done
    stop_pid "$pid"
    untrack_pid "$pid"
    if grep -qi 'address already in use' "$dir/process-exporter.log"; then
      log "port $port taken, retrying (attempt $attempt)"
      continue
    fi
    cat "$dir/process-exporter.log" >&2
    [[ -f "$dir/pe.metrics" ]] && grep namegroup_num_procs "$dir/pe.metrics" | head -5 >&2
    die "process-exporter did not report the targets ($ready) on port $port"
  done
  die "process-exporter could not listen after 5 attempts"
}

# pe_num_procs FILE: "<groups> <num_procs of the first group>" from a
# process-exporter exposition ("1 1" when it tracks exactly one process).
pe_num_procs() {
  awk '/^namedprocess_namegroup_num_procs\{/ { n++; if (n == 1) v = $2 }
       END { printf "%d %s\n", n, (n ? v : "-") }' "$1"
}

# cpu_ticks PID: utime + stime of PID in clock ticks (/proc/PID/stat fields 14
# and 15, counted after the command name, which may contain spaces).
cpu_ticks() {
  sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# status_kib PID FIELD: a kB field of /proc/PID/status (VmRSS, VmHWM, ...).
status_kib() {
  awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

# served_connections PORT: "<established> <answered>": server-side TCP
# connections on 127.0.0.1:PORT, and how many of them the server has sent
# anything on (ss reports bytes_acked only once data went out).
served_connections() {
  ss -tniH state established "( sport = :$1 )" 2>/dev/null |
    awk '/^[ \t]/ { n++; if ($0 ~ /bytes_acked:[1-9]/) a++ } END { printf "%d %d\n", n, a }'
}

# memtrimd_build FILE MEMTRIMD: what the memtrimd in a /metrics exposition FILE
# is: memtrimd_build_info's labels, the binary's modification time and the
# repository's HEAD (the binary may be built from a working tree ahead of its
# revision label).
memtrimd_build() {
  local info head mtime
  info=$(sed -n 's/^memtrimd_build_info{\(.*\)} .*/\1/p' "$1" 2>/dev/null | head -1)
  mtime=$(date -u -r "$2" '+%Y-%m-%d %H:%M UTC' 2>/dev/null || echo unknown)
  head=$(git -C "${here:-.}" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  printf 'memtrimd {%s}, binary built %s, repository HEAD %s' "${info:-unknown}" "$mtime" "$head"
}

# snapshot_memtrimd BUILD_DIR DIR: copies memtrimd (the launcher) and
# memtrimd-daemon beside it into DIR/bin, so a rebuild during the run does not
# change the binary under test; prints the copy's path.
snapshot_memtrimd() {
  mkdir -p "$2/bin"
  cp -p "$1/daemon/memtrimd" "$1/daemon/memtrimd-daemon" "$2/bin/" || die "cannot copy memtrimd from $1/daemon"
  echo "$2/bin/memtrimd"
}
