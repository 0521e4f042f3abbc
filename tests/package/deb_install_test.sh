#!/usr/bin/env bash
# The .deb on a clean Debian 12: `apt install ./memtrimd_<version>_amd64.deb`
# in a minbase bookworm chroot made by mmdebstrap (apt fetches the runtime
# libraries the package depends on), then, without systemctl: the files are
# where the unit says, the unit passes `systemd-analyze verify` (systemd is
# installed in the chroot after the package), the installed memtrimd, run
# as the unit runs it (its command, its environment file) under a non-root
# uid, watches a process of that system, and `memtrimd inspect` reads a
# program through the installed agent. Before that, lintian (Debian's
# package checker) on the .deb: any error or warning fails the test (the
# package's overrides say why each remaining tag is right).
#
#   tests/package/deb_install_test.sh SOURCE_DIR [DEB]
#
# Without DEB it runs scripts/build-deb.sh first. The rootfs is cached as
# SOURCE_DIR/build/rootfs-cache/bookworm-minbase.tar (delete it to make a
# new one); apt inside the chroot needs the Debian mirror either way. Needs
# root (chroot, mounts), mmdebstrap and unshare; exits 77 without them or
# when the mirror cannot be reached. /proc is mounted in a private mount
# namespace, so no mount outlives the test.
set -euo pipefail
src=$(cd "${1:?usage: $0 SOURCE_DIR [DEB]}" && pwd)
# shellcheck source=tests/support/listen_port.sh
source "$src/tests/support/listen_port.sh"
deb=${2:-}
suite=bookworm

skip() {
  echo "SKIP: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root (chroot, mount)"
for tool in mmdebstrap unshare chroot curl readelf dpkg-deb lintian; do
  command -v "$tool" > /dev/null || skip "$tool is not installed"
done

# Everything below runs in a mount namespace of its own: the chroot's /proc
# disappears with the last process in it, even if this script is killed.
if [[ -z ${MEMTRIMD_DEB_TEST_NAMESPACE:-} ]]; then
  exec env MEMTRIMD_DEB_TEST_NAMESPACE=1 unshare --mount --propagation private -- bash "$0" "$@"
fi

started=$SECONDS
phase_start=$SECONDS
phase() {
  echo "phase: $1 $((SECONDS - phase_start)) s"
  phase_start=$SECONDS
}

tmp=$(mktemp -d /tmp/memtrimd-deb-test.XXXXXX)
root=$tmp/root
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2> /dev/null || true
  done
  if mountpoint -q "$root/proc" 2> /dev/null; then umount "$root/proc" || umount -l "$root/proc"; fi
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$tmp"/*.log; do
    [[ -s $log ]] && { echo "--- ${log##*/}" >&2; tail -n 40 "$log" >&2; }
  done
  exit 1
}

# --- the package ---------------------------------------------------------------

if [[ -z $deb ]]; then
  deb=$("$src/scripts/build-deb.sh" 2> "$tmp/build-deb.log" | tail -n 1) || fail "scripts/build-deb.sh"
  phase "build-deb.sh"
fi
[[ -f $deb ]] || fail "no package at $deb"
version=$(dpkg-deb -f "$deb" Version)
project_version=$(sed -n 's/^project(memtrimd VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $version == "$project_version" ]] || fail "package version $version, project version $project_version"
[[ ${deb##*/} == "memtrimd_${version}_amd64.deb" ]] || fail "package file name ${deb##*/}"
echo "package: ${deb##*/}, $(stat -c %s "$deb") bytes"
echo "Depends: $(dpkg-deb -f "$deb" Depends)"

# lintian: errors (E:) and warnings (W:) fail; info and pedantic tags, and
# overridden ones, are printed for the log only. Its exit code counts
# errors alone, so the tags are read.
lintian --fail-on none --display-level ">=info" "$deb" > "$tmp/lintian.log" 2>&1 \
  || fail "lintian could not check $deb"
if grep -qE '^[EW]: ' "$tmp/lintian.log"; then
  fail "lintian reports errors or warnings on ${deb##*/}:
$(grep -E '^[EW]: ' "$tmp/lintian.log")"
fi
echo "lintian $(lintian --version | sed 's/^Lintian v//'): no error, no warning ($(grep -c '^[IPN]: ' "$tmp/lintian.log") info lines)"
phase "lintian"

# --- a clean Debian 12 -----------------------------------------------------------

cache=$src/build/rootfs-cache/$suite-minbase.tar
mkdir -p "${cache%/*}"
(
  # One maker at a time; a reader never sees half a tarball (rename).
  flock 9
  if [[ ! -f $cache ]]; then
    if ! mmdebstrap --variant=minbase --format=tar "$suite" "$cache.new" > "$tmp/mmdebstrap.log" 2>&1; then
      rm -f "$cache.new"
      if grep -qE "Could not resolve|Failed to fetch|Temporary failure|Unable to connect" "$tmp/mmdebstrap.log"; then
        exit 77
      fi
      exit 1
    fi
    mv "$cache.new" "$cache"
  fi
) 9> "$cache.lock" || {
  rc=$?
  [[ $rc -eq 77 ]] && skip "mmdebstrap cannot reach the Debian mirror: $(tail -n 1 "$tmp/mmdebstrap.log")"
  fail "mmdebstrap --variant=minbase $suite"
}
phase "rootfs ($([[ -s $tmp/mmdebstrap.log ]] && echo made || echo cached))"

mkdir "$root"
tar -C "$root" -xf "$cache"
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
# A clean system has no package of ours and no user the unit names.
chroot "$root" dpkg-query -W memtrimd > /dev/null 2>&1 && fail "the rootfs already has memtrimd"
phase "rootfs unpacked"

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

if ! in_root apt-get update > "$tmp/apt-update.log" 2>&1; then
  grep -qE "Could not resolve|Failed to fetch|Temporary failure|Unable to connect" "$tmp/apt-update.log" \
    && skip "apt-get update cannot reach the Debian mirror"
  fail "apt-get update in the chroot"
fi
# As a user installs it: apt resolves the runtime libraries from Depends.
in_root sh -c "cd /tmp && apt install -y ./${deb##*/}" > "$tmp/apt-install.log" 2>&1 \
  || fail "apt install ./${deb##*/} in a clean $suite"
phase "apt install"

# --- what it installed -------------------------------------------------------------

for f in /usr/bin/memtrimd /usr/bin/memtrimd-daemon /usr/lib/memtrimd/libmemtrimd_agent.so \
  /usr/lib/memtrimd/libmemtrimd_web.so /usr/lib/memtrimd/libmemtrimd_civetweb_ssl.so \
  /usr/lib/memtrimd/libmemtrimd_civetweb_crypto.so /lib/systemd/system/memtrimd.service \
  /etc/default/memtrimd /usr/share/doc/memtrimd/copyright /usr/share/doc/memtrimd/changelog.gz \
  /usr/share/man/man1/memtrimd.1.gz /usr/share/man/man1/memtrimd-daemon.1.gz; do
  in_root dpkg -S "$f" > /dev/null 2>&1 || fail "$f is not in the package's file list"
  [[ -f $root$f ]] || fail "$f is not installed"
done
# shellcheck disable=SC2016 # ${Conffiles} is dpkg-query's field, not the shell's
in_root dpkg-query -W -f='${Conffiles}\n' memtrimd | grep -q '^ /etc/default/memtrimd ' \
  || fail "/etc/default/memtrimd is not a conffile (an upgrade would overwrite the user's target)"
cmp -s "$root/etc/default/memtrimd" "$src/deploy/systemd/memtrimd.default" \
  || fail "/etc/default/memtrimd differs from deploy/systemd/memtrimd.default"
for f in /usr/bin/memtrimd /usr/bin/memtrimd-daemon /usr/lib/memtrimd/libmemtrimd_agent.so \
  /usr/lib/memtrimd/libmemtrimd_web.so; do
  if readelf -S --wide "$root$f" | grep -qE ' \.(symtab|debug_info) '; then
    fail "$f is not stripped"
  fi
done

# The unit: the deploy/ unit with only ExecStart moved to the installed binary.
unit=$root/lib/systemd/system/memtrimd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $exec_start == /usr/bin/memtrimd ]] || fail "the unit's ExecStart is '$exec_start'"
diff <(grep -v '^ExecStart=' "$unit") <(grep -v '^ExecStart=' "$src/deploy/systemd/memtrimd.service") \
  > /dev/null || fail "the installed unit differs from deploy/systemd/memtrimd.service beyond ExecStart"
[[ -x $root$exec_start ]] || fail "ExecStart $exec_start is not an executable in the system"
env_file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
[[ -f $root$env_file ]] || fail "EnvironmentFile $env_file is not installed"
# systemd-analyze verify inside the system: a minbase rootfs has no systemd,
# so it is installed now, after the package (whose install must not need
# it), as on any host that runs the unit. verify exits 0 on unknown keys and
# bad values: any complaint naming the unit counts. It checks that ExecStart
# exists; the unit's User=app is looked up only when it starts.
in_root apt-get install -y --no-install-recommends systemd > "$tmp/apt-systemd.log" 2>&1 \
  || fail "apt-get install systemd in the chroot"
in_root systemd-analyze verify /lib/systemd/system/memtrimd.service > "$tmp/verify.log" 2>&1 \
  || fail "systemd-analyze verify memtrimd.service in the chroot"
grep -q 'memtrimd\.service' "$tmp/verify.log" && fail "systemd-analyze verify complains about the unit"
echo "systemd-analyze verify (systemd $(in_root systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') in the chroot): clean"

out=$(in_root memtrimd --version) || fail "memtrimd --version in the chroot"
[[ $out == "memtrimd $version "* ]] || fail "memtrimd --version: '$out'"
echo "in the chroot: $out"

# The manual page is made from --help at build time: every flag the
# installed program lists must be in it (help2man read the whole text),
# under the program's name and version. The page's markup goes first: "-"
# is written "\-", and help2man's bold part of a flag ends at its first dot
# ("\fB\-\-web\fR.listen\-address").
page=$(zcat "$root/usr/share/man/man1/memtrimd.1.gz" | sed 's/\\f[BIRP]//g; s/\\[,/]//g; s/\\-/-/g') \
  || fail "memtrimd.1.gz is not a gzip file"
grep -q "^\.TH MEMTRIMD \"1\" .*\"memtrimd $version" <<< "$page" \
  || fail "memtrimd.1's title line: $(grep '^\.TH' <<< "$page")"
help_flags=$(in_root memtrimd --help | grep -oE -- '--[a-z][a-z0-9.-]*[a-z0-9]' | sort -u)
[[ $(wc -l <<< "$help_flags") -gt 20 ]] || fail "memtrimd --help lists $(wc -l <<< "$help_flags") flags"
for flag in $help_flags; do
  grep -qF -- "$flag" <<< "$page" || fail "memtrimd.1 does not mention $flag, which --help lists"
done
[[ $(readlink "$root/usr/share/man/man1/memtrimd-daemon.1.gz") == memtrimd.1.gz ]] \
  || fail "memtrimd-daemon.1.gz is not a link to memtrimd.1.gz"
echo "man page: all $(wc -l <<< "$help_flags") flags of memtrimd --help"
phase "file checks"

# --- it watches a process of that system -----------------------------------------

# The unit's design: memtrimd runs with the target's uid, no capabilities.
as_nobody() { chroot --userspec=nobody:nogroup "$root" env -i PATH=/usr/bin:/bin "$@"; }

# Polls until PID has exec'd COMM (chroot execs the command in place).
wait_comm() {
  local pid=$1 comm=$2
  for _ in $(seq 100); do
    [[ $(cat "/proc/$pid/comm" 2> /dev/null) == "$comm" ]] && return 0
    sleep 0.1
  done
  fail "pid $pid did not become $comm within 10 s"
}

# Plain commands, not functions, in the background: $! is then the pid that
# chroot, env and sleep each exec in turn.
chroot --userspec=nobody:nogroup "$root" env -i PATH=/usr/bin:/bin sleep 3601 &
plain=$!
pids+=("$plain")
chroot --userspec=nobody:nogroup "$root" env -i PATH=/usr/bin:/bin \
  LD_PRELOAD=/usr/lib/memtrimd/libmemtrimd_agent.so sleep 3602 &
preloaded=$!
pids+=("$preloaded")
wait_comm "$plain" sleep
wait_comm "$preloaded" sleep
# The loader maps the preload just after exec; maps names it from our root.
for _ in $(seq 100); do
  grep -q " $root/usr/lib/memtrimd/libmemtrimd_agent.so$" "/proc/$preloaded/maps" && break
  sleep 0.1
done
grep -q " $root/usr/lib/memtrimd/libmemtrimd_agent.so$" "/proc/$preloaded/maps" \
  || fail "the preloaded sleep has not mapped the installed agent within 10 s"

# The daemon as the unit starts it: ExecStart with the environment file's
# variables (the shipped file's target is replaced by this system's process).
(
  set -a
  # shellcheck disable=SC1090
  . "$root$env_file"
  set +a
  exec chroot --userspec=nobody:nogroup "$root" env \
    MEMTRIMD_TARGET_MATCH='^sleep 3601$' MEMTRIMD_WEB_LISTEN_ADDRESS=127.0.0.1:0 \
    MEMTRIMD_LOG_LEVEL="${MEMTRIMD_LOG_LEVEL:-info}" "$exec_start"
) > "$tmp/daemon.log" 2>&1 &
daemon=$!
pids+=("$daemon")

port=$(listen_port "$tmp/daemon.log" "$daemon") ||
  fail "the installed memtrimd exited or did not start within 10 s"

# The target is picked on the first pass; poll its series with a deadline.
metrics=
for _ in $(seq 150); do
  metrics=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" || true)
  grep -q "^memtrimd_target_up{pid=\"$plain\"} 1$" <<< "$metrics" && break
  sleep 0.2
done
grep -q "^memtrimd_target_up{pid=\"$plain\"} 1$" <<< "$metrics" \
  || fail "the installed daemon does not report sleep (pid $plain) as its target"
grep -qE "^memtrimd_target_info\{pid=\"$plain\",comm=\"sleep\",runtime=\"glibc\",allocator=\"glibc\"" \
  <<< "$metrics" || fail "memtrimd_target_info for pid $plain: $(grep '^memtrimd_target_info' <<< "$metrics")"
# An idle sleep's anonymous pages do not change: the daemon's figure must be
# the kernel's.
anon=$(sed -n "s/^memtrimd_target_resident_memory_bytes{pid=\"$plain\",kind=\"anon\"} \([0-9]*\)$/\1/p" \
  <<< "$metrics")
status_anon=$(awk '/^RssAnon:/ {print $2 * 1024}' "/proc/$plain/status")
[[ -n $anon && $anon == "$status_anon" ]] \
  || fail "anonymous RSS of pid $plain: memtrimd '$anon', /proc/$plain/status $status_anon"
echo "daemon on 127.0.0.1:$port: target pid $plain (sleep), anonymous RSS $anon bytes (status: $status_anon)"

# inspect from the chroot: the plain sleep has no agent, the preloaded one
# answers through the installed agent.
in_plain=$(as_nobody memtrimd inspect --pid "$plain") || fail "memtrimd inspect --pid $plain"
grep -q "^pid $plain (sleep), runtime glibc, allocator glibc" <<< "$in_plain" \
  || fail "inspect --pid $plain: $(head -n 1 <<< "$in_plain")"
grep -q "the agent: malloc is served by" <<< "$in_plain" \
  && fail "inspect --pid $plain claims an agent in a program without one"
in_agent=$(as_nobody memtrimd inspect --pid "$preloaded") || fail "memtrimd inspect --pid $preloaded"
grep -q "^Allocator: glibc (the agent: malloc is served by /.*libc\.so\.6)" <<< "$in_agent" \
  || fail "inspect --pid $preloaded does not read the preloaded sleep through the agent:
$in_agent"
echo "inspect: $(grep '^Allocator:' <<< "$in_agent")"
phase "watching"

# Enabled as an administrator would (systemctl works on the files in a
# chroot), removed, installed again, then purged, as deb-systemd-helper's
# snippets handle it: the maintainer scripts run without a running systemd;
# a removed package's unit is masked (its binary is gone) and keeps the
# administrator's enable; installing it again lifts the mask and keeps the
# enable; a purge leaves no file, conffile, mask, enable link or state.
in_root systemctl enable memtrimd.service > "$tmp/enable.log" 2>&1 || fail "systemctl enable in the chroot"
link=/etc/systemd/system/multi-user.target.wants/memtrimd.service
mask=/etc/systemd/system/memtrimd.service
[[ -L $root$link ]] || fail "systemctl enable made no $link"
in_root apt-get remove -y memtrimd > "$tmp/apt-remove.log" 2>&1 || fail "apt-get remove memtrimd"
[[ $(readlink "$root$mask") == /dev/null ]] || fail "apt-get remove did not mask memtrimd.service"
[[ -L $root$link ]] || fail "apt-get remove dropped the administrator's $link"
in_root sh -c "cd /tmp && apt install -y ./${deb##*/}" > "$tmp/apt-reinstall.log" 2>&1 \
  || fail "apt install ./${deb##*/} after apt-get remove"
[[ -e $root$mask || -L $root$mask ]] && fail "installing again left memtrimd.service masked"
[[ -L $root$link ]] || fail "installing again dropped the administrator's $link"
in_root apt-get purge -y memtrimd > "$tmp/apt-purge.log" 2>&1 || fail "apt-get purge memtrimd"
for f in /usr/bin/memtrimd /usr/lib/memtrimd/libmemtrimd_agent.so \
  /lib/systemd/system/memtrimd.service /etc/default/memtrimd "$link" "$mask" \
  /var/lib/systemd/deb-systemd-helper-enabled/memtrimd.service.dsh-also \
  /var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/memtrimd.service \
  /var/lib/systemd/deb-systemd-helper-masked/memtrimd.service; do
  [[ -e $root$f || -L $root$f ]] && fail "$f is left after apt-get purge"
done
phase "remove, install again, purge"

echo "PASS: $suite chroot: apt install ./${deb##*/}, the installed memtrimd watches pid $plain and reads pid $preloaded through the installed agent ($((SECONDS - started)) s)"
