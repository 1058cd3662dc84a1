"""The quantization kernels (quantize_linear, dequantize_linear, dynamic_quantize_linear,
matmul_integer, conv_integer) on the CPU backend against numpy references written from the ONNX op definitions
(round half to even, saturation, per-tensor / per-axis / blocked scales), and their argument checks."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

F32, F16, U8, I8, I32 = np.float32, np.float16, np.uint8, np.int8, np.int32
I16, U16 = np.int16, np.uint16
InvalidArgumentError = rt.InvalidArgumentError


@pytest.fixture(scope="module")
def state():
    s = rt.State(backend="cpu")
    yield s
    s.close()


def call(state, kernel, inputs, outputs, ints=()):
    ins = [np.array(x, order="C") if x is not None else None for x in inputs]
    outs = [np.full(shape, 77, dtype=dtype) for shape, dtype in outputs]
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, ins, outs, list(ints), [])
    return outs


def expand(x_shape, s, axis, block):
    """Each element's scale (or zero point) for X of x_shape."""
    if block == 0 and s.size == 1:
        return s.reshape(())
    if block == 0:
        return s.reshape([-1 if d == axis else 1 for d in range(len(x_shape))])
    return np.repeat(s, block, axis=axis).take(np.arange(x_shape[axis]), axis=axis)


# (x shape, scale shape, axis, block_size)
LAYOUTS = [((4, 6), (), 0, 0), ((4, 6), (1,), 1, 0), ((4, 6, 5), (6,), 1, 0), ((4, 6, 5), (5,), 2, 0),
           ((4, 6, 5), (4, 2, 5), 1, 4), ((3, 7), (3, 1), 1, 16), ((9, 2), (3, 2), 0, 3), ((0, 6), (6,), 1, 0)]


@pytest.mark.parametrize("xtype", [F32, F16])
@pytest.mark.parametrize("qtype", [I8, U8, I16, U16])
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("zero_point", [False, True])
def test_quantize_linear(state, xtype, qtype, layout, zero_point):
    x_shape, s_shape, axis, block = layout
    rng = np.random.default_rng(len(x_shape) + block)
    scale = rng.uniform(0.05, 0.2, s_shape).astype(xtype)
    wide = qtype in (I16, U16)  # 16-bit: values past the 8-bit range, saturating at the 16-bit one
    x = (rng.standard_normal(x_shape) * (20 if not wide or xtype == F16 else 3000)).astype(xtype)
    signed = np.iinfo(qtype).min < 0
    zp = rng.integers(-10 if signed else 120, 10 if signed else 136, s_shape).astype(qtype)
    (y,) = call(state, "quantize_linear", [x, scale, zp if zero_point else None], [(x_shape, qtype)],
                ints=[axis, block])
    q = np.rint(x.astype(F32) / expand(x_shape, scale, axis, block).astype(F32))
    q = q + (expand(x_shape, zp, axis, block).astype(F32) if zero_point else 0)
    info = np.iinfo(qtype)
    np.testing.assert_array_equal(y, np.clip(q, info.min, info.max).astype(qtype))


def test_quantize_linear_rounds_half_to_even_and_saturates(state):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1e9, -1e9, np.nan], F32)
    (y,) = call(state, "quantize_linear", [x, np.array(1.0, F32), np.array(0, I8)], [((8,), I8)], ints=[0, 0])
    np.testing.assert_array_equal(y, [0, 2, 2, 0, -2, 127, -128, 0])
    (u,) = call(state, "quantize_linear", [x, np.array(1.0, F32), np.array(3, U8)], [((8,), U8)], ints=[0, 0])
    np.testing.assert_array_equal(u, [3, 5, 5, 3, 1, 255, 0, 0])
    (y,) = call(state, "quantize_linear", [x, np.array(1.0, F32), np.array(0, I16)], [((8,), I16)], ints=[0, 0])
    np.testing.assert_array_equal(y, [0, 2, 2, 0, -2, 32767, -32768, 0])
    (u,) = call(state, "quantize_linear", [x, np.array(1.0, F32), np.array(3, U16)], [((8,), U16)], ints=[0, 0])
    np.testing.assert_array_equal(u, [3, 5, 5, 3, 1, 65535, 0, 0])


def test_quantize_linear_refuses_other_output_types(state):
    with pytest.raises(rt.HipdnnEpError, match="quantize_linear does not write dtype INT32"):
        call(state, "quantize_linear", [np.zeros(4, F32), np.array(1.0, F32), None], [((4,), I32)], ints=[0, 0])


@pytest.mark.parametrize("qtype", [I8, U8, I16, U16, I32])
@pytest.mark.parametrize("stype", [F32, F16])
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_dequantize_linear(state, qtype, stype, layout):
    x_shape, s_shape, axis, block = layout
    rng = np.random.default_rng(7)
    info = np.iinfo(qtype)
    x = rng.integers(max(info.min, -300), min(info.max, 300), x_shape).astype(qtype)
    if qtype in (I32, I16, U16) and stype == F32 and x.size:
        x.flat[0] = info.min  # minus a positive zero point: no int32 overflow
        x.flat[-1] = info.max
    scale = rng.uniform(0.05, 0.2, s_shape).astype(stype)
    zp = rng.integers(0, 50, s_shape).astype(qtype)
    (y,) = call(state, "dequantize_linear", [x, scale, zp], [(x_shape, stype)], ints=[axis, block])
    want = (x.astype(np.int64) - expand(x_shape, zp, axis, block).astype(np.int64)).astype(F32) * \
        expand(x_shape, scale, axis, block).astype(F32)
    np.testing.assert_allclose(y.astype(F32), want.astype(stype).astype(F32), rtol=1e-6)


def dynamic_reference(x):
    lo, hi = min(0.0, float(x.min(initial=0))), max(0.0, float(x.max(initial=0)))
    scale = F32(1.0) if hi == lo else F32((F32(hi) - F32(lo)) / F32(255))
    zp = np.clip(np.rint(-F32(lo) / scale), 0, 255)
    return np.clip(np.rint(x / scale) + zp, 0, 255).astype(U8), scale, U8(zp)


@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros", "empty"])
def test_dynamic_quantize_linear(state, kind):
    rng = np.random.default_rng(3)
    x = {"mixed": rng.standard_normal((5, 33)), "positive": np.abs(rng.standard_normal((4, 7))),
         "negative": -np.abs(rng.standard_normal((300,))), "zeros": np.zeros((3, 3)),
         "empty": np.zeros((0, 4))}[kind].astype(F32)
    y, s, z = call(state, "dynamic_quantize_linear", [x], [(x.shape, U8), ((), F32), ((), U8)])
    wy, ws, wz = dynamic_reference(x)
    assert s == ws and z == wz
    np.testing.assert_array_equal(y, wy)


def matmul_integer_reference(a, b, za, zb):
    a64 = a.astype(np.int64) - (0 if za is None else za.astype(np.int64).reshape((-1, 1) if a.ndim > 1 else -1))
    b64 = b.astype(np.int64) - (0 if zb is None else zb.astype(np.int64).reshape(-1))
    return np.matmul(a64, b64).astype(I32)


@pytest.mark.parametrize("atype,btype", [(U8, I8), (U8, U8), (I8, I8), (I8, U8)])
@pytest.mark.parametrize("shapes", [((3, 16), (16, 5)), ((2, 3, 16), (16, 5)), ((2, 1, 4, 8), (3, 8, 6)),
                                    ((16,), (16, 5)), ((2, 4, 16), (16,)), ((0, 4), (4, 3))], ids=str)
@pytest.mark.parametrize("zero_points", ["none", "scalar", "vectors"])
def test_matmul_integer(state, atype, btype, shapes, zero_points):
    a_shape, b_shape = shapes
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a = rng.integers(np.iinfo(atype).min, np.iinfo(atype).max, a_shape, endpoint=True).astype(atype)
    b = rng.integers(np.iinfo(btype).min, np.iinfo(btype).max, b_shape, endpoint=True).astype(btype)
    m = a_shape[-2] if len(a_shape) > 1 else 1
    n = b_shape[-1] if len(b_shape) > 1 else 1
    za = zb = None
    if zero_points == "scalar":
        za, zb = np.array(5, atype), np.array(3, btype)
    elif zero_points == "vectors":
        za, zb = rng.integers(0, 9, (m,)).astype(atype), rng.integers(0, 9, (n,)).astype(btype)
    want = matmul_integer_reference(a, b, za, zb)
    (y,) = call(state, "matmul_integer", [a, b, za, zb], [(want.shape, I32)])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(("atype", "btype"), [(U8, I8), (I8, I8), (U8, U8)])
def test_matmul_integer_is_exact_at_the_extremes_over_long_sums(state, atype, btype):
    # 700 products per output (several of the CPU kernel's 256-column float chunks), each of the largest
    # magnitude, 255 * 255, or mixed: the float GEMM chunks must still sum them exactly
    rng = np.random.default_rng(8)
    lo_a, hi_a, lo_b, hi_b = np.iinfo(atype).min, np.iinfo(atype).max, np.iinfo(btype).min, np.iinfo(btype).max
    a = rng.choice([lo_a, hi_a], (2, 4, 700)).astype(atype)
    a[0] = hi_a
    b = rng.choice([lo_b, hi_b], (700, 6)).astype(btype)
    b[:, :3] = lo_b
    za, zb = np.array([lo_a] * 4, atype), np.array([hi_b] * 6, btype)
    want = matmul_integer_reference(a, b, za, zb)
    assert np.abs(want.astype(np.int64)).max() > 2 ** 24  # past float32's exact integers
    (y,) = call(state, "matmul_integer", [a, b, za, zb], [(want.shape, I32)])
    np.testing.assert_array_equal(y, want)


def test_quantize_linear_checks_the_scale_shape(state):
    with pytest.raises(InvalidArgumentError, match=r"scale has dims \[5\]; per axis 1 of X \[4, 6\] it must be \[6\]"):
        call(state, "quantize_linear", [np.zeros((4, 6), F32), np.ones(5, F32), None], [((4, 6), I8)], ints=[1, 0])
    with pytest.raises(InvalidArgumentError, match=r"blocks of 4 along axis 1 of X \[4, 6\] need \[4, 2\]"):
        call(state, "quantize_linear", [np.zeros((4, 6), F32), np.ones((4, 3), F32), None], [((4, 6), I8)],
             ints=[1, 4])


def test_matmul_integer_checks_the_zero_points(state):
    with pytest.raises(InvalidArgumentError, match=r"input 3 \(b_zero_point\) has dims \[4\]; it must hold one value "
                                                   r"or 5 \(one per column of B\)"):
        call(state, "matmul_integer", [np.zeros((3, 2), U8), np.zeros((2, 5), I8), None, np.zeros(4, I8)],
             [((3, 5), I32)])


def test_dequantize_linear_zero_point_type_must_be_the_inputs(state):
    with pytest.raises(InvalidArgumentError, match=r"input 2 \(zero_point\) has dtype INT8, expected UINT8"):
        call(state, "dequantize_linear", [np.zeros(4, U8), np.array(1.0, F32), np.array(0, I8)], [((4,), F32)],
             ints=[0, 0])


def conv_integer_reference(x, w, zx, zw, group, strides, pads, dilations):
    """ONNX ConvInteger in int64 by explicit loops over the kernel taps (padding contributes 0)."""
    r = x.ndim - 2
    xs = x.astype(np.int64) - int(zx)
    ws = w.astype(np.int64) - zw.astype(np.int64).reshape((-1,) + (1,) * (w.ndim - 1))
    k = w.shape[2:]
    out = [(x.shape[2 + d] + 2 * pads[d] - (k[d] - 1) * dilations[d] - 1) // strides[d] + 1 for d in range(r)]
    xp = np.pad(xs, [(0, 0), (0, 0)] + [(p, p) for p in pads])
    cg, mg = x.shape[1] // group, w.shape[0] // group
    y = np.zeros((x.shape[0], w.shape[0], *out), np.int64)
    for tap in np.ndindex(*k):
        idx = tuple(slice(t * dl, t * dl + (o - 1) * s + 1, s)
                    for t, dl, o, s in zip(tap, dilations, out, strides, strict=True))
        for g in range(group):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + idx]  # [N, cg, *out]
            wt = ws[(slice(g * mg, (g + 1) * mg), slice(None)) + tap]     # [mg, cg]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wt)
    return y.astype(np.uint32).astype(I32)


CONV_CASES = [  # (x shape, w shape, group, strides, pads, dilations)
    ((2, 4, 7, 6), (6, 2, 3, 3), 2, (1, 2), (1, 0), (1, 1)),
    ((1, 3, 9), (4, 3, 3), 1, (2,), (2,), (2,)),
    ((1, 2, 4, 5, 3), (3, 2, 2, 2, 1), 1, (1, 1, 1), (0, 1, 0), (1, 1, 1)),
    ((1, 8, 5, 5), (8, 1, 3, 3), 8, (1, 1), (1, 1), (1, 1)),  # depthwise
]


@pytest.mark.parametrize("xtype,wtype", [(U8, I8), (U8, U8), (I8, I8), (I8, U8)])
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_integer(state, xtype, wtype, case, per_channel):
    x_shape, w_shape, group, strides, pads, dilations = case
    rng = np.random.default_rng(len(x_shape))
    x = rng.integers(np.iinfo(xtype).min, np.iinfo(xtype).max, x_shape, endpoint=True).astype(xtype)
    w = rng.integers(np.iinfo(wtype).min, np.iinfo(wtype).max, w_shape, endpoint=True).astype(wtype)
    zx = np.array(9, xtype)
    zw = rng.integers(0, 9, (w_shape[0],) if per_channel else ()).astype(wtype)
    want = conv_integer_reference(x, w, zx, zw, group, strides, pads, dilations)
    geometry = np.array([*strides, *pads, *dilations], np.int64)
    (y,) = call(state, "conv_integer", [x, w, zx, zw, geometry], [(want.shape, I32)], ints=[group])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(("xtype", "wtype"), [(U8, I8), (I8, I8), (U8, U8)])
def test_conv_integer_is_exact_at_the_extremes_over_long_sums(state, xtype, wtype):
    # 64 channels x 3x3 = 576 products per output (several of the CPU kernel's 256-column float chunks), each
    # of the largest magnitude, 255 * 255, or mixed: the float GEMM chunks must still sum them exactly
    rng = np.random.default_rng(7)
    lo_x, hi_x, lo_w, hi_w = np.iinfo(xtype).min, np.iinfo(xtype).max, np.iinfo(wtype).min, np.iinfo(wtype).max
    x = np.full((2, 64, 5, 5), hi_x, xtype)
    x[1] = rng.choice([lo_x, hi_x], (64, 5, 5))
    w = np.full((6, 64, 3, 3), lo_w, wtype)
    w[3:] = rng.choice([lo_w, hi_w], (3, 64, 3, 3))
    zx, zw = np.array(lo_x, xtype), np.array([hi_w] * 3 + [lo_w] * 3, wtype)
    want = conv_integer_reference(x, w, zx, zw, 1, (1, 1), (1, 1), (1, 1))
    assert np.abs(want).max() > 2 ** 24  # past float32's exact integers
    geometry = np.array([1, 1, 1, 1, 1, 1], np.int64)
    (y,) = call(state, "conv_integer", [x, w, zx, zw, geometry], [(want.shape, I32)], ints=[1])
    np.testing.assert_array_equal(y, want)


def test_conv_integer_checks_its_arguments(state):
    x, w, geo = np.zeros((1, 2, 3, 3), U8), np.zeros((4, 2, 1, 1), I8), np.array([1, 1, 0, 0, 1, 1], np.int64)
    with pytest.raises(InvalidArgumentError, match=r"input 3 \(w_zero_point\) has dims \[3\]; it must hold one value "
                                                   r"or 4 \(one per output map\)"):
        call(state, "conv_integer", [x, w, np.array(0, U8), np.zeros(3, I8), geo], [((1, 4, 3, 3), I32)], ints=[1])
    with pytest.raises(InvalidArgumentError, match=r"input 2 \(x_zero_point\) has dtype INT8, expected UINT8"):
        call(state, "conv_integer", [x, w, np.array(0, I8), np.array(0, I8), geo], [((1, 4, 3, 3), I32)], ints=[1])
    with pytest.raises(InvalidArgumentError, match=r"group 3 does not fit"):
        call(state, "conv_integer", [x, w, np.array(0, U8), np.array(0, I8), geo], [((1, 4, 3, 3), I32)], ints=[3])
