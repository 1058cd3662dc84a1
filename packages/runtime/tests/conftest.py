"""Shared fixtures: a CPU state that must end leak-free, and a builder of fake artifacts."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import hipdnn_ep_runtime as rt
import numpy as np
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--gpu", choices=("auto", "cuda", "hip", "none"), default="auto",
        help="GPU tests (marker gpu): auto runs them when this runtime has a GPU backend and a GPU answers, "
             "cuda/hip require that backend (a missing GPU fails instead of skipping), none skips them")
    parser.addoption(
        "--gpu-artifacts", default=str(Path(__file__).resolve().parents[3] / "build/gpu-artifacts"),
        help="folder of artifacts compiled by tools/gpu/gpu_artifacts.py for test_gpu_artifacts.py "
             "(default: build/gpu-artifacts of the checkout; the tests skip when it is absent)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a GPU backend and a GPU (see --gpu)")


def _gpu_backend(config: pytest.Config) -> tuple[str | None, str]:
    """The GPU backend the gpu tests use, or None with the reason they skip."""
    choice = config.getoption("--gpu")
    if choice == "none":
        return None, "--gpu=none"
    candidates = [b for b in rt.built_backends() if b != "cpu"] if choice == "auto" else [choice]
    if not candidates:
        return None, "this runtime was built without a GPU backend (HIPDNN_EP_BACKENDS=cpu)"
    backend = candidates[0]
    try:
        rt.State(backend=backend).close()
    except rt.HipdnnEpError as e:
        if choice == "auto":
            return None, f"no usable GPU for the {backend} backend: {e}"
        raise pytest.UsageError(f"--gpu={choice}: {e}") from e
    return backend, ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any("gpu" in item.keywords for item in items):
        return
    backend, reason = _gpu_backend(config)
    config.stash[GPU_BACKEND] = backend
    if backend is None:
        skip = pytest.mark.skip(reason=f"GPU tests skipped: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


GPU_BACKEND = pytest.StashKey[str | None]()


@pytest.fixture(scope="session")
def gpu_backend(request: pytest.FixtureRequest) -> str:
    """The GPU backend ("cuda" or "hip") that --gpu selected; tests using it carry the gpu marker."""
    backend = request.config.stash.get(GPU_BACKEND, None)
    if backend is None:
        pytest.skip("no GPU backend")
    return backend


@pytest.fixture
def state() -> Iterator[rt.State]:
    """A CPU state; closing it at the end fails the test if it leaked."""
    s = rt.State()
    yield s
    if not s.closed:
        s.close()


@pytest.fixture(scope="session")
def runtime_lib() -> ctypes.CDLL:
    """The runtime library through ctypes, for the C entry points Python does not wrap."""
    return ctypes.CDLL(rt.library_path())


# ctypes mirrors of the ABI structs that tests pass to the C entry points themselves (hipdnn_ep/runtime_abi.h)

class TensorRef(ctypes.Structure):
    """hipdnn_ep_tensor_ref_t."""

    _fields_ = [("data", ctypes.c_void_p), ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


# hipdnn_ep_output_alloc_fn
ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(TensorRef),
                            ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p))


class OutputAllocator(ctypes.Structure):
    """hipdnn_ep_output_allocator_t."""

    _fields_ = [("struct_size", ctypes.c_uint64), ("alloc", ALLOC_FN), ("context", ctypes.c_void_p)]


class MemoryStats(ctypes.Structure):
    """hipdnn_ep_memory_stats_t."""

    _fields_ = [(n, ctypes.c_uint64) for n in ("struct_size", "bytes_in_use", "bytes_reserved", "peak_bytes_in_use",
                                               "allocation_count", "live_allocations", "memory_limit_bytes",
                                               "host_scratch_bytes", "pool_bytes")]


def manifest_hash(name: str) -> str:
    """Signature hash of a runtime function, from the runtime's own manifest."""
    return next(f["hash"] for f in rt.abi_manifest()["functions"] if f["name"] == name)


def manifest_import(name: str) -> dict:
    """A metadata `imports` entry of a runtime function, as the compiler writes it (name, hash, since)."""
    f = next(f for f in rt.abi_manifest()["functions"] if f["name"] == name)
    return {"name": name, "hash": f["hash"], "since": f["since"]}


# The fake program: y = 2 * x + w[0] (float32), y's dims in the host scratch.
# `extra_call` lets a test make the code reference a symbol the runtime lacks.
PROGRAM_C = r"""
#include <stdio.h>
#include <unistd.h>
#include "hipdnn_ep/runtime_abi.h"
%(extra_decl)s
__attribute__((used, section(".hipdnn_ep_meta")))
const char hipdnn_ep_meta[] = %(meta)s;

__attribute__((constructor)) static void mark_loaded(void) {
  FILE* f = fopen(%(marker)s, "w");
  if (f) { fputs("loaded", f); fclose(f); }
}

int32_t hipdnn_ep_program_run(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t* inputs,
                              hipdnn_ep_tensor_ref_t* outputs) {
  %(extra_call)s
  usleep(%(sleep_us)d);
  int64_t n = inputs[0].dims[0];
  int64_t* dims = 0;
  int32_t status = hipdnn_ep_get_host_scratch_base(state, sizeof(int64_t), (void**)&dims);
  if (status) return status;
  dims[0] = n;
  float* y = 0;
  outputs[0].dims = dims;
  outputs[0].rank = 1;
  outputs[0].dtype = HIPDNN_EP_DTYPE_FLOAT32;
  %(alloc_output)s
  %(after_alloc)s
  const float* x = (const float*)inputs[0].data;
  const float* w = (const float*)inputs[1].data;
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + w[0];
  outputs[0].data = y;
  outputs[0].dims = dims;
  outputs[0].rank = 1;
  outputs[0].dtype = HIPDNN_EP_DTYPE_FLOAT32;
  return 0;
}
"""

GOOD_IMPORTS = ["hipdnn_ep_get_host_scratch_base", "hipdnn_ep_malloc"]
# How the fake program gets its output: from the allocator (ABI 1.1), or by stating its shape and
# asking hipdnn_ep_output_alloc (1.3: the host may provide the memory).
MALLOC_OUTPUT = """if (n > 0) {
    status = hipdnn_ep_malloc(state, (uint64_t)n * sizeof(float), (void**)&y);
    if (status) return status;
  }"""
IN_PLACE_OUTPUT = """status = hipdnn_ep_output_alloc(state, outputs, 0, n > 0 ? (uint64_t)n * sizeof(float) : 1);
  if (status) return status;
  y = (float*)outputs[0].data;"""


def good_metadata() -> dict:
    """Metadata of the fake program as the compiler would embed it."""
    major, minor = rt.abi_version()
    return {
        "format": 1,
        "compiler": {"name": "hipdnn-ep-compiler", "version": "0.1.0"},
        "backend": "cpu",
        "abi": {"major": major, "min_minor": minor},
        "imports": [manifest_import(n) for n in GOOD_IMPORTS],
        "inputs": [{"name": "x", "dtype": 1, "dims": ["n"]}],
        "outputs": [{"name": "y", "dtype": 1, "dims": ["n"]}],
        "weights": [{"name": "w", "dtype": 1, "dims": [1], "source": {"kind": "inline"}}],
        "memory_plan": {"pool_bytes": 0, "host_scratch_bytes": 0, "alignment": 256, "buffers": []},
        "checks": [],
        "graph_hash": "0" * 64,
    }


@dataclass(frozen=True)
class FakeArtifact:
    directory: Path  # holds program.so
    marker: Path  # written by the program's constructor, i.e. only if its code was loaded

    @property
    def loaded(self) -> bool:
        return self.marker.exists()


ArtifactFactory = Callable[..., FakeArtifact]


@pytest.fixture
def make_artifact(tmp_path: Path) -> ArtifactFactory:
    """Builds a fake artifact with `cc`: program.so with the given metadata embedded."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build fake artifacts")
    counter = iter(range(1000))

    def build(metadata: dict | str | None = None, *, extra_call: str = "", extra_decl: str = "",
              sleep_us: int = 0, in_place: bool = False, after_alloc: str = "") -> FakeArtifact:
        directory = tmp_path / f"artifact{next(counter)}"
        directory.mkdir()
        marker = directory / "loaded.marker"
        if metadata is None:
            metadata = good_metadata()
            if in_place:
                name = "hipdnn_ep_output_alloc"
                metadata["imports"].append(manifest_import(name))
        meta = metadata if isinstance(metadata, str) else json.dumps(metadata)
        source = directory / "program.c"
        source.write_text(PROGRAM_C % {"meta": json.dumps(meta), "marker": json.dumps(str(marker)),
                                       "extra_call": extra_call, "extra_decl": extra_decl, "sleep_us": sleep_us,
                                       "alloc_output": IN_PLACE_OUTPUT if in_place else MALLOC_OUTPUT,
                                       "after_alloc": after_alloc})
        lib = Path(rt.library_path())
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", rt.include_dir(), str(source), "-o",
                        str(directory / "program.so"), str(lib), f"-Wl,-rpath,{lib.parent}"],
                       check=True, capture_output=True)
        return FakeArtifact(directory, marker)

    return build


def rand(shape, dtype=np.float32, seed=0, low=-3.0, high=3.0) -> np.ndarray:
    """Seeded test data of any kernel dtype: bools 0/1, integers in [low, high] clipped to the
    type, floats uniform in [low, high)."""
    r = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return r.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        lo = max(int(low), np.iinfo(dtype).min)
        return r.integers(lo, int(high) + 1, size=shape).astype(dtype)
    return r.uniform(low, high, size=shape).astype(dtype)


# The GPU kernel tests: device arrays, and a cpu and a GPU state per module.


class DeviceArrays:
    """numpy <-> device arrays through torch or cupy (whichever is installed), both DLPack producers."""

    def __init__(self) -> None:
        try:
            import torch

            if not torch.cuda.is_available():
                raise ImportError("torch without a GPU")
            self.torch = torch
            self.cupy = None
        except ImportError:
            self.torch = None
            self.cupy = pytest.importorskip("cupy", reason="the GPU tests need torch (with CUDA) or cupy")

    def to_device(self, a: np.ndarray):
        if self.torch is not None:
            return self.torch.from_numpy(np.array(a, order="C")).cuda()  # (ascontiguousarray makes 0-d 1-d)
        return self.cupy.asarray(a)

    def to_host(self, d) -> np.ndarray:
        if self.torch is not None:
            return d.cpu().numpy()
        return self.cupy.asnumpy(d)

    def synchronize(self) -> None:
        """Waits for the copies and fills the library queued on its stream."""
        if self.torch is not None:
            self.torch.cuda.synchronize()
        else:
            self.cupy.cuda.runtime.deviceSynchronize()


@pytest.fixture(scope="module")
def dev() -> DeviceArrays:
    return DeviceArrays()


@pytest.fixture(scope="module")
def cpu() -> rt.State:
    s = rt.State(backend="cpu")
    yield s
    s.close()


@pytest.fixture(scope="module")
def gpu(gpu_backend: str) -> rt.State:
    s = rt.State(backend=gpu_backend)
    yield s
    s.close()  # raises LeakError if a kernel leaked a temporary
