"""The CPU vision kernels (conv, pool, batch_norm, activation) against direct numpy loops, and
their argument checks. Outputs start as garbage the kernel must overwrite."""

from __future__ import annotations

import itertools

import pytest
from conftest import rand
from kernel_reference import grid_sample_ref, resize_ref

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

ENUMS = {e["name"]: e["values"] for e in rt.abi_manifest()["enums"]}
POOL = ENUMS["hipdnn_ep_pool_op"]
ACT = ENUMS["hipdnn_ep_activation_op"]
F32, F16, I64 = np.float32, np.float16, np.int64


@pytest.fixture(scope="module")
def state():
    s = rt.State(backend="cpu")
    yield s
    s.close()


def run(state, kernel, inputs, out_shape, ints=(), floats=()):
    inputs = [np.array(x, order="C") for x in inputs]
    out = np.full(out_shape, 77, dtype=inputs[0].dtype)
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, inputs, [out], list(ints), [float(f) for f in floats])
    return out


def close(actual, expected, dtype):
    tol = 3e-3 if dtype == F16 else 2e-5
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tol, atol=tol)


def conv_reference(x, w, b, group, strides, pads, dilations, out_spatial):
    """Y[n, m, o] = b[m] + sum over c of the group, kernel offsets k: x[n, c, o * s - p + k * d] (0 outside)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    y = np.zeros((n, m, *out_spatial))
    for mm in range(m):
        g = mm // mg
        for o in itertools.product(*(range(s) for s in out_spatial)):
            acc = np.full(n, float(b[mm]))
            for cc in range(cg):
                for k in itertools.product(*(range(s) for s in w.shape[2:])):
                    pos = [oi * s - p + ki * d for oi, s, p, ki, d in zip(o, strides, pads, k, dilations, strict=True)]
                    if all(0 <= q < size for q, size in zip(pos, x.shape[2:], strict=True)):
                        acc += x[(slice(None), g * cg + cc, *pos)] * w[(mm, cc, *k)]
            y[(slice(None), mm, *o)] = acc
    return y


CONVS = [  # x shape, w shape, group, strides, pads, dilations, out spatial
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, (1, 1), (1, 1), (1, 1), (7, 6)),
    ((1, 4, 9, 8), (6, 2, 3, 2), 2, (2, 1), (0, 1), (1, 2), (4, 7)),
    ((2, 4, 5, 5), (4, 1, 3, 3), 4, (2, 2), (1, 1), (1, 1), (3, 3)),  # depthwise
    ((1, 8, 4, 4), (5, 8, 1, 1), 1, (1, 1), (0, 0), (1, 1), (4, 4)),  # pointwise: X is multiplied directly
    ((2, 3, 11), (2, 3, 4), 1, (3,), (2,), (1,), (4,)),
    ((1, 2, 4, 3, 5), (3, 2, 2, 3, 2), 1, (1, 2, 1), (1, 1, 0), (1, 1, 2), (5, 2, 3)),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", CONVS, ids=[f"{len(c[0]) - 2}d-g{c[2]}-{i}" for i, c in enumerate(CONVS)])
def test_conv_matches_a_direct_loop(state, case, dtype):
    xs, ws, group, strides, pads, dilations, out = case
    x, w, b = rand(xs, dtype, 1), rand(ws, dtype, 2, -1, 1), rand((ws[0],), dtype, 3)
    geo = np.array([*strides, *pads, *dilations], I64)
    y = run(state, "conv", [x, w, b, geo], (xs[0], ws[0], *out), ints=[group])
    close(y, conv_reference(x, w, b, group, strides, pads, dilations, out), dtype)


def test_conv_refuses_a_group_that_does_not_fit(state):
    x, w, b = np.ones((1, 4, 3, 3), F32), np.ones((4, 3, 1, 1), F32), np.zeros(4, F32)
    with pytest.raises(rt.InvalidArgumentError, match="group 1 does not fit X channels 4"):
        run(state, "conv", [x, w, b, np.array([1, 1, 0, 0, 1, 1], I64)], (1, 4, 3, 3), ints=[1])


def test_conv_refuses_a_short_geometry(state):
    x, w, b = np.ones((1, 1, 3, 3), F32), np.ones((1, 1, 1, 1), F32), np.zeros(1, F32)
    with pytest.raises(rt.InvalidArgumentError, match=r"input 3 \(geometry\) has 3 entries, expected 6"):
        run(state, "conv", [x, w, b, np.array([1, 0, 1], I64)], (1, 1, 3, 3), ints=[1])


def pool_reference(x, is_max, include_pad, kernel, strides, pads, ends, dilations, out_spatial):
    x = x.astype(np.float64)
    y = np.zeros(x.shape[:2] + tuple(out_spatial))
    for o in itertools.product(*(range(s) for s in out_spatial)):
        vals, padded = [], 0
        for k in itertools.product(*(range(s) for s in kernel)):
            pos = [oi * s - p + ki * d for oi, s, p, ki, d in zip(o, strides, pads, k, dilations, strict=True)]
            if all(q < size + e for q, size, e in zip(pos, x.shape[2:], ends, strict=True)):
                padded += 1
            if all(0 <= q < size for q, size in zip(pos, x.shape[2:], strict=True)):
                vals.append(x[(slice(None), slice(None), *pos)])
        v = np.stack(vals)
        y[(slice(None), slice(None), *o)] = v.max(0) if is_max else v.sum(0) / (padded if include_pad else len(vals))
    return y


POOLS = [  # x shape, kernel, strides, pads, pads at the end, dilations, out spatial
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (4, 3)),
    ((1, 2, 8, 7), (2, 3), (2, 2), (0, 0), (0, 0), (2, 1), (4, 3)),  # ceil_mode: the last window is partial
    ((1, 2, 9), (4,), (3,), (2,), (1,), (1,), (3,)),
    ((1, 1, 3, 4, 5), (2, 2, 3), (1, 2, 2), (0, 1, 1), (1, 0, 1), (1, 1, 1), (3, 2, 3)),
    ((2, 5, 4, 6), (4, 6), (1, 1), (0, 0), (0, 0), (1, 1), (1, 1)),  # global
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("mode", ["MAX", "AVERAGE", "AVERAGE-include-pad"])
@pytest.mark.parametrize("case", POOLS, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(POOLS)])
def test_pool_matches_a_direct_loop(state, case, mode, dtype):
    xs, kernel, strides, pads, ends, dilations, out = case
    x = rand(xs, dtype, 4)
    include = int(mode.endswith("include-pad"))
    geo = np.array([*kernel, *strides, *pads, *ends, *dilations], I64)
    y = run(state, "pool", [x, geo], (*xs[:2], *out), ints=[POOL[mode.split("-")[0]], include])
    close(y, pool_reference(x, mode == "MAX", include, kernel, strides, pads, ends, dilations, out), dtype)


def max_pool_indices_reference(x, kernel, strides, pads, dilations, out_spatial, column_major):
    """Each window's first maximum (in window order, taps inside X) and its flat index into X."""
    spatial = x.shape[2:]
    size = int(np.prod(spatial))
    y = np.zeros(x.shape[:2] + tuple(out_spatial), x.dtype)
    idx = np.zeros(y.shape, np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(s) for s in out_spatial)):
            best, where = None, -1
            for k in itertools.product(*(range(s) for s in kernel)):
                pos = [oi * s - p + ki * d for oi, s, p, ki, d in zip(o, strides, pads, k, dilations, strict=True)]
                if all(0 <= q < size_ for q, size_ in zip(pos, spatial, strict=True)):
                    v = x[(n, c, *pos)]
                    if best is None or v > best:
                        order = (pos[::-1], spatial[::-1]) if column_major else (pos, spatial)
                        best, where = v, int(np.ravel_multi_index(*order))
            y[(n, c, *o)] = best
            idx[(n, c, *o)] = (n * x.shape[1] + c) * size + where
    return y, idx


@pytest.mark.parametrize("column_major", [0, 1])
@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", POOLS[:4], ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(POOLS[:4])])
def test_max_pool_indices_matches_a_direct_loop(state, case, dtype, column_major):
    xs, kernel, strides, pads, ends, dilations, out = case
    x = rand(xs, dtype, 5)
    x.reshape(-1)[:3] = 9.0  # a tie in the first window: the first position wins
    geo = np.array([*kernel, *strides, *pads, *ends, *dilations], I64)
    y = np.full((*xs[:2], *out), 77, dtype)
    idx = np.full((*xs[:2], *out), 77, I64)
    _core.call_kernel(state, "hipdnn_ep_kernel_max_pool_indices", [x, geo], [y, idx], [column_major], [])
    want_y, want_idx = max_pool_indices_reference(x, kernel, strides, pads, dilations, out, column_major)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(idx, want_idx)


def test_max_pool_indices_checks_its_arguments(state):
    geo = np.array([2, 2, 1, 1, 0, 0, 0, 0, 1, 1], I64)
    x = np.ones((1, 1, 3, 3), F32)
    with pytest.raises(rt.InvalidArgumentError, match="storage_order is 2, expected 0 or 1"):
        _core.call_kernel(state, "hipdnn_ep_kernel_max_pool_indices", [x, geo],
                          [np.empty((1, 1, 2, 2), F32), np.empty((1, 1, 2, 2), I64)], [2], [])
    with pytest.raises(rt.InvalidArgumentError, match="output 1 .*has dtype INT32, expected INT64"):
        _core.call_kernel(state, "hipdnn_ep_kernel_max_pool_indices", [x, geo],
                          [np.empty((1, 1, 2, 2), F32), np.empty((1, 1, 2, 2), np.int32)], [0], [])
    with pytest.raises(rt.InvalidArgumentError, match="output 1"):
        _core.call_kernel(state, "hipdnn_ep_kernel_max_pool_indices", [x, geo],
                          [np.empty((1, 1, 2, 2), F32), np.empty((1, 1, 2, 3), I64)], [0], [])


def test_pool_refuses_an_unknown_op(state):
    geo = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1], I64)
    with pytest.raises(rt.InvalidArgumentError, match="unknown pool op 9"):
        run(state, "pool", [np.ones((1, 1, 2, 2), F32), geo], (1, 1, 2, 2), ints=[9, 0])


@pytest.mark.parametrize("kernel", ["pool", "max_pool_indices"])
def test_pool_windows_are_checked(state, kernel):
    """Both pool kernels check the window geometry and output 0 against X (one check)."""
    x = np.ones((1, 2, 4, 4), F32)

    def call(geo, out_spatial):
        outs = [np.empty((1, 2, *out_spatial), F32)]
        if kernel == "pool":
            return run(state, "pool", [x, geo], outs[0].shape, ints=[0, 0])
        outs.append(np.empty((1, 2, *out_spatial), I64))
        return _core.call_kernel(state, "hipdnn_ep_kernel_max_pool_indices", [x, geo], outs, [0], [])

    geo = np.array([2, 2, 2, 2, 0, 0, 0, 0, 1, 1], I64)  # kernel, strides, pads begin, pads end, dilations
    call(geo, (2, 2))
    with pytest.raises(rt.InvalidArgumentError, match="input 1 \\(window\\) has 9 entries, expected 10"):
        call(geo[:9], (2, 2))
    with pytest.raises(rt.InvalidArgumentError, match="spatial dim 1: output size 4 does not fit input size 4"):
        call(geo, (2, 4))
    with pytest.raises(rt.InvalidArgumentError, match="spatial dim 0: kernel 2, stride 0"):
        call(np.array([2, 2, 0, 2, 0, 0, 0, 0, 1, 1], I64), (2, 2))


@pytest.mark.parametrize("dtype", [F32, F16])
def test_batch_norm(state, dtype):
    x = rand((2, 3, 4, 5), dtype, 5)
    scale, bias, mean = (rand((3,), dtype, s) for s in (6, 7, 8))
    var = rand((3,), dtype, 9, 0.5, 2.0)
    y = run(state, "batch_norm", [x, scale, bias, mean, var], x.shape, floats=[1e-3])
    sh = (1, 3, 1, 1)
    f = [a.astype(np.float64).reshape(sh) for a in (scale, bias, mean, var)]
    close(y, (x - f[2]) / np.sqrt(f[3] + 1e-3) * f[0] + f[1], dtype)


def test_batch_norm_refuses_a_wrong_channel_count(state):
    x = np.ones((1, 3, 2), F32)
    with pytest.raises(rt.InvalidArgumentError, match=r"input 2 has dims \[4\], expected \[3\]"):
        run(state, "batch_norm", [x, np.ones(3, F32), np.ones(4, F32), np.ones(3, F32), np.ones(3, F32)], x.shape,
            floats=[1e-5])


def _activation(op, x, a, b):
    sp = np.logaddexp(0.0, x)
    return {"HARD_SIGMOID": np.clip(a * x + b, 0, 1), "HARD_SWISH": x * np.clip(x / 6 + 0.5, 0, 1),
            "LEAKY_RELU": np.where(x < 0, a * x, x), "ELU": np.where(x < 0, a * np.expm1(x), x),
            "SELU": b * np.where(x <= 0, a * np.expm1(x), x),
            "CELU": np.maximum(0, x) + np.minimum(0, a * np.expm1(x / a)), "SOFTPLUS": sp,
            "MISH": x * np.tanh(sp), "THRESHOLDED_RELU": np.where(x > a, x, 0.0)}[op]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("op", sorted(ACT))
def test_activation(state, op, dtype):
    x = np.concatenate([rand((64,), dtype, 10, -8, 8), np.array([0, -0.0, 30, -30, 100], dtype)])
    a, b = 0.7, 1.3
    y = run(state, "activation", [x], x.shape, ints=[ACT[op]], floats=[a, b])
    close(y, _activation(op, x.astype(np.float64), a, b), dtype)


def test_activation_refuses_an_unknown_op(state):
    with pytest.raises(rt.InvalidArgumentError, match="unknown activation op 99"):
        run(state, "activation", [np.ones(3, F32)], (3,), ints=[99], floats=[0, 0])


# ---------------------------------------------------------------- conv_transpose

def conv_transpose_reference(x, w, b, group, strides, pads, dilations, out_spatial):
    """Y[n, m, o] = b[m] + sum over c of m's group and taps k with o = p * s - pad + k * d: x[n, c, p] w[c, m, k]."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    cg, mg = c // group, w.shape[1]
    y = np.zeros((n, mg * group, *out_spatial))
    for mm in range(mg * group):
        g, ml = divmod(mm, mg)
        for o in itertools.product(*(range(s) for s in out_spatial)):
            acc = np.full(n, float(b[mm]))
            for k in itertools.product(*(range(s) for s in w.shape[2:])):
                t = [oi + p - ki * d for oi, p, ki, d in zip(o, pads, k, dilations, strict=True)]
                if any(ti % s for ti, s in zip(t, strides, strict=True)):
                    continue
                pos = [ti // s for ti, s in zip(t, strides, strict=True)]
                if all(0 <= q < size for q, size in zip(pos, x.shape[2:], strict=True)):
                    for cc in range(cg):
                        acc += x[(slice(None), g * cg + cc, *pos)] * w[(g * cg + cc, ml, *k)]
            y[(slice(None), mm, *o)] = acc
    return y


CONV_TRANSPOSES = [  # x shape, w shape, group, strides, pads, dilations, out spatial
    ((2, 3, 4, 5), (3, 2, 3, 3), 1, (1, 1), (0, 0), (1, 1), (6, 7)),
    ((1, 4, 3, 4), (4, 3, 3, 2), 2, (2, 3), (1, 0), (1, 2), (6, 12)),  # output_padding: a longer output
    ((2, 3, 5), (3, 2, 4), 1, (3,), (2,), (1,), (14,)),
    ((1, 2, 2, 3, 2), (2, 3, 2, 2, 3), 1, (2, 1, 2), (0, 1, 1), (1, 1, 1), (4, 2, 5)),
    ((1, 2, 3, 3), (2, 1, 3, 3), 1, (2, 2), (-1, -1), (1, 1), (9, 9)),  # a negative pad (output_shape > natural)
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", CONV_TRANSPOSES, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(CONV_TRANSPOSES)])
def test_conv_transpose_matches_a_direct_loop(state, case, dtype):
    xs, ws, group, strides, pads, dilations, out = case
    x, w = rand(xs, dtype, 1), rand(ws, dtype, 2, -1, 1)
    b = rand((ws[1] * group,), dtype, 3)
    geo = np.array([*strides, *pads, *dilations], I64)
    y = run(state, "conv_transpose", [x, w, b, geo], (xs[0], ws[1] * group, *out), ints=[group])
    close(y, conv_transpose_reference(x, w, b, group, strides, pads, dilations, out), dtype)


def test_conv_transpose_refuses_w_that_does_not_fit(state):
    x, w, b = np.ones((1, 4, 3, 3), F32), np.ones((3, 2, 1, 1), F32), np.zeros(2, F32)
    with pytest.raises(rt.InvalidArgumentError, match="W dim 0 = X channels"):
        run(state, "conv_transpose", [x, w, b, np.array([1, 1, 0, 0, 1, 1], I64)], (1, 2, 3, 3), ints=[1])


def test_conv_transpose_refuses_a_zero_stride(state):
    x, w, b = np.ones((1, 1, 3, 3), F32), np.ones((1, 1, 2, 2), F32), np.zeros(1, F32)
    with pytest.raises(rt.InvalidArgumentError, match="must be >= 1"):
        run(state, "conv_transpose", [x, w, b, np.array([0, 1, 0, 0, 1, 1], I64)], (1, 1, 4, 4), ints=[1])


def test_conv_transpose_refuses_a_wrong_bias(state):
    x, w, b = np.ones((1, 2, 3, 3), F32), np.ones((2, 3, 2, 2), F32), np.zeros(2, F32)
    with pytest.raises(rt.InvalidArgumentError, match="B has dims"):
        run(state, "conv_transpose", [x, w, b, np.array([1, 1, 0, 0, 1, 1], I64)], (1, 3, 4, 4), ints=[1])


# ---------------------------------------------------------------- resize

def f32_bits(v):
    return int(np.array([v], np.float32).view(np.uint32)[0])


# x shape, out shape, mode, coordinate mode, nearest mode, exclude_outside, antialias, cubic a, scales (0: sizes), roi
RESIZES = [
    ((1, 2, 4, 5), (1, 2, 8, 10), 0, 0, 0, 0, 0, -0.75, (1, 1, 2, 2), None),
    ((1, 2, 5, 6), (1, 2, 2, 3), 0, 4, 2, 0, 0, -0.75, (1, 1, 0.5, 0.6), None),
    ((2, 3, 5), (2, 6, 2), 0, 3, 3, 0, 0, -0.75, (1, 2, 0.5), None),
    ((1, 2, 4, 5), (1, 2, 7, 3), 0, 1, 1, 0, 0, -0.75, (0, 0, 0, 0), None),
    ((1, 2, 4, 5), (1, 2, 8, 9), 1, 0, 0, 0, 0, -0.75, (1, 1, 2, 1.8), None),
    ((1, 2, 8, 9), (1, 2, 3, 4), 1, 2, 0, 0, 1, -0.75, (1, 1, 0.4, 0.5), None),
    ((1, 2, 5, 5), (1, 2, 9, 1), 1, 3, 0, 0, 0, -0.75, (0, 0, 0, 0), None),
    ((1, 2, 4, 6), (1, 2, 7, 9), 2, 0, 0, 0, 0, -0.75, (0, 0, 0, 0), None),
    ((1, 2, 6, 6), (1, 2, 4, 9), 2, 0, 0, 1, 0, -0.5, (1, 1, 0.7, 1.5), None),
    ((1, 1, 9, 8), (1, 1, 4, 3), 2, 0, 0, 0, 1, -0.75, (1, 1, 0.5, 0.4), None),
    ((1, 2, 5, 6), (1, 2, 7, 4), 1, 6, 0, 0, 0, -0.75, (0, 0, 0, 0), ((0, 0, -0.2, 0.1), (1, 1, 0.9, 1.3))),
    ((1, 2, 5, 6), (1, 2, 3, 4), 0, 6, 0, 0, 0, -0.75, (0, 0, 0, 0), ((0, 0, 0.2, -0.3), (1, 1, 0.8, 1.2))),
    ((2, 1, 2, 3, 2), (2, 1, 4, 3, 3), 1, 1, 0, 0, 0, -0.75, (1, 1, 2, 1, 1.5), None),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", RESIZES, ids=[f"mode{c[2]}-coord{c[3]}-{i}" for i, c in enumerate(RESIZES)])
def test_resize_matches_a_per_axis_reference(state, case, dtype):
    xs, ys, mode, coord, nearest, exclude, antialias, a, scales, roi = case
    x = rand(xs, dtype, 4)
    r = len(xs)
    starts, ends = roi if roi is not None else ((0,) * r, (1,) * r)
    geo = np.array([0 if s == 0 else f32_bits(s) for s in scales] + [f32_bits(v) for v in (*starts, *ends)], I64)
    y = run(state, "resize", [x, geo], ys, ints=[mode, coord, nearest, exclude, antialias], floats=[a, -3.0])
    want = resize_ref(x, mode, coord, nearest, exclude, antialias, a, -3.0, [float(np.float32(s)) for s in scales],
                      [float(np.float32(v)) for v in starts], [float(np.float32(v)) for v in ends], ys)
    close(y, want, dtype)


def _resize_geo(r, scale=1.0):
    return np.array([f32_bits(scale)] * r + [f32_bits(0.0)] * r + [f32_bits(1.0)] * r, I64)


def test_resize_refuses_an_output_from_an_empty_axis(state):
    with pytest.raises(rt.InvalidArgumentError, match="axis 1 of X is empty"):
        run(state, "resize", [np.ones((1, 0), F32), _resize_geo(2)], (1, 3), ints=[0, 0, 0, 0, 0], floats=[-0.75, 0])


def test_resize_refuses_a_bad_scale(state):
    geo = _resize_geo(2)
    geo[1] = f32_bits(-2.0)
    with pytest.raises(rt.InvalidArgumentError, match="must be finite and > 0"):
        run(state, "resize", [np.ones((1, 3), F32), geo], (1, 6), ints=[1, 0, 0, 0, 0], floats=[-0.75, 0])


def test_resize_refuses_an_unknown_mode(state):
    with pytest.raises(rt.InvalidArgumentError, match="unknown resize mode 3"):
        run(state, "resize", [np.ones((1, 3), F32), _resize_geo(2)], (1, 3), ints=[3, 0, 0, 0, 0], floats=[-0.75, 0])


def test_resize_refuses_a_short_geometry(state):
    with pytest.raises(rt.InvalidArgumentError, match=r"input 1 \(geometry\) has 3 entries, expected 6"):
        run(state, "resize", [np.ones((1, 3), F32), np.zeros(3, I64)], (1, 3), ints=[0, 0, 0, 0, 0], floats=[-0.75, 0])


def test_resize_refuses_an_antialias_filter_too_wide(state):
    geo = _resize_geo(1, 1e-5)
    with pytest.raises(RuntimeError, match="taps, more than 4096"):
        run(state, "resize", [np.ones((200000,), F32), geo], (2,), ints=[1, 0, 0, 0, 1], floats=[-0.75, 0])


# ---------------------------------------------------------------- grid_sample


GRID_SAMPLES = [  # x shape, grid shape (mode, padding_mode, align_corners in the parametrization)
    ((2, 3, 5, 6), (2, 4, 7, 2)),
    ((1, 2, 3, 4, 5), (1, 2, 3, 4, 3)),
    ((2, 2, 7), (2, 5, 1)),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["linear", "nearest", "cubic"])
@pytest.mark.parametrize("case", GRID_SAMPLES, ids=["2d", "3d", "1d"])
def test_grid_sample_matches_a_per_tap_reference(state, case, mode, padding, align, dtype):
    xs, gs = case
    x = rand(xs, dtype, 5)
    grid = rand(gs, dtype, 6, -1.4, 1.4)
    grid.flat[:3] = [-1.0, 1.0, 0.0]
    y = run(state, "grid_sample", [x, grid], (*xs[:2], *gs[1:-1]), ints=[mode, padding, align])
    close(y, grid_sample_ref(x, grid, mode, padding, align), dtype)


def test_grid_sample_survives_non_finite_coordinates(state):
    x = np.arange(12, dtype=F32).reshape(1, 1, 3, 4)
    grid = np.array([[[[np.nan, 0.0], [np.inf, -np.inf], [1e30, -1e30]]]], F32)
    for padding in (0, 1, 2):
        y = run(state, "grid_sample", [x, grid], (1, 1, 1, 3), ints=[0, padding, 0])
        assert y.shape == (1, 1, 1, 3)


def test_grid_sample_refuses_a_grid_that_does_not_fit(state):
    with pytest.raises(rt.InvalidArgumentError, match="grid has dims"):
        run(state, "grid_sample", [np.ones((1, 1, 3, 3), F32), np.zeros((1, 2, 2, 3), F32)], (1, 1, 2, 2),
            ints=[0, 0, 0])


def test_grid_sample_refuses_an_unknown_mode(state):
    with pytest.raises(rt.InvalidArgumentError, match="unknown grid_sample mode 5"):
        run(state, "grid_sample", [np.ones((1, 1, 3, 3), F32), np.zeros((1, 2, 2, 2), F32)], (1, 1, 2, 2),
            ints=[5, 0, 0])

