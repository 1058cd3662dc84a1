"""The EP with the real hipdnn-ep-compiler and hipdnn-ep-runtime wheels (no
options: the compiler and runtime are found the way a user's install finds
them).  Skipped, visibly, when either wheel is not installed.

The check runs in a fresh process: other tests load the runtime double,
which has the real runtime's soname, and the loader would hand it to the
real artifacts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("hipdnn_ep_compiler") is None,
                       reason="hipdnn-ep-compiler is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("hipdnn_ep_runtime") is None,
                       reason="hipdnn-ep-runtime is not installed"),
]


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


def check_dynamic_model_without_fallback_matches_cpu(work: Path) -> None:
    import hipdnn_ep

    model = _mlp(work / "mlp.onnx")
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(hipdnn_ep.register(ort), {"cache_dir": str(work / "cache")})
    sess = ort.InferenceSession(str(model), sess_options=so)
    cpu = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for shape in [(1, 1, 16), (2, 5, 16), (3, 7, 16), (4, 128, 16)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_dynamic_model_without_fallback_matches_cpu(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


if __name__ == "__main__":
    check_dynamic_model_without_fallback_matches_cpu(Path(sys.argv[1]))
