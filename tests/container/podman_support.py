"""What the container tests share: podman run as root in an image store of
the test's own (so that neither the user's images nor anyone else's are
touched), with deploy/docker/containers.conf unless CONTAINERS_CONF is set,
and every container and pod a test makes named after the test's pid and
removed by that name at the end."""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import die  # noqa: E402,F401  (re-exported for the tests)

_program = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def skip(why):
    print(f"{_program}: SKIP: {why}")
    sys.exit(77)


def use_store(store, source):
    """Points podman at the image store `store` (made if missing) and exits
    77 when podman cannot run here at all: not root, not installed, or
    `podman info` fails."""
    if os.geteuid() != 0:
        skip("needs root (scripts/build-image.sh runs root podman and mmdebstrap)")
    if not shutil.which("podman"):
        skip("podman is not installed (scripts/install-deps.sh installs it)")
    os.makedirs(store, exist_ok=True)
    conf = os.path.join(store, "storage.conf")
    with open(conf, "w") as f:
        f.write(f'[storage]\ndriver = "overlay"\ngraphroot = "{store}/graph"\n'
                f'runroot = "{store}/run"\n')
    os.environ["CONTAINERS_STORAGE_CONF"] = conf
    os.environ.setdefault("CONTAINERS_CONF",
                          os.path.join(source, "deploy", "docker", "containers.conf"))
    info = podman("info", check=False, timeout=120)
    if info.returncode != 0:
        skip(f"podman cannot run here: {info.stderr.strip()}")


def project_version(source):
    text = open(os.path.join(source, "CMakeLists.txt")).read()
    return re.search(r"project\(memtrimd VERSION ([0-9.]+)", text).group(1)


def podman(*args, check=True, timeout=600):
    r = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        die(f"podman {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


class Names:
    """Names for the containers and pods a test makes, removed by name."""

    def __init__(self, test):
        self.prefix = f"memtrimd-{test}-{os.getpid()}"
        self.containers = []
        self.pods = []

    def container(self, what):
        name = f"{self.prefix}-{what}"
        self.containers.append(name)
        return name

    def pod(self, what):
        name = f"{self.prefix}-{what}"
        self.pods.append(name)
        return name

    def remove_all(self):
        for name in reversed(self.containers):
            podman("rm", "--force", "--ignore", "--time", "5", name, check=False)
        for name in reversed(self.pods):
            podman("pod", "rm", "--force", "--ignore", name, check=False)


def find_key(value, key):
    """The first value under `key` anywhere in a JSON document."""
    if isinstance(value, dict):
        if key in value:
            return value[key]
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def jdk_homes():
    """Every distinct JDK with a bin/java under /usr/lib/jvm, Debian's 17
    first (as the C++ tests' FindJdkHomes)."""
    seen, homes = set(), []
    root = "/usr/lib/jvm"
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    names.sort(key=lambda n: n != "java-17-openjdk-amd64")
    for n in names:
        home = os.path.join(root, n)
        java = os.path.join(home, "bin", "java")
        if os.path.isfile(java) and os.path.realpath(home) not in seen:
            seen.add(os.path.realpath(home))
            homes.append(home)
    return homes
