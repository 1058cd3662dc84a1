"""The forwarding library: every ABI function of the manifest, with the runtime's SONAME and symbol
versions, calls one Python dispatcher with its arguments packed as uint64s."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np

from hipdnn_ep_compiler.link import version_script

NP = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
      10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
      16: ml_dtypes.bfloat16, 17: ml_dtypes.float8_e4m3fn, 18: ml_dtypes.float8_e4m3fnuz, 19: ml_dtypes.float8_e5m2,
      20: ml_dtypes.float8_e5m2fnuz}
CODE = {np.dtype(v): k for k, v in NP.items()}
DISPATCH = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64))


def _c_param_type(t: str) -> str:
    if "*" not in t:
        return t
    return "const void*" if "const" in t else "void*"


def build_shim(manifest: dict, out_dir: Path) -> Path:
    fns = manifest["functions"]
    lines = ["#include <stdint.h>", "typedef struct hipdnn_ep_state hipdnn_ep_state_t;",
             "typedef struct hipdnn_ep_artifact hipdnn_ep_artifact_t;",
             "static int64_t (*dispatch)(int, uint64_t*);",
             "void hipdnn_test_set_dispatch(int64_t (*f)(int, uint64_t*)) { dispatch = f; }"]
    for idx, f in enumerate(fns):
        params = [(p["type"], p["name"]) for p in f["params"]]
        # pointers become void pointers: the shim needs no struct definitions
        decl = ", ".join(f"{_c_param_type(t)} {n}" for t, n in params) or "void"
        packed = ", ".join(f"(uint64_t)(uintptr_t){n}" for _, n in params) or "0"
        ret = f["returns"]["type"]
        c_ret = "const char*" if ret == "const char*" else ret
        call = f"dispatch({idx}, v)"
        body = f"uint64_t v[] = {{{packed}}}; "
        body += f"{call};" if ret == "void" else f"return ({c_ret})(uintptr_t){call};"
        lines.append(f"{c_ret} {f['name']}({decl}) {{ {body} }}")
    src = out_dir / "refruntime.c"
    src.write_text("\n".join(lines) + "\n")
    by_minor: dict[int, list[str]] = {0: ["hipdnn_test_set_dispatch"]}
    for f in fns:
        by_minor.setdefault(f["since"], []).append(f["name"])
    nodes = {int(k): v for k, v in manifest["version_nodes"].items()}
    (out_dir / "refruntime.map").write_text(version_script(nodes, by_minor, max(nodes)))
    lib = out_dir / manifest["abi"]["soname"]
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src), f"-Wl,-soname,{manifest['abi']['soname']}",
                    f"-Wl,--version-script,{out_dir / 'refruntime.map'}"], check=True)
    return lib


def _view(ptr: int, dims: tuple, dtype) -> np.ndarray:
    n = int(np.prod(dims)) if dims else 1
    nbytes = n * np.dtype(dtype).itemsize
    if nbytes == 0:
        return np.empty(dims, dtype)
    buf = (ctypes.c_char * nbytes).from_address(ptr)
    return np.frombuffer(buf, dtype=dtype).reshape(dims)
