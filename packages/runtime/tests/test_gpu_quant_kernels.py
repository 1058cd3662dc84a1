"""The quantization kernels on the GPU (cuda/hip backends) against the CPU backend's (itself checked
against numpy in test_quant_kernels.py). Every output is exact: the same float division, round half
to even and saturation on both sides, integer products accumulated in wrapping int32; dequantize is
one float multiplication (float16 outputs round once).

Run with ``pytest --gpu=auto`` (skipped without a GPU backend or a GPU), ``--gpu=cuda`` to require one.
"""

from __future__ import annotations

import pytest
from gpu_util import run_both
from test_quant_kernels import CONV_CASES, LAYOUTS

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = pytest.mark.gpu

F32, F16, U8, I8, I32 = np.float32, np.float16, np.uint8, np.int8, np.int32
I16, U16 = np.int16, np.uint16


@pytest.mark.parametrize("xtype", [F32, F16])
@pytest.mark.parametrize("qtype", [I8, U8, I16, U16])
@pytest.mark.parametrize("layout", LAYOUTS + [((64, 300, 33), (300,), 1, 0), ((64, 300, 33), (64, 10, 33), 1, 32)],
                         ids=str)
def test_quantize_linear(cpu, gpu, dev, xtype, qtype, layout):
    x_shape, s_shape, axis, block = layout
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(x_shape) * (30 if qtype in (I8, U8) or xtype == F16 else 3000)).astype(xtype)
    scale = rng.uniform(0.05, 0.2, s_shape).astype(xtype)
    zp = rng.integers(0, 20, s_shape).astype(qtype)
    for z in (zp, None):
        (y,), (want,) = run_both(cpu, gpu, dev, "quantize_linear", [x, scale, z], [(x_shape, qtype)],
                                 ints=[axis, block])
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("qtype", [I8, U8, I16, U16, I32])
@pytest.mark.parametrize("stype", [F32, F16])
@pytest.mark.parametrize("layout", LAYOUTS + [((64, 300, 33), (64, 10, 33), 1, 32)], ids=str)
def test_dequantize_linear(cpu, gpu, dev, qtype, stype, layout):
    x_shape, s_shape, axis, block = layout
    rng = np.random.default_rng(12)
    info = np.iinfo(qtype)
    x = rng.integers(max(info.min, -300), min(info.max, 300), x_shape).astype(qtype)
    scale = rng.uniform(0.05, 0.2, s_shape).astype(stype)
    zp = rng.integers(0, 50, s_shape).astype(qtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "dequantize_linear", [x, scale, zp], [(x_shape, stype)],
                             ints=[axis, block])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("shape", [(5, 33), (1,), (1000, 257), (0, 3)], ids=str)
@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros"])
def test_dynamic_quantize_linear(cpu, gpu, dev, shape, kind):
    rng = np.random.default_rng(13)
    x = rng.standard_normal(shape).astype(F32) * 4
    x = {"mixed": x, "positive": np.abs(x), "negative": -np.abs(x), "zeros": np.zeros_like(x)}[kind]
    got, want = run_both(cpu, gpu, dev, "dynamic_quantize_linear", [x], [(shape, U8), ((), F32), ((), U8)])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("atype,btype", [(U8, I8), (U8, U8), (I8, I8)])
@pytest.mark.parametrize("shapes", [((3, 16), (16, 5)), ((2, 33, 768), (768, 96)), ((2, 1, 4, 8), (3, 8, 6)),
                                    ((16,), (16, 5)), ((2, 4, 16), (16,))], ids=str)
@pytest.mark.parametrize("zero_points", ["none", "scalar", "vectors"])
def test_matmul_integer(cpu, gpu, dev, atype, btype, shapes, zero_points):
    a_shape, b_shape = shapes
    rng = np.random.default_rng(14)
    a = rng.integers(np.iinfo(atype).min, np.iinfo(atype).max, a_shape, endpoint=True).astype(atype)
    b = rng.integers(np.iinfo(btype).min, np.iinfo(btype).max, b_shape, endpoint=True).astype(btype)
    m = a_shape[-2] if len(a_shape) > 1 else 1
    n = b_shape[-1] if len(b_shape) > 1 else 1
    za = zb = None
    if zero_points == "scalar":
        za, zb = np.array(5, atype), np.array(3, btype)
    elif zero_points == "vectors":
        za, zb = rng.integers(0, 9, (m,)).astype(atype), rng.integers(0, 9, (n,)).astype(btype)
    out_shape = np.matmul(np.zeros(a_shape, F32), np.zeros(b_shape, F32)).shape
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_integer", [a, b, za, zb], [(out_shape, I32)])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("xtype,wtype", [(U8, I8), (U8, U8), (I8, I8)])
@pytest.mark.parametrize("case", CONV_CASES + [((2, 64, 28, 28), (96, 64, 3, 3), 1, (2, 2), (1, 1), (1, 1))], ids=str)
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_integer(cpu, gpu, dev, xtype, wtype, case, per_channel):
    x_shape, w_shape, group, strides, pads, dilations = case
    rng = np.random.default_rng(15)
    x = rng.integers(np.iinfo(xtype).min, np.iinfo(xtype).max, x_shape, endpoint=True).astype(xtype)
    w = rng.integers(np.iinfo(wtype).min, np.iinfo(wtype).max, w_shape, endpoint=True).astype(wtype)
    zw = rng.integers(0, 9, (w_shape[0],) if per_channel else ()).astype(wtype)
    out = [(x_shape[2 + d] + 2 * pads[d] - (w_shape[2 + d] - 1) * dilations[d] - 1) // strides[d] + 1
           for d in range(len(x_shape) - 2)]
    geometry = np.array([*strides, *pads, *dilations], np.int64)
    (y,), (want,) = run_both(cpu, gpu, dev, "conv_integer", [x, w, np.array(9, xtype), zw, geometry],
                             [((x_shape[0], w_shape[0], *out), I32)], ints=[group])
    np.testing.assert_array_equal(y, want)
