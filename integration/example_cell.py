"""The downstream example (examples/custom_kernels) in one matrix environment, run by
integration/matrix with the environment's Python (one hipdnn-ep-runtime installed there).

    python example_cell.py BUILD_DIR [--backend cpu|cuda]

BUILD_DIR holds the example built against some runtime wheel (maybe another version than the one
installed here). Two ways in, both as a user would:

- ``library``: ``import hipdnn_ep_runtime`` (the runtime installed here), then load
  ``libcustom_kernels.so``, which binds to that already-loaded runtime (same SONAME). Its own check
  (``custom_kernels_check_runtime``) must accept the runtime or refuse it with its documented
  message (``custom_kernels was built for runtime ABI X.Y but the loaded runtime has ABI A.B. Fix:
  ...``); when it accepts, RMS normalization on a state of the given backend must match numpy.
- ``demo``: ``custom_kernels_demo`` with the installed runtime's folder first on
  ``LD_LIBRARY_PATH``: it prints the result, or the same refusal, on a CPU state.

Each is reported as ``pass``, ``refused`` (the example's documented refusal) or ``fail`` (anything
else: a wrong result, a link error such as ``undefined symbol`` or ``version ... not found``, two
runtimes in one process). The result is one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2
REFUSAL = "custom_kernels was built for runtime ABI"


def _rms_norm(x: np.ndarray, scale: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + eps) * scale).astype(np.float32)


def _refusal(message: str) -> dict:
    ok = message.startswith(REFUSAL) and "Fix:" in message
    return {"outcome": "refused" if ok else "fail", "message": message[-800:]}


def _runtimes_loaded() -> set[str]:
    """The runtime libraries mapped into this process."""
    with open("/proc/self/maps") as maps:
        return {os.path.realpath(line.split(None, 5)[5].strip()) for line in maps
                if len(line.split(None, 5)) == 6 and "libhipdnn_ep_runtime.so" in line}


def run_library(build: Path, backend: str) -> dict:
    import hipdnn_ep_runtime as rt

    lib = ctypes.CDLL(str(build / "libcustom_kernels.so"))
    loaded = _runtimes_loaded()
    installed = os.path.realpath(rt.library_path())
    if loaded != {installed}:
        return {"outcome": "fail", "message": f"the library did not bind to the installed runtime {installed}: "
                                              f"loaded {sorted(loaded)}"}
    lib.custom_kernels_last_error.restype = ctypes.c_char_p
    lib.custom_kernels_rms_norm_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                ctypes.c_int64, ctypes.c_double, ctypes.POINTER(ctypes.c_void_p)]
    if lib.custom_kernels_check_runtime() != 0:
        return _refusal(lib.custom_kernels_last_error().decode())
    rng = np.random.default_rng(0)
    rows, cols, eps = 5, 7, 1e-5
    x_host = rng.standard_normal((rows, cols)).astype(np.float32)
    s_host = rng.standard_normal(cols).astype(np.float32)
    got = np.empty_like(x_host)
    with rt.State(backend=backend) as st:
        x, s = st.malloc(x_host.nbytes), st.malloc(s_host.nbytes)
        st.memcpy(x, x_host.ctypes.data, x_host.nbytes, HOST_TO_DEVICE)
        st.memcpy(s, s_host.ctypes.data, s_host.nbytes, HOST_TO_DEVICE)
        y = ctypes.c_void_p()
        status = lib.custom_kernels_rms_norm_f32(st._handle(), x, s, rows, cols, eps, ctypes.byref(y))
        if status != 0:
            return {"outcome": "fail", "message": f"status {status}: {lib.custom_kernels_last_error().decode()}"}
        st.memcpy(got.ctypes.data, y.value, got.nbytes, DEVICE_TO_HOST)
        for p in (x, s, y.value):
            st.free(p)
    diff = float(np.max(np.abs(got - _rms_norm(x_host, s_host, eps))))
    if diff > 1e-5:
        return {"outcome": "fail", "message": f"RMS norm on a {backend} state differs from numpy by {diff:.3g}"}
    return {"outcome": "pass", "message": f"{backend} state, max difference {diff:.2g}"}


def run_demo(build: Path) -> dict:
    import hipdnn_ep_runtime as rt

    env = {**os.environ, "LD_LIBRARY_PATH": os.path.dirname(rt.library_path())}
    proc = subprocess.run([str(build / "custom_kernels_demo")], capture_output=True, text=True, env=env, timeout=60)
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
        result = _refusal(proc.stderr.strip())
        if result["outcome"] == "fail":
            result["message"] = f"{how}: {proc.stderr.strip()[-800:]}"
        return result
    got = np.array([float(v) for v in proc.stdout.split()], np.float32).reshape(2, 3)
    want = _rms_norm(np.array([[1, 2, 2], [3, 0, 4]], np.float32), np.array([1, 1, 2], np.float32), 0.0)
    if not np.allclose(got, want, atol=1e-4):
        return {"outcome": "fail", "message": f"demo printed {got.tolist()}, numpy gives {want.tolist()}"}
    return {"outcome": "pass", "message": ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", type=Path, help="the example's CMake build folder")
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args(argv)
    results = {}
    steps = (("demo", lambda: run_demo(args.build)), ("library", lambda: run_library(args.build, args.backend)))
    for name, fn in steps:
        try:
            results[name] = fn()
        except Exception as exc:  # noqa: BLE001 - every error is a result (an OSError from dlopen, say)
            results[name] = {"outcome": "fail", "message": f"{type(exc).__name__}: {exc}"[-800:]}
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
