"""FLOAT64 on the GPU kernels (cuda/hip backends) against the CPU backend (ABI 1.3): binary arithmetic
and comparisons, softmax (rows and columns) and every reduction, all computed in double
(test_cpu_float64.py checks the CPU results against numpy).

Run with ``pytest --gpu=auto`` (skipped when the runtime has no GPU backend or no GPU answers).
"""

from __future__ import annotations

import pytest
from gpu_util import BINARY, REDUCE, run_both

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = pytest.mark.gpu



def compare(cpu, gpu, dev, kernel, inputs, out_shape, out_dtype=np.float64, ints=(), rtol=0.0):
    """Runs the kernel on both states; the GPU output must equal the CPU one (within rtol)."""
    (got,), (expected,) = run_both(cpu, gpu, dev, kernel, inputs, [(out_shape, out_dtype)], ints)
    if rtol:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-300)
    else:
        np.testing.assert_array_equal(got, expected)


def _x(shape, seed, scale=1e3):
    return np.random.default_rng(seed).standard_normal(shape) * scale


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MIN", "MAX", "FMOD", "EQUAL", "LESS", "GREATER",
                                "GREATER_OR_EQUAL", "LESS_OR_EQUAL"])
def test_binary(cpu, gpu, dev, op):
    a, b = _x((3, 1, 40), 0), _x((5, 40), 1)
    a.reshape(-1)[:3] = [1e300, -0.0, np.nan]
    b.reshape(-1)[:1] = [a.reshape(-1)[0]]
    out_dtype = np.bool_ if op in ("EQUAL", "LESS", "GREATER", "GREATER_OR_EQUAL", "LESS_OR_EQUAL") else np.float64
    compare(cpu, gpu, dev, "binary", [a, b], (3, 5, 40), out_dtype, ints=[BINARY[op]])  # one rounding: exact


@pytest.mark.parametrize("shape,axis", [((4, 1000), 1), ((3, 6, 5), 1), ((7, 3), 0)])
def test_softmax(cpu, gpu, dev, shape, axis):
    x = _x(shape, 2, scale=10.0)
    compare(cpu, gpu, dev, "softmax", [x], shape, ints=[axis], rtol=1e-14)  # sums in another order


@pytest.mark.parametrize("op", ["SUM", "MEAN", "MAX", "MIN", "PROD", "L1", "L2", "SUM_SQUARE", "LOG_SUM",
                                "LOG_SUM_EXP"])
def test_reduce(cpu, gpu, dev, op):
    x = np.abs(_x((3, 300, 5), 3)) / 1000 + 0.5
    compare(cpu, gpu, dev, "reduce", [x, np.array([1], np.int64)], (3, 1, 5), ints=[REDUCE[op]],
            rtol=0.0 if op in ("MAX", "MIN") else 1e-13)
