#!/usr/bin/env bash
# Fetch the ONNX Runtime C API headers (API version 23) that the hipdnn-ep
# plugin is built against, and cache them in third_party/ort-headers/.
#
# PyPI's onnxruntime wheel ships no headers.  Debian's libonnxruntime-dev
# 1.23.2 (suite forky) does; we download that one .deb with apt's own client,
# pointed at private lists so nothing of the host's apt state changes and no
# forky package is installed, and unpack only its include folder.
#
# Usage: tools/fetch_ort_headers.sh [DEST]      (DEST defaults to
# third_party/ort-headers at the repository root).  Idempotent: an existing
# cache with the expected version stamp is kept.  Machines without a package
# registry get the headers by copying the cache folder with the source tree.
set -euo pipefail

ORT_DEV_VERSION="1.23.2+dfsg-6.1"
SUITE="forky"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${1:-$ROOT/third_party/ort-headers}"
STAMP="$DEST/VERSION"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$ORT_DEV_VERSION" \
      && -f "$DEST/onnxruntime_c_api.h" && -f "$DEST/onnxruntime_ep_c_api.h" ]]; then
  echo "ORT headers $ORT_DEV_VERSION already in $DEST"
  exit 0
fi

for tool in apt-get dpkg; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found; copy an existing third_party/ort-headers/ instead" >&2; exit 1; }
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
(cd "$work" && apt-get "${apt_opts[@]}" -qq download "libonnxruntime-dev=$ORT_DEV_VERSION")
dpkg -x "$work"/libonnxruntime-dev_*.deb "$work/pkg"

src="$work/pkg/usr/include/onnxruntime"
[[ -f "$src/onnxruntime_ep_c_api.h" ]] || { echo "error: the package has no onnxruntime_ep_c_api.h" >&2; exit 1; }
rm -rf "$DEST"
mkdir -p "$DEST"
cp -r "$src"/. "$DEST"/
echo "$ORT_DEV_VERSION" > "$STAMP"
echo "ORT headers $ORT_DEV_VERSION written to $DEST"
