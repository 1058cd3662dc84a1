"""User-reachable error paths not covered elsewhere: backend, manifest, toolchain, weights, op rules."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, make_model
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import (
    ArtifactError,
    CompileError,
    LinkError,
    ModelError,
    UnsupportedError,
    compile_model,
    load_weights,
)
from hipdnn_ep_compiler.abi import load_abi
from hipdnn_ep_compiler.protocol import handle


def test_unknown_backend(static_model, tmp_path):
    with pytest.raises(CompileError, match="unknown backend 'tpu'"):
        compile_model(static_model, tmp_path / "a", backend="tpu")
    r = handle({"protocol": 1, "action": "compile", "model": "m.onnx", "output": str(tmp_path), "backend": "tpu"})
    assert r["error"]["kind"] == "CompileError"


def test_unreadable_or_invalid_manifest(tmp_path):
    with pytest.raises(CompileError, match="cannot read runtime ABI manifest"):
        load_abi(tmp_path / "none.json")
    (tmp_path / "m.json").write_text('{"abi": {}}')
    with pytest.raises(CompileError, match="not a valid runtime ABI manifest"):
        load_abi(tmp_path / "m.json")


def test_missing_c_compiler_is_a_link_error(static_model, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(LinkError, match="cannot run .*no-such-cc"):
        compile_model(static_model, tmp_path / "a")


def test_load_weights_errors(static_model, tmp_path):
    info = compile_model(static_model, tmp_path / "a")
    other = make_model([helper.make_node("Relu", ["x"], ["out"])], [("x", T.FLOAT, [2, 3])],
                       [("out", T.FLOAT, [2, 3])])
    with pytest.raises(ArtifactError, match="weight 'b' is not in the model"):
        load_weights(info.metadata, other)
    meta = dict(info.metadata, weights=[dict(info.metadata["weights"][0],
                                             source={"kind": "external", "location": "w.bin", "offset": 0,
                                                     "length": 12})])
    with pytest.raises(ArtifactError, match="pass base_dir"):
        load_weights(meta, static_model)


def _one(node, inputs, inits=(), out=("o",), out_type=T.FLOAT):
    """One-node model; the output shape is declared since inference cannot give it for bad nodes."""
    return make_model([node], inputs, [("out", out_type, list(out))], inits)


@pytest.mark.parametrize("model,error,message", [
    (lambda: _one(helper.make_node("Reshape", ["x", "s"], ["out"], name="r"), [("x", T.FLOAT, [2, 3])],
                  [const("s", np.array([-1, -1], np.int64))], out=("a", "b")), ModelError, "node name: r.*multiple -1"),
    (lambda: _one(helper.make_node("Squeeze", ["x"], ["out"], name="sq"), [("x", T.FLOAT, ["n", 1])], out=()),
     UnsupportedError, "node 'sq'.*Squeeze without axes on dynamic dims"),
    (lambda: _one(helper.make_node("Cast", ["x"], ["out"], name="c", to=T.FLOAT4E2M1), [("x", T.FLOAT, [2])],
                  out=(2,), out_type=T.FLOAT4E2M1),
     UnsupportedError, "FLOAT4E2M1, which hipdnn-ep does not support \\(its values are packed"),
    (lambda: _one(helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["out"], name="sl"), [("x", T.FLOAT, [4])],
                  [const("s", np.array([0], np.int64)), const("e", np.array([4], np.int64)),
                   const("a", np.array([0], np.int64)), const("st", np.array([0], np.int64))]),
     ModelError, "step"),
    (lambda: _one(helper.make_node("MatMul", ["x", "x"], ["out"], name="mm"), [("x", T.INT64, [2, 2])],
                  out=(2, 2), out_type=T.INT64),
     UnsupportedError, "node 'mm'.*matmul does not support element type int64"),
    (lambda: make_model([helper.make_node("Shape", ["x"], ["s"]),
                         helper.make_node("Gather", ["s", "i"], ["out"], name="g", axis=0)],
                        [("x", T.FLOAT, [3])], [("out", T.INT64, [1])], [const("i", np.array([5], np.int64))]),
     ModelError, "out of range|shape inference"),
])
def test_op_rule_errors(model, error, message, tmp_path):
    with pytest.raises(error, match=message):
        compile_model(model(), tmp_path / "a")
