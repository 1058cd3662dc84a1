"""The downstream example (examples/custom_kernels): a custom-kernel library built with CMake against
the installed runtime wheel's headers and CMake config, called through the runtime's state, memory
manager and copies. About 3 s (one CMake configure and build)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/custom_kernels"
OK, INVALID_ARGUMENT, OUT_OF_MEMORY = 0, 1, 2
HOST_TO_DEVICE = 1


@pytest.fixture(scope="module")
def built(runtime, tmp_path_factory) -> Path:
    cmake = shutil.which("cmake")
    if cmake is None or shutil.which("c++") is None:
        pytest.skip("needs cmake and a C++ compiler")
    build = tmp_path_factory.mktemp("custom_kernels") / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = subprocess.run([cmake, "-S", str(EXAMPLE), "-B", str(build), *generator,
                                f"-Dhipdnn_ep_runtime_DIR={runtime.cmake_dir()}"], capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    proc = subprocess.run([cmake, "--build", str(build)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return build


@pytest.fixture(scope="module")
def kernels(built, runtime):
    """The example library, loaded into this process beside the runtime the `runtime` fixture imported."""
    lib = ctypes.CDLL(str(built / "libcustom_kernels.so"))
    lib.custom_kernels_last_error.restype = ctypes.c_char_p
    lib.custom_kernels_rms_norm_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                ctypes.c_int64, ctypes.c_double, ctypes.POINTER(ctypes.c_void_p)]
    return lib


def _rms_norm(x: np.ndarray, scale: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + eps) * scale).astype(np.float32)


def test_the_library_links_the_installed_runtime(built, runtime):
    """-z defs at link time; at run time the library's runtime is the wheel's (by SONAME, through RUNPATH)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        pytest.skip("needs ldd (glibc)")
    out = subprocess.run([ldd, "-r", str(built / "libcustom_kernels.so")], capture_output=True, text=True).stdout
    assert f"libhipdnn_ep_runtime.so.1 => {Path(runtime.library_path()).resolve()}" in out, out
    assert "undefined symbol" not in out


def test_demo_runs(built):
    out = subprocess.run([str(built / "custom_kernels_demo")], capture_output=True, text=True, check=True).stdout
    got = np.array([float(v) for v in out.split()], np.float32).reshape(2, 3)
    want = _rms_norm(np.array([[1, 2, 2], [3, 0, 4]], np.float32), np.array([1, 1, 2], np.float32), 0.0)
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_kernel_runs_on_runtime_memory(kernels, runtime):
    assert kernels.custom_kernels_check_runtime() == OK, kernels.custom_kernels_last_error()
    rng = np.random.default_rng(0)
    rows, cols, eps = 5, 7, 1e-5
    x_host = rng.standard_normal((rows, cols)).astype(np.float32)
    s_host = rng.standard_normal(cols).astype(np.float32)
    with runtime.State(backend="cpu") as st:
        x, s = st.malloc(x_host.nbytes), st.malloc(s_host.nbytes)
        st.memcpy(x, x_host.ctypes.data, x_host.nbytes, HOST_TO_DEVICE)
        st.memcpy(s, s_host.ctypes.data, s_host.nbytes, HOST_TO_DEVICE)
        in_use = st.memory_stats()["bytes_in_use"]
        y = ctypes.c_void_p()
        status = kernels.custom_kernels_rms_norm_f32(st._handle(), x, s, rows, cols, eps, ctypes.byref(y))
        assert status == OK, kernels.custom_kernels_last_error()
        # Y came from the state's memory manager: it counts as in use until the caller frees it
        assert st.memory_stats()["bytes_in_use"] >= in_use + x_host.nbytes
        got = np.from_dlpack(st.view(y.value, [rows, cols], "float32")).copy()
        np.testing.assert_allclose(got, _rms_norm(x_host, s_host, eps), rtol=1e-5, atol=1e-5)
        for p in (x, s, y.value):
            st.free(p)
    # closing the state checked that nothing leaked


def test_errors_name_the_argument_and_carry_the_runtime_message(kernels, runtime):
    y = ctypes.c_void_p()
    with runtime.State(backend="cpu", memory_limit=1 << 20) as st:
        assert kernels.custom_kernels_rms_norm_f32(st._handle(), None, None, 2, 0, 0.0, ctypes.byref(y)) \
            == INVALID_ARGUMENT
        assert "cols >= 1" in kernels.custom_kernels_last_error().decode()
        # more than the state's limit: the runtime's out-of-memory status and message come through
        status = kernels.custom_kernels_rms_norm_f32(st._handle(), None, None, 1024, 1024, 0.0, ctypes.byref(y))
        assert status == OUT_OF_MEMORY
        message = kernels.custom_kernels_last_error().decode()
        assert message.startswith("custom_kernels_rms_norm_f32: allocating Y: hipdnn_ep_malloc: out of memory: "
                                  f"requested {1024 * 1024 * 4} bytes"), message
        assert y.value is None
