#!/usr/bin/env bash
# The installed layout works: `cmake --install` into a fresh prefix (the
# preload agent in lib/memtrimd), then the installed memtrimd serves HTTPS
# with basic auth, which needs
# lib/memtrimd/libmemtrimd_web.so and the civetweb TLS shims found relative
# to bin/.
#
#   tests/install/install_test.sh BUILD_DIR
set -euo pipefail
# shellcheck source=tests/support/listen_port.sh
source "$(dirname "$0")/../support/listen_port.sh"
build=${1:?usage: $0 BUILD_DIR}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrimd_install_test.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $tmp/memtrimd.log ]] && cat "$tmp/memtrimd.log" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || fail "cmake --install"
for f in bin/memtrimd bin/memtrimd-daemon lib/memtrimd/libmemtrimd_web.so \
  lib/memtrimd/libmemtrimd_civetweb_ssl.so lib/memtrimd/libmemtrimd_civetweb_crypto.so \
  lib/memtrimd/libmemtrimd_agent.so; do
  [[ -e $tmp/prefix/$f ]] || fail "$f is not installed"
done
# The agent is a private plugin (jvm::FindOwnAgent looks in ../lib/memtrimd),
# not a library in the loader's directory.
[[ -e $tmp/prefix/lib/libmemtrimd_agent.so ]] && fail "lib/libmemtrimd_agent.so is installed"

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2> /dev/null \
  || fail "openssl cannot make a certificate"
# bcrypt of "secret" (as in tests/integration/web_fixtures.h).
cat > "$tmp/web.yml" << 'YAML'
tls_server_config:
  cert_file: cert.pem
  key_file: key.pem
basic_auth_users:
  alice: $2b$10$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7fyG
YAML

sleep 600 &
target=$!
pids+=("$target")
"$tmp/prefix/bin/memtrimd" --web.listen-address=127.0.0.1:0 --web.config.file="$tmp/web.yml" \
  --target.pid="$target" > "$tmp/memtrimd.log" 2>&1 &
pids+=("$!")

port=$(listen_port "$tmp/memtrimd.log" "${pids[1]}") ||
  fail "memtrimd exited or did not start within 10 s"

code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$tmp/cert.pem" \
  -u alice:secret "https://127.0.0.1:$port/metrics")
[[ $code == 200 ]] || fail "HTTPS with the right password: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$tmp/cert.pem" \
  -u alice:guess "https://127.0.0.1:$port/metrics")
[[ $code == 401 ]] || fail "HTTPS with a wrong password: $code"
grep -q "lib/memtrimd/libmemtrimd_web.so" "/proc/${pids[1]}/maps" \
  || fail "the installed daemon did not map lib/memtrimd/libmemtrimd_web.so"
echo "PASS: installed memtrimd serves HTTPS with basic auth on port $port"
