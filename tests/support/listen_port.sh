# shellcheck shell=bash
# Sourced by the shell tests. listen_port LOG PID: waits up to 10 s for the
# memtrimd with process PID, logging to LOG, to say which port it listens on
# ("memtrimd started ... ports=N", from --web.listen-address=127.0.0.1:0) and
# prints it; prints nothing and returns 1 if it exits or does not say so.
listen_port() {
  local log=$1 pid=$2 port=
  for _ in $(seq 100); do
    port=$(sed -n 's/.*memtrimd started.*ports=\([0-9]*\).*/\1/p' "$log")
    if [[ -n $port ]]; then
      echo "$port"
      return 0
    fi
    kill -0 "$pid" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
