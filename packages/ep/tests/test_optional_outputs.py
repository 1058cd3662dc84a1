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
