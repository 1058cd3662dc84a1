"""Compile-time regression: deep graphs compile with shape reasoning bounded by the graph's size.

Each pattern builds a node's dims from its input's dims used more than once, so expressions that are
trees (no names for shared parts) grow geometrically with depth: a 10-level Add(y, Transpose(y))
chain took 79 s and 1.5 GB.  What is asserted is structure, never time: every expression the
artifact spells has at most symbolic.MAX_NODES nodes, and the named symbols grow linearly with the
graph.  The shorter chains run (reference runtime) and match onnxruntime's CPU EP.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ort_run
from onnx import TensorProto, helper
from support.deep_graphs import PATTERNS, add_transpose_chain, expression_size, expressions, reshape_chain, slice_chain

from hipdnn_ep_compiler import compile_model
from hipdnn_ep_compiler import symbolic as sym
from hipdnn_ep_compiler.errors import UnsupportedError

DEPTH = 100


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_a_deep_graph_compiles_with_boundedexpressions(pattern, tmp_path):
    model = PATTERNS[pattern](DEPTH)
    info = compile_model(model, tmp_path / "a")
    exprs = expressions(info.metadata)
    assert exprs, "the graph has dynamic dims"
    assert max(expression_size(e) for e in exprs) <= sym.MAX_NODES
    # a few names per node at most: linear in the graph, not in the depth's power
    assert len(info.metadata.get("symbols", [])) <= 4 * len(model.graph.node)


def test_a_dim_broadcast_against_its_mirror_image_stays_one_expression(tmp_path):
    """Add(y, Transpose(y)) on y[a, b]: both result dims are "a == 1 ? b : a" (valid pairs give the same
    value either way round), and broadcasting that against itself at the next level changes nothing.
    Before, each level nested the previous one in a select per dim, about 3x larger per level."""
    meta = compile_model(add_transpose_chain(6), tmp_path / "a").metadata
    assert meta["outputs"][0]["dims"] == ["(selzero (add -1 d0_0) d0_1 d0_0)"] * 2


def test_named_symbols_are_listed_each_after_those_it_uses(tmp_path):
    meta = compile_model(slice_chain(12), tmp_path / "a").metadata
    names = [s["name"] for s in meta["symbols"]]
    assert len(names) == len(set(names))
    for k, s in enumerate(meta["symbols"]):
        used = {t for t in s["value"].replace("(", " ").replace(")", " ").split() if t in names}
        assert all(names.index(u) < k for u in used), s
    listed = set(names)
    for e in expressions(meta):
        used = {t for t in e.replace("(", " ").replace(")", " ").split() if t.startswith("s") and t[1:].isdigit()}
        assert used <= listed, e


def test_past_the_symbol_budget_the_node_is_named_in_the_refusal(tmp_path, monkeypatch):
    monkeypatch.setattr(sym, "MAX_SYMBOLS", 3)
    with pytest.raises(UnsupportedError, match=r"node 'slice_\d+'.*more than 3 named symbols"):
        compile_model(slice_chain(40), tmp_path / "a")


def test_past_a_node_symbol_budget_that_node_is_named_in_the_refusal(tmp_path, monkeypatch):
    """A Concat of 300 inputs sums 300 dims: 20 names at 16 nodes per expression, more than 10."""
    monkeypatch.setattr(sym, "MAX_NODE_SYMBOLS", 10)
    n = 300
    nodes = [helper.make_node("Concat", [f"x{k}" for k in range(n)], ["y"], axis=0, name="wide_concat")]
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [f"n{k}"]) for k in range(n)]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedError, match=r"node 'wide_concat'.*more than 10 named symbols for this node"):
        compile_model(model, tmp_path / "a")
    monkeypatch.setattr(sym, "MAX_NODE_SYMBOLS", 5_000)
    assert compile_model(model, tmp_path / "b").metadata["symbols"]


@pytest.mark.parametrize("dims", [(3, 3), (1, 4), (4, 1), (1, 1)])
def test_add_transpose_chain_runs_like_onnxruntime(dims, refruntime, tmp_path):
    """Dims broadcast at run time as ONNX says: [1, 4] + [4, 1] is [4, 4]."""
    model = add_transpose_chain(5)
    info = compile_model(model, tmp_path / "a")
    y = np.random.default_rng(sum(dims)).standard_normal(dims).astype(np.float32)
    np.testing.assert_allclose(refruntime.run(info.program, [y])[0], ort_run(model, {"y0": y})[0], rtol=1e-5)


@pytest.mark.parametrize("rows", [20, 17, 3])
def test_slice_chain_with_named_symbols_runs_like_onnxruntime(rows, refruntime, tmp_path):
    model = slice_chain(8)
    info = compile_model(model, tmp_path / "a")
    assert info.metadata["symbols"], "deep enough to need named symbols"
    y = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    got = refruntime.run(info.program, [y])[0]
    want = ort_run(model, {"y0": y})[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dims", [(3, 4), (5, 2)])
def test_reshape_chain_runs_like_onnxruntime(dims, refruntime, tmp_path):
    model = reshape_chain(6)
    info = compile_model(model, tmp_path / "a")
    y = np.arange(dims[0] * dims[1], dtype=np.float32).reshape(dims)
    got = refruntime.run(info.program, [y])[0]
    want = ort_run(model, {"y0": y})[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
