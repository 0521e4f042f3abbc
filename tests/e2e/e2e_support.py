"""What the end-to-end tests share: starting processes that are stopped by pid
whatever happens, polling a condition with a deadline, and talking to
Prometheus and memtrimd over 127.0.0.1."""

import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

DEADLINE_SECONDS = 120

_program = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def die(message):
    print(f"{_program}: {message}", file=sys.stderr)
    sys.exit(1)


class Processes:
    """Every process a test starts, stopped by pid at the end."""

    def __init__(self):
        self.started = []

    def start(self, argv, log_path, env=None, pipes=False, before_exec=None):
        """Output goes to log_path; with pipes, stdout is a pipe instead (and
        stdin one too) and only stderr goes to the log. before_exec runs in
        the child between fork and exec (e.g. to join a cgroup)."""
        libc = ctypes.CDLL(None, use_errno=True)

        def in_child():
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the test
            if before_exec:
                before_exec()

        log = open(log_path, "wb")
        if pipes:
            p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                 env=env, preexec_fn=in_child)
        else:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                 preexec_fn=in_child)
        log.close()
        self.started.append(p)
        return p

    def stop_all(self):
        # Last started first: the watchers (memtrimd, Prometheus) stop before
        # what they watch, so they do not log its exit as a failure.
        for p in reversed(self.started):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.started):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout):
                if f:
                    try:
                        f.close()
                    except OSError:
                        pass  # a pipe to a process that is gone


def poll(condition, seconds):
    """condition()'s first true value within `seconds`, else None (no error)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value or None
        time.sleep(0.2)


def wait_for(what, condition, seconds=DEADLINE_SECONDS, processes=()):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        for p in processes:
            if p.poll() is not None:
                die(f"{what}: {p.args[0]} exited with {p.returncode}")
        time.sleep(0.1)
    die(f"timed out after {seconds} s waiting for {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url, data=None):
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return json.load(e)
        except ValueError:
            return {}  # starting up: a plain-text 503, not an API answer
    except (urllib.error.URLError, ConnectionError, ValueError):
        return {}  # not listening yet


def memtrimd_port(log_path):
    try:
        text = open(log_path, encoding="utf-8", errors="replace").read()
    except FileNotFoundError:
        return None
    m = re.search(r"memtrimd started.*ports=(\d+)", text)
    return int(m.group(1)) if m else None
