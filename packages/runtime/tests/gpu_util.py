"""Shared by the GPU kernel tests (test_gpu_*.py): one kernel run on a CPU state (the reference, numpy
arrays) and on a GPU state (device arrays through DLPack; the parameter tensors a kernel reads on the
host stay numpy). Outputs start as a fill value the kernel must overwrite."""

from __future__ import annotations

import hipdnn_ep_runtime as rt
import numpy as np
import pytest

_core = rt._core

ENUMS = {e["name"]: e["values"] for e in rt.abi_manifest()["enums"]}
BINARY = ENUMS["hipdnn_ep_binary_op"]
UNARY = ENUMS["hipdnn_ep_unary_op"]
REDUCE = ENUMS["hipdnn_ep_reduce_op"]

# Inputs each kernel reads on the host (geometry and parameter tensors); the rest are device data.
HOST_INPUTS = {"transpose": {1}, "reduce": {1}, "slice": {1, 2}, "range": {0}, "trilu": {1}, "pad": {2},
               "conv": {3}, "pool": {1}, "conv_transpose": {3}, "resize": {1}, "conv_integer": {4}}


def to_device(dev, x):
    """x as a device array; the test is skipped where the device array library lacks its type."""
    try:
        return dev.to_device(x)
    except (TypeError, RuntimeError) as e:  # an older torch without uint16/uint32/uint64 tensors
        pytest.skip(f"the device array library cannot hold {x.dtype}: {e}")


def run_both(cpu, gpu, dev, kernel, inputs, outputs, ints=(), floats=(), dtypes=(), fill=77):
    """Runs hipdnn_ep_kernel_<kernel> on both states; outputs: (shape, dtype) each. Returns (GPU outputs,
    CPU outputs) as numpy arrays. dtypes: call_kernel's element types numpy cannot name (BFLOAT16, FLOAT8)."""
    inputs = [None if x is None else np.array(x, order="C") for x in inputs]
    name = "hipdnn_ep_kernel_" + kernel
    ints, floats, dtypes = list(ints), [float(f) for f in floats], list(dtypes)
    expected = [np.full(shape, fill, dtype=dtype) for shape, dtype in outputs]
    _core.call_kernel(cpu, name, inputs, expected, ints, floats, dtypes)
    host = HOST_INPUTS.get(kernel, set())
    dev_inputs = [x if x is None or i in host else to_device(dev, x) for i, x in enumerate(inputs)]
    dev_outputs = [to_device(dev, np.full(shape, fill, dtype=dtype)) for shape, dtype in outputs]
    _core.call_kernel(gpu, name, dev_inputs, dev_outputs, ints, floats, dtypes)
    return [dev.to_host(o) for o in dev_outputs], expected
