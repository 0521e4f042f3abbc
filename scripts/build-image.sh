#!/usr/bin/env bash
# Builds the memtrimd image with podman and no container registry: first the
# Debian base image the build stages of deploy/docker/Dockerfile start from
# (debian:bookworm-slim), made from Debian's apt repositories with
# mmdebstrap, then the image from the Dockerfile as it is. The image itself
# starts from scratch: a root file system of only the packages in
# deploy/docker/base/runtime-packages, with their dpkg status.
#
#   sudo scripts/build-image.sh [--tag NAME] [--rebuild-base] [--keep-stages]
#                               [--mirror URL] [--security-mirror URL]
#
#   --tag NAME         also tag the image NAME (it is always tagged
#                      memtrimd:<version> and memtrimd:latest)
#   --rebuild-base     make the base image again even if it exists
#   --keep-stages      keep the build stages' images, tagged
#                      memtrimd-stage-<stage>:<version> (the build stage's is
#                      about 800 MB), so that a rebuild reuses their layers;
#                      without it they are removed after the build
#   --mirror URL       Debian archive (default http://deb.debian.org/debian)
#   --security-mirror URL  (default http://deb.debian.org/debian-security)
#
# Then: podman run --rm memtrimd --version
#
# Runs as root (mmdebstrap's root mode, root podman's image store); the
# packages come from scripts/install-deps.sh. podman runs with
# deploy/docker/containers.conf unless CONTAINERS_CONF is set (that file says
# why each setting is there); CONTAINERS_STORAGE_CONF picks another image
# store, as the container tests do. A base image that exists is reused, so a
# second run rebuilds only the project's layers. A first run took 7 min 22 s
# on 2 busy cores (docs/benchmarks.md, section 16).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

tags=()
rebuild_base=0
keep_stages=0
mirror=http://deb.debian.org/debian
security_mirror=http://deb.debian.org/debian-security
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tags+=("$2"); shift 2 ;;
    --rebuild-base) rebuild_base=1; shift ;;
    --keep-stages) keep_stages=1; shift ;;
    --mirror) mirror=$2; shift 2 ;;
    --security-mirror) security_mirror=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "build-image: must run as root (mmdebstrap, podman's image store)" >&2
  exit 2
fi
for tool in podman mmdebstrap; do
  command -v "$tool" > /dev/null \
    || { echo "build-image: $tool is missing: run scripts/install-deps.sh" >&2; exit 2; }
done
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/deploy/docker/containers.conf}

version=$(sed -n 's/^project(memtrimd VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "build-image: no version in CMakeLists.txt" >&2; exit 2; }

now() { date +%s; }
started=$(now)

# The base image: a minbase Debian 12 with the official images' apt
# configuration (no package cache kept in a layer), tagged under the short
# name the Dockerfile uses and under the Docker Hub name it stands for, so
# that FROM finds it locally and nothing is pulled.
make_base() { # name extra-mmdebstrap-args...
  local name=$1
  shift
  if [ "$rebuild_base" -eq 0 ] && podman image exists "docker.io/library/debian:$name"; then
    echo "build-image: debian:$name exists (--rebuild-base makes it again)"
    return
  fi
  echo "build-image: making debian:$name with mmdebstrap"
  local t0
  t0=$(now)
  # mmdebstrap writes the root file system as a tar to stdout; apt's lists
  # and caches are removed from it at the end. The merged-usr hook makes
  # /bin, /lib, /sbin links into /usr as debootstrap (and so the official
  # images) does; left to itself mmdebstrap installs the usrmerge package for
  # that, which brings a full perl (170 MB instead of about 120 MB).
  mmdebstrap --variant=minbase --format=tar --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt="$repo/deploy/docker/base/docker-clean" "$@" \
    bookworm - \
    "deb $mirror bookworm main" \
    "deb $mirror bookworm-updates main" \
    "deb $security_mirror bookworm-security main" < /dev/null \
    | podman import --change 'CMD ["bash"]' - "localhost/debian:$name" > /dev/null
  podman tag "localhost/debian:$name" "docker.io/library/debian:$name"
  echo "build-image: debian:$name made in $(($(now) - t0)) s," \
    "$(podman image inspect --format '{{.Size}}' "docker.io/library/debian:$name") bytes"
}

# Slim as the official slim image: dpkg leaves documentation, man pages and
# translations out of every package installed later, and slimify.sh removes
# them from the packages mmdebstrap unpacked before dpkg read that.
make_base bookworm-slim --dpkgopt="$repo/deploy/docker/base/slim-dpkg.cfg" \
  --customize-hook="\"$repo/deploy/docker/base/slimify.sh\" \"\$1\""

# The build context is the repository root; podman does not read
# Dockerfile.dockerignore beside the Dockerfile by itself (BuildKit does).
echo "build-image: building memtrimd:$version from deploy/docker/Dockerfile"
t0=$(now)
tag_args=(-t "localhost/memtrimd:$version" -t localhost/memtrimd:latest)
for t in "${tags[@]}"; do tag_args+=(-t "$t"); done
# podman keeps each build stage's image in the store, untagged (the build
# stage's is about 800 MB). Each stage is labelled io.memtrimd.stage=<name>:
# after the build, whether it succeeded or not, the untagged ones are
# removed (with the cached layers beneath them that nothing else uses) or,
# with --keep-stages, tagged. Only untagged images carrying the label are
# touched, nothing else in the store.
stages() {
  local stage=$1 id
  for id in $(podman images --quiet --no-trunc --filter dangling=true \
    --filter "label=io.memtrimd.stage=$stage"); do
    if [ "$keep_stages" -eq 1 ]; then
      podman untag "localhost/memtrimd-stage-$stage:$version" 2> /dev/null || true
      podman tag "$id" "localhost/memtrimd-stage-$stage:$version"
    else
      podman rmi "$id" > /dev/null
    fi
  done
}
leave_stages() {
  stages build
  stages runtime-root
}
trap leave_stages EXIT
# --jobs 2: the runtime root is made while the build stage compiles,
# instead of after it.
podman build --pull=never --jobs 2 --ignorefile deploy/docker/Dockerfile.dockerignore \
  -f deploy/docker/Dockerfile "${tag_args[@]}" .
build_s=$(($(now) - t0))

size=$(podman image inspect --format '{{.Size}}' "localhost/memtrimd:$version")
echo "build-image: memtrimd:$version built in $build_s s ($(($(now) - started)) s in all)," \
  "$size bytes ($((size / 1000000)) MB)"
echo "build-image: try: CONTAINERS_CONF=$CONTAINERS_CONF podman run --rm memtrimd --version"
