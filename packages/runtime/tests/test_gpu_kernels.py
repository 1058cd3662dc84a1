"""The GPU kernels (cuda/hip backends) against the CPU backend, on fixed and varying shapes.

Each case runs one kernel twice: on a cpu State over numpy arrays (the reference) and on a GPU
State over device arrays (torch or cupy, passed zero-copy through DLPack; the parameter tensors
the kernels read on the host stay numpy). Outputs start as garbage the kernel must overwrite.

Tolerances (GPU vs CPU, per op family and dtype; `rtol`, `atol` elementwise):

- exact: data movement (transpose, concat, slice, gather, expand, where), cast, integer and
  comparison ops, relu/neg, reduce max, and float add/sub/mul/div (IEEE operations both sides);
- transcendental unary ops, pow: float32 2e-6 / 1e-6 (device libm within 2 ulp); float16 one
  half ulp (1e-3 / 1e-3) since both round a float result to half;
- softmax, layer_norm: float32 1e-5 / 1e-6; float16 2e-3 / 2e-3;
- reduce sum/mean (double accumulation on both): float32 1e-6 / 1e-6; float16 1e-3 / 1e-3;
- matmul, gemm (float32 accumulation in a different order; no TF32): float32 1e-4 / 1e-4 (K up
  to 768) and relative Frobenius error under 1e-6; float16 2e-3 / 2e-3 and relative error under 1e-3.

Run with ``pytest --gpu=auto`` (the default: skipped when the runtime has no GPU backend or no
GPU answers), ``--gpu=cuda`` to require one, ``--gpu=none`` to skip.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import rand
from gpu_util import BINARY, REDUCE, UNARY, run_both

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = pytest.mark.gpu

F32, F16, I32, I64, BOOL = np.float32, np.float16, np.int32, np.int64, np.bool_
FLOATS = [F32, F16]
EXACT = (0.0, 0.0)


def i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def compare(cpu, gpu, dev, kernel, inputs, out_shape, out_dtype=None, ints=(), floats=(), tol=EXACT):
    """Runs the kernel on both states; asserts the GPU output matches the CPU one within tol."""
    dtype = out_dtype if out_dtype is not None else np.asarray(inputs[0]).dtype
    (actual,), (expected,) = run_both(cpu, gpu, dev, kernel, inputs, [(out_shape, dtype)], ints, floats)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    rtol, atol = tol
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(actual, expected, err_msg=f"{kernel} {ints}")
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{kernel} {ints}")
    return actual, expected


def relative_error(actual, expected) -> float:
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return float(np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30))


# ---------------------------------------------------------------- elementwise

BROADCAST_SHAPES = [((7,), (7,)), ((2, 3, 5), (2, 3, 5)), ((4, 1, 6), (3, 1)), ((), (5, 2)),
                    ((2, 1, 3, 1, 4), (1, 5, 1, 2, 1)), ((0, 3), (1, 3)), ((1000, 33), (33,))]


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "EQUAL", "LESS", "GREATER"])
def test_binary(cpu, gpu, dev, op, dtype):
    for k, (sa, sb) in enumerate(BROADCAST_SHAPES):
        a, b = rand(sa, dtype, 2 * k), rand(sb, dtype, 2 * k + 1)
        if op == "DIV" and np.issubdtype(dtype, np.integer):
            b[b == 0] = 3
        if op == "DIV" and np.dtype(dtype) == F16:
            b[np.abs(b) < 0.1] = 0.5
        out = np.broadcast_shapes(sa, sb)
        cmp = op in ("EQUAL", "LESS", "GREATER")
        compare(cpu, gpu, dev, "binary", [a, b], out, BOOL if cmp else None, [BINARY[op]])


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_silu_mul(cpu, gpu, dev, dtype):
    """A * sigmoid(A) * B over the broadcast shapes (dense and strided launches), large |A| included."""
    for k, (sa, sb) in enumerate(BROADCAST_SHAPES):
        a, b = rand(sa, dtype, 2 * k, -12, 12), rand(sb, dtype, 2 * k + 1)
        compare(cpu, gpu, dev, "binary", [a, b], np.broadcast_shapes(sa, sb), ints=[BINARY["SILU_MUL"]],
                tol=(2e-6, 1e-6) if dtype == F32 else (1e-3, 1e-3))


def test_binary_pow_and_bool_equal(cpu, gpu, dev):
    for dtype in FLOATS:
        tol = (2e-6, 1e-6) if dtype == F32 else (1e-3, 1e-3)
        compare(cpu, gpu, dev, "binary", [rand((3, 8), dtype, 1, 0.1, 2.0), rand((8,), dtype, 2, -2, 2)], (3, 8),
                ints=[BINARY["POW"]], tol=tol)
    compare(cpu, gpu, dev, "binary", [rand((4, 5), BOOL, 3), rand((5,), BOOL, 4)], (4, 5), ints=[BINARY["EQUAL"]])


def test_integer_division_by_zero_is_an_error(gpu, dev):
    a, b = dev.to_device(np.arange(6, dtype=np.int32)), dev.to_device(np.array([1, 0, 2, 3, 4, 5], np.int32))
    out = dev.to_device(np.zeros(6, np.int32))
    with pytest.raises(rt.InvalidArgumentError, match="integer division by zero"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_binary", [a, b], [out], [BINARY["DIV"]], [])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", [op for op in UNARY if op not in ("NOT", "IS_NAN", "BITWISE_NOT")])  # below
def test_unary(cpu, gpu, dev, op, dtype):
    low = 0.01 if op in ("LOG", "SQRT") else -4.0
    exact = op in ("RELU", "NEG", "ABS", "FLOOR", "CEIL", "SIGN", "ROUND")
    tol = EXACT if exact else (2e-6, 1e-6) if dtype == F32 else (1e-3, 1e-3)
    for k, shape in enumerate([(1,), (17, 3), (4096 + 5,), (0, 2)]):
        compare(cpu, gpu, dev, "unary", [rand(shape, dtype, k, low, 4.0)], shape, ints=[UNARY[op]], tol=tol)


@pytest.mark.parametrize("dtype", [F32, F16, I32])
def test_unary_vectors_and_their_tail(cpu, gpu, dev, dtype):
    # 16-byte vectors where both pointers are aligned, the elements past the last whole vector one per thread;
    # an operand one element into its buffer is not aligned and takes the scalar kernel
    op = "NEG" if dtype == I32 else "GELU_ERF"
    tol = EXACT if dtype == I32 else (2e-6, 1e-6) if dtype == F32 else (1e-3, 1e-3)
    for n in (7, 8, 9, 15, 16, 17, 31, 33, 1000, 3 * 1024 * 8 + 5):
        compare(cpu, gpu, dev, "unary", [rand((n,), dtype, n, -4, 4)], (n,), ints=[UNARY[op]], tol=tol)
    x = rand((65,), dtype, 3, -4, 4)
    expected = np.full(64, 77, dtype)
    _core.call_kernel(cpu, "hipdnn_ep_kernel_unary", [x[1:].copy()], [expected], [UNARY[op]], [])
    dx, dy = dev.to_device(x), dev.to_device(np.full(65, 77, dtype))
    _core.call_kernel(gpu, "hipdnn_ep_kernel_unary", [dx[1:]], [dy[1:]], [UNARY[op]], [])
    got = dev.to_host(dy)
    assert got[0] == 77  # nothing written before the view
    np.testing.assert_allclose(got[1:].astype(F32), expected.astype(F32), rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("dtype", [I32, I64])
def test_unary_integers(cpu, gpu, dev, dtype):
    x = rand((9, 4), dtype, 5, -100, 100)
    x.flat[0] = np.iinfo(dtype).min  # negation wraps
    for op in ("RELU", "NEG", "ABS", "SIGN"):
        compare(cpu, gpu, dev, "unary", [x], x.shape, ints=[UNARY[op]])


# ---------------------------------------------------------------- ABI 1.3: mask and shape ops

@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", ["GREATER_OR_EQUAL", "LESS_OR_EQUAL", "MIN", "MAX", "FMOD"])
def test_binary_mask_ops(cpu, gpu, dev, op, dtype):
    for k, (sa, sb) in enumerate(BROADCAST_SHAPES):
        a, b = rand(sa, dtype, 2 * k), rand(sb, dtype, 2 * k + 1)
        if op == "FMOD":
            b[np.abs(b) < 0.5] = 3  # no zero divisors
        cmp = op.endswith("_EQUAL")
        tol = (1e-3, 1e-3) if op == "FMOD" and np.dtype(dtype) == F16 else EXACT
        compare(cpu, gpu, dev, "binary", [a, b], np.broadcast_shapes(sa, sb), BOOL if cmp else None, [BINARY[op]],
                tol=tol)


@pytest.mark.parametrize("dtype", [I32, I64])
def test_binary_integer_mod(cpu, gpu, dev, dtype):
    a = np.array([7, -7, 7, -7, 0, np.iinfo(dtype).min], dtype)
    b = np.array([3, 3, -3, -3, 5, -1], dtype)
    for op in ("MOD", "FMOD"):
        compare(cpu, gpu, dev, "binary", [a, b], (6,), ints=[BINARY[op]])


def test_binary_logic_and_not(cpu, gpu, dev):
    for op in ("AND", "OR", "XOR"):
        compare(cpu, gpu, dev, "binary", [rand((4, 1, 5), BOOL, 1), rand((3, 5), BOOL, 2)], (4, 3, 5),
                ints=[BINARY[op]])
    compare(cpu, gpu, dev, "unary", [rand((17, 3), BOOL, 3)], (17, 3), ints=[UNARY["NOT"]])
    for dtype in FLOATS:
        x = rand((64,), dtype, 4)
        x[::3] = np.nan
        compare(cpu, gpu, dev, "unary", [x], x.shape, BOOL, ints=[UNARY["IS_NAN"]])


@pytest.mark.parametrize("index_dtype", [I32, I64])
def test_gather_elements(cpu, gpu, dev, index_dtype):
    data = rand((6, 33, 5), F32, 1)
    for axis in range(3):
        shape = [4, 20, 3]
        idx = np.random.default_rng(axis).integers(-data.shape[axis], data.shape[axis], size=shape).astype(index_dtype)
        compare(cpu, gpu, dev, "gather_elements", [data, idx], tuple(shape), ints=[axis])


def test_gather_elements_index_out_of_range_names_it(gpu, dev):
    out = dev.to_device(np.zeros((1, 2), F32))
    with pytest.raises(rt.InvalidArgumentError, match="hipdnn_ep_kernel_gather_elements: index 4 at position 1"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_gather_elements",
                          [dev.to_device(np.ones((2, 3), F32)), dev.to_device(np.array([[0, 4]], I64))], [out], [1], [])


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
def test_cumsum(cpu, gpu, dev, dtype):
    x = rand((3, 300, 4), dtype, 1, -4, 4)
    tol = EXACT if np.issubdtype(dtype, np.integer) else (1e-5, 1e-5) if dtype == F32 else (2e-3, 2e-3)
    for axis, exclusive, reverse in itertools.product(range(3), (0, 1), (0, 1)):
        compare(cpu, gpu, dev, "cumsum", [x], x.shape, ints=[axis, exclusive, reverse], tol=tol)


@pytest.mark.parametrize("dtype", [F32, F16, BOOL])
def test_trilu(cpu, gpu, dev, dtype):
    x = rand((3, 37, 41), dtype, 2)
    for upper, k in itertools.product((0, 1), (-5, 0, 3)):
        compare(cpu, gpu, dev, "trilu", [x, i64([k])], x.shape, ints=[upper])


def test_range_and_fill(cpu, gpu, dev):
    for dtype in (I32, I64):
        for start, delta, n in ((0, 1, 5000), (10, -3, 4), (3, 0, 0)):
            compare(cpu, gpu, dev, "range", [i64([start, delta])], (n,), dtype)
    for dtype in ALL_DTYPES:
        value = np.array([1], dtype)
        bits = int.from_bytes(value.tobytes().ljust(8, b"\0"), "little", signed=True)
        out = dev.to_device(np.zeros((33, 7), dtype))
        _core.call_kernel(gpu, "hipdnn_ep_kernel_fill", [], [out], [bits], [])
        np.testing.assert_array_equal(dev.to_host(out), np.ones((33, 7), dtype))


ALL_DTYPES = [np.float32, np.uint8, np.int8, np.int32, np.int64, np.bool_, np.float16, np.float64]


def test_cast_every_pair(cpu, gpu, dev):
    for src, dst in itertools.product(ALL_DTYPES, ALL_DTYPES):
        if np.issubdtype(src, np.floating):
            x = rand((64,), src, 1, -300.0, 300.0)
            x[:4] = [np.nan, np.inf, -np.inf, 0.5] if src != np.float16 else [np.nan, np.inf, -np.inf, 0.5]
        else:
            x = rand((64,), src, 1, -300, 300)
        compare(cpu, gpu, dev, "cast", [x], x.shape, dst)


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL, np.int8])
def test_where(cpu, gpu, dev, dtype):
    for k, (sc, sx, sy) in enumerate([((5,), (5,), (5,)), ((3, 1), (1, 4), (3, 4)), ((2, 3, 4), (4,), ())]):
        out = np.broadcast_shapes(sc, sx, sy)
        compare(cpu, gpu, dev, "where", [rand(sc, BOOL, k), rand(sx, dtype, k + 1), rand(sy, dtype, k + 2)], out, dtype)


# ---------------------------------------------------------------- matrix products

MATMUL_SHAPES = [((4, 8), (8, 3)), ((1, 64), (64, 128)), ((3, 5, 16), (16, 7)), ((2, 3, 5, 16), (2, 3, 16, 9)),
                 ((5, 16), (4, 16, 6)), ((2, 1, 4, 8), (1, 3, 8, 5)), ((16,), (16, 5)), ((3, 16), (16,)),
                 ((2, 0, 4), (4, 3)), ((3, 0), (0, 4)), ((128, 768), (768, 768))]


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul(cpu, gpu, dev, dtype):
    for k, (sa, sb) in enumerate(MATMUL_SHAPES):
        a, b = rand(sa, dtype, 2 * k, -1, 1), rand(sb, dtype, 2 * k + 1, -1, 1)
        out = np.matmul(a.astype(F32), b.astype(F32)).shape
        tol = (1e-4, 1e-4) if dtype == F32 else (2e-3, 2e-3)
        actual, expected = compare(cpu, gpu, dev, "matmul", [a, b], out, tol=tol)
        if expected.size:
            assert relative_error(actual, expected) < (1e-6 if dtype == F32 else 1e-3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gemm(cpu, gpu, dev, dtype):
    tol = (1e-5, 1e-5) if dtype == F32 else (2e-3, 2e-3)
    m, n, k = 6, 5, 12
    for ta, tb in itertools.product((0, 1), (0, 1)):
        a = rand((k, m) if ta else (m, k), dtype, ta, -1, 1)
        b = rand((n, k) if tb else (k, n), dtype, tb + 2, -1, 1)
        # C [n] or [1, n] with beta 1 is a linear layer's bias: the GEMM library's bias epilogue adds it
        for c_shape, alpha, beta in [(None, 1.0, 1.0), ((n,), 0.5, 2.0), ((m, 1), 1.5, 0.0), ((m, n), -1.0, 0.25),
                                     ((n,), 0.5, 1.0), ((1, n), 1.0, 1.0)]:
            c = None if c_shape is None else rand(c_shape, dtype, 7, -1, 1)
            compare(cpu, gpu, dev, "gemm", [a, b, c], (m, n), ints=[ta, tb], floats=[alpha, beta], tol=tol)
    # a BERT-base linear layer with its bias (the epilogue at a size the library tiles)
    compare(cpu, gpu, dev, "gemm", [rand((128, 768), dtype, 4, -1, 1), rand((768, 3072), dtype, 5, -1, 1),
                                    rand((3072,), dtype, 6, -1, 1)], (128, 3072), ints=[0, 0], floats=[1.0, 1.0],
            tol=(1e-4, 1e-4) if dtype == F32 else (4e-3, 4e-3))
    # BERT-base's FFN down-projection at batch 8 with its bias: on an H100 the heuristic's first algorithm is
    # not the fastest, so the first call times the candidates on its own output before it runs (C written,
    # not read: beta 0 in the library); the second call runs the chosen one
    a, b, c = rand((1024, 3072), dtype, 8, -1, 1), rand((3072, 768), dtype, 9, -1, 1), rand((768,), dtype, 10, -1, 1)
    for _ in range(2):
        compare(cpu, gpu, dev, "gemm", [a, b, c], (1024, 768), ints=[0, 0], floats=[1.0, 1.0],
                tol=(2e-4, 2e-4) if dtype == F32 else (8e-3, 8e-3))
    # K = 0: alpha * (empty sum) + beta * C
    compare(cpu, gpu, dev, "gemm", [np.zeros((3, 0), dtype), np.zeros((0, 4), dtype), rand((4,), dtype, 1)], (3, 4),
            ints=[0, 0], floats=[1.0, 3.0], tol=tol)


# ---------------------------------------------------------------- normalization and reduction


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax(cpu, gpu, dev, dtype):
    tol = (1e-5, 1e-6) if dtype == F32 else (2e-3, 2e-3)
    for k, (shape, axis) in enumerate([((4, 10), 1), ((2, 3, 700), 2), ((3, 6, 5), 1), ((5, 4), 0), ((128, 12, 128), 2),
                                       ((1, 1), 1)]):
        compare(cpu, gpu, dev, "softmax", [rand(shape, dtype, k, -8, 8)], shape, ints=[axis], tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(cpu, gpu, dev, dtype):
    tol = (1e-5, 1e-5) if dtype == F32 else (2e-3, 2e-3)
    cases = [((4, 16), 1, (16,), (16,)), ((2, 3, 768), 2, (768,), (768,)), ((2, 3, 4), 1, (3, 4), (4,)),
             ((3, 5), 1, (5,), None), ((2, 6), 1, (1,), (6,)), ((128, 768), 1, (768,), (768,))]
    for k, (shape, axis, s_shape, b_shape) in enumerate(cases):
        x = rand(shape, dtype, k, -2, 5)
        scale = rand(s_shape, dtype, k + 10, 0.5, 1.5)
        bias = None if b_shape is None else rand(b_shape, dtype, k + 20, -1, 1)
        compare(cpu, gpu, dev, "layer_norm", [x, scale, bias], shape, ints=[axis], floats=[1e-5], tol=tol)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce(cpu, gpu, dev, op, dtype):
    if op in ("MEAN", "L2", "LOG_SUM", "LOG_SUM_EXP") and not np.issubdtype(dtype, np.floating):
        pytest.skip(f"reduce {op} takes float types")
    exact = op in ("MAX", "MIN") or not np.issubdtype(dtype, np.floating)
    tol = EXACT if exact else (1e-6, 1e-6) if dtype == F32 else (1e-3, 1e-3)
    # PROD of floats near 1 (no overflow whose order differs), LOG_SUM of positive values
    low, high = (0.8, 1.2) if op == "PROD" and not exact else (0.1, 3) if op == "LOG_SUM" else (-3, 3)
    shape = (3, 4, 5, 6)
    for k, axes in enumerate([[0], [3], [1, 2], [0, 3], [], [3, 0, 1, 2]]):
        x = rand(shape, dtype, k, low, high)
        kept = [1 if (d in axes or not axes) else n for d, n in enumerate(shape)]
        compare(cpu, gpu, dev, "reduce", [x, i64(axes)], tuple(kept), ints=[REDUCE[op]], tol=tol)
    big = rand((2, 70000), dtype, 9, low, high) if op != "PROD" or exact else rand((2, 70000), dtype, 9, 0.999, 1.001)
    compare(cpu, gpu, dev, "reduce", [big, i64([1])], (2,), ints=[REDUCE[op]],
            tol=tol if exact else (1e-6, 1e-6) if dtype == F32 else (2e-3, 0.5))


def test_reduce_empty_set(cpu, gpu, dev):
    for op in REDUCE:
        compare(cpu, gpu, dev, "reduce", [np.zeros((3, 0), F32), i64([1])], (3,), ints=[REDUCE[op]])


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
def test_arg_reduce(cpu, gpu, dev, dtype):
    x = np.round(rand((5, 300, 7), dtype, 1, -3, 3)).astype(dtype)  # ties
    x.flat[::97] = np.nan if np.issubdtype(dtype, np.floating) else x.flat[::97]
    for axis, last, is_min in itertools.product(range(3), (0, 1), (0, 1)):
        out = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
        compare(cpu, gpu, dev, "arg_reduce", [x], out, I64, ints=[axis, last, is_min])


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3, 4])
def test_scatter_nd(cpu, gpu, dev, dtype, reduction):
    data = np.round(rand((6, 40, 9), dtype, 1, -4, 4)).astype(dtype)
    for k in (1, 2, 3):
        n = 50
        idx = np.stack([np.random.default_rng(k + d).integers(-data.shape[d], data.shape[d], size=n)
                        for d in range(k)], axis=-1).astype(I64)
        if reduction == 0:  # repeated tuples are order-dependent without a reduction: keep them unique
            _, first = np.unique(np.mod(idx, data.shape[:k]), axis=0, return_index=True)
            idx = idx[np.sort(first)]
        upd = np.round(rand((len(idx),) + data.shape[k:], dtype, 7, -2, 2)).astype(dtype)
        tol = EXACT if reduction in (0, 3, 4) or not np.issubdtype(dtype, np.floating) else (1e-6, 1e-6)
        compare(cpu, gpu, dev, "scatter_nd", [data, idx, upd], data.shape, ints=[reduction], tol=tol)


def test_scatter_nd_index_out_of_range_names_it(gpu, dev):
    out = dev.to_device(np.zeros((2, 3), F32))
    with pytest.raises(rt.InvalidArgumentError, match="hipdnn_ep_kernel_scatter_nd: index 3 of index tuple 1 is out "
                                                     "of range for axis 1 of size 3"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_scatter_nd",
                          [dev.to_device(np.zeros((2, 3), F32)), dev.to_device(np.array([[0, 0], [1, 3]], I64)),
                           dev.to_device(np.ones(2, F32))], [out], [0], [])


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("b", [0, 1])
def test_gather_nd(cpu, gpu, dev, dtype, b):
    data = rand((4, 30, 6, 5), dtype, 1)
    for k in range(1, 4 - b):
        r = np.random.default_rng(k)
        idx = np.stack([r.integers(-data.shape[b + d], data.shape[b + d], size=data.shape[:b] + (7, 3))
                        for d in range(k)], axis=-1).astype(I64)
        out = idx.shape[:-1] + data.shape[b + k:]
        compare(cpu, gpu, dev, "gather_nd", [data, idx], out, ints=[b])


def test_gather_nd_index_out_of_range_names_it(gpu, dev):
    out = dev.to_device(np.zeros(2, F32))
    with pytest.raises(rt.InvalidArgumentError, match="hipdnn_ep_kernel_gather_nd: index 4 of index tuple 1"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_gather_nd",
                          [dev.to_device(np.ones((2, 4), F32)), dev.to_device(np.array([[0, 0], [1, 4]], I64))],
                          [out], [0], [])


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
@pytest.mark.parametrize("reduction", [0, 1, 2, 3, 4])
def test_scatter_elements(cpu, gpu, dev, dtype, reduction):
    data = np.round(rand((5, 40, 6), dtype, 1, -4, 4)).astype(dtype)
    for axis in range(3):
        shape = [4, 30, 5]
        r = np.random.default_rng(axis)
        if reduction == 0:  # distinct targets per line: the order of repeats is the model's business
            perm = np.argsort(r.random([s if d == axis else shape[d] for d, s in enumerate(data.shape)]), axis=axis)
            idx = np.take(perm, np.arange(shape[axis]), axis=axis)
            idx = idx[tuple(slice(0, n) for n in shape)]
        else:
            idx = r.integers(-data.shape[axis], data.shape[axis], size=shape)
        idx = np.ascontiguousarray(idx).astype(I64)
        upd = np.round(rand(idx.shape, dtype, 7, -2, 2)).astype(dtype)
        tol = EXACT if reduction in (0, 3, 4) or not np.issubdtype(dtype, np.floating) else (1e-6, 1e-6)
        compare(cpu, gpu, dev, "scatter_elements", [data, idx, upd], data.shape, ints=[axis, reduction], tol=tol)


def test_scatter_elements_index_out_of_range_names_it(gpu, dev):
    out = dev.to_device(np.zeros((2, 3), F32))
    with pytest.raises(rt.InvalidArgumentError, match="hipdnn_ep_kernel_scatter_elements: index 3 at position 1"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_scatter_elements",
                          [dev.to_device(np.zeros((2, 3), F32)), dev.to_device(np.array([[0, 3]], I64)),
                           dev.to_device(np.ones((1, 2), F32))], [out], [1, 0], [])


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_pad(cpu, gpu, dev, dtype, mode):
    x = rand((3, 5, 7), dtype, 1)
    value = rand((1,), dtype, 2)
    for pads in ([0, 1, 2, 1, 0, 3], [2, 0, 6, 1, 4, 0], [-1, 0, -2, 0, 1, 1] if mode == 0 else [0, 0, 0, 0, 0, 0]):
        out = tuple(n + pads[d] + pads[d + 3] for d, n in enumerate(x.shape))
        compare(cpu, gpu, dev, "pad", [x, value, i64(pads)], out, ints=[mode])


# ---------------------------------------------------------------- data movement


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL, np.uint8])
def test_transpose(cpu, gpu, dev, dtype):
    for k, (shape, perm) in enumerate([((3, 4), [1, 0]), ((2, 3, 4, 5), [0, 2, 1, 3]), ((2, 3, 4, 5), [3, 1, 0, 2]),
                                       ((1, 128, 12, 64), [0, 2, 1, 3]), ((5,), [0])]):
        x = rand(shape, dtype, k)
        compare(cpu, gpu, dev, "transpose", [x, i64(perm)], tuple(shape[p] for p in perm))


@pytest.mark.parametrize("dtype", [F32, F16, I32, BOOL])
def test_concat(cpu, gpu, dev, dtype):
    for axis, shapes in [(0, [(2, 3), (4, 3)]), (1, [(2, 3, 4), (2, 1, 4), (2, 0, 4), (2, 5, 4)]),
                         (2, [(3, 2, 1), (3, 2, 7)])]:
        xs = [rand(s, dtype, i) for i, s in enumerate(shapes)]
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        compare(cpu, gpu, dev, "concat", xs, tuple(out), ints=[axis])


@pytest.mark.parametrize("dtype", [F32, F16, I64])
def test_slice(cpu, gpu, dev, dtype):
    x = rand((6, 7, 8), dtype, 1)
    for starts, steps, out in [([0, 0, 0], [1, 1, 1], (6, 7, 8)), ([1, 2, 3], [2, 1, 2], (3, 5, 3)),
                               ([5, 6, 7], [-1, -2, -3], (6, 4, 3)), ([2, 0, 0], [1, 1, 1], (0, 7, 8))]:
        compare(cpu, gpu, dev, "slice", [x, i64(starts), i64(steps)], out)


@pytest.mark.parametrize("index_dtype", [I32, I64])
def test_gather(cpu, gpu, dev, index_dtype):
    data = rand((5, 6, 7), F32, 1)
    for axis, indices in [(0, [[0, 4], [-1, 2]]), (1, [5, 0, -6, 3]), (2, [3]), (0, np.zeros((0,), np.int64))]:
        idx = np.array(indices, dtype=index_dtype)
        out = data.shape[:axis] + idx.shape + data.shape[axis + 1:]
        compare(cpu, gpu, dev, "gather", [data, idx], out, ints=[axis])
    table = rand((30522, 64), F16, 2)  # an embedding lookup
    compare(cpu, gpu, dev, "gather", [table, np.array([[101, 2000, 30521, 0]], index_dtype)], (1, 4, 64), ints=[0])


def test_zero_dim_device_arrays(cpu, gpu, dev):
    """0-d tensors (scalars) cross DLPack with rank 0."""
    x = np.array(2.5, F32)
    compare(cpu, gpu, dev, "unary", [x], (), ints=[UNARY["EXP"]], tol=(2e-6, 0))
    compare(cpu, gpu, dev, "gather", [rand((5, 6, 7), F32, 1), np.array(3, I64)], (5, 6), ints=[2])


def test_gather_index_out_of_range_names_it(gpu, dev):
    data = dev.to_device(np.zeros((4, 3), F32))
    idx = dev.to_device(np.array([0, 1, 9, 2], I64))
    out = dev.to_device(np.zeros((4, 3), F32))
    with pytest.raises(rt.InvalidArgumentError, match="index 9 at position 2 is out of range for axis 0 of size 4"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_gather", [data, idx], [out], [0], [])


@pytest.mark.parametrize("dtype", [F32, F16, BOOL])
def test_expand(cpu, gpu, dev, dtype):
    for k, (shape, out) in enumerate([((3, 1), (3, 4)), ((1,), (2, 3)), ((2, 1, 3), (4, 2, 5, 3)), ((), (7,))]):
        compare(cpu, gpu, dev, "expand", [rand(shape, dtype, k)], out)


# ---------------------------------------------------------------- shapes that vary from call to call


def test_dynamic_shapes_reuse_the_caching_allocator(cpu, gpu, dev):
    """The same kernels at a new shape on every call, as a dynamic-shape program calls them; the
    temporaries come from the caching allocator and none is left live."""
    for seq in (1, 7, 128, 33, 128, 5):
        x = rand((2, seq, 64), F32, seq)
        scale, bias = rand((64,), F32, 1), rand((64,), F32, 2)
        compare(cpu, gpu, dev, "layer_norm", [x, scale, bias], x.shape, ints=[2], floats=[1e-5], tol=(1e-5, 1e-5))
        compare(cpu, gpu, dev, "layer_norm", [x, rand((1,), F32, 3), None], x.shape, ints=[2], floats=[1e-5],
                tol=(1e-5, 1e-5))
        w = rand((64, 96), F32, 4, -1, 1)
        compare(cpu, gpu, dev, "matmul", [x, w], (2, seq, 96), tol=(1e-5, 1e-5))
        compare(cpu, gpu, dev, "softmax", [x], x.shape, ints=[2], tol=(1e-5, 1e-6))
    stats = gpu.memory_stats()
    assert stats["live_allocations"] == 0, stats
    assert stats["bytes_reserved"] > 0  # layer_norm's broadcast scale went through the allocator


def test_device_memory_views_are_zero_copy_both_ways(gpu, dev):
    """State.view exports device memory through DLPack: torch and cupy alias it (same address),
    and what they write is what the runtime reads; call_kernel imported their arrays above."""
    data = np.arange(24, dtype=F32).reshape(4, 6)
    ptr = gpu.malloc(data.nbytes)
    gpu.memcpy(ptr, data.ctypes.data, data.nbytes, 1)  # HOST_TO_DEVICE
    consumers = []
    if dev.torch is not None:
        t = dev.torch.from_dlpack(gpu.view(ptr, [4, 6], "float32"))
        assert t.is_cuda and t.data_ptr() == ptr
        consumers.append(("torch", t, lambda a: a.cpu().numpy(), dev.torch.cuda.synchronize))
    try:
        import cupy

        c = cupy.from_dlpack(gpu.view(ptr, [4, 6], "float32"))
        assert c.data.ptr == ptr
        consumers.append(("cupy", c, cupy.asnumpy, cupy.cuda.runtime.deviceSynchronize))
    except ImportError:
        pass
    assert consumers, "neither torch nor cupy"
    expected = data.copy()
    for name, array, to_host, sync in consumers:
        np.testing.assert_array_equal(to_host(array), expected, err_msg=name)
        array *= 2  # written in place by the consumer
        sync()
        expected *= 2
        back = np.empty_like(data)
        gpu.memcpy(back.ctypes.data, ptr, data.nbytes, 2)  # DEVICE_TO_HOST
        np.testing.assert_array_equal(back, expected, err_msg=name)
    del consumers, array
    gpu.free(ptr)


def test_memory_manager_on_the_device(gpu, dev):
    """malloc/free/memcpy/limit on device memory: stream-ordered reuse, statistics, OOM message."""
    a = gpu.malloc(1 << 20)
    data = np.arange(1 << 18, dtype=np.float32)
    gpu.memcpy(a, data.ctypes.data, data.nbytes, 1)  # HOST_TO_DEVICE
    back = np.empty_like(data)
    gpu.memcpy(back.ctypes.data, a, data.nbytes, 2)  # DEVICE_TO_HOST
    np.testing.assert_array_equal(back, data)
    reserved = gpu.memory_stats()["bytes_reserved"]
    gpu.free(a)
    b = gpu.malloc(1 << 20)  # served from the cache on the same stream, without a synchronize
    assert gpu.memory_stats()["bytes_reserved"] == reserved
    gpu.free(b)
    scratch = gpu.host_scratch(64)
    assert scratch != 0
    backend = gpu.backend
    with rt.State(backend=backend, memory_limit=1 << 20) as small:
        with pytest.raises(rt.OutOfMemoryError, match="bytes"):
            small.malloc(2 << 20)
    with rt.State(backend=backend) as s:
        with pytest.raises(rt.OutOfMemoryError, match=r"out of device memory allocating \d+ bytes .* free of"):
            s.malloc(1 << 50)


# ---------------------------------------------------------------- bitwise ops, TopK

BITWISE_TYPES = [np.uint8, np.int8, I32, I64]


def _ints(shape, dtype, seed):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", BITWISE_TYPES)
@pytest.mark.parametrize("op", ["BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "SHIFT_LEFT", "SHIFT_RIGHT"])
def test_binary_bitwise(cpu, gpu, dev, op, dtype):
    width = np.dtype(dtype).itemsize * 8
    for k, (sa, sb) in enumerate(BROADCAST_SHAPES):
        a, b = _ints(sa, dtype, 2 * k), _ints(sb, dtype, 2 * k + 1)
        if op.startswith("SHIFT"):  # amounts in range, at and past the width, and negative ones
            lo = -3 if np.issubdtype(dtype, np.signedinteger) else 0
            b = np.random.default_rng(k).integers(lo, width + 3, size=sb).astype(dtype)
        compare(cpu, gpu, dev, "binary", [a, b], np.broadcast_shapes(sa, sb), None, [BINARY[op]])


@pytest.mark.parametrize("dtype", BITWISE_TYPES)
def test_unary_bitwise_not(cpu, gpu, dev, dtype):
    compare(cpu, gpu, dev, "unary", [_ints((3, 257), dtype, 0)], (3, 257), None, [UNARY["BITWISE_NOT"]])


def _top_k_both(cpu, gpu, dev, x, k, axis, largest):
    shape = list(x.shape)
    shape[axis] = k
    name = "hipdnn_ep_kernel_top_k"
    want = [np.full(shape, 77, x.dtype), np.full(shape, 77, I64)]
    _core.call_kernel(cpu, name, [x], want, [axis, largest, 1], [])
    outs = [dev.to_device(np.full(shape, 77, x.dtype)), dev.to_device(np.full(shape, 77, I64))]
    _core.call_kernel(gpu, name, [dev.to_device(x)], outs, [axis, largest, 1], [])
    for got, exp in zip((dev.to_host(o) for o in outs), want, strict=True):
        np.testing.assert_array_equal(got, exp, err_msg=f"top_k axis {axis} k {k} largest {largest}")


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64])
def test_top_k(cpu, gpu, dev, dtype):
    """Ties (in index order) and NaN (the largest), lines shorter and longer than a block, k up to the axis."""
    x = np.round(rand((3, 700, 5), dtype, 1, -4, 4)).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        x.flat[::89] = np.nan
    for axis, largest in itertools.product(range(3), (0, 1)):
        for k in sorted({0, 1, 2, min(50, x.shape[axis]), x.shape[axis]}):
            _top_k_both(cpu, gpu, dev, x, k, axis, largest)


def test_top_k_sampling_shape(cpu, gpu, dev):
    """An LLM sampling step: k = 50 of a 32000-entry vocabulary, a few rows."""
    x = rand((4, 32000), F32, 3, -8, 8)
    _top_k_both(cpu, gpu, dev, x, 50, 1, 1)
