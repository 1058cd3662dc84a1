"""The GPU vision kernels (conv, pool, batch_norm, activation, conv_transpose, resize, grid_sample) against the
CPU backend.
Tolerances (GPU vs CPU): conv accumulates in float in another order (tiles of 16 along K against
the CPU's panels): float32 1e-4 / 1e-4 and relative Frobenius error under 1e-6, float16 2e-3 /
2e-3; pool max, batch_norm and the activations: float32 1e-5 / 1e-6 (device libm), float16 one
half ulp; pool average: float32 1e-6 / 1e-6. Skipped without a GPU backend (see test_gpu_kernels.py).
"""

from __future__ import annotations

import pytest
from conftest import rand
from gpu_util import run_both

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = pytest.mark.gpu

ENUMS = {e["name"]: e["values"] for e in rt.abi_manifest()["enums"]}
POOL = ENUMS["hipdnn_ep_pool_op"]
ACT = ENUMS["hipdnn_ep_activation_op"]
F32, F16, I64 = np.float32, np.float16, np.int64


def compare(cpu, gpu, dev, kernel, inputs, out_shape, ints=(), floats=(), tol=(1e-5, 1e-6)):
    (actual,), (expected,) = run_both(cpu, gpu, dev, kernel, inputs, [(out_shape, np.asarray(inputs[0]).dtype)], ints,
                                      floats)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol[0], atol=tol[1],
                               err_msg=f"{kernel} {ints}")
    return actual, expected


CONVS = [  # x shape, w shape, group, strides, pads, dilations, out spatial
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, (1, 1), (1, 1), (1, 1), (7, 6)),
    ((1, 4, 9, 8), (6, 2, 3, 2), 2, (2, 1), (0, 1), (1, 2), (4, 7)),
    ((2, 32, 15, 15), (32, 1, 3, 3), 32, (2, 2), (1, 1), (1, 1), (8, 8)),  # depthwise
    ((1, 96, 14, 14), (130, 96, 1, 1), 1, (1, 1), (0, 0), (1, 1), (14, 14)),  # maps and positions past one tile
    ((3, 64, 56, 56), (64, 64, 3, 3), 1, (1, 1), (1, 1), (1, 1), (56, 56)),  # a ResNet layer: K = 576
    ((2, 3, 11), (2, 3, 4), 1, (3,), (2,), (1,), (4,)),
    ((1, 2, 4, 3, 5), (3, 2, 2, 3, 2), 1, (1, 2, 1), (1, 1, 0), (1, 1, 2), (5, 2, 3)),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", CONVS, ids=[f"{len(c[0]) - 2}d-g{c[2]}-{i}" for i, c in enumerate(CONVS)])
def test_conv(cpu, gpu, dev, case, dtype):
    xs, ws, group, strides, pads, dilations, out = case
    x, w, b = rand(xs, dtype, 1, -1, 1), rand(ws, dtype, 2, -0.2, 0.2), rand((ws[0],), dtype, 3)
    geo = np.array([*strides, *pads, *dilations], I64)
    tol = (2e-3, 2e-3) if dtype == F16 else (1e-4, 1e-4)
    actual, expected = compare(cpu, gpu, dev, "conv", [x, w, b, geo], (xs[0], ws[0], *out), ints=[group], tol=tol)
    err = np.linalg.norm(actual.astype(np.float64) - expected) / np.linalg.norm(expected.astype(np.float64))
    assert err < (1e-3 if dtype == F16 else 1e-6)


POOLS = [  # x shape, kernel, strides, pads, pads at the end, dilations, out spatial
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (4, 3)),
    ((1, 2, 8, 7), (2, 3), (2, 2), (0, 0), (0, 0), (2, 1), (4, 3)),
    ((1, 2, 9), (4,), (3,), (2,), (1,), (1,), (3,)),
    ((1, 1, 3, 4, 5), (2, 2, 3), (1, 2, 2), (0, 1, 1), (1, 0, 1), (1, 1, 1), (3, 2, 3)),
    ((4, 64, 7, 7), (7, 7), (1, 1), (0, 0), (0, 0), (1, 1), (1, 1)),  # global
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("mode", ["MAX", "AVERAGE", "AVERAGE-include-pad"])
@pytest.mark.parametrize("case", POOLS, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(POOLS)])
def test_pool(cpu, gpu, dev, case, mode, dtype):
    xs, kernel, strides, pads, ends, dilations, out = case
    geo = np.array([*kernel, *strides, *pads, *ends, *dilations], I64)
    tol = (1e-3, 1e-3) if dtype == F16 else (1e-6, 1e-6)
    compare(cpu, gpu, dev, "pool", [rand(xs, dtype, 4), geo], (*xs[:2], *out),
            ints=[POOL[mode.split("-")[0]], int(mode.endswith("include-pad"))], tol=tol)


@pytest.mark.parametrize("column_major", [0, 1])
@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", POOLS, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(POOLS)])
def test_max_pool_indices(cpu, gpu, dev, case, dtype, column_major):
    xs, kernel, strides, pads, ends, dilations, out = case
    x = rand(xs, dtype, 6)
    x.reshape(-1)[:3] = 9.0  # a tie: the first maximum's index on both
    geo = np.array([*kernel, *strides, *pads, *ends, *dilations], I64)
    shape = (*xs[:2], *out)
    expected = [np.full(shape, 77, dtype), np.full(shape, 77, I64)]
    name = "hipdnn_ep_kernel_max_pool_indices"
    _core.call_kernel(cpu, name, [x, geo], expected, [column_major], [])
    outs = [dev.to_device(np.full(shape, 77, dtype)), dev.to_device(np.full(shape, 77, I64))]
    _core.call_kernel(gpu, name, [dev.to_device(x), geo], outs, [column_major], [])
    for o, e in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(dev.to_host(o), e)  # comparisons only: exact


@pytest.mark.parametrize("dtype", [F32, F16])
def test_batch_norm(cpu, gpu, dev, dtype):
    x = rand((3, 17, 9, 11), dtype, 5)
    params = [rand((17,), dtype, s) for s in (6, 7, 8)] + [rand((17,), dtype, 9, 0.5, 2.0)]
    tol = (1e-3, 1e-3) if dtype == F16 else (1e-5, 1e-6)
    compare(cpu, gpu, dev, "batch_norm", [x, *params], x.shape, floats=[1e-3], tol=tol)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("op", sorted(ACT))
def test_activation(cpu, gpu, dev, op, dtype):
    x = np.concatenate([rand((4099,), dtype, 10, -8, 8), np.array([0, -0.0, 30, -30, 100], dtype)])
    tol = (1e-3, 1e-3) if dtype == F16 else (1e-5, 1e-6)
    compare(cpu, gpu, dev, "activation", [x], x.shape, ints=[ACT[op]], floats=[0.7, 1.3], tol=tol)


CONV_TRANSPOSES = [  # x shape, w shape, group, strides, pads, dilations, out spatial
    ((2, 3, 4, 5), (3, 2, 3, 3), 1, (1, 1), (0, 0), (1, 1), (6, 7)),
    ((1, 4, 3, 4), (4, 3, 3, 2), 2, (2, 3), (1, 0), (1, 2), (6, 12)),
    ((2, 64, 16, 16), (64, 32, 4, 4), 1, (2, 2), (1, 1), (1, 1), (32, 32)),  # a decoder upsampling layer
    ((2, 3, 5), (3, 2, 4), 1, (3,), (2,), (1,), (14,)),
    ((1, 2, 2, 3, 2), (2, 3, 2, 2, 3), 1, (2, 1, 2), (0, 1, 1), (1, 1, 1), (4, 2, 5)),
    ((1, 2, 3, 3), (2, 1, 3, 3), 1, (2, 2), (-1, -1), (1, 1), (9, 9)),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", CONV_TRANSPOSES, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(CONV_TRANSPOSES)])
def test_conv_transpose(cpu, gpu, dev, case, dtype):
    xs, ws, group, strides, pads, dilations, out = case
    x, w, b = rand(xs, dtype, 1, -1, 1), rand(ws, dtype, 2, -0.2, 0.2), rand((ws[1] * group,), dtype, 3)
    geo = np.array([*strides, *pads, *dilations], I64)
    tol = (2e-3, 2e-3) if dtype == F16 else (1e-4, 1e-4)
    compare(cpu, gpu, dev, "conv_transpose", [x, w, b, geo], (xs[0], ws[1] * group, *out), ints=[group], tol=tol)


def _bits(v):
    return int(np.array([v], np.float32).view(np.uint32)[0])


# x shape, out shape, mode, coordinate mode, nearest mode, exclude_outside, antialias, scales (0: sizes), roi
RESIZES = [
    ((1, 2, 4, 5), (1, 2, 8, 10), 0, 0, 0, 0, 0, (1, 1, 2, 2), None),
    ((2, 16, 20, 20), (2, 16, 40, 40), 1, 0, 0, 0, 0, (1, 1, 2, 2), None),  # an FPN upsampling
    ((1, 2, 5, 6), (1, 2, 2, 3), 0, 4, 2, 0, 0, (1, 1, 0.5, 0.6), None),
    ((1, 2, 8, 9), (1, 2, 3, 4), 1, 2, 0, 0, 1, (1, 1, 0.4, 0.5), None),
    ((1, 2, 4, 6), (1, 2, 7, 9), 2, 0, 0, 0, 0, (0, 0, 0, 0), None),
    ((1, 2, 6, 6), (1, 2, 4, 9), 2, 3, 0, 1, 0, (1, 1, 0.7, 1.5), None),
    ((1, 1, 9, 8), (1, 1, 4, 3), 2, 0, 0, 0, 1, (1, 1, 0.5, 0.4), None),
    ((1, 2, 5, 6), (1, 2, 7, 4), 1, 6, 0, 0, 0, (0, 0, 0, 0), ((0, 0, -0.2, 0.1), (1, 1, 0.9, 1.3))),
    ((2, 1, 2, 3, 2), (2, 1, 4, 3, 3), 1, 1, 0, 0, 0, (1, 1, 2, 1, 1.5), None),
]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", RESIZES, ids=[f"mode{c[2]}-coord{c[3]}-{i}" for i, c in enumerate(RESIZES)])
def test_resize(cpu, gpu, dev, case, dtype):
    xs, ys, mode, coord, nearest, exclude, antialias, scales, roi = case
    r = len(xs)
    starts, ends = roi if roi is not None else ((0,) * r, (1,) * r)
    geo = np.array([0 if s == 0 else _bits(s) for s in scales] + [_bits(v) for v in (*starts, *ends)], I64)
    tol = (1e-3, 1e-3) if dtype == F16 else (1e-5, 1e-5)
    compare(cpu, gpu, dev, "resize", [rand(xs, dtype, 4), geo], ys, ints=[mode, coord, nearest, exclude, antialias],
            floats=[-0.75, -3.0], tol=tol)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["linear", "nearest", "cubic"])
@pytest.mark.parametrize("case", [((2, 3, 5, 6), (2, 4, 7, 2)), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 3)),
                                  ((2, 8, 32, 32), (2, 48, 40, 2))], ids=["2d", "3d", "2d-large"])
def test_grid_sample(cpu, gpu, dev, case, mode, padding, align, dtype):
    xs, gs = case
    grid = rand(gs, dtype, 6, -1.4, 1.4)
    tol = (1e-3, 1e-3) if dtype == F16 else (1e-5, 1e-5)
    compare(cpu, gpu, dev, "grid_sample", [rand(xs, dtype, 5), grid], (*xs[:2], *gs[1:-1]),
            ints=[mode, padding, align], tol=tol)

