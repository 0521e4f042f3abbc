#!/usr/bin/env bash
# probe_pressure.sh: are /healthz probes and /metrics scrapes answered while
# idle and slow clients hold connections to memtrimd?
#
#   bench/probe_pressure.sh DAEMON_DIR [--probes N] [--idle N] [--slow N]
#                           [--slow-alone N] [--trickle byte|line]
#                           [--rounds LIST] [-- MEMTRIMD_FLAGS...]
#
# DAEMON_DIR holds memtrimd and memtrimd-daemon (e.g. build/release/daemon),
# and libmemtrimd_web.so for the TLS round. Each round runs against a fresh
# memtrimd watching this script's shell. The rounds (--rounds, comma
# separated; default both,both-tls,slow,served):
#   idle      N connections (--idle, 64) that each send one request, read the
#             answer and then stay open and silent: keep-alive clients that
#             went quiet;
#   slow      N connections (--slow-alone, 48) that send their request head
#             slowly and never finish it ("slowloris");
#   both      --idle idle connections and --slow (40) slow ones at once;
#   both-tls  the same over TLS: memtrimd serves a self-signed certificate
#             made with the openssl command, every connection makes a full
#             handshake, and the slow ones send their head inside TLS;
#   served    no pressure: see below.
# --trickle byte (the default): a slow connection sends its head one byte a
# second from its first byte on; line: the request line at once, then one
# header line every 0.5 s. Either way it never sends the blank line that ends
# the head. A connection the server closes is opened again at once (within
# 50 ms), so the pressure lasts for the whole round. After 1 s, the round runs
# N rounds (--probes, 100) of a probe as a kubelet makes it, then a
# Prometheus-style scrape, 0.25 s apart:
#   curl --max-time 1 http://127.0.0.1:PORT/healthz     (https and -k for TLS)
#   curl --max-time 1 http://127.0.0.1:PORT/metrics
# It counts the answers with status 200, and reads memtrimd's threads and
# VmRSS from /proc before the round and at its end.
# "served" puts no pressure on and makes 128 scrapes and 128 probes one after
# the other, 20 ms apart, each on a new connection: civetweb hands
# connections to its workers in turn, so every worker serves some, and the
# VmRSS after it is what the workers cost once they have all served.
#
# Needs python3, curl and (for both-tls) openssl. Stops everything it
# started, by pid, on exit.
set -euo pipefail

dir=${1:?usage: probe_pressure.sh DAEMON_DIR [--probes N] [--idle N] [--slow N] [--slow-alone N] [--trickle byte|line] [--rounds LIST] [-- FLAGS...]}
shift
probes=100 idle=64 slow=40 slow_alone=48 trickle=byte rounds=both,both-tls,slow,served
while [[ $# -gt 0 ]]; do
  case $1 in
    --probes) probes=$2; shift 2 ;;
    --idle) idle=$2; shift 2 ;;
    --slow) slow=$2; shift 2 ;;
    --slow-alone) slow_alone=$2; shift 2 ;;
    --trickle) trickle=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "probe_pressure.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case $trickle in byte|line) ;; *) echo "probe_pressure.sh: --trickle byte or line" >&2; exit 2 ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ ,$rounds, == *,both-tls,* ]]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -keyout "$tmp/server.key" -out "$tmp/server.crt" 2>/dev/null
  printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n' > "$tmp/web.yml"
fi

python3 - "$dir/memtrimd" "$probes" "$idle" "$slow" "$slow_alone" "$trickle" "$rounds" "$tmp" "$$" "$@" <<'PY'
import os, select, signal, socket, ssl, subprocess, sys, threading, time

(memtrimd, probes, n_idle, n_slow, n_slow_alone, trickle, rounds, tmp, target) = sys.argv[1:10]
probes, n_idle, n_slow, n_slow_alone = int(probes), int(n_idle), int(n_slow), int(n_slow_alone)
extra = sys.argv[10:]

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
    r = subprocess.run(["curl", "-k", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1", url],
                       capture_output=True, text=True)
    return r.stdout.strip() == "200"

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"

class Conn:
    """One pressure connection: a small state machine driven by select."""
    def __init__(self, kind, port, tls_ctx):
        self.kind, self.port, self.tls_ctx = kind, port, tls_ctx
        self.sock = None
        self.open()

    def open(self):
        # On loopback the kernel completes the connection at once, whether
        # or not memtrimd has accepted it yet.
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.setblocking(False)
        self.sent, self.next_trickle = 0, time.monotonic()
        if self.tls_ctx is not None:
            self.sock = self.tls_ctx.wrap_socket(s, do_handshake_on_connect=False)
            self.state = "handshake"
            self.step()  # sends the ClientHello
        else:
            self.sock = s
            self.start_request()

    def wants_write(self):
        return self.state == "handshake-w"

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def start_request(self):
        self.state = "open"
        if self.kind == "idle":
            self.sock.send(REQUEST + b"\r\n")
        elif trickle == "line":
            self.sock.send(REQUEST)
            self.sent = len(REQUEST)

    def step(self):
        """Called when the socket is ready; False when the server closed it."""
        try:
            if self.state.startswith("handshake"):
                try:
                    self.sock.do_handshake()
                except ssl.SSLWantReadError:
                    self.state = "handshake"
                    return True
                except ssl.SSLWantWriteError:
                    self.state = "handshake-w"
                    return True
                self.start_request()
                return True
            data = self.sock.recv(65536)
            return bool(data)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return True
        except (OSError, ssl.SSLError):
            return False

    def trickle(self, now):
        if self.kind != "slow" or self.state != "open" or now < self.next_trickle:
            return
        try:
            if trickle == "byte":
                self.sock.send(REQUEST[self.sent:self.sent + 1] if self.sent < len(REQUEST) else b"X")
                self.sent += 1
                self.next_trickle = now + 1.0
            else:
                self.sock.send(b"X-a: b\r\n")
                self.next_trickle = now + 0.5
        except (OSError, ssl.SSLError):
            pass

class Pressure:
    """Keeps `idle` quiet keep-alive connections and `slow` slowloris ones open."""
    def __init__(self, port, idle, slow, tls):
        self.stop = threading.Event()
        ctx = None
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        self.conns = [Conn("idle", port, ctx) for _ in range(idle)] + [Conn("slow", port, ctx) for _ in range(slow)]
        self.reopened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            r = [c.sock for c in self.conns if not c.wants_write()]
            w = [c.sock for c in self.conns if c.wants_write()]
            readable, writable, _ = select.select(r, w, [], 0.05)
            ready = set(readable) | set(writable)
            now = time.monotonic()
            for c in self.conns:
                if c.sock in ready and not c.step():  # the server closed it: a new one takes its place
                    c.close()
                    self.reopened += 1
                    c.open()
                c.trickle(now)
        for c in self.conns:
            c.close()

plans = {
    "idle": (n_idle, 0, False),
    "slow": (0, n_slow_alone, False),
    "both": (n_idle, n_slow, False),
    "both-tls": (n_idle, n_slow, True),
    "served": (0, 0, False),
}
print(f"trickle: {trickle}; {probes} probes and {probes} scrapes a round")
print("| round | idle | slow | /healthz 200 within 1 s | /metrics 200 within 1 s | connections the server closed | threads | VmRSS KiB before / after |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in rounds.split(","):
    idle, slow, tls = plans[name]
    port = free_port()
    flags = [f"--web.listen-address=127.0.0.1:{port}", f"--target.pid={target}"]
    if tls:
        flags.append(f"--web.config.file={tmp}/web.yml")
    proc = subprocess.Popen([memtrimd] + flags + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not curl(f"{base}/healthz"):
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("probe_pressure.sh: memtrimd did not become healthy")
            time.sleep(0.2)
        rss_before = status_of(proc.pid, "VmRSS")
        if name == "served":
            for _ in range(128):
                curl(f"{base}/metrics")
                time.sleep(0.02)
                curl(f"{base}/healthz")
                time.sleep(0.02)
            print(f"| served | 0 | 0 | - | - | - | {status_of(proc.pid, 'Threads')} | {rss_before} / {status_of(proc.pid, 'VmRSS')} |")
            continue
        p = Pressure(port, idle, slow, tls)
        p.thread.start()
        time.sleep(1)
        ok_probes = ok_scrapes = 0
        for _ in range(probes):
            ok_probes += curl(f"{base}/healthz")
            time.sleep(0.25)
            ok_scrapes += curl(f"{base}/metrics")
            time.sleep(0.25)
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
