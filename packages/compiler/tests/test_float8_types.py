"""BFLOAT16 and the FLOAT8 element types (ABI 1.3): Cast and CastLike (with saturate) to and from them and
the data movement ops on them, compiled, run on the reference runtime and compared bit for bit with
onnxruntime's CPU EP (NaN for NaN). FLOAT4E2M1 is refused at the graph input, naming why."""

from __future__ import annotations

import copy

import ml_dtypes
import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import AbiTargetError, UnsupportedError

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                        "ignore:overflow encountered:RuntimeWarning")

NARROW = {T.BFLOAT16: ml_dtypes.bfloat16, T.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
          T.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz, T.FLOAT8E5M2: ml_dtypes.float8_e5m2,
          T.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz}
F8 = [t for t in NARROW if t != T.BFLOAT16]
NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64, T.INT32: np.int32, T.INT64: np.int64,
      T.UINT8: np.uint8, **NARROW}
IDS = {t: T.DataType.Name(t).lower() for t in NP}
NARROW_DTYPES = {np.dtype(d) for d in NARROW.values()}


def _ids(types):
    return [IDS[t] for t in types]


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind not in "biu" else a


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


def _onnxruntime(model, feeds):
    """onnxruntime's CPU EP on the model; its numpy binding takes and gives none of these types, so narrow graph
    inputs come in as FLOAT through a Cast (exact: the values are the format's) and narrow outputs leave through
    a Cast to FLOAT (exact), converted back here."""
    import onnxruntime as ort

    m = copy.deepcopy(model)
    g = m.graph
    narrow_in = [v for v in g.input if v.type.tensor_type.elem_type in NARROW]
    narrow_out = {v.name: v.type.tensor_type.elem_type for v in g.output if v.type.tensor_type.elem_type in NARROW}
    pre = []
    for v in narrow_in:
        t = v.type.tensor_type.elem_type
        exact = {} if t == T.BFLOAT16 else {"saturate": 0}  # inf stays inf where the format has it
        pre.append(helper.make_node("Cast", [v.name + "_f32"], [v.name], to=t, **exact))
        v.name += "_f32"
        v.type.tensor_type.elem_type = T.FLOAT
    for v in g.output:
        if v.name in narrow_out:
            g.node.append(helper.make_node("Cast", [v.name], [v.name + "_f32"], to=T.FLOAT))
            v.name += "_f32"
            v.type.tensor_type.elem_type = T.FLOAT
    nodes = pre + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    ins = {(k + "_f32" if any(v.name == k + "_f32" for v in narrow_in) else k):
           (np.asarray(x).astype(np.float32) if np.asarray(x).dtype in NARROW_DTYPES else x) for k, x in feeds.items()}
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, ins)
    return [np.asarray(o).astype(NP[narrow_out[v.name]]) if v.name in narrow_out else o
            for o, v in zip(outs, model.graph.output, strict=True)]


def _onnx_reference(model, feeds):
    """onnx's reference evaluator (the node tests' expected outputs come from it)."""
    from onnx.reference import ReferenceEvaluator

    return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]


def _check(model, feeds, refruntime, tmp_path, reference=_onnxruntime):
    info = compile_model(model, tmp_path / "art")
    got = refruntime.run(info.program, list(feeds.values()) + load_weights(info.metadata, model))
    want = reference(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    return info


def _floats(n=512, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * rng.choice([1e-6, 1e-3, 1, 30, 500, 1e5], n)
    x[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 480.0, 57344.0 * 1.2, -1e9]
    return x.astype(np.float32).reshape(8, -1)


def _cast_model(src, dst, saturate=None, opset=19):
    attrs = {"to": dst} if saturate is None else {"to": dst, "saturate": saturate}
    return make_model([helper.make_node("Cast", ["x"], ["y"], **attrs)], [("x", src, [8, 64])],
                      [("y", dst, [8, 64])], opset=opset)


@pytest.mark.parametrize("saturate", [None, 1, 0])
@pytest.mark.parametrize("dst", list(NARROW), ids=_ids(NARROW))
@pytest.mark.parametrize("src", [T.FLOAT, T.FLOAT16], ids=_ids([T.FLOAT, T.FLOAT16]))
def test_cast_to_narrow_matches_onnxruntime(src, dst, saturate, refruntime, tmp_path):
    if dst == T.BFLOAT16 and saturate is not None:
        pytest.skip("onnxruntime refuses saturate on a cast to bfloat16 (the attribute is for float8)")
    x = _floats().astype(NP[src])
    if saturate == 0:  # onnxruntime's own no-saturate rules: the test below
        x[(np.abs(x) > 448) & np.isfinite(x)] = 3.0
    _check(_cast_model(src, dst, saturate), {"x": x}, refruntime, tmp_path)


@pytest.mark.parametrize("dst", F8, ids=_ids(F8))
def test_cast_without_saturate_matches_onnx(dst, refruntime, tmp_path):
    """saturate=0 past the finite range follows ONNX's Cast (inf for E5M2, NaN for the others; onnx's reference),
    where onnxruntime's CPU EP differs: a finite E4M3FN value for 480 and -481.9, NaN for E5M2's overflow."""
    x = np.concatenate([_floats().ravel(), [480.0, 490.0, -481.9, 62212.5, 64419.0, -62042.9]]).astype(np.float32)
    model = make_model([helper.make_node("Cast", ["x"], ["y"], to=dst, saturate=0)], [("x", T.FLOAT, [x.size])],
                       [("y", dst, [x.size])], opset=19)
    _check(model, {"x": x}, refruntime, tmp_path, _onnx_reference)


@pytest.mark.parametrize("dst", [T.FLOAT, T.FLOAT16], ids=_ids([T.FLOAT, T.FLOAT16]))
@pytest.mark.parametrize("src", list(NARROW), ids=_ids(NARROW))
def test_cast_from_narrow_matches_onnxruntime(src, dst, refruntime, tmp_path):
    x = _floats().astype(NP[src])  # every value of the format that the probe reaches
    _check(_cast_model(src, dst), {"x": x}, refruntime, tmp_path)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("dst", F8, ids=_ids(F8))
def test_castlike_with_saturate(dst, saturate, refruntime, tmp_path):
    like = helper.make_tensor("like", dst, [1], [0.0])
    node = helper.make_node("CastLike", ["x", "like"], ["y"], saturate=saturate)
    model = make_model([node], [("x", T.FLOAT, [8, 64])], [("y", dst, [8, 64])], [like], opset=19)
    x = _floats()
    if saturate == 0:  # onnxruntime's own no-saturate rules: test_cast_without_saturate_matches_onnx
        x[(np.abs(x) > 448) & np.isfinite(x)] = 3.0
    _check(model, {"x": x}, refruntime, tmp_path)


@pytest.mark.parametrize("t", list(NARROW), ids=_ids(NARROW))
def test_data_movement_of_narrow_types(t, refruntime, tmp_path):
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("Concat", ["xt", "xt"], ["c"], axis=0),
             helper.make_node("Reshape", ["c", "shape"], ["r"]),
             helper.make_node("Identity", ["r"], ["y"])]
    shape = helper.make_tensor("shape", T.INT64, [2], [16, 64])
    model = make_model(nodes, [("x", t, [64, 8])], [("y", t, [16, 64])], [shape], opset=19)
    x = (np.random.default_rng(1).standard_normal((64, 8)) * 10).astype(NP[t])
    # onnxruntime has no FLOAT8 Transpose or Concat: onnx's reference evaluator
    _check(model, {"x": x}, refruntime, tmp_path, _onnxruntime if t == T.BFLOAT16 else _onnx_reference)


def test_saturate_must_be_0_or_1(tmp_path):
    with pytest.raises(UnsupportedError, match="saturate must be 0 or 1, got 3"):
        compile_model(_cast_model(T.FLOAT, T.FLOAT8E4M3FN, 3), tmp_path / "art")


def test_float8_needs_abi_1_3(tmp_path):
    with pytest.raises(AbiTargetError, match="FLOAT8E4M3FN|float8e4m3fn"):
        compile_model(_cast_model(T.FLOAT, T.FLOAT8E4M3FN, 1), tmp_path / "art", abi="1.2")


def test_float4_is_refused_naming_why(tmp_path):
    model = make_model([helper.make_node("Cast", ["x"], ["y"], to=T.FLOAT)], [("x", T.FLOAT4E2M1, [4])],
                       [("y", T.FLOAT, [4])], opset=23)
    with pytest.raises(UnsupportedError, match="FLOAT4E2M1, which hipdnn-ep does not support .*packed"):
        compile_model(model, tmp_path / "art")


@pytest.mark.parametrize(("abi", "ints"), [("1.2", [[]]), ("1.3", [[0]])])
def test_cast_passes_saturate_only_from_abi_1_3(abi, ints, refruntime, tmp_path, monkeypatch):
    """Runtimes of ABI 1.1/1.2 validate a cast call with no int attributes: the lowering leaves saturate out."""
    model = _cast_model(T.FLOAT, T.INT32, 0)
    info = compile_model(model, tmp_path / "art", abi=abi)
    seen = []
    kernel_args = refruntime.kernel_args
    monkeypatch.setattr(refruntime, "kernel_args", lambda p: (r := kernel_args(p), seen.append(list(r[2])))[0])
    x = _floats()
    x[~np.isfinite(x) | (np.abs(x) > 1e9)] = 1.0
    (got,) = refruntime.run(info.program, [x])
    np.testing.assert_array_equal(got, x.astype(np.int32))
    assert seen == ints
