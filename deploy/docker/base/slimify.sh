#!/usr/bin/env bash
# mmdebstrap customize hook for the slim base image (scripts/build-image.sh):
# deletes from the root file system in $1 what slim-dpkg.cfg's path-exclude
# lines name and its path-include lines keep. dpkg honours those lines for
# every package installed later, but mmdebstrap unpacks the essential
# packages before dpkg reads them: without this the slim base kept their
# translations, documentation and man pages (113.5 MB instead of 77 MB).
# debuerreotype-slimify does the same for the official slim images.
set -euo pipefail
root=$1
excluded=()
included=()
while read -r kind pattern; do
  case "$kind" in
    path-exclude) excluded+=(-o -path "$root$pattern") ;;
    path-include) included+=(-o -path "$root$pattern") ;;
  esac
done < "$(dirname "${BASH_SOURCE[0]}")/slim-dpkg.cfg"
# Every pattern is under /usr/share; directories stay (dpkg keeps them too).
find "$root/usr/share" -xdev ! -type d \( -false "${excluded[@]}" \) \
  ! \( -false "${included[@]}" \) -delete
