#!/usr/bin/env python3
"""Lints the Grafana dashboards in a directory against memtrimd's conventions.

    lint_dashboards.py DASHBOARDS_DIR docs/metrics.md
    lint_dashboards.py --self-test DASHBOARDS_DIR docs/metrics.md

Checks every *.json under DASHBOARDS_DIR: it parses; exactly one datasource
variable; job and instance variables; every panel but rows has a description
and a unit; every panel, target and query variable uses the ${datasource}
variable; rate/irate/increase use $__rate_interval (or $__range); every
selector matches job, instance (and pod when there is a pod variable) on
their variables, and a series with a `pid` label (the metric table's Labels column)
matches pid too when there is a pid variable, and one without it (a
histogram summed over every target, say) is never matched on pid, which
would leave the panel empty whenever one pid is chosen; panel ids are unique and
panels do not overlap; no ${DS_...} inputs; every metric is in docs/metrics.md's
table under "# Metrics" (histograms also with _bucket/_sum/_count), a
recording rule of the repository's deploy/prometheus/recording.rules.yml
(the metric page's directory's parent is the repository), or a series
Prometheus adds to every scrape (`up`, `scrape_*`); a data link to a
dashboard of the directory (/d/UID/...) names one that exists and sets only
variables it has.

Prints one line per problem and exits 1 if there is any. --self-test breaks
copies of the dashboards in a temporary directory, one class of problem at a
time, and checks that each is caught and that the originals pass.
"""
import collections
import json
import os
import re
import sys
import tempfile

# Relative to the repository (the metric page's directory's parent): the
# dashboards may use every rule the repository ships.
RECORDING_RULES_FILE = os.path.join("deploy", "prometheus", "recording.rules.yml")
# Prometheus adds these to every scrape.
ALWAYS_KNOWN = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                "scrape_samples_post_metric_relabeling", "scrape_series_added"}
RANGE_VARIABLES = {"$__rate_interval", "${__rate_interval}", "$__range", "${__range}"}
DATASOURCE_UIDS = {"${datasource}", "$datasource"}
GRID_WIDTH = 24

# PromQL words that are not metric names when not followed by "(".
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan",
    # aggregation operators may put a by/without clause before their "(".
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile",
}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}


def readme_metrics(readme_path, with_labels=False):
    """Metric name -> type (or (type, set of labels)) from the rows under the
    metric page's "# Metrics"."""
    metrics = {}
    in_section = False
    with open(readme_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                in_section = line.strip() == "# Metrics"
                continue
            if not in_section:
                continue
            m = re.match(r"^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\s*\|\s*([a-z]+)\s*\|([^|]*)\|", line)
            if m:
                labels = set(re.findall(r"[a-zA-Z_][a-zA-Z0-9_]*", m.group(3)))
                metrics[m.group(1)] = (m.group(2), labels) if with_labels else m.group(2)
    return metrics


def recording_rules(readme_path):
    """The `record:` names of the repository's recording rules file."""
    repository = os.path.dirname(os.path.dirname(os.path.abspath(readme_path)))
    path = os.path.join(repository, RECORDING_RULES_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            return set(re.findall(r"^\s*-?\s*record:\s*['\"]?([a-zA-Z_:][a-zA-Z0-9_:]*)", f.read(),
                                  re.MULTILINE))
    except OSError:
        return set()


def pid_metrics(readme_path):
    """Metrics whose row in the metric table lists a `pid` label."""
    return {name for name, (_, labels) in readme_metrics(readme_path, True).items()
            if "pid" in labels}


def metrics_without_pid(readme_path):
    """Series names (a histogram's _bucket/_sum/_count too) of the metric table's rows
    that list no `pid` label."""
    names = set()
    for name, (kind, labels) in readme_metrics(readme_path, True).items():
        if "pid" in labels:
            continue
        names.add(name)
        if kind == "histogram":
            names.update(name + s for s in ("_bucket", "_sum", "_count"))
    return names


def known_metric_names(readme_path):
    names = recording_rules(readme_path) | ALWAYS_KNOWN
    for name, kind in readme_metrics(readme_path).items():
        names.add(name)
        if kind == "histogram":
            names.update(name + s for s in ("_bucket", "_sum", "_count"))
    return names


# ------------------------------------------------------------------ PromQL
TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[a-zA-Z]*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<var>\$\{[^}]*\}|\$[a-zA-Z_][a-zA-Z0-9_]*)
  | (?P<brace>\{(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`|[^{}"'`])*\})
  | (?P<bracket>\[[^\]]*\])
  | (?P<op>[()\],@^*/%+\-<>=!~]+)
""", re.VERBOSE)


def tokenize(expr):
    """[(kind, text)] without whitespace; raises ValueError on junk."""
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot tokenize at {expr[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


def parse_matchers(brace):
    """{a=~"x", b="y"} -> [(label, op, value)]."""
    return re.findall(r"""([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:\\.|[^"\\])*"|'[^']*'|`[^`]*`)""",
                      brace)


def selectors(tokens):
    """[(metric name or None, matchers text or None)] of the vector selectors."""
    out = []
    i, n = 0, len(tokens)
    while i < n:
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < n else (None, None)
        if kind == "ident" and text in GROUPING:
            i += 1
            if i < n and tokens[i][1] == "(":  # skip the label list: by (a, b)
                while i < n and not tokens[i][1].startswith(")"):
                    i += 1
                i += 1
            continue
        if kind == "ident" and text.lower() not in KEYWORDS and not (nxt[1] or "").startswith("("):
            brace = nxt[1] if nxt[0] == "brace" else None
            out.append((text, brace))
            i += 2 if brace else 1
            continue
        if kind == "brace":
            out.append((None, text))
        i += 1
    return out


def function_ranges(tokens, names):
    """[(function, range text)] for each range selector inside a call of `names`."""
    out = []
    for i, (kind, text) in enumerate(tokens):
        if kind != "ident" or text not in names:
            continue
        if i + 1 >= len(tokens) or not tokens[i + 1][1].startswith("("):
            continue
        depth = 0
        for kind2, text2 in tokens[i + 1:]:
            if kind2 == "op":
                depth += text2.count("(") - text2.count(")")
            elif kind2 == "bracket" and depth >= 1:
                out.append((text, text2))
            if depth <= 0 and kind2 == "op" and ")" in text2:
                break
    return out


# ------------------------------------------------------------------ dashboard
def all_panels(panels):
    for p in panels or []:
        yield p
        yield from all_panels(p.get("panels"))


def panel_name(p):
    return f'panel {p.get("id")} "{p.get("title", "")}"'


def uses_datasource_variable(ds):
    return isinstance(ds, dict) and ds.get("uid") in DATASOURCE_UIDS


def overlaps(a, b):
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def check_grid(name, panels, problems):
    placed = []
    for p in panels:
        g = p.get("gridPos")
        if not isinstance(g, dict) or not all(isinstance(g.get(k), int) for k in "xywh"):
            problems.append(f"{name}: {panel_name(p)}: no gridPos with integer x, y, w, h")
            continue
        if g["x"] < 0 or g["w"] <= 0 or g["h"] <= 0 or g["x"] + g["w"] > GRID_WIDTH:
            problems.append(f"{name}: {panel_name(p)}: gridPos {g} outside the {GRID_WIDTH}-column grid")
        for q, h in placed:
            if overlaps(g, h):
                problems.append(f"{name}: {panel_name(p)} overlaps {panel_name(q)}")
        placed.append((p, g))


def check_expr(name, where, expr, required_labels, ctx, problems):
    try:
        tokens = tokenize(expr)
    except ValueError as e:
        problems.append(f"{name}: {where}: {e}")
        return
    for fn, rng in function_ranges(tokens, {"rate", "irate", "increase"}):
        if rng[1:-1].strip() not in RANGE_VARIABLES:
            problems.append(f"{name}: {where}: {fn}() over {rng}, use [$__rate_interval] "
                            "(or [$__range])")
    sels = selectors(tokens)
    if not sels:
        problems.append(f"{name}: {where}: no metric selector in {expr!r}")
    for metric, brace in sels:
        if metric is None:
            problems.append(f"{name}: {where}: selector {brace} has no metric name")
        elif metric not in ctx.known:
            problems.append(f"{name}: {where}: metric {metric} is not in docs/metrics.md's "
                            "table (nor a recording rule or up)")
        matchers = {(label, op, value.strip("\"'`")) for label, op, value in parse_matchers(brace or "")}
        labels = list(required_labels)
        if "pid" in ctx.variables and metric in ctx.pid_metrics:
            labels.append("pid")
        for label in labels:
            if not ({(label, "=~", f"${label}"), (label, "=~", "${" + label + "}")} & matchers):
                problems.append(f'{name}: {where}: {metric} lacks {label}=~"${label}"')
        if metric in ctx.no_pid and any(label == "pid" for label, _, _ in matchers):
            problems.append(f"{name}: {where}: {metric} has no pid label: matched on pid it is "
                            "empty")


def variable_names(d):
    return {v.get("name") for v in d.get("templating", {}).get("list", [])}


def check_links(name, where, links, ctx, problems):
    """A link to /d/UID/... must name a dashboard of the directory and set only
    variables it has (Grafana ignores an unknown var-X and opens the target
    dashboard on its defaults: a row would open the wrong process)."""
    for link in links or []:
        url = str(link.get("url", ""))
        m = re.match(r"^/d/([^/?]+)", url)
        if not m:
            continue
        uid = m.group(1)
        if uid not in ctx.dashboards:
            problems.append(f"{name}: {where}: link to dashboard {uid!r}, which is not in the "
                            "directory")
            continue
        for var in re.findall(r"[?&]var-([a-zA-Z0-9_]+)=", url):
            if var not in ctx.dashboards[uid]:
                problems.append(f"{name}: {where}: link sets var-{var}, which dashboard {uid!r} "
                                "does not have")


def lint_dashboard(path, ctx):
    name = os.path.basename(path)
    problems = []
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        d = json.loads(raw)
    except (OSError, ValueError) as e:
        return [f"{name}: does not parse as JSON: {e}"]
    if not isinstance(d, dict):
        return [f"{name}: not a dashboard object"]
    if "${DS_" in raw or "__inputs" in d:
        problems.append(f"{name}: uses ${{DS_...}} import inputs; use the datasource variable")

    variables = d.get("templating", {}).get("list", [])
    by_name = {v.get("name"): v for v in variables}
    ctx = ctx._replace(variables=set(by_name))
    ds_vars = [v for v in variables if v.get("type") == "datasource"]
    if len(ds_vars) != 1:
        problems.append(f"{name}: {len(ds_vars)} datasource variables, want exactly one")
    elif ds_vars[0].get("name") != "datasource" or ds_vars[0].get("query") != "prometheus":
        problems.append(f'{name}: the datasource variable must be named "datasource" and '
                        'query "prometheus"')
    for required in ("job", "instance"):
        if required not in by_name:
            problems.append(f"{name}: no {required} variable")
    required_labels = [v for v in ("job", "instance", "pod") if v in by_name]
    for v in variables:
        if v.get("type") != "query":
            continue
        if not uses_datasource_variable(v.get("datasource")):
            problems.append(f'{name}: variable {v.get("name")}: datasource is not ${{datasource}}')
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        for metric in re.findall(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{,]", q):
            if metric not in ctx.known:
                problems.append(f'{name}: variable {v.get("name")}: metric {metric} is not in '
                                "docs/metrics.md's table")

    panels = list(all_panels(d.get("panels")))
    if not panels:
        problems.append(f"{name}: no panels")
    ids = {}
    for p in panels:
        pid = p.get("id")
        if pid in ids:
            problems.append(f"{name}: {panel_name(p)}: duplicate panel id (also {panel_name(ids[pid])})")
        ids[pid] = p
    check_grid(name, d.get("panels") or [], problems)
    for row in d.get("panels") or []:
        if row.get("type") == "row" and row.get("panels"):
            check_grid(name, row["panels"], problems)

    for p in panels:
        if p.get("type") == "row":
            continue
        where = panel_name(p)
        if not str(p.get("description", "")).strip():
            problems.append(f"{name}: {where}: no description")
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if not unit:
            problems.append(f"{name}: {where}: no unit (fieldConfig.defaults.unit)")
        if not uses_datasource_variable(p.get("datasource")):
            problems.append(f"{name}: {where}: datasource is not ${{datasource}}")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"{name}: {where}: no targets")
        for t in targets:
            tw = f'{where} target {t.get("refId")}'
            if not uses_datasource_variable(t.get("datasource")):
                problems.append(f"{name}: {tw}: datasource is not ${{datasource}}")
            expr = t.get("expr", "")
            if not expr.strip():
                problems.append(f"{name}: {tw}: empty expr")
                continue
            check_expr(name, tw, expr, required_labels, ctx, problems)
        defaults = p.get("fieldConfig", {}).get("defaults", {})
        check_links(name, where, defaults.get("links"), ctx, problems)
        for o in p.get("fieldConfig", {}).get("overrides", []):
            for prop in o.get("properties", []):
                if prop.get("id") == "links":
                    check_links(name, where, prop.get("value"), ctx, problems)
    check_links(name, "dashboard links", d.get("links"), ctx, problems)

    for a in d.get("annotations", {}).get("list", []):
        if "expr" not in a:
            continue
        where = f'annotation "{a.get("name")}"'
        if not uses_datasource_variable(a.get("datasource")):
            problems.append(f"{name}: {where}: datasource is not ${{datasource}}")
        check_expr(name, where, a["expr"], required_labels, ctx, problems)
    return problems


# What a dashboard is checked against: known metric names, the metrics with a
# pid label, the dashboards of the directory (uid -> variable names) for
# links, and (set per dashboard) the dashboard's own variable names.
Context = collections.namedtuple("Context", "known pid_metrics no_pid dashboards variables")


def dashboard_files(directory):
    return sorted(os.path.join(root, f) for root, _, fs in os.walk(directory)
                  for f in fs if f.endswith(".json"))


def context(directory, readme):
    dashboards = {}
    for path in dashboard_files(directory):
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue  # lint_dashboard reports it
        if isinstance(d, dict) and d.get("uid"):
            dashboards[d["uid"]] = variable_names(d)
    return Context(known_metric_names(readme), pid_metrics(readme), metrics_without_pid(readme),
                   dashboards, set())


def lint(directory, readme):
    ctx = context(directory, readme)
    problems = []
    if not readme_metrics(readme):
        problems.append(f"{readme}: no metrics found under \"# Metrics\"")
    files = dashboard_files(directory)
    if not files:
        problems.append(f"{directory}: no dashboards (*.json)")
    for path in files:
        problems.extend(lint_dashboard(path, ctx))
    return problems


# ------------------------------------------------------------------ self-test
def _first_target_panel(d):
    return next(p for p in all_panels(d["panels"]) if p.get("targets"))


class NotApplicable(Exception):
    """The dashboard has nothing this mutation breaks (e.g. no data links)."""


def _mutations():
    """(name, function(raw text) -> new raw text, expected substring); the
    function raises NotApplicable when the dashboard lacks what it breaks."""
    def edit(fn):
        def apply(raw):
            d = json.loads(raw)
            fn(d)
            return json.dumps(d, indent=2)
        return apply

    def first_link(d):
        for p in all_panels(d["panels"]):
            links = p.get("fieldConfig", {}).get("defaults", {}).get("links") or []
            for link in links:
                if str(link.get("url", "")).startswith("/d/"):
                    return link
        raise NotApplicable

    def link_uid(d):
        link = first_link(d)
        link["url"] = re.sub(r"^/d/[^/?]+", "/d/no-such-dashboard", link["url"])

    def link_var(d):
        link = first_link(d)
        link["url"] += "&var-no_such_variable=1"

    def pid_metric_without_pid(d):
        if "pid" not in variable_names(d):
            raise NotApplicable
        first(d)["targets"][0]["expr"] = f"memtrimd_target_threads{{{sel}}}"

    def first(d):
        return _first_target_panel(d)

    def set_expr(new):
        return edit(lambda d: first(d)["targets"][0].update(expr=new))

    def sub_expr(old, new):
        def fn(d):
            for p in all_panels(d["panels"]):
                for t in p.get("targets", []):
                    if old in t["expr"]:
                        t["expr"] = t["expr"].replace(old, new)
                        return
            raise AssertionError(f"no expr contains {old}")
        return edit(fn)

    def add_ds_var(d):
        d["templating"]["list"].append({"name": "ds2", "type": "datasource", "query": "prometheus"})

    def drop_var(n):
        return edit(lambda d: d["templating"].update(
            list=[v for v in d["templating"]["list"] if v.get("name") != n]))

    def dup_id(d):
        ps = [p for p in all_panels(d["panels"]) if p.get("type") != "row"]
        ps[1]["id"] = ps[0]["id"]

    def overlap(d):
        ps = [p for p in d["panels"] if p.get("type") != "row"]
        ps[1]["gridPos"] = dict(ps[0]["gridPos"])

    sel = 'job=~"$job", instance=~"$instance", pod=~"$pod"'
    return [
        ("bad JSON", lambda raw: raw[:-3], "does not parse"),
        ("two datasource variables", edit(add_ds_var), "datasource variables"),
        ("no datasource variable", drop_var("datasource"), "0 datasource variables"),
        ("no job variable", drop_var("job"), "no job variable"),
        ("no instance variable", drop_var("instance"), "no instance variable"),
        ("no description", edit(lambda d: first(d).pop("description")), "no description"),
        ("empty description", edit(lambda d: first(d).update(description=" ")), "no description"),
        ("no unit", edit(lambda d: first(d)["fieldConfig"]["defaults"].pop("unit")), "no unit"),
        ("target datasource", edit(lambda d: first(d)["targets"][0].update(
            datasource={"type": "prometheus", "uid": "prom1"})), "datasource is not"),
        ("panel datasource", edit(lambda d: first(d).update(datasource="Prometheus")),
         "datasource is not"),
        ("rate over 5m", sub_expr("[$__rate_interval]", "[5m]"), "use [$__rate_interval]"),
        ("irate over 1m", set_expr(f"irate(process_cpu_seconds_total{{{sel}}}[1m])"),
         "irate() over [1m]"),
        ("increase over $__interval",
         set_expr(f"sum(increase(memtrimd_trim_reclaimed_bytes_total{{{sel}}}[$__interval]))"),
         "increase() over"),
        ("no job matcher", set_expr('memtrimd_target_up{instance=~"$instance", pod=~"$pod"}'),
         'lacks job=~"$job"'),
        ("no instance matcher", set_expr('memtrimd_target_up{job=~"$job", pod=~"$pod"}'),
         'lacks instance=~"$instance"'),
        ("no matchers on one side",
         set_expr(f"memtrimd_target_up{{{sel}}} * on() group_left memtrimd_target_up"),
         'lacks job=~"$job"'),
        ("duplicate panel id", edit(dup_id), "duplicate panel id"),
        ("overlapping panels", edit(overlap), "overlaps"),
        ("beyond the grid", edit(lambda d: first(d)["gridPos"].update(x=20, w=12)),
         "outside the 24-column grid"),
        ("DS_ input", lambda raw: raw.replace("${datasource}", "${DS_PROMETHEUS}", 1), "${DS_"),
        ("unknown metric", set_expr(f"memtrimd_target_rss_bytes{{{sel}}}"),
         "metric memtrimd_target_rss_bytes is not in"),
        ("suffix on a gauge", set_expr(f"memtrimd_target_up_count{{{sel}}}"),
         "metric memtrimd_target_up_count is not in"),
        ("link to an unknown dashboard", edit(link_uid), "link to dashboard 'no-such-dashboard'"),
        ("link sets an unknown variable", edit(link_var), "sets var-no_such_variable"),
        ("pid series without the pid matcher", edit(pid_metric_without_pid),
         'memtrimd_target_threads lacks pid=~"$pid"'),
        ("pid matcher on a series without pid",
         set_expr(f'memtrimd_trim_duration_seconds_count{{{sel}, pid=~"$pid"}}'),
         "memtrimd_trim_duration_seconds_count has no pid label"),
        ("unknown variable metric", edit(lambda d: next(
            v for v in d["templating"]["list"] if v["name"] == "job").update(
                query={"query": "label_values(memtrimd_build_inf, job)"})),
         "metric memtrimd_build_inf is not in"),
    ]


def self_test(directory, readme):
    failures = []
    baseline = lint(directory, readme)
    if baseline:
        failures.append("the dashboards as they are do not pass: " + "; ".join(baseline))
    ctx = context(directory, readme)
    applied = collections.Counter()
    for path in dashboard_files(directory):
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        for what, mutate, expected in _mutations():
            try:
                text = mutate(raw)
            except NotApplicable:
                continue
            applied[what] += 1
            with tempfile.TemporaryDirectory() as tmp:
                broken = os.path.join(tmp, os.path.basename(path))
                with open(broken, "w", encoding="utf-8") as f:
                    f.write(text)
                problems = lint_dashboard(broken, ctx)
            if not any(expected in p for p in problems):
                failures.append(f"{os.path.basename(path)}: {what}: not caught (want a line "
                                f"with {expected!r}, got {problems})")
            else:
                print(f"ok: {what}: {next(p for p in problems if expected in p)}")
    # Every mutation must break at least one of the shipped dashboards, or it
    # tests nothing.
    for what, _, _ in _mutations():
        if not applied[what]:
            failures.append(f"{what}: no dashboard has what this mutation breaks")
    # A metric page without a table must not let everything through.
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "metrics.md")
        with open(empty, "w", encoding="utf-8") as f:
            f.write("# nothing\n")
        if not any("no metrics found" in p for p in lint(directory, empty)):
            failures.append("a metric page without a table is not caught")
        else:
            print("ok: a metric page without a table")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


def main(argv):
    args = argv[1:]
    selftest = bool(args) and args[0] == "--self-test"
    if selftest:
        args = args[1:]
    if len(args) != 2:
        print(f"usage: {argv[0]} [--self-test] DASHBOARDS_DIR docs/metrics.md", file=sys.stderr)
        return 2
    directory, readme = args
    if selftest:
        return self_test(directory, readme)
    problems = lint(directory, readme)
    for p in problems:
        print(p)
    if not problems:
        print(f"dashboards in {directory}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
