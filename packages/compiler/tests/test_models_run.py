"""Whole graphs, compiled and executed (reference runtime), compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ort_run
from support.models import attention_block

from hipdnn_ep_compiler import compile_model, load_weights


def _feeds(b, s, rng):
    mask = np.ones((b, s), np.int64)
    mask[:, s // 2 + 1:] = 0
    return {"x": rng.standard_normal((b, s, 16)).astype(np.float32), "mask": mask}


@pytest.mark.parametrize("opset", [17, 20])
def test_dynamic_attention_block_at_several_sizes(opset, refruntime, tmp_path):
    model = attention_block(opset=opset)
    info = compile_model(model, tmp_path / "a")
    assert "hipdnn_ep_get_host_scratch_base" in info.imports
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    for b, s in [(1, 1), (2, 7), (3, 16)]:
        feeds = _feeds(b, s, rng)
        got = refruntime.run(info.program, [feeds["x"], feeds["mask"]] + weights)[0]
        np.testing.assert_allclose(got, ort_run(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_fixed_seq128_attention_block(refruntime, tmp_path):
    model = attention_block(batch=1, seq=128)
    info = compile_model(model, tmp_path / "a")
    assert "hipdnn_ep_get_host_scratch_base" not in info.imports
    assert info.metadata["memory_plan"]["host_scratch_bytes"] == 0
    plan = info.metadata["memory_plan"]
    assert isinstance(plan["pool_bytes"], int)
    assert plan["buffers"] and all(isinstance(b["offset"], int) for b in plan["buffers"])
    assert max(b["offset"] + b["bytes"] for b in plan["buffers"]) <= plan["pool_bytes"]
    # liveness lets buffers share space: the pool is smaller than all intermediates side by side
    assert plan["pool_bytes"] < sum(b["bytes"] for b in plan["buffers"])
    weights = load_weights(info.metadata, model)
    feeds = _feeds(1, 128, np.random.default_rng(1))
    got = refruntime.run(info.program, [feeds["x"], feeds["mask"]] + weights)[0]
    np.testing.assert_allclose(got, ort_run(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_passthrough_duplicate_and_shape_outputs(refruntime, tmp_path):
    """Outputs that are a graph input, the same value twice, an alias of an intermediate, a shape."""
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper
    n = helper.make_node
    model = make_model(
        [n("Relu", ["x"], ["r"]), n("Reshape", ["r", "flat"], ["rf"]), n("Shape", ["x"], ["s"]),
         n("Identity", ["r"], ["r2"])],
        [("x", T.FLOAT, ["a", 3])],
        [("x", T.FLOAT, ["a", 3]), ("r", T.FLOAT, None), ("r2", T.FLOAT, None), ("rf", T.FLOAT, None),
         ("s", T.INT64, None)],
        [const("flat", np.array([-1], np.int64))])
    info = compile_model(model, tmp_path / "a")
    assert "hipdnn_ep_memcpy" in info.imports
    for rows in (1, 4):
        x = np.random.default_rng(rows).standard_normal((rows, 3)).astype(np.float32)
        got = refruntime.run(info.program, [x])
        want = ort_run(model, {"x": x})
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_reshape_and_slice_parameters_fed_as_graph_inputs(refruntime, tmp_path):
    """Targets the host reads from small int64 inputs (as ORT hands them to the EP after partitioning)."""
    from conftest import make_model
    from onnx import TensorProto as T
    from onnx import helper
    n = helper.make_node
    model = make_model([n("Reshape", ["x", "shape"], ["r"]), n("Slice", ["r", "starts", "ends"], ["out"])],
                       [("x", T.FLOAT, ["a", 6]), ("shape", T.INT64, [2]), ("starts", T.INT64, [1]),
                        ("ends", T.INT64, [1])], [("out", T.FLOAT, None)])
    info = compile_model(model, tmp_path / "a")
    assert {"hipdnn_ep_memcpy", "hipdnn_ep_get_host_scratch_base"} <= set(info.imports)
    rng = np.random.default_rng(3)
    for rows, shape, start, end in [(2, [0, -1], 0, 1), (4, [-1, 3], -3, 100), (1, [3, 2], 1, -1)]:
        feeds = {"x": rng.standard_normal((rows, 6)).astype(np.float32), "shape": np.array(shape, np.int64),
                 "starts": np.array([start], np.int64), "ends": np.array([end], np.int64)}
        got = refruntime.run(info.program, list(feeds.values()))
        np.testing.assert_array_equal(got[0], ort_run(model, feeds)[0])
    bad = {"x": np.ones((2, 6), np.float32), "shape": np.array([5, -1], np.int64),
           "starts": np.array([0], np.int64), "ends": np.array([1], np.int64)}
    with pytest.raises(RuntimeError, match="status 1"):  # 12 elements do not reshape to [5, -1]
        refruntime.run(info.program, list(bad.values()))


I64_MIN, I64_MAX = -2**63, 2**63 - 1


@pytest.mark.parametrize("step", [1, 2, -1, -3, I64_MAX, I64_MIN, -I64_MAX], ids=lambda s: f"step{s}")
def test_slice_clamps_any_int64_start_and_end_on_dynamic_dims(step, refruntime, tmp_path):
    """starts and ends fed (PyTorch exports x[:, 1:] with end INT64_MAX), over dynamic dims: ONNX clamps every
    int64 value (onnxruntime reads an end of INT64_MAX or INT32_MAX as "to the end", also stepping back); the
    program used to refuse them because its clamping arithmetic overflowed int64."""
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper

    model = make_model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
                       [("x", T.FLOAT, ["a", "b"]), ("starts", T.INT64, [1]), ("ends", T.INT64, [1])],
                       [("y", T.FLOAT, None)], [const("axes", np.array([1])), const("steps", np.array([step]))])
    info = compile_model(model, tmp_path / "a")
    names = [i["name"] for i in info.metadata["inputs"]]
    values = [I64_MIN, I64_MIN + 1, -2**31, -6, -5, -1, 0, 1, 4, 5, 6, 2**31 - 1, I64_MAX - 1, I64_MAX]
    rng = np.random.default_rng(11)
    for cols in (0, 1, 5):
        x = rng.standard_normal((2, cols)).astype(np.float32)
        for start in values:
            for end in values:
                feeds = {"x": x, "starts": np.array([start]), "ends": np.array([end])}
                (want,) = ort_run(model, feeds)
                (got,) = refruntime.run(info.program, [feeds[n] for n in names])
                assert got.shape == want.shape, (cols, start, end)
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("step", [I64_MAX, I64_MIN, 2**31 - 1], ids=lambda s: f"step{s}")
def test_slice_with_a_huge_constant_step_on_dynamic_dims(step, refruntime, tmp_path):
    """A constant step beyond any dim picks one element (or none), with the other parameters constant too."""
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper

    start, end = (0, I64_MAX) if step > 0 else (-1, I64_MIN)
    model = make_model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
                       [("x", T.FLOAT, ["a", "b"])], [("y", T.FLOAT, None)],
                       [const("starts", np.array([start])), const("ends", np.array([end])),
                        const("axes", np.array([1])), const("steps", np.array([step]))])
    info = compile_model(model, tmp_path / "a")
    for cols in (0, 1, 7):
        x = np.arange(3 * cols, dtype=np.float32).reshape(3, cols)
        (got,) = refruntime.run(info.program, [x])
        (want,) = ort_run(model, {"x": x})
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
