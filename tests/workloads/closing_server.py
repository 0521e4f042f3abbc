"""closing_server.py - closing_server.c's protocol, written the way Python
daemons start: os.closerange(3, ...) over everything inherited, then a
listening socket of their own.

    python3 closing_server.py READY_FILE

Writes "port=P pipe=R,W listen_fd=F" to READY_FILE, then answers each
connection's "ask N" line with "program N" until killed.
"""

import os
import socket
import sys


def main():
    ready = sys.argv[1]
    r, w = os.pipe()
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    with open(ready + ".tmp", "w") as f:
        f.write("port=%d pipe=%d,%d listen_fd=%d\n" % (ls.getsockname()[1], r, w, ls.fileno()))
    os.rename(ready + ".tmp", ready)
    while True:
        conn, _ = ls.accept()
        with conn:
            line = conn.makefile("rb").readline()
            if line.startswith(b"ask ") and line.endswith(b"\n"):
                conn.sendall(b"program " + line[4:])


if __name__ == "__main__":
    main()
