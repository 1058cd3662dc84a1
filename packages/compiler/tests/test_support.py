"""The support query: the compiler's verdict on each node, from the same checks a compile runs."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import onnx
from conftest import const, make_model
from onnx import TensorProto, helper

from hipdnn_ep_compiler import compiler
from hipdnn_ep_compiler.protocol import handle
from hipdnn_ep_compiler.support import check_support

# ai.onnx.ml Scaler (scale 1, offset 0: the identity on float): an op the compiler does not support
SCALER = {"domain": "ai.onnx.ml", "scale": [1.0], "offset": [0.0]}
ML = [("ai.onnx.ml", 1)]


def _typed(model: onnx.ModelProto, name: str, dtype: int, dims: list) -> onnx.ModelProto:
    """Declares the type of a Scaler's output, as ONNX Runtime's graph does (onnx infers none for it)."""
    model.graph.value_info.append(helper.make_tensor_value_info(name, dtype, dims))
    return model


def _chain(dtype: int, middle: str = "Relu") -> onnx.ModelProto:
    attrs = SCALER if middle == "Scaler" else {}
    nodes = [helper.make_node("Add", ["a", "b"], ["c"], name="add"),
             helper.make_node(middle, ["c"], ["d"], name="mid", **attrs),
             helper.make_node("Mul", ["d", "d"], ["e"], name="mul")]
    return _typed(make_model(nodes, [("a", dtype, [4]), ("b", dtype, [4])], [("e", dtype, [4])], extra_opsets=ML),
                  "d", dtype, [4])


def _verdicts(model: onnx.ModelProto) -> list[tuple[str, bool, str]]:
    return [(v.name, v.supported, v.reason) for v in check_support(model)]


def test_a_graph_that_compiles_is_supported_entirely():
    assert _verdicts(_chain(TensorProto.FLOAT)) == [("add", True, ""), ("mid", True, ""), ("mul", True, "")]


def test_element_types_the_kernels_lack_are_refused_per_node():
    # float64: binary ADD and MUL accept it (ABI 1.3), unary RELU does not
    assert _verdicts(_chain(TensorProto.DOUBLE)) == [
        ("add", True, ""), ("mid", False, "unary RELU does not support element type float64"), ("mul", True, "")]


def test_a_refused_node_leaves_the_rest_supported():
    # Scaler is not in the op registry; the rest compiles once its output is a graph input.
    assert _verdicts(_chain(TensorProto.FLOAT, "Scaler")) == [
        ("add", True, ""), ("mid", False, "op Scaler of domain ai.onnx.ml is not supported"), ("mul", True, "")]


def test_a_refused_graph_input_refuses_the_nodes_reading_it():
    verdicts = _verdicts(_chain(TensorProto.COMPLEX64))
    assert [v[:2] for v in verdicts] == [("add", False), ("mid", False), ("mul", False)]
    assert verdicts[0][2] == "'a' has element type COMPLEX64, which hipdnn-ep does not support"


def test_a_parameter_computed_by_a_refused_node_is_refused_too():
    # Scaler is refused, so the Reshape target (Cast of its output) is a run-time value for the
    # compiler: Reshape is refused for that, Cast alone still compiles.
    nodes = [helper.make_node("Scaler", ["s"], ["c"], name="cos", **SCALER),
             helper.make_node("Cast", ["c"], ["shape"], to=7, name="cast"),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [2, 3])], [("y", TensorProto.FLOAT, [3, 2])],
                       [const("s", np.array([3, 2], np.float32))], extra_opsets=ML)
    _typed(model, "c", TensorProto.FLOAT, [2])
    assert _verdicts(model) == [
        ("cos", False, "op Scaler of domain ai.onnx.ml is not supported"), ("cast", True, ""),
        ("reshape", False, "the target shape must be computable from input shapes and constants")]


def test_support_over_the_protocol(tmp_path):
    onnx.save(_chain(TensorProto.DOUBLE), tmp_path / "m.onnx")
    onnx.save(_chain(TensorProto.FLOAT), tmp_path / "f.onnx")
    r = handle({"protocol": 2, "action": "support", "models": [str(tmp_path / "m.onnx"), str(tmp_path / "f.onnx")]})
    assert r["ok"] and r["protocol"] == 2
    first, second = r["models"]
    assert first["nodes"][0] == {"index": 0, "name": "add", "op_type": "Add", "domain": "", "supported": True}
    assert first["nodes"][1] == {"index": 1, "name": "mid", "op_type": "Relu", "domain": "", "supported": False,
                                 "reason": "unary RELU does not support element type float64"}
    assert all(n["supported"] and "reason" not in n for n in second["nodes"])
    # protocol 1 clients get capabilities and compile as before, but no support
    assert handle({"protocol": 1, "action": "capabilities"})["protocol"] == 1
    refused = handle({"protocol": 1, "action": "support", "models": []})
    assert refused["error"] == {"kind": "BadRequest", "message": "support needs protocol 2"}
    assert "list of model paths" in handle({"protocol": 2, "action": "support"})["error"]["message"]


def test_a_model_whose_weights_the_host_holds_is_checked_without_them(tmp_path):
    """The EP's subgraphs name weights that no file holds: the support query accepts them, and after a
    refusal the reduced model it checks still declares them held by the host."""
    w = const("w", np.ones((4, 4), np.float32))
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="hipdnn-ep-host-memory")
    nodes = [helper.make_node("MatMul", ["a", "w"], ["c"], name="matmul"),
             helper.make_node("Scaler", ["c"], ["d"], name="cos", **SCALER),
             helper.make_node("Relu", ["d"], ["e"], name="relu"),
             helper.make_node("MatMul", ["e", "w"], ["f"], name="matmul2")]
    model = _typed(make_model(nodes, [("a", TensorProto.FLOAT, [2, 4])], [("f", TensorProto.FLOAT, [2, 4])], [w],
                              extra_opsets=ML), "d", TensorProto.FLOAT, [2, 4])
    helper.set_model_props(model, {"hipdnn_ep.weights": "host"})
    onnx.save(model, tmp_path / "m.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
    assert [(v.name, v.supported, v.reason) for v in check_support(tmp_path / "m.onnx")] == [
        ("matmul", True, ""), ("cos", False, "op Scaler of domain ai.onnx.ml is not supported"), ("relu", True, ""),
        ("matmul2", True, "")]


def test_a_model_that_compiles_whole_is_shape_inferred_once(tmp_path, monkeypatch):
    """The intermediates' types are for the reduced models of a refusal: a model claimed whole is not
    inferred for them (the compile's own inference is the only one; a copy of every weight each), a
    refused one is, and still gets its verdicts."""
    monkeypatch.setattr(compiler, "_kept", OrderedDict())  # no lowering kept by an earlier test of these bytes
    calls = []
    infer = onnx.shape_inference.infer_shapes
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", lambda *a, **k: calls.append(1) or infer(*a, **k))
    onnx.save(_chain(TensorProto.FLOAT), tmp_path / "f.onnx")
    assert all(v.supported for v in check_support(tmp_path / "f.onnx"))
    assert len(calls) == 1
    calls.clear()
    onnx.save(_chain(TensorProto.DOUBLE), tmp_path / "i.onnx")
    assert not all(v.supported for v in check_support(tmp_path / "i.onnx"))  # float64 Relu is refused
    assert len(calls) > 2


def test_a_node_reading_an_untyped_output_of_a_refused_node_is_refused_saying_why():
    """onnx infers no type for Scaler's output: without a declared one, what reads it cannot be compiled
    alone (its input would have no type), nor what reads its untyped output in turn; the nodes before it
    still compile."""
    nodes = [helper.make_node("Add", ["a", "b"], ["c"], name="add"),
             helper.make_node("Scaler", ["c"], ["d"], name="mid", **SCALER),
             helper.make_node("Mul", ["d", "d"], ["e"], name="mul"),
             helper.make_node("Relu", ["e"], ["f"], name="relu")]
    f = TensorProto.FLOAT
    model = make_model(nodes, [("a", f, [4]), ("b", f, [4])], [("f", f, [4])], extra_opsets=ML)
    assert _verdicts(model) == [
        ("add", True, ""), ("mid", False, "op Scaler of domain ai.onnx.ml is not supported"),
        ("mul", False, "input 'd' is an output of node 'mid' (ai.onnx.ml::Scaler), which is not supported, and "
                       "the model declares no type for it"),
        ("relu", False, "input 'e' is an output of node 'mul' (Mul), which is not supported, and the model "
                        "declares no type for it")]
