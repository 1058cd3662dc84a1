"""ONNX's own backend node tests for every op we claim, run through the reference runtime.

Cases whose graphs need something outside the compiler's contract (parameters such as Reshape
shapes or Reduce axes fed as runtime graph inputs, unsupported element types, MaxPool's Indices
output) are listed in data/onnx_node_refusals.json with the exact message: they must be
refused with it.  Every other case must compile and match the expected outputs.
(tools/models/update_node_refusals.py at the repository root regenerates the list.)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

from hipdnn_ep_compiler import CompileError, compile_model, load_weights, supported_ops
from hipdnn_ep_compiler.weights import _NUMPY


def _cases():
    from onnx.backend.test.loader import load_model_tests

    ops = set(supported_ops()["ai.onnx"]) | {"Constant"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's case generators warn about their own overflow tests
        tests = load_model_tests(kind="node")
    return [pytest.param(t, id=t.name) for t in tests
            if t.data_sets and all(n.op_type in ops and n.domain in ("", "ai.onnx") for n in t.model.graph.node)]


CASES = _cases()
REFUSALS = json.loads((Path(__file__).parent / "data" / "onnx_node_refusals.json").read_text())["fixed"]


def _array(value):
    """Some cases (Cast) store their data as TensorProtos."""
    return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def test_enough_node_tests_are_selected():
    assert len(CASES) > 250


def test_refusal_list_names_only_selected_cases():
    assert set(REFUSALS) <= {c.id for c in CASES}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_onnx_node_case(case, refruntime, tmp_path):
    model = case.model
    if case.name in REFUSALS:
        with pytest.raises(CompileError) as refused:
            compile_model(model, tmp_path / "a")
        assert str(refused.value) == REFUSALS[case.name]
        return
    info = compile_model(model, tmp_path / "a")
    inputs, expected = case.data_sets[0]
    declared = [i.type.tensor_type.elem_type for i in model.graph.input]
    feeds = [np.asarray(_array(a), dtype=_NUMPY[t]) for a, t in zip(inputs, declared, strict=False)]
    got = refruntime.run(info.program, feeds + load_weights(info.metadata, model))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=False):
        e = np.asarray(_array(e))
        assert g.shape == e.shape
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-3, atol=1e-4)
