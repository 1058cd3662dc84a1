"""The CPU elementwise kernels (binary, unary, bitwise ops, range, fill, cast, where) against numpy
references (kernels/cpu/elementwise.cpp)."""

from __future__ import annotations

import math

import kernel_util
import numpy as np
import pytest
from conftest import rand
from kernel_util import (
    ALL_DTYPES,
    BINARY,
    BOOL,
    F16,
    F32,
    I32,
    I64,
    UNARY,
    InvalidArgumentError,
    _core,
    assert_close,
    rng,
    run,
)

state = kernel_util.state  # one CPU state per module


# ---------------------------------------------------------------- binary

BROADCAST_SHAPES = [((2, 3), (2, 3)), ((4, 1, 3), (2, 1)), ((), (5,)), ((3, 1), (1, 4)), ((0, 3), (1, 3)),
                    ((2, 0, 1), (4,)),
                    # rows of the constant-stride loops: both contiguous, one side a scalar per row
                    ((2, 37), ()), ((37,), (2, 37)), ((3, 37), (3, 1)), ((3, 1), (3, 37))]


def trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_binary_arithmetic(state, dtype, op, shapes):
    a = rand(shapes[0], dtype, seed=1, low=-50, high=50)
    b = rand(shapes[1], dtype, seed=2, low=1, high=9)  # no zero divisors
    if np.issubdtype(dtype, np.integer):
        b = b * np.where(rand(shapes[1], I64, seed=3, low=0, high=1) == 0, -1, 1).astype(dtype)
    ref = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply,
           "DIV": trunc_div if np.issubdtype(dtype, np.integer) else np.divide}[op]
    expected = ref(a.astype(F32) if dtype == F16 else a, b.astype(F32) if dtype == F16 else b).astype(dtype)
    out = run(state, "binary", [a, b], np.broadcast_shapes(a.shape, b.shape), ints=[BINARY[op]])
    assert_close(out, expected, dtype)


def test_binary_integer_overflow_wraps(state):
    a = np.array([np.iinfo(I64).max, np.iinfo(I64).min], I64)
    b = np.array([1, -1], I64)
    out = run(state, "binary", [a, b], (2,), ints=[BINARY["ADD"]])
    np.testing.assert_array_equal(out, [np.iinfo(I64).min, np.iinfo(I64).max])
    out = run(state, "binary", [a, b], (2,), ints=[BINARY["DIV"]])  # INT64_MIN / -1 must not trap
    np.testing.assert_array_equal(out, [np.iinfo(I64).max, np.iinfo(I64).min])


@pytest.mark.parametrize("dtype", [F32, F16])
def test_binary_pow(state, dtype):
    a = rand((3, 4), dtype, low=0.1, high=3)
    b = rand((4,), dtype, seed=5, low=-2, high=2)
    out = run(state, "binary", [a, b], (3, 4), ints=[BINARY["POW"]])
    assert_close(out, np.power(a.astype(F32), b.astype(F32)).astype(dtype), dtype)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", ["EQUAL", "LESS", "GREATER"])
def test_binary_compare_writes_bool(state, dtype, op):
    a = rand((3, 1, 4), dtype, low=-2, high=2)
    b = rand((2, 1), dtype, seed=9, low=-2, high=2)
    b.flat[0] = a.flat[0]  # at least one equal pair
    ref = {"EQUAL": np.equal, "LESS": np.less, "GREATER": np.greater}[op]
    out = run(state, "binary", [a, b], (3, 2, 4), out_dtype=BOOL, ints=[BINARY[op]])
    np.testing.assert_array_equal(out, ref(a, b))


def test_binary_equal_on_bool(state):
    a = np.array([True, False, True])
    b = np.array([[True], [False]])
    out = run(state, "binary", [a, b], (2, 3), ints=[BINARY["EQUAL"]])
    np.testing.assert_array_equal(out, a == b)


# ---------------------------------------------------------------- unary

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


UNARY_REF = {
    "RELU": lambda x: np.maximum(x, 0),
    "SIGMOID": lambda x: 1 / (1 + np.exp(-x)),
    "TANH": np.tanh,
    "EXP": np.exp,
    "LOG": np.log,
    "SQRT": np.sqrt,
    "NEG": np.negative,
    "ERF": _erf,
    "GELU_ERF": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "GELU_TANH": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("op", sorted(UNARY_REF))
@pytest.mark.parametrize("shape", [(7,), (2, 3, 5), (), (0, 4)], ids=str)
def test_unary(state, dtype, op, shape):
    positive = op in ("LOG", "SQRT")
    x = rand(shape, dtype, low=0.05 if positive else -6, high=6)
    expected = UNARY_REF[op](x.astype(np.float64)).astype(dtype)
    out = run(state, "unary", [x], shape, ints=[UNARY[op]])
    assert_close(out, expected, dtype)


# The general unary ops, each on an input range inside its domain (low, high).
GENERAL_UNARY = {
    "SIN": (np.sin, -6, 6), "COS": (np.cos, -6, 6), "TAN": (np.tan, -1.4, 1.4), "ASIN": (np.arcsin, -1, 1),
    "ACOS": (np.arccos, -1, 1), "ATAN": (np.arctan, -6, 6), "SINH": (np.sinh, -5, 5), "COSH": (np.cosh, -5, 5),
    "ASINH": (np.arcsinh, -6, 6), "ACOSH": (np.arccosh, 1, 6), "ATANH": (np.arctanh, -0.99, 0.99),
    "ROUND": (np.round, -6, 6), "SOFTSIGN": (lambda x: x / (1 + np.abs(x)), -6, 6),
}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("op", sorted(GENERAL_UNARY))
def test_unary_general(state, dtype, op):
    ref, low, high = GENERAL_UNARY[op]
    x = rand((3, 7), dtype, low=low, high=high)
    out = run(state, "unary", [x], x.shape, ints=[UNARY[op]])
    assert_close(out, ref(x.astype(np.float64)).astype(dtype), dtype)


def test_unary_round_halves_to_even(state):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, 2.5001], F32)
    out = run(state, "unary", [x], x.shape, ints=[UNARY["ROUND"]])
    np.testing.assert_array_equal(out, [-2, -2, -0, 0, 2, 2, 2, 3])


def test_unary_sigmoid_is_stable_at_extremes(state):
    x = np.array([-1000, -90, 0, 90, 1000], F32)
    out = run(state, "unary", [x], (5,), ints=[UNARY["SIGMOID"]])
    np.testing.assert_allclose(out, [0, 0, 0.5, 1, 1], atol=1e-30)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("op", ["ERF", "GELU_ERF"])
def test_unary_erf_is_accurate_everywhere(state, op):
    # Both sides of the 0.75 switch between erf's two approximations, the +-4 clamp, tiny and
    # subnormal inputs (erf(x) ~ 2x / sqrt(pi)), and a length that is no multiple of the vector
    # width and spans several chunks.
    x = np.concatenate([np.linspace(-7, 7, 4001), np.linspace(0.74, 0.76, 101), [1e-30, -1e-30, 1e-41, 3.9, 4, 4.1]])
    x = x.astype(F32)
    out = run(state, "unary", [x], x.shape, ints=[UNARY[op]])
    expected = UNARY_REF[op](x.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=5e-7, atol=1e-45 if op == "ERF" else 2e-7)


@pytest.mark.parametrize("op", ["ERF", "GELU_ERF"])
def test_unary_erf_special_values(state, op):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], F32)
    out = run(state, "unary", [x], x.shape, ints=[UNARY[op]])
    if op == "ERF":
        np.testing.assert_array_equal(out, [np.nan, 1, -1, 0, -0.0])
        assert np.signbit(out[4])
    else:  # 0.5 x (1 + erf(x / sqrt 2)); at -inf that is -inf * 0
        np.testing.assert_array_equal(out[[0, 1, 3, 4]], [np.nan, np.inf, 0, 0])


@pytest.mark.parametrize("dtype", [I32, I64])
@pytest.mark.parametrize("op", ["RELU", "NEG"])
def test_unary_integer(state, dtype, op):
    x = rand((4, 5), dtype, low=-100, high=100)
    out = run(state, "unary", [x], (4, 5), ints=[UNARY[op]])
    np.testing.assert_array_equal(out, UNARY_REF[op](x))


# ---------------------------------------------------------------- ABI 1.3: mask and shape ops

def python_mod(a, b):  # the divisor's sign (ONNX Mod, fmod=0)
    return np.mod(a, b)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", ["GREATER_OR_EQUAL", "LESS_OR_EQUAL"])
def test_binary_compare_or_equal(state, dtype, op):
    a = rand((3, 1, 4), dtype, seed=1, low=-3, high=3).round()
    b = rand((2, 4), dtype, seed=2, low=-3, high=3).round()  # integral values: many ties
    ref = {"GREATER_OR_EQUAL": np.greater_equal, "LESS_OR_EQUAL": np.less_equal}[op]
    out = run(state, "binary", [a, b], (3, 2, 4), out_dtype=BOOL, ints=[BINARY[op]])
    np.testing.assert_array_equal(out, ref(a, b))


@pytest.mark.parametrize("op", ["AND", "OR", "XOR", "EQUAL"])
def test_binary_logic_on_bool(state, op):
    a = rand((4, 1, 5), BOOL, seed=1)
    b = rand((3, 5), BOOL, seed=2)
    ref = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor, "EQUAL": np.equal}[op]
    out = run(state, "binary", [a, b], (4, 3, 5), ints=[BINARY[op]])
    np.testing.assert_array_equal(out, ref(a, b))


def test_binary_logic_refuses_numbers(state):
    a = np.ones((2,), F32)
    with pytest.raises(RuntimeError, match="binary op AND does not support dtype FLOAT32"):
        run(state, "binary", [a, a], (2,), out_dtype=BOOL, ints=[BINARY["AND"]])


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", ["MIN", "MAX"])
def test_binary_min_max(state, dtype, op):
    a = rand((3, 4), dtype, seed=1, low=-9, high=9)
    b = rand((4,), dtype, seed=2, low=-9, high=9)
    out = run(state, "binary", [a, b], (3, 4), ints=[BINARY[op]])
    np.testing.assert_array_equal(out, (np.minimum if op == "MIN" else np.maximum)(a, b))


@pytest.mark.parametrize("op", ["MIN", "MAX"])
def test_binary_min_max_propagate_nan(state, op):
    a = np.array([np.nan, 1, np.nan], F32)
    b = np.array([1, np.nan, np.nan], F32)
    out = run(state, "binary", [a, b], (3,), ints=[BINARY[op]])
    assert np.isnan(out).all()


@pytest.mark.parametrize("dtype", [I32, I64])
@pytest.mark.parametrize("op", ["MOD", "FMOD"])
def test_binary_integer_mod_signs(state, dtype, op):
    a = np.array([7, -7, 7, -7, 0, np.iinfo(dtype).min], dtype)
    b = np.array([3, 3, -3, -3, 5, -1], dtype)
    out = run(state, "binary", [a, b], (6,), ints=[BINARY[op]])
    want = [1, 2, -2, -1, 0, 0] if op == "MOD" else [1, -1, 1, -1, 0, 0]  # MIN % -1 is 0, never a trap
    np.testing.assert_array_equal(out, np.array(want, dtype))


def test_binary_integer_mod_by_zero_is_an_error(state):
    a = np.array([1, 2], I64)
    with pytest.raises(InvalidArgumentError, match="integer division by zero"):
        run(state, "binary", [a, np.array([1, 0], I64)], (2,), ints=[BINARY["MOD"]])


@pytest.mark.parametrize("dtype", [F32, F16])
def test_binary_fmod_floats(state, dtype):
    a = rand((3, 4), dtype, seed=1, low=-9, high=9)
    b = rand((4,), dtype, seed=2, low=0.5, high=3)
    out = run(state, "binary", [a, b], (3, 4), ints=[BINARY["FMOD"]])
    expected = np.fmod(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [F32, F16, np.float64])
def test_binary_silu_mul(state, dtype):
    """A * sigmoid(A) * B (a gated MLP's SiLU(gate) * up), broadcast; large |A| neither overflows nor loses
    the product (sigmoid exponentiates only non-positive numbers)."""
    a = rand((3, 4), dtype, seed=1, low=-9, high=9)
    a[0, :2] = [-100, 100]
    b = rand((4,), dtype, seed=2, low=-3, high=3)
    out = run(state, "binary", [a, b], (3, 4), ints=[BINARY["SILU_MUL"]])
    x = a.astype(np.float64)
    expected = (x / (1 + np.exp(-x)) * b.astype(np.float64)).astype(dtype)
    assert np.isfinite(out).all()
    if dtype == np.float64:
        np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)
    else:
        assert_close(out, expected, dtype)


def test_binary_silu_mul_refuses_integers(state):
    with pytest.raises(RuntimeError, match="binary op SILU_MUL does not support dtype"):
        run(state, "binary", [np.ones(3, I32), np.ones(3, I32)], (3,), ints=[BINARY["SILU_MUL"]])


MASK_UNARY_REF = {"ABS": np.abs, "FLOOR": np.floor, "CEIL": np.ceil, "SIGN": np.sign, "RECIPROCAL": np.reciprocal}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("op", sorted(MASK_UNARY_REF))
def test_unary_mask_ops(state, dtype, op):
    x = rand((5, 7), dtype, low=-6, high=6)
    x[0, :3] = [0.25 if op == "RECIPROCAL" else 0, -0.5, 2.5]
    expected = MASK_UNARY_REF[op](x.astype(np.float64)).astype(dtype)
    out = run(state, "unary", [x], x.shape, ints=[UNARY[op]])
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [I32, I64])
@pytest.mark.parametrize("op", ["ABS", "SIGN"])
def test_unary_mask_ops_integer(state, dtype, op):
    x = rand((4, 5), dtype, low=-100, high=100)
    x[0, 0] = 0
    out = run(state, "unary", [x], (4, 5), ints=[UNARY[op]])
    np.testing.assert_array_equal(out, MASK_UNARY_REF[op](x))


def test_unary_not_and_is_nan_write_bool(state):
    b = rand((3, 4), BOOL, seed=1)
    np.testing.assert_array_equal(run(state, "unary", [b], (3, 4), ints=[UNARY["NOT"]]), ~b)
    for dtype in (F32, F16):
        x = np.array([0, np.nan, np.inf, -np.nan, 1], dtype)
        out = run(state, "unary", [x], (5,), out_dtype=BOOL, ints=[UNARY["IS_NAN"]])
        np.testing.assert_array_equal(out, np.isnan(x))


def test_unary_is_nan_refuses_a_float_output(state):
    x = np.zeros((2,), F32)
    with pytest.raises(InvalidArgumentError, match="output 0 has dtype FLOAT32, expected BOOL"):
        run(state, "unary", [x], (2,), ints=[UNARY["IS_NAN"]])


@pytest.mark.parametrize("dtype", [I32, I64])
def test_range(state, dtype):
    for start, delta, n in ((0, 1, 7), (10, -3, 4), (-5, 2, 0), (3, 0, 3)):
        out = run(state, "range", [np.array([start, delta], I64)], (n,), out_dtype=dtype)
        np.testing.assert_array_equal(out, (start + np.arange(n) * delta).astype(dtype))


def test_range_refuses_floats_and_short_parameters(state):
    with pytest.raises(RuntimeError, match="range does not support output dtype FLOAT32"):
        run(state, "range", [np.array([0, 1], I64)], (3,), out_dtype=F32)
    with pytest.raises(InvalidArgumentError, match="has 1 entries, expected 2"):
        run(state, "range", [np.array([0], I64)], (3,), out_dtype=I64)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fill_writes_the_value_bits(state, dtype):
    value = np.array([1.5 if np.issubdtype(dtype, np.floating) else True if dtype == np.bool_ else 3], dtype)
    bits = int.from_bytes(value.tobytes().ljust(8, b"\0"), "little", signed=True)
    out = np.full((2, 3), 77, dtype)
    _core.call_kernel(state, "hipdnn_ep_kernel_fill", [], [out], [bits], [])
    np.testing.assert_array_equal(out, np.full((2, 3), value[0]))


# ---------------------------------------------------------------- cast

@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_cast_every_pair(state, src, dst):
    # Values every dtype holds exactly, so numpy's astype is the reference.
    x = np.array([[0, 1, 2, 100], [7, 0, 127, 3]]).astype(src)
    out = run(state, "cast", [x], x.shape, out_dtype=dst)
    np.testing.assert_array_equal(out, x.astype(dst))


def test_cast_float_to_int_truncates_and_saturates(state):
    x = np.array([-2.7, -0.5, 0.5, 2.7, 1e20, -1e20, np.nan], F32)
    out = run(state, "cast", [x], x.shape, out_dtype=I32)
    np.testing.assert_array_equal(out, [-2, 0, 0, 2, np.iinfo(I32).max, np.iinfo(I32).min, 0])
    out = run(state, "cast", [x], x.shape, out_dtype=np.uint8)
    np.testing.assert_array_equal(out, [0, 0, 0, 2, 255, 0, 0])


def test_cast_to_bool_is_nonzero_test(state):
    x = np.array([0.0, -0.0, 0.25, -3, np.nan], F32)
    out = run(state, "cast", [x], x.shape, out_dtype=BOOL)
    np.testing.assert_array_equal(out, [False, False, True, True, True])


def test_cast_reads_any_nonzero_byte_as_true(state):
    raw = np.array([0, 1, 2, 255], np.uint8).view(BOOL)
    out = run(state, "cast", [raw], (4,), out_dtype=I64)
    np.testing.assert_array_equal(out, [0, 1, 1, 1])


def _same_bits_or_both_nan(actual, expected):
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan)
    np.testing.assert_array_equal(actual[~nan].view(np.uint16 if actual.dtype == F16 else np.uint32),
                                  expected[~nan].view(np.uint16 if expected.dtype == F16 else np.uint32))


def test_cast_float16_to_float32_is_exact_for_every_bit_pattern(state):
    x = np.arange(1 << 16, dtype=np.uint16).view(F16)
    out = run(state, "cast", [x], x.shape, out_dtype=F32)
    _same_bits_or_both_nan(out, x.astype(F32))


def test_cast_float32_to_float16_rounds_to_nearest_even(state):
    r = rng(11)
    bits = r.integers(0, 1 << 32, size=200_000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e-8, 2.0 ** -25, 2.0 ** -24,
                        3 * 2.0 ** -26, 5.9604645e-08, 6.1035156e-05, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
                        np.inf, -np.inf, np.nan], F32)
    x = np.concatenate([bits.view(F32), special, r.uniform(-70000, 70000, 1000).astype(F32),
                        r.uniform(-1e-4, 1e-4, 1000).astype(F32)])
    out = run(state, "cast", [x], x.shape, out_dtype=F16)
    with np.errstate(over="ignore"):
        _same_bits_or_both_nan(out, x.astype(F16))


# ---------------------------------------------------------------- where

@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL, np.int8])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((3, 1), (1, 4), (4,)), ((), (2, 2), ()),
                                    ((0, 2), (2,), (1, 2))], ids=str)
def test_where(state, dtype, shapes):
    cond = rand(shapes[0], BOOL, seed=1)
    x = rand(shapes[1], dtype, seed=2)
    y = rand(shapes[2], dtype, seed=3)
    expected = np.where(cond, x, y)
    out = run(state, "where", [cond, x, y], expected.shape, out_dtype=dtype)
    np.testing.assert_array_equal(out, expected)


# ---------------------------------------------------------------- bitwise ops

I8, U8 = np.int8, np.uint8


def _ints(shape, dtype, seed=0):
    info = np.iinfo(dtype)
    return rng(seed).integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", [U8, I8, I32, I64])
@pytest.mark.parametrize("op,ref", [("BITWISE_AND", np.bitwise_and), ("BITWISE_OR", np.bitwise_or),
                                    ("BITWISE_XOR", np.bitwise_xor)])
def test_binary_bitwise(state, dtype, op, ref):
    a, b = _ints((2, 3, 5), dtype), _ints((3, 1), dtype, 1)
    np.testing.assert_array_equal(run(state, "binary", [a, b], (2, 3, 5), ints=[BINARY[op]]), ref(a, b))


def _shift_ref(x, s, left):
    width = x.dtype.itemsize * 8
    s = s.astype(np.int64)
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        v, n = int(x[i]), int(s[i if s.shape == x.shape else ()])
        if n < 0 or n >= width:
            out[i] = -1 if (not left and v < 0) else 0
        else:
            out[i] = np.array(((v << n) if left else (v >> n)) & ((1 << width) - 1)).astype(np.uint64).astype(x.dtype)
    return out


@pytest.mark.parametrize("dtype", [U8, I8, I32, I64])
@pytest.mark.parametrize("op", ["SHIFT_LEFT", "SHIFT_RIGHT"])
def test_binary_shift(state, dtype, op):
    """Amounts below 0 or at least the width shift every bit out (a negative signed value shifted
    right leaves -1); a left shift wraps; a signed right shift is arithmetic."""
    width = np.dtype(dtype).itemsize * 8
    x = _ints((4, 6), dtype)
    amounts = [0, 1, width - 1, width, width + 3, 2]
    if np.issubdtype(dtype, np.signedinteger):
        amounts[-1] = -1
    s = np.array(amounts, dtype)
    out = run(state, "binary", [x, s], (4, 6), ints=[BINARY[op]])
    np.testing.assert_array_equal(out, _shift_ref(x, np.broadcast_to(s, x.shape), op == "SHIFT_LEFT"))


@pytest.mark.parametrize("dtype", [U8, I8, I32, I64])
def test_unary_bitwise_not(state, dtype):
    x = _ints((3, 7), dtype)
    np.testing.assert_array_equal(run(state, "unary", [x], x.shape, ints=[UNARY["BITWISE_NOT"]]), np.invert(x))


def test_bitwise_ops_refuse_floats_and_bool(state):
    for dtype in (F32, F16, BOOL):
        with pytest.raises(RuntimeError, match="binary op BITWISE_AND does not support dtype"):
            run(state, "binary", [np.ones(3, dtype), np.ones(3, dtype)], (3,), ints=[BINARY["BITWISE_AND"]])
        with pytest.raises(RuntimeError, match="unary op BITWISE_NOT does not support dtype"):
            run(state, "unary", [np.ones(3, dtype)], (3,), ints=[UNARY["BITWISE_NOT"]])
    with pytest.raises(RuntimeError, match="binary op SHIFT_LEFT does not support dtype"):
        run(state, "binary", [np.ones(3, F32), np.ones(3, F32)], (3,), ints=[BINARY["SHIFT_LEFT"]])
    with pytest.raises(InvalidArgumentError, match="unknown binary op 99"):
        run(state, "binary", [np.ones(3, I32), np.ones(3, I32)], (3,), ints=[99])
