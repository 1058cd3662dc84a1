"""The small ops of ops/misc.py (CastLike, Size, Dropout, LogSoftmax, Hardmax, Swish, Shrink, IsInf, EyeLike,
LpNormalization, RMSNormalization, MeanVarianceNormalization, DepthToSpace, SpaceToDepth) compiled and run on
the reference runtime, on fixed shapes and with dynamic dims, compared with onnxruntime's CPU EP; and their
refusals."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import CompileError, ModelError, UnsupportedError

F, H, I32, I64, B = T.FLOAT, T.FLOAT16, T.INT32, T.INT64, T.BOOL
NP = {F: np.float32, H: np.float16, I32: np.int32, I64: np.int64, B: np.bool_}


def case(op, inputs, attrs=None, inits=(), n_out=1, opset=18, ident=None, sizes=(2, 3), special=False):
    """inputs: (name, elem type, dims with "N" for the dim that is dynamic in the dynamic variant); sizes: the
    values of N run; special: feeds with infinities."""
    return pytest.param(op, inputs, attrs or {}, list(inits), n_out, opset, sizes, special, id=ident or op)


X = [("x", F, ["N", 3, 4])]
CASES = [
    case("CastLike", [("x", F, ["N", 3, 4]), ("like", H, [1])], opset=19),
    case("CastLike", [("x", F, ["N", 3, 4]), ("like", I64, [])], opset=19, ident="CastLike-int64"),
    case("CastLike", [("x", I64, ["N", 3, 4]), ("like", F, [2])], opset=19, ident="CastLike-from-int64"),
    case("CastLike", [("x", F, ["N", 3, 4]), ("like", F, [])], opset=19, ident="CastLike-same-type"),
    case("Size", X, opset=19),
    case("Dropout", X, opset=13),
    case("Dropout", X, n_out=2, opset=13, ident="Dropout-mask"),
    case("Dropout", X, inits=[const("ratio", np.array(0.3, np.float32)), const("training", np.array(False))],
         n_out=2, opset=13, ident="Dropout-training-false"),
    case("LogSoftmax", X, opset=13, ident="LogSoftmax-default-axis"),
    case("LogSoftmax", X, {"axis": 0}, opset=13, ident="LogSoftmax-axis0"),
    case("LogSoftmax", [("x", H, ["N", 3, 4])], {"axis": 1}, opset=13, ident="LogSoftmax-f16"),
    case("Hardmax", X, opset=13), case("Hardmax", X, {"axis": 1}, opset=13, ident="Hardmax-axis1"),
    case("Hardmax", [("x", F, ["N", 3, 4])], {"axis": 0}, opset=13, ident="Hardmax-axis0"),
    case("Swish", X, opset=24), case("Swish", X, {"alpha": 0.5}, opset=24, ident="Swish-alpha"),
    case("Shrink", X, opset=13), case("Shrink", X, {"lambd": 0.7, "bias": 0.2}, opset=13, ident="Shrink-bias"),
    case("Shrink", [("x", I64, ["N", 3, 4])], {"lambd": 1.0, "bias": 1.0}, opset=13, ident="Shrink-int"),
    case("IsInf", X, opset=20, special=True),
    case("IsInf", X, {"detect_negative": 0}, opset=20, special=True, ident="IsInf-positive"),
    case("IsInf", X, {"detect_positive": 0}, opset=20, special=True, ident="IsInf-negative"),
    case("IsInf", X, {"detect_positive": 0, "detect_negative": 0}, opset=20, special=True, ident="IsInf-neither"),
    case("IsInf", [("x", H, ["N", 3, 4])], opset=20, special=True, ident="IsInf-f16"),
    case("EyeLike", [("x", F, ["N", 4])], opset=13),
    case("EyeLike", [("x", F, ["N", 4])], {"k": -1, "dtype": I64}, opset=13, ident="EyeLike-k-dtype"),
    case("EyeLike", [("x", I32, [3, "N"])], {"k": 2}, opset=13, ident="EyeLike-int32"),
    case("LpNormalization", X, opset=13),
    case("LpNormalization", X, {"p": 1, "axis": 1}, opset=13, ident="LpNormalization-p1"),
    case("LpNormalization", [("x", F, ["N", 3, 4])], {"axis": 0}, opset=13, ident="LpNormalization-axis0",
         sizes=(1, 2)),
    case("RMSNormalization", X, inits=[const("scale", np.linspace(0.5, 1.5, 4, dtype=np.float32))], opset=23),
    case("RMSNormalization", X, {"axis": 1, "epsilon": 1e-3},
         inits=[const("scale", np.linspace(0.5, 1.5, 12, dtype=np.float32).reshape(3, 4))], opset=23,
         ident="RMSNormalization-axis1"),
    case("MeanVarianceNormalization", [("x", F, ["N", 3, 4, 5])], opset=13),
    case("MeanVarianceNormalization", X, {"axes": [1, 2]}, opset=13, ident="MeanVarianceNormalization-axes"),
    case("DepthToSpace", [("x", F, ["N", 8, 2, 3])], {"blocksize": 2}, opset=13),
    case("DepthToSpace", [("x", F, ["N", 8, 2, 3])], {"blocksize": 2, "mode": "CRD"}, opset=13,
         ident="DepthToSpace-CRD"),
    case("SpaceToDepth", [("x", F, ["N", 2, 4, 6])], {"blocksize": 2}, opset=13),
]


def _feeds(inputs, n: int, rng, special: bool) -> dict:
    feeds = {}
    for name, t, dims in inputs:
        shape = [n if d == "N" else d for d in dims]
        if t == B:
            feeds[name] = rng.random(shape) > 0.5
        elif t in (I32, I64):
            feeds[name] = rng.integers(-3, 3, size=shape).astype(NP[t])
        else:
            v = rng.standard_normal(shape)
            if special:
                v.flat[::3] = np.inf
                v.flat[1::5] = -np.inf
                v.flat[2::7] = np.nan
            feeds[name] = v.astype(NP[t])
    return feeds


def _check(model, inputs, sizes, refruntime, tmp_path, special=False):
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    for n in sizes:
        feeds = _feeds(inputs, n, rng, special)
        got = refruntime.run(info.program, [feeds[k] for k, _, _ in inputs] + weights)
        want = ort_run(model, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            tol = 2e-3 if g.dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


@functools.cache
def _ort_loads_opset(opset: int) -> bool:
    """Whether this onnxruntime loads a model of this ai.onnx opset (1.23 stops at 23: Swish is 24)."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1])], [("y", F, [1])], opset=opset)
    try:
        ort_run(model, {"x": np.zeros(1, np.float32)})
    except Exception:  # noqa: BLE001 - onnxruntime's Fail for an opset it does not know
        return False
    return True


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("op,inputs,attrs,inits,n_out,opset,sizes,special", CASES)
def test_op_matches_onnxruntime(op, inputs, attrs, inits, n_out, opset, sizes, special, dynamic, refruntime,
                                tmp_path):
    if opset > 23 and not _ort_loads_opset(opset):
        pytest.skip(f"this onnxruntime does not load opset {opset}")
    names = [n for n, _, _ in inputs] + [t.name for t in inits]
    outs = ["out", "mask"][:n_out]
    node = helper.make_node(op, names, outs, **attrs)
    decl = [(n, t, [("N" if dynamic else sizes[0]) if d == "N" else d for d in dims]) for n, t, dims in inputs]
    model = make_model([node], decl, [(o, T.UNDEFINED, None) for o in outs], inits, opset=opset)
    _check(model, inputs, sizes if dynamic else sizes[:1], refruntime, tmp_path, special)


def test_size_is_a_host_value(tmp_path):
    """Size of a dynamic input is computed on the host: no kernel runs."""
    node = helper.make_node("Size", ["x"], ["out"])
    model = make_model([node], [("x", F, ["N", 3])], [("out", I64, [])], opset=19)
    assert compile_model(model, tmp_path / "art").metadata["kernel_nodes"] == []


def test_log_softmax_keeps_precision_for_large_inputs(refruntime, tmp_path):
    """(x - max) - log(sum(exp(x - max))): inputs near 1e4 keep the log-probabilities exact to float32."""
    node = helper.make_node("LogSoftmax", ["x"], ["out"])
    model = make_model([node], [("x", F, [2, 4])], [("out", F, None)], opset=13)
    x = np.array([[10000, 10001, 10002, 10003], [-10000, -10001, 0, 1]], np.float32)
    info = compile_model(model, tmp_path / "art")
    got = refruntime.run(info.program, [x])[0]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-6, atol=1e-6)


def test_lp_normalization_of_a_zero_vector_is_zero(refruntime, tmp_path):
    node = helper.make_node("LpNormalization", ["x"], ["out"], p=2)
    model = make_model([node], [("x", F, [2, 3])], [("out", F, None)], opset=13)
    x = np.array([[0, 0, 0], [3, 4, 0]], np.float32)
    got = refruntime.run(compile_model(model, tmp_path / "art").program, [x])[0]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0])
    np.testing.assert_allclose(got[0], 0)


def _refusal(tmp_path, nodes, inputs, outputs, inits=(), opset=13) -> CompileError:
    model = make_model(nodes, inputs, outputs, inits, opset=opset)
    with pytest.raises(CompileError) as err:
        compile_model(model, tmp_path / "art")
    return err.value


def test_dropout_in_training_mode_is_refused(tmp_path):
    node = helper.make_node("Dropout", ["x", "", "t"], ["out"])
    err = _refusal(tmp_path, [node], [("x", F, [2, 3])], [("out", F, [2, 3])], [const("t", np.array(True))])
    assert isinstance(err, UnsupportedError)
    assert "training_mode is true; Dropout is supported for inference only" in str(err)
    err = _refusal(tmp_path, [node], [("x", F, [2, 3]), ("t", B, [])], [("out", F, [2, 3])])
    assert "training_mode must be a constant false" in str(err)


@pytest.mark.parametrize("nodes,inputs,inits,message", [
    ([helper.make_node("LpNormalization", ["x"], ["out"], p=3)], [("x", F, [2, 3])], [],
     "p is 3; LpNormalization supports p = 1 or 2"),
    ([helper.make_node("DepthToSpace", ["x"], ["out"], blocksize=2)], [("x", F, [1, 6, 2, 2])], [],
     "the channel count 6 is not a multiple of 4"),
    ([helper.make_node("SpaceToDepth", ["x"], ["out"], blocksize=2)], [("x", F, [1, 1, 3, 2])], [],
     "the height 3 is not a multiple of 2"),
])
def test_model_errors(nodes, inputs, inits, message, tmp_path):
    err = _refusal(tmp_path, nodes, inputs, [("out", F, None)], inits)
    assert isinstance(err, ModelError)
    assert message in str(err)


def test_dynamic_depth_to_space_checks_the_channels_at_run_time(refruntime, tmp_path):
    """A dynamic channel count that is not a multiple of blocksize^2 fails the program's check."""
    node = helper.make_node("DepthToSpace", ["x"], ["out"], blocksize=2)
    model = make_model([node], [("x", F, [1, "C", 2, 2])], [("out", F, None)], opset=13)
    info = compile_model(model, tmp_path / "art")
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    np.testing.assert_array_equal(refruntime.run(info.program, [x])[0], ort_run(model, {"x": x})[0])
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [np.zeros((1, 6, 2, 2), np.float32)])
