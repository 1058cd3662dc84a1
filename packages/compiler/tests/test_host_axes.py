"""Axes, split sizes and the like fed as small integer graph inputs, read on the host at run time
(ops/host_axes.py): Reduce*, Squeeze, Unsqueeze, CumSum and Split compiled once, run on the reference
runtime for several fed values (on fixed and symbolic data dims), compared with onnxruntime's CPU EP;
bad values refused by the program before anything runs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model
from hipdnn_ep_compiler.errors import UnsupportedError

F, I64, I32 = T.FLOAT, T.INT64, T.INT32
DYN = pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])


def _compile(node, x_dims, fed, tmp_path, dynamic, n_out=1, opset=18, fed_type=I64):
    """x (float, dims x_dims or symbolic ones) and the fed integer inputs [(name, n)]."""
    xd = [f"D{k}" for k in range(len(x_dims))] if dynamic else list(x_dims)
    inputs = [("x", F, xd)] + [(name, fed_type, [n] if n is not None else []) for name, n in fed]
    outs = [(f"y{k}" if n_out > 1 else "y", F, None) for k in range(n_out)]
    model = make_model([node], inputs, outs, opset=opset)
    return model, compile_model(model, tmp_path / "art")


def _run(refruntime, model, info, x, fed: dict, fed_type=np.int64):
    feeds = {"x": x, **{k: np.asarray(v, fed_type) for k, v in fed.items()}}
    got = refruntime.run(info.program, list(feeds.values()))
    want = ort_run(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _refused(refruntime, info, x, fed: dict, fed_type=np.int64):
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [x] + [np.asarray(v, fed_type) for v in fed.values()])


X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)

# ---------------------------------------------------------------- Reduce*


@DYN
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMean", "ReduceL2", "ReduceLogSumExp"])
def test_reduce_over_fed_axes(op, keepdims, dynamic, refruntime, tmp_path):
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
    model, info = _compile(node, X.shape, [("axes", 2)], tmp_path, dynamic)
    for axes in ([0, 2], [2, 0], [-1, 1], [1, -3]):
        _run(refruntime, model, info, X, {"axes": axes})
    if dynamic:
        _run(refruntime, model, info, X[:1, :, :3], {"axes": [2, 1]})


def test_reduce_over_one_fed_axis(refruntime, tmp_path):
    node = helper.make_node("ReduceProd", ["x", "axes"], ["y"], keepdims=0)
    model, info = _compile(node, X.shape, [("axes", 1)], tmp_path, False)
    for axes in ([0], [1], [-1]):
        _run(refruntime, model, info, X, {"axes": axes})


def test_reduce_fed_axes_refusals(refruntime, tmp_path):
    """Out of range, or one axis twice: refused by the program with the relation that failed."""
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    model, info = _compile(node, X.shape, [("axes", 2)], tmp_path, False)
    for bad in ([0, 3], [-4, 0], [1, 1], [1, -2]):
        _refused(refruntime, info, X, {"axes": bad})
    texts = [c["text"] for c in info.metadata["checks"]]
    assert "reduction axes[1] is {2}; it must be in [-3, 2] (the input has rank 3)" in texts
    assert "reduction axes[0] and reduction axes[1] both name axis {2}; an axis may be named once" in texts


def test_reduce_axes_of_symbolic_length_refusals(tmp_path):
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)  # no declared rank to count from
    model = make_model([node], [("x", F, [2, 3]), ("axes", I64, ["n"])], [("y", F, None)], opset=18)
    with pytest.raises(UnsupportedError, match="the reduction axes must be computable from constants"):
        compile_model(model, tmp_path / "a")
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], noop_with_empty_axes=1)
    model = make_model([node], [("x", F, [2, 3]), ("axes", I64, ["n"])], [("y", F, ["a", "b"])], opset=18)
    with pytest.raises(UnsupportedError, match="noop_with_empty_axes with reduction axes of symbolic length"):
        compile_model(model, tmp_path / "b")


@DYN
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceL1"])
def test_keepdims_reduce_over_axes_of_symbolic_length(op, dynamic, refruntime, tmp_path):
    """keepdims=1 keeps the rank for any count: up to rank(x) axes are read, the fed length is checked
    against it, none (length 0) reduces every axis."""
    xd = ["A", "B", "C"] if dynamic else list(X.shape)
    node = helper.make_node(op, ["x", "axes"], ["y"])
    model = make_model([node], [("x", F, xd), ("axes", I64, ["n"])], [("y", F, ["a", "b", "c"])], opset=18)
    info = compile_model(model, tmp_path / "art")
    for axes in ([1], [0, 2], [-1, 0, 1], [], [2]):
        _run(refruntime, model, info, X, {"axes": axes})
    for bad in ([0, 1, 2, 0], [1, 1], [0, -1, 2], [3], [-4, 0]):  # too many; repeated; out of range
        _refused(refruntime, info, X, {"axes": bad})


@pytest.mark.parametrize("op", ["ReduceSum", "Squeeze", "Unsqueeze"])
def test_axes_of_symbolic_length_counted_by_the_result_rank(op, refruntime, tmp_path):
    """An axes input of symbolic length whose count the declared result rank gives (keepdims 0, Squeeze,
    Unsqueeze): read on the host, its length checked by the program."""
    x = np.random.default_rng(2).standard_normal((1, 3, 1)).astype(np.float32)
    attrs = {"keepdims": 0} if op == "ReduceSum" else {}
    out_rank = 5 if op == "Unsqueeze" else 1
    node = helper.make_node(op, ["x", "axes"], ["y"], **attrs)
    model = make_model([node], [("x", F, ["A", "B", "C"]), ("axes", I64, ["n"])],
                       [("y", F, [f"o{k}" for k in range(out_rank)])], opset=18)
    info = compile_model(model, tmp_path / "art")
    for axes in ([0, 2], [-1, 0], [2, -3] if op != "Unsqueeze" else [1, -2]):
        _run(refruntime, model, info, x, {"axes": axes})
    for bad in ([0], [0, 2, 1], [], [0, 0]):  # another count; a repeated axis
        _refused(refruntime, info, x, {"axes": bad})
    assert "the axes input has {0} entries; the result needs 2" in [c["text"] for c in info.metadata["checks"]] \
        or op == "ReduceSum"


def test_split_sizes_of_symbolic_length_counted_by_the_outputs(refruntime, tmp_path):
    node = helper.make_node("Split", ["x", "split"], ["y0", "y1"], axis=1)
    model = make_model([node], [("x", F, ["A", "B", "C"]), ("split", I64, ["n"])],
                       [("y0", F, None), ("y1", F, None)], opset=18)
    info = compile_model(model, tmp_path / "art")
    for sizes in ([1, 2], [3, 0]):
        _run(refruntime, model, info, X, {"split": sizes})
    for bad in ([3], [1, 1, 1], [1, 1]):
        _refused(refruntime, info, X, {"split": bad})


# ---------------------------------------------------------------- Squeeze, Unsqueeze


@DYN
def test_unsqueeze_fed_axes(dynamic, refruntime, tmp_path):
    node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"])
    model, info = _compile(node, X.shape, [("axes", 2)], tmp_path, dynamic)
    for axes in ([0, 2], [4, 0], [-1, 1], [1, -3], [3, 4]):
        _run(refruntime, model, info, X, {"axes": axes})
    for bad in ([0, 5], [-6, 0], [2, 2], [4, -1]):
        _refused(refruntime, info, X, {"axes": bad})


@DYN
def test_squeeze_fed_axes(dynamic, refruntime, tmp_path):
    x = np.random.default_rng(1).standard_normal((1, 3, 1, 1)).astype(np.float32)
    node = helper.make_node("Squeeze", ["x", "axes"], ["y"])
    model, info = _compile(node, x.shape, [("axes", 2)], tmp_path, dynamic)
    for axes in ([0, 2], [3, 0], [-1, -2], [2, 3]):
        _run(refruntime, model, info, x, {"axes": axes})
    for bad in ([0, 1], [0, 0], [0, 4], [-5, 0], [3, -1]):  # axis 1 has size 3; twice; out of range
        _refused(refruntime, info, x, {"axes": bad})
    texts = [c["text"] for c in info.metadata["checks"]]
    assert any("Squeeze removes only axes of size 1" in t for t in texts)


# ---------------------------------------------------------------- CumSum


@DYN
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_fed_axis(exclusive, reverse, dynamic, refruntime, tmp_path):
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    model, info = _compile(node, X.shape, [("axis", None)], tmp_path, dynamic, opset=14)
    for axis in (0, 1, 2, -1, -3):
        _run(refruntime, model, info, X, {"axis": axis})
    for bad in (3, -4):
        _refused(refruntime, info, X, {"axis": bad})


def test_cumsum_fed_axis_moved_tensor_states_no_static_dim():
    """The tensors between the two transposes hold a run-time permutation of x's dims: their types must not
    keep x's static ones (a pass reading the type would take 2x3x4 for what may be 4x3x2)."""
    from hipdnn_ep_compiler.frontend.importer import import_model
    from hipdnn_ep_compiler.passes import run_pipeline

    node = helper.make_node("CumSum", ["x", "axis"], ["y"])
    module = run_pipeline(import_model(make_model([node], [("x", F, [2, 3, 4]), ("axis", I64, [])],
                                                  [("y", F, None)], opset=14)), until="refine-shapes")
    text = str(module)
    moved = [line for line in text.splitlines() if '"hipdnn.cumsum"' in line]
    assert len(moved) == 1 and "-> tensor<?x?x?xf32>" in moved[0], moved
    assert "-> tensor<2x3x4xf32>" in text  # the result, permuted back


def test_cumsum_fed_axis_of_a_vector(refruntime, tmp_path):
    node = helper.make_node("CumSum", ["x", "axis"], ["y"])
    x = np.arange(5, dtype=np.float32)
    model, info = _compile(node, x.shape, [("axis", 1)], tmp_path, False, opset=14)
    for axis in ([0], [-1]):
        _run(refruntime, model, info, x, {"axis": axis})
    _refused(refruntime, info, x, {"axis": [1]})


# ---------------------------------------------------------------- Split


@DYN
@pytest.mark.parametrize("opset", [13, 18])
def test_split_fed_sizes(opset, dynamic, refruntime, tmp_path):
    node = helper.make_node("Split", ["x", "split"], ["y0", "y1", "y2"], axis=2)
    model, info = _compile(node, X.shape, [("split", 3)], tmp_path, dynamic, n_out=3, opset=opset)
    for sizes in ([1, 2, 1], [0, 4, 0], [4, 0, 0], [2, 1, 1]):
        _run(refruntime, model, info, X, {"split": sizes})
    for bad in ([1, 1, 1], [2, 2, 2], [-1, 3, 2], [5, -1, 0]):  # sum off the axis; a negative size
        _refused(refruntime, info, X, {"split": bad})
    texts = [c["text"] for c in info.metadata["checks"]]
    assert "split entry 0 is {0}; sizes must be >= 0" in texts


# ---------------------------------------------------------------- Slice


def _slice_model(tmp_path, dynamic, steps_fed=True):
    xd = ["D0", "D1", "D2"] if dynamic else list(X.shape)
    inputs = [("x", F, xd), ("starts", I64, [2]), ("ends", I64, [2]), ("axes", I64, [2])]
    inputs += [("steps", I64, [2])] if steps_fed else []
    node = helper.make_node("Slice", [n for n, _, _ in inputs], ["y"])
    model = make_model([node], inputs, [("y", F, None)], opset=18)
    return model, compile_model(model, tmp_path / "art")


@DYN
def test_slice_fed_axes_and_steps(dynamic, refruntime, tmp_path):
    model, info = _slice_model(tmp_path, dynamic)
    big = np.iinfo(np.int64).max
    cases = (([0, 1], [2, 3], [0, 2], [1, 1]), ([3, 0], [0, 2], [2, 1], [-1, 1]),
             ([-1, 1], [-big, 100], [-1, -2], [-2, 2]), ([0, 2], [big, -big], [1, 0], [big, -1]),
             ([5, -7], [9, 9], [2, 1], [1, 3]), ([1, 1], [1, 0], [0, 1], [1, -1]))
    for starts, ends, axes, steps in cases:
        _run(refruntime, model, info, X, {"starts": starts, "ends": ends, "axes": axes, "steps": steps})
    ok = {"starts": [0, 0], "ends": [1, 1], "axes": [0, 1], "steps": [1, 1]}
    for bad in ({"axes": [0, 0]}, {"axes": [3, 0]}, {"axes": [-4, 0]}, {"steps": [0, 1]}, {"axes": [1, -2]}):
        _refused(refruntime, info, X, {**ok, **bad})
    texts = [c["text"] for c in info.metadata["checks"]]
    assert "steps[0] is {2}; a slice step must not be 0" in texts


def test_slice_fed_axes_constant_steps(refruntime, tmp_path):
    model, info = _slice_model(tmp_path, False, steps_fed=False)
    for starts, ends, axes in (([0, 1], [2, 3], [0, 2]), ([1, -2], [3, 9], [2, 1]), ([0, 0], [0, 4], [-3, -1])):
        _run(refruntime, model, info, X, {"starts": starts, "ends": ends, "axes": axes})


# ---------------------------------------------------------------- Pad


@DYN
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_fed_axes(mode, dynamic, refruntime, tmp_path):
    xd = ["D0", "D1", "D2"] if dynamic else list(X.shape)
    inputs = [("x", F, xd), ("pads", I64, [4]), ("v", F, []), ("axes", I64, [2])]
    node = helper.make_node("Pad", ["x", "pads", "v", "axes"] if mode == "constant" else ["x", "pads", "", "axes"],
                            ["y"], mode=mode)
    if mode != "constant":
        inputs.pop(2)
    model = make_model([node], inputs, [("y", F, None)], opset=18)
    info = compile_model(model, tmp_path / "art")
    extra = {"v": np.array(2.5, np.float32)} if mode == "constant" else {}
    cases = [([1, 0, 1, 2], [0, 2]), ([0, 2, 1, 0], [-1, 1])] + ([([1, 1, 0, -1], [2, 0])] if mode != "reflect" else [])
    for pads, axes in cases:
        feeds = {"x": X, "pads": np.array(pads, np.int64), **extra, "axes": np.array(axes, np.int64)}
        got = refruntime.run(info.program, list(feeds.values()))
        np.testing.assert_allclose(got[0], ort_run(model, feeds)[0])
    for axes in ([0, 0], [3, 0]):
        feeds = {"x": X, "pads": np.zeros(4, np.int64), **extra, "axes": np.array(axes, np.int64)}
        with pytest.raises(RuntimeError, match="status 1"):
            refruntime.run(info.program, list(feeds.values()))
