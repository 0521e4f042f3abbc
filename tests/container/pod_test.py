#!/usr/bin/env python3
"""memtrimd as a sidecar in a real pod: podman, the image container_image
built (scripts/build-image.sh), and an app container beside it.

Each pod shares PID, network, IPC and UTS namespaces
(`shareProcessNamespace: true`). Both containers get the pod's settings of
deploy/kubernetes/overlays/sidecar, translated to podman's flags: uid and
gid 10001, every capability dropped, no privilege escalation, and the
RuntimeDefault-like seccomp profile (tests/container/seccomp); memtrimd also
a read-only root with a tmpfs /tmp (the emptyDir) and its 32 MiB limit, the
app a memory limit. The apps run in the Debian slim base image with what
they need bind-mounted: tests/workloads' fragmenter (a glibc program) with
the image's agent preloaded, and BufferPools on each JDK of this machine, as
a uid without a user name (--passwd=false, as Kubernetes' runAsUser), so
HotSpot makes no perf data file.

Asserted against the host's /proc: memtrimd picks the app by itself
(MEMTRIMD_TARGET_MATCH, as the overlay) and names it by its pid in the pod;
its resident memory is what the host reads for that process (by kind and to
the byte for the idle glibc program, to 2 % for a JVM); the limit is the
app's. For the glibc program, its arena heaps (count, mapped and resident
bytes) are those the host walks through their heap_info headers
(arena_walk.py), the agent started under the profile and memtrimd's malloc
statistics come from it, a trim through it (memtrimd
trim by podman exec) gives back what the host sees RSS drop by, the app's
restart is picked up, and memtrimd's own RSS stays inside its limit; for
the JVM, NMT, the heap
figures without perf data, and `memtrimd inspect` and `memtrimd jcmd`
through `podman exec`; with the agent preloaded into JDK 17, the direct
pool and the temporary buffer cache as the JVM's BufferPoolMXBean counts
them. Then memtrimd as the node-agent overlay runs it
(--pid=host, root with three capabilities) sees every app by its host pid,
labelled with its container's ID.

Needs root and a podman that answers `podman info` (else 77) and the image
in the test's store (ctest runs container_image first). Pods and containers
are named memtrimd-pod-test-<pid>-* and removed by name.
"""

import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from arena_walk import walk_arena_heaps  # noqa: E402
from e2e_support import die, free_port  # noqa: E402
from podman_support import (Names, find_key, jdk_homes, podman,  # noqa: E402
                            project_version, use_store)

APP_UID = 10001  # deploy/kubernetes/base: runAsUser and runAsGroup
APP_LIMIT = 256 << 20
JVM_LIMIT = 512 << 20
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"
DEADLINE = 90
# BufferPools' load in the JVM with the agent: its own direct buffers, and
# reader threads that each keep a temporary buffer of the read's size.
DIRECT, DIRECT_BYTES, READERS, READ_BYTES = 3, 100000, 4, 3000000

names = Names("pod-test")


def pod_settings(profile):
    """The pod-level securityContext and each container's, as podman flags."""
    return ["--user", f"{APP_UID}:{APP_UID}", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--security-opt", f"seccomp={profile}"]


def sidecar_settings():
    """The memtrimd container's own: readOnlyRootFilesystem with the
    memtrimd-tmp emptyDir (8Mi) on /tmp, and its memory limit."""
    return ["--read-only", "--read-only-tmpfs=false", "--tmpfs", "/tmp:size=8m",
            "--memory", "32m"]


def metrics(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    series = []
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            series.append((m.group(1), labels, float(m.group(3))))
    return series


def host_status(pid):
    """/proc/<pid>/status as the host reads it: the resident kinds in bytes
    and the pid in each namespace."""
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("RssAnon", "RssFile", "RssShmem"):
            out[k] = int(v.split()[0]) * 1024
        elif k == "NSpid":
            out[k] = [int(x) for x in v.split()]
    return out


def image_agent(image, tmp):
    """The image's libmemtrimd_agent.so, copied out to be preloaded into the
    app (which docs/trimming.md tells users to do in their app's image)."""
    name = names.container("agent-copy")
    podman("create", "--name", name, image)
    podman("cp", f"{name}:/usr/local/lib/memtrimd/libmemtrimd_agent.so", tmp)
    podman("rm", name)
    os.chmod(tmp, 0o755)
    return os.path.join(tmp, "libmemtrimd_agent.so")


def glibc_app_in_pod(image, profile, fragmenter, agent):
    port = free_port()
    pod = names.pod("glibc")
    podman("pod", "create", "--name", pod, "--share", "pid,net,ipc,uts",
           "-p", f"127.0.0.1:{port}:8486")
    app = names.container("glibc-app")
    podman("run", "-d", "--pod", pod, "--name", app, *pod_settings(profile),
           "--memory", str(APP_LIMIT), "-v", f"{fragmenter}:/usr/local/bin/fragmenter:ro",
           "-v", f"{agent}:/usr/local/lib/libmemtrimd_agent.so:ro",
           "-e", "LD_PRELOAD=/usr/local/lib/libmemtrimd_agent.so", BASE_IMAGE,
           "/usr/local/bin/fragmenter", "--threads", "4", "--rounds", "2", "--burst-mib", "16",
           "--quiet", "--ready-file", "/tmp/ready")
    app_pid = int(podman("inspect", "--format", "{{.State.Pid}}", app).stdout)
    if app_pid <= 0:
        die(f"the app container has no process: {podman('logs', app, check=False).stderr}")
    # memtrimd starts once the fragmenter is done and idle (its workers hold
    # their arenas and wait): its first smaps read, and the next only
    # --smaps.interval (a minute) later, sees the heaps the host walks.
    deadline = time.monotonic() + DEADLINE
    while not os.path.exists(f"/proc/{app_pid}/root/tmp/ready"):
        if time.monotonic() > deadline or not os.path.exists(f"/proc/{app_pid}"):
            logs = podman("logs", app, check=False)
            die(f"the fragmenter never got ready: {logs.stdout}{logs.stderr}")
        time.sleep(0.2)
    sidecar = names.container("glibc-memtrimd")
    podman("run", "-d", "--pod", pod, "--name", sidecar, *pod_settings(profile),
           *sidecar_settings(), "-e", "MEMTRIMD_TARGET_MATCH=(^|/)fragmenter( |$)", image)

    # Until memtrimd's first sample the metrics are not there yet.
    deadline = time.monotonic() + DEADLINE
    last = None
    while time.monotonic() < deadline:
        series = metrics(port)
        host = host_status(app_pid)
        if series:
            up = [v for n, _, v in series if n == "memtrimd_target_up"]
            rss = {l["kind"]: v for n, l, v in series
                   if n == "memtrimd_target_resident_memory_bytes"}
            pids = {l["pid"] for n, l, _ in series
                    if n == "memtrimd_target_resident_memory_bytes"}
            limit = [v for n, _, v in series if n == "memtrimd_target_memory_limit_bytes"]
            want = {"anon": host["RssAnon"], "file": host["RssFile"], "shmem": host["RssShmem"]}
            last = (up, rss, pids, limit, want, host["NSpid"])
            if up == [1.0] and rss and {k: int(v) for k, v in rss.items()} == want:
                break
        time.sleep(0.5)
    else:
        logs = podman("logs", sidecar, check=False)
        die(f"memtrimd in the pod never reported the app's RSS as the host reads it "
            f"(up, rss, pid, limit, host, NSpid): {last}\n{logs.stdout}{logs.stderr}")
    up, rss, pids, limit, want, nspid = last
    # NSpid: the host's pid, then the pid inside the pod's PID namespace.
    if pids != {str(nspid[-1])}:
        die(f"memtrimd watches pid {pids}; the app is {nspid[-1]} in the pod (host {nspid[0]})")
    if limit != [float(APP_LIMIT)]:
        die(f"memtrimd reports a memory limit {limit}, the app's is {APP_LIMIT}")
    # The agent started under the RuntimeDefault-like profile and memtrimd
    # reaches it from its own container: malloc statistics come from it.
    r = podman("exec", sidecar, "memtrimd", "inspect", "--pid", str(nspid[-1]), "--json",
               check=False, timeout=120)
    report = json.loads(r.stdout) if r.returncode == 0 else {}
    agent_state = find_key(report, "agent")
    malloc = find_key(report, "malloc")
    if agent_state != {"reachable": True} or not malloc or malloc.get("source") != "agent":
        die(f"the agent in the glibc app under the RuntimeDefault-like profile: agent "
            f"{agent_state}, malloc {malloc} (inspect exit {r.returncode}: {r.stderr})")
    print(f"pod_test: glibc app (host pid {nspid[0]}, pod pid {nspid[-1]}): memtrimd reads "
          f"RSS anon {want['anon']} file {want['file']} shmem {want['shmem']} B, as the host; "
          f"limit {APP_LIMIT}; the preloaded agent reachable, {malloc['arenas']} arenas from it")
    heaps_before = check_arena_heaps(port, report, app_pid)

    # A trim through the sidecar (the agent under the profile): what memtrimd
    # says it gave back is the drop the host reads. The fragmenter is idle
    # and holds the freed blocks of its rounds.
    before = host_status(app_pid)
    r = podman("exec", sidecar, "memtrimd", "trim", "--pid", str(nspid[-1]), "--json",
               check=False, timeout=120)
    after = host_status(app_pid)
    trim = json.loads(r.stdout) if r.returncode == 0 else {}
    if not trim.get("success") or trim.get("backend") != "agent":
        die(f"memtrimd trim through podman exec: exit {r.returncode}: {r.stdout} {r.stderr}")
    dropped = before["RssAnon"] - after["RssAnon"]
    reclaimed = trim["reclaimed_rss_swap_bytes"]
    if dropped < (8 << 20) or abs(reclaimed - dropped) > max(256 << 10, 0.01 * dropped):
        die(f"the trim gave back {reclaimed} B by memtrimd, the host's RssAnon dropped "
            f"{dropped} B (at least 8 MiB expected): {trim}")
    # Each arena heap's resident bytes before and after the trim, as the
    # trim's report gives them, are what the host walks before and after.
    try:
        heaps_after = walk_arena_heaps(app_pid)
    except (OSError, RuntimeError) as e:
        die(f"the host's walk of the app's arena heaps after the trim: {e}")
    walked = {start: [res, None] for start, _, res in heaps_before}
    for start, _, res in heaps_after:
        walked.setdefault(start, [None, None])[1] = res
    by_trim = {int(h["start"], 16): [h["before_resident_bytes"], h["after_resident_bytes"]]
               for h in trim.get("arena_heaps", [])}
    if by_trim != walked:
        die(f"the trim's arena heaps (start: resident before, after) {by_trim}; the host's "
            f"walks {walked}")
    print(f"pod_test: trim in the pod through the agent: {reclaimed} B reclaimed by memtrimd, "
          f"{dropped} B dropped by the host; each of the {len(walked)} arena heaps' resident "
          f"bytes before and after as the host walks them "
          f"({sum(v[0] or 0 for v in walked.values())} -> "
          f"{sum(v[1] or 0 for v in walked.values())} B)")

    # The app restarts (its container's process ends and a new one starts):
    # memtrimd picks the new process by its command line.
    podman("restart", "--time", "1", app)
    new_pid = int(podman("inspect", "--format", "{{.State.Pid}}", app).stdout)
    new_nspid = host_status(new_pid)["NSpid"][-1]
    deadline = time.monotonic() + DEADLINE
    while True:
        series = metrics(port) or []
        watched = {l["pid"] for n, l, v in series if n == "memtrimd_target_up" and v == 1.0}
        if watched == {str(new_nspid)}:
            break
        if time.monotonic() > deadline:
            logs = podman("logs", sidecar, check=False)
            die(f"after the app's restart memtrimd watches {watched}, not pod pid {new_nspid}:"
                f"\n{logs.stdout}{logs.stderr}")
        time.sleep(0.5)

    # memtrimd's own memory, as the host reads it, inside the overlay's limit.
    own_pid = int(podman("inspect", "--format", "{{.State.Pid}}", sidecar).stdout)
    own = host_status(own_pid)
    own_rss = own["RssAnon"] + own["RssFile"] + own["RssShmem"]
    if own_rss >= 32 << 20:
        die(f"memtrimd's own RSS in the pod is {own_rss} B, at its 32 MiB limit")
    print(f"pod_test: the app's restart picked up (pod pid {nspid[-1]} -> {new_nspid}); "
          f"memtrimd's own RSS {own_rss} B")
    return app, new_pid


def check_arena_heaps(port, report, app_pid):
    """memtrimd's arena heaps (its metrics, and inspect's mapped bytes and
    heap header checks) against the heaps the host walks through the app's
    heap_info headers (arena_walk.py). The fragmenter is idle, so both see
    the same heaps to the byte."""
    try:
        heaps = walk_arena_heaps(app_pid)
    except (OSError, RuntimeError) as e:
        die(f"the host's walk of the app's arena heaps: {e}")
    count = len(heaps)
    mapped = sum(size for _, size, _ in heaps)
    resident = sum(res for _, _, res in heaps)
    if count < 4:
        die(f"the host walked {count} arena heaps; the fragmenter's 4 threads make at least 4")
    deadline = time.monotonic() + DEADLINE
    while True:
        series = metrics(port) or []
        got = ([v for n, _, v in series if n == "memtrimd_glibc_arena_heaps"],
               [v for n, l, v in series
                if n == "memtrimd_glibc_arena_heap_bytes" and l.get("state") == "resident"])
        if got == ([float(count)], [float(resident)]):
            break
        if time.monotonic() > deadline:
            die(f"memtrimd's arena heaps (count, resident bytes) {got}; the host walked {count} "
                f"heaps, {resident} B resident: {heaps}")
        time.sleep(0.5)
    # inspect read smaps afresh, and the heap headers too (the app's uid,
    # through /proc/<pid>/mem): every heap confirmed, mapped = mprotect_size.
    by_inspect = {k: find_key(report, k) for k in ("arena_heaps", "arena_heaps_confirmed",
                                                    "arena_heap_mapped_bytes",
                                                    "arena_heap_resident_bytes")}
    want = {"arena_heaps": count, "arena_heaps_confirmed": count,
            "arena_heap_mapped_bytes": mapped, "arena_heap_resident_bytes": resident}
    if by_inspect != want:
        die(f"memtrimd inspect's arena heaps {by_inspect}, the host's walk {want}")
    print(f"pod_test: glibc app's arena heaps: {count}, {mapped} B mapped, {resident} B resident "
          f"by memtrimd (metrics and inspect, every heap confirmed), as the host walks them")
    return heaps


def jdk_feature(home):
    """The JDK's feature version (17, 25, ...) from its release file."""
    for line in open(os.path.join(home, "release")):
        m = re.match(r'JAVA_VERSION="(\d+)', line)
        if m:
            return int(m.group(1))
    die(f"{home}/release names no JAVA_VERSION")


def jdk_mounts(home):
    """Bind mounts that run the host's JDK `home` in the Debian slim image:
    the JDK itself and what its symlinks reach under /etc (Debian's
    openjdk keeps its configuration in /etc/java-17-openjdk)."""
    etc = set()
    for d, dirs, files in os.walk(home):
        for f in dirs + files:
            target = os.readlink(os.path.join(d, f)) if os.path.islink(os.path.join(d, f)) else ""
            if target.startswith("/etc/") and os.path.exists(target):
                etc.add("/".join(target.split("/")[:3]))
    mounts = ["-v", f"{os.path.realpath(home)}:{home}:ro"]
    for e in sorted(etc):
        mounts += ["-v", f"{e}:{e}:ro"]
    return mounts


def jvm_app_in_pod(image, profile, home, classpath, n, named=False, agent=None):
    """A JVM of the host's JDK `home` as the app, with NMT and a memory
    limit, under a uid its image has no user name for (--passwd=false:
    Kubernetes adds no passwd entry for runAsUser), or with `named` one
    (podman's entry, as an image that creates its user). memtrimd starts
    first, in the native-sidecar order (overlays/native-sidecar: an init
    container that keeps running), and finds the JVM when it comes. With
    `agent`, the image's agent is preloaded into the JVM."""
    port = free_port()
    pod = names.pod(f"jvm{n}")
    podman("pod", "create", "--name", pod, "--share", "pid,net,ipc,uts",
           "-p", f"127.0.0.1:{port}:8486")
    sidecar = names.container(f"jvm{n}-memtrimd")
    podman("run", "-d", "--pod", pod, "--name", sidecar, *pod_settings(profile),
           *sidecar_settings(), "-e", "MEMTRIMD_TARGET_MATCH=(^|/)java( |$)", image)
    # Up before the app, serving with no target yet.
    deadline = time.monotonic() + DEADLINE
    while not any(n_ == "memtrimd_build_info" for n_, _, _ in (metrics(port) or [])):
        if time.monotonic() > deadline:
            die(f"{home}: the sidecar started first never served /metrics")
        time.sleep(0.2)
    app = names.container(f"jvm{n}-app")
    preload = []
    if agent:
        preload = ["-v", f"{agent}:/usr/local/lib/libmemtrimd_agent.so:ro",
                   "-e", "LD_PRELOAD=/usr/local/lib/libmemtrimd_agent.so"]
    podman("run", "-d", "--pod", pod, "--name", app, *pod_settings(profile),
           *([] if named else ["--passwd=false"]), *preload,
           "--memory", str(JVM_LIMIT), *jdk_mounts(home), "-v", f"{classpath}:/opt/workloads:ro",
           BASE_IMAGE, f"{home}/bin/java", "-XX:NativeMemoryTracking=summary",
           "-cp", "/opt/workloads", "BufferPools", "--ready-file", "/tmp/ready", "--dir", "/tmp",
           "--direct", str(DIRECT), "--direct-bytes", str(DIRECT_BYTES),
           *(["--readers", str(READERS), "--read-bytes", str(READ_BYTES)] if agent else []))
    app_pid = int(podman("inspect", "--format", "{{.State.Pid}}", app).stdout)
    if app_pid <= 0:
        die(f"{home}: the app container has no process: {podman('logs', app, check=False)}")
    deadline = time.monotonic() + DEADLINE
    while not os.path.exists(f"/proc/{app_pid}/root/tmp/ready"):
        if time.monotonic() > deadline or not os.path.exists(f"/proc/{app_pid}"):
            logs = podman("logs", app, check=False)
            die(f"{home}: BufferPools never got ready: {logs.stdout}{logs.stderr}")
        time.sleep(0.2)

    # A JVM's RSS moves a little all the time (GC, JIT): memtrimd's last
    # sample and the host's read now agree to 2 %, not to the byte.
    last = None
    while time.monotonic() < deadline:
        series = metrics(port) or []
        host = host_status(app_pid)
        up = [v for nm, _, v in series if nm == "memtrimd_target_up"]
        rss = sum(v for nm, _, v in series if nm == "memtrimd_target_resident_memory_bytes")
        pids = {lb["pid"] for nm, lb, _ in series if nm == "memtrimd_target_resident_memory_bytes"}
        nmt = [v for nm, lb, v in series if nm == "memtrimd_jvm_nmt_committed_bytes"]
        limit = [v for nm, _, v in series if nm == "memtrimd_target_memory_limit_bytes"]
        want = host["RssAnon"] + host["RssFile"] + host["RssShmem"]
        last = (up, rss, pids, len(nmt), limit, want, host["NSpid"])
        if up == [1.0] and nmt and abs(rss - want) <= 0.02 * want:
            break
        time.sleep(0.5)
    else:
        logs = podman("logs", sidecar, check=False)
        die(f"{home}: memtrimd in the pod never reported the JVM with NMT and its RSS as the "
            f"host reads it (up, rss, pid, NMT series, limit, host RSS, NSpid): {last}\n"
            f"{logs.stdout}{logs.stderr}")
    up, rss, pids, nmt, limit, want, nspid = last
    if pids != {str(nspid[-1])}:
        die(f"{home}: memtrimd watches pid {pids}; the JVM is {nspid[-1]} in the pod")
    # Nameless: HotSpot made no perf data file, yet memtrimd has the heap
    # figures (read from the JVM's memory instead). Named: it made one.
    perf = glob.glob(f"/proc/{app_pid}/root/tmp/hsperfdata_*/{nspid[-1]}")
    if bool(perf) != named:
        die(f"{home}: perf data files {perf} for a uid {'with' if named else 'without'} a "
            f"user name")
    heap = [v for nm, _, v in series if nm == "memtrimd_jvm_heap_committed_bytes"]
    if not heap or heap[0] <= 0:
        die(f"{home}: no heap figures for a JVM without a perf data file: {heap}")
    if limit != [float(JVM_LIMIT)]:
        die(f"{home}: memtrimd reports a memory limit {limit}, the JVM's is {JVM_LIMIT}")
    # What a user runs during an incident, through podman exec (kubectl exec
    # in a cluster): inspect names the JVM, jcmd reaches it over attach.
    r = podman("exec", sidecar, "memtrimd", "inspect", "--pid", str(nspid[-1]), "--json",
               check=False, timeout=120)
    if r.returncode != 0 or f'"pid":{nspid[-1]}' not in r.stdout.replace(" ", ""):
        die(f"{home}: memtrimd inspect through podman exec: exit {r.returncode}: "
            f"{r.stdout[:2000]} {r.stderr}")
    r = podman("exec", sidecar, "memtrimd", "jcmd", "--pid", str(nspid[-1]),
               "VM.native_memory", "summary", check=False, timeout=120)
    if r.returncode != 0 or "Native Memory Tracking" not in r.stdout:
        die(f"{home}: memtrimd jcmd through podman exec: exit {r.returncode}: "
            f"{r.stdout[:2000]} {r.stderr}")
    pools = ""
    if agent:
        # The agent in the JVM, under the profile: the direct pool the
        # workload wrote (BufferPoolMXBean) is what memtrimd reads, and so is
        # the temporary buffer cache. Up to JDK 17 the cached temporary
        # buffers are direct buffers the pool counts (sun.nio.ch.Util
        # allocates them with allocateDirect): the JVM's own figure for the
        # cache is its direct pool less the workload's direct buffers, one
        # buffer of the read's size per reader thread.
        ready = dict(line.split("=", 1) for line in
                     open(f"/proc/{app_pid}/root/tmp/ready").read().split() if "=" in line)
        want_direct = float(ready["pool.direct.capacity"])
        want_cache = None
        if jdk_feature(home) <= 17:
            want_cache = want_direct - DIRECT * DIRECT_BYTES
            if (int(ready["pool.direct.count"]) != DIRECT + READERS
                    or want_cache != READERS * READ_BYTES):
                die(f"{home}: the JVM's direct pool {ready}: want the workload's {DIRECT} "
                    f"buffers and {READERS} cached temporary buffers of {READ_BYTES} B")
        deadline = time.monotonic() + DEADLINE
        while True:
            series = metrics(port) or []
            direct = [v for nm, lb, v in series
                      if nm == "memtrimd_jvm_buffer_pool_capacity_bytes" and lb.get("pool") == "direct"]
            cache = [v for nm, lb, v in series if nm == "memtrimd_jvm_temp_buffer_cache_bytes"
                     and lb.get("source") == "agent"]
            if direct == [want_direct] and (want_cache is None or cache == [want_cache]):
                break
            if time.monotonic() > deadline:
                die(f"{home}: memtrimd reads the direct pool {direct} and the temporary buffer "
                    f"cache {cache} through the agent, the JVM's BufferPoolMXBean says "
                    f"{want_direct} and {want_cache}")
            time.sleep(0.5)
        pools = f"; direct pool {int(want_direct)} B through the agent, as the JVM says"
        if want_cache is not None:
            pools += (f", of which the temporary buffer cache {int(want_cache)} B "
                      f"({READERS} reader threads), as memtrimd reads it")
    print(f"pod_test: {home} as uid {APP_UID} {'with' if named else 'without'} a user name (host "
          f"pid {nspid[0]}, pod pid {nspid[-1]}), memtrimd started first: RSS {int(rss)} B by "
          f"memtrimd, {want} B by the host; {nmt} NMT series; heap committed {int(heap[0])} B; "
          f"limit {JVM_LIMIT}{pools}")
    return app, app_pid


def node_agent_beside(image, profile, apps):
    """memtrimd as deploy/kubernetes/overlays/node-agent runs it: the host's
    PID namespace, root with SYS_PTRACE, DAC_OVERRIDE and KILL alone, no
    privilege escalation, a read-only root, the RuntimeDefault-like profile,
    --targets=node. It sees the apps of the other pods by their host pids,
    each labelled with its podman container's ID."""
    port = free_port()
    node = names.container("node-agent")
    podman("run", "-d", "--name", node, "--pid=host", "--user", "0:0", "--cap-drop", "ALL",
           "--cap-add", "SYS_PTRACE,DAC_OVERRIDE,KILL", "--security-opt", "no-new-privileges",
           "--security-opt", f"seccomp={profile}", "--read-only", "--read-only-tmpfs=false",
           "--memory", "64m", "-p", f"127.0.0.1:{port}:8486", image, "--targets=node",
           "--sample.interval=1s", "--discovery.interval=2s")
    want = {str(pid): podman("inspect", "--format", "{{.Id}}", app).stdout.strip()
            for app, pid in apps}
    deadline = time.monotonic() + DEADLINE
    while True:
        series = metrics(port) or []
        seen = {l["pid"]: l.get("container_id", "") for n, l, _ in series
                if n == "memtrimd_target_info" and l.get("pid") in want}
        if seen == want:
            break
        if time.monotonic() > deadline:
            logs = podman("logs", node, check=False)
            die(f"the node agent sees {seen}, want every app by host pid with its container "
                f"ID {want}:\n{logs.stdout}{logs.stderr}")
        time.sleep(0.5)
    print(f"pod_test: the node agent (--pid=host) sees {len(want)} apps in other pods by their "
          f"host pids, each with its container ID")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--store", required=True, help="the image store container_image built into")
    ap.add_argument("--fragmenter", required=True)
    ap.add_argument("--classpath", required=True, help="tests/workloads' Java classes")
    args = ap.parse_args()

    use_store(args.store, args.source)
    image = f"localhost/memtrimd:{project_version(args.source)}"
    for needed in (image, BASE_IMAGE):
        if podman("image", "exists", needed, check=False).returncode != 0:
            die(f"{needed} is not in {args.store}: the container_image test builds it")
    profile = os.path.join(args.source, "tests", "container", "seccomp",
                           "runtime-default-like.json")
    tmp = tempfile.mkdtemp(prefix=f"{names.prefix}-")
    try:
        agent = image_agent(image, tmp)
        apps = [glibc_app_in_pod(image, profile, os.path.realpath(args.fragmenter), agent)]
        homes = jdk_homes()
        if not homes:
            die("no JDK under /usr/lib/jvm for the JVM app")
        classpath = os.path.realpath(args.classpath)
        for n, home in enumerate(homes):
            apps.append(jvm_app_in_pod(image, profile, home, classpath, n))
        # The first JDK again, as a uid with a user name and with the agent.
        apps.append(jvm_app_in_pod(image, profile, homes[0], classpath, len(homes), named=True,
                                   agent=agent))
        node_agent_beside(image, profile, apps)
        print("pod_test: PASS")
    finally:
        names.remove_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
