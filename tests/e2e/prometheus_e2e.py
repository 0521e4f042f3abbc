#!/usr/bin/env python3
"""End to end: a real Prometheus scrapes memtrimd watching a real JVM and a
real glibc program with the trim agent, and the same program on a preloaded
jemalloc (one memtrimd for each, and one in node-agent mode watching them and
a program it sees restart from glibc onto jemalloc), with the shipped rule
files loaded.

Then every PromQL expression of the dashboards and the recording rules is run
through Prometheus's HTTP API: any error fails, and so does an expression that
returns no data unless it is listed in MAY_BE_EMPTY with the reason. Every
rule must evaluate without error, and one shipped alert with its threshold
lowered (the only change) must be seen firing in /api/v1/alerts.

Table rows that link to another dashboard (the fleet dashboard's rows open
the per-target one) must carry every field their link sets, and the linked
dashboard opened on a row's pid must show that target only.

Everything listens on 127.0.0.1. Every process started here is killed by pid
when the test ends, however it ends (and by the kernel if this script dies:
PR_SET_PDEATHSIG).

  prometheus_e2e.py --source DIR --memtrimd BIN --fragmenter BIN --agent LIB
                    --jemalloc LIB --classpath DIR [--java BIN] [--prometheus BIN]
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import urllib.parse

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from e2e_cgroup import Cgroup, CgroupTree
from e2e_support import Processes, die, free_port, http_json, memtrimd_port, poll, wait_for

# Grafana's variables, replaced before a query is sent. The selectors match
# everything (series outside Kubernetes have no pod label; ".*" matches the
# empty value). Ranges are short because Prometheus scrapes every second here.
GRAFANA_VARIABLES = {
    "$__rate_interval": "10s",
    "$__interval": "2s",
    "$__range": "1m",
    "${job}": ".*",
    "${instance}": ".*",
    "${pod}": ".*",
    "$job": ".*",
    "$instance": ".*",
    "$pod": ".*",
    "${pid}": ".*",
    "$pid": ".*",
}

# The dashboard for many targets; its panels are also checked on the
# node-agent memtrimd alone.
FLEET_DASHBOARD = "memtrimd-fleet.json"

# Expressions that may return nothing in this setup, each with the reason.
# Matched against the expression after variable substitution, as regexes.
MAY_BE_EMPTY = {
    # A trim that took no time inside the last 10 s window leaves the rate of
    # the histogram at 0/0.
    r"histogram_quantile\(.*memtrimd_trim_duration_seconds_bucket": "no trim in the window",
    r"rate\(memtrimd_trim_duration_seconds_sum": "no trim in the window",
    r"changes\(memtrimd_trim_last_success_timestamp_seconds": "no trim in the window",
    # The test's processes are not in a pod, and there is no kube-state-metrics
    # (tests/rules/kubernetes.test.yml covers these joins). Only what needs
    # the join: the fleet dashboard's queries fall back to
    # memtrimd_target_info ("or") and must answer.
    r"kube_pod_info|\(\s*memtrimd:target_info:kubernetes\s*\)": "no pods and no kube-state-metrics here",
    # The allocation site panels: the memtrimds here run without
    # --collector.sites (tests/integration's sites tests read the sites).
    r"memtrimd_native_site_resident_bytes": "no --collector.sites here",
}

# Only where this machine lets the test give the glibc program a memory
# limit (root, a memory controller) do the limit panels have data.
NO_LIMIT_MAY_BE_EMPTY = {
    r"memtrimd_target_memory_limit_bytes": "no cgroup memory limit here",
    r"memtrimd:target_rss_limit_ratio": "no cgroup memory limit here",
}
# The glibc program's memory limit: far above what it uses.
NATIVE_LIMIT = 1 << 30


class NoLimit(Exception):
    pass


def no_limit(reason):
    raise NoLimit(reason)


def dashboard_expressions(dashboard_dir):
    """(where, expr) for every panel target and query variable."""
    out = []
    for path in sorted(glob.glob(os.path.join(dashboard_dir, "*.json"))):
        d = json.load(open(path))
        name = os.path.basename(path)

        def panels(ps):
            for p in ps:
                yield p
                yield from panels(p.get("panels", []))

        for p in panels(d.get("panels", [])):
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((f"{name}: panel '{p.get('title')}' {t.get('refId', '')}", t["expr"]))
        for a in d.get("annotations", {}).get("list", []):
            if a.get("expr"):
                out.append((f"{name}: annotation '{a.get('name')}'", a["expr"]))
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") != "query":
                continue
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            # label_values(expr, label) is Grafana's; its expr part is PromQL.
            m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q or "")
            if m:
                out.append((f"{name}: variable '{v.get('name')}'", m.group(1)))
    return out


def rule_expressions(rule_files, kind):
    out = []
    for path in rule_files:
        for g in yaml.safe_load(open(path))["groups"]:
            for r in g["rules"]:
                if kind in r:
                    out.append((f"{os.path.basename(path)}: {r[kind]}", r["expr"]))
    return out


def substitute(expr, values=None):
    """expr with Grafana's variables replaced; values ({name: value}) set
    some to one value instead of All."""
    variables = dict(GRAFANA_VARIABLES)
    for name, value in (values or {}).items():
        # As Grafana escapes a value for =~: a regex, inside a PromQL string.
        regex = re.escape(value).replace("\\", "\\\\")
        variables["$" + name] = variables["${" + name + "}"] = regex
    for k in sorted(variables, key=len, reverse=True):
        expr = expr.replace(k, variables[k])
    return expr


def all_panels(ps):
    for p in ps:
        yield p
        yield from all_panels(p.get("panels", []))


# A data link's "var-NAME=${__data.fields.FIELD}": the row's FIELD sets the
# linked dashboard's variable NAME.
LINK_FIELD = re.compile(r"[?&]var-(\w+)=\$\{__data\.fields\.(\w+)\}")
SELECTOR = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\}")


def check_links(dashboard_dir, query, problems):
    """Every table row with a link to a dashboard of dashboard_dir has the
    fields the link puts in the URL; the linked dashboard opened on a row's
    pid (instance left at All) shows only that pid: each expression that
    filters every selector on pid answers, and with series of that target
    only. Returns how many (link, pid) pairs were followed."""
    boards = {}
    for path in sorted(glob.glob(os.path.join(dashboard_dir, "*.json"))):
        d = json.load(open(path))
        boards[d.get("uid")] = (os.path.basename(path), d)
    followed = set()
    for name, d in boards.values():
        for p in all_panels(d.get("panels", [])):
            for link in p.get("fieldConfig", {}).get("defaults", {}).get("links", []):
                m = re.match(r"/d/([^/?]+)", link.get("url", ""))
                if not m:
                    continue
                where = f"{name}: panel '{p.get('title')}' link"
                if m.group(1) not in boards:
                    problems.append(f"{where}: no dashboard with uid {m.group(1)}")
                    continue
                fields = LINK_FIELD.findall(link["url"])
                rows = [s["metric"] for t in p.get("targets", [])
                        for s in query(substitute(t["expr"])).get("data", {}).get("result", [])]
                for row in rows:
                    missing = [f for _, f in fields if not row.get(f)]
                    if missing:
                        problems.append(f"{where}: a row without {', '.join(missing)}: {row}")
                whole = [r for r in rows if all(r.get(f) for _, f in fields)]
                values = {var: whole[0][f] for var, f in fields} if whole else {}
                if "pid" in values and (m.group(1), values["pid"]) not in followed:
                    followed.add((m.group(1), values["pid"]))
                    check_one_pid(boards[m.group(1)], values["pid"], query,
                                  f"{where} to pid {values['pid']}", problems)
    return len(followed)


def check_one_pid(board, pid, query, where, problems):
    name, d = board
    owners = {s["metric"].get("instance") for s in
              query(f'memtrimd_target_info{{pid="{pid}"}}').get("data", {}).get("result", [])}
    if not owners:
        problems.append(f"{where}: no memtrimd_target_info has pid {pid}")
        return
    filtered = 0
    for p in all_panels(d.get("panels", [])):
        for t in p.get("targets", []):
            selectors = SELECTOR.findall(t["expr"])
            if not selectors or not all('pid=~"$pid"' in s for s in selectors):
                continue
            filtered += 1
            r = query(substitute(t["expr"], {"pid": pid}))
            if r.get("status") != "success":
                problems.append(f"{where}: {name} '{p.get('title')}': error {r.get('error')!r}")
                continue
            for s in r["data"]["result"]:
                labels = s["metric"]
                other_pid = labels.get("pid", pid) != pid
                other_instance = "instance" in labels and labels["instance"] not in owners
                if other_pid or other_instance:
                    problems.append(f"{where}: {name} '{p.get('title')}' shows another "
                                    f"target: {labels}")
    if not filtered:
        problems.append(f"{where}: no expression of {name} filters on the pid variable")


# The shipped alert the test lowers until it fires on its JVM: the risk
# check's verdict (0 for the test's JVM, which caches nothing) is accepted
# whatever it is.
OVERRIDDEN_ALERT = "MemtrimdJvmNioBufferCacheUnbounded"
OVERRIDDEN_THRESHOLD = 'memtrimd_jvm_risk{check="nio_cache_unbounded"} == 1'
OVERRIDDEN_WITH = 'memtrimd_jvm_risk{check="nio_cache_unbounded"} >= 0'


def override_rules(alerts_file, out_path):
    """The shipped NIO buffer cache alert with its condition lowered so that it
    fires on the test's JVM (which caches nothing): nothing else changes."""
    groups = yaml.safe_load(open(alerts_file))["groups"]
    for g in groups:
        for r in g["rules"]:
            if r.get("alert") == OVERRIDDEN_ALERT:
                expr = r["expr"]
                lowered = expr.replace(OVERRIDDEN_THRESHOLD, OVERRIDDEN_WITH)
                if lowered == expr:
                    die(f"{OVERRIDDEN_ALERT} no longer compares with {OVERRIDDEN_THRESHOLD}; "
                        "update the test")
                rule = dict(r, expr=lowered, labels=dict(r["labels"], test="override"))
                rule["for"] = "0s"
                yaml.safe_dump({"groups": [{"name": "e2e.override", "rules": [rule]}]},
                               open(out_path, "w"))
                return
    die(f"alert {OVERRIDDEN_ALERT} not found in " + alerts_file)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--memtrimd", required=True)
    ap.add_argument("--fragmenter", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--jemalloc", required=True, help="libjemalloc.so.2, preloaded into a target")
    ap.add_argument("--classpath", required=True)
    ap.add_argument("--java", default="/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    a = ap.parse_args()
    if not a.jemalloc:
        die("libjemalloc.so.2 was not found at build time (scripts/install-deps.sh installs it)")
    for f in (a.memtrimd, a.fragmenter, a.agent, a.jemalloc, a.java, a.prometheus):
        if not os.path.exists(f):
            die(f"{f} not found")

    # Absolute: Prometheus reads rule_files relative to its config file.
    rules_dir = os.path.join(os.path.abspath(a.source), "deploy", "prometheus")
    rule_files = [os.path.join(rules_dir, "recording.rules.yml"),
                  os.path.join(rules_dir, "alerts.rules.yml")]
    # SIGTERM (ctest's timeout, a user's kill) unwinds through the finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("prometheus_e2e: terminated"))
    tmp = tempfile.mkdtemp(prefix="memtrimd_e2e.")
    procs = Processes()
    cgroup, parent = None, None
    try:
        if os.geteuid() == 0:
            try:
                tree = CgroupTree(unavailable=no_limit)
                parent = tree.make_parent(f"memtrimd-e2e-{os.getpid()}")
                cgroup = Cgroup(tree, parent, "native", NATIVE_LIMIT)
            except NoLimit as e:
                print(f"prometheus_e2e: the glibc program runs without a memory limit: {e}")
        else:
            print("prometheus_e2e: not root: the glibc program runs without a memory limit")
        if cgroup is None:
            MAY_BE_EMPTY.update(NO_LIMIT_MAY_BE_EMPTY)
        run(a, tmp, procs, rule_files, cgroup)
    finally:
        procs.stop_all()
        if cgroup:
            cgroup.remove()
        if parent:
            try:
                os.rmdir(parent)
            except OSError as e:
                print(f"prometheus_e2e: cannot remove {parent}: {e}", file=sys.stderr)
        if os.environ.get("MEMTRIMD_E2E_KEEP"):
            print(f"prometheus_e2e: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(a, tmp, procs, rule_files, cgroup):
    # The targets: a JVM with NMT on and the agent preloaded (buffer pools,
    # temporary buffer cache, malloc statistics on any JDK), and the
    # fragmenting glibc workload with the agent and one malloc setting in
    # its environment (MALLOC_PERTURB_=0, glibc's default: it changes nothing),
    # in a cgroup of its own with a memory limit where the machine allows one.
    # MEMTRIMD_TRIM=1: the node-agent memtrimd below trims them too (node
    # mode trims only the targets that opt in).
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.agent), MEMTRIMD_TRIM="1")
    jvm = procs.start([a.java, "-XX:NativeMemoryTracking=summary", "-Xmx256m", "-cp", a.classpath,
                       "NativeChurn", "--threads", "4", "--quiet", "--ready-file",
                       f"{tmp}/jvm.ready"], f"{tmp}/jvm.log", env=env)
    native = procs.start([a.fragmenter, "--threads", "8", "--rounds", "2", "--burst-mib", "16",
                          "--quiet", "--ready-file", f"{tmp}/native.ready"],
                         f"{tmp}/native.log", env=dict(env, MALLOC_PERTURB_="0"),
                         before_exec=cgroup.join if cgroup else None)
    # The same workload on a preloaded jemalloc (the allocator panels, its
    # free memory and its findings), and one that the node-agent memtrimd
    # sees restart from glibc onto jemalloc (the "allocator changed" panels).
    # The agent comes after the allocator, as a user would add it.
    jemalloc_env = dict(env, LD_PRELOAD=f"{os.path.abspath(a.jemalloc)}:{os.path.abspath(a.agent)}")
    fragment = ["--threads", "4", "--rounds", "2", "--burst-mib", "16", "--quiet"]
    on_jemalloc = procs.start([a.fragmenter] + fragment + ["--ready-file", f"{tmp}/jemalloc.ready"],
                              f"{tmp}/jemalloc.log", env=jemalloc_env)
    switch_argv = [a.fragmenter] + fragment + ["--ready-file", f"{tmp}/switch.ready"]
    switch = procs.start(switch_argv, f"{tmp}/switch-glibc.log", env=env)
    # A JVM at risk now (its direct pool at 15 of 16 MiB, read by the agent):
    # the fleet's risk panel has a row only where a check finds a risk, and
    # settings alone are advice.
    risky = procs.start([a.java, "-XX:MaxDirectMemorySize=16m", "-Xmx64m", "-cp", a.classpath,
                         "BufferPools", "--ready-file", f"{tmp}/risky.ready", "--direct", "15",
                         "--direct-bytes", str(1 << 20)], f"{tmp}/risky.log", env=env)
    ready = [f"{tmp}/{n}.ready" for n in ("jvm", "native", "jemalloc", "switch", "risky")]
    wait_for("the targets to be ready", lambda: all(os.path.exists(f) for f in ready),
             processes=[jvm, native, on_jemalloc, switch, risky])

    fast = ["--web.listen-address=127.0.0.1:0", "--sample.interval=1s", "--smaps.interval=2s",
            "--jvm.interval=2s", "--trim.interval=3s", "--trim.jitter=0"]
    daemons = []
    for name, target in (("jvm", jvm), ("native", native), ("jemalloc", on_jemalloc)):
        log = f"{tmp}/memtrimd-{name}.log"
        p = procs.start([a.memtrimd, f"--target.pid={target.pid}"] + fast, log)
        daemons.append((p, log))
    # And one in node-agent mode over the same processes (the fleet
    # dashboard's case: one instance, several targets), selected by their
    # ready files so that nothing else on the machine is watched. The RSS
    # floor is low so that the glibc program counts, whatever its size now.
    node_match = re.escape(tmp) + r"/(jvm|native|jemalloc|switch|risky)\.ready"
    log = f"{tmp}/memtrimd-node.log"
    p = procs.start([a.memtrimd, "--targets=node", f"--targets.match={node_match}",
                     "--targets.min-rss=1MiB", "--discovery.interval=1s"] + fast, log)
    daemons.append((p, log))
    ports = [wait_for("memtrimd to listen", lambda log=log: memtrimd_port(log), processes=[p])
             for p, log in daemons]
    node_instance = f"127.0.0.1:{ports[-1]}"

    override = f"{tmp}/override.rules.yml"
    override_rules(rule_files[1], override)
    prom_port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": rule_files + [override],
        "scrape_configs": [{
            "job_name": "memtrimd",
            "static_configs": [{"targets": [f"127.0.0.1:{p}" for p in ports]}],
        }],
    }
    yaml.safe_dump(config, open(f"{tmp}/prometheus.yml", "w"))
    prom = procs.start([a.prometheus, f"--config.file={tmp}/prometheus.yml",
                        f"--storage.tsdb.path={tmp}/data",
                        f"--web.listen-address=127.0.0.1:{prom_port}"], f"{tmp}/prometheus.log")
    api = f"http://127.0.0.1:{prom_port}/api/v1"

    def query(expr):
        return http_json(f"{api}/query?" + urllib.parse.urlencode({"query": expr}))

    def query_range(expr, seconds):
        end = time.time()
        r = http_json(f"{api}/query_range?" + urllib.parse.urlencode(
            {"query": expr, "start": end - seconds, "end": end, "step": 1}))
        return r.get("data", {}).get("result", []) if r.get("status") == "success" else []

    def has_data(expr):
        r = query(expr)
        return r.get("status") == "success" and r["data"]["result"]

    everyone = [jvm, native, on_jemalloc, risky, prom] + [p for p, _ in daemons]
    wait_for("Prometheus to be ready", lambda: has_data("vector(1)"), processes=everyone)
    wait_for("every memtrimd to be scraped",
             lambda: len(query('up{job="memtrimd"} == 1').get("data", {}).get("result", []))
             == len(daemons), processes=everyone)
    # The restart onto jemalloc: the node-agent memtrimd first sees the
    # program on glibc, then the same command line as a new process on
    # jemalloc. Scraped on both sides, so "RSS by allocator" has two lines.
    wait_for("the node-agent memtrimd to see the program on glibc",
             lambda: has_data(f'memtrimd_target_info{{instance="{node_instance}", '
                              f'pid="{switch.pid}", allocator="glibc"}}'),
             processes=everyone + [switch])
    old_pid = switch.pid
    switch.terminate()
    switch.wait(timeout=30)
    os.unlink(f"{tmp}/switch.ready")
    switch = procs.start(switch_argv, f"{tmp}/switch-jemalloc.log", env=jemalloc_env)
    everyone.append(switch)
    wait_for("the restarted program to be ready", lambda: os.path.exists(f"{tmp}/switch.ready"),
             processes=everyone)
    wait_for("the node-agent memtrimd to see the allocator change",
             lambda: has_data(f'memtrimd_allocator_risk{{instance="{node_instance}", '
                              f'pid="{switch.pid}", check="allocator_changed"}} == 1'),
             processes=everyone)
    wait_for("the node-agent memtrimd to watch every process",
             lambda: has_data("memtrimd_targets_watched == 5"), processes=everyone)
    # Enough history for every part: a trim through each backend, NMT and
    # malloc statistics, and rates over several scrapes.
    wait_for("a trim through the JVM and through the agent",
             lambda: len(query('memtrimd_trim_runs_total{result="success"} > 0')
                         .get("data", {}).get("result", [])) >= 2, processes=everyone)
    wait_for("a trim of the program on jemalloc (its purge, through the agent)",
             lambda: has_data(f'memtrimd_trim_runs_total{{pid="{on_jemalloc.pid}", '
                              'result="success"} > 0'), processes=everyone)
    wait_for("a trim by the node-agent memtrimd (its targets opted in)",
             lambda: has_data(f'memtrimd_trim_runs_total{{instance="{node_instance}", '
                              'result="success"} > 0'), processes=everyone)
    if cgroup:
        # Every memtrimd that watches it (its sidecar, the node agent) reads
        # the limit the test set.
        limit = f'memtrimd_target_memory_limit_bytes{{pid="{native.pid}"}} == {NATIVE_LIMIT}'
        wait_for("the glibc program's memory limit",
                 lambda: len(query(limit).get("data", {}).get("result", [])) == 2,
                 processes=everyone)
    for needed in ("memtrimd_jvm_nmt_committed_bytes", "memtrimd_glibc_malloc_system_bytes",
                   "memtrimd_trim_last_reclaimed_bytes",
                   'memtrimd_allocator_bytes{allocator="jemalloc"}',
                   'memtrimd_rss_account_bytes{part="allocator_free"}'):
        wait_for(needed, lambda n=needed: has_data(n), processes=everyone)
    # Rates need two scrapes of each memtrimd (the GC panels have only the
    # JVM's), not just of the first one scraped.
    wait_for("two scrapes of each memtrimd",
             lambda: len(query("rate(memtrimd_samples_total[10s]) > 0")
                         .get("data", {}).get("result", [])) == len(daemons), processes=everyone)

    problems = []

    def answer(where, expr):
        r = query(expr)
        if r.get("status") != "success":
            problems.append(f"{where}: error {r.get('error')!r} for {expr}")
            return
        if r["data"]["result"]:
            return
        allowed = [MAY_BE_EMPTY[p] for p in MAY_BE_EMPTY if re.search(p, expr)]
        if allowed:
            print(f"prometheus_e2e: empty, allowed ({allowed[0]}): {where}")
            return
        # Some series are left out for a moment by design (the trimmable
        # estimate between a trim and the fresh malloc statistics): only an
        # expression that stays empty is a problem.
        if poll(lambda e=expr: has_data(e), 10):
            return
        problems.append(f"{where}: no data for {expr}")

    dashboards = dashboard_expressions(os.path.join(a.source, "dashboards"))
    expressions = dashboards + rule_expressions(rule_files, "record")
    for where, raw in expressions:
        answer(where, substitute(raw))
    checked = len(expressions)
    # The fleet dashboard on the node-agent memtrimd alone: node mode serves
    # no detail families by default, and the fleet panels must not need them.
    for where, raw in dashboards:
        if where.startswith(FLEET_DASHBOARD + ":"):
            answer(f"{where} (node-agent instance only)",
                   substitute(raw, {"instance": node_instance}))
            checked += 1

    # The before/after of the restart: "RSS by allocator" over the last
    # minutes draws the old process on glibc and the new one on jemalloc
    # (the recording rule it reads may lag the raw series by a few rounds).
    rss_by_allocator = [raw for where, raw in dashboards
                        if where.endswith("panel 'RSS by allocator' A")]
    wanted = {(str(old_pid), "glibc"), (str(switch.pid), "jemalloc")}

    def lines():
        return {(s["metric"].get("pid"), s["metric"].get("allocator")) for raw in rss_by_allocator
                for s in query_range(substitute(raw, {"instance": node_instance}), 180)}

    if not poll(lambda: wanted <= lines(), 30):
        problems.append(f"RSS by allocator: want lines for {sorted(wanted)} (pid, allocator), "
                        f"got {sorted(lines())}")

    followed = check_links(os.path.join(a.source, "dashboards"), query, problems)
    if not followed:
        problems.append("no dashboard row links to a target's dashboard with its pid")

    # Every rule (recording and alerting, shipped and override) is loaded and
    # evaluates.
    rules = http_json(f"{api}/rules")["data"]["groups"]
    shipped = sum(len(rule_expressions(rule_files, kind)) for kind in ("record", "alert"))
    loaded = sum(len(g["rules"]) for g in rules)
    if loaded != shipped + 1:
        problems.append(f"Prometheus loaded {loaded} rules, expected {shipped} shipped + 1 override")
    for g in rules:
        for r in g["rules"]:
            if r.get("health") != "ok":
                problems.append(f"rule {r.get('name')}: health {r.get('health')}: {r.get('lastError')}")

    # For the test's JVM (the JVM at risk has a cache series too, so the
    # lowered alert fires for it as well).
    def override_firing():
        alerts = http_json(f"{api}/alerts")["data"]["alerts"]
        return [x for x in alerts if x["labels"].get("alertname") == OVERRIDDEN_ALERT
                and x["labels"].get("test") == "override" and x["state"] == "firing"
                and x["labels"].get("pid") == str(jvm.pid)]

    firing = wait_for("the lowered NIO buffer cache alert to fire for the JVM", override_firing,
                      processes=everyone)
    if "per-thread NIO buffers" not in firing[0]["annotations"].get("summary", ""):
        problems.append(f"the firing alert's summary is {firing[0]['annotations']}")

    for p in problems:
        print(f"prometheus_e2e: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"prometheus_e2e: {checked} expressions answered, {followed} row links followed to a "
          f"pid, {sum(len(g['rules']) for g in rules)} rules healthy, the lowered alert fired "
          f"for pid {jvm.pid}")


if __name__ == "__main__":
    main()
