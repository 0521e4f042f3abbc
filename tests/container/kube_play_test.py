#!/usr/bin/env python3
"""The real sidecar manifest played by a container runtime: `kubectl
kustomize deploy/kubernetes/overlays/sidecar`, given as rendered to `podman
kube play` with only the image names changed (podman cannot pull
eclipse-temurin or find `memtrimd:<tag>` in a registry):

  - the app's image: a Debian slim base with a JDK 17 runtime (jlink of
    this machine's JDK) and /app/app.jar (tests/container/kube_play_app),
    so that the manifest's own `java -jar /app/app.jar` runs; tagged by
    what goes into it and kept in the test's store for the next run;
  - memtrimd's: the image container_image built.

Everything else is the manifest's: the shared PID namespace, uid 10001,
capabilities dropped, the read-only root with its emptyDir /tmp, the
limits, MEMTRIMD_TARGET_MATCH, the port and the probes; podman leaves the
PodMonitor and PrometheusRule alone. Asserted: memtrimd finds the JVM by
itself, attaches (NMT figures come only over the attach socket), reports
the app's memory limit and answers /healthz on the manifest's port; the
liveness probe podman made from the manifest asks that port (a named probe
port became port 0).

podman publishes every containerPort on all the host's addresses
(deploy/README.md): the test runs in a network namespace of its own
(unshare --net), where that is 127.0.0.1 of nothing else, and removes the
pod by name there, on failure too. Needs root, a podman that answers
`podman info`, kubectl and a JDK (else 77), and the image in the test's
store (ctest runs container_image first).
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import die  # noqa: E402
from podman_support import jdk_homes, podman, project_version, skip, use_store  # noqa: E402

OVERLAY = "deploy/kubernetes/overlays/sidecar"
APP_IMAGE = "localhost/memtrimd-kube-play-app"
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"
DEADLINE = 120


def render(source):
    r = subprocess.run(["kubectl", "kustomize", os.path.join(source, OVERLAY)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        die(f"kubectl kustomize {OVERLAY}: {r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def deployment_of(docs):
    found = [d for d in docs if d.get("kind") == "Deployment"]
    if len(found) != 1:
        die(f"{OVERLAY} renders {len(found)} Deployments, want 1")
    return found[0]


def replace_images(docs, memtrimd_image, app_image):
    """Only the image names; returns the pod's spec."""
    spec = deployment_of(docs)["spec"]["template"]["spec"]
    changed = {}
    for c in spec.get("initContainers", []) + spec["containers"]:
        c["image"] = memtrimd_image if c["name"] == "memtrimd" else app_image
        changed[c["name"]] = c["image"]
    if set(changed) != {"app", "memtrimd"}:
        die(f"{OVERLAY}'s pod has containers {sorted(changed)}, want app and memtrimd")
    return spec


def app_image_name(source):
    """Tagged by what goes into it (App.java, the JDK), so that a later run
    in the same store reuses it."""
    homes = [h for h in jdk_homes() if os.path.exists(os.path.join(h, "bin", "jlink"))]
    if not homes:
        skip("no JDK with jlink under /usr/lib/jvm")
    app_src = os.path.join(source, "tests", "container", "kube_play_app", "App.java")
    digest = hashlib.sha256(open(app_src, "rb").read())
    digest.update(open(os.path.join(homes[0], "release"), "rb").read())
    return homes[0], f"{APP_IMAGE}:{digest.hexdigest()[:12]}"


def build_app_image(source, home, image, tmp):
    """The app the manifest runs: `java -jar /app/app.jar` on PATH."""
    if podman("image", "exists", image, check=False).returncode == 0:
        return
    ctx = os.path.join(tmp, "app")
    classes = os.path.join(ctx, "classes")
    os.makedirs(classes)
    app_src = os.path.join(source, "tests", "container", "kube_play_app", "App.java")
    for argv in ([os.path.join(home, "bin", "javac"), "-d", classes, app_src],
                 [os.path.join(home, "bin", "jar"), "--create", "--file",
                  os.path.join(ctx, "app.jar"), "--main-class", "App", "-C", classes, "."],
                 # java.base is all the app needs; NMT, the attach listener
                 # and hsperfdata are the VM's own.
                 [os.path.join(home, "bin", "jlink"), "--add-modules", "java.base",
                  "--strip-debug", "--no-header-files", "--no-man-pages",
                  "--output", os.path.join(ctx, "java")]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            die(f"{' '.join(argv)}: {r.stdout}{r.stderr}")
    with open(os.path.join(ctx, "Containerfile"), "w") as f:
        f.write(f"FROM {BASE_IMAGE}\n"
                "COPY java /opt/java\n"
                "COPY app.jar /app/app.jar\n"
                "ENV PATH=/opt/java/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
    podman("build", "--pull=never", "--layers=false", "-t", image, ctx, timeout=600)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except OSError:
        return None, ""


def series(text, name):
    out = []
    for line in text.splitlines():
        m = re.match(rf"^{name}(?:\{{(.*)\}})? (\S+)$", line)
        if m:
            out.append((dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1) or "")),
                        float(m.group(2))))
    return out


def check_pod(pod, port, app_limit):
    """memtrimd in the played pod: /healthz, the JVM found and attached."""
    memtrimd = f"{pod}-memtrimd"
    deadline = time.monotonic() + DEADLINE
    last = None
    while time.monotonic() < deadline:
        status, _ = get(f"http://127.0.0.1:{port}/healthz")
        code, text = get(f"http://127.0.0.1:{port}/metrics")
        up = series(text, "memtrimd_target_up")
        info = series(text, "memtrimd_target_info")
        nmt = series(text, "memtrimd_jvm_nmt_committed_bytes")
        limit = series(text, "memtrimd_target_memory_limit_bytes")
        last = (status, code, up, info, len(nmt), limit)
        if status == 200 and [v for _, v in up] == [1.0] and nmt and limit:
            break
        for c in ("app", "memtrimd"):
            state = podman("inspect", "--format", "{{.State.Status}}", f"{pod}-{c}",
                           check=False).stdout.strip()
            if state not in ("running", "created", "configured"):
                logs = podman("logs", f"{pod}-{c}", check=False)
                die(f"the {c} container is {state}: {logs.stdout}{logs.stderr}")
        time.sleep(0.5)
    else:
        logs = podman("logs", memtrimd, check=False)
        die(f"memtrimd in the played pod never answered /healthz with the JVM attached "
            f"(healthz, metrics, up, info, NMT series, limit): {last}\n{logs.stdout}{logs.stderr}")
    status, code, up, info, nmt, limit = last
    comm = {labels.get("comm") for labels, _ in info}
    if comm != {"java"}:
        die(f"memtrimd watches {comm}, want the app's java")
    if [v for _, v in limit] != [float(app_limit)]:
        die(f"memtrimd reports a memory limit {limit}, the app's is {app_limit}")
    print(f"kube_play_test: /healthz 200 on 127.0.0.1:{port}; memtrimd watches java, "
          f"{nmt} NMT series over attach, limit {app_limit} B (the app's)")


def check_probe(pod, port):
    """The liveness probe as podman made it: a command asking the port."""
    test = podman("inspect", "--format", "{{json .Config.Healthcheck.Test}}",
                  f"{pod}-memtrimd").stdout.strip()
    if f"localhost:{port}/healthz" not in test:
        die(f"podman's liveness probe for memtrimd is {test}, not /healthz on port {port}")
    print(f"kube_play_test: liveness probe as podman made it: {test}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--store", required=True, help="the test's own podman image store")
    ap.add_argument("--in-netns", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if not args.in_netns:
        if os.geteuid() != 0:
            skip("needs root (podman's image store, a network namespace)")
        for tool in ("unshare", "ip", "kubectl"):
            if not shutil.which(tool):
                skip(f"{tool} is not installed (scripts/install-deps.sh)")
        # The rest in a network namespace of its own: podman publishes the
        # pod's port on all addresses of this one, which no one else sees.
        os.execvp("unshare", ["unshare", "--net", "--", sys.executable, *sys.argv, "--in-netns"])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

    use_store(args.store, args.source)
    image = f"localhost/memtrimd:{project_version(args.source)}"
    if podman("image", "exists", image, check=False).returncode != 0:
        die(f"{image} is not in {args.store}: run container_image first (ctest -L container)")

    docs = render(args.source)
    deployment = deployment_of(docs)
    home, app_image = app_image_name(args.source)
    spec = replace_images(docs, image, app_image)
    memtrimd = next(c for c in spec["containers"] if c["name"] == "memtrimd")
    app = next(c for c in spec["containers"] if c["name"] == "app")
    port = memtrimd["ports"][0]["containerPort"]
    app_limit = 1 << 30 if app["resources"]["limits"]["memory"] == "1Gi" else None
    if app_limit is None:
        die(f"the app's limit is {app['resources']['limits']['memory']}, the test expects 1Gi")
    # podman names the pod after the Deployment, with its replica number.
    pod = f"{deployment['metadata']['name']}-pod-0"

    tmp = tempfile.mkdtemp(prefix="memtrimd-kube-play-")
    try:
        podman("pod", "rm", "--force", "--ignore", pod, check=False)
        t0 = time.monotonic()
        build_app_image(args.source, home, app_image, tmp)
        manifest = os.path.join(tmp, "sidecar.yaml")
        with open(manifest, "w") as f:
            yaml.safe_dump_all(docs, f, sort_keys=False)
        played = podman("kube", "play", manifest, check=False, timeout=300)
        if played.returncode != 0:
            die(f"podman kube play: exit {played.returncode}: {played.stderr}")
        print(f"kube_play_test: {OVERLAY} played (app image ready and pod started in "
              f"{time.monotonic() - t0:.0f} s)")
        check_probe(pod, port)
        check_pod(pod, port, app_limit)
        print("kube_play_test: PASS")
    finally:
        podman("pod", "rm", "--force", "--ignore", pod, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
