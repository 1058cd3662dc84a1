"""Quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
ConvInteger, QLinearConv and the com.microsoft QLinear* ops),
each a single-node model compiled and run on the reference runtime, compared with onnxruntime's CPU EP on
the same node; and the refusals that name the node."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, int8_weights, ort_run
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from hipdnn_ep_compiler import ModelError, UnsupportedError, compile_model, load_weights


def model_of(nodes, inputs, outputs, inits=(), opset=21):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run_both(model, feeds_list, refruntime, tmp_path, exact=True):
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    for feeds in feeds_list:
        got = refruntime.run(info.program, [feeds[n] for n in names] + weights)
        want = ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            if exact or g.dtype.kind in "iu":
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


NP = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.UINT16: np.uint16, T.INT32: np.int32}


@pytest.mark.parametrize("qtype", [T.INT8, T.UINT8, T.INT16, T.UINT16])
@pytest.mark.parametrize("layout", ["tensor", "axis", "block"])
@pytest.mark.parametrize("zero_point", [True, False])
def test_quantize_linear(qtype, layout, zero_point, refruntime, tmp_path):
    rng = np.random.default_rng(0)
    x_dims = ["n", 6, 8]
    scale_shape = {"tensor": (), "axis": (6,), "block": (3, 6, 2)}[layout]
    attrs = {"axis": 1} if layout == "axis" else {"axis": 2, "block_size": 4} if layout == "block" else {}
    if layout == "block":
        x_dims = [3, 6, 8]
    scale = rng.uniform(0.01, 0.1, scale_shape).astype(np.float32)
    inits = [const("s", scale)]
    names = ["x", "s"]
    if zero_point:
        lo, hi = (-20, 20) if qtype in (T.INT8, T.INT16) else (100, 150)
        inits.append(const("z", rng.integers(lo, hi, scale_shape).astype(NP[qtype])))
        names.append("z")
    else:
        attrs["output_dtype"] = qtype
    node = helper.make_node("QuantizeLinear", names, ["y"], **attrs)
    model = model_of([node], [("x", T.FLOAT, x_dims)], [("y", qtype, x_dims)], inits)
    feeds = []
    for n in (3,) if layout == "block" else (3, 1):
        x = (rng.standard_normal((n, 6, 8)) * (8 if qtype in (T.INT8, T.UINT8) else 3000)).astype(np.float32)
        x[0, 0, :4] = np.array([0.5, 1.5, -2.5, 1e6]) * (scale.reshape(-1)[0])  # ties to even, saturation
        feeds.append({"x": x})
    run_both(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize("qtype", [T.INT8, T.UINT8, T.INT16, T.UINT16, T.INT32])
@pytest.mark.parametrize("layout", ["tensor", "axis", "block"])
def test_dequantize_linear(qtype, layout, refruntime, tmp_path):
    rng = np.random.default_rng(1)
    scale_shape = {"tensor": (), "axis": (8,), "block": (4, 3)}[layout]
    attrs = {"axis": -1} if layout == "axis" else {"axis": 1, "block_size": 2} if layout == "block" else {}
    scale = rng.uniform(0.01, 0.1, scale_shape).astype(np.float32)
    info = np.iinfo(NP[qtype])
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    inits = [const("s", scale), const("z", rng.integers(lo, hi, scale_shape).astype(NP[qtype]))]
    dims = [4, 5] if layout == "block" else ["n", 8]
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], **attrs)
    model = model_of([node], [("x", qtype, dims)], [("y", T.FLOAT, dims)], inits)
    shape = (4, 5) if layout == "block" else (3, 8)
    run_both(model, [{"x": rng.integers(lo, hi, shape).astype(NP[qtype])}], refruntime, tmp_path, exact=False)


def test_dequantize_linear_float16(refruntime, tmp_path):
    rng = np.random.default_rng(2)
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0)
    model = model_of([node], [("x", T.UINT8, [3, "n"])], [("y", T.FLOAT16, [3, "n"])],
                     [const("s", np.array([0.5, 0.25, 0.125], np.float16)), const("z", np.array([1, 2, 3], np.uint8))])
    run_both(model, [{"x": rng.integers(0, 256, (3, 7)).astype(np.uint8)}], refruntime, tmp_path)


def test_dynamic_quantize_linear(refruntime, tmp_path):
    rng = np.random.default_rng(3)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    model = model_of([node], [("x", T.FLOAT, ["n", 16])],
                     [("y", T.UINT8, ["n", 16]), ("s", T.FLOAT, []), ("z", T.UINT8, [])])
    feeds = [{"x": rng.standard_normal((4, 16)).astype(np.float32)},
             {"x": np.abs(rng.standard_normal((2, 16))).astype(np.float32)},  # all >= 0: zero point 0
             {"x": -np.abs(rng.standard_normal((1, 16))).astype(np.float32)},  # all <= 0: zero point 255
             {"x": np.zeros((3, 16), np.float32)}]  # no range: scale 1
    run_both(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize("atype,btype", [(T.UINT8, T.INT8), (T.UINT8, T.UINT8), (T.INT8, T.INT8)])
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per_column"])
def test_matmul_integer(atype, btype, zero_points, refruntime, tmp_path):
    rng = np.random.default_rng(4)
    names = ["a", "b"]
    b = (int8_weights(rng, (32, 5)) if btype == T.INT8 else
         rng.integers(np.iinfo(NP[btype]).min, np.iinfo(NP[btype]).max, (32, 5)).astype(NP[btype]))
    inits = [const("b", b)]
    if zero_points != "none":
        names += ["za", "zb"]
        inits.append(const("za", np.array(3 if atype == T.UINT8 else -3, NP[atype])))
        zb = rng.integers(0, 9, (5,) if zero_points == "per_column" else ()).astype(NP[btype])
        inits.append(const("zb", zb))
    node = helper.make_node("MatMulInteger", names, ["y"])
    model = model_of([node], [("a", atype, ["batch", "m", 32])], [("y", T.INT32, ["batch", "m", 5])], inits)
    info = np.iinfo(NP[atype])
    feeds = [{"a": rng.integers(info.min, info.max, (b, m, 32)).astype(NP[atype])} for b, m in ((2, 3), (1, 1))]
    run_both(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize("per_column", [False, True])
def test_qlinear_matmul(per_column, refruntime, tmp_path):
    rng = np.random.default_rng(5)
    n, k = 6, 16
    b_scale = rng.uniform(0.01, 0.05, (n,) if per_column else ()).astype(np.float32)
    inits = [const("as", np.array(0.05, np.float32)), const("az", np.array(128, np.uint8)),
             const("b", int8_weights(rng, (k, n))), const("bs", b_scale),
             const("bz", np.zeros((n,) if per_column else (), np.int8)), const("ys", np.array(0.2, np.float32)),
             const("yz", np.array(10, np.uint8))]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = model_of([node], [("a", T.UINT8, ["m", k])], [("y", T.UINT8, ["m", n])], inits)
    feeds = [{"a": rng.integers(0, 256, (m, k)).astype(np.uint8)} for m in (4, 1)]
    run_both(model, feeds, refruntime, tmp_path)


def test_quantize_to_int4_is_refused_naming_the_type(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q", output_dtype=T.INT4)
    model = model_of([node], [("x", T.FLOAT, [4])], [("y", T.INT4, [4])], [const("s", np.array(0.1, np.float32))])
    with pytest.raises(UnsupportedError, match=r"'y' has element type INT4, which hipdnn-ep does not support"):
        compile_model(model, tmp_path / "art")


def test_dequantize_of_a_type_the_kernel_lacks_is_refused_naming_it(tmp_path):
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq")
    model = model_of([node], [("x", T.UINT32, [4])], [("y", T.FLOAT, [4])], [const("s", np.array(0.1, np.float32))])
    with pytest.raises(UnsupportedError, match=r"'dq'.*dequantizing element type uint32 is not supported "
                                               r"\(INT8, UINT8, INT16, UINT16 and INT32 are\)"):
        compile_model(model, tmp_path / "art")


def test_quantize_scale_of_the_wrong_shape_is_refused(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q", axis=1, output_dtype=T.INT8)
    model = model_of([node], [("x", T.FLOAT, [2, 3])], [("y", T.INT8, [2, 3])],
                     [const("s", np.ones(4, np.float32))])
    with pytest.raises(ModelError, match=r"'q' \(QuantizeLinear\): the scale has shape \[4\]; per axis 1 of the "
                                         r"input \[2, 3\] it must be \[3\]"):
        compile_model(model, tmp_path / "art")



def test_dequantize_to_a_type_other_than_the_scales_is_refused(tmp_path):
    # opset 24's output_dtype
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq", output_dtype=T.FLOAT16)
    model = model_of([node], [("x", T.UINT8, [4])], [("y", T.FLOAT16, [4])], [const("s", np.array(0.1, np.float32))],
                     opset=24)
    with pytest.raises(UnsupportedError,
                       match=r"'dq'.*an output of element type float16 other than the scale's \(float32\)"):
        compile_model(model, tmp_path / "art")


# ConvInteger and QLinearConv: integer outputs compared exactly with onnxruntime's CPU EP (conv_integer
# accumulates in int32 as onnxruntime does; QLinearConv's requantization is onnxruntime's float multiplier
# x_scale * w_scale / y_scale, rounded ties to even, so no off-by-one is expected or allowed).


def _conv_case(rng, xtype, wtype, m=6, c=4, group=1, k=3):
    xi, wi = np.iinfo(NP[xtype]), np.iinfo(NP[wtype])
    shape = (m, c // group, k, k)
    if wtype == T.INT8:
        w = int8_weights(rng, shape)
    else:
        w = rng.integers(wi.min, wi.max, shape, endpoint=True).astype(NP[wtype])
    feeds = [{"x": rng.integers(xi.min, xi.max, (n, c, h, h), endpoint=True).astype(NP[xtype])}
             for n, h in ((2, 9), (1, 5))]
    return w, feeds


@pytest.mark.parametrize("xtype,wtype", [(T.UINT8, T.UINT8), (T.UINT8, T.INT8), (T.INT8, T.INT8)])
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per_channel"])
def test_conv_integer(xtype, wtype, zero_points, refruntime, tmp_path):
    rng = np.random.default_rng(6)
    w, feeds = _conv_case(rng, xtype, wtype, group=2)
    names, inits = ["x", "w"], [const("w", w)]
    if zero_points != "none":
        names += ["zx", "zw"]
        inits.append(const("zx", np.array(7 if xtype == T.UINT8 else -7, NP[xtype])))
        inits.append(const("zw", rng.integers(0, 9, (6,) if zero_points == "per_channel" else ()).astype(NP[wtype])))
    attrs = dict(pads=[1, 0, 2, 1], strides=[2, 1], group=2)
    node = helper.make_node("ConvInteger", names, ["y"], **attrs)
    model = model_of([node], [("x", xtype, ["n", 4, "h", "h"])], [("y", T.INT32, None)], inits, opset=10)
    if zero_points != "per_channel":
        run_both(model, feeds, refruntime, tmp_path)
        return
    # onnxruntime's ConvInteger refuses a per-channel w_zero_point (ONNX allows it): the reference is its float
    # Conv of the zero-point-free values, exact here (every partial sum is an integer below 2**24)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    zx, zw = (i for i in inits[1:])
    wf = w.astype(np.float32) - numpy_helper.to_array(zw).astype(np.float32).reshape(-1, 1, 1, 1)
    zxv = numpy_helper.to_array(zx).astype(np.float32)
    conv = model_of([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], [("x", T.FLOAT, ["n", 4, "h", "h"])],
                    [("y", T.FLOAT, None)], [const("w", wf)], opset=10)
    for feed in feeds:
        got = refruntime.run(info.program, [feed["x"]] + weights)[0]
        want = ort_run(conv, {"x": feed["x"].astype(np.float32) - zxv})[0]
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want.astype(np.int32))


@pytest.mark.parametrize("xtype,wtype", [(T.UINT8, T.INT8), (T.UINT8, T.UINT8), (T.INT8, T.INT8)])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv(xtype, wtype, per_channel, bias, refruntime, tmp_path):
    rng = np.random.default_rng(7)
    m = 6
    w, feeds = _conv_case(rng, xtype, wtype, m=m)
    shape = (m,) if per_channel else ()
    xz = 128 if xtype == T.UINT8 else 3
    wz = np.zeros(shape, NP[wtype]) if wtype == T.INT8 else rng.integers(120, 136, shape).astype(np.uint8)
    inits = [const("xs", np.array(0.02, np.float32)), const("xz", np.array(xz, NP[xtype])), const("w", w),
             const("ws", rng.uniform(0.002, 0.01, shape).astype(np.float32)), const("wz", wz),
             const("ys", np.array(0.7, np.float32)), const("yz", np.array(xz, NP[xtype]))]
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits.append(const("b", rng.integers(-5000, 5000, (m,)).astype(np.int32)))
        names.append("b")
    node = helper.make_node("QLinearConv", names, ["y"], pads=[1, 1, 1, 1], dilations=[1, 2])
    model = model_of([node], [("x", xtype, ["n", 4, "h", "h"])], [("y", xtype, None)], inits, opset=10)
    run_both(model, feeds, refruntime, tmp_path)


def test_qlinear_conv_with_int16_input_is_refused(tmp_path):
    inits = [const("xs", np.array(0.02, np.float32)), const("xz", np.array(0, np.int16)),
             const("w", np.ones((2, 1, 1, 1), np.int8)), const("ws", np.array(0.1, np.float32)),
             const("wz", np.array(0, np.int8)), const("ys", np.array(0.5, np.float32)),
             const("yz", np.array(0, np.int16))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qc")
    model = model_of([node], [("x", T.INT16, [1, 1, 3, 3])], [("y", T.INT16, [1, 2, 3, 3])], inits, opset=10)
    with pytest.raises(UnsupportedError, match=r"'qc'.*of element type int16 is not supported \(INT8 and UINT8 are\)"):
        compile_model(model, tmp_path / "art")


def test_conv_integer_zero_point_of_the_wrong_shape_is_refused(tmp_path):
    node = helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], name="ci")
    model = model_of([node], [("x", T.UINT8, [1, 2, 3, 3])], [("y", T.INT32, [1, 4, 3, 3])],
                     [const("w", np.ones((4, 2, 1, 1), np.uint8)), const("zx", np.array(0, np.uint8)),
                      const("zw", np.zeros(3, np.uint8))], opset=10)
    with pytest.raises(ModelError, match=r"'ci' \(ConvInteger\): w_zero_point has shape \[3\]; it must hold one "
                                         r"value or 4"):
        compile_model(model, tmp_path / "art")


# com.microsoft QLinear* ops (quantize_static's QOperator format), composed as dequantize -> float op ->
# quantize. onnxruntime's CPU kernels round their own float arithmetic (QLinearAdd scales each input by
# scale / y_scale, say), so an output may differ by one quantization step where a float result lies within
# an ulp of a rounding tie: compared allowing 1, and at most 1% of the outputs off.


def ms_model(node, inputs, outputs, inits):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs], list(inits))
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def run_within_one_step(model, feeds_list, refruntime, tmp_path):
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    for feeds in feeds_list:
        (got,) = refruntime.run(info.program, [feeds[n] for n in names] + weights)
        (want,) = ort_run(model, feeds)
        assert got.shape == want.shape and got.dtype == want.dtype
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.max() <= 1 and (diff > 0).mean() <= 0.01, (diff.max(), (diff > 0).mean())


def _q(rng, qtype, shape):
    info = np.iinfo(NP[qtype])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(NP[qtype])


@pytest.mark.parametrize("qtype", [T.UINT8, T.INT8])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary(op, qtype, refruntime, tmp_path):
    rng = np.random.default_rng(8)
    zp = 120 if qtype == T.UINT8 else -5
    inits = [const("as", np.array(0.03, np.float32)), const("az", np.array(zp, NP[qtype])),
             const("b", _q(rng, qtype, (1, 6))), const("bs", np.array(0.05, np.float32)),
             const("bz", np.array(zp + 3, NP[qtype])), const("cs", np.array(0.09 if op == "QLinearAdd" else 0.4,
                                                                            np.float32)),
             const("cz", np.array(zp - 2, NP[qtype]))]
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"], domain="com.microsoft")
    model = ms_model(node, [("a", qtype, ["n", 6])], [("c", qtype, ["n", 6])], inits)
    run_within_one_step(model, [{"a": _q(rng, qtype, (n, 6))} for n in (50, 1)], refruntime, tmp_path)


@pytest.mark.parametrize("qtype", [T.UINT8, T.INT8])
def test_qlinear_sigmoid_and_leaky_relu(qtype, refruntime, tmp_path):
    rng = np.random.default_rng(9)
    zp = 128 if qtype == T.UINT8 else 0
    inits = [const("xs", np.array(0.05, np.float32)), const("xz", np.array(zp, NP[qtype])),
             const("ys", np.array(1 / 256, np.float32)), const("yz", np.array(0 if qtype == T.UINT8 else -128,
                                                                               NP[qtype]))]
    for op, attrs in (("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.1})):
        node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", **attrs)
        model = ms_model(node, [("x", qtype, ["n", 7])], [("y", qtype, ["n", 7])], inits)
        run_within_one_step(model, [{"x": _q(rng, qtype, (n, 7))} for n in (40, 1)], refruntime,
                            tmp_path / op)


@pytest.mark.parametrize("qtype", [T.UINT8, T.INT8])
def test_qlinear_global_average_pool(qtype, refruntime, tmp_path):
    rng = np.random.default_rng(10)
    zp = 128 if qtype == T.UINT8 else 1
    inits = [const("xs", np.array(0.05, np.float32)), const("xz", np.array(zp, NP[qtype])),
             const("ys", np.array(0.02, np.float32)), const("yz", np.array(zp - 1, NP[qtype]))]
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", channels_last=0)
    model = ms_model(node, [("x", qtype, ["n", 8, "h", "h"])], [("y", qtype, ["n", 8, 1, 1])], inits)
    run_within_one_step(model, [{"x": _q(rng, qtype, (n, 8, h, h))} for n, h in ((3, 7), (1, 4))], refruntime,
                        tmp_path)


def test_qlinear_concat(refruntime, tmp_path):
    rng = np.random.default_rng(11)
    inits = [const("ys", np.array(0.06, np.float32)), const("yz", np.array(125, np.uint8)),
             const("as", np.array(0.05, np.float32)), const("az", np.array(128, np.uint8)),
             const("b", _q(rng, T.UINT8, (1, 3, 5))), const("bs", np.array(0.08, np.float32)),
             const("bz", np.array(100, np.uint8))]
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"],
                            domain="com.microsoft", axis=1)
    model = ms_model(node, [("a", T.UINT8, [1, "c", 5])], [("y", T.UINT8, [1, None, 5])], inits)
    run_within_one_step(model, [{"a": _q(rng, T.UINT8, (1, c, 5))} for c in (4, 1)], refruntime, tmp_path)


def test_qlinear_global_average_pool_channels_last_is_refused(tmp_path):
    inits = [const("xs", np.array(0.05, np.float32)), const("xz", np.array(0, np.uint8)),
             const("ys", np.array(0.02, np.float32)), const("yz", np.array(0, np.uint8))]
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], name="gap",
                            domain="com.microsoft", channels_last=1)
    model = ms_model(node, [("x", T.UINT8, [1, 4, 4, 8])], [("y", T.UINT8, [1, 1, 1, 8])], inits)
    with pytest.raises(UnsupportedError, match=r"'gap'.*channels_last 1 is not supported"):
        compile_model(model, tmp_path / "art")


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("output", ["uint8", "float"])
def test_qgemm(trans_b, per_column, output, refruntime, tmp_path):
    rng = np.random.default_rng(12)
    k, n = 16, 5
    b = int8_weights(rng, (n, k) if trans_b else (k, n))
    inits = [const("as", np.array(0.05, np.float32)), const("az", np.array(128, np.uint8)), const("b", b),
             const("bs", rng.uniform(0.01, 0.05, (n,) if per_column else ()).astype(np.float32)),
             const("bz", np.zeros((n,) if per_column else (), np.int8)),
             const("c", rng.integers(-2000, 2000, (n,)).astype(np.int32))]
    names = ["a", "as", "az", "b", "bs", "bz", "c"]
    if output == "uint8":
        inits += [const("ys", np.array(0.3, np.float32)), const("yz", np.array(100, np.uint8))]
        names += ["ys", "yz"]
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transB=trans_b, alpha=0.5)
    out_type = T.UINT8 if output == "uint8" else T.FLOAT
    model = ms_model(node, [("a", T.UINT8, ["m", k])], [("y", out_type, ["m", n])], inits)
    feeds = [{"a": _q(rng, T.UINT8, (m, k))} for m in (30, 1)]
    if output == "uint8":
        run_within_one_step(model, feeds, refruntime, tmp_path)
        return
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    for feed in feeds:
        (got,) = refruntime.run(info.program, [feed["a"]] + weights)
        np.testing.assert_allclose(got, ort_run(model, feed)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("qtype", [T.UINT8, T.INT8])
def test_max_pool_of_quantized_values(qtype, refruntime, tmp_path):
    # MaxPool on INT8/UINT8 (opset 12+, as QOperator models have it): through float32, exact
    rng = np.random.default_rng(13)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    model = model_of([node], [("x", qtype, ["n", 3, "h", "h"])], [("y", qtype, None)], opset=13)
    run_both(model, [{"x": _q(rng, qtype, (n, 3, h, h))} for n, h in ((2, 9), (1, 4))], refruntime, tmp_path)
