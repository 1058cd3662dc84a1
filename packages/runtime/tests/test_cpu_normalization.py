"""The CPU softmax and layer_norm kernels against numpy references (kernels/cpu/normalization.cpp),
and absent optional inputs through the hook."""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from conftest import rand
from kernel_util import F16, F32, InvalidArgumentError, _core, assert_close, run

state = kernel_util.state  # one CPU state per module


# ---------------------------------------------------------------- softmax / layer_norm

def softmax_ref(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4, 5), 2), ((2, 0, 3), 2),
                                        ((2, 3, 1), 2)], ids=str)
def test_softmax(state, dtype, shape, axis):
    x = rand(shape, dtype, low=-5, high=5)
    out = run(state, "softmax", [x], shape, ints=[axis])
    assert_close(out, softmax_ref(x, axis).astype(dtype), dtype)


def test_softmax_is_stable_for_large_inputs(state):
    x = np.array([[1000, 1001, 1002], [-1000, -1000, -1000]], F32)
    out = run(state, "softmax", [x], x.shape, ints=[1])
    np.testing.assert_allclose(out, softmax_ref(x, 1), rtol=1e-6)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 7, 8, 9, 17, 128, 131])
def test_softmax_last_axis_rows_of_any_length(state, dtype, length):
    # The last axis takes the vectorized row path: lengths around the vector width and its multiples.
    x = rand((3, length), dtype, low=-30, high=30, seed=length)
    out = run(state, "softmax", [x], x.shape, ints=[1])
    assert_close(out, softmax_ref(x, 1).astype(dtype), dtype)


def test_softmax_exp_is_accurate_over_its_range(state):
    # out[:, 1] = e^t / (1 + e^t): exercises exp() from -86 to 0 in the row path.
    t = np.linspace(-86, 0, 2001).astype(F32)
    x = np.stack([np.zeros_like(t), t], axis=1)
    out = run(state, "softmax", [x], x.shape, ints=[1])
    np.testing.assert_allclose(out, softmax_ref(x, 1), rtol=1e-6, atol=0)


@pytest.mark.parametrize("length", [5, 8], ids=["padded", "whole_vectors"])
def test_softmax_rows_treat_special_values_like_the_general_path(state, length):
    # Masked (-inf) entries get 0; a row of -inf, or with NaN or +inf, becomes NaN (as the
    # general path, axis not last, computes it from the same values). Rows of 8 take the
    # unbuffered path where the CPU works on 4 or 8 lanes.
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, 0, 1, -inf, 2], [-inf] * 5, [0, nan, 1, 2, 3], [0, inf, 1, 2, 3], [-1e30, 0, 1, 2, 1e30]], F32)
    x = np.concatenate([x, np.full((5, length - 5), -inf, F32)], axis=1)
    out = run(state, "softmax", [x], x.shape, ints=[1])
    general = run(state, "softmax", [np.ascontiguousarray(x.T)], x.T.shape, ints=[0]).T
    np.testing.assert_array_equal(np.isnan(out), np.isnan(general))
    np.testing.assert_allclose(out, general, rtol=1e-6, atol=0)
    np.testing.assert_allclose(out[0], softmax_ref(x[:1], 1)[0], rtol=1e-6, atol=0)
    assert np.isnan(out[1:4]).all()
    np.testing.assert_array_equal(out[4], [0, 0, 0, 0, 1] + [0] * (length - 5))


def layer_norm_ref(x, scale, bias, axis, eps):
    x = x.astype(np.float64)
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * scale.astype(np.float64)
    return y + bias.astype(np.float64) if bias is not None else y


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape,axis,scale_shape", [((4, 8), 1, (8,)), ((2, 3, 8), 2, (8,)), ((2, 3, 4), 1, (3, 4)),
                                                    ((2, 3, 4), 1, (1, 4)), ((6,), 0, (6,)), ((2, 3, 4), 0, (4,))],
                         ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm(state, dtype, shape, axis, scale_shape, with_bias):
    x = rand(shape, dtype, low=-4, high=4) + np.asarray(10, dtype)  # a mean far from 0
    scale = rand(scale_shape, dtype, seed=1)
    bias = rand(scale_shape, dtype, seed=2) if with_bias else None
    eps = 1e-5
    inputs = [x, scale] + ([bias] if with_bias else [])
    out = run(state, "layer_norm", inputs, shape, ints=[axis], floats=[eps])
    tol = 1e-4 if dtype == F32 else 1e-2
    np.testing.assert_allclose(out.astype(np.float64), layer_norm_ref(x, scale, bias, axis, eps), rtol=tol, atol=tol)


def test_absent_optional_inputs(state):
    """None in the hook's input list is an absent optional tensor (data NULL, rank -1)."""
    a = rand((2, 3))
    b = rand((3, 4), seed=1)
    out = run_optional(state, "gemm", [a, b, None], (2, 4), ints=[0, 0], floats=[2.0, 1.0])
    np.testing.assert_allclose(out, 2 * a @ b, rtol=1e-5, atol=1e-5)
    x = rand((2, 5))
    scale = rand((5,), seed=2)
    out = run_optional(state, "layer_norm", [x, scale, None], (2, 5), ints=[1], floats=[1e-5])
    np.testing.assert_allclose(out, layer_norm_ref(x, scale, None, 1, 1e-5), rtol=1e-4, atol=1e-4)
    with pytest.raises(InvalidArgumentError, match="^hipdnn_ep_kernel_gemm: input 1 is absent but required"):
        run_optional(state, "gemm", [a, None], (2, 4), ints=[0, 0], floats=[1.0, 1.0])


def run_optional(state, kernel, inputs, out_shape, ints, floats):
    out = np.empty(out_shape, F32)
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, [out], ints, floats)
    return out
