"""The CPU op kernels (hipdnn_ep_kernel_*) against numpy references.

Kernels are called through the testing hook ``_core.call_kernel`` with tensor
refs over numpy buffers; outputs are preallocated with the shape the compiler
would infer. Op codes, dtype codes, statuses and struct layouts come from the
runtime's own ABI manifest, never from literals here. The last section calls
the C entry points directly (ctypes) to reach what the hook cannot: NULL
pointers, a short struct, garbage tensor refs.
"""

from __future__ import annotations

import ctypes
import math

import pytest
from conftest import rand

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
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


def test_manifest_lists_the_kernels_tested_here():
    tested = {"binary", "unary", "cast", "where", "matmul", "gemm", "softmax", "layer_norm", "reduce",
              "transpose", "concat", "slice", "gather", "expand", "range", "fill", "gather_elements", "cumsum", "trilu",
              "arg_reduce", "scatter_nd", "pad", "gather_nd", "scatter_elements", "top_k",
              # the LLM kernels: test_llm_kernels.py
              "matmul_nbits", "rms_norm", "rotary_embedding", "group_query_attention",
              # the vision kernels: test_vision_kernels.py
              "conv", "pool", "batch_norm", "activation", "conv_transpose", "resize", "grid_sample",
              # the quantization kernels: test_quant_kernels.py
              "quantize_linear", "dequantize_linear", "dynamic_quantize_linear", "matmul_integer", "conv_integer"}
    assert set(KERNELS) == {"hipdnn_ep_kernel_" + k for k in tested}


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


@pytest.mark.parametrize("index_dtype", [I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_elements(state, index_dtype, axis):
    data = rand((3, 4, 5), F32, seed=1)
    shape = [2, 3, 4]
    idx = rng(axis).integers(-data.shape[axis], data.shape[axis], size=shape).astype(index_dtype)
    out = run(state, "gather_elements", [data, idx], tuple(shape), ints=[axis])
    normalized = np.where(idx < 0, idx + data.shape[axis], idx)
    window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(shape))  # the indexed region
    np.testing.assert_array_equal(out, np.take_along_axis(data[window], normalized, axis=axis))


def test_gather_elements_checks_every_index_before_writing(state):
    out = np.full((1, 2), 5.0, F32)
    with pytest.raises(InvalidArgumentError, match="index 4 at position 1 is out of range for axis 1 of size 3"):
        call_raw(state, "gather_elements", [np.ones((2, 3), F32), np.array([[0, 4]], I64)], [out], [1])
    assert np.all(out == 5.0)
    with pytest.raises(InvalidArgumentError, match="exceed data dims"):
        call_raw(state, "gather_elements", [np.ones((2, 3), F32), np.zeros((3, 1), I64)], [np.empty((3, 1), F32)],
                 [1])


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


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 1, 7])
def test_trilu(state, dtype, upper, k):
    x = rand((2, 4, 5), dtype, seed=3, low=1, high=9)
    out = run(state, "trilu", [x, np.array([k], I64)], x.shape, ints=[upper])
    np.testing.assert_array_equal(out, (np.triu if upper else np.tril)(x, k))


def test_trilu_refuses_a_vector(state):
    with pytest.raises(InvalidArgumentError, match="Trilu needs at least 2"):
        run(state, "trilu", [np.ones(3, F32), np.array([0], I64)], (3,), ints=[1])


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


# ---------------------------------------------------------------- matmul / gemm

MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((3, 0), (0, 2)), ((0, 4), (4, 3)), ((2, 0, 3, 4), (4, 1)),
                 ((130, 300), (300, 270)), ((1, 2, 7, 9), (3, 1, 9, 1))]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(state, dtype, shapes):
    a = rand(shapes[0], dtype, seed=1, low=-1, high=1)
    b = rand(shapes[1], dtype, seed=2, low=-1, high=1)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = run(state, "matmul", [a, b], expected.shape)
    tol = 1e-4 if dtype == F32 else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol, atol=tol)


# Edges of the register tiles (4 x 8, 4 x 16, 8 x 8) and of the 128 (k) x 256 (n) packed panels.
TILE_EDGE_MNK = [(1, 1, 1), (1, 8, 8), (4, 8, 8), (5, 3, 9), (3, 7, 1), (7, 129, 17), (9, 257, 33),
                 (3, 5, 257), (13, 300, 300), (128, 8, 128), (128, 128, 8), (13, 130, 12)]


@pytest.mark.parametrize("m,k,n", TILE_EDGE_MNK, ids=str)
def test_matmul_tile_and_panel_edges(state, m, k, n):
    a = rand((2, m, k), seed=m)
    b = rand((k, n), seed=n)  # broadcast over the batch
    out = run(state, "matmul", [a, b], (2, m, n))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m,k,n", TILE_EDGE_MNK[3:7], ids=str)
def test_gemm_transposed_tile_edges(state, m, k, n):
    a = rand((k, m), seed=1)
    b = rand((n, k), seed=2)
    out = run(state, "gemm", [a, b], (m, n), ints=[1, 1], floats=[1.0, 0.0])
    np.testing.assert_allclose(out, a.T.astype(np.float64) @ b.T, rtol=1e-5, atol=1e-4)


def test_matmul_non_finite_stays_in_its_row_and_column(state):
    # The tile's zero padding multiplies real entries too: an inf must not leak into other outputs.
    a = rand((5, 9))
    b = rand((9, 11), seed=1)
    a[4, 2] = np.inf
    b[3, 10] = np.nan
    out = run(state, "matmul", [a, b], (5, 11))
    with np.errstate(invalid="ignore"):
        expected = a.astype(np.float64) @ b
    np.testing.assert_array_equal(np.isfinite(out), np.isfinite(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (5,), (3, 1), (1,), (3, 5), ()], ids=str)
def test_gemm(state, dtype, trans_a, trans_b, c_shape):
    m, k, n = 3, 300, 5
    a = rand((k, m) if trans_a else (m, k), dtype, seed=1, low=-1, high=1)
    b = rand((n, k) if trans_b else (k, n), dtype, seed=2, low=-1, high=1)
    alpha, beta = 0.5, -2.0
    op_a = (a.T if trans_a else a).astype(np.float64)
    op_b = (b.T if trans_b else b).astype(np.float64)
    expected = alpha * op_a @ op_b
    inputs = [a, b]
    if c_shape is not None:
        c = rand(c_shape, dtype, seed=3)
        inputs.append(c)
        expected = expected + beta * c.astype(np.float64)
    out = run(state, "gemm", inputs, (m, n), ints=[trans_a, trans_b], floats=[alpha, beta])
    tol = 1e-4 if dtype == F32 else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol, atol=tol)


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


def test_gemm_ignores_c_when_beta_is_zero(state):
    a = rand((2, 3))
    b = rand((3, 4), seed=1)
    c = np.full((2, 4), np.nan, F32)
    out = run(state, "gemm", [a, b, c], (2, 4), ints=[0, 0], floats=[1.0, 0.0])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_gemm_with_zero_k_is_beta_c(state):
    a = np.zeros((2, 0), F32)
    b = np.zeros((0, 3), F32)
    c = rand((3,))
    out = run(state, "gemm", [a, b, c], (2, 3), ints=[0, 0], floats=[1.0, 3.0])
    np.testing.assert_allclose(out, np.broadcast_to(3 * c, (2, 3)), rtol=1e-6)


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


# ---------------------------------------------------------------- ArgMax/ArgMin, ScatterND, Pad

def _arg_ref(x, axis, is_min, last):
    f = np.argmin if is_min else np.argmax
    if not last:
        return f(x, axis=axis)
    flipped = np.flip(x, axis=axis)
    return x.shape[axis] - 1 - f(flipped, axis=axis)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("is_min", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(state, dtype, axis, is_min, last):
    x = rand((3, 4, 5), dtype, low=-3, high=3).astype(dtype)  # small integers: ties
    x = np.round(x).astype(dtype)
    want = _arg_ref(x, axis, is_min, last)
    out = run(state, "arg_reduce", [x], want.shape, out_dtype=I64, ints=[axis, last, is_min])
    np.testing.assert_array_equal(out, want)
    kept = run(state, "arg_reduce", [x], np.expand_dims(want, axis).shape, out_dtype=I64, ints=[axis, last, is_min])
    np.testing.assert_array_equal(kept, np.expand_dims(want, axis))


def test_arg_reduce_nan_is_the_extreme(state):
    x = np.array([[1, np.nan, 3, np.nan]], F32)
    for is_min in (0, 1):
        assert run(state, "arg_reduce", [x], (1,), out_dtype=I64, ints=[1, 0, is_min])[0] == 1
        assert run(state, "arg_reduce", [x], (1,), out_dtype=I64, ints=[1, 1, is_min])[0] == 3


def test_arg_reduce_refuses_an_empty_axis(state):
    with pytest.raises(InvalidArgumentError, match="is empty"):
        run(state, "arg_reduce", [np.zeros((2, 0), F32)], (2,), out_dtype=I64, ints=[1, 0, 0])


def _scatter_nd_ref(data, idx, upd, reduction):
    out = data.copy()
    k = idx.shape[-1]
    flat_idx = idx.reshape(-1, k)
    flat_upd = upd.reshape((flat_idx.shape[0],) + data.shape[k:])
    for i, t in enumerate(flat_idx):
        t = tuple(int(c) + data.shape[d] if c < 0 else int(c) for d, c in enumerate(t))
        if reduction == 0:
            out[t] = flat_upd[i]
        elif reduction == 1:
            out[t] = out[t] + flat_upd[i]
        elif reduction == 2:
            out[t] = out[t] * flat_upd[i]
        elif reduction == 3:
            out[t] = np.maximum(out[t], flat_upd[i])
        else:
            out[t] = np.minimum(out[t], flat_upd[i])
    return out


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd(state, dtype, reduction, k):
    data = np.round(rand((3, 4, 5), dtype, low=-4, high=4)).astype(dtype)
    idx = np.array([[-1, 2, 0], [0, 1, 4], [0, 1, 4], [2, -4, 3]], I64)[:, :k]  # repeats: reductions in order
    if reduction == 0:
        idx = idx[[0, 1, 3]]
    upd = np.round(rand((idx.shape[0],) + data.shape[k:], dtype, low=-4, high=4, seed=3)).astype(dtype)
    out = run(state, "scatter_nd", [data, idx, upd], data.shape, ints=[reduction])
    np.testing.assert_array_equal(out, _scatter_nd_ref(data, idx, upd, reduction))


def test_scatter_nd_bool_replaces(state):
    data = np.zeros((2, 3), BOOL)
    out = run(state, "scatter_nd", [data, np.array([[1, 2]], I64), np.array([True])], data.shape, ints=[0])
    np.testing.assert_array_equal(out, [[False] * 3, [False, False, True]])
    with pytest.raises(rt.HipdnnEpError, match="does not take BOOL"):
        run(state, "scatter_nd", [data, np.array([[1, 2]], I64), np.array([True])], data.shape, ints=[1])


def test_scatter_nd_checks_every_index_before_writing(state):
    out = np.full((2, 3), 5.0, F32)
    upd = np.ones((2,), F32)
    with pytest.raises(InvalidArgumentError, match="index 3 of index tuple 1 is out of range for axis 1 of size 3"):
        call_raw(state, "scatter_nd", [np.zeros((2, 3), F32), np.array([[0, 0], [1, 3]], I64), upd], [out], [0])
    assert np.all(out == 5.0)
    with pytest.raises(InvalidArgumentError, match="index -3 of index tuple 0"):
        call_raw(state, "scatter_nd", [np.zeros((2, 3), F32), np.array([[-3]], I64), np.ones((1, 3), F32)], [out], [1])
    with pytest.raises(InvalidArgumentError, match="updates dims"):
        call_raw(state, "scatter_nd", [np.zeros((2, 3), F32), np.array([[0]], I64), np.ones((1, 2), F32)], [out], [0])


def _gather_nd_ref(data, idx, b):
    batches = int(np.prod(data.shape[:b], dtype=np.int64))
    flat = data.reshape((batches,) + data.shape[b:])
    k = idx.shape[-1]
    tuples = idx.reshape(batches, -1, k)
    out = [flat[n][tuple(t)] for n in range(batches) for t in tuples[n]]
    return np.array(out, data.dtype).reshape(idx.shape[:-1] + data.shape[b + k:])


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("b,k", [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 1)])
def test_gather_nd(state, dtype, b, k):
    data = rand((2, 3, 4), dtype)
    r = rng(b * 3 + k)
    idx = np.stack([r.integers(-data.shape[b + d], data.shape[b + d], size=data.shape[:b] + (5,))
                    for d in range(k)], axis=-1).astype(I64)
    want = _gather_nd_ref(data, idx, b)
    out = run(state, "gather_nd", [data, idx], want.shape, ints=[b])
    np.testing.assert_array_equal(out, want)


def test_gather_nd_checks_every_index(state):
    with pytest.raises(InvalidArgumentError, match="index 4 of index tuple 1 is out of range for axis 1 of size 4"):
        run(state, "gather_nd", [np.ones((2, 4), F32), np.array([[0, 0], [1, 4]], I64)], (2,), ints=[0])
    with pytest.raises(InvalidArgumentError, match="differ in batch dim 0"):
        run(state, "gather_nd", [np.ones((2, 4), F32), np.zeros((3, 1), I64)], (3,), ints=[1])


def _scatter_elements_ref(data, idx, upd, axis, reduction):
    out = data.copy()
    combine = [lambda a, b: b, np.add, np.multiply, np.maximum, np.minimum][reduction]
    for pos in np.ndindex(*idx.shape):
        at = list(pos)
        at[axis] = int(idx[pos]) % data.shape[axis]
        out[tuple(at)] = combine(out[tuple(at)], upd[pos])
    return out


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("index_dtype", [I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3, 4])
def test_scatter_elements(state, dtype, index_dtype, axis, reduction):
    data = np.round(rand((3, 4, 5), dtype, low=-4, high=4)).astype(dtype)
    shape = [2, 3, 4]
    shape[axis] = 3
    r = rng(axis)
    if reduction == 0:  # no repeats along the axis: without a reduction their order is the model's business
        idx = np.moveaxis(np.broadcast_to(np.arange(3)[:, None, None], [3] + [s for d, s in enumerate(shape)
                                                                               if d != axis]), 0, axis)
        idx = np.where(r.random(idx.shape) < 0.5, idx - data.shape[axis], idx)
    else:
        idx = r.integers(-data.shape[axis], data.shape[axis], size=shape)
    idx = np.ascontiguousarray(idx).astype(index_dtype)
    upd = np.round(rand(tuple(shape), dtype, low=-3, high=3, seed=4)).astype(dtype)
    out = run(state, "scatter_elements", [data, idx, upd], data.shape, ints=[axis, reduction])
    np.testing.assert_array_equal(out, _scatter_elements_ref(data, idx, upd, axis, reduction))


def test_scatter_elements_checks_every_index_before_writing(state):
    out = np.full((2, 3), 5.0, F32)
    with pytest.raises(InvalidArgumentError, match="index 3 at position 1 is out of range for axis 1 of size 3"):
        call_raw(state, "scatter_elements", [np.zeros((2, 3), F32), np.array([[0, 3]], I64), np.ones((1, 2), F32)],
                 [out], [1, 0])
    assert np.all(out == 5.0)
    with pytest.raises(InvalidArgumentError, match="updates dims"):
        call_raw(state, "scatter_elements", [np.zeros((2, 3), F32), np.array([[0, 1]], I64), np.ones((1, 3), F32)],
                 [out], [1, 0])


PAD_MODES = {0: "constant", 1: "reflect", 2: "edge", 3: "wrap"}


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("mode", sorted(PAD_MODES))
@pytest.mark.parametrize("pads", [[0, 1, 2, 1, 0, 3], [1, 0, 0, 0, 2, 1], [0, 0, 0, 0, 0, 0]], ids=str)
def test_pad(state, dtype, mode, pads):
    x = rand((2, 3, 4), dtype)
    value = np.array(rand((), dtype, seed=5))
    width = [(pads[d], pads[d + 3]) for d in range(3)]
    kw = {"constant_values": value} if mode == 0 else {}
    want = np.pad(x, width, mode=PAD_MODES[mode], **kw)
    out = run(state, "pad", [x, value.reshape(1), np.array(pads, I64)], want.shape, ints=[mode])
    np.testing.assert_array_equal(out, want)


def test_pad_wraps_more_than_the_axis_and_crops(state):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    out = run(state, "pad", [x, np.zeros(1, F32), np.array([0, 4, 0, 3], I64)], (2, 10), ints=[3])
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (4, 3)], mode="wrap"))
    out = run(state, "pad", [x, np.full(1, 9, F32), np.array([-1, 1, 0, -2], I64)], (1, 2), ints=[0])
    np.testing.assert_array_equal(out, [[9, 3]])


def test_pad_refuses_bad_pads(state):
    x = np.ones((2, 3), F32)
    with pytest.raises(InvalidArgumentError, match="must be below the axis size"):
        run(state, "pad", [x, np.zeros(1, F32), np.array([0, 3, 0, 0], I64)], (2, 6), ints=[1])
    with pytest.raises(InvalidArgumentError, match="pads has 2 entries"):
        run(state, "pad", [x, np.zeros(1, F32), np.array([0, 3], I64)], (2, 6), ints=[0])
    with pytest.raises(InvalidArgumentError, match="need elements to copy"):
        run(state, "pad", [np.ones((2, 0), F32), np.zeros(1, F32), np.array([0, 1, 0, 0], I64)], (2, 1), ints=[2])


# ---------------------------------------------------------------- data movement

@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL, np.int8, np.float64])
@pytest.mark.parametrize("shape,perm", [((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [0, 1, 2]),
                                        ((1, 5, 1, 2), [3, 2, 1, 0]), ((), []), ((0, 3), [1, 0])], ids=str)
def test_transpose(state, dtype, shape, perm):
    x = rand(shape, dtype)
    expected = np.transpose(x, perm)
    out = run(state, "transpose", [x, np.array(perm, I64)], expected.shape)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("shapes,axis", [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1),
                                         ([(2, 0, 2), (2, 3, 2)], 1), ([(7,)], 0), ([(2, 2, 1), (2, 2, 3)], 2)],
                         ids=str)
def test_concat(state, dtype, shapes, axis):
    inputs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
    expected = np.concatenate(inputs, axis=axis)
    out = run(state, "concat", inputs, expected.shape, ints=[axis])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("shape,slices", [((6,), [slice(1, 5, 2)]), ((6,), [slice(5, None, -1)]),
                                          ((4, 5), [slice(1, 3, 1), slice(4, 0, -2)]),
                                          ((3, 4, 5), [slice(0, 3, 1), slice(0, 0, 1), slice(0, 5, 1)]),
                                          ((3, 4), [slice(2, 3, 1), slice(0, 4, 3)])], ids=str)
def test_slice(state, dtype, shape, slices):
    x = rand(shape, dtype)
    expected = x[tuple(slices)]
    starts = [s.indices(d)[0] for s, d in zip(slices, shape, strict=True)]
    steps = [s.step for s in slices]
    out = run(state, "slice", [x, np.array(starts, I64), np.array(steps, I64)], expected.shape)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("index_dtype", [I32, I64])
@pytest.mark.parametrize("shape,axis,indices", [((5, 3), 0, [[0, 4], [-1, 2]]), ((2, 5, 3), 1, [3, -5, 0]),
                                                ((4,), 0, 2), ((2, 3), 1, []), ((3, 2), 0, [[1]])], ids=str)
def test_gather(state, dtype, index_dtype, shape, axis, indices):
    x = rand(shape, dtype)
    idx = np.array(indices, index_dtype)
    expected = np.take(x, idx, axis=axis)
    out = run(state, "gather", [x, idx], expected.shape, out_dtype=dtype, ints=[axis])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("shape,target", [((3, 1), (2, 3, 4)), ((), (2, 2)), ((4,), (3, 4)), ((2, 3), (2, 3)),
                                          ((1,), (0, 3))], ids=str)
def test_expand(state, dtype, shape, target):
    x = rand(shape, dtype)
    out = run(state, "expand", [x], target)
    np.testing.assert_array_equal(out, np.broadcast_to(x, target))


# ---------------------------------------------------------------- errors through the hook

def call_raw(state, kernel, inputs, outputs, ints=(), floats=()):
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, outputs, list(ints), list(floats))


# A well-formed call of each kernel, to break one way at a time (outputs zeroed: _retyped casts them, and
# casting np.empty's garbage warns, which the suite's filterwarnings makes an error).
def good_call(kernel):
    f = np.ones((2, 3), F32)
    o = np.zeros((2, 3), F32)
    return {
        "binary": ([f, f], [o], [BINARY["ADD"]], []),
        "unary": ([f], [o], [UNARY["RELU"]], []),
        "cast": ([f], [o], [], []),
        "where": ([np.ones((2, 3), BOOL), f, f], [o], [], []),
        "matmul": ([f, np.ones((3, 2), F32)], [np.zeros((2, 2), F32)], [], []),
        "gemm": ([f, np.ones((3, 2), F32)], [np.zeros((2, 2), F32)], [0, 0], [1.0, 1.0]),
        "softmax": ([f], [o], [1], []),
        "layer_norm": ([f, np.ones(3, F32)], [o], [1], [1e-5]),
        "reduce": ([f, np.array([1], I64)], [np.zeros(2, F32)], [REDUCE["SUM"]], []),
        "transpose": ([f, np.array([1, 0], I64)], [np.zeros((3, 2), F32)], [], []),
        "concat": ([f, f], [np.zeros((4, 3), F32)], [0], []),
        "slice": ([f, np.array([0, 0], I64), np.array([1, 1], I64)], [o], [], []),
        "gather": ([f, np.array([1], I64)], [np.zeros((1, 3), F32)], [0], []),
        "expand": ([np.ones((1, 3), F32)], [o], [], []),
        "range": ([np.array([0, 1], I64)], [np.zeros(3, I64)], [], []),
        "fill": ([], [o], [0], []),
        "cumsum": ([f], [o], [1, 0, 0], []),
        "trilu": ([f, np.array([0], I64)], [o], [1], []),
        "gather_elements": ([f, np.zeros((2, 2), I64)], [np.zeros((2, 2), F32)], [1], []),
        "arg_reduce": ([f], [np.zeros(2, I64)], [1, 0, 0], []),
        "scatter_nd": ([f, np.zeros((1, 1), I64), np.ones((1, 3), F32)], [o], [0], []),
        "pad": ([f, np.zeros(1, F32), np.array([0, 1, 0, 0], I64)], [np.zeros((2, 4), F32)], [0], []),
        "gather_nd": ([f, np.zeros((1, 1), I64)], [np.zeros((1, 3), F32)], [0], []),
        "scatter_elements": ([f, np.zeros((2, 2), I64), np.ones((2, 2), F32)], [o], [1, 0], []),
        "top_k": ([f], [np.zeros((2, 2), F32), np.zeros((2, 2), I64)], [1, 1, 1], []),
        "matmul_nbits": ([np.ones((2, 32), F32), np.ones((3, 1, 16), np.uint8), np.ones((3, 1), F32),
                          np.ones((3, 1), np.uint8)], [np.zeros((2, 3), F32)], [32, 3, 4, 32], []),
        "rms_norm": ([f, np.ones(3, F32)], [o], [1], [1e-5]),
        "rotary_embedding": ([np.ones((1, 2, 4), F32), np.zeros((1, 2), I64), np.ones((4, 2), F32),
                              np.ones((4, 2), F32)], [np.zeros((1, 2, 4), F32)], [0, 1, 0], []),
        "group_query_attention": ([np.ones((1, 1, 8), F32), np.ones((1, 1, 8), F32), np.ones((1, 1, 8), F32),
                                   np.ones((1, 1, 0, 8), F32), np.ones((1, 1, 0, 8), F32), np.zeros(1, I32),
                                   np.ones(1, I32)],
                                  [np.zeros((1, 1, 8), F32), np.zeros((1, 1, 1, 8), F32), np.zeros((1, 1, 1, 8), F32)],
                                  [1, 1, -1, 0, 0], [0.0, 0.0]),
        # the vision kernels
        "conv": ([np.ones((1, 2, 3, 3), F32), np.ones((2, 2, 1, 1), F32), np.ones(2, F32),
                  np.array([1, 1, 0, 0, 1, 1], I64)], [np.zeros((1, 2, 3, 3), F32)], [1], []),
        "pool": ([np.ones((1, 2, 3, 3), F32), np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1], I64)],
                 [np.zeros((1, 2, 3, 3), F32)], [0, 0], []),
        "batch_norm": ([np.ones((1, 2, 3), F32)] + [np.ones(2, F32)] * 4, [np.zeros((1, 2, 3), F32)], [], [1e-5]),
        "activation": ([f], [o], [0], [0.5, 0.5]),
        "conv_transpose": ([np.ones((1, 2, 3, 3), F32), np.ones((2, 2, 1, 1), F32), np.ones(2, F32),
                            np.array([1, 1, 0, 0, 1, 1], I64)], [np.zeros((1, 2, 3, 3), F32)], [1], []),
        # scales 0 (output / input), roi 0 (read in tf_crop_and_resize mode only)
        "resize": ([f, np.zeros(6, I64)], [o], [0, 0, 0, 0, 0], [-0.75, 0.0]),
        "grid_sample": ([np.ones((1, 1, 2, 2), F32), np.zeros((1, 2, 2, 2), F32)], [np.zeros((1, 1, 2, 2), F32)],
                        [0, 0, 0], []),
        # the quantization kernels
        "quantize_linear": ([f, np.ones(3, F32)], [np.empty((2, 3), np.int8)], [1, 0], []),
        "dequantize_linear": ([np.ones((2, 3), np.uint8), np.ones(3, F32)], [o], [1, 0], []),
        "dynamic_quantize_linear": ([f], [np.empty((2, 3), np.uint8), np.empty((), F32), np.empty((), np.uint8)],
                                    [], []),
        "matmul_integer": ([np.ones((2, 3), np.uint8), np.ones((3, 2), np.int8)], [np.empty((2, 2), I32)], [], []),
        "conv_integer": ([np.ones((1, 2, 3, 3), np.uint8), np.ones((2, 2, 1, 1), np.int8), np.array(0, np.uint8),
                          np.array(0, np.int8), np.array([1, 1, 0, 0, 1, 1], I64)], [np.empty((1, 2, 3, 3), I32)],
                         [1], []),
    }[kernel]


KERNEL_NAMES = sorted(k.removeprefix("hipdnn_ep_kernel_") for k in KERNELS)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_good_calls_succeed(state, kernel):
    call_raw(state, kernel, *good_call(kernel))


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_wrong_input_count_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    wrong = [] if inputs else [np.ones(1, F32)]  # fill takes none
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: expected .*inputs, got {len(wrong)}"):
        call_raw(state, kernel, wrong, outputs, ints, floats)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_wrong_output_count_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    expected = rf"^hipdnn_ep_kernel_{kernel}: expected \d outputs, got {3 * len(outputs)}"
    with pytest.raises(InvalidArgumentError, match=expected):
        call_raw(state, kernel, inputs, outputs * 3, ints, floats)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_wrong_attribute_count_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: expected {len(ints)} int attributes"):
        call_raw(state, kernel, inputs, outputs, ints + [0], floats)
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: expected {len(floats)} float attr"):
        call_raw(state, kernel, inputs, outputs, ints, floats + [0.0])


@pytest.mark.parametrize("kernel", [k for k in KERNEL_NAMES if k != "fill"])  # fill takes any shape
def test_wrong_output_shape_names_the_kernel(state, kernel):
    inputs, outputs, ints, floats = good_call(kernel)
    bad = np.empty(outputs[0].shape + (2,), outputs[0].dtype)
    with pytest.raises(InvalidArgumentError, match=rf"^hipdnn_ep_kernel_{kernel}: .*output 0 has (dims|rank)|"
                                                   rf"^hipdnn_ep_kernel_{kernel}: input dims .* do not broadcast"):
        call_raw(state, kernel, inputs, [bad, *outputs[1:]], ints, floats)


# (kernel, inputs, outputs, ints, floats, exception, message regex)
X = np.ones((2, 3), F32)
Y = np.empty((2, 3), F32)
ERROR_CASES = {
    "binary_unknown_op": ("binary", [X, X], [Y], [99], [], InvalidArgumentError, "unknown binary op 99"),
    "binary_dtype_mismatch": ("binary", [X, np.ones((2, 3), I64)], [Y], [0], [], InvalidArgumentError,
                              "different dtypes FLOAT32 and INT64"),
    "binary_float64": ("binary", [np.ones(2), np.ones(2)], [np.empty(2)], [0], [], UNSUPPORTED,
                       "does not support dtype FLOAT64"),
    "binary_pow_int": ("binary", [np.ones(2, np.int16)] * 2, [np.empty(2, np.int16)], [BINARY["POW"]], [], UNSUPPORTED,
                       "binary op POW does not support dtype INT16"),
    "binary_no_broadcast": ("binary", [X, np.ones((4,), F32)], [Y], [0], [], InvalidArgumentError,
                            r"input dims \[2, 3\] and \[4\] do not broadcast"),
    "binary_compare_writes_bool": ("binary", [X, X], [Y], [BINARY["LESS"]], [], InvalidArgumentError,
                                   "output 0 has dtype FLOAT32, expected BOOL"),
    "binary_int_div_by_zero": ("binary", [np.ones(2, I32), np.zeros(2, I32)], [np.empty(2, I32)], [BINARY["DIV"]],
                               [], InvalidArgumentError, "integer division by zero"),
    "unary_unknown_op": ("unary", [X], [Y], [-1], [], InvalidArgumentError, "unknown unary op -1"),
    "unary_exp_int": ("unary", [np.ones(2, I64)], [np.empty(2, I64)], [UNARY["EXP"]], [], UNSUPPORTED,
                      "unary op EXP does not support dtype INT64"),
    "cast_shape": ("cast", [X], [np.empty((3, 2), I64)], [], [], InvalidArgumentError,
                   r"output 0 has dims \[3, 2\], expected \[2, 3\]"),
    "where_cond_not_bool": ("where", [X, X, X], [Y], [], [], UNSUPPORTED, "cond.* expected BOOL"),
    "where_xy_dtypes": ("where", [np.ones(2, BOOL), np.ones(2, F32), np.ones(2, I64)], [np.empty(2, F32)], [], [],
                        InvalidArgumentError, "input 2 has dtype INT64, expected FLOAT32"),
    "matmul_k_mismatch": ("matmul", [X, X], [Y], [], [], InvalidArgumentError, "inner dims differ"),
    "matmul_batch": ("matmul", [np.ones((2, 2, 3), F32), np.ones((3, 3, 1), F32)], [np.empty((3, 2, 1), F32)], [],
                     [], InvalidArgumentError, r"batch dims \[2\] and \[3\] do not broadcast"),
    "matmul_rank0": ("matmul", [np.ones((), F32), X], [Y], [], [], InvalidArgumentError, "rank >= 1"),
    "matmul_int": ("matmul", [np.ones((2, 2), I64)] * 2, [np.empty((2, 2), I64)], [], [], UNSUPPORTED,
                   "matmul does not support dtype INT64"),
    "gemm_trans_value": ("gemm", [X, X], [Y], [2, 0], [1.0, 1.0], InvalidArgumentError, "trans_a is 2"),
    "gemm_rank": ("gemm", [np.ones(3, F32), X], [Y], [0, 0], [1.0, 1.0], InvalidArgumentError, "must both have rank 2"),
    "gemm_k": ("gemm", [X, X], [np.empty((2, 3), F32)], [0, 0], [1.0, 1.0], InvalidArgumentError,
               "op\\(A\\) has K = 3 but op\\(B\\) has K = 2"),
    "gemm_c_shape": ("gemm", [X, np.ones((3, 2), F32), np.ones((3,), F32)], [np.empty((2, 2), F32)], [0, 0],
                     [1.0, 1.0], InvalidArgumentError, r"C dims \[3\] do not broadcast to \[2, 2\]"),
    "softmax_axis": ("softmax", [X], [Y], [2], [], InvalidArgumentError, "axis 2 is out of range for rank 2"),
    "softmax_negative_axis": ("softmax", [X], [Y], [-1], [], InvalidArgumentError, "axis -1 is out of range"),
    "layer_norm_scale": ("layer_norm", [X, np.ones(2, F32)], [Y], [1], [1e-5], InvalidArgumentError,
                         r"Scale dims \[2\] do not broadcast to the normalized dims \[3\]"),
    "layer_norm_epsilon": ("layer_norm", [X, np.ones(3, F32)], [Y], [1], [-1.0], InvalidArgumentError, "epsilon"),
    "reduce_unknown_op": ("reduce", [X, np.array([1], I64)], [np.empty(2, F32)], [10], [], InvalidArgumentError,
                          "unknown reduce op 10"),
    "reduce_axis_range": ("reduce", [X, np.array([2], I64)], [np.empty(2, F32)], [0], [], InvalidArgumentError,
                          "axis 2 is out of range"),
    "reduce_axis_twice": ("reduce", [X, np.array([1, 1], I64)], [np.empty(2, F32)], [0], [], InvalidArgumentError,
                          "axis 1 is listed twice"),
    "reduce_axes_dtype": ("reduce", [X, np.array([1], I32)], [np.empty(2, F32)], [0], [], UNSUPPORTED,
                          "axes.* expected INT64"),
    "reduce_output_rank": ("reduce", [X, np.array([1], I64)], [np.empty((1, 1, 1), F32)], [0], [],
                           InvalidArgumentError, "output 0 has rank 3, expected 2 \\(keepdims\\) or 1"),
    "reduce_mean_int": ("reduce", [np.ones((2, 3), I64), np.array([1], I64)], [np.empty(2, I64)],
                        [REDUCE["MEAN"]], [], UNSUPPORTED, "reduce op MEAN does not support dtype INT64"),
    "transpose_not_perm": ("transpose", [X, np.array([0, 0], I64)], [Y], [], [], InvalidArgumentError,
                           r"perm \[0, 0\] is not a permutation"),
    "transpose_perm_length": ("transpose", [X, np.array([0], I64)], [Y], [], [], InvalidArgumentError,
                              "perm has 1 entries for input rank 2"),
    "concat_mismatch": ("concat", [X, np.ones((2, 4), F32)], [np.empty((4, 3), F32)], [0], [], InvalidArgumentError,
                        r"input 1 dims \[2, 4\] differ from input 0 dims \[2, 3\] outside axis 0"),
    "concat_dtype": ("concat", [X, np.ones((2, 3), I64)], [np.empty((4, 3), F32)], [0], [], InvalidArgumentError,
                     "input 1 has dtype INT64"),
    "slice_zero_step": ("slice", [X, np.array([0, 0], I64), np.array([1, 0], I64)], [Y], [], [], InvalidArgumentError,
                        "step is 0 on axis 1"),
    "slice_out_of_range": ("slice", [X, np.array([0, 2], I64), np.array([1, 1], I64)], [Y], [], [],
                           InvalidArgumentError, "start 2, step 1 and count 3 on axis 1 leave the input dim 3"),
    "slice_start_length": ("slice", [X, np.array([0], I64), np.array([1, 1], I64)], [Y], [], [],
                           InvalidArgumentError, "starts and steps have 1 and 2 entries for input rank 2"),
    "gather_index_range": ("gather", [X, np.array([2], I64)], [np.empty((1, 3), F32)], [0], [], InvalidArgumentError,
                           "index 2 at position 0 is out of range for axis 0 of size 2"),
    "gather_negative_range": ("gather", [X, np.array([-3], I32)], [np.empty((1, 3), F32)], [0], [],
                              InvalidArgumentError, "index -3 .* out of range"),
    "gather_index_dtype": ("gather", [X, np.array([1], F32)], [np.empty((1, 3), F32)], [0], [], UNSUPPORTED,
                           "indices.* expected INT32 or INT64"),
    "expand_not_broadcast": ("expand", [np.ones((2,), F32)], [Y], [], [], InvalidArgumentError,
                             r"input dims \[2\] do not broadcast to output dims \[2, 3\]"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_error_paths(state, case):
    kernel, inputs, outputs, ints, floats, exc, message = ERROR_CASES[case]
    with pytest.raises(RuntimeError if exc is UNSUPPORTED else exc,
                       match=rf"^hipdnn_ep_kernel_{kernel}: .*{message}") as info:
        call_raw(state, kernel, inputs, outputs, ints, floats)
    if exc is UNSUPPORTED:
        assert not isinstance(info.value, InvalidArgumentError)


# ---------------------------------------------------------------- element types: the manifest's rules

def _dtype_code(array):
    return DTYPE[array.dtype.name.upper()]  # numpy's names are the manifest's, lower-case


def _retyped(inputs, outputs, index, dtype):
    """good_call's arrays with input `index` in `dtype`; for input 0 also every array that shares its dtype
    (the same-type operands and the output), as a well-typed call of that dtype would have them."""
    code = _dtype_code(inputs[index])
    ones = [a.astype(dtype) if (i == index or (index == 0 and _dtype_code(a) == code)) else a
            for i, a in enumerate(inputs)]
    with np.errstate(over="ignore", invalid="ignore"):  # outputs from np.empty hold garbage that may not fit
        outs = [o.astype(dtype) if index == 0 and _dtype_code(o) == code else o for o in outputs]
    return ones, outs


def _dtype_rule_cases():
    """(kernel, op, input, dtype name, accepted) for every rule the manifest states, and every dtype."""
    names = sorted(DTYPE, key=DTYPE.get)
    for name, fn in sorted(KERNELS.items()):
        kernel = name.removeprefix("hipdnn_ep_kernel_")
        table = fn["dtypes"]
        ops = list(ENUMS[fn["op_enum"]]) if fn["op_enum"] else [None]
        if table:
            for op in ops:
                accepted = table.get(op, table.get("default"))
                yield from ((kernel, op, 0, d, d in accepted) for d in names)
        for index, accepted in fn["input_dtypes"].items():
            yield from ((kernel, ops[0], int(index), d, d in accepted) for d in names)


NUMPY_OF = {"FLOAT32": F32, "UINT8": np.uint8, "INT8": np.int8, "INT32": I32, "INT64": I64, "BOOL": BOOL,
            "FLOAT16": F16, "FLOAT64": np.float64, "INT16": np.int16, "UINT16": np.uint16, "UINT32": np.uint32,
            "UINT64": np.uint64}


@pytest.mark.parametrize("kernel,op,index,dtype,accepted", list(_dtype_rule_cases()))
def test_kernels_accept_exactly_the_manifest_dtypes(state, kernel, op, index, dtype, accepted):
    """The runtime's validation follows the manifest's dtypes tables (the compiler reads the same tables)."""
    inputs, outputs, ints, floats = good_call(kernel)
    fn = KERNELS["hipdnn_ep_kernel_" + kernel]
    if op is not None:
        ints = list(ints)
        ints[fn["int_attrs"].index("op")] = ENUMS[fn["op_enum"]][op]
    inputs, outputs = _retyped(inputs, outputs, index, NUMPY_OF[dtype])
    if (kernel == "binary" and op in ("EQUAL", "LESS", "GREATER", "GREATER_OR_EQUAL", "LESS_OR_EQUAL", "AND", "OR",
                                      "XOR")) or (kernel == "unary" and op == "IS_NAN"):
        outputs = [o.astype(BOOL) for o in outputs]
    if kernel == "range":  # input 0 is the (start, delta) parameter; the output keeps its INT64
        outputs = [o.astype(I64) for o in outputs]
    if kernel == "conv_integer" and index == 1:  # w_zero_point has W's dtype
        inputs[3] = inputs[3].astype(NUMPY_OF[dtype])
    if kernel == "dequantize_linear" and index == 1:  # the output has the scale's dtype
        outputs = [o.astype(NUMPY_OF[dtype]) for o in outputs]
    if accepted:
        call_raw(state, kernel, inputs, outputs, ints, floats)
        return
    with pytest.raises(RuntimeError, match=rf"^hipdnn_ep_kernel_{kernel}: .*{dtype}") as info:
        call_raw(state, kernel, inputs, outputs, ints, floats)
    assert not isinstance(info.value, InvalidArgumentError)


def test_gather_checks_every_index_before_writing(state):
    out = np.full((2, 3), 5.0, F32)
    with pytest.raises(InvalidArgumentError, match="index 9 at position 1"):
        call_raw(state, "gather", [X, np.array([0, 9], I64)], [out], [0])
    assert np.all(out == 5.0)


# ---------------------------------------------------------------- the raw C ABI (ctypes)

_CTYPES = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32,
           "uint32_t": ctypes.c_uint32}


def _struct(name):
    """A ctypes Structure with the manifest's layout of struct `name` (pointers as void*)."""
    spec = next(s for s in MANIFEST["structs"] if s["name"] == name)
    fields = [(f["name"], ctypes.c_void_p if f["type"].endswith("*") else _CTYPES[f["type"]]) for f in spec["fields"]]
    cls = type(name, (ctypes.Structure,), {"_fields_": fields})
    assert ctypes.sizeof(cls) == spec["size"]
    for f in spec["fields"]:
        assert getattr(cls, f["name"]).offset == f["offset"]
    return cls


class RawAbi:
    TensorRef = _struct("hipdnn_ep_tensor_ref_t")
    Args = _struct("hipdnn_ep_kernel_args_t")

    def __init__(self):
        lib = ctypes.CDLL(rt.library_path())
        lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
        lib.hipdnn_ep_state_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.hipdnn_ep_state_destroy.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.keep = []

    def kernel(self, name):
        fn = getattr(self.lib, "hipdnn_ep_kernel_" + name)
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        return fn

    def ref(self, array, dtype_code=None, rank=None, dims=None, data="array"):
        dims_arr = (ctypes.c_int64 * max(array.ndim, 1))(*(dims if dims is not None else array.shape))
        self.keep += [array, dims_arr]
        return self.TensorRef(array.ctypes.data if data == "array" else data, ctypes.addressof(dims_arr),
                              array.ndim if rank is None else rank,
                              DTYPE["FLOAT32"] if dtype_code is None else dtype_code)

    def args(self, in_refs, out_refs, ints=(), floats=(), **override):
        """Address of a kernel args struct; keyword arguments overwrite its fields."""
        ins = (self.TensorRef * max(len(in_refs), 1))(*in_refs)
        outs = (self.TensorRef * max(len(out_refs), 1))(*out_refs)
        ia = (ctypes.c_int64 * max(len(ints), 1))(*ints)
        fa = (ctypes.c_double * max(len(floats), 1))(*floats)
        self.keep += [ins, outs, ia, fa]
        a = self.Args(ctypes.sizeof(self.Args), ctypes.addressof(ins), ctypes.addressof(outs), ctypes.addressof(ia),
                      ctypes.addressof(fa), len(in_refs), len(out_refs), len(ints), len(floats))
        for k, v in override.items():
            setattr(a, k, v)
        self.keep.append(a)
        return ctypes.addressof(a)


@pytest.fixture()
def raw():
    abi = RawAbi()
    ptr = ctypes.c_void_p()
    assert abi.lib.hipdnn_ep_state_create(None, ctypes.byref(ptr)) == STATUS["OK"]
    abi.state = ptr.value
    yield abi
    abi.lib.hipdnn_ep_state_destroy(ptr)


def _expect(raw, rc, status, message):
    assert rc == STATUS[status]
    text = raw.lib.hipdnn_ep_last_error().decode()
    assert text.startswith("hipdnn_ep_kernel_unary: ") and message in text, text


def _unary_args(raw, x_ref=None, y_ref=None, **override):
    x = np.ones((2, 3), F32)
    y = np.empty((2, 3), F32)
    return raw.args([x_ref or raw.ref(x)], [y_ref or raw.ref(y)], [UNARY["NEG"]], **override)


def test_raw_good_call_works(raw):
    x = -np.arange(6, dtype=F32).reshape(2, 3)
    y = np.empty_like(x)
    args = raw.args([raw.ref(x)], [raw.ref(y)], [UNARY["NEG"]])
    assert raw.kernel("unary")(raw.state, args) == STATUS["OK"]
    np.testing.assert_array_equal(y, -x)


def test_raw_null_args_and_state(raw):
    _expect(raw, raw.kernel("unary")(raw.state, None), "INVALID_ARGUMENT", "args is NULL")
    _expect(raw, raw.kernel("unary")(None, _unary_args(raw)), "INVALID_ARGUMENT", "state is NULL")


def test_raw_short_struct(raw):
    rc = raw.kernel("unary")(raw.state, _unary_args(raw, struct_size=8))
    _expect(raw, rc, "INVALID_ARGUMENT", "struct_size is 8, expected at least 56")


@pytest.mark.parametrize("field,message", [("inputs", "inputs is NULL"), ("outputs", "outputs is NULL"),
                                           ("int_attrs", "int_attrs is NULL")])
def test_raw_null_arrays(raw, field, message):
    _expect(raw, raw.kernel("unary")(raw.state, _unary_args(raw, **{field: None})), "INVALID_ARGUMENT", message)


def test_raw_null_float_attrs(raw):
    x = np.ones((2, 3), F32)
    args = raw.args([raw.ref(x), raw.ref(np.ones(3, F32))], [raw.ref(np.empty((2, 3), F32))], [1], [1e-5],
                    float_attrs=None)
    rc = raw.kernel("layer_norm")(raw.state, args)
    assert rc == STATUS["INVALID_ARGUMENT"]
    assert raw.lib.hipdnn_ep_last_error().decode() == "hipdnn_ep_kernel_layer_norm: float_attrs is NULL"


def test_raw_bad_tensor_refs(raw):
    x = np.ones((2, 3), F32)
    unary = raw.kernel("unary")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, data=None))), "INVALID_ARGUMENT",
            "input 0 has [2, 3] elements but data is NULL")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, data=None, rank=-1))), "INVALID_ARGUMENT",
            "input 0 is absent but required")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, dims=[2, -3]))), "INVALID_ARGUMENT",
            "input 0 has negative dim -3 at axis 1")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, rank=1000))), "INVALID_ARGUMENT",
            "input 0 has rank 1000")
    _expect(raw, unary(raw.state, _unary_args(raw, y_ref=raw.ref(x, dtype_code=42))), "UNSUPPORTED",
            "output 0 has unknown dtype 42")
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=raw.ref(x, dims=[1 << 62, 8]))), "INVALID_ARGUMENT",
            "overflow")
    bad_dims = raw.TensorRef(x.ctypes.data, None, 2, DTYPE["FLOAT32"])
    _expect(raw, unary(raw.state, _unary_args(raw, x_ref=bad_dims)), "INVALID_ARGUMENT", "dims is NULL")


def test_raw_empty_tensor_may_have_null_data(raw):
    x = np.ones((0, 3), F32)
    args = raw.args([raw.ref(x, data=None)], [raw.ref(x, data=None)], [UNARY["NEG"]])
    assert raw.kernel("unary")(raw.state, args) == STATUS["OK"]


# ---------------------------------------------------------------- bitwise ops, TopK

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


def top_k(state, x, k, axis, largest=1, sorted_=1, values_shape=None, indices_dtype=I64):
    shape = list(x.shape)
    shape[axis] = k
    values = np.full(values_shape or shape, 77, dtype=x.dtype)
    indices = np.full(shape, 77, dtype=indices_dtype)
    _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [np.array(x, order="C")], [values, indices],
                      [axis, largest, sorted_], [])
    return values, indices


def top_k_ref(x, k, axis, largest):
    """Best first, equal values in index order, NaN larger than any number."""
    moved = np.moveaxis(x, axis, -1)
    if np.issubdtype(x.dtype, np.floating):
        nan = np.isnan(moved).astype(np.int64)
        val = np.where(nan == 1, 0, moved).astype(np.float64)
        order = np.lexsort((-val, -nan) if largest else (val, nan), axis=-1)
    else:
        key = moved.astype(np.int64)
        order = np.argsort(-key if largest else key, axis=-1, kind="stable")
    idx = order[..., :k]
    return np.moveaxis(np.take_along_axis(moved, idx, -1), -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("largest", [0, 1])
def test_top_k(state, dtype, axis, largest):
    x = np.round(rand((4, 9, 5), dtype, low=-3, high=3)).astype(dtype)  # ties
    if np.issubdtype(dtype, np.floating):
        x.flat[::7] = np.nan
    for k in (0, 1, 3, x.shape[axis]):
        values, indices = top_k(state, x, k, axis, largest)
        want_v, want_i = top_k_ref(x, k, axis, largest)
        np.testing.assert_array_equal(indices, want_i)
        np.testing.assert_array_equal(values, want_v)


def test_top_k_checks_its_arguments(state):
    x = np.ones((2, 4), F32)
    with pytest.raises(InvalidArgumentError, match=r"k is 5 but axis 1 of input dims \[2, 4\] has only 4 elements"):
        top_k(state, x, 5, 1)
    with pytest.raises(InvalidArgumentError, match="axis 2 is out of range for rank 2"):
        _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [x], [np.ones((2, 4), F32), np.ones((2, 4), I64)],
                          [2, 1, 1], [])
    with pytest.raises(InvalidArgumentError, match="largest and sorted must be 0 or 1, got 2"):
        top_k(state, x, 2, 1, largest=2)
    with pytest.raises(InvalidArgumentError, match="output 1 \\(indices\\) has dtype INT32, expected INT64"):
        top_k(state, x, 2, 1, indices_dtype=I32)
    with pytest.raises(InvalidArgumentError, match=r"output 1 has dims \[2, 2\], expected \[2, 3\]"):
        top_k(state, x, 2, 1, values_shape=[2, 3])
    with pytest.raises(InvalidArgumentError, match="expected 2 outputs, got 1"):
        _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [x], [np.ones((2, 2), F32)], [1, 1, 1], [])
    with pytest.raises(RuntimeError, match="top_k does not support dtype BOOL"):
        top_k(state, np.ones((2, 4), BOOL), 2, 1)
    with pytest.raises(InvalidArgumentError, match="TopK needs at least 1"):
        _core.call_kernel(state, "hipdnn_ep_kernel_top_k", [np.ones((), F32)], [np.ones((), F32), np.ones((), I64)],
                          [0, 1, 1], [])
