"""The CPU reduce and cumsum kernels against numpy references (kernels/cpu/reduce.cpp)."""

from __future__ import annotations

import math

import kernel_util
import numpy as np
import pytest
from conftest import rand
from kernel_util import F16, F32, I32, I64, REDUCE, assert_close, rt, run

state = kernel_util.state  # one CPU state per module


# ---------------------------------------------------------------- reduce

def _log_sum_exp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCE_REF = {"SUM": np.sum, "MEAN": np.mean, "MAX": np.max, "MIN": np.min, "PROD": np.prod,
              "L1": lambda x, **k: np.sum(np.abs(x), **k), "L2": lambda x, **k: np.sqrt(np.sum(x * x, **k)),
              "LOG_SUM": lambda x, **k: np.log(np.sum(x, **k)), "LOG_SUM_EXP": _log_sum_exp,
              "SUM_SQUARE": lambda x, **k: np.sum(x * x, **k)}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("op", sorted(REDUCE_REF))
@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("shape,axes", [((3, 4), [1]), ((3, 4), [0]), ((2, 3, 4), [0, 2]), ((2, 3, 4), [2, 0]),
                                        ((2, 3, 4), []), ((5,), [0]), ((2, 1, 3), [1])], ids=str)
def test_reduce(state, dtype, op, keepdims, shape, axes):
    x = rand(shape, dtype)
    if op == "LOG_SUM":
        x = np.abs(x) + dtype(0.5)
    ref_axes = tuple(axes) if axes else None
    expected = REDUCE_REF[op](x.astype(np.float64), axis=ref_axes, keepdims=keepdims)
    out = run(state, "reduce", [x, np.array(axes, I64)], np.shape(expected), ints=[REDUCE[op]])
    tol = 1e-5 if dtype == F32 else 5e-3
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [I32, I64])
@pytest.mark.parametrize("op", ["SUM", "MAX", "MIN", "L1", "SUM_SQUARE"])
def test_reduce_integers(state, dtype, op):
    x = rand((3, 5, 2), dtype, low=-1000, high=1000)
    expected = REDUCE_REF[op](x, axis=(1,), keepdims=False).astype(dtype)
    out = run(state, "reduce", [x, np.array([1], I64)], expected.shape, ints=[REDUCE[op]])
    np.testing.assert_array_equal(out, expected)


def test_reduce_large_float_sum_is_accurate(state):
    x = rand((200_000,), F32, low=0, high=1)
    out = run(state, "reduce", [x, np.array([0], I64)], (), ints=[REDUCE["SUM"]])
    np.testing.assert_allclose(out, x.astype(np.float64).sum(), rtol=1e-6)


def test_reduce_over_empty_dims(state):
    x = np.zeros((2, 0, 3), F32)
    axes = np.array([1], I64)
    np.testing.assert_array_equal(run(state, "reduce", [x, axes], (2, 3), ints=[REDUCE["SUM"]]), np.zeros((2, 3)))
    assert np.all(np.isneginf(run(state, "reduce", [x, axes], (2, 3), ints=[REDUCE["MAX"]])))
    assert np.all(np.isnan(run(state, "reduce", [x, axes], (2, 3), ints=[REDUCE["MEAN"]])))
    xi = np.zeros((0, 2), I64)
    out = run(state, "reduce", [xi, np.array([0], I64)], (2,), ints=[REDUCE["MAX"]])
    np.testing.assert_array_equal(out, [np.iinfo(I64).min] * 2)


def test_reduce_general_ops_over_empty_dims(state):
    x = np.zeros((2, 0), F32)
    axes = np.array([1], I64)
    want = {"MIN": np.inf, "PROD": 1.0, "L1": 0.0, "L2": 0.0, "SUM_SQUARE": 0.0, "LOG_SUM": -np.inf,
            "LOG_SUM_EXP": -np.inf}
    for op, value in want.items():
        np.testing.assert_array_equal(run(state, "reduce", [x, axes], (2,), ints=[REDUCE[op]]), [value] * 2)
    out = run(state, "reduce", [np.zeros((0, 2), I32), np.array([0], I64)], (2,), ints=[REDUCE["MIN"]])
    np.testing.assert_array_equal(out, [np.iinfo(I32).max] * 2)


def test_reduce_log_sum_exp_is_stable_for_large_inputs(state):
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf]], F32)
    out = run(state, "reduce", [x, np.array([1], I64)], (2,), ints=[REDUCE["LOG_SUM_EXP"]])
    np.testing.assert_allclose(out[0], 1000.0 + math.log(2), rtol=1e-6)
    assert np.isneginf(out[1])


def test_reduce_integer_prod_wraps(state):
    x = np.array([[2**40, 2**30, 3]], I64)
    out = run(state, "reduce", [x, np.array([1], I64)], (1,), ints=[REDUCE["PROD"]])
    assert out[0] == np.int64((2**70 * 3) % 2**64 - 2**64 if (2**70 * 3) % 2**64 >= 2**63 else (2**70 * 3) % 2**64)


def test_reduce_float_only_ops_refuse_integers(state):
    with pytest.raises(rt.HipdnnEpError, match="LOG_SUM_EXP"):
        run(state, "reduce", [np.ones((2, 2), I64), np.array([1], I64)], (2,), ints=[REDUCE["LOG_SUM_EXP"]])


def test_reduce_min_propagates_nan(state):
    x = np.array([[1, np.nan, 3], [1, 2, 3]], F32)
    out = run(state, "reduce", [x, np.array([1], I64)], (2,), ints=[REDUCE["MIN"]])
    assert np.isnan(out[0]) and out[1] == 1


def test_reduce_max_propagates_nan(state):
    x = np.array([[1, np.nan, 3], [1, 2, 3]], F32)
    out = run(state, "reduce", [x, np.array([1], I64)], (2,), ints=[REDUCE["MAX"]])
    assert np.isnan(out[0]) and out[1] == 3


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(state, dtype, exclusive, reverse):
    x = rand((3, 5, 4), dtype, low=-9, high=9)
    for axis in range(3):
        flipped = np.flip(x, axis) if reverse else x
        want = np.cumsum(flipped.astype(np.float64), axis=axis)
        if exclusive:
            want = want - flipped
        want = (np.flip(want, axis) if reverse else want).astype(dtype)
        out = run(state, "cumsum", [x], x.shape, ints=[axis, exclusive, reverse])
        assert_close(out, want, dtype)


def test_cumsum_integers_wrap(state):
    x = np.array([np.iinfo(np.int64).max, 1, 1], I64)
    out = run(state, "cumsum", [x], (3,), ints=[0, 0, 0])
    np.testing.assert_array_equal(out, [np.iinfo(np.int64).max, np.iinfo(np.int64).min, np.iinfo(np.int64).min + 1])
