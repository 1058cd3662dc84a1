"""Shapes and indices that a model or a feed controls never make a program read or write out of bounds.

Each case is a model ONNX Runtime's CPU EP refuses (at session creation or in Run); hipdnn-ep must
refuse it too, with one of its error types and a message naming the node and the broken relation:
at compile time where the shapes are static, at run time where they are not.  Never a crash, a wrong
shape or someone else's memory.  Everything runs in a child process (isolated.py), so a crash fails
the case instead of killing pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from isolated import Worker
from onnx import TensorProto, helper

BIG = 2**40


def _model(nodes, inputs, inits=(), out_rank=None, out_type=TensorProto.FLOAT) -> onnx.ModelProto:
    out = helper.make_tensor_value_info("y", out_type, None if out_rank is None else ["?"] * out_rank)
    g = helper.make_graph(nodes, "g", inputs, [out], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _x(dims, dtype=TensorProto.FLOAT, name="x"):
    return helper.make_tensor_value_info(name, dtype, dims)


def _i64(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _reshape_relu(x_dims, target, fed_target=False) -> onnx.ModelProto:
    inputs = [_x(x_dims)] + ([_x([len(target)], TensorProto.INT64, "s")] if fed_target else [])
    return _model([helper.make_node("Reshape", ["x", "s"], ["r"], name="r"),
                   helper.make_node("Relu", ["r"], ["y"], name="relu")],
                  inputs, [] if fed_target else [_i64("s", target)], out_rank=len(target))


@dataclass
class Case:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    expect: str  # a fragment of hipdnn-ep's message
    stage: str = "run"  # where hipdnn-ep refuses: "compile" or "run"
    through_ep: bool = False  # also run through ONNX Runtime with the plugin (slower: a session each)
    ends: bool = False  # the message ends with `expect`


def _f32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


CASES = {
    # the reproductions: x[N] -> Reshape(constant target) -> Relu, fed 6 floats
    "reshape_to_3000x3000": Case(_reshape_relu(["N"], [3000, 3000]), {"x": _f32(6)},
                                 "node 'r' (Reshape): input shape [6] has 6 elements but target shape [3000, 3000] "
                                 "has 9000000", through_ep=True),
    "reshape_to_4x2": Case(_reshape_relu(["N"], [4, 2]), {"x": _f32(6)},
                           "input shape [6] has 6 elements but target shape [4, 2] has 8", through_ep=True),
    "reshape_to_2x2": Case(_reshape_relu(["N"], [2, 2]), {"x": _f32(6)},
                           "input shape [6] has 6 elements but target shape [2, 2] has 4", through_ep=True),
    "reshape_to_minus1x4": Case(_reshape_relu(["N"], [-1, 4]), {"x": _f32(6)},
                                "target shape [-1, 4] (resolved to [1, 4]) has 4", through_ep=True),
    "reshape_static_6_to_2x2": Case(_reshape_relu([6], [2, 2]), {"x": _f32(6)},
                                    "input shape [6] has 6 elements but target shape [2, 2] has 4", stage="compile"),
    # a Reshape target fed at run time
    "reshape_fed_target_4x4": Case(_reshape_relu(["N"], [0, 0], fed_target=True),
                                   {"x": _f32(6), "s": np.array([4, 4], np.int64)},
                                   "input shape [6] has 6 elements but target shape [4, 4]"),
    "reshape_fed_target_two_minus1": Case(_reshape_relu(["N"], [0, 0], fed_target=True),
                                          {"x": _f32(1), "s": np.array([-1, -1], np.int64)},
                                          "has 2 entries equal to -1; at most one may be -1"),
    "reshape_fed_target_negative": Case(_reshape_relu(["N"], [0, 0], fed_target=True),
                                        {"x": _f32(6), "s": np.array([-3, -2], np.int64)},
                                        "has -3 at index 0; entries must be >= -1"),
    "reshape_fed_target_wraps_int64": Case(_reshape_relu(["N"], [0, 0], fed_target=True),
                                           {"x": _f32(0), "s": np.array([2**32, 2**32], np.int64)},
                                           "has overflow (the shape arithmetic overflows int64)"),
    "reshape_fed_target_0_beyond_the_input_rank": Case(_reshape_relu(["N"], [0, 0], fed_target=True),
                                                       {"x": _f32(0), "s": np.array([-1, 0], np.int64)},
                                                       "has 0 at index 1, which copies the input's dim 1"),
    "expand_to_fed_shape_that_overflows": Case(
        _model([helper.make_node("Expand", ["x", "s"], ["y"], name="e")], [_x([1, 1]), _x([2], TensorProto.INT64, "s")],
               out_rank=2),
        {"x": _f32(1, 1), "s": np.array([2**32, 2**32], np.int64)},
        "node 'e' (Expand): the byte size of the output shape [4294967296, 4294967296] overflows int64", ends=True),
    "expand_to_fed_negative_dim": Case(
        _model([helper.make_node("Expand", ["x", "s"], ["y"], name="e")], [_x([1, 1]), _x([2], TensorProto.INT64, "s")],
               out_rank=2),
        {"x": _f32(1, 1), "s": np.array([3, -1], np.int64)},
        "node 'e' (Expand): output dim 1 of shape [3, -1] is -1; dims must be >= 0"),
    # sizes beyond int64: a compile-time refusal, never an internal error
    "expand_to_2^40x2^40": Case(_model([helper.make_node("Expand", ["x", "s"], ["y"], name="e")], [_x([1, 1])],
                                       [_i64("s", [BIG, BIG])], out_rank=2), {"x": _f32(1, 1)},
                                "node 'e' (Expand): the output shape [1099511627776, 1099511627776] needs",
                                stage="compile"),
    "add_broadcast_to_2^40x2^40": Case(_model([helper.make_node("Add", ["x", "z"], ["y"], name="a")],
                                              [_x([BIG, 1]), _x([1, BIG], name="z")], out_rank=2), {},
                                       "more than int64 can address", stage="compile"),
    # Squeeze of an axis whose fed size is not 1
    "squeeze_fed_axis_of_3": Case(_model([helper.make_node("Squeeze", ["x", "a"], ["y"], name="q")], [_x(["N", 4])],
                                         [_i64("a", [0])], out_rank=1), {"x": _f32(3, 4)},
                                  "node 'q' (Squeeze): axis 0 of input shape [3, 4] has size 3"),
    # indices and shapes the kernels see
    "gather_fed_index_out_of_range": Case(
        _model([helper.make_node("Gather", ["x", "i"], ["y"], name="g", axis=0)],
               [_x(["N", 4]), _x([2], TensorProto.INT64, "i")], out_rank=2),
        {"x": _f32(3, 4), "i": np.array([0, 7], np.int64)},
        "index 7 at position 1 is out of range for axis 0 of size 3"),
    "gather_fed_negative_index_out_of_range": Case(
        _model([helper.make_node("Gather", ["x", "i"], ["y"], name="g", axis=1)],
               [_x([2, "N"]), _x([1], TensorProto.INT32, "i")], out_rank=2),
        {"x": _f32(2, 3), "i": np.array([-4], np.int32)},
        "index -4 at position 0 is out of range for axis 1 of size 3"),
    "gather_constant_index_out_of_range": Case(
        _model([helper.make_node("Gather", ["x", "i"], ["y"], name="g", axis=0)], [_x([3, 4])],
               [_i64("i", [5])], out_rank=2),
        {"x": _f32(3, 4)}, "node 'g' (Gather): index 5 is out of range for axis 0 of size 3", stage="compile"),
    "expand_fed_dims_that_do_not_broadcast": Case(
        _model([helper.make_node("Expand", ["x", "s"], ["y"], name="e")], [_x(["N"])], [_i64("s", [3])], out_rank=1),
        {"x": _f32(2)}, "input shape [2] does not broadcast to the target shape [3]: at axis 0"),
    "concat_fed_dims_that_differ": Case(
        _model([helper.make_node("Concat", ["x", "z"], ["y"], name="c", axis=0)],
               [_x(["N", "K"]), _x(["M", "L"], name="z")], out_rank=2),
        {"x": _f32(2, 2), "z": _f32(2, 3)},
        "node 'c' (Concat): input 1 has shape [2, 3], input 0 has [2, 2]; they must agree outside axis 0"),
    "transpose_perm_repeats_an_axis": Case(
        _model([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[0, 0])], [_x([2, 3])], out_rank=2),
        {"x": _f32(2, 3)}, "", stage="compile"),
    "slice_step_0": Case(
        _model([helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"], name="sl")], [_x(["N"])],
               [_i64("s", [0]), _i64("e", [2]), _i64("ax", [0]), _i64("st", [0])], out_rank=1),
        {"x": _f32(4)}, "", stage="compile"),
}


@pytest.fixture(scope="module")
def worker():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")
    pytest.importorskip("hipdnn_ep_runtime", reason="needs the hipdnn-ep-runtime wheel")
    w = Worker(timeout=120)
    yield w
    w.close()


def _request(tmp_path, action: str, case: Case) -> dict:
    onnx.save(case.model, tmp_path / "m.onnx")
    np.savez(tmp_path / "feeds.npz", **case.feeds)
    return {"action": action, "model": str(tmp_path / "m.onnx"), "feeds": str(tmp_path / "feeds.npz"),
            "out": str(tmp_path / f"{action}.npz"), "workdir": str(tmp_path)}


def _assert_refused(answer: dict, case: Case, stages: tuple[str, ...]) -> None:
    assert "crash" not in answer and "hang" not in answer, answer
    assert not answer["ok"], "accepted a model ONNX Runtime refuses"
    assert answer["clear"], answer
    assert answer["stage"] in stages, answer
    assert case.expect in answer["message"], answer["message"]
    assert not case.ends or answer["message"].endswith(case.expect), answer["message"]


@pytest.mark.parametrize("name", list(CASES))
def test_refused_like_onnxruntime_cpu(name, worker, tmp_path):
    case = CASES[name]
    if case.feeds or case.stage == "run":
        reference = worker.run(_request(tmp_path, "ort", case))
        assert reference["ok"] is False and "crash" not in reference, f"ORT's CPU EP accepts {name}: {reference}"
    answer = worker.run(_request(tmp_path, "artifact", case))
    _assert_refused(answer, case, (case.stage,))
    if case.stage == "compile":
        assert answer["type"] == "ModelError"


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.through_ep])
def test_refused_through_onnxruntime_with_the_ep(name, worker, tmp_path):
    pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
    case = CASES[name]
    answer = worker.run(_request(tmp_path, "ep", case))
    _assert_refused(answer, case, ("run",))
    assert "refused its inputs" in answer["message"]


def test_valid_feeds_of_the_same_models_still_run(worker, tmp_path):
    """The checks refuse only what is wrong: the same graphs with consistent feeds match ORT."""
    good = [(_reshape_relu(["N"], [-1, 4]), {"x": _f32(8) - 3}),
            (_reshape_relu(["N"], [0, 0], fed_target=True), {"x": _f32(6) - 2, "s": np.array([3, -1], np.int64)}),
            (CASES["squeeze_fed_axis_of_3"].model, {"x": _f32(1, 4)}),
            (CASES["gather_fed_index_out_of_range"].model, {"x": _f32(3, 4), "i": np.array([2, -3], np.int64)})]
    from isolated import load_outputs

    for k, (model, feeds) in enumerate(good):
        case = Case(model, feeds, "")
        sub = tmp_path / str(k)
        sub.mkdir()
        want = worker.run(_request(sub, "ort", case))
        got = worker.run(_request(sub, "artifact", case))
        assert want["ok"] and got["ok"], (want, got)
        for g, w in zip(load_outputs(sub / "artifact.npz"), load_outputs(sub / "ort.npz"), strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w)
