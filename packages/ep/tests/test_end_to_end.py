"""The EP as a user's install finds its parts: no options at all, so the
compiler is the one of the Python environment hipdnn-ep is installed in and
the runtime the wheel beside it (only the cache folder is redirected, through
the EP's environment variable)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, cpu_session
from onnx import TensorProto, helper, numpy_helper


def _mlp(path: Path) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "B")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
         helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Softmax", ["r"], ["z"], axis=-1)],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "seq", 8])], initializer=[w, b])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_dynamic_model_without_fallback_matches_cpu(tmp_path: Path, ep_devices,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPDNN_EP_CACHE_DIR", str(tmp_path / "cache"))
    model = _mlp(tmp_path / "mlp.onnx")
    so = ort.SessionOptions()
    for k, v in NO_FALLBACK.items():
        so.add_session_config_entry(k, v)
    so.add_provider_for_devices(ep_devices, {})
    sess = ort.InferenceSession(str(model), sess_options=so, enable_fallback=0)
    cpu = cpu_session(model)
    rng = np.random.default_rng(1)
    for shape in [(1, 1, 16), (2, 5, 16), (3, 7, 16), (4, 128, 16)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
    assert len([p for p in (tmp_path / "cache").iterdir() if (p / "entry.json").is_file()]) == 1
