"""TopK, OneHot, the bitwise ops (BitwiseAnd/Or/Xor/Not, BitShift) and Einsum (ops/indexing.py,
ops/bitwise.py, ops/einsum.py) compiled and run on the reference runtime, on fixed and dynamic
shapes, compared with onnxruntime's CPU EP; and their refusals."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import ModelError, UnsupportedError

F, H, I64, I32, U8, I8 = T.FLOAT, T.FLOAT16, T.INT64, T.INT32, T.UINT8, T.INT8
NP = {F: np.float32, H: np.float16, I64: np.int64, I32: np.int32, U8: np.uint8, I8: np.int8}


def _feed(t, shape, rng):
    if t in (F, H):
        return rng.standard_normal(shape).astype(NP[t])
    info = np.iinfo(NP[t])
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(NP[t])


def _check(model, inputs, refruntime, tmp_path, sizes=(2,), feeds_of=None, exact=True):
    """Compile once, run for each size of the dim 'N' and compare every output with onnxruntime."""
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    for n in sizes:
        feeds = feeds_of(n, rng) if feeds_of else {
            name: _feed(t, [n if d == "N" else d for d in dims], rng) for name, t, dims in inputs}
        got = refruntime.run(info.program, [feeds[name] for name, _, _ in inputs] + weights)
        want = ort_run(model, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-5)
    return info


def _model(node, inputs, n_out=1, inits=(), opset=18, dynamic=False):
    decl = [(name, t, [("N" if dynamic else 2) if d == "N" else d for d in dims]) for name, t, dims in inputs]
    outs = [(f"out{k}" if n_out > 1 else "out", T.UNDEFINED, None) for k in range(n_out)]
    return make_model([node], decl, outs, list(inits), opset=opset)


DYN = pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])

# ---------------------------------------------------------------- TopK


@DYN
@pytest.mark.parametrize("axis,largest,elem", [(1, 1, F), (-1, 0, F), (0, 1, I64), (2, 0, I32), (1, 1, H)],
                         ids=["axis1-largest", "last-smallest", "axis0-int64", "int32-smallest", "f16"])
def test_top_k_matches_onnxruntime(axis, largest, elem, dynamic, refruntime, tmp_path):
    k = 2 if axis != 0 else 1
    node = helper.make_node("TopK", ["x", "k"], ["out0", "out1"], axis=axis, largest=largest)
    inputs = [("x", elem, ["N", 5, 6])]
    model = _model(node, inputs, n_out=2, inits=[const("k", np.array([k], np.int64))], dynamic=dynamic)

    def feeds(n, rng):  # few distinct values: ties, which come in index order
        return {"x": rng.integers(-3, 3, size=(n, 5, 6)).astype(NP[elem])}
    _check(model, inputs, refruntime, tmp_path, sizes=(2, 3, 1) if dynamic else (2,), feeds_of=feeds)


def test_top_k_nan_and_unsorted_and_k_equal_to_axis(refruntime, tmp_path):
    node = helper.make_node("TopK", ["x", "k"], ["out0", "out1"], axis=1, sorted=0)
    model = _model(node, [("x", F, [2, 4])], n_out=2, inits=[const("k", np.array([4], np.int64))])
    info = compile_model(model, tmp_path / "art")
    x = np.array([[1, np.nan, 3, 3], [np.inf, -1, np.nan, 0]], np.float32)
    values, indices = refruntime.run(info.program, [x] + load_weights(info.metadata, model))
    # written best first (sorted or not), NaN counted as the largest, ties in index order
    np.testing.assert_array_equal(indices, [[1, 2, 3, 0], [2, 0, 3, 1]])
    np.testing.assert_array_equal(values, x[np.arange(2)[:, None], indices])


def test_top_k_reads_k_from_a_graph_input(refruntime, tmp_path):
    """k fed at run time (a small int64 input read on the host) sets the output shape; k past the
    axis is refused by the program before anything runs."""
    node = helper.make_node("TopK", ["x", "k"], ["out0", "out1"], axis=-1)
    model = make_model([node], [("x", F, ["N", 6]), ("k", I64, [1])],
                       [("out0", F, None), ("out1", I64, None)], opset=18)
    info = compile_model(model, tmp_path / "art")
    rng = np.random.default_rng(0)
    for n, k in ((2, 3), (3, 6), (1, 0)):
        feeds = {"x": rng.standard_normal((n, 6)).astype(np.float32), "k": np.array([k], np.int64)}
        got = refruntime.run(info.program, [feeds["x"], feeds["k"]])
        for g, w in zip(got, ort_run(model, feeds), strict=True):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [np.zeros((2, 6), np.float32), np.array([7], np.int64)])
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [np.zeros((2, 6), np.float32), np.array([-1], np.int64)])
    texts = [c["text"] for c in info.metadata["checks"]]
    assert "k is {0}; it must be >= 0" in texts
    assert "k is {0} but axis 1 of the input has only {1} elements" in texts


def test_top_k_refusals(tmp_path):
    def model(k_init, x_dims=(2, 4), axis=1, k_input=None):
        node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis)
        inputs = [("x", F, list(x_dims))] + ([k_input] if k_input else [])
        return make_model([node], inputs, [("v", F, None), ("i", I64, None)], [k_init] if k_init else [], opset=18)
    with pytest.raises(ModelError, match=r"Axis has less than the requested k elements"):  # ONNX's inference
        compile_model(model(const("k", np.array([5], np.int64))), tmp_path / "a")
    with pytest.raises(ModelError, match=r"'v' has dim -1 after shape inference"):
        compile_model(model(const("k", np.array([-1], np.int64))), tmp_path / "b")
    with pytest.raises(ModelError, match=r"Invalid value for attribute axis"):  # ONNX's inference
        compile_model(model(const("k", np.array([1], np.int64)), axis=2), tmp_path / "c")
    with pytest.raises(UnsupportedError, match=r"k must be computable on the host"):
        compile_model(model(None, k_input=("k", I64, ["K"])), tmp_path / "d")


# ---------------------------------------------------------------- OneHot


@DYN
@pytest.mark.parametrize("axis,idx_type,val_type,depth_type", [(-1, I64, F, I64), (0, I32, F, I32), (1, F, I64, I64)],
                         ids=["last-int64", "first-int32", "middle-float-indices"])
def test_one_hot_matches_onnxruntime(axis, idx_type, val_type, depth_type, dynamic, refruntime, tmp_path):
    node = helper.make_node("OneHot", ["idx", "depth", "values"], ["out"], axis=axis)
    inputs = [("idx", idx_type, ["N", 3])]
    values = np.array([-2, 5], NP[val_type])
    model = _model(node, inputs, inits=[const("depth", np.array(4, NP[depth_type])), const("values", values)],
                   dynamic=dynamic)

    def feeds(n, rng):  # in range, negative (from the end) and out of range both ways
        return {"idx": rng.integers(-6, 6, size=(n, 3)).astype(NP[idx_type])}
    _check(model, inputs, refruntime, tmp_path, sizes=(2, 3, 1) if dynamic else (2,), feeds_of=feeds)


def test_one_hot_depth_from_a_graph_input(refruntime, tmp_path):
    node = helper.make_node("OneHot", ["idx", "depth", "values"], ["out"])
    model = make_model([node], [("idx", I64, [4]), ("depth", I32, [1]), ("values", F, [2])], [("out", F, None)],
                       opset=18)
    info = compile_model(model, tmp_path / "art")
    idx, values = np.array([0, 2, -1, 7], np.int64), np.array([0, 1], np.float32)
    for depth in (3, 8, 1):
        feeds = {"idx": idx, "depth": np.array([depth], np.int32), "values": values}
        got = refruntime.run(info.program, [idx, feeds["depth"], values])
        np.testing.assert_array_equal(got[0], ort_run(model, feeds)[0])
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [idx, np.array([0], np.int32), values])


def test_one_hot_values_of_dynamic_length_are_checked(refruntime, tmp_path):
    node = helper.make_node("OneHot", ["idx", "depth", "values"], ["out"])
    model = make_model([node], [("idx", I64, [2]), ("values", F, ["V"])], [("out", F, None)],
                       [const("depth", np.array(3, np.int64))], opset=18)
    info = compile_model(model, tmp_path / "art")
    idx = np.array([1, -1], np.int64)
    got = refruntime.run(info.program, [idx, np.array([0, 1], np.float32)])
    np.testing.assert_array_equal(got[0], [[0, 1, 0], [0, 0, 1]])
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [idx, np.zeros(3, np.float32)])
    assert "values has {0} elements; it must have 2 (off, on)" in [c["text"] for c in info.metadata["checks"]]


def test_one_hot_refusals(tmp_path):
    def model(depth, values=None, axis=-1):
        values = np.array([0, 1], np.float32) if values is None else values
        node = helper.make_node("OneHot", ["idx", "depth", "values"], ["out"], axis=axis)
        inits = [const("values", values)] + ([const("depth", depth)] if depth is not None else [])
        inputs = [("idx", I64, [3])] + ([("depth", F, [])] if depth is None else [])
        return make_model([node], inputs, [("out", F, None)], inits, opset=18)
    with pytest.raises(ModelError, match=r"depth is 0; it must be >= 1"):
        compile_model(model(np.array(0, np.int64)), tmp_path / "a")
    with pytest.raises(ModelError, match=r"must have exactly two elements"):  # ONNX's inference
        compile_model(model(np.array(2, np.int64), np.zeros(3, np.float32)), tmp_path / "b")
    with pytest.raises(ModelError, match=r"'axis' must be in"):  # ONNX's inference
        compile_model(model(np.array(2, np.int64), axis=2), tmp_path / "c")
    with pytest.raises(UnsupportedError, match=r"depth must be computable on the host"):
        compile_model(model(None), tmp_path / "d")


# ---------------------------------------------------------------- bitwise ops


@DYN
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("elem", [U8, I8, I32, I64], ids=["u8", "i8", "i32", "i64"])
def test_bitwise_binary_matches_onnxruntime(op, elem, dynamic, refruntime, tmp_path):
    inputs = [("a", elem, ["N", 3, 4]), ("b", elem, [3, 1])]
    model = _model(helper.make_node(op, ["a", "b"], ["out"]), inputs, dynamic=dynamic)
    _check(model, inputs, refruntime, tmp_path, sizes=(2, 3, 1) if dynamic else (2,))


@DYN
@pytest.mark.parametrize("elem", [U8, I8, I32, I64], ids=["u8", "i8", "i32", "i64"])
def test_bitwise_not_matches_onnxruntime(elem, dynamic, refruntime, tmp_path):
    inputs = [("a", elem, ["N", 3, 4])]
    model = _model(helper.make_node("BitwiseNot", ["a"], ["out"]), inputs, dynamic=dynamic)
    _check(model, inputs, refruntime, tmp_path, sizes=(2, 3, 1) if dynamic else (2,))


@DYN
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_matches_onnxruntime(direction, dynamic, refruntime, tmp_path):
    """uint8, the one unsigned type of the ABI (onnxruntime's BitShift takes unsigned types only);
    amounts of 8 and more shift every bit out."""
    inputs = [("a", U8, ["N", 4]), ("s", U8, [4])]
    model = _model(helper.make_node("BitShift", ["a", "s"], ["out"], direction=direction), inputs, dynamic=dynamic)

    def feeds(n, rng):
        return {"a": rng.integers(0, 256, size=(n, 4)).astype(np.uint8), "s": np.array([0, 3, 7, 9], np.uint8)}
    _check(model, inputs, refruntime, tmp_path, sizes=(2, 3, 1) if dynamic else (2,), feeds_of=feeds)


def test_bit_shift_of_signed_integers(refruntime, tmp_path):
    """Opset 28's signed BitShift: arithmetic right shift, wrapping left shift, amounts below 0 or at
    least the width shift every bit out (a negative value shifted right leaves -1)."""
    for direction, want in (("LEFT", [-16, 0, 0, 0, -128]), ("RIGHT", [-4, 0, -1, -1, 0])):
        node = helper.make_node("BitShift", ["a", "s"], ["out"], direction=direction)
        model = make_model([node], [("a", I8, [5]), ("s", I8, [5])], [("out", I8, None)], opset=18)
        info = compile_model(model, tmp_path / direction)
        a = np.array([-8, 4, -1, -1, 64], np.int8)
        s = np.array([1, 8, 127, -3, 1 if direction == "LEFT" else 7], np.int8)
        np.testing.assert_array_equal(refruntime.run(info.program, [a, s])[0], np.array(want, np.int8))


def test_bitwise_refusals(tmp_path):
    # every integer type is supported (INT16 and UINT32 were refused before ABI 1.3); a float is not
    node = helper.make_node("BitwiseAnd", ["a", "b"], ["out"])
    model = make_model([node], [("a", F, [3]), ("b", F, [3])], [("out", F, [3])], opset=18)
    with pytest.raises(UnsupportedError, match=r"binary BITWISE_AND does not support element type float32"):
        compile_model(model, tmp_path / "a")
    node = helper.make_node("BitShift", ["a", "s"], ["out"], direction="LEFT")
    model = make_model([node], [("a", H, [3]), ("s", H, [3])], [("out", H, [3])], opset=18)
    with pytest.raises(UnsupportedError, match=r"binary SHIFT_LEFT does not support element type float16"):
        compile_model(model, tmp_path / "b")
    node = helper.make_node("BitShift", ["a", "s"], ["out"], direction="UP")
    model = make_model([node], [("a", U8, [3]), ("s", U8, [3])], [("out", U8, [3])], opset=18)
    with pytest.raises(ModelError, match=r"direction is 'UP'; it must be LEFT or RIGHT"):
        compile_model(model, tmp_path / "c")


# ---------------------------------------------------------------- Einsum

EINSUM = [
    ("bij,bjk->bik", [["N", 2, 3], ["N", 3, 4]]),
    ("ij,jk", [[2, 3], [3, "N"]]),
    ("i,i", [["N"], ["N"]]),
    ("ij->ji", [["N", 3]]),
    ("ij->i", [["N", 3]]),
    ("bhqd,bhkd->bhqk", [["N", 2, 3, 4], ["N", 2, 5, 4]]),
    ("...ij,...jk->...ik", [["N", 2, 2, 3], [1, 2, 3, 4]]),
    ("i,j->ij", [[3], ["N"]]),
    ("abc,cd,de->ae", [["N", 2, 3], [3, 4], [4, 2]]),
    ("abc->", [["N", 2, 3]]),
    ("ijk,ikl->jl", [["N", 2, 3], ["N", 3, 2]]),
    ("...i,...i->...", [["N", 3], ["N", 3]]),
    ("bii->bi", [["N", 3, 3]]),
    ("ii", [[4, 4]]),
    ("ijii,jk->ki", [[3, "N", 3, 3], ["N", 2]]),
]


@DYN
@pytest.mark.parametrize("equation,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_onnxruntime(equation, shapes, dynamic, refruntime, tmp_path):
    names = [f"x{k}" for k in range(len(shapes))]
    inputs = [(n, F, s) for n, s in zip(names, shapes, strict=True)]
    model = _model(helper.make_node("Einsum", names, ["out"], equation=equation), inputs, dynamic=dynamic)
    _check(model, inputs, refruntime, tmp_path, sizes=(2, 3, 1) if dynamic else (2,), exact=False)


def test_einsum_refusals(tmp_path):
    def model(equation, shapes):
        names = [f"x{k}" for k in range(len(shapes))]
        node = helper.make_node("Einsum", names, ["out"], equation=equation)
        return make_model([node], [(n, F, s) for n, s in zip(names, shapes, strict=True)], [("out", F, None)],
                          opset=18)
    with pytest.raises(UnsupportedError, match=r"takes a diagonal over index 'i' of dynamic size"):
        compile_model(model("ii->i", [["n", "n"]]), tmp_path / "a")
    with pytest.raises(UnsupportedError, match=r"leaves the ellipsis out of its output"):
        compile_model(model("...ij->j", [[2, 3, 4]]), tmp_path / "e")
    with pytest.raises(UnsupportedError, match=r"matmul does not support element type int64"):
        node = helper.make_node("Einsum", ["a", "b"], ["out"], equation="ij,jk->ik")
        compile_model(make_model([node], [("a", I64, [2, 3]), ("b", I64, [3, 4])], [("out", I64, None)], opset=18),
                      tmp_path / "b")
    with pytest.raises(ModelError, match=r"index 'j' has size 3 in one operand and 4 in another"):
        m = model("ij,jk->ik", [[2, 3], [3, 4]])
        m.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 4
        compile_model(m, tmp_path / "c")
