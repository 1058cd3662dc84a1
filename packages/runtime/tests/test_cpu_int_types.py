"""The integer element types of ABI 1.3 on the CPU kernels: INT16, UINT16, UINT32 and UINT64 wherever
INT32/INT64 are accepted, INT8/UINT8 arithmetic and comparisons, integer Pow. Every result is exact
(numpy's wrapping integer arithmetic is the reference); the dtype codes come from the manifest.
"""

from __future__ import annotations

import kernel_util
import numpy as np
import pytest
from kernel_util import BINARY, DTYPE, KERNELS, REDUCE, UNARY, _core, full_range, rt, run

state = kernel_util.state  # one CPU state per module

InvalidArgumentError = rt.InvalidArgumentError

I8, U8, I16, U16, I32, U32, I64, U64 = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                        np.uint64)
NEW = [I16, U16, U32, U64]
SMALL = [I8, U8]
INTS = [I8, U8, I16, U16, I32, U32, I64, U64]
SIGNED = [I8, I16, I32, I64]
UNSIGNED = [U8, U16, U32, U64]
BOOL, F32, F16, F64 = np.bool_, np.float32, np.float16, np.float64


def test_the_new_dtypes_have_their_onnx_codes():
    assert {k: DTYPE[k] for k in ("UINT16", "INT16", "UINT32", "UINT64")} == {
        "UINT16": 4, "INT16": 5, "UINT32": 12, "UINT64": 13}


def test_manifest_tables_list_the_integer_types():
    kernels = KERNELS
    names = {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64"}

    def names_of(table):
        return {d if isinstance(d, str) else d[0] for d in table}

    for k in ("binary", "reduce", "arg_reduce", "top_k", "cumsum", "cast", "transpose", "gather"):
        assert names <= names_of(kernels["hipdnn_ep_kernel_" + k]["dtypes"]["default"]), k


# ---------------------------------------------------------------- binary


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary_arithmetic_wraps(state, dtype, op):
    a = full_range((3, 40), dtype, seed=1)
    b = full_range((40,), dtype, seed=2)
    ref = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}[op]
    with np.errstate(over="ignore"):
        expected = ref(a, b)
    out = run(state, "binary", [a, b], (3, 40), ints=[BINARY[op]])
    np.testing.assert_array_equal(out, expected)


def _trunc_div(a, b):
    """Integer division truncating toward zero (C and ONNX Runtime), in Python integers."""
    q = [abs(int(x)) // abs(int(y)) * (1 if (int(x) < 0) == (int(y) < 0) else -1) for x, y in zip(a, b, strict=True)]
    return np.array(q, dtype=object)


@pytest.mark.parametrize("dtype", NEW + SMALL)
def test_binary_div_truncates(state, dtype):
    a = full_range((200,), dtype, seed=3)
    b = full_range((200,), dtype, seed=4)
    b[b == 0] = 3
    expected = _trunc_div(a, b)
    info = np.iinfo(dtype)
    expected = np.array([(int(v) - info.min) % (1 << info.bits) + info.min for v in expected], dtype)  # MIN / -1 wraps
    out = run(state, "binary", [a, b], (200,), ints=[BINARY["DIV"]])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_binary_unsigned_div_by_the_largest_value(state, dtype):
    # the all-ones divisor is the unsigned maximum, not -1: 5 / max is 0
    m = np.iinfo(dtype).max
    out = run(state, "binary", [np.array([5, m], dtype), np.array([m, m], dtype)], (2,), ints=[BINARY["DIV"]])
    np.testing.assert_array_equal(out, [0, 1])
    out = run(state, "binary", [np.array([5, m], dtype), np.array([m, m], dtype)], (2,), ints=[BINARY["MOD"]])
    np.testing.assert_array_equal(out, [5, 0])


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["DIV", "MOD", "FMOD"])
def test_binary_integer_division_by_zero_is_an_error(state, dtype, op):
    with pytest.raises(InvalidArgumentError, match="division by zero"):
        run(state, "binary", [np.array([1, 2], dtype), np.array([1, 0], dtype)], (2,), ints=[BINARY[op]])


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["MOD", "FMOD"])
def test_binary_integer_mod(state, dtype, op):
    a = full_range((100,), dtype, seed=5)
    b = full_range((100,), dtype, seed=6)
    b[b == 0] = 7
    if op == "MOD":  # the divisor's sign: Python's %
        expected = [int(x) % int(y) for x, y in zip(a, b, strict=True)]
    else:  # the dividend's sign: C's %
        expected = [int(np.fmod(int(x), int(y))) if abs(int(x)) < 2**53 else
                    (abs(int(x)) % abs(int(y))) * (1 if int(x) >= 0 else -1) for x, y in zip(a, b, strict=True)]
    out = run(state, "binary", [a, b], (100,), ints=[BINARY[op]])
    np.testing.assert_array_equal(out.astype(object), np.array(expected, dtype=object))


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["EQUAL", "LESS", "GREATER", "GREATER_OR_EQUAL", "LESS_OR_EQUAL"])
def test_binary_compare(state, dtype, op):
    a = full_range((4, 1, 30), dtype, seed=7)
    b = full_range((3, 1), dtype, seed=8)
    b[0, 0] = a[0, 0, 0]
    ref = {"EQUAL": np.equal, "LESS": np.less, "GREATER": np.greater, "GREATER_OR_EQUAL": np.greater_equal,
           "LESS_OR_EQUAL": np.less_equal}[op]
    out = run(state, "binary", [a, b], (4, 3, 30), out_dtype=BOOL, ints=[BINARY[op]])
    np.testing.assert_array_equal(out, ref(a, b))


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["MIN", "MAX"])
def test_binary_min_max(state, dtype, op):
    a = full_range((50,), dtype, seed=9)
    b = full_range((50,), dtype, seed=10)
    out = run(state, "binary", [a, b], (50,), ints=[BINARY[op]])
    np.testing.assert_array_equal(out, (np.minimum if op == "MIN" else np.maximum)(a, b))


@pytest.mark.parametrize("dtype", NEW)
@pytest.mark.parametrize("op", ["BITWISE_AND", "BITWISE_OR", "BITWISE_XOR"])
def test_binary_bitwise(state, dtype, op):
    a = full_range((60,), dtype, seed=11)
    b = full_range((60,), dtype, seed=12)
    ref = {"BITWISE_AND": np.bitwise_and, "BITWISE_OR": np.bitwise_or, "BITWISE_XOR": np.bitwise_xor}[op]
    out = run(state, "binary", [a, b], (60,), ints=[BINARY[op]])
    np.testing.assert_array_equal(out, ref(a, b))


@pytest.mark.parametrize("dtype", NEW)
def test_binary_shifts(state, dtype):
    bits = np.iinfo(dtype).bits
    a = full_range((bits + 2,), dtype, seed=13)
    s = np.arange(bits + 2).astype(dtype)  # bits and bits + 1 shift everything out
    left = run(state, "binary", [a, s], a.shape, ints=[BINARY["SHIFT_LEFT"]])
    right = run(state, "binary", [a, s], a.shape, ints=[BINARY["SHIFT_RIGHT"]])
    mask = (1 << bits) - 1
    for i in range(bits + 2):
        x, k = int(a[i]), int(s[i])
        exp_left = ((x << k) & mask) if k < bits else 0
        exp_right = (x >> k) if k < bits else (-1 if x < 0 else 0)
        assert int(np.array(left[i]).astype(object)) == int(np.array(exp_left).astype(dtype).astype(object)), i
        assert int(right[i]) == exp_right, i


@pytest.mark.parametrize("dtype", [I32, I64])
def test_binary_pow_integers(state, dtype):
    a = np.array([2, 3, -2, -3, 0, 0, 5, 1, -1, 2, 10], dtype)
    b = np.array([10, 4, 3, 2, 0, 3, -1, -7, -3, 0, 3], dtype)
    # ONNX Runtime: pow in double, truncated (5 ** -1 = 0.2 -> 0; (-1) ** -3 = -1)
    expected = np.array([1024, 81, -8, 9, 1, 0, 0, 1, -1, 1, 1000], dtype)
    out = run(state, "binary", [a, b], a.shape, ints=[BINARY["POW"]])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [I32, I64])
def test_binary_pow_integer_overflow_saturates(state, dtype):
    info = np.iinfo(dtype)
    out = run(state, "binary", [np.array([2, -2, 7], dtype), np.array([200, 201, 2], dtype)], (3,),
              ints=[BINARY["POW"]])
    np.testing.assert_array_equal(out, [info.max, info.min, 49])


def test_binary_pow_float64(state):
    # FLOAT64 is accepted by POW alone: the compiler's integer Pow with a floating-point exponent
    a = np.array([[2.0, 3.0, 4.0, -2.0, 10.0]])
    b = np.array([0.5, 2.5, 0.5, 3.0, 9.0])
    np.testing.assert_array_equal(run(state, "binary", [a, b], (1, 5), ints=[BINARY["POW"]]), np.power(a, b))


@pytest.mark.parametrize("op", ["MOD", "AND", "BITWISE_AND", "SHIFT_LEFT"])
def test_binary_float64_refuses_integer_and_bool_ops(state, op):
    # FLOAT64 arithmetic and comparisons: test_cpu_float64.py
    with pytest.raises(Exception, match=f"binary op {op} does not support dtype FLOAT64"):
        run(state, "binary", [np.ones(2), np.ones(2)], (2,), ints=[BINARY[op]])


@pytest.mark.parametrize("dtype", SMALL + NEW)
def test_binary_pow_refuses_other_integers(state, dtype):
    with pytest.raises(Exception, match="POW"):
        run(state, "binary", [np.array([2], dtype), np.array([2], dtype)], (1,), ints=[BINARY["POW"]])


def test_binary_refuses_mixed_new_dtypes(state):
    with pytest.raises(InvalidArgumentError, match="different dtypes UINT16 and INT16"):
        run(state, "binary", [np.array([1], U16), np.array([1], I16)], (1,), ints=[BINARY["ADD"]])


# ---------------------------------------------------------------- unary


@pytest.mark.parametrize("dtype", INTS)
def test_unary_abs_and_sign(state, dtype):
    x = full_range((64,), dtype, seed=14)
    with np.errstate(over="ignore"):
        expected_abs = np.abs(x)  # numpy wraps MIN too
    np.testing.assert_array_equal(run(state, "unary", [x], x.shape, ints=[UNARY["ABS"]]), expected_abs)
    np.testing.assert_array_equal(run(state, "unary", [x], x.shape, ints=[UNARY["SIGN"]]), np.sign(x))


@pytest.mark.parametrize("dtype", [I8, I16])
def test_unary_neg_and_relu_of_small_signed(state, dtype):
    x = full_range((64,), dtype, seed=15)
    with np.errstate(over="ignore"):
        expected = np.negative(x)
    np.testing.assert_array_equal(run(state, "unary", [x], x.shape, ints=[UNARY["NEG"]]), expected)
    np.testing.assert_array_equal(run(state, "unary", [x], x.shape, ints=[UNARY["RELU"]]), np.maximum(x, 0))


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("op", ["NEG", "RELU"])
def test_unary_neg_and_relu_refuse_unsigned(state, dtype, op):
    with pytest.raises(Exception, match=op):
        run(state, "unary", [np.array([1], dtype)], (1,), ints=[UNARY[op]])


@pytest.mark.parametrize("dtype", NEW)
def test_unary_bitwise_not(state, dtype):
    x = full_range((32,), dtype, seed=16)
    np.testing.assert_array_equal(run(state, "unary", [x], x.shape, ints=[UNARY["BITWISE_NOT"]]), np.invert(x))


# ---------------------------------------------------------------- cast

ALL = [F32, U8, I8, I32, I64, BOOL, F16, F64, I16, U16, U32, U64]


@pytest.mark.parametrize("src", ALL, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("dst", NEW, ids=lambda t: np.dtype(t).name)
def test_cast_to_and_from_the_new_dtypes(state, src, dst):
    x = np.array([[0, 1, 2, 100], [7, 0, 127, 3]]).astype(src)
    np.testing.assert_array_equal(run(state, "cast", [x], x.shape, out_dtype=dst), x.astype(dst))
    y = x.astype(dst)
    np.testing.assert_array_equal(run(state, "cast", [y], y.shape, out_dtype=src), y.astype(src))


@pytest.mark.parametrize("src", INTS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("dst", INTS, ids=lambda t: np.dtype(t).name)
def test_cast_between_integers_wraps(state, src, dst):
    x = full_range((50,), src, seed=17)
    np.testing.assert_array_equal(run(state, "cast", [x], x.shape, out_dtype=dst), x.astype(dst))


@pytest.mark.parametrize("dst", NEW)
def test_cast_float_to_new_int_truncates_and_saturates(state, dst):
    info = np.iinfo(dst)
    x = np.array([-2.7, 2.7, 1e30, -1e30, np.nan], F64)
    expected = [max(-2, int(info.min)), 2, int(info.max), int(info.min), 0]
    out = run(state, "cast", [x], x.shape, out_dtype=dst)
    np.testing.assert_array_equal(out.astype(object), np.array(expected, dtype=object))


def test_cast_large_uint64_to_float_is_exact_for_powers_of_two(state):
    x = np.array([2**63, 2**64 - 1, 1], U64)
    np.testing.assert_array_equal(run(state, "cast", [x], x.shape, out_dtype=F64), x.astype(F64))


# ---------------------------------------------------------------- where and data movement


@pytest.mark.parametrize("dtype", NEW)
def test_where(state, dtype):
    c = np.array([[True], [False]])
    x = full_range((2, 5), dtype, seed=18)
    y = full_range((5,), dtype, seed=19)
    np.testing.assert_array_equal(run(state, "where", [c, x, y], (2, 5), out_dtype=dtype), np.where(c, x, y))


@pytest.mark.parametrize("dtype", NEW)
def test_data_movement(state, dtype):
    x = full_range((2, 3, 4), dtype, seed=20)
    out = run(state, "transpose", [x, np.array([2, 0, 1], I64)], (4, 2, 3))
    np.testing.assert_array_equal(out, x.transpose(2, 0, 1))
    out = run(state, "concat", [x, x], (2, 6, 4), ints=[1])
    np.testing.assert_array_equal(out, np.concatenate([x, x], axis=1))
    out = run(state, "gather", [x, np.array([2, 0], I64)], (2, 2, 4), ints=[1])
    np.testing.assert_array_equal(out, x[:, [2, 0]])
    out = run(state, "expand", [x[:, :1]], (2, 3, 4))
    np.testing.assert_array_equal(out, np.broadcast_to(x[:, :1], (2, 3, 4)))
    out = run(state, "slice", [x, np.array([0, 1, 3], I64), np.array([1, 1, -1], I64)], (2, 2, 2))
    np.testing.assert_array_equal(out, x[:, 1:3, 3:1:-1])


# ---------------------------------------------------------------- reductions, cumsum, arg, top_k

INT_REDUCE = {"SUM": np.sum, "PROD": np.prod, "MAX": np.max, "MIN": np.min}


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["SUM", "PROD", "MAX", "MIN"])
def test_reduce(state, dtype, op):
    x = full_range((3, 7, 2), dtype, seed=21)
    with np.errstate(over="ignore"):
        kw = {"dtype": dtype} if op in ("SUM", "PROD") else {}
        expected = INT_REDUCE[op](x, axis=1, **kw)
    out = run(state, "reduce", [x, np.array([1], I64)], expected.shape, ints=[REDUCE[op]])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", NEW)
def test_reduce_empty_extremes(state, dtype):
    x = np.zeros((2, 0), dtype)
    info = np.iinfo(dtype)
    out = run(state, "reduce", [x, np.array([1], I64)], (2,), ints=[REDUCE["MAX"]])
    np.testing.assert_array_equal(out, [info.min, info.min])
    out = run(state, "reduce", [x, np.array([1], I64)], (2,), ints=[REDUCE["MIN"]])
    np.testing.assert_array_equal(out, [info.max, info.max])


@pytest.mark.parametrize("dtype", NEW)
def test_reduce_mean_is_refused_for_integers(state, dtype):
    with pytest.raises(Exception, match="MEAN"):
        run(state, "reduce", [np.ones((2, 2), dtype), np.array([1], I64)], (2,), ints=[REDUCE["MEAN"]])


@pytest.mark.parametrize("dtype", NEW + SMALL)
def test_cumsum_wraps(state, dtype):
    x = full_range((2, 9), dtype, seed=22)
    with np.errstate(over="ignore"):
        expected = np.cumsum(x, axis=1, dtype=dtype)
    out = run(state, "cumsum", [x], x.shape, ints=[1, 0, 0])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("is_min", [0, 1])
def test_arg_reduce(state, dtype, is_min):
    x = full_range((4, 11), dtype, seed=23)
    expected = (np.argmin if is_min else np.argmax)(x, axis=1)
    out = run(state, "arg_reduce", [x], (4,), out_dtype=I64, ints=[1, 0, is_min])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", NEW + SMALL)
def test_top_k(state, dtype):
    x = full_range((3, 10), dtype, seed=24)
    values = np.full((3, 4), 77, dtype)
    indices = np.full((3, 4), 77, I64)
    _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [x], [values, indices], [1, 1, 1], [])
    order = np.array([sorted(range(10), key=lambda a, r=r: (-int(x[r, a]), a))[:4] for r in range(3)])
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))
