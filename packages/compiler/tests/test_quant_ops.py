"""Quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul),
each a single-node model compiled and run on the reference runtime, compared with onnxruntime's CPU EP on
the same node; and the refusals that name the node."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, ort_run
from onnx import TensorProto as T
from onnx import helper

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


NP = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT32: np.int32}


@pytest.mark.parametrize("qtype", [T.INT8, T.UINT8])
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
        lo, hi = (-20, 20) if qtype == T.INT8 else (100, 150)
        inits.append(const("z", rng.integers(lo, hi, scale_shape).astype(NP[qtype])))
        names.append("z")
    else:
        attrs["output_dtype"] = qtype
    node = helper.make_node("QuantizeLinear", names, ["y"], **attrs)
    model = model_of([node], [("x", T.FLOAT, x_dims)], [("y", qtype, x_dims)], inits)
    feeds = []
    for n in (3,) if layout == "block" else (3, 1):
        x = (rng.standard_normal((n, 6, 8)) * 8).astype(np.float32)
        x[0, 0, :4] = np.array([0.5, 1.5, -2.5, 1e6]) * (scale.reshape(-1)[0])  # ties to even, saturation
        feeds.append({"x": x})
    run_both(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize("qtype", [T.INT8, T.UINT8, T.INT32])
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
    inits = [const("b", rng.integers(np.iinfo(NP[btype]).min, np.iinfo(NP[btype]).max, (32, 5)).astype(NP[btype]))]
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
             const("b", rng.integers(-128, 127, (k, n)).astype(np.int8)), const("bs", b_scale),
             const("bz", np.zeros((n,) if per_column else (), np.int8)), const("ys", np.array(0.2, np.float32)),
             const("yz", np.array(10, np.uint8))]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = model_of([node], [("a", T.UINT8, ["m", k])], [("y", T.UINT8, ["m", n])], inits)
    feeds = [{"a": rng.integers(0, 256, (m, k)).astype(np.uint8)} for m in (4, 1)]
    run_both(model, feeds, refruntime, tmp_path)


def test_quantize_to_int16_is_refused(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q", output_dtype=T.INT16)
    model = model_of([node], [("x", T.FLOAT, [4])], [("y", T.INT16, [4])], [const("s", np.array(0.1, np.float32))])
    with pytest.raises(UnsupportedError, match=r"'q'.*'y' has element type INT16, which hipdnn-ep does not support"):
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
    with pytest.raises(UnsupportedError, match=r"'dq'.*an output of element type 10 other than the scale's \(1\)"):
        compile_model(model, tmp_path / "art")
