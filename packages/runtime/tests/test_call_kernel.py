"""_core.call_kernel: the testing entry point to the runtime's kernels."""

from __future__ import annotations

import hipdnn_ep_runtime as rt
import numpy as np
import pytest
from hipdnn_ep_runtime import _core

KERNELS = [f["name"] for f in rt.abi_manifest()["functions"] if f["kind"] == "kernel"]
BINARY_OPS = next(e for e in rt.abi_manifest()["enums"] if e["name"] == "hipdnn_ep_binary_op")["values"]


def test_unknown_kernel_name(state: rt.State) -> None:
    with pytest.raises(rt.NotFoundError, match="'hipdnn_ep_malloc' is not a kernel of the ABI manifest"):
        _core.call_kernel(state, "hipdnn_ep_malloc", [], [], [], [])


def test_binary_add_through_call_kernel(state: rt.State) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([10, 20, 30], dtype=np.float32)
    c = np.zeros((2, 3), np.float32)
    _core.call_kernel(state, "hipdnn_ep_kernel_binary", [a, b], [c], [BINARY_OPS["ADD"]], [])
    np.testing.assert_array_equal(c, a + b)


def test_call_kernel_needs_writable_outputs(state: rt.State) -> None:
    out = np.zeros(3, np.float32)
    out.setflags(write=False)
    with pytest.raises(rt.InvalidArgumentError, match="output 0 must be a C-contiguous writable"):
        _core.call_kernel(state, KERNELS[0], [np.zeros(3, np.float32)], [out], [0], [])
    with pytest.raises(rt.InvalidArgumentError, match="input 0 must be a C-contiguous"):
        _core.call_kernel(state, KERNELS[0], [np.zeros((3, 4), np.float32).T], [np.zeros(3)], [0], [])
    with pytest.raises(rt.InvalidArgumentError, match="outputs must be arrays"):
        _core.call_kernel(state, KERNELS[0], [], [None], [0], [])


def test_call_kernels_runs_a_chain_in_order(state: rt.State) -> None:
    a = np.arange(6, dtype=np.float32)
    b = np.full(6, 2, np.float32)
    mid, out = np.zeros(6, np.float32), np.zeros(6, np.float32)
    _core.call_kernels(state, [("hipdnn_ep_kernel_binary", [a, b], [mid], [BINARY_OPS["ADD"]], []),
                               ("hipdnn_ep_kernel_binary", [mid, b], [out], [BINARY_OPS["MUL"]], [])])
    np.testing.assert_array_equal(out, (a + b) * b)


def test_call_kernels_refuses_a_malformed_call(state: rt.State) -> None:
    with pytest.raises(rt.InvalidArgumentError, match=r"each call is \(name, inputs, outputs, int_attrs"):
        _core.call_kernels(state, [("hipdnn_ep_kernel_binary", [], [])])
