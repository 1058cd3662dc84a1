"""FLOAT64 through the compiler where the kernels accept it (ABI 1.3: binary arithmetic and comparisons,
Softmax, every reduction, and the ops composed of them such as LogSoftmax and Mod with fmod=1), run on the
reference runtime and compared with onnxruntime's CPU EP, which computes these in double too."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import CompileError, compile_model, load_weights

D = T.DOUBLE


def _check(model, feeds, refruntime, tmp_path, rtol=1e-13, atol=0.0):
    import onnxruntime as ort

    info = compile_model(model, tmp_path / "art")
    got = refruntime.run(info.program, list(feeds.values()) + load_weights(info.metadata, model))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _x(shape, seed, scale=1e3):
    return np.random.default_rng(seed).standard_normal(shape) * scale


@pytest.mark.parametrize("op,attrs", [("Add", {}), ("Sub", {}), ("Mul", {}), ("Div", {}), ("Max", {}), ("Min", {}),
                                      ("Mod", {"fmod": 1}), ("Less", {}), ("Equal", {}), ("GreaterOrEqual", {})])
def test_binary(op, attrs, refruntime, tmp_path):
    out_t = T.BOOL if op in ("Less", "Equal", "GreaterOrEqual") else D
    model = make_model([helper.make_node(op, ["a", "b"], ["y"], **attrs)], [("a", D, [3, 4]), ("b", D, [4])],
                       [("y", out_t, None)], opset=18)
    a, b = _x([3, 4], 1), _x([4], 2)
    a[0, :2] = [1e300, b[1]]  # beyond float32's range; an equal pair
    _check(model, {"a": a, "b": b}, refruntime, tmp_path)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax(op, axis, refruntime, tmp_path):
    model = make_model([helper.make_node(op, ["x"], ["y"], axis=axis)], [("x", D, [2, 5, 7])], [("y", D, None)])
    x = _x([2, 5, 7], 3, scale=10.0)
    x[0, 0, :2] = [0.0, 1e-12]  # apart in double only
    _check(model, {"x": x}, refruntime, tmp_path, atol=1e-14)  # LogSoftmax near 0: a few ulps of the terms


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"])
def test_reduce(op, refruntime, tmp_path):
    axes = helper.make_tensor("axes", T.INT64, [1], [1])
    model = make_model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)], [("x", D, [3, 6])],
                       [("y", D, None)], initializers=[axes], opset=18)
    _check(model, {"x": _x([3, 6], 4, scale=10.0)}, refruntime, tmp_path)


def test_unary_float64_is_still_refused_naming_the_type(tmp_path):
    model = make_model([helper.make_node("Exp", ["x"], ["y"])], [("x", D, [3])], [("y", D, [3])])
    with pytest.raises(CompileError, match="unary EXP does not support element type float64"):
        compile_model(model, tmp_path / "art")
