"""The integer element types of ABI 1.3 on the GPU kernels (cuda/hip backends) against the CPU backend,
exactly: INT16, UINT16, UINT32, UINT64 wherever INT32/INT64 are accepted, INT8/UINT8 arithmetic and
comparisons, integer Pow (test_cpu_int_types.py checks the CPU results against numpy).

Run with ``pytest --gpu=auto`` (skipped when the runtime has no GPU backend or no GPU answers).
"""

from __future__ import annotations

import pytest
from gpu_util import BINARY, REDUCE, UNARY, run_both, to_device
from kernel_util import full_range

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = pytest.mark.gpu

I8, U8, I16, U16, I32, U32, I64, U64 = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                        np.uint64)
BOOL, F32, F16, F64 = np.bool_, np.float32, np.float16, np.float64
NEW = [I16, U16, U32, U64]
SMALL = [I8, U8]
UNSIGNED = [U8, U16, U32, U64]
SHAPES = [((7,), (7,)), ((4, 1, 6), (3, 1)), ((), (5, 2)), ((0, 3), (1, 3)), ((1000, 33), (33,))]


def compare(cpu, gpu, dev, kernel, inputs, out_shape, out_dtype=None, ints=(), n_out=1, out_dtypes=None):
    """Runs the kernel on both states; the GPU outputs must equal the CPU ones."""
    dtypes = out_dtypes or [out_dtype if out_dtype is not None else np.asarray(inputs[0]).dtype] * n_out
    got, expected = run_both(cpu, gpu, dev, kernel, inputs, [(out_shape, d) for d in dtypes], ints)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e, err_msg=f"{kernel} {list(ints)}")


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MOD", "FMOD", "MIN", "MAX", "EQUAL", "LESS", "GREATER",
                                "GREATER_OR_EQUAL", "LESS_OR_EQUAL"])
def test_binary(cpu, gpu, dev, op, dtype):
    compare_op = op in ("EQUAL", "LESS", "GREATER", "GREATER_OR_EQUAL", "LESS_OR_EQUAL")
    for k, (sa, sb) in enumerate(SHAPES):
        a, b = full_range(sa, dtype, 2 * k), full_range(sb, dtype, 2 * k + 1)
        if op in ("DIV", "MOD", "FMOD"):
            b[b == 0] = 3
        compare(cpu, gpu, dev, "binary", [a, b], np.broadcast_shapes(sa, sb), BOOL if compare_op else None,
                [BINARY[op]])


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unsigned_division_by_the_all_ones_value(cpu, gpu, dev, dtype):
    m = np.iinfo(dtype).max
    for op in ("DIV", "MOD"):
        compare(cpu, gpu, dev, "binary", [np.array([5, m, 0], dtype), np.array([m, m, m], dtype)], (3,),
                ints=[BINARY[op]])


@pytest.mark.parametrize("dtype", NEW + SMALL)
def test_integer_division_by_zero_is_an_error(gpu, dev, dtype):
    a, b = to_device(dev, np.arange(4, dtype=dtype)), to_device(dev, np.array([1, 0, 2, 3], dtype))
    out = to_device(dev, np.zeros(4, dtype))
    with pytest.raises(rt.InvalidArgumentError, match="integer division by zero"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_binary", [a, b], [out], [BINARY["DIV"]], [])


@pytest.mark.parametrize("dtype", [I32, I64])
def test_binary_pow_integers(cpu, gpu, dev, dtype):
    a = np.array([2, 3, -2, -3, 0, 0, 5, 1, -1, 2, 10, 2, -2, 7], dtype)
    b = np.array([10, 4, 3, 2, 0, 3, -1, -7, -3, 0, 3, 200, 201, 2], dtype)
    compare(cpu, gpu, dev, "binary", [a, b], a.shape, ints=[BINARY["POW"]])
    compare(cpu, gpu, dev, "binary", [full_range((50,), dtype, 1) % 7, np.abs(full_range((50,), dtype, 2) % 9)], (50,),
            ints=[BINARY["POW"]])


def test_binary_pow_float64(cpu, gpu, dev):
    a = np.abs(np.random.default_rng(0).standard_normal((3, 40))) * 10
    b = np.random.default_rng(1).uniform(-3, 3, (40,))
    b[:5] = [0.5, 2.0, 3.0, 0.0, -1.0]
    inputs = [a, b]
    expected = np.full((3, 40), 77.0)
    _core.call_kernel(cpu, "hipdnn_ep_kernel_binary", inputs, [expected], [BINARY["POW"]], [])
    out = to_device(dev, np.full((3, 40), 77.0))
    _core.call_kernel(gpu, "hipdnn_ep_kernel_binary", [to_device(dev, x) for x in inputs], [out], [BINARY["POW"]], [])
    np.testing.assert_allclose(dev.to_host(out), expected, rtol=1e-15, atol=0)  # device pow: within 1 ulp


@pytest.mark.parametrize("dtype", NEW)
@pytest.mark.parametrize("op", ["BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "SHIFT_LEFT", "SHIFT_RIGHT"])
def test_binary_bitwise(cpu, gpu, dev, op, dtype):
    width = np.dtype(dtype).itemsize * 8
    for k, (sa, sb) in enumerate(SHAPES):
        a, b = full_range(sa, dtype, 2 * k), full_range(sb, dtype, 2 * k + 1)
        if op.startswith("SHIFT"):
            lo = -3 if np.issubdtype(dtype, np.signedinteger) else 0
            b = np.random.default_rng(k).integers(lo, width + 3, size=sb).astype(dtype)
        compare(cpu, gpu, dev, "binary", [a, b], np.broadcast_shapes(sa, sb), None, [BINARY[op]])


@pytest.mark.parametrize("dtype", NEW + SMALL)
def test_unary(cpu, gpu, dev, dtype):
    ops = ["ABS", "SIGN"] + (["NEG", "RELU"] if dtype in (I8, I16) else [])
    ops += ["BITWISE_NOT"] if dtype in NEW else []
    for op in ops:
        compare(cpu, gpu, dev, "unary", [full_range((3, 257), dtype, 0)], (3, 257), ints=[UNARY[op]])


ALL = [F32, U8, I8, I32, I64, BOOL, F16, F64, I16, U16, U32, U64]


@pytest.mark.parametrize("dst", NEW)
def test_cast_to_and_from_every_type(cpu, gpu, dev, dst):
    for src in ALL:
        x = np.array([[0, 1, 2, 100], [7, 0, 127, 3]]).astype(src)
        compare(cpu, gpu, dev, "cast", [x], x.shape, dst)
        y = full_range((64,), dst, 3)
        compare(cpu, gpu, dev, "cast", [y], y.shape, src)
    f = np.array([-2.7, 2.7, 1e30, -1e30, np.nan, 65535.5, 4294967296.0], F64)  # saturation, NaN -> 0
    compare(cpu, gpu, dev, "cast", [f], f.shape, dst)


@pytest.mark.parametrize("dtype", NEW)
def test_where_and_data_movement(cpu, gpu, dev, dtype):
    c = np.array([[True], [False]])
    x, y = full_range((2, 5), dtype, 1), full_range((5,), dtype, 2)
    compare(cpu, gpu, dev, "where", [c, x, y], (2, 5), dtype)
    t = full_range((2, 3, 4), dtype, 3)
    compare(cpu, gpu, dev, "transpose", [t, np.array([2, 0, 1], I64)], (4, 2, 3))
    compare(cpu, gpu, dev, "concat", [t, t], (2, 6, 4), ints=[1])
    compare(cpu, gpu, dev, "gather", [t, np.array([2, 0], I64)], (2, 2, 4), ints=[1])
    compare(cpu, gpu, dev, "expand", [t[:, :1]], (2, 3, 4))
    compare(cpu, gpu, dev, "slice", [t, np.array([0, 1, 3], I64), np.array([1, 1, -1], I64)], (2, 2, 2))


@pytest.mark.parametrize("dtype", NEW + SMALL)
@pytest.mark.parametrize("op", ["SUM", "PROD", "MAX", "MIN", "L1", "SUM_SQUARE"])
def test_reduce(cpu, gpu, dev, op, dtype):
    for shape, axes, out in [((3, 7, 2), [1], (3, 2)), ((4, 300), [1], (4,)), ((2, 0), [1], (2,)),
                             ((5, 3), [0, 1], ())]:
        compare(cpu, gpu, dev, "reduce", [full_range(shape, dtype, 4), np.array(axes, I64)], out, ints=[REDUCE[op]])


@pytest.mark.parametrize("dtype", NEW + SMALL)
def test_cumsum_arg_reduce_top_k(cpu, gpu, dev, dtype):
    x = full_range((3, 40), dtype, 5)
    for exclusive, reverse in [(0, 0), (1, 1)]:
        compare(cpu, gpu, dev, "cumsum", [x], x.shape, ints=[1, exclusive, reverse])
    for is_min, last in [(0, 0), (1, 1)]:
        compare(cpu, gpu, dev, "arg_reduce", [x], (3,), I64, ints=[1, last, is_min])
    for largest in (0, 1):
        compare(cpu, gpu, dev, "top_k", [x], (3, 5), ints=[1, largest, 1], out_dtypes=[x.dtype, I64])
