"""The integer element types of ABI 1.3 through the compiler: INT16, UINT16, UINT32 and UINT64 graph inputs
and outputs, INT8/UINT8 arithmetic and comparisons, and Pow of integers (with mixed base and exponent
types), compiled, run on the reference runtime and compared exactly with onnxruntime's CPU EP (with onnx's
reference evaluator where onnxruntime has no kernel for the type, e.g. its ReduceSum of uint16)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import make_model
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import AbiTargetError, UnsupportedError

I8, U8, I16, U16, I32, U32, I64, U64 = T.INT8, T.UINT8, T.INT16, T.UINT16, T.INT32, T.UINT32, T.INT64, T.UINT64
F, H, BOOL = T.FLOAT, T.FLOAT16, T.BOOL
NP = {I8: np.int8, U8: np.uint8, I16: np.int16, U16: np.uint16, I32: np.int32, U32: np.uint32, I64: np.int64,
      U64: np.uint64, F: np.float32, H: np.float16, BOOL: np.bool_}
NEW = [I16, U16, U32, U64]
SMALL = [I8, U8]
IDS = {I8: "i8", U8: "u8", I16: "i16", U16: "u16", I32: "i32", U32: "u32", I64: "i64", U64: "u64", F: "f32",
       H: "f16", BOOL: "bool"}
IDS_LONG = {I16: "int16", U16: "uint16", U32: "uint32", U64: "uint64"}


def _ids(types):
    return [IDS[t] for t in types]


def _reference(model, feeds):
    """onnxruntime's CPU EP, or onnx's reference evaluator where onnxruntime has no kernel for the type."""
    import onnxruntime as ort
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001  (NOT_IMPLEMENTED: no kernel for the type)
        if "NOT_IMPLEMENTED" not in str(e) and "not implemented" not in str(e).lower():
            raise
        from onnx.reference import ReferenceEvaluator
        return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]
    return sess.run(None, feeds)


def _values(t, shape, seed, low=None, high=None):
    info = np.iinfo(NP[t])
    lo = info.min if low is None else low
    hi = info.max if high is None else high
    return np.random.default_rng(seed).integers(lo, hi, size=shape, dtype=NP[t], endpoint=True)


def _check(model, feeds, refruntime, tmp_path):
    info = compile_model(model, tmp_path / "art")
    got = refruntime.run(info.program, list(feeds.values()) + load_weights(info.metadata, model))
    want = _reference(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return info


def _binary_model(op, t, out_t=None, opset=18):
    return make_model([helper.make_node(op, ["a", "b"], ["y"])], [("a", t, [3, 4]), ("b", t, [4])],
                      [("y", t if out_t is None else out_t, None)], opset=opset)


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_wrapping_arithmetic_matches_onnxruntime(op, t, refruntime, tmp_path):
    feeds = {"a": _values(t, [3, 4], 1), "b": _values(t, [4], 2)}
    _check(_binary_model(op, t), feeds, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
def test_div_and_mod_match_onnxruntime(t, refruntime, tmp_path):
    b = _values(t, [4], 2)
    b[b == 0] = 3  # by zero: onnxruntime and the runtime both fail the run
    a = _values(t, [3, 4], 1)
    _check(_binary_model("Div", t), {"a": a, "b": b}, refruntime, tmp_path / "div")
    _check(_binary_model("Mod", t), {"a": a, "b": b}, refruntime, tmp_path / "mod")


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons_match_onnxruntime(op, t, refruntime, tmp_path):
    a = _values(t, [3, 4], 3)
    b = _values(t, [4], 4)
    b[0] = a[0, 0]
    _check(_binary_model(op, t, BOOL), {"a": a, "b": b}, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
@pytest.mark.parametrize("op", ["Min", "Max"])
def test_min_max_match(op, t, refruntime, tmp_path):
    feeds = {"a": _values(t, [3, 4], 5), "b": _values(t, [4], 6)}
    _check(_binary_model(op, t), feeds, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
def test_clip_matches_onnxruntime(t, refruntime, tmp_path):
    lo, hi = np.array(10, NP[t]), np.array(100, NP[t])
    model = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [("x", t, [2, 8])], [("y", t, None)],
                       [onnx.numpy_helper.from_array(lo, "lo"), onnx.numpy_helper.from_array(hi, "hi")], opset=18)
    _check(model, {"x": _values(t, [2, 8], 7)}, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
def test_unary_ops_match_onnxruntime(t, refruntime, tmp_path):
    signed = np.issubdtype(NP[t], np.signedinteger)
    ops = ["Abs", "Sign"] + (["Neg"] if signed else []) + (["Relu"] if t in (I8, I16) else [])
    nodes = [helper.make_node(op, ["x"], [f"y{k}"]) for k, op in enumerate(ops)]
    model = make_model(nodes, [("x", t, [2, 8])], [(f"y{k}", t, None) for k in range(len(ops))], opset=18)
    _check(model, {"x": _values(t, [2, 8], 8)}, refruntime, tmp_path)


CAST_TYPES = [F, H, I8, U8, I16, U16, I32, U32, I64, U64, BOOL]


@pytest.mark.parametrize("src", CAST_TYPES, ids=_ids(CAST_TYPES))
def test_cast_to_every_new_type_and_back(src, refruntime, tmp_path):
    nodes = [helper.make_node("Cast", ["x"], [f"to{t}"], to=t) for t in NEW]
    nodes += [helper.make_node("Cast", [f"to{t}"], [f"back{t}"], to=src) for t in NEW]
    outs = [(f"to{t}", t, None) for t in NEW] + [(f"back{t}", src, None) for t in NEW]
    model = make_model(nodes, [("x", src, [2, 4])], outs, opset=18)
    x = np.array([[0, 1, 2, 100], [7, 0, 127, 3]]).astype(NP[src])
    _check(model, {"x": x}, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW, ids=_ids(NEW))
def test_where_and_data_movement_match(t, refruntime, tmp_path):
    nodes = [helper.make_node("Where", ["c", "a", "b"], ["w"]),
             helper.make_node("Transpose", ["a"], ["tr"], perm=[1, 0]),
             helper.make_node("Concat", ["a", "b"], ["cat"], axis=0),
             helper.make_node("Gather", ["a", "idx"], ["g"], axis=1),
             helper.make_node("Slice", ["a", "st", "en"], ["sl"]),
             helper.make_node("Reshape", ["a", "shape"], ["rs"])]
    inits = [onnx.numpy_helper.from_array(np.array([3, 0], np.int64), "idx"),
             onnx.numpy_helper.from_array(np.array([1], np.int64), "st"),
             onnx.numpy_helper.from_array(np.array([3], np.int64), "en"),
             onnx.numpy_helper.from_array(np.array([4, 2], np.int64), "shape")]
    outs = [(n, T.UNDEFINED, None) for n in ("w", "tr", "cat", "g", "sl", "rs")]
    model = make_model(nodes, [("c", BOOL, [2, 4]), ("a", t, [2, 4]), ("b", t, [2, 4])], outs, inits, opset=18)
    feeds = {"c": np.array([[True, False, True, False]] * 2), "a": _values(t, [2, 4], 9), "b": _values(t, [2, 4], 10)}
    _check(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW + SMALL, ids=_ids(NEW + SMALL))
def test_reductions_match(t, refruntime, tmp_path):
    # the types ONNX defines each op for (opset 18): ReduceSum/Prod of the 32- and 64-bit integers,
    # ReduceMax/Min of those and the 8-bit ones, ArgMax/ArgMin of every integer type
    axes = onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("ArgMax", ["x"], ["amax"], axis=1, keepdims=0),
             helper.make_node("ArgMin", ["x"], ["amin"], axis=1, keepdims=0)]
    if t in (U32, U64):
        nodes += [helper.make_node("ReduceSum", ["x", "axes"], ["sum"], keepdims=0),
                  helper.make_node("ReduceProd", ["x", "axes"], ["prod"], keepdims=0)]
    if t in (U32, U64, I8, U8):
        nodes += [helper.make_node("ReduceMax", ["x", "axes"], ["max"], keepdims=1),
                  helper.make_node("ReduceMin", ["x", "axes"], ["min"], keepdims=0)]
    outs = [(n.output[0], T.UNDEFINED, None) for n in nodes]
    model = make_model(nodes, [("x", t, [3, 5])], outs, [axes], opset=18)
    _check(model, {"x": _values(t, [3, 5], 11, low=0, high=9)}, refruntime, tmp_path)


@pytest.mark.parametrize("t", NEW, ids=_ids(NEW))
def test_cumsum_and_top_k_match(t, refruntime, tmp_path):
    nodes = [helper.make_node("TopK", ["x", "k"], ["vals", "idx"], axis=1)]
    if t in (U32, U64):  # CumSum's integer types: int32, int64, uint32, uint64
        nodes.append(helper.make_node("CumSum", ["x", "axis"], ["cs"]))
    inits = [onnx.numpy_helper.from_array(np.array(1, np.int64), "axis"),
             onnx.numpy_helper.from_array(np.array([3], np.int64), "k")]
    outs = [(o, T.UNDEFINED, None) for n in nodes for o in n.output]
    model = make_model(nodes, [("x", t, [2, 6])], outs, inits, opset=18)
    x = np.array([[5, 1, 9, 9, 0, 3], [2, 2, 7, 1, 8, 4]]).astype(NP[t])
    _check(model, {"x": x}, refruntime, tmp_path)


# ---------------------------------------------------------------- Pow


@pytest.mark.parametrize("base,exponent", [(I32, I32), (I64, I64), (I32, I64), (I64, I32)],
                         ids=["i32-i32", "i64-i64", "i32-i64", "i64-i32"])
def test_integer_pow_matches_onnxruntime(base, exponent, refruntime, tmp_path):
    model = make_model([helper.make_node("Pow", ["a", "b"], ["y"])], [("a", base, [8]), ("b", exponent, [8])],
                       [("y", base, None)], opset=18)
    a = np.array([2, 3, -2, -3, 0, 5, 1, 10], NP[base])
    b = np.array([10, 4, 3, 2, 0, 3, 7, 3], NP[exponent])
    _check(model, {"a": a, "b": b}, refruntime, tmp_path)


@pytest.mark.parametrize("base,exponent", [(F, I32), (F, I64), (H, I64)], ids=["f32-i32", "f32-i64", "f16-i64"])
def test_float_pow_with_an_integer_exponent(base, exponent, refruntime, tmp_path):
    model = make_model([helper.make_node("Pow", ["a", "b"], ["y"])], [("a", base, [6]), ("b", exponent, [6])],
                       [("y", base, None)], opset=18)
    a = np.array([1.5, -2.0, 0.5, 3.0, 2.0, -1.25], NP[base])
    b = np.array([2, 3, -2, 0, 5, 1], NP[exponent])
    info = compile_model(model, tmp_path / "art")
    got = refruntime.run(info.program, [a, b])[0]
    want = _reference(model, {"a": a, "b": b})[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("base,exponent", [(I32, F), (I64, F), (I32, T.DOUBLE), (I64, H)],
                         ids=["i32-f32", "i64-f32", "i32-f64", "i64-f16"])
def test_integer_pow_with_a_float_exponent_matches_onnxruntime(base, exponent, refruntime, tmp_path):
    # computed in FLOAT64 and truncated back, as onnxruntime's std::pow(int, float) and conversion
    model = make_model([helper.make_node("Pow", ["a", "b"], ["y"])], [("a", base, [7]), ("b", exponent, [7])],
                       [("y", base, None)], opset=18)
    a = np.array([2, 3, 4, -2, 7, 10, 0], NP[base])
    b = np.array([0.5, 2.5, 0.5, 3, -1, 9, 0], np.float64 if exponent == T.DOUBLE else NP[exponent])
    _check(model, {"a": a, "b": b}, refruntime, tmp_path)


@pytest.mark.parametrize("t", [I8, U8, I16, U16, U32, U64], ids=_ids([I8, U8, I16, U16, U32, U64]))
def test_pow_of_other_integer_types_is_refused(t, tmp_path):
    # ONNX Pow's T is int32, int64 or a float type: onnx's checker refuses the others; the kernel does too
    model = _binary_model("Pow", t)
    with pytest.raises(UnsupportedError, match="binary POW does not support element type"):
        compile_model(model, tmp_path / "art")


def test_the_new_types_are_graph_input_and_output_types(tmp_path):
    # once refused: "graph input 'x' has element type UINT16, which hipdnn-ep does not support"
    for t in NEW:
        model = make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", t, [2])], [("y", t, [2])], opset=18)
        info = compile_model(model, tmp_path / f"art{t}")
        assert info.metadata["inputs"][0]["dtype"] == t


@pytest.mark.parametrize("t", NEW, ids=_ids(NEW))
def test_a_graph_passing_a_new_type_through_needs_abi_1_3(t, tmp_path):
    # no kernel touches the tensor (an alias), so the graph's own element types set the minimum ABI
    model = make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", t, [2])], [("y", t, [2])], opset=18)
    assert compile_model(model, tmp_path / "new").metadata["abi"]["min_minor"] == 3
    with pytest.raises(AbiTargetError, match=rf"graph input 'x' has element type {IDS_LONG[t]}, which runtime ABI "
                                             r"1.3 added; the target ABI is 1.2"):
        compile_model(model, tmp_path / "old", abi="1.2")
    u8 = make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", U8, [2])], [("y", U8, [2])], opset=18)
    assert compile_model(u8, tmp_path / "u8", abi="1.1").metadata["abi"]["min_minor"] == 0
