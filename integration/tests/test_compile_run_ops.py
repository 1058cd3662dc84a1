"""Every op the compiler claims, compiled and run on the runtime's CPU backend, on the fixed shapes of
ONNX's backend node tests and on the same graphs with every input dimension made symbolic.

Cases outside the compiler's contract (element types the kernels lack, parameters fed as run-time
inputs, ...) are listed with their exact refusal in the compiler's onnx_node_refusals.json: those must be
refused with that message, every other case must compile and match (tools/models/update_node_refusals.py
regenerates the list)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close
from models import make_dynamic, node_test_cases, tensor_data

try:
    from hipdnn_ep_compiler import supported_ops

    CASES = node_test_cases(set(supported_ops()["ai.onnx"]))
except ImportError:  # the compiler wheel is not installed: the tests below skip through the fixtures
    CASES = []


REFUSALS = json.loads((Path(__file__).resolve().parents[2] / "packages/compiler/tests/data/onnx_node_refusals.json")
                      .read_text())


# BFLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ: element types numpy has no type for
_NO_NUMPY_TYPE = {16, 17, 18, 19, 20}


def _feeds(case):
    from hipdnn_ep_compiler.weights import _NUMPY

    inputs, expected = case.data_sets[0]
    declared = [i.type.tensor_type.elem_type for i in case.model.graph.input]
    feeds = [np.asarray(tensor_data(a), dtype=_NUMPY[t]) for a, t in zip(inputs, declared, strict=True)]
    return feeds, [tensor_data(e) for e in expected]


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case_on_runtime(case, dynamic, compiler, run_artifact, state, tmp_path):
    model = make_dynamic(case.model) if dynamic else case.model
    refusal = REFUSALS["dynamic" if dynamic else "fixed"].get(case.name)
    if refusal is not None:
        with pytest.raises(compiler.CompileError) as refused:
            compiler.compile_model(model, tmp_path / "a")
        assert str(refused.value) == refusal
        return
    info = compiler.compile_model(model, tmp_path / "a")
    graph = case.model.graph
    if {v.type.tensor_type.elem_type for v in [*graph.input, *graph.output]} & _NO_NUMPY_TYPE:
        pytest.skip("the runtime's Python API takes and gives numpy arrays, which hold no bfloat16/float8; "
                    "the EP's node tests run this case (packages/ep/tests/test_onnx_node_tests.py)")
    feeds, expected = _feeds(case)
    got = run_artifact(info.path, model, state, feeds)
    assert_close(got, expected, tol=1e-3)


def test_cases_were_found():
    if not CASES:
        pytest.skip("needs the hipdnn-ep-compiler wheel")
    assert len(CASES) > 250
    names = {c.name for c in CASES}
    for variant, listed in REFUSALS.items():
        assert set(listed) <= names, f"stale {variant} refusals: {sorted(set(listed) - names)}"


def test_an_output_declared_off_what_the_model_computes_gets_the_computed_dims(compiler, run_artifact, state,
                                                                               tmp_path):
    """Declared output shapes are hints, as onnxruntime treats them (it warns where a run differs): a model
    declaring [5] for an output that follows its input runs at any size (the runtime refused it before)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    compiler.compile_model(model, tmp_path / "a")
    for n in (3, 5):
        assert run_artifact(tmp_path / "a", model, state, [np.ones(n, np.float32)])[0].shape == (n,)
