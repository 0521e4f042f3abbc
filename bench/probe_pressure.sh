#!/usr/bin/env bash
# probe_pressure.sh: are /healthz probes and /metrics scrapes answered while
# idle and slow clients hold connections to memtrimd?
#
#   bench/probe_pressure.sh DAEMON_DIR [--probes N] [--idle N] [--slow N]
#                           [-- MEMTRIMD_FLAGS...]
#
# DAEMON_DIR holds memtrimd and memtrimd-daemon (e.g. build/release/daemon).
# Three rounds, each against a fresh memtrimd watching this script's shell:
#   idle  N connections (32) that each send one request, read the answer and
#         then stay open and silent: keep-alive clients that went quiet;
#   slow  N connections (40) that send a request line and then one header
#         line every 0.5 s, never the blank line that ends the headers
#         ("slowloris");
#   both  the two at once.
# A connection the server closes is opened again at once (within 50 ms), so
# the pressure lasts for the whole round. After 1 s, the round runs N probes
# (14) as a kubelet does, one every 0.5 s:
#   curl --max-time 1 http://127.0.0.1:PORT/healthz
# and then as many Prometheus-style scrapes of /metrics, also with 1 s. It
# counts the answers with status 200, and reads memtrimd's threads and VmRSS
# from /proc before the round and at its end.
# A last round, "served", puts no pressure on and makes 128 scrapes and 128
# probes one after the other, 20 ms apart, each on a new connection:
# civetweb hands connections to its workers in turn, so every worker serves
# some, and the VmRSS after it is what the workers cost once they have all
# served. (memtrimd gives a worker's stack pages back at most every 10 ms;
# 20 ms is still far more often than Prometheus and a kubelet ask.)
#
# Needs python3 and curl. Stops everything it started, by pid, on exit.
set -euo pipefail

dir=${1:?usage: probe_pressure.sh DAEMON_DIR [--probes N] [--idle N] [--slow N] [-- FLAGS...]}
shift
probes=14 idle=32 slow=40
while [[ $# -gt 0 ]]; do
  case $1 in
    --probes) probes=$2; shift 2 ;;
    --idle) idle=$2; shift 2 ;;
    --slow) slow=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "probe_pressure.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

exec python3 - "$dir/memtrimd" "$probes" "$idle" "$slow" "$$" "$@" <<'PY'
import os, select, signal, socket, subprocess, sys, threading, time

memtrimd, probes, n_idle, n_slow, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
extra = sys.argv[6:]

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def status_of(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split()[1]
    return "?"

def curl(url):
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1", url],
                       capture_output=True, text=True)
    return r.stdout.strip() == "200"

class Pressure:
    """Keeps `idle` quiet keep-alive connections and `slow` slowloris ones open."""
    def __init__(self, port, idle, slow):
        self.port, self.stop = port, threading.Event()
        self.conns = [["idle", None] for _ in range(idle)] + [["slow", None] for _ in range(slow)]
        self.reopened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, c):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        if c[0] == "idle":
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.settimeout(None)
            # Read the answer when it comes (maybe only once a worker is
            # free); then the connection is a quiet keep-alive one.
        else:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        s.setblocking(False)
        c[1] = s

    def run(self):
        last_trickle = time.monotonic()
        for c in self.conns:
            self.open(c)
        while not self.stop.is_set():
            socks = [c[1] for c in self.conns]
            readable, _, _ = select.select(socks, [], [], 0.05)
            for c in self.conns:
                if c[1] in readable:
                    try:
                        data = c[1].recv(65536)
                    except OSError:
                        data = b""
                    if not data:  # the server closed it: a new one takes its place
                        c[1].close()
                        self.reopened += 1
                        self.open(c)
            if time.monotonic() - last_trickle >= 0.5:
                last_trickle = time.monotonic()
                for c in self.conns:
                    if c[0] == "slow":
                        try:
                            c[1].send(b"X-a: b\r\n")
                        except OSError:
                            pass
        for c in self.conns:
            c[1].close()

print("| round | idle | slow | /healthz 200 within 1 s | /metrics 200 within 1 s | connections the server closed | threads | VmRSS KiB before / after |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, idle, slow in (("idle", n_idle, 0), ("slow", 0, n_slow), ("both", n_idle, n_slow), ("served", 0, 0)):
    port = free_port()
    proc = subprocess.Popen([memtrimd, f"--web.listen-address=127.0.0.1:{port}", f"--target.pid={target}"] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not curl(f"http://127.0.0.1:{port}/healthz"):
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("probe_pressure.sh: memtrimd did not become healthy")
            time.sleep(0.2)
        rss_before = status_of(proc.pid, "VmRSS")
        if name == "served":
            for _ in range(128):
                curl(f"http://127.0.0.1:{port}/metrics")
                time.sleep(0.02)
                curl(f"http://127.0.0.1:{port}/healthz")
                time.sleep(0.02)
            print(f"| served | 0 | 0 | - | - | - | {status_of(proc.pid, 'Threads')} | {rss_before} / {status_of(proc.pid, 'VmRSS')} |")
            continue
        p = Pressure(port, idle, slow)
        p.thread.start()
        time.sleep(1)
        ok_probes = ok_scrapes = 0
        for _ in range(probes):
            ok_probes += curl(f"http://127.0.0.1:{port}/healthz")
            time.sleep(0.5)
        for _ in range(probes):
            ok_scrapes += curl(f"http://127.0.0.1:{port}/metrics")
            time.sleep(0.5)
        threads, rss_after = status_of(proc.pid, "Threads"), status_of(proc.pid, "VmRSS")
        p.stop.set()
        p.thread.join()
        print(f"| {name} | {idle} | {slow} | {ok_probes} / {probes} | {ok_scrapes} / {probes} | {p.reopened} | {threads} | {rss_before} / {rss_after} |")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
PY
