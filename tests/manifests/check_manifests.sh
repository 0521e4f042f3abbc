#!/usr/bin/env bash
# Offline checks of memtrimd's deployment artefacts (deploy/, dashboards/):
#
#   tests/manifests/check_manifests.sh [REPO_ROOT]
#
# - every kustomize overlay under deploy/kubernetes/overlays (and the
#   dashboards' kustomizations) renders with `kubectl kustomize`, and every
#   rendered object passes validate.mjs: a known kind, its schema, no field
#   the schema does not define;
# - a PodMonitor's selector and port name match the Deployment's pods;
# - the memtrimd container's privileges: capabilities dropped, none added
#   but SYS_PTRACE, DAC_OVERRIDE and KILL (and those only as root), no
#   privilege escalation, read-only root, seccomp RuntimeDefault, no host
#   network, IPC or hostPath; hostPID only in the node agent's DaemonSet,
#   which must run `--targets=node` on every node;
# - every flag in the memtrimd containers' args is in docs/flags.md's table;
# - yamllint on deploy/ and dashboards/provisioning/;
# - the PrometheusRule is up to date with deploy/prometheus/*.rules.yml;
# - promtool check config on deploy/scrape-config/prometheus.yml;
# - systemd-analyze verify on deploy/systemd/memtrimd.service;
# - environment variable names in the manifests and the env file exist in
#   docs/flags.md's flag table, and the Dockerfile installs install-deps.sh's
#   build and library packages;
# - negative self-tests: a typo'd field, a wrong type, an unknown kind, a
#   stale PrometheusRule and each privilege widened must each make their
#   check fail.
#
# Exit 0 when all pass, 1 when any fails, 77 (skip) only when
# tests/manifests/node_modules is missing (`npm ci --prefix tests/manifests`).
# KUBECTL_LEGACY=/path/to/kubectl-1.20 also renders each kustomization with
# that kubectl's kustomize v2.0.3 and requires the same output.
set -euo pipefail

src=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
here=$src/tests/manifests

if [ ! -d "$here/node_modules" ]; then
  echo "SKIP: tests/manifests/node_modules is missing; install the pinned schema packages with" \
    "\`npm ci --prefix tests/manifests\` (scripts/install-deps.sh does)"
  exit 77
fi

for tool in kubectl node yamllint python3 promtool systemd-analyze; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool is not installed (scripts/install-deps.sh)"; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

# --- kustomize renders, schema and unknown-field check ----------------------

kustomizations=()
for dir in "$src"/deploy/kubernetes/overlays/*/ "$src"/dashboards/ "$src"/dashboards/provisioning/kubernetes/; do
  dir=${dir%/}
  if [ -f "$dir/kustomization.yaml" ] || [ -f "$dir/kustomization.yml" ] || [ -f "$dir/Kustomization" ]; then
    kustomizations+=("$dir")
  fi
done
[ ${#kustomizations[@]} -gt 0 ] || fail "no kustomization found under deploy/kubernetes/overlays"

# Writes a PodMonitor-to-pod consistency problem per line, nothing if fine.
consistency() {
  python3 - "$1" << 'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if isinstance(d, dict)]
pods = []
for d in docs:
    tpl = (d.get("spec") or {}).get("template")
    if d.get("kind") in ("Deployment", "StatefulSet", "DaemonSet") and tpl:
        spec = tpl.get("spec") or {}
        ports = {p.get("name") for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
                 for p in c.get("ports") or []}
        pods.append(((tpl.get("metadata") or {}).get("labels") or {}, ports))
for d in docs:
    if d.get("kind") != "PodMonitor":
        continue
    name = d["metadata"]["name"]
    sel = ((d.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    matched = [ports for labels, ports in pods if sel and all(labels.get(k) == v for k, v in sel.items())]
    if not matched:
        print(f"PodMonitor/{name}: selector {sel} matches no pod template in this render")
        continue
    for ep in d["spec"].get("podMetricsEndpoints") or []:
        if not any(ep.get("port") in ports for ports in matched):
            print(f"PodMonitor/{name}: port {ep.get('port')!r} is not a container port of the selected pods")
EOF
}

# Writes a privilege problem of the memtrimd container per line, nothing if
# fine. docs/deploying.md ("Permissions") and docs/node-agent.md say why each rule.
privileges() {
  python3 - "$1" << 'EOF'
import sys, yaml
ALLOWED = {"SYS_PTRACE", "DAC_OVERRIDE", "KILL"}
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if isinstance(d, dict)]
for d in docs:
    tpl = (d.get("spec") or {}).get("template")
    if d.get("kind") not in ("Deployment", "StatefulSet", "DaemonSet") or not tpl:
        continue
    where = f"{d['kind']}/{d['metadata']['name']}"
    pod = tpl.get("spec") or {}
    psc = pod.get("securityContext") or {}
    mine = [c for c in (pod.get("containers") or []) + (pod.get("initContainers") or [])
            if c.get("name") == "memtrimd"]
    if not mine:
        continue
    for field in ("hostNetwork", "hostIPC"):
        if pod.get(field):
            print(f"{where}: {field}: true (memtrimd needs neither)")
    if pod.get("hostPID") and d["kind"] != "DaemonSet":
        print(f"{where}: hostPID outside the node agent's DaemonSet")
    for v in pod.get("volumes") or []:
        if "hostPath" in v:
            print(f"{where}: hostPath volume {v.get('name')!r} (memtrimd reads the host through /proc)")
    for c in mine:
        sc = c.get("securityContext") or {}
        caps = sc.get("capabilities") or {}
        if caps.get("drop") != ["ALL"]:
            print(f"{where}: memtrimd does not drop ALL capabilities")
        added = set(caps.get("add") or [])
        if added - ALLOWED:
            print(f"{where}: memtrimd adds capabilities {sorted(added - ALLOWED)}")
        uid = sc.get("runAsUser", psc.get("runAsUser"))
        if added and uid != 0:
            print(f"{where}: capabilities added for uid {uid}; without ambient capabilities only root has them")
        if sc.get("privileged"):
            print(f"{where}: memtrimd is privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            print(f"{where}: memtrimd lacks allowPrivilegeEscalation: false")
        if sc.get("readOnlyRootFilesystem") is not True:
            print(f"{where}: memtrimd lacks readOnlyRootFilesystem: true")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp != "RuntimeDefault":
            print(f"{where}: memtrimd's seccomp profile is {seccomp}, not RuntimeDefault")
        if not (c.get("resources") or {}).get("limits", {}).get("memory"):
            print(f"{where}: memtrimd has no memory limit")
    if d["kind"] == "DaemonSet":
        if not pod.get("hostPID"):
            print(f"{where}: the node agent needs hostPID: true to see the node's processes")
        if not any("--targets=node" in (c.get("args") or []) for c in mine):
            print(f"{where}: memtrimd does not run with --targets=node")
        if not any(t.get("operator") == "Exists" and not t.get("key") for t in pod.get("tolerations") or []):
            print(f"{where}: no toleration of every taint; tainted nodes would go unwatched")
EOF
}

# Writes each flag in a memtrimd container's args that docs/flags.md's flag
# table (the list memtrimd reads) does not have, one per line.
unknown_flags() {
  python3 - "$1" "$src/docs/flags.md" << 'EOF'
import re, sys, yaml
known, inside = set(), False
for line in open(sys.argv[2]).read().split("\n"):
    if line == "# Flags":
        inside = True
    elif inside and line.startswith("#"):
        break
    elif inside and (m := re.match(r"\| `(--[a-z0-9.-]+)`", line)):
        known.add(m.group(1))
for d in yaml.safe_load_all(open(sys.argv[1])):
    pod = (((d or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
        if c.get("name") != "memtrimd":
            continue
        for arg in c.get("args") or []:
            flag = str(arg).split("=")[0]
            if flag.startswith("--") and flag not in known and "--" + flag[5:] not in known:
                print(f"{d['kind']}/{d['metadata']['name']}: {flag} is not in docs/flags.md's flag table")
EOF
}

for dir in "${kustomizations[@]}"; do
  name=${dir#"$src"/}
  out=$tmp/$(echo "$name" | tr / _).yaml
  if ! kubectl kustomize "$dir" > "$out" 2> "$tmp/err"; then
    fail "$name: kubectl kustomize failed:"
    sed 's/^/    /' "$tmp/err"
    continue
  fi
  if node "$here/validate.mjs" --as "$name" < "$out" > "$tmp/validate.out" 2>&1; then
    ok "$name renders and validates ($(tail -n 1 "$tmp/validate.out"))"
  else
    fail "$name: rendered objects do not validate:"
    sed 's/^/    /' "$tmp/validate.out"
  fi
  problems=$(consistency "$out") || problems="consistency check crashed"
  if [ -n "$problems" ]; then
    fail "$name: $problems"
  fi
  problems=$(privileges "$out") || problems="privilege check crashed"
  if [ -n "$problems" ]; then
    fail "$name: $problems"
  fi
  problems=$(unknown_flags "$out") || problems="flag check crashed"
  if [ -n "$problems" ]; then
    fail "$name: $problems"
  fi
  if [ -n "${KUBECTL_LEGACY:-}" ]; then
    if ! "$KUBECTL_LEGACY" kustomize "$dir" > "$out.legacy" 2> "$tmp/err"; then
      fail "$name: $KUBECTL_LEGACY kustomize failed:"
      sed 's/^/    /' "$tmp/err"
    elif ! diff -u "$out" "$out.legacy" > "$tmp/diff"; then
      fail "$name: kustomize v2 ($KUBECTL_LEGACY) renders differently:"
      sed 's/^/    /' "$tmp/diff"
    else
      ok "$name renders the same with $KUBECTL_LEGACY"
    fi
  fi
done

# Negative self-tests: the checks above must be able to fail.
sidecar=$tmp/deploy_kubernetes_overlays_sidecar.yaml
node_agent=$tmp/deploy_kubernetes_overlays_node-agent.yaml
expect_invalid() { # description, expected output (regex), sed expression[, rendered file]
  local rendered=${4:-$sidecar}
  if [ ! -s "$rendered" ]; then
    fail "self-test '$1': no rendered ${rendered##*/} to mutate"
    return
  fi
  sed -e "$3" "$rendered" > "$tmp/mutated.yaml"
  if cmp -s "$rendered" "$tmp/mutated.yaml"; then
    fail "self-test '$1': the mutation changed nothing (update the test)"
  elif node "$here/validate.mjs" "$tmp/mutated.yaml" > "$tmp/mutated.out" 2>&1; then
    fail "self-test '$1': validate.mjs accepted it"
  elif ! grep -Eq "$2" "$tmp/mutated.out"; then
    fail "self-test '$1': validate.mjs failed without saying /$2/:"
    sed 's/^/    /' "$tmp/mutated.out"
  else
    ok "self-test: validate.mjs rejects $1"
  fi
}
expect_invalid "a typo'd field (readinesProbe)" \
  'unknown field spec\.template\.spec\.containers\[[0-9]+\]\.readinesProbe' 's/readinessProbe:/readinesProbe:/'
expect_invalid "a wrong type (containerPort: eighty)" \
  'containerPort: must be integer' 's/containerPort: 8486/containerPort: eighty/'
expect_invalid "an unknown kind (PodMonitr)" \
  'unknown kind PodMonitr' 's/^kind: PodMonitor$/kind: PodMonitr/'
expect_invalid "a typo'd DaemonSet field (toleration)" \
  'DaemonSet/memtrimd-node-agent: unknown field spec\.template\.spec\.toleration$' \
  's/^      tolerations:$/      toleration:/' "$node_agent"

# Each privilege widened in the node agent must fail the privilege check.
expect_refused() { # description, expected output (regex), sed expression
  if [ ! -s "$node_agent" ]; then
    fail "self-test '$1': no rendered node-agent overlay to mutate"
    return
  fi
  sed -e "$3" "$node_agent" > "$tmp/widened.yaml"
  if cmp -s "$node_agent" "$tmp/widened.yaml"; then
    fail "self-test '$1': the mutation changed nothing (update the test)"
  elif ! out=$(privileges "$tmp/widened.yaml"); then
    fail "self-test '$1': the privilege check crashed"
  elif [ -z "$out" ]; then
    fail "self-test '$1': the privilege check accepted it"
  elif ! grep -Eq "$2" <<< "$out"; then
    fail "self-test '$1': the privilege check failed without saying /$2/: $out"
  else
    ok "self-test: the privilege check refuses $1"
  fi
}
expect_refused "an added capability (SYS_ADMIN)" "adds capabilities \\['SYS_ADMIN'\\]" \
  's/^            - DAC_OVERRIDE$/            - DAC_OVERRIDE\n            - SYS_ADMIN/'
expect_refused "a writable root file system" 'readOnlyRootFilesystem' \
  's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/'
expect_refused "the host network" 'hostNetwork' 's/hostNetwork: false/hostNetwork: true/'
expect_refused "a non-root uid with capabilities" 'capabilities added for uid 65532' \
  's/runAsUser: 0$/runAsUser: 65532/'
expect_refused "seccomp Unconfined" 'not RuntimeDefault' 's/type: RuntimeDefault/type: Unconfined/'
expect_refused "no --targets=node" 'targets=node' 's/- --targets=node/- --targets=one/'

# A flag memtrimd does not have must fail the flag check.
if [ -s "$node_agent" ]; then
  sed -e 's/^\( *\)- --targets=node$/&\n\1- --no-such.flag/' "$node_agent" > "$tmp/flagged.yaml"
  if cmp -s "$node_agent" "$tmp/flagged.yaml"; then
    fail "self-test 'an unknown flag': the mutation changed nothing (update the test)"
  elif unknown_flags "$tmp/flagged.yaml" | grep -q -- '--no-such.flag is not in'; then
    ok "self-test: the flag check refuses an unknown flag"
  else
    fail "self-test 'an unknown flag': the flag check accepted --no-such.flag"
  fi
fi

# --- yamllint ---------------------------------------------------------------

lint_paths=("$src/deploy" "$here/yamllint.yml")
[ -d "$src/dashboards/provisioning" ] && lint_paths+=("$src/dashboards/provisioning")
[ -f "$src/dashboards/kustomization.yaml" ] && lint_paths+=("$src/dashboards/kustomization.yaml")
if (cd "$src" && yamllint -f parsable -c "$here/yamllint.yml" "${lint_paths[@]#"$src"/}") > "$tmp/yamllint.out" 2>&1; then
  ok "yamllint: ${lint_paths[*]#"$src"/}"
  sed 's/^/    /' "$tmp/yamllint.out" # warnings, if any
else
  fail "yamllint:"
  sed 's/^/    /' "$tmp/yamllint.out"
fi

# --- PrometheusRule generated from the rule files ---------------------------

render=$src/deploy/kubernetes/render-prometheusrule.py
rule=$src/deploy/kubernetes/prometheus-operator/prometheusrule.yaml
if python3 "$render" --check > "$tmp/render.out" 2>&1; then
  ok "PrometheusRule matches deploy/prometheus/*.rules.yml"
else
  fail "$(cat "$tmp/render.out")"
fi
if [ -f "$rule" ]; then
  sed 's/^\(    - name: .*\)$/\1-stale/' "$rule" > "$tmp/stale.yaml"
  if cmp -s "$rule" "$tmp/stale.yaml"; then
    fail "self-test 'stale PrometheusRule': the mutation changed nothing (update the test)"
  elif python3 "$render" --check --output "$tmp/stale.yaml" > /dev/null 2>&1; then
    fail "self-test 'stale PrometheusRule': render-prometheusrule.py --check accepted it"
  else
    ok "self-test: render-prometheusrule.py --check rejects a stale PrometheusRule"
  fi
fi

# --- promtool check config --------------------------------------------------

# A copy beside a link to deploy/prometheus, so the config's relative
# rule_files resolve as they do in the repository.
mkdir -p "$tmp/promcfg/scrape-config"
ln -s "$src/deploy/prometheus" "$tmp/promcfg/prometheus"
cp "$src/deploy/scrape-config/prometheus.yml" "$tmp/promcfg/scrape-config/prometheus.yml"
if (cd "$tmp/promcfg/scrape-config" && promtool check config prometheus.yml) > "$tmp/promtool.out" 2>&1; then
  ok "promtool check config deploy/scrape-config/prometheus.yml"
elif grep -q "field kubernetes_sd_configs not found" "$tmp/promtool.out"; then
  # Debian's prometheus is built without Kubernetes service discovery, so
  # its promtool rejects the section itself. Check the rest: the section
  # replaced by an empty static_configs, the relabel rules kept.
  python3 - "$tmp/promcfg/scrape-config/prometheus.yml" << 'EOF'
import sys, yaml
path = sys.argv[1]
cfg = yaml.safe_load(open(path))
for job in cfg.get("scrape_configs") or []:
    if job.pop("kubernetes_sd_configs", None) is not None:
        job.setdefault("static_configs", []).append({"targets": []})
yaml.safe_dump(cfg, open(path, "w"), sort_keys=False)
EOF
  if (cd "$tmp/promcfg/scrape-config" && promtool check config prometheus.yml) > "$tmp/promtool.out" 2>&1; then
    ok "promtool check config deploy/scrape-config/prometheus.yml" \
      "(kubernetes_sd_configs not checked: this promtool is built without Kubernetes SD)"
  else
    fail "promtool check config deploy/scrape-config/prometheus.yml (kubernetes_sd_configs removed):"
    sed 's/^/    /' "$tmp/promtool.out"
  fi
else
  fail "promtool check config deploy/scrape-config/prometheus.yml:"
  sed 's/^/    /' "$tmp/promtool.out"
fi

# --- systemd unit -------------------------------------------------------------

unit=$src/deploy/systemd/memtrimd.service
if ! grep -qx 'ExecStart=/usr/local/bin/memtrimd' "$unit"; then
  fail "deploy/systemd/memtrimd.service: ExecStart is not /usr/local/bin/memtrimd (where cmake --install and the image put it)"
fi
# verify insists that ExecStart exists: point it at an executable that
# does; everything else is checked as written. It exits 0 on unknown keys
# and bad values, so any complaint about the unit counts.
mkdir -p "$tmp/unit"
sed "s|^ExecStart=/usr/local/bin/memtrimd|ExecStart=$(command -v true)|" "$unit" > "$tmp/unit/memtrimd.service"
if ! (cd "$tmp/unit" && systemd-analyze verify ./memtrimd.service) > "$tmp/verify.out" 2>&1; then
  fail "systemd-analyze verify deploy/systemd/memtrimd.service:"
  sed 's/^/    /' "$tmp/verify.out"
elif grep -q 'memtrimd\.service' "$tmp/verify.out"; then
  fail "systemd-analyze verify deploy/systemd/memtrimd.service complains:"
  grep 'memtrimd\.service' "$tmp/verify.out" | sed 's/^/    /'
else
  ok "systemd-analyze verify deploy/systemd/memtrimd.service"
fi

# --- names that must exist elsewhere ------------------------------------------

# Environment variables: docs/flags.md's flag table is the list memtrimd reads.
for f in "$src"/deploy/systemd/memtrimd.default "$src"/deploy/kubernetes/base/*.yaml \
  "$src"/deploy/kubernetes/overlays/*/*.yaml; do
  for var in $(grep -o 'MEMTRIMD_[A-Z0-9_]*' "$f" | sort -u); do
    grep -q "\`$var\`" "$src/docs/flags.md" || fail "${f#"$src"/}: $var is not in docs/flags.md's flag table"
  done
done

# The image's build stage installs install-deps.sh's "build" and "libraries"
# groups (clang-format aside: style checks only).
wanted=$(awk '
  /^packages=\(/ { inside = 1; next }
  inside && /^\)/ { inside = 0 }
  inside && /^[[:space:]]*#/ { group = ($2 == "build" || $2 == "libraries"); next }
  inside && group { for (i = 1; i <= NF; i++) print $i }
' "$src/scripts/install-deps.sh" | grep -vx clang-format || true)
if [ -z "$wanted" ]; then
  fail "scripts/install-deps.sh: found no \"build\"/\"libraries\" package groups to compare the Dockerfile with"
else
  for p in $wanted; do
    grep -Eq "(^|[[:space:]])$p([[:space:]]|\\\\|\$)" "$src/deploy/docker/Dockerfile" \
      || fail "deploy/docker/Dockerfile: the build stage does not install $p (scripts/install-deps.sh lists it)"
  done
fi

if [ "$failures" -gt 0 ]; then
  echo "check_manifests: $failures check(s) failed"
  exit 1
fi
echo "check_manifests: all checks passed"
