"""Shared by the CPU kernel tests (test_cpu_*.py): the runtime's ABI manifest and its enums, a
module-scoped CPU state, and the calls of hipdnn_ep_kernel_* through the testing hook.

Kernels are called through ``_core.call_kernel`` with tensor refs over numpy buffers; outputs are
preallocated with the shape the compiler would infer. Op codes, dtype codes, statuses and struct
layouts come from the runtime's own ABI manifest, never from literals in the tests.
"""

from __future__ import annotations

import hipdnn_ep_runtime as rt
import numpy as np
import pytest

_core = rt._core

MANIFEST = rt.abi_manifest()
ENUMS = {e["name"]: e["values"] for e in MANIFEST["enums"]}
BINARY = ENUMS["hipdnn_ep_binary_op"]
UNARY = ENUMS["hipdnn_ep_unary_op"]
REDUCE = ENUMS["hipdnn_ep_reduce_op"]
STATUS = ENUMS["hipdnn_ep_status"]
DTYPE = ENUMS["hipdnn_ep_dtype"]
KERNELS = {f["name"]: f for f in MANIFEST["functions"] if f["kind"] == "kernel"}
InvalidArgumentError = rt.InvalidArgumentError
UNSUPPORTED = "UNSUPPORTED"  # raised as the base runtime error, never as InvalidArgumentError

F32, F16, I32, I64, BOOL = np.float32, np.float16, np.int32, np.int64, np.bool_
ALL_DTYPES = [np.float32, np.uint8, np.int8, np.int32, np.int64, np.bool_, np.float16, np.float64]


@pytest.fixture(scope="module")
def state():
    """One CPU state per test module (a test module binds it: ``state = kernel_util.state``)."""
    s = rt.State(backend="cpu")
    yield s
    s.close()


def run(state, kernel, inputs, out_shapes, out_dtype=None, ints=(), floats=()):
    """Calls hipdnn_ep_kernel_<kernel>; returns the outputs it filled."""
    inputs = [np.array(x, order="C") for x in inputs]  # (ascontiguousarray would make 0-d arrays 1-d)
    if isinstance(out_shapes, tuple):
        out_shapes = [out_shapes]
    dtype = out_dtype if out_dtype is not None else inputs[0].dtype
    outputs = [np.full(shape, 77, dtype=dtype) for shape in out_shapes]  # garbage the kernel must overwrite
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, outputs, list(ints), [float(f) for f in floats])
    return outputs[0] if len(outputs) == 1 else outputs


def call_raw(state, kernel, inputs, outputs, ints=(), floats=()):
    """Calls hipdnn_ep_kernel_<kernel> on the caller's own arrays, as they are."""
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, outputs, list(ints), list(floats))


def full_range(shape, dtype, seed=0):
    """Integers over the whole range of dtype, its extremes, 0 and 1 first."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    if flat.size >= 4:
        flat[:4] = [info.min, info.max, 0, 1]
    return x


def rng(seed=0):
    return np.random.default_rng(seed)


def assert_close(actual, expected, dtype):
    assert actual.shape == expected.shape
    if np.dtype(dtype) == np.float16:
        np.testing.assert_allclose(actual.astype(F32), expected.astype(F32), rtol=2e-3, atol=2e-3)
    elif np.dtype(dtype) == np.float32:
        np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(actual, expected)
