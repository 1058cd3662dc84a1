#!/usr/bin/env bash
# Fetch the third-party headers the native packages are built with, and cache
# them under third_party/:
#
#   third_party/ort-headers/      ONNX Runtime C API headers (API version 23), for the EP
#   third_party/nlohmann-json/    nlohmann/json (header-only), the JSON reader and writer of
#                                 the EP and the runtime
#
# PyPI's onnxruntime wheel ships no headers.  Debian's libonnxruntime-dev
# 1.23.2 (suite forky) does, and the same suite has nlohmann-json3-dev; we
# download those .debs with apt's own client, pointed at private lists so
# nothing of the host's apt state changes and no forky package is installed,
# and unpack only their include folders.  Each folder holds a VERSION stamp
# (the exact package version it came from).
#
# Usage: tools/release/fetch_third_party.sh [DIR]      (DIR defaults to third_party at
# the repository root).  Idempotent: a folder with the expected stamp is kept.
# Machines without a package registry get the headers by copying DIR with the
# source tree.
set -euo pipefail

SUITE="forky"
# name|Debian package|exact version|folder under the package's /usr/include|a file that must be there
PACKAGES=(
  "ort-headers|libonnxruntime-dev|1.23.2+dfsg-6.1|onnxruntime|onnxruntime_ep_c_api.h"
  "nlohmann-json|nlohmann-json3-dev|3.12.0.really.3.12.0.really.3.11.3-3|.|nlohmann/json.hpp"
)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${1:-$ROOT/third_party}"

missing=()
for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r name pkg version include probe <<< "$entry"
  dest="$DIR/$name"
  if [[ -f "$dest/VERSION" && "$(cat "$dest/VERSION")" == "$version" && -f "$dest/$probe" ]]; then
    echo "$pkg $version already in $dest"
  else
    missing+=("$entry")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

for tool in apt-get dpkg; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found; copy an existing third_party/ folder instead" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"

sources=/etc/apt/sources.list.d/debian.sources
if [[ -f "$sources" ]]; then
  mirror="$(grep -h '^URIs' "$sources" | head -1 | awk '{print $2}')"
fi
mirror="${mirror:-http://deb.debian.org/debian}"
echo "deb $mirror $SUITE main" > "$work/sources.list"

apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
          -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
apt-get "${apt_opts[@]}" -qq update

for entry in "${missing[@]}"; do
  IFS='|' read -r name pkg version include probe <<< "$entry"
  dest="$DIR/$name"
  (cd "$work" && apt-get "${apt_opts[@]}" -qq download "$pkg=$version")
  dpkg -x "$work/${pkg}"_*.deb "$work/$name"
  src="$work/$name/usr/include/$include"
  [[ -f "$src/$probe" ]] || { echo "error: $pkg $version has no $probe" >&2; exit 1; }
  rm -rf "$dest"
  mkdir -p "$dest"
  cp -r "$src"/. "$dest"/
  copyright="$work/$name/usr/share/doc/$pkg/copyright"
  [[ -f "$copyright" ]] && cp "$copyright" "$dest/COPYRIGHT"
  echo "$version" > "$dest/VERSION"
  echo "$pkg $version written to $dest"
done
