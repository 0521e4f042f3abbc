"""One request to a preload agent's socket, as the sites benchmarks make it.

Imported by the Python parts of bench/sites_error.sh and
bench/sites_accuracy.sh (their directory is put on sys.path): one connection
per request, the agent answers and closes; a status other than 0 ends the
benchmark with the agent's reason.
"""
import socket
import sys


def ask(sock_path, line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock_path)
    s.sendall(line.encode() + b"\n")
    data = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        data += b
    status, _, body = data.decode().partition("\n")
    if status != "0":
        sys.exit("agent refused %r: %s" % (line, body))
    return body
