#!/usr/bin/env python3
"""The container image as a user builds it, then what it must be.

scripts/build-image.sh builds the Debian base image from the apt
repositories (mmdebstrap) and then deploy/docker/Dockerfile, with no
registry, into an image store of the test's own (--store), so that neither
the user's images nor anyone else's are touched. Then:
  - `memtrimd --version` runs in the image and names the project's version;
  - the image is at most 30 MB, every ELF file it installs is stripped, no
    layer holds a JDK, apt's package cache or apt's lists, and the script
    left no untagged build stage in the store;
  - a scanner's reading of its dpkg database (dpkg-query --admindir on the
    image's /var/lib/dpkg, and /etc/os-release) lists exactly the packages
    of deploy/docker/base/runtime-packages, each installed with its Debian
    version, and every library memtrimd's ELF files need is a file of one
    of them;
  - its agent has JVM support: copied out of the image and preloaded into a
    JVM of every JDK on this machine (run as the image's uid, 65532), it lets
    the image's own memtrimd, in a container sharing the host's PID namespace
    with no capabilities, read the JVM's buffer pools and temporary buffer
    cache, equal to the JVM's own BufferPoolMXBean figures.
Needs root and a podman that answers `podman info` (else 77: skipped). Every
container it makes is named memtrimd-image-test-<pid>-* and removed by name
(tests/container/podman_support.py); every process it starts is stopped by
pid.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import Processes, die, wait_for  # noqa: E402
from podman_support import (Names, find_key, jdk_homes, podman,  # noqa: E402
                            project_version, use_store)

IMAGE_UID = 65532  # the Dockerfile's USER
MAX_IMAGE_BYTES = 30 * 1000 * 1000
# BufferPools' load (as in tests/integration/agent_jvm_test.cc).
DIRECT, DIRECT_BYTES, MAP_BYTES, READERS, READ_BYTES = 3, 100000, 4 << 20, 4, 3000000

names = Names("image-test")


def check_layers(image, tmp):
    """No layer of the image holds a JDK, a .deb in apt's cache, apt's
    binary caches or its package lists."""
    archive = os.path.join(tmp, "image.tar")
    podman("save", "--format", "docker-archive", "-o", archive, image)
    bad = re.compile(r"^(\./)?(usr/lib/jvm/.|var/cache/apt/archives/.*\.deb$|"
                     r"var/cache/apt/[^/]*\.bin$|var/lib/apt/lists/[^/]*_(Packages|Release|InRelease))")
    layers = 0
    with tarfile.open(archive) as outer:
        for member in outer.getmembers():
            if not member.isfile() or not member.name.endswith(".tar"):
                continue
            layers += 1
            with tarfile.open(fileobj=outer.extractfile(member)) as layer:
                found = [n for n in layer.getnames() if bad.search(n)]
            if found:
                die(f"layer {member.name} keeps {len(found)} files it should not, e.g. {found[:3]}")
    os.unlink(archive)
    if layers == 0:
        die("podman save wrote no layers")
    return layers


def check_stripped(image, tmp):
    """Every ELF file under /usr/local has neither a symbol table nor debug
    information."""
    name = names.container("files")
    podman("create", "--name", name, image)
    out = os.path.join(tmp, "local")
    podman("cp", f"{name}:/usr/local", out)
    podman("rm", name)
    elves = []
    for d, _, files in os.walk(out):
        for f in files:
            path = os.path.join(d, f)
            with open(path, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            sections = subprocess.run(["readelf", "-S", "-W", path], capture_output=True,
                                      text=True, check=True).stdout
            for s in (".symtab", ".debug_info", ".debug_line"):
                if re.search(rf"\s{re.escape(s)}\s", sections):
                    die(f"{os.path.relpath(path, out)} is not stripped: it has {s}")
            elves.append(os.path.relpath(path, out))
    for wanted in ("bin/memtrimd", "bin/memtrimd-daemon", "lib/memtrimd/libmemtrimd_agent.so"):
        if wanted not in elves:
            die(f"/usr/local/{wanted} is not in the image (found {elves})")
    return os.path.join(out, "lib", "memtrimd", "libmemtrimd_agent.so"), elves


def listed_packages(source):
    """deploy/docker/base/runtime-packages: a name per line, # comments."""
    names = set()
    for line in open(os.path.join(source, "deploy", "docker", "base", "runtime-packages")):
        words = line.split("#", 1)[0].split()
        if words:
            names.add(words[0])
    return names


def check_packages(image, source, elves, tmp):
    """What an image scanner reads: the OS from /etc/os-release, the
    packages and versions from /var/lib/dpkg (here with dpkg-query, as
    `dpkg -l` in the image would, had it a dpkg); and the owner of each
    library memtrimd's ELF files need, from dpkg's file lists."""
    name = names.container("export")
    podman("create", "--name", name, image)
    archive = os.path.join(tmp, "rootfs.tar")
    podman("export", "-o", archive, name)
    podman("rm", name)
    root = os.path.join(tmp, "rootfs")
    os.mkdir(root)
    with tarfile.open(archive) as t:
        t.extractall(root, members=[m for m in t.getmembers()
                                    if re.match(r"^(\./)?(etc/os-release|usr/lib/os-release|"
                                                r"var/lib/dpkg/|usr/local/)", m.name)])
    os.unlink(archive)
    release = os.path.join(root, "etc", "os-release")
    if os.path.islink(release):
        release = os.path.join(root, os.readlink(release).lstrip("/").replace("../", ""))
    fields = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', open(release).read(), re.M)) \
        if os.path.exists(release) else {}
    if fields.get("ID") != "debian" or fields.get("VERSION_ID") != "12":
        die(f"the image's /etc/os-release says {fields}: a scanner cannot tell its OS")
    r = subprocess.run(["dpkg-query", "--admindir", os.path.join(root, "var", "lib", "dpkg"),
                        "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"dpkg-query on the image's /var/lib/dpkg: {r.stderr}")
    installed = {}
    for line in r.stdout.splitlines():
        pkg, version, status = line.split("\t")
        if status.strip() != "ii" or not version:
            die(f"the image's dpkg status has {pkg} {version!r} as {status!r}, not installed")
        installed[pkg] = version
    want = listed_packages(source)
    if set(installed) != want:
        die(f"the image's dpkg status lists {sorted(installed)}; runtime-packages lists "
            f"{sorted(want)}")
    # Every NEEDED soname is memtrimd's own or a file some package owns.
    owner = {}
    info = os.path.join(root, "var", "lib", "dpkg", "info")
    for f in os.listdir(info):
        if f.endswith(".list"):
            for path in open(os.path.join(info, f)):
                owner[os.path.basename(path.strip())] = f[:-len(".list")].split(":")[0]
    own = {os.path.basename(e) for e in elves}
    needs = {}
    for elf in elves:
        dyn = subprocess.run(["readelf", "-d", "-W", os.path.join(root, "usr", "local", elf)],
                             capture_output=True, text=True, check=True).stdout
        for soname in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
            if soname in own:
                continue
            if soname not in owner:
                die(f"/usr/local/{elf} needs {soname}, which no package in the image has")
            needs[soname] = owner[soname]
    if not needs:
        die("readelf found no library that memtrimd's files need")
    return installed, needs


def check_agent_reads_jvm(image, agent, classpath, tmp, procs):
    """The image's agent in a host JVM of each JDK, read by the image's
    memtrimd in a container: its figures are the JVM's own."""
    homes = jdk_homes()
    if not homes:
        die("no JDK under /usr/lib/jvm: the agent's JVM support cannot be checked")
    work = os.path.join(tmp, "jvm")
    os.mkdir(work)
    shutil.copy(agent, os.path.join(work, "libmemtrimd_agent.so"))
    os.chmod(tmp, 0o755)
    os.chown(work, IMAGE_UID, IMAGE_UID)

    def as_image_uid():
        os.setgroups([])
        os.setgid(IMAGE_UID)
        os.setuid(IMAGE_UID)

    for n, home in enumerate(homes):
        ready = os.path.join(work, f"ready.{n}")
        env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": os.path.join(work, "libmemtrimd_agent.so")}
        jvm = procs.start([os.path.join(home, "bin", "java"), "-XX:NativeMemoryTracking=summary",
                           "-cp", classpath, "BufferPools", "--ready-file", ready, "--dir", work,
                           "--direct", str(DIRECT), "--direct-bytes", str(DIRECT_BYTES),
                           "--map-bytes", str(MAP_BYTES), "--readers", str(READERS),
                           "--read-bytes", str(READ_BYTES)],
                          os.path.join(tmp, f"jvm.{n}.log"), env=env, before_exec=as_image_uid)
        wait_for(f"{home}'s BufferPools ready file", lambda: os.path.exists(ready), 90, [jvm])
        truth = {}
        for line in open(ready):
            k, _, v = line.strip().partition("=")
            if v:
                truth[k] = int(v)
        # The sidecar's settings (deploy/kubernetes): the app's uid, no
        # capabilities, no privilege escalation, a read-only root.
        r = podman("run", "--rm", "--name", names.container(f"inspect-{n}"), "--pid=host",
                   "--user", f"{IMAGE_UID}:{IMAGE_UID}", "--cap-drop", "ALL", "--security-opt",
                   "no-new-privileges", "--read-only", image, "inspect", "--pid", str(jvm.pid),
                   "--json", check=False, timeout=120)
        if r.returncode != 0:
            die(f"{home}: memtrimd inspect in the image: exit {r.returncode}: {r.stderr}")
        report = json.loads(r.stdout)
        pools = find_key(report, "buffer_pools")
        if pools is None:
            die(f"{home}: no buffer pools read through the image's agent: "
                f"{find_key(report, 'buffer_pools_missing')!r}")
        for pool in ("direct", "mapped"):
            for field, key in (("count", "count"), ("total_capacity_bytes", "capacity"),
                               ("memory_used_bytes", "used")):
                got, want = pools[pool][field], truth[f"pool.{pool}.{key}"]
                if got != want:
                    die(f"{home}: {pool} pool {field} {got}, the JVM says {want}")
        cache = find_key(report, "temp_buffer_cache_bytes")
        if cache is None or not READERS * READ_BYTES <= cache <= READERS * READ_BYTES + 65536:
            die(f"{home}: temporary buffer cache {cache}, want {READERS} x {READ_BYTES} "
                f"(+ the JDK's own small reads)")
        print(f"image_test: {home}: direct pool {pools['direct']['memory_used_bytes']} B in "
              f"{pools['direct']['count']} buffers, temporary buffer cache {cache} B, "
              f"read through the image's agent")
        jvm.terminate()
        jvm.wait(timeout=30)
    return len(homes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--store", required=True, help="the test's own podman image store")
    ap.add_argument("--classpath", required=True, help="tests/workloads' Java classes")
    ap.add_argument("--skip-build", action="store_true",
                    help="check the image already in the store (built by the script before)")
    args = ap.parse_args()

    use_store(args.store, args.source)
    version = project_version(args.source)
    image = f"localhost/memtrimd:{version}"
    procs = Processes()
    tmp = tempfile.mkdtemp(prefix=f"{names.prefix}-")
    try:
        if not args.skip_build:
            t0 = time.monotonic()
            build = subprocess.run(["bash", os.path.join(args.source, "scripts", "build-image.sh")],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   timeout=1800)
            took = time.monotonic() - t0
            if build.returncode != 0:
                die(f"scripts/build-image.sh failed ({build.returncode}):\n{build.stdout[-6000:]}")
            print("\n".join(l for l in build.stdout.splitlines() if l.startswith("build-image:")))
            print(f"image_test: scripts/build-image.sh took {took:.0f} s")
            # The build stages' images (the build stage's is about 800 MB) are
            # the script's to remove: none may be left untagged.
            stages = podman("images", "--filter", "dangling=true", "--filter",
                            "label=io.memtrimd.stage", "--format", "{{.ID}} {{.Size}}").stdout
            if stages.strip():
                die(f"scripts/build-image.sh left untagged build stages: {stages}")

        r = podman("run", "--rm", "--name", names.container("version"), image, "--version",
                   check=False)
        if r.returncode != 0 or not r.stdout.startswith(f"memtrimd {version} "):
            die(f"memtrimd --version in the image: exit {r.returncode}: {r.stdout!r} {r.stderr!r}")
        print(f"image_test: {r.stdout.strip()}")

        size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
        print(f"image_test: image size {size} bytes")
        if size > MAX_IMAGE_BYTES:
            die(f"the image is {size} bytes, more than {MAX_IMAGE_BYTES}")
        layers = check_layers(image, tmp)
        print(f"image_test: {layers} layers, none with a JDK, apt's cache or lists")
        agent, elves = check_stripped(image, tmp)
        print(f"image_test: {len(elves)} ELF files, all stripped: {', '.join(sorted(elves))}")
        installed, needs = check_packages(image, args.source, elves, tmp)
        print(f"image_test: dpkg status lists {len(installed)} packages: "
              f"{', '.join(f'{p} {v}' for p, v in sorted(installed.items()))}")
        print(f"image_test: libraries needed, by package: "
              f"{', '.join(f'{l} ({p})' for l, p in sorted(needs.items()))}")
        jdks = check_agent_reads_jvm(image, agent, args.classpath, tmp, procs)
        print(f"image_test: PASS ({jdks} JDKs)")
    finally:
        procs.stop_all()
        names.remove_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
