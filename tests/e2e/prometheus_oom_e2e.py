#!/usr/bin/env python3
"""End to end, the headline alert for real: a JVM (one per JDK found) and a
glibc program each run inside a memory cgroup with a real limit; their native
memory grows toward it, step by step as this test tells them; the shipped
RSS-vs-limit alerts must fire in a real Prometheus while they live, and after
the kernel's OOM kill memtrimd must count the kill.

For each workload, in its own cgroup (limit --limit-mib, no swap):

  1. RSS driven to 90 % of the limit: MemtrimdTargetRSSNearLimit (warning,
     > 85 %) and MemtrimdTargetRSSPredictedToReachLimit fire, naming the pid;
     the critical one does not.
  2. RSS driven to 96 %: MemtrimdTargetRSSNearLimit (critical, > 95 %) fires.
  3. The workload grows past the limit: the kernel kills it (SIGKILL, the
     cgroup's oom_kill count goes up by one).
  4. The workload is started again in the same cgroup, as a supervisor does
     (systemd's Restart= keeps the unit's cgroup): memtrimd, following a
     pidfile, picks up the new process and memtrimd_target_oom_kills_total
     goes from 0 to 1.

Prometheus's own history must agree: each alert's first firing sample is older
than the push past the limit, and the kill count's first 1 is newer.

The alert expressions are the shipped ones, unchanged; only their `for:`
durations are shortened, in a temporary copy of alerts.rules.yml.

memtrimd and Prometheus run outside the test cgroups, so neither can be the
one killed. Everything listens on 127.0.0.1. Every process started here is
killed by pid when the test ends, however it ends, and the cgroups are removed
(their processes killed by pid first).

Needs root and a cgroup memory controller (v2, or v1 on a hybrid host);
without them it prints a SKIP line and exits 77.

  prometheus_oom_e2e.py --source DIR --memtrimd BIN --grower BIN --agent LIB
                        --classpath DIR [--java BIN ...] [--prometheus BIN]
                        [--limit-mib N]
"""

import argparse
import glob
import os
import re
import select
import shutil
import signal
import sys
import tempfile
import time
import urllib.parse

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from e2e_cgroup import Cgroup, CgroupTree, read, skip, write
from e2e_support import Processes, die, free_port, http_json, memtrimd_port, wait_for

MIB = 1024 * 1024
# Where the workloads are driven to: past each alert's threshold (0.85, 0.95)
# with room for the JVM's own small allocations before the limit.
WARNING_LEVEL = 0.90
CRITICAL_LEVEL = 0.96
# Each growth step is small next to the distance between the thresholds and
# the limit, so a step never jumps past the level it aims at by much.
MAX_STEP = 8 * MIB
FOR_DURATION = "2s"
RSS_ALERTS = ("MemtrimdTargetRSSNearLimit", "MemtrimdTargetRSSPredictedToReachLimit")
STEP_SECONDS = 60


class Workload:
    """A program that grows its native memory by the bytes asked for on its
    stdin and answers each step on its stdout, inside its cgroup."""

    def __init__(self, name, argv, env, cgroup, tmp):
        self.name, self.argv, self.env, self.cgroup, self.tmp = name, argv, env, cgroup, tmp
        self.pidfile = f"{tmp}/{name}.pid"
        self.starts = 0
        self.p = None
        self.buffer = b""

    def start(self, procs):
        self.starts += 1
        self.buffer = b""
        self.p = procs.start(self.argv, f"{self.tmp}/{self.name}.{self.starts}.log", env=self.env,
                             pipes=True, before_exec=self.cgroup.join)
        line = self.reply()
        if line != f"ready {self.p.pid}":
            die(f"{self.name}: expected 'ready {self.p.pid}', got {line!r} "
                f"(exit {self.p.poll()}; see {self.tmp}/{self.name}.{self.starts}.log)")
        if self.p.pid not in self.cgroup.pids():
            die(f"{self.name}: pid {self.p.pid} is not in {self.cgroup.path}")
        # Written whole, then renamed: memtrimd never reads half a pid.
        write(self.pidfile + ".tmp", f"{self.p.pid}\n")
        os.rename(self.pidfile + ".tmp", self.pidfile)

    def reply(self, seconds=STEP_SECONDS):
        """The workload's next answer ("ready ..." or "grown ...") on its
        stdout, or None at end of file (it died). Other lines (HotSpot
        prints its warnings on stdout) are passed on to stderr."""
        fd = self.p.stdout.fileno()
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    die(f"{self.name}: no answer within {seconds} s")
                if select.select([fd], [], [], left)[0]:
                    chunk = os.read(fd, 4096)
                    if not chunk:
                        return None
                    self.buffer += chunk
            line, _, self.buffer = self.buffer.partition(b"\n")
            line = line.decode(errors="replace")
            if line.startswith(("ready ", "grown ")):
                return line
            print(f"prometheus_oom_e2e: {self.name} said: {line}", file=sys.stderr)

    def grow(self, nbytes):
        try:
            self.p.stdin.write(f"grow {nbytes}\n".encode())
            self.p.stdin.flush()
        except BrokenPipeError:
            return None
        return self.reply()

    def rss(self):
        for line in read(f"/proc/{self.p.pid}/status").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        die(f"{self.name}: no VmRSS in /proc/{self.p.pid}/status")

    def drive_to(self, level, limit):
        """Grows until RSS is at least level * limit; returns the RSS."""
        goal = int(level * limit)
        deadline = time.monotonic() + STEP_SECONDS
        while time.monotonic() < deadline:
            rss = self.rss()
            if rss >= goal:
                return rss
            if self.grow(min(MAX_STEP, goal - rss)) is None:
                die(f"{self.name}: died (exit {self.p.wait()}) at RSS {rss / MIB:.1f} MiB, "
                    f"on its way to {level:.0%} of {limit / MIB:.0f} MiB; the cgroup's charges "
                    f"beyond RSS leave less room than this test assumes")
        die(f"{self.name}: RSS did not reach {level:.0%} of the limit in {STEP_SECONDS} s")


def java_homes(explicit):
    """The java binaries to test: those given, else every JDK under
    /usr/lib/jvm (17 or newer, each installation once)."""
    if explicit:
        return explicit
    seen, out = set(), []
    for home in sorted(glob.glob("/usr/lib/jvm/*")):
        java = os.path.join(home, "bin", "java")
        if not os.path.exists(java) or os.path.realpath(java) in seen:
            continue
        try:
            m = re.search(r'^JAVA_VERSION="(\d+)', read(os.path.join(home, "release")), re.M)
        except OSError:
            continue
        if m and int(m.group(1)) >= 17:
            seen.add(os.path.realpath(java))
            out.append(java)
    return out


def java_major(java):
    home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    m = re.search(r'^JAVA_VERSION="(\d+)', read(os.path.join(home, "release")), re.M)
    return m.group(1) if m else "unknown"


def shortened_alerts(alerts_file, out_path):
    """The shipped alerts file with the `for:` of the RSS-vs-limit alerts
    shortened, and nothing else changed."""
    doc = yaml.safe_load(open(alerts_file))
    changed = 0
    for g in doc["groups"]:
        for r in g["rules"]:
            if r.get("alert") in RSS_ALERTS:
                r["for"] = FOR_DURATION
                changed += 1
    if changed != 3:
        die(f"expected 3 RSS-vs-limit alerts in {alerts_file}, found {changed}; update the test")
    yaml.safe_dump(doc, open(out_path, "w"), sort_keys=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--memtrimd", required=True)
    ap.add_argument("--grower", required=True, help="native_grower")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--classpath", required=True)
    ap.add_argument("--java", action="append", default=[],
                    help="a java binary to test (repeatable; default: every JDK in /usr/lib/jvm)")
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    ap.add_argument("--limit-mib", type=int, default=256)
    a = ap.parse_args()
    if os.geteuid() != 0:
        skip("needs root to create memory cgroups")
    tree = CgroupTree()
    javas = java_homes(a.java)
    for f in [a.memtrimd, a.grower, a.agent, a.prometheus] + javas:
        if not os.path.exists(f):
            die(f"{f} not found")
    if not javas:
        die("no JDK 17 or newer found under /usr/lib/jvm")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit("prometheus_oom_e2e: terminated"))
    tmp = tempfile.mkdtemp(prefix="memtrimd_oom_e2e.")
    procs = Processes()
    cgroups = []
    parent = None
    try:
        parent = tree.make_parent(f"memtrimd-e2e-{os.getpid()}")
        run(a, tree, parent, javas, tmp, procs, cgroups)
    finally:
        procs.stop_all()
        for c in cgroups:
            c.remove()
        if parent:
            try:
                os.rmdir(parent)
            except OSError as e:
                print(f"prometheus_oom_e2e: cannot remove {parent}: {e}", file=sys.stderr)
        if os.environ.get("MEMTRIMD_E2E_KEEP"):
            print(f"prometheus_oom_e2e: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(a, tree, parent, javas, tmp, procs, cgroups):
    limit = a.limit_mib * MIB
    workloads = []

    def add(name, argv, env=None):
        c = Cgroup(tree, parent, name, limit)
        cgroups.append(c)
        workloads.append(Workload(name, argv, env, c, tmp))

    add("glibc", [os.path.abspath(a.grower)],
        env=dict(os.environ, LD_PRELOAD=os.path.abspath(a.agent)))
    for java in javas:
        name = f"jdk{java_major(java)}"
        same = sum(1 for w in workloads if w.name.split("-")[0] == name)
        name = f"{name}-{same + 1}" if same else name
        # A small, pre-touched heap (so RSS does not move with GC), and a
        # direct memory limit far above the cgroup's, as in a container
        # where -XX:MaxDirectMemorySize was never thought about.
        add(name, [java, "-Xms32m", "-Xmx32m", "-XX:+AlwaysPreTouch",
                   f"-XX:MaxDirectMemorySize={4 * a.limit_mib}m",
                   "-cp", a.classpath, "NativeGrower"])
    for w in workloads:
        w.start(procs)

    fast = ["--web.listen-address=127.0.0.1:0", "--sample.interval=1s", "--smaps.interval=2s",
            "--jvm.interval=2s"]
    daemons = {}
    for w in workloads:
        log = f"{tmp}/memtrimd-{w.name}.log"
        daemons[w.name] = (procs.start([a.memtrimd, f"--target.pidfile={w.pidfile}"] + fast, log),
                           log)
    instance = {}
    for w in workloads:
        p, log = daemons[w.name]
        port = wait_for(f"memtrimd for {w.name} to listen", lambda log=log: memtrimd_port(log),
                        processes=[p])
        instance[w.name] = f"127.0.0.1:{port}"

    rules_dir = os.path.join(os.path.abspath(a.source), "deploy", "prometheus")
    alerts = f"{tmp}/alerts.rules.yml"
    shortened_alerts(os.path.join(rules_dir, "alerts.rules.yml"), alerts)
    prom_port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [os.path.join(rules_dir, "recording.rules.yml"), alerts],
        "scrape_configs": [{"job_name": "memtrimd",
                            "static_configs": [{"targets": sorted(instance.values())}]}],
    }
    yaml.safe_dump(config, open(f"{tmp}/prometheus.yml", "w"))
    prom = procs.start([a.prometheus, f"--config.file={tmp}/prometheus.yml",
                        f"--storage.tsdb.path={tmp}/data",
                        f"--web.listen-address=127.0.0.1:{prom_port}"], f"{tmp}/prometheus.log")
    api = f"http://127.0.0.1:{prom_port}/api/v1"
    services = [prom] + [p for p, _ in daemons.values()]

    def query(expr):
        r = http_json(f"{api}/query?" + urllib.parse.urlencode({"query": expr}))
        return r["data"]["result"] if r.get("status") == "success" else None

    def samples(selector, since, until):
        """The raw samples of the series `selector` picks, with the times
        they were scraped or evaluated at: {labels: [(t, value)]}."""
        window = int(until - since) + 2
        r = http_json(f"{api}/query?" + urllib.parse.urlencode(
            {"query": f"{selector}[{window}s]", "time": f"{until:.3f}"}))
        if r.get("status") != "success":
            die(f"query {selector}[{window}s]: {r}")
        return {tuple(sorted(s["metric"].items())): [(float(t), float(v)) for t, v in s["values"]]
                for s in r["data"]["result"]}

    def alerts_for(w, state):
        """(alertname, severity) of the alerts in `state` naming w's current
        process."""
        data = http_json(f"{api}/alerts").get("data", {}).get("alerts", [])
        return {(x["labels"]["alertname"], x["labels"].get("severity")): x for x in data
                if x["state"] == state and x["labels"].get("pid") == str(w.p.pid)
                and x["labels"].get("instance") == instance[w.name]}

    started = time.time()
    wait_for("Prometheus to be ready", lambda: query("vector(1)"), processes=services)
    for w in workloads:
        sel = f'instance="{instance[w.name]}",pid="{w.p.pid}"'
        wait_for(f"memtrimd to report {w.name}'s limit and OOM kill count",
                 lambda sel=sel: query(f"memtrimd_target_memory_limit_bytes{{{sel}}} == {limit}")
                 and query(f"memtrimd_target_oom_kills_total{{{sel}}} == 0"), processes=services)

    # 1. Past the warning threshold.
    for w in workloads:
        rss = w.drive_to(WARNING_LEVEL, limit)
        print(f"prometheus_oom_e2e: {w.name} (pid {w.p.pid}): RSS at {rss / limit:.1%} of the "
              f"limit, the cgroup's usage at {w.cgroup.usage() / limit:.1%}")
    fired = {w.name: {} for w in workloads}
    for w in workloads:
        want = {("MemtrimdTargetRSSNearLimit", "warning"),
                ("MemtrimdTargetRSSPredictedToReachLimit", "warning")}
        firing = wait_for(f"the warning alerts for {w.name}",
                          lambda w=w: (lambda f: f if want <= f.keys() else None)(
                              alerts_for(w, "firing")), processes=services)
        fired[w.name].update({k: (time.time(), firing[k]) for k in want})
        early = [k for k in list(alerts_for(w, "firing")) + list(alerts_for(w, "pending"))
                 if k[1] == "critical"]
        if early:
            die(f"{w.name}: the critical alert is already {early} at {w.rss() / limit:.1%}")

    # 2. Past the critical threshold.
    for w in workloads:
        rss = w.drive_to(CRITICAL_LEVEL, limit)
        print(f"prometheus_oom_e2e: {w.name} (pid {w.p.pid}): RSS at {rss / limit:.1%} of the "
              f"limit, the cgroup's usage at {w.cgroup.usage() / limit:.1%}")
    for w in workloads:
        key = ("MemtrimdTargetRSSNearLimit", "critical")
        firing = wait_for(f"the critical alert for {w.name}",
                          lambda w=w: alerts_for(w, "firing").get(key), processes=services)
        fired[w.name][key] = (time.time(), firing)

    # 3. Past the limit: the kernel's OOM kill.
    pushed, killed, old_pid = {}, {}, {}
    for w in workloads:
        before = w.cgroup.oom_kills()
        old_pid[w.name] = w.p.pid
        pushed[w.name] = time.time()
        if w.grow(limit) is not None:
            die(f"{w.name}: grew by the whole limit and was not killed")
        code = w.p.wait(timeout=STEP_SECONDS)
        killed[w.name] = time.time()
        if code != -signal.SIGKILL:
            die(f"{w.name}: exited with {code}, not killed by SIGKILL (see its log in {tmp})")
        if w.cgroup.oom_kills() != before + 1:
            die(f"{w.name}: the cgroup counts {w.cgroup.oom_kills()} OOM kills, not {before + 1}")
        print(f"prometheus_oom_e2e: {w.name} (pid {w.p.pid}) OOM-killed by the kernel")

    # 4. Started again in the same cgroup; memtrimd follows the pidfile.
    for w in workloads:
        w.start(procs)
    for w in workloads:
        sel = f'instance="{instance[w.name]}",pid="{w.p.pid}"'
        wait_for(f"memtrimd to count {w.name}'s OOM kill",
                 lambda sel=sel: query(f"memtrimd_target_oom_kills_total{{{sel}}} == 1"),
                 processes=services)

    # Prometheus's history agrees: every alert fired before the push past the
    # limit, and the kill was counted after it.
    problems = []
    end = time.time()
    for w in workloads:
        inst, pid = instance[w.name], old_pid[w.name]
        for (name, severity), (seen, alert) in sorted(fired[w.name].items()):
            what = f"{w.name}: {name} {severity}"
            if alert["labels"].get("pid") != str(pid):
                problems.append(f"{what} names pid {alert['labels'].get('pid')}, not {pid}")
            history = samples(f'ALERTS{{alertname="{name}",severity="{severity}",'
                              f'alertstate="firing",instance="{inst}",pid="{pid}"}}', started, end)
            if not history:
                problems.append(f"{what}: no firing sample in Prometheus's history")
                continue
            first = min(t for values in history.values() for t, _ in values)
            if not first < pushed[w.name]:
                problems.append(f"{what}: first fired at {first:.3f}, not before the push past "
                                f"the limit at {pushed[w.name]:.3f}")
            print(f"prometheus_oom_e2e: {what} fired {pushed[w.name] - first:.1f} s before "
                  f"the push past the limit (seen firing by the test "
                  f"{killed[w.name] - seen:.1f} s before the kill was seen)")
        kills = samples(f'memtrimd_target_oom_kills_total{{instance="{inst}"}}', started, end)
        # The old pid's series: 0 until the push past the limit. The kernel
        # counts the kill when it sends SIGKILL; a large process takes a
        # moment to exit after that, and memtrimd may read it (and the
        # cgroup's count of 1, which is true) in that moment.
        old_series = [(t, v) for labels, values in kills.items() if ("pid", str(pid)) in labels
                      for t, v in values]
        before_push = [v for t, v in old_series if t <= pushed[w.name]]
        if not before_push or any(v != 0 for v in before_push):
            problems.append(f"{w.name}: pid {pid} was not exported with 0 OOM kills before the "
                            f"push past the limit: {before_push}")
        if any(v not in (0, 1) for _, v in old_series):
            problems.append(f"{w.name}: pid {pid} exported other than 0 or 1 OOM kills: "
                            f"{[v for _, v in old_series]}")
        counted = [t for values in kills.values() for t, v in values if v >= 1]
        if not counted:
            problems.append(f"{w.name}: no OOM kill count in Prometheus's history")
        elif not min(counted) > pushed[w.name]:
            problems.append(f"{w.name}: OOM kill counted at {min(counted):.3f}, before the push "
                            f"past the limit at {pushed[w.name]:.3f}")

    for p in problems:
        print(f"prometheus_oom_e2e: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"prometheus_oom_e2e: {len(workloads)} workloads ({', '.join(w.name for w in workloads)})"
          f" in {a.limit_mib} MiB cgroups (v{tree.version}): warning, predicted and critical "
          f"alerts fired before each OOM kill, and memtrimd counted each kill")


if __name__ == "__main__":
    main()
