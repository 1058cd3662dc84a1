#!/usr/bin/env bash
# The GPU test entry point (also `nox -s gpu`), for a machine with an NVIDIA GPU, nvcc and a
# Python that has scikit-build-core, nanobind, numpy, pytest and torch or cupy; it needs no
# package index, but third_party/ (tools/release/fetch_third_party.sh: nlohmann/json for the runtime and
# the EP, ORT's headers for the EP) must travel with the tree. It builds the runtime with the
# cuda backend, runs the runtime suite with --gpu=cuda (GPU kernels against the CPU backend, fixed and varying shapes, and the compiled
# artifacts under tools/gpu_artifacts/ when present, graph capture and replay), runs the GPU kernels again under
# `compute-sanitizer --tool memcheck` (with the artifacts), builds the EP and runs EPContext
# models on the GPU through ONNX Runtime (tools/gpu/gpu_ep_check.py, when its models and the ORT
# headers travelled with the tree), and prints a summary table.
#
#   tools/gpu/gpu_test.sh [LOG_DIR]      (default: build/gpu-test)
#
# Environment: PYTHON (default python3), HIPDNN_EP_CUDA_ARCHITECTURES (default 90),
# GPU_BUILD_DIR (default build/gpu), SANITIZER=0 to skip the memcheck pass.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=$(mkdir -p "${1:-$ROOT/build/gpu-test}" && cd "${1:-$ROOT/build/gpu-test}" && pwd)
PYTHON=${PYTHON:-python3}
BUILD=${GPU_BUILD_DIR:-$ROOT/build/gpu}
mkdir -p "$BUILD"
declare -a ROWS=()
row() { ROWS+=("$(printf '%-34s %-6s %s' "$1" "$2" "$3")"); }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  $PYTHON --version
} > "$LOGS/machine.txt" 2>&1
row "machine" "info" "$(head -1 "$LOGS/machine.txt")"

start=$(date +%s)
rm -rf "$BUILD/wheels" "$BUILD/site"
if HIPDNN_EP_BACKENDS="cpu;cuda" $PYTHON -m pip wheel --no-build-isolation --no-deps --no-index -w "$BUILD/wheels" \
     -Cbuild-dir="$BUILD/runtime" -Ccmake.define.HIPDNN_EP_CUDA_ARCHITECTURES="${HIPDNN_EP_CUDA_ARCHITECTURES:-90}" \
     "$ROOT/packages/runtime" > "$LOGS/build.log" 2>&1 &&
   $PYTHON -m pip install -q --no-deps --no-index --target "$BUILD/site" "$BUILD"/wheels/hipdnn_ep_runtime-*.whl \
     >> "$LOGS/build.log" 2>&1; then
  row "build runtime (cpu;cuda)" "ok" "$(( $(date +%s) - start )) s"
else
  row "build runtime (cpu;cuda)" "FAIL" "see build.log"
  tail -40 "$LOGS/build.log"
  printf '%s\n' "${ROWS[@]}"
  exit 1
fi
export PYTHONPATH=$BUILD/site${PYTHONPATH:+:$PYTHONPATH}

# pytest's summary line, e.g. "312 passed, 4 skipped in 20.1s"
summary() { grep -E '^(=+ )?[0-9]+ (passed|failed)|no tests ran' "$1" | tail -1 | sed 's/=//g'; }

status=0
cd "$ROOT/packages/runtime"
start=$(date +%s)
$PYTHON -m pytest tests --gpu=cuda -q -p no:cacheprovider -rfE > "$LOGS/tests.log" 2>&1
rc=$?
[ $rc -eq 0 ] || status=1
row "runtime suite --gpu=cuda" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "$(summary "$LOGS/tests.log") ($(( $(date +%s) - start )) s)"

if [ "${SANITIZER:-1}" != 0 ]; then
  start=$(date +%s)
  compute-sanitizer --tool memcheck --error-exitcode 86 --print-limit 20 \
    $PYTHON -m pytest tests/test_gpu_kernels.py tests/test_gpu_artifacts.py tests/test_gpu_graphs.py --gpu=cuda -q -p no:cacheprovider -rfE \
    --deselect tests/test_gpu_kernels.py::test_memory_manager_on_the_device > "$LOGS/memcheck.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  errors=$(grep -Eo "ERROR SUMMARY: [0-9]+ errors?" "$LOGS/memcheck.log" | tail -1)
  row "memcheck: GPU kernels+artifacts" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
      "${errors:-no summary}; $(summary "$LOGS/memcheck.log") ($(( $(date +%s) - start )) s)"
fi

# The EP on the GPU: built when the ORT headers travelled with the tree (tools/release/fetch_third_party.sh),
# run on the EPContext models of tools/gpu/gpu_ep_check.py --make when they did.
cd "$ROOT"
if [ -f "$ROOT/third_party/ort-headers/onnxruntime_ep_c_api.h" ]; then
  start=$(date +%s)
  if $PYTHON -m pip wheel --no-build-isolation --no-deps --no-index -w "$BUILD/wheels" -Cbuild-dir="$BUILD/ep" \
       "$ROOT/packages/ep" > "$LOGS/ep_build.log" 2>&1 &&
     $PYTHON -m pip install -q --no-deps --no-index --target "$BUILD/site" "$BUILD"/wheels/hipdnn_ep-*.whl \
       >> "$LOGS/ep_build.log" 2>&1; then
    row "build EP" "ok" "$(( $(date +%s) - start )) s"
    if [ -d "$ROOT/build/gpu-ep" ]; then
      $PYTHON tools/gpu/gpu_ep_check.py build/gpu-ep > "$LOGS/ep_check.log" 2>&1
      rc=$?
      [ $rc -eq 0 ] || status=1
      row "EP on the GPU (EPContext models)" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
          "$(grep -c ' ok$' "$LOGS/ep_check.log") shapes match ORT's CPU EP; see ep_check.log"
      row "EP on ORT's stream (ours)" "$(grep -q 'stream check FAILED' "$LOGS/ep_check.log" && echo FAIL || echo ok)" \
          "$(grep -c 'stream check passed' "$LOGS/ep_check.log") sessions ran on a stream from the EP's factory"
      row "EP: bad data at the Run's wait" "$(grep -q 'data check FAILED' "$LOGS/ep_check.log" && echo FAIL || echo ok)" \
          "$(grep -c 'data check passed' "$LOGS/ep_check.log") sessions refused a gather index out of range"
    else
      row "EP on the GPU (EPContext models)" "skip" "no build/gpu-ep (tools/gpu/gpu_ep_check.py --make)"
    fi
  else
    status=1
    row "build EP" "FAIL" "see ep_build.log"
  fi
else
  row "build EP" "skip" "no third_party/ort-headers (tools/release/fetch_third_party.sh)"
fi

echo
printf '%-34s %-6s %s\n' "step" "result" "details"
printf '%s\n' "${ROWS[@]}"
grep -E '^(FAILED|ERROR) ' "$LOGS/tests.log" | head -20
[ -f "$LOGS/ep_check.log" ] && tail -12 "$LOGS/ep_check.log"
exit $status
