"""Memory cgroups for the end-to-end tests: a test-owned parent with one
child per workload, each with a memory limit and no swap, so that growing
past the limit ends in a prompt OOM kill. Works on cgroup v2 and on the v1
memory controller of a hybrid host (memtrimd reads whichever the target's
/proc/<pid>/cgroup names, v1 first)."""

import errno
import os
import signal
import sys
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
_program = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def skip(reason):
    print(f"SKIP: {_program}: {reason}")
    sys.exit(SKIP)


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def flat_keyed(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


class CgroupTree:
    """The memory cgroup hierarchy of this host; skips the test when there
    is none (or calls unavailable(reason), for a test to which a limit is
    optional)."""

    def __init__(self, unavailable=skip):
        self.unavailable = unavailable
        v2 = "/sys/fs/cgroup"
        v1 = "/sys/fs/cgroup/memory"
        if os.path.exists(f"{v1}/memory.limit_in_bytes"):
            self.version, self.root = 1, v1
        elif (os.path.exists(f"{v2}/cgroup.controllers")
              and "memory" in read(f"{v2}/cgroup.controllers").split()):
            self.version, self.root = 2, v2
        else:
            unavailable("no cgroup memory controller (neither v2 nor v1)")

    def make_parent(self, name):
        path = os.path.join(self.root, name)
        try:
            os.mkdir(path)
        except OSError as e:
            # Root with a memory controller it cannot use (a read-only
            # cgroupfs in a container) is a broken setup, not a skip.
            print(f"{_program}: cannot create the test cgroup {path}: {e}", file=sys.stderr)
            sys.exit(1)
        if self.version == 2:
            try:
                if "memory" not in read(f"{self.root}/cgroup.subtree_control").split():
                    write(f"{self.root}/cgroup.subtree_control", "+memory")
                write(f"{path}/cgroup.subtree_control", "+memory")
            except OSError as e:
                os.rmdir(path)
                self.unavailable(f"cannot enable the memory controller for a child of "
                                 f"{self.root}: {e}")
        return path


class Cgroup:
    """One workload's cgroup: a memory limit and no swap, so that growing past
    the limit ends in a prompt OOM kill."""

    def __init__(self, tree, parent, name, limit):
        self.tree = tree
        self.path = os.path.join(parent, name)
        os.mkdir(self.path)
        if tree.version == 2:
            write(f"{self.path}/memory.max", str(limit))
            if os.path.exists(f"{self.path}/memory.swap.max"):
                write(f"{self.path}/memory.swap.max", "0")
        else:
            write(f"{self.path}/memory.limit_in_bytes", str(limit))
            # memory+swap may not be below memory, so it is set second.
            if os.path.exists(f"{self.path}/memory.memsw.limit_in_bytes"):
                write(f"{self.path}/memory.memsw.limit_in_bytes", str(limit))

    def join(self):
        """Called in the child between fork and exec."""
        write(f"{self.path}/cgroup.procs", str(os.getpid()))

    def pids(self):
        try:
            return [int(x) for x in read(f"{self.path}/cgroup.procs").split()]
        except FileNotFoundError:
            return []

    def usage(self):
        current = "memory.current" if self.tree.version == 2 else "memory.usage_in_bytes"
        return int(read(f"{self.path}/{current}"))

    def oom_kills(self):
        events = "memory.events" if self.tree.version == 2 else "memory.oom_control"
        return flat_keyed(read(f"{self.path}/{events}")).get("oom_kill", 0)

    def remove(self):
        if not os.path.isdir(self.path):
            return
        deadline = time.monotonic() + 10
        while True:
            pids = self.pids()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                os.rmdir(self.path)
                return
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    print(f"{_program}: cannot remove {self.path}: {e} (pids {pids})",
                          file=sys.stderr)
                    return
            time.sleep(0.05)
