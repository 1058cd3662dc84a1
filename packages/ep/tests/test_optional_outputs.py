"""A node that leaves an optional output out before one it produces: the EP claims it and the run matches
onnxruntime's CPU EP. onnxruntime 1.23 lists a null among the outputs of such a candidate group, and the EP
crashed the process (SIGSEGV) at session creation, fallback on or off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from conftest import NO_FALLBACK, Env, cpu_session, make_session
from onnx import TensorProto, helper


def _attention_with_qk_output(path: Path) -> Path:
    f = TensorProto.FLOAT
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y", "", "", "qk"])
    graph = helper.make_graph(
        [node], "attention",
        [helper.make_tensor_value_info("Q", f, [2, 3, 4, 8]), helper.make_tensor_value_info("K", f, [2, 3, 6, 8]),
         helper.make_tensor_value_info("V", f, [2, 3, 6, 8])],
        [helper.make_tensor_value_info("Y", f, None), helper.make_tensor_value_info("qk", f, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10  # what onnxruntime 1.23 loads
    onnx.save(model, str(path))
    return path


def test_an_optional_output_left_out_before_a_used_one(tmp_path: Path, ep_devices, env: Env) -> None:
    model = _attention_with_qk_output(tmp_path / "m.onnx")
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32)
             for n, s in (("Q", (2, 3, 4, 8)), ("K", (2, 3, 6, 8)), ("V", (2, 3, 6, 8)))}
    got, want = sess.run(None, feeds), cpu_session(model).run(None, feeds)
    assert [g.shape for g in got] == [(2, 3, 4, 8), (2, 3, 4, 6)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert env.compiled_ops() == [["Attention"]]


def _skip_norm_feeding_a_node(path: Path) -> Path:
    """onnxruntime-genai's residual pattern: SkipSimplifiedLayerNormalization leaves its mean and inverse
    standard deviation out (["y", "", "", "sum"]) and a later node reads y."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("SkipSimplifiedLayerNormalization", ["X", "skip", "gamma"], ["y", "", "", "sum"],
                              domain="com.microsoft", epsilon=1e-5),
             helper.make_node("Relu", ["y"], ["r"])]
    gamma = helper.make_tensor("gamma", f, [8], np.linspace(0.5, 1.5, 8, dtype=np.float32))
    graph = helper.make_graph(
        nodes, "skip_norm",
        [helper.make_tensor_value_info("X", f, [2, 3, 8]), helper.make_tensor_value_info("skip", f, [2, 3, 8])],
        [helper.make_tensor_value_info("r", f, None), helper.make_tensor_value_info("sum", f, None)], [gamma])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


def test_a_node_reads_an_output_of_one_that_left_an_output_out(tmp_path: Path, ep_devices, env: Env) -> None:
    # onnxruntime 1.23's ValueInfo_GetValueProducer dereferenced the null output while the EP ordered its
    # candidates: every onnxruntime-genai model crashed session creation there
    model = _skip_norm_feeding_a_node(tmp_path / "m.onnx")
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    rng = np.random.default_rng(1)
    feeds = {n: rng.standard_normal((2, 3, 8)).astype(np.float32) for n in ("X", "skip")}
    got, want = sess.run(None, feeds), cpu_session(model).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert env.compiled_ops() == [["SkipSimplifiedLayerNormalization", "Relu"]]
