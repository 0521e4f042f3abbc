#!/usr/bin/env bash
# Makes the memtrimd image's root file system in ROOT from exactly the
# Debian packages runtime-packages lists, as a scanner expects to find
# them: each package's files unpacked, and dpkg's database written as dpkg
# would have written it (/var/lib/dpkg/status with the package's control
# fields and "install ok installed", info/<package>.list and .md5sums),
# so that `dpkg -l` and image scanners list each package with its version.
#
#   make-runtime-root.sh PACKAGES-FILE ROOT
#
# Runs as root in the Dockerfile's runtime-root stage, a Debian image whose
# apt lists are up to date (apt-get update). No package is configured: none
# of these has a maintainer script that matters without a shell in the
# image (libc6's and the libraries' run ldconfig, which the loader does not
# need: Debian's ld.so searches the multiarch directories by itself).
# Left out as the slim Debian images leave them out (slim-dpkg.cfg beside
# this file): documentation but the copyright files, man pages,
# translations; and glibc's gconv modules (8.2 MB), which only iconv(3)
# loads for character sets other than UTF-8 and ASCII: nothing in memtrimd
# or its libraries converts character sets.
set -euo pipefail
packages_file=$1
root=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

with_deps=()
alone=()
while read -r name flag _; do
  case "$name" in '' | '#'*) continue ;; esac
  case "$flag" in
    '' | '#'*) with_deps+=("$name") ;;
    nodeps) alone+=("$name") ;;
    *) echo "make-runtime-root: $packages_file: unknown flag $flag for $name" >&2; exit 2 ;;
  esac
done < "$packages_file"

debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
mkdir -p "$debs/archives/partial"
: > "$debs/status"
# apt resolves the dependencies as if nothing were installed (an empty
# status file), so the closure is the whole of what the image needs, not
# what this stage's image happens to lack.
apt-get -q -y --no-install-recommends --download-only \
  -o Dir::State::status="$debs/status" -o Dir::Cache::archives="$debs/archives" \
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root install "${with_deps[@]}" > "$debs/apt.log" \
  || { cat "$debs/apt.log" >&2; exit 1; }
if [ ${#alone[@]} -gt 0 ]; then
  (cd "$debs/archives" && apt-get -q -o APT::Sandbox::User=root download "${alone[@]}" > /dev/null)
fi

got=$(for deb in "$debs"/archives/*.deb; do dpkg-deb -f "$deb" Package; done | sort)
want=$(printf '%s\n' "${with_deps[@]}" "${alone[@]}" | sort)
if [ "$got" != "$want" ]; then
  echo "make-runtime-root: apt's closure of $packages_file is not the list itself" \
    "(+ apt's, - the list's):" >&2
  diff <(echo "$want") <(echo "$got") | sed -n 's/^> /+ /p; s/^< /- /p' >&2
  exit 1
fi

# Merged /usr, as in Debian 12's own images: the packages' /lib and /bin
# paths land in /usr through these links (tar keeps them).
mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" \
  "$root/var/lib/dpkg/info"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done

for deb in "$debs"/archives/*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" --keep-directory-symlink
done
"$here/slimify.sh" "$root"
rm -rf "$root/usr/lib/x86_64-linux-gnu/gconv"

# dpkg's database: the status entry is the control file with the Status
# field dpkg adds on installing; the file list holds what is there (not
# what was left out above), as dpkg's own path-exclude does.
for deb in "$debs"/archives/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  # A Multi-Arch: same package's files are named with its architecture.
  info=$pkg
  if [ "$(dpkg-deb -f "$deb" Multi-Arch)" = same ]; then
    info=$pkg:$(dpkg-deb -f "$deb" Architecture)
  fi
  {
    dpkg-deb -f "$deb" | sed '/^Package:/a Status: install ok installed'
    echo
  } >> "$root/var/lib/dpkg/status"
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||; s|^$|/.|' \
    | while IFS= read -r path; do
      if [ "$path" = /. ] || [ -e "$root$path" ] || [ -L "$root$path" ]; then echo "$path"; fi
    done > "$root/var/lib/dpkg/info/$info.list"
  control=$(mktemp -d)
  dpkg-deb --control "$deb" "$control"
  if [ -f "$control/md5sums" ]; then
    while read -r sum path; do
      if [ -e "$root/$path" ]; then echo "$sum  $path"; fi
    done < "$control/md5sums" > "$root/var/lib/dpkg/info/$info.md5sums"
  fi
  rm -rf "$control"
done

# The Dockerfile's USER, named as distroless images name it; no shell.
echo 'root:x:0:0:root:/root:/usr/sbin/nologin' > "$root/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >> "$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"
