#!/usr/bin/env bash
# The 8B-shaped LLM benchmark on a GPU machine without a package index (the H200): installs carried
# wheels, builds the runtime with the cuda backend, writes the model with tools/models/llm_models.py (cached),
# then runs `hipdnn-ep bench` on this EP and, when onnxruntime-gpu was carried, on ORT's CUDA EP in the
# same run (with and without its CUDA graph), and optionally the kernel profile (tools/bench/llm_profile.py)
# and the onnxruntime-genai soak (tools/gpu/llm_genai_soak.py).
#
#   tools/gpu/llm_gpu_bench.sh WHEELS OUT [SIZE] [bench flags...]
#
# WHEELS: a folder of wheels (*.whl, installed with pip --no-deps --target) and tarballs (*.tar.xz,
#   unpacked there); a file split for transfer as NAME.part-aa, NAME.part-ab, ... is joined first. It
#   needs the hipdnn-ep and hipdnn-ep-compiler wheels (built anywhere: they are Python-independent) and
#   torch-mlir (the compiler's MLIR); onnxruntime-gpu is optional (it adds the CUDA EP to the table).
# OUT: logs and results (bench.txt, bench.json, profile.txt).
# SIZE: a tools/models/llm_models.py size (default llama3-8b-8l; llama3-8b is the 32-layer one), written with
#   --shared-kv under build/llm-models/ once. Bench flags default to -l 128 -g 32 -r 3 -w 1.
# Environment: PYTHON (default python3), PROFILE=1 to also profile kernels, TESTS=1 to also run the
#   runtime's GPU LLM kernel tests, HIPDNN_EP_CUDA_ARCHITECTURES (default 90), BACKEND (this EP's
#   backend, default cuda; cpu runs the whole flow on a machine without a GPU), BUILDER=1 to have
#   onnxruntime-genai's own model builder write the model (tools/models/genai_builder_model.py: needs
#   onnxruntime-genai among the wheels, and torch and transformers; BUILDER_EXTRA its --extra options,
#   default blocks of 128), SOAK=1 to also run the soak (SOAK_STEPS decode steps, default 5000, over prompts
#   of the lengths SOAK_PROMPTS, default the soak's own).
#
# Packing here (a machine with a package index), for a device that takes at most ~60 MiB per call:
#
#   tools/gpu/llm_gpu_bench.sh --pack DIR TORCH_MLIR_WHEEL [ONNXRUNTIME_GPU_WHEEL]
#
# builds the hipdnn-ep and hipdnn-ep-compiler wheels, repacks torch-mlir without its torch-mlir-opt
# binary as a .tar.xz (about 44 MB), repacks onnxruntime-gpu as a .tar.xz with the CUDA code of the
# device's architecture only (tools/gpu/keep_gpu_arch.py; PACK_ARCH, default 90: 255 MB -> 69 MB for
# onnxruntime-gpu 1.31), splits it into 55 MiB parts, and puts them in
# folders DIR/c1, DIR/c2, ... of at most 56 MiB each: send each folder in its own call (carry it,
# copy its files into one folder there, e.g. /tmp/w), then run this script on that folder.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --pack ]; then
  DIR=$(mkdir -p "$2" && cd "$2" && pwd); TM=$3; ORTGPU=${4:-}
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  mkdir -p "$DIR/c1"
  for pkg in compiler ep; do uv build -q --wheel "$ROOT/packages/$pkg" -o "$DIR/c1" || exit 1; done
  rm -f "$DIR/c1/.gitignore"
  (cd "$work" && python3 -m zipfile -e "$TM" tm && rm -f tm/torch_mlir/_mlir_libs/torch-mlir-opt &&
   tar -C tm -cf - . | xz -T0 -9 > "$DIR/c1/torch_mlir.tar.xz") || exit 1
  if [ -n "$ORTGPU" ]; then
    (cd "$work" && python3 -m zipfile -e "$ORTGPU" ort &&
     python3 "$ROOT/tools/gpu/keep_gpu_arch.py" ort/onnxruntime/capi/libonnxruntime_providers_cuda.so "${PACK_ARCH:-90}" &&
     tar -C ort -cf - . | xz -T0 -9 > onnxruntime_gpu.tar.xz) || exit 1
    split -b 55M -a 2 "$work/onnxruntime_gpu.tar.xz" "$work/onnxruntime_gpu.tar.xz.part-"
    n=2
    for part in "$work"/*.part-*; do mkdir -p "$DIR/c$n" && mv "$part" "$DIR/c$n/" && n=$((n + 1)); done
  fi
  du -sh "$DIR"/c*
  exit 0
fi
WHEELS=$(cd "$1" && pwd); OUT=$(mkdir -p "$2" && cd "$2" && pwd); shift 2
SIZE=${1:-llama3-8b-8l}; [ $# -gt 0 ] && shift
FLAGS=("$@"); [ ${#FLAGS[@]} -gt 0 ] || FLAGS=(-l 128 -g 32 -r 3 -w 1)
PYTHON=${PYTHON:-python3}
SITE=$ROOT/build/llm-site
BUILD=$ROOT/build/llm-gpu
mkdir -p "$SITE" "$BUILD"
step() { echo "== $(date +%T) $*"; }

# the model is written while the wheels install and the runtime builds (the builder's once they are installed)
MODEL=$ROOT/build/llm-models/$SIZE
[ "${BUILDER:-0}" = 1 ] && MODEL=$ROOT/build/llm-models/builder-$SIZE
if [ -f "$MODEL/genai_config.json" ] || [ "${BUILDER:-0}" = 1 ]; then
  true & MODEL_PID=$!
else
  step "write $SIZE (shared KV buffer) in the background"
  $PYTHON "$ROOT/tools/models/llm_models.py" "$MODEL" --size "$SIZE" --shared-kv > "$OUT/model.log" 2>&1 & MODEL_PID=$!
fi

if ! ls "$SITE"/hipdnn_ep_runtime/*.so >/dev/null 2>&1; then
  step "build the runtime (cpu;cuda) in the background"
  { HIPDNN_EP_BACKENDS="cpu;cuda" $PYTHON -m pip wheel --no-build-isolation --no-deps --no-index -w "$BUILD/wheels" \
      -Cbuild-dir="$BUILD/runtime" -Ccmake.define.HIPDNN_EP_CUDA_ARCHITECTURES="${HIPDNN_EP_CUDA_ARCHITECTURES:-90}" \
      "$ROOT/packages/runtime" > "$OUT/build.log" 2>&1; } & BUILD_PID=$!
else
  true & BUILD_PID=$!
fi

step "wheels from $WHEELS"
for first in "$WHEELS"/*.part-aa; do
  [ -e "$first" ] || continue
  whole=${first%.part-aa}
  [ -e "$whole" ] || cat "$whole".part-* > "$whole"
done
wheels=("$WHEELS"/*.whl)
[ -e "${wheels[0]}" ] && { $PYTHON -m pip install -q --no-deps --no-index --target "$SITE" "${wheels[@]}" || exit 1; }
for t in "$WHEELS"/*.tar.xz; do
  [ -e "$t" ] && { tar -C "$SITE" -xJf "$t" || exit 1; }
done
wait $BUILD_PID || { tail -30 "$OUT/build.log"; exit 1; }
if ! ls "$SITE"/hipdnn_ep_runtime/*.so >/dev/null 2>&1; then
  $PYTHON -m pip install -q --no-deps --no-index --target "$SITE" "$BUILD"/wheels/hipdnn_ep_runtime-*.whl || exit 1
fi
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
# CUDA libraries of the nvidia-* wheels beside torch, for onnxruntime-gpu's CUDA EP
NV=$($PYTHON -c "import glob, nvidia, os; print(':'.join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + '/*/lib/*.so*') + glob.glob(d + '/cu13/lib/*.so*')})))" 2>/dev/null)
export LD_LIBRARY_PATH=${NV}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
$PYTHON -c "import onnxruntime as o, hipdnn_ep as h; print('onnxruntime', o.__version__, o.get_available_providers()); print('hipdnn-ep', h.__file__)"

wait $MODEL_PID || { tail "$OUT/model.log"; exit 1; }
if [ ! -f "$MODEL/genai_config.json" ]; then  # BUILDER=1
  step "write $SIZE with onnxruntime-genai's model builder"
  # shellcheck disable=SC2086  # BUILDER_EXTRA is a list of KEY=VALUE words
  $PYTHON "$ROOT/tools/models/genai_builder_model.py" "$MODEL" --size "$SIZE" \
    --execution-provider "$([ "${BACKEND:-cuda}" = cpu ] && echo cpu || echo cuda)" \
    --extra ${BUILDER_EXTRA:-block_size=128 accuracy_level=0} > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
fi

EPS=(--ep hipdnn)
$PYTHON -c "import onnxruntime as o, sys; sys.exit('CUDAExecutionProvider' not in o.get_available_providers())" &&
  EPS+=(--ep cuda --ep cuda-graph)
step "bench ${EPS[*]} ${FLAGS[*]}"
$PYTHON -m hipdnn_ep.cli bench "$MODEL" "${EPS[@]}" --option "backend=${BACKEND:-cuda}" "${FLAGS[@]}" --json "$OUT/bench.json" \
  2>&1 | tee "$OUT/bench.txt"
status=${PIPESTATUS[0]}

if [ "${PROFILE:-0}" = 1 ]; then
  step "profile"
  { $PYTHON "$ROOT/tools/bench/llm_kernel_bench.py" --backend "${BACKEND:-cuda}"
    $PYTHON "$ROOT/tools/bench/llm_profile.py" "$MODEL" --ep hipdnn --option "backend=${BACKEND:-cuda}" -l 128 -g 16
    [[ " ${EPS[*]} " == *" cuda "* ]] && $PYTHON "$ROOT/tools/bench/llm_profile.py" "$MODEL" --ep cuda -l 128 -g 16
  } > "$OUT/profile.txt" 2>&1
  cat "$OUT/profile.txt" | grep -v "^\[" | head -150
fi
if [ "${SOAK:-0}" = 1 ]; then
  step "onnxruntime-genai soak"
  $PYTHON "$ROOT/tools/gpu/llm_genai_soak.py" "$MODEL" --backend "${BACKEND:-cuda}" --steps "${SOAK_STEPS:-5000}" \
    ${SOAK_PROMPTS:+--prompts "$SOAK_PROMPTS"} > "$OUT/soak.txt" 2>&1 || status=1
  tail -12 "$OUT/soak.txt"
fi
if [ "${TESTS:-0}" = 1 ]; then
  step "runtime GPU LLM kernel tests"
  (cd "$ROOT/packages/runtime" && $PYTHON -m pytest tests/test_gpu_llm_kernels.py --gpu=cuda -q -p no:cacheprovider -rfE) \
    > "$OUT/tests.log" 2>&1
  tail -5 "$OUT/tests.log"
fi
step done
exit $status
