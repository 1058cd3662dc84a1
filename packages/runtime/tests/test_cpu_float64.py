"""FLOAT64 on the CPU kernels (ABI 1.3): binary arithmetic and comparisons, softmax and every reduction,
computed in double (onnxruntime's CPU EP has double kernels for these ops). numpy in float64 is the
reference; the results agree to a few ulps (exp and log of the C library against numpy's)."""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from kernel_util import BINARY, REDUCE
from kernel_util import run as run_kernel

state = kernel_util.state  # one CPU state per module

F64 = np.float64


def run(state, kernel, inputs, out_shape, out_dtype=F64, ints=()):
    return run_kernel(state, kernel, inputs, tuple(out_shape), out_dtype, ints)


def values(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape) * 1e3


ARITH = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide, "FMOD": np.fmod,
         "MIN": np.minimum, "MAX": np.maximum, "POW": np.power}
COMPARE = {"EQUAL": np.equal, "LESS": np.less, "GREATER": np.greater, "GREATER_OR_EQUAL": np.greater_equal,
           "LESS_OR_EQUAL": np.less_equal}


@pytest.mark.parametrize("op", sorted(ARITH))
def test_binary_arithmetic(state, op):
    a, b = values((3, 1, 5), 0), values((4, 5), 1)
    if op == "POW":
        a, b = np.abs(a) / 100, b / 1000
    a.reshape(-1)[:3] = [1e300, -0.0, np.nan]  # beyond float32's range, a signed zero, NaN
    got = run(state, "binary", [a, b], (3, 4, 5), ints=[BINARY[op]])
    with np.errstate(all="ignore"):
        expected = ARITH[op](a, b)
    if op in ("POW",):
        np.testing.assert_allclose(got, expected, rtol=1e-15)
    else:
        np.testing.assert_array_equal(got, expected)  # exact: one rounding of double operands


def test_binary_fmod_takes_the_dividends_sign(state):
    a = np.array([-4.3, 7.2, 5.0, -2.0, 1e17 + 1.5])
    b = np.array([2.1, -3.4, 2.5, 3.0, 3.0])
    np.testing.assert_array_equal(run(state, "binary", [a, b], (5,), ints=[BINARY["FMOD"]]), np.fmod(a, b))


@pytest.mark.parametrize("op", sorted(COMPARE))
def test_binary_comparisons(state, op):
    a = np.array([1.0, 1.0 + 2**-52, np.nan, -np.inf, 0.0])
    b = np.array([1.0 + 2**-52, 1.0, np.nan, -np.inf, -0.0])
    got = run(state, "binary", [a, b], (5,), out_dtype=np.bool_, ints=[BINARY[op]])
    np.testing.assert_array_equal(got, COMPARE[op](a, b))


def test_binary_mod_refuses_float64(state):
    # MOD (the divisor's sign) is integers only; the compiler lowers floating-point Mod with fmod=0 otherwise
    with pytest.raises(Exception, match="binary op MOD does not support dtype FLOAT64"):
        run(state, "binary", [np.ones(2), np.ones(2)], (2,), ints=[BINARY["MOD"]])


@pytest.mark.parametrize("shape,axis", [((4, 37), 1), ((3, 6, 5), 1), ((2, 3), 0)])
def test_softmax(state, shape, axis):
    x = values(shape, 2) / 100
    x.reshape(-1)[0] = 700.0  # exp(700) overflows float32 but not double: the max is subtracted anyway
    got = run(state, "softmax", [x], shape, ints=[axis])
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=axis, keepdims=True), rtol=1e-14, atol=1e-300)


def test_softmax_keeps_double_precision(state):
    # two logits 1e-12 apart: float32 would give exactly 0.5 for both
    x = np.array([[0.0, 1e-12]])
    got = run(state, "softmax", [x], (1, 2), ints=[1])
    assert got[0, 1] > got[0, 0]
    np.testing.assert_allclose(got, [[0.5 - 2.5e-13, 0.5 + 2.5e-13]], rtol=1e-15)


REFS = {"SUM": np.sum, "MEAN": np.mean, "MAX": np.max, "MIN": np.min, "PROD": np.prod,
        "L1": lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims),
        "L2": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
        "SUM_SQUARE": lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
        "LOG_SUM": lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims)),
        "LOG_SUM_EXP": lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))}


@pytest.mark.parametrize("op", sorted(REFS))
def test_reduce(state, op):
    x = np.abs(values((3, 4, 5), 3)) / 1000 + 0.5
    got = run(state, "reduce", [x, np.array([0, 2], np.int64)], (1, 4, 1), ints=[REDUCE[op]])
    np.testing.assert_allclose(got, REFS[op](x, axis=(0, 2), keepdims=True), rtol=1e-14)


def test_reduce_keeps_double_range(state):
    x = np.array([[1e300, 1e300], [700.0, 710.0]])
    got = run(state, "reduce", [x, np.array([1], np.int64)], (2, 1), ints=[REDUCE["MAX"]])
    np.testing.assert_array_equal(got, [[1e300], [710.0]])
    got = run(state, "reduce", [x[1:], np.array([1], np.int64)], (1, 1), ints=[REDUCE["LOG_SUM_EXP"]])
    np.testing.assert_allclose(got, [[710.0 + np.log1p(np.exp(-10.0))]], rtol=1e-15)
