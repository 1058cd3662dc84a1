#!/usr/bin/env bash
# The HIP compile check (also `nox -s hip_check`): compiles every GPU source of the runtime
# for AMD GPUs (gfx1100 and gfx1151 by default) to device assembly, without an AMD GPU, so that a
# kernel that only builds for CUDA is caught. It uses Debian bookworm's clang-19 and the HIP
# headers of libamdhip64-dev 5.2 (with libhsa-runtime-dev and libamd-comgr-dev), unpacked into a
# cache folder with `apt-get download` + `dpkg -x` (nothing of them is installed). Debian's
# device libraries predate gfx11, so this compiles (-nogpulib, --cuda-device-only), it does not
# link code objects. gpu_blas.hip needs hipBLASLt, which Debian lacks: it is compiled by the
# real ROCm build only.
#
#   tools/gpu/hip_check.sh [ARCH...]          (default: gfx1100 gfx1151)
#
# Environment: HIP_HEADERS (cache folder, default build/hip-headers), CLANG (default clang++-19;
# installed with apt-get when missing and running as root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNTIME=$ROOT/packages/runtime
ARCHS=("${@:-gfx1100}")
[ $# -gt 0 ] || ARCHS=(gfx1100 gfx1151)
HEADERS=${HIP_HEADERS:-$ROOT/build/hip-headers}
CLANG=${CLANG:-clang++-19}
WORK=$ROOT/build/hip-check
PACKAGES=(libamdhip64-dev libhsa-runtime-dev libamd-comgr-dev)

if ! command -v "$CLANG" >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq clang-19 >/dev/null
  else
    echo "error: $CLANG not found; install clang-19 (Debian bookworm: apt-get install clang-19) or set CLANG" >&2
    exit 1
  fi
fi
if [ ! -f "$HEADERS/usr/include/hip/hip_runtime.h" ]; then
  command -v apt-get >/dev/null || { echo "error: apt-get not found; copy a $HEADERS folder from a Debian machine" >&2; exit 1; }
  mkdir -p "$HEADERS/debs"
  (cd "$HEADERS/debs" && apt-get download "${PACKAGES[@]}" 2>/dev/null) || {
    [ "$(id -u)" = 0 ] && apt-get update -qq && (cd "$HEADERS/debs" && apt-get download "${PACKAGES[@]}")
  }
  for deb in "$HEADERS"/debs/*.deb; do dpkg -x "$deb" "$HEADERS"; done
fi

[ -f "$ROOT/third_party/nlohmann-json/nlohmann/json.hpp" ] || bash "$ROOT/tools/release/fetch_third_party.sh"
mkdir -p "$WORK"
PYTHONPATH=$ROOT/packages/abi python3 -m hipdnn_ep_abi --manifest "$ROOT/packages/abi/manifest.toml" generate --out "$WORK/abi" >/dev/null
mapfile -t SOURCES < <(cd "$RUNTIME" && ls src/kernels/gpu/*.hip src/gpu/*.hip | grep -v 'gpu_blas\.hip$')
failed=0
printf '%-36s' "source"; printf ' %-16s' "${ARCHS[@]}"; echo
for src in "${SOURCES[@]}"; do
  printf '%-36s' "$src"
  for arch in "${ARCHS[@]}"; do
    out=$WORK/$(basename "$src" .hip).$arch.s
    if (cd "$RUNTIME" && "$CLANG" -x hip -std=c++17 --offload-arch="$arch" --cuda-device-only -S -nogpulib \
          -Werror -Wno-unused-command-line-argument --rocm-path="$HEADERS/usr" -isystem "$HEADERS/usr/include" \
          -isystem "$ROOT/third_party/nlohmann-json" -DJSON_USE_IMPLICIT_CONVERSIONS=0 \
          -Isrc -I"$WORK/abi/include" -I"$WORK/abi/internal" -I"$WORK/abi/contracts" -I"$ROOT/packages/abi/include" "$src" -o "$out") 2> "$out.log"; then
      printf ' %-16s' "ok ($(grep -c '^[[:space:]]*\.amdhsa_kernel ' "$out") kernels)"
    else
      printf ' %-16s' "FAIL"
      failed=1
    fi
  done
  echo
done
if [ $failed -ne 0 ]; then
  for log in "$WORK"/*.log; do [ -s "$log" ] && { echo "--- $log"; head -20 "$log"; }; done
  echo "HIP compile check failed" >&2
  exit 1
fi
echo "HIP compile check passed: ${#SOURCES[@]} sources for ${ARCHS[*]}"
