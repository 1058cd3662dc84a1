"""Shared fixtures: tiny ONNX models, a compile helper, and the numpy reference runtime."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).parent))

from support.refruntime import RefRuntime  # noqa: E402

from hipdnn_ep_compiler.abi import bundled_manifest_path  # noqa: E402

requires_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc) to link artifacts")


def pytest_report_header(config):
    import torch_mlir  # noqa: F401

    from hipdnn_ep_compiler import __version__
    return [f"hipdnn-ep-compiler {__version__}, onnx {onnx.__version__}"]


def make_model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=()):
    """A model from value-info triples (name, elem_type, dims)."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
        [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs],
        list(initializers),
    )
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets)
    if any(d is None for _, _, d in outputs):
        model = onnx.shape_inference.infer_shapes(model)  # fills the outputs left without a shape
    return model


def const(name: str, array) -> TensorProto:
    return onnx.numpy_helper.from_array(np.asarray(array), name)


@pytest.fixture
def dynamic_reshape_model() -> onnx.ModelProto:
    """MatMul -> Relu -> Reshape([batch, seq, -1] built from Shape/Gather/Concat) -> Softmax."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
        helper.make_node("Relu", ["y"], ["r"], name="relu"),
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0, name="g0"),
        helper.make_node("Gather", ["s", "i1"], ["q"], axis=0, name="g1"),
        helper.make_node("Unsqueeze", ["b", "ax"], ["bu"], name="u0"),
        helper.make_node("Unsqueeze", ["q", "ax"], ["qu"], name="u1"),
        helper.make_node("Concat", ["bu", "qu", "m1"], ["shp"], axis=0, name="cat"),
        helper.make_node("Reshape", ["r", "shp"], ["z"], name="rs"),
        helper.make_node("Softmax", ["z"], ["out"], axis=-1, name="sm"),
    ]
    inits = [const("w", rng.standard_normal((8, 8)).astype(np.float32)), const("i0", np.int64(0)),
             const("i1", np.int64(1)), const("ax", np.array([0], np.int64)), const("m1", np.array([-1], np.int64))]
    return make_model(nodes, [("x", TensorProto.FLOAT, ["batch", "seq", 8])],
                      [("out", TensorProto.FLOAT, ["batch", "seq", 8])], inits)


@pytest.fixture
def static_model() -> onnx.ModelProto:
    """Add -> Tanh on fixed shapes."""
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add"),
             helper.make_node("Tanh", ["y"], ["out"], name="tanh")]
    return make_model(nodes, [("x", TensorProto.FLOAT, [2, 3])], [("out", TensorProto.FLOAT, [2, 3])],
                      [const("b", np.arange(3, dtype=np.float32))])


@pytest.fixture(scope="session")
def refruntime(tmp_path_factory) -> RefRuntime:
    """The numpy reference runtime (one per process: it is loaded with the runtime's SONAME)."""
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc)")
    return RefRuntime(bundled_manifest_path(), tmp_path_factory.mktemp("refruntime"))


def int8_weights(rng: np.random.Generator, shape) -> np.ndarray:
    """int8 weights within 7 bits ([-64, 63]) for products compared exactly with onnxruntime's CPU EP: its 8-bit
    GEMM and convolution kernels on x86 CPUs without VNNI (AVX2 only) add pairs of products in int16 with
    saturation (vpmaddubsw; its quantizer's reduce_range exists for this), so full-range weights make its
    results differ from the exact ones there by tens of steps. Within 7 bits no pair saturates."""
    return rng.integers(-64, 64, shape).astype(np.int8)


def ort_run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)
