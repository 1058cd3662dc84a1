"""Every supported op, compiled and executed (reference runtime) on fixed and dynamic shapes,
compared with onnxruntime's CPU EP."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import ModelError, UnsupportedError

F, H, I64, B = T.FLOAT, T.FLOAT16, T.INT64, T.BOOL
NP = {F: np.float32, H: np.float16, I64: np.int64, B: np.bool_}


def case(op, inputs, attrs=None, inits=(), n_out=1, opset=17, domain="", positive=False, ident=None):
    """inputs: (name, elem type, dims with 'N' for the dimension that is dynamic in the dynamic variant)."""
    return pytest.param(op, inputs, attrs or {}, list(inits), n_out, opset, domain, positive, id=ident or op)


X34 = [("x", F, ["N", 3, 4])]
XY = [("x", F, ["N", 3, 4]), ("y", F, [3, 4])]
CASES = [
    *[case(op, XY) for op in ("Add", "Sub", "Mul")],
    case("Div", XY, positive=True),
    case("Pow", [("x", F, ["N", 3, 4]), ("y", F, [1, 4])], positive=True),
    *[case(op, XY) for op in ("Equal", "Less", "Greater")],
    case("Add", [("x", H, ["N", 3, 4]), ("y", H, [4])], ident="Add-f16"),
    *[case(op, X34) for op in ("Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Erf")],
    case("Log", X34, positive=True), case("Sqrt", X34, positive=True),
    case("Gelu", X34, opset=20), case("Gelu", X34, {"approximate": "tanh"}, opset=20, ident="Gelu-tanh"),
    case("Gelu", X34, domain="com.microsoft", ident="Gelu-contrib"),
    case("FastGelu", X34, domain="com.microsoft"),
    case("MatMul", [("x", F, ["N", 3, 4]), ("y", F, [4, 5])]),
    case("MatMul", [("x", F, ["N", 1, 3, 4]), ("y", F, [2, 4, 5])], ident="MatMul-batched-broadcast"),
    case("Gemm", [("x", F, ["N", 4]), ("y", F, [5, 4]), ("c", F, [5])], {"transB": 1, "alpha": 0.5, "beta": 2.0}),
    case("Softmax", X34, {"axis": 1}),
    case("LayerNormalization", [("x", F, ["N", 3, 4])], {"axis": -1, "epsilon": 1e-3},
         inits=[const("scale", np.linspace(0.5, 1.5, 4, dtype=np.float32)), const("bias", np.ones(4, np.float32))]),
    case("ReduceSum", X34, {"keepdims": 1}, inits=[const("axes", np.array([1], np.int64))]),
    case("ReduceMean", X34, {"keepdims": 0}, inits=[const("axes", np.array([-1], np.int64))], opset=18),
    case("ReduceMax", X34, {"axes": [2], "keepdims": 1}, opset=13),
    case("Reshape", X34, inits=[const("shape", np.array([0, -1], np.int64))]),
    case("Transpose", X34, {"perm": [2, 0, 1]}),
    case("Concat", [("x", F, ["N", 3, 4]), ("y", F, ["N", 2, 4])], {"axis": 1}),
    case("Slice", X34, inits=[const("starts", np.array([1, -3], np.int64)), const("ends", np.array([3, 100], np.int64)),
                              const("axes", np.array([1, 2], np.int64)), const("steps", np.array([1, 2], np.int64))]),
    case("Slice", X34, inits=[const("starts", np.array([-1], np.int64)), const("ends", np.array([-100], np.int64)),
                              const("axes", np.array([2], np.int64)), const("steps", np.array([-2], np.int64))],
         ident="Slice-negative-step"),
    case("Gather", [("x", F, ["N", 3, 4]), ("idx", I64, [2])], {"axis": 1}),
    case("Unsqueeze", X34, inits=[const("axes", np.array([0, -1], np.int64))]),
    case("Squeeze", [("x", F, ["N", 1, 4])], inits=[const("axes", np.array([1], np.int64))]),
    case("Shape", X34),
    case("Expand", [("x", F, ["N", 1, 4])], inits=[const("shape", np.array([3, 1], np.int64))]),
    case("Cast", X34, {"to": T.FLOAT16}),
    case("Where", [("c", B, ["N", 3, 4]), ("x", F, [3, 4]), ("y", F, ["N", 3, 1])]),
    # the ops of attention-mask and shape code
    *[case(op, XY) for op in ("GreaterOrEqual", "LessOrEqual", "Min", "Max")],
    *[case(op, [("a", B, ["N", 3, 4]), ("b", B, [3, 1])]) for op in ("And", "Or", "Xor")],
    case("Not", [("a", B, ["N", 3, 4])]),
    *[case(op, X34) for op in ("Abs", "Floor", "Ceil", "Sign", "IsNaN")],
    case("Reciprocal", X34, positive=True),
    case("Mod", XY, {"fmod": 1}, positive=True),
    case("Mod", XY, opset=28, ident="Mod-float-floor"),
    case("Mod", [("i", I64, ["N", 3, 4])], inits=[const("d", np.array([3, -2, 5, 1], np.int64))], ident="Mod-int"),
    case("Clip", X34, inits=[const("lo", np.array(-0.5, np.float32)), const("hi", np.array(0.5, np.float32))]),
    case("GatherElements", [("x", F, ["N", 3, 4]), ("idx", I64, [1, 3, 2])], {"axis": 2}),
    case("Flatten", X34, {"axis": 2}),
    case("CumSum", X34, {"exclusive": 1, "reverse": 1}, inits=[const("axis", np.array(-1, np.int64))]),
    case("Trilu", X34, {"upper": 0}, inits=[const("k", np.array(1, np.int64))]),
    case("Tile", X34, inits=[const("repeats", np.array([2, 1, 3], np.int64))]),
    case("ConstantOfShape", [], {"value": numpy_helper.from_array(np.array([2.5], np.float16))},
         inits=[const("shape", np.array([2, 3], np.int64))]),
    # the general ops
    *[case(op, X34) for op in ("Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Softsign")],
    case("Round", [("x", F, ["N", 3, 4])], ident="Round"),
    case("Sum", [("x", F, ["N", 3, 4]), ("y", F, [3, 1]), ("z", F, [4])], ident="Sum-3"),
    case("Mean", [("x", F, ["N", 3, 4]), ("y", F, [3, 1]), ("z", F, [4])], ident="Mean-3"),
    case("Mean", [("x", H, ["N", 3, 4]), ("y", H, [4])], ident="Mean-f16"),
    case("Sum", [("x", F, ["N", 3, 4])], ident="Sum-1"),
    # (Asin, Acos, Acosh, Atanh: their domains are narrower than these feeds; the node tests cover them)
    *[case(op, X34, {"keepdims": k}, inits=[const("axes", np.array([1, -1], np.int64))], opset=18,
           ident=f"{op}-keepdims{k}")
      for op in ("ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare")
      for k in (0, 1)],
    case("ReduceLogSum", X34, {"keepdims": 1}, inits=[const("axes", np.array([2], np.int64))], opset=18,
         positive=True),
    case("ReduceLogSumExp", X34, {"axes": [0], "keepdims": 0}, opset=13, ident="ReduceLogSumExp-attr-axes"),
    case("ReduceL1", X34, {"noop_with_empty_axes": 1}, opset=18, ident="ReduceL1-noop"),
    case("ReduceSumSquare", X34, {"noop_with_empty_axes": 1}, opset=18, ident="ReduceSumSquare-noop"),
    case("ReduceMin", [("i", I64, ["N", 3, 4])], {"keepdims": 0}, opset=18, ident="ReduceMin-int-all-axes"),
    case("ArgMax", X34, {"axis": 1, "keepdims": 1}),
    case("ArgMin", X34, {"axis": -1, "keepdims": 0, "select_last_index": 1}),
    case("ArgMax", [("i", I64, ["N", 3, 4])], {"axis": 2, "select_last_index": 1}, ident="ArgMax-int-ties-last"),
    case("ArgMin", [("i", I64, ["N", 3, 4])], {"axis": 2}, ident="ArgMin-int-ties-first"),
    *[case("Pad", [("x", F, ["N", 3, 4])], {"mode": m},
           inits=[const("pads", np.array([0, 1, 2, 0, 2, 1], np.int64))], opset=19, ident=f"Pad-{m}")
      for m in ("reflect", "edge", "wrap")],
    case("Pad", [("x", F, ["N", 3, 4])], inits=[const("pads", np.array([1, -1, 2, 3], np.int64)),
                                                 const("value", np.array(1.5, np.float32)),
                                                 const("axes", np.array([0, -1], np.int64))],
         opset=19, ident="Pad-constant-axes-crop"),
    case("Pad", [("i", I64, ["N", 3, 4])], inits=[const("pads", np.array([0, 0, 1, 0, 0, 2], np.int64))],
         opset=13, ident="Pad-int-default-zero"),
]


def _feeds(inputs, n: int, rng, positive: bool) -> dict:
    feeds = {}
    for name, t, dims in inputs:
        shape = [n if d == "N" else d for d in dims]
        if t == B:
            feeds[name] = rng.random(shape) > 0.5
        elif t == I64:
            feeds[name] = rng.integers(-3, 3, size=shape).astype(np.int64)
        else:
            v = rng.standard_normal(shape)
            feeds[name] = (np.abs(v) + 0.1 if positive else v).astype(NP[t])
    return feeds


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("op,inputs,attrs,inits,n_out,opset,domain,positive", CASES)
def test_op_matches_onnxruntime(op, inputs, attrs, inits, n_out, opset, domain, positive, dynamic, refruntime,
                                tmp_path):
    names = [n for n, _, _ in inputs] + [t.name for t in inits]
    node = helper.make_node(op, names, ["out"], domain=domain, **attrs)
    decl = [(n, t, [("N" if dynamic else 2) if d == "N" else d for d in dims]) for n, t, dims in inputs]
    extra = [("com.microsoft", 1)] if domain else []
    model = make_model([node], decl, [("out", T.UNDEFINED, None)], inits, opset=opset, extra_opsets=extra)
    if domain:  # ORT knows the contrib op's output type; onnx does not
        model.graph.output[0].type.tensor_type.elem_type = inputs[0][1]
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    for n in ([2, 3, 1] if dynamic else [2]):
        feeds = _feeds(inputs, n, rng, positive)
        got = refruntime.run(info.program, [feeds[k] for k, _, _ in inputs] + weights)
        want = ort_run(model, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=False):
            assert g.shape == w.shape and g.dtype == w.dtype
            tol = 2e-3 if g.dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


ONE = np.ones(1, np.int64)


@pytest.mark.parametrize("start,limit,delta", [(1.0, 5.0, 0.75), (2.5, -1.0, -0.5), (3.0, 1.0, 1.0)],
                         ids=["fractional", "negative-delta", "empty"])
def test_float_range_of_constants_matches_onnxruntime(start, limit, delta, refruntime, tmp_path):
    inits = [const(n, np.array(v, np.float32)) for n, v in (("start", start), ("limit", limit), ("delta", delta))]
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["out"])]
    model = make_model(nodes, [("x", F, [1])], [("out", F, None)], inits, opset=17)
    info = compile_model(model, tmp_path / "art")
    x = np.ones(1, np.float32)
    got = refruntime.run(info.program, [x] + load_weights(info.metadata, model))[0]
    want = ort_run(model, {"x": x})[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _dim_range_model(start: float, limit_input: bool = False):
    """Range(start, Cast(N), 1) in float (the window functions' Range(0, Cast(size), 1)), squared."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=0, end=1), helper.make_node("Squeeze", ["s"], ["n"]),
             helper.make_node("Cast", ["n"], ["nf"], to=F),
             helper.make_node("Range", ["start", "lim" if limit_input else "nf", "one_f"], ["r"]),
             helper.make_node("Mul", ["r", "r"], ["out"])]
    inits = [const("start", np.array(start, np.float32)), const("one_f", np.array(1.0, np.float32))]
    inputs = [("x", F, ["N", 2])] + ([("lim", F, [])] if limit_input else [])
    return make_model(nodes, inputs, [("out", F, None)], inits, opset=17)


def test_float_range_over_a_dim_matches_onnxruntime(refruntime, tmp_path):
    model = _dim_range_model(-2.0)
    info = compile_model(model, tmp_path / "art")
    for n in (1, 4, 0):
        x = np.zeros((n, 2), np.float32)
        got = refruntime.run(info.program, [x] + load_weights(info.metadata, model))[0]
        np.testing.assert_array_equal(got, ort_run(model, {"x": x})[0])


def test_float_range_refusals(tmp_path):
    with pytest.raises(UnsupportedError, match="needs whole-number start and delta"):
        compile_model(_dim_range_model(0.5), tmp_path / "a")
    with pytest.raises(UnsupportedError, match="must be constants, or casts of values computable on the host"):
        compile_model(_dim_range_model(0.0, limit_input=True), tmp_path / "b")
    inits = [const(n, np.array(v, np.float32)) for n, v in (("a", 0.0), ("b", 1.0), ("d", 0.0))]
    model = make_model([helper.make_node("Range", ["a", "b", "d"], ["out"])], [], [("out", F, None)], inits, opset=17)
    with pytest.raises(ModelError, match="delta is 0"):
        compile_model(model, tmp_path / "c")
    inits[1] = const("b", np.array(np.inf, np.float32))
    model = make_model([helper.make_node("Range", ["a", "b", "d"], ["out"])], [], [("out", F, None)],
                       [inits[0], inits[1], const("d", np.array(1.0, np.float32))], opset=17)
    with pytest.raises(ModelError, match="has no finite length"):
        compile_model(model, tmp_path / "d")


def test_host_mod_by_zero_is_refused(tmp_path):
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Mod", ["s", "zero"], ["out"])]
    model = make_model(nodes, [("x", F, [2, 3])], [("out", I64, None)], [const("zero", np.zeros(1, np.int64))])
    with pytest.raises(ModelError, match="a divisor is 0"):
        compile_model(model, tmp_path / "a")


@pytest.mark.parametrize("elem", [F, H], ids=["f32", "f16"])
def test_float_mod_of_floor_division_matches_onnxruntime(elem, refruntime, tmp_path):
    """Mod with fmod=0 of floats (opset 28): the sign of B; zeros with B's sign, infinities and NaN as
    numpy's mod (which is what the ONNX spec writes out)."""
    node = helper.make_node("Mod", ["a", "b"], ["out"], fmod=0)
    model = make_model([node], [("a", elem, ["N"]), ("b", elem, ["N"])], [("out", elem, None)], opset=28)
    info = compile_model(model, tmp_path / "art")
    inf, nan = np.inf, np.nan
    a = np.array([-4.3, 7.2, 5, 4.3, -7.2, 8, 0, -0.0, 0, -0.0, -3, 3, -1, 1, inf, -inf, 1, 1, nan, 1, 6, -6],
                 NP[elem])
    b = np.array([2.1, -3.4, 8, -2.1, 3.4, 5, -2, 2, 2, -2, inf, inf, -inf, -inf, 2, 2, 0, -0.0, 2, nan, 3, -3],
                 NP[elem])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.mod(a, b)
    got = refruntime.run(info.program, [a, b])[0]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=0)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # signed zeros and infinities
    try:
        ort = ort_run(model, {"a": a, "b": b})[0]
    except Exception as exc:  # noqa: BLE001 - an onnxruntime without Mod-28 (1.23)
        pytest.skip(f"onnxruntime does not run Mod-28: {exc}")
    np.testing.assert_allclose(got.astype(np.float64), ort.astype(np.float64), rtol=2e-3, atol=0)


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("elem,axis,outs,read", [(F, -1, ["y", "mean", "inv"], "y mean inv"),
                                                 (F, 1, ["y", "", "inv"], "y inv"),
                                                 (H, -2, ["y", "mean", "inv"], "y mean inv"),
                                                 (F, 0, ["y", "mean"], "mean")],
                         ids=["all", "inv-only-axis1", "f16-stash-f32", "mean-only-axis0"])
def test_layer_norm_statistics_match_onnxruntime(elem, axis, outs, read, dynamic, refruntime, tmp_path):
    """LayerNormalization's Mean and InvStdDev outputs (composed, in stash_type float32; X's shape with 1
    from the axis on); `read` names the graph outputs."""
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], outs, axis=axis, epsilon=1e-3)
    normalized = [2, 3, 4][axis:]
    inits = [const("s", np.linspace(0.5, 1.5, int(np.prod(normalized))).reshape(normalized).astype(NP[elem])),
             const("b", np.full(normalized, 0.25, NP[elem]))]
    sizes = [2, 3, 1] if dynamic else [2]
    model = make_model([node], [("x", elem, ["N" if dynamic else 2, 3, 4])],
                       [(o, T.UNDEFINED, None) for o in read.split()], inits, opset=17)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    for n in sizes if axis != 0 else [2]:
        x = (rng.standard_normal((n, 3, 4)) * 3 + 1).astype(NP[elem])
        got = refruntime.run(info.program, [x] + weights)
        want = ort_run(model, {"x": x})
        assert len(got) == len(want) == len(read.split())
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            tol = 2e-3 if g.dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", [None, "add", "mul", "max", "min"])
def test_scatter_elements_matches_onnxruntime(reduction, refruntime, tmp_path):
    """ScatterElements along axis 1 with repeated and negative indices (applied in order with a reduction)."""
    idx = np.array([[1, -1, 1, 0]] * 2 if reduction else [[1, -1, 0, 2]] * 2, np.int64)
    attrs = {"reduction": reduction} if reduction else {}
    node = helper.make_node("ScatterElements", ["x", "idx", "u"], ["out"], axis=-1, **attrs)
    model = make_model([node], [("x", F, ["N", 3, 4]), ("u", F, ["N", 2, 4])], [("out", F, None)],
                       [const("idx", np.broadcast_to(idx, (2, 2, 4)).copy())], opset=18)
    info = compile_model(model, tmp_path / "art")
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32),
             "u": rng.standard_normal((2, 2, 4)).astype(np.float32)}
    got = refruntime.run(info.program, [feeds["x"], feeds["u"]] + load_weights(info.metadata, model))
    np.testing.assert_allclose(got[0], ort_run(model, feeds)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_matches_onnxruntime(batch_dims, refruntime, tmp_path):
    idx = np.array([[[1, -1], [0, 2]], [[-2, 1], [1, 0]]], np.int64)[..., : 2 - batch_dims]
    node = helper.make_node("GatherND", ["x", "idx"], ["out"], batch_dims=batch_dims)
    model = make_model([node], [("x", F, [2, 3, 4])], [("out", F, None)], [const("idx", idx)], opset=13)
    info = compile_model(model, tmp_path / "art")
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)}
    got = refruntime.run(info.program, [feeds["x"]] + load_weights(info.metadata, model))
    np.testing.assert_array_equal(got[0], ort_run(model, feeds)[0])


@pytest.mark.parametrize("reduction", [None, "add", "mul", "max", "min"])
def test_scatter_nd_matches_onnxruntime(reduction, refruntime, tmp_path):
    """ScatterND with repeated index tuples (applied in order with a reduction) and negative indices."""
    idx = np.array([[0, 1, 1], [0, 1, 1], [-1, 2, -1]] if reduction else [[0, 1, 1], [-1, 2, -1]], np.int64)
    attrs = {"reduction": reduction} if reduction else {}
    node = helper.make_node("ScatterND", ["x", "idx", "u"], ["out"], **attrs)
    model = make_model([node], [("x", F, ["N", 3, 4]), ("u", F, [len(idx)])], [("out", F, None)],
                       [const("idx", idx)], opset=18)
    info = compile_model(model, tmp_path / "art")
    rng = np.random.default_rng(0)
    for n in (2, 3):
        feeds = {"x": rng.standard_normal((n, 3, 4)).astype(np.float32),
                 "u": rng.standard_normal(len(idx)).astype(np.float32)}
        got = refruntime.run(info.program, [feeds["x"], feeds["u"]] + load_weights(info.metadata, model))
        np.testing.assert_allclose(got[0], ort_run(model, feeds)[0], rtol=1e-6, atol=1e-6)


def test_integer_and_boolean_shape_code_folds_on_the_host(refruntime, tmp_path):
    """Comparisons, Mod (both signs conventions), Neg/Abs/Sign of host ints and And/Or/Xor/Not of host
    booleans fold to host values (no kernel call), computed by the program from small integer inputs."""
    pairs = [("Mod", {}), ("Mod", {"fmod": 1}), ("Less", {}), ("Greater", {}), ("LessOrEqual", {}),
             ("GreaterOrEqual", {}), ("Equal", {})]
    nodes = [helper.make_node(op, ["a", "b"], [f"r{k}"], **attrs) for k, (op, attrs) in enumerate(pairs)]
    nodes += [helper.make_node("Neg", ["a"], ["neg"]), helper.make_node("Abs", ["a"], ["abs"]),
              helper.make_node("Sign", ["a"], ["sign"]), helper.make_node("Cast", ["a"], ["t"], to=B),
              helper.make_node("Not", ["r2"], ["not"]), helper.make_node("And", ["r2", "t"], ["and"]),
              helper.make_node("Or", ["r3", "t"], ["or"]), helper.make_node("Xor", ["r4", "t"], ["xor"])]
    outs = [f"r{k}" for k in range(len(pairs))] + ["neg", "abs", "sign", "t", "not", "and", "or", "xor"]
    model = make_model(nodes, [("a", I64, [6]), ("b", I64, [6])], [(o, T.UNDEFINED, None) for o in outs], opset=17)
    info = compile_model(model, tmp_path / "art")
    assert not [f["name"] for f in info.metadata["imports"] if "kernel" in f["name"]]
    rng = np.random.default_rng(0)
    for _ in range(4):
        a = rng.integers(-9, 10, 6).astype(np.int64)
        b = rng.choice([-7, -3, -1, 1, 2, 5], 6).astype(np.int64)
        a[0] = 0
        got = refruntime.run(info.program, [a, b])
        for g, w in zip(got, ort_run(model, {"a": a, "b": b}), strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def test_grouped_heads_expand_target_folds_on_the_host(refruntime, tmp_path):
    """The expanded Attention body's key repeat: Where(And(Not(Equal(Hq, Hkv)), Equal(Mod(Hq, Hkv), 0)),
    Hq / Hkv, 1) over dims of the inputs is a host value, so the Expand target is known on the host."""
    nodes = [helper.make_node("Shape", ["q"], ["hq"], start=1, end=2),
             helper.make_node("Shape", ["k"], ["hkv"], start=1, end=2),
             helper.make_node("Equal", ["hq", "hkv"], ["same"]), helper.make_node("Not", ["same"], ["grouped"]),
             helper.make_node("Mod", ["hq", "hkv"], ["rem"]), helper.make_node("Equal", ["rem", "zero"], ["even"]),
             helper.make_node("And", ["grouped", "even"], ["cond"]), helper.make_node("Div", ["hq", "hkv"], ["ratio"]),
             helper.make_node("Where", ["cond", "ratio", "one"], ["rep"]),
             helper.make_node("Shape", ["k"], ["b"], start=0, end=1),
             helper.make_node("Shape", ["k"], ["rest"], start=2),
             helper.make_node("Concat", ["b", "hkv", "rep", "rest"], ["target"], axis=0),
             helper.make_node("Unsqueeze", ["k", "two"], ["ku"]),
             helper.make_node("Expand", ["ku", "target"], ["out"])]
    inits = [const("zero", np.zeros(1, np.int64)), const("one", ONE), const("two", np.array([2], np.int64))]
    model = make_model(nodes, [("q", F, [1, "HQ", 3]), ("k", F, [1, "HKV", 3])], [("out", F, None)], inits, opset=17)
    info = compile_model(model, tmp_path / "art")
    rng = np.random.default_rng(0)
    for hq, hkv in ((4, 2), (3, 3), (6, 1)):
        feeds = {"q": rng.standard_normal((1, hq, 3)).astype(np.float32),
                 "k": rng.standard_normal((1, hkv, 3)).astype(np.float32)}
        got = refruntime.run(info.program, [feeds["q"], feeds["k"]] + load_weights(info.metadata, model))
        np.testing.assert_array_equal(got[0], ort_run(model, feeds)[0])


def test_torch_expand_target_folds_on_the_host(refruntime, tmp_path):
    """torch.onnx spells x.expand(batch, -1) as Expand(x, Where(Equal(t, -1 * ones), ones, t)) with t from the
    input's shape: Equal and Where of those host values fold, so Expand's target is known on the host."""
    nodes = [helper.make_node("Shape", ["ids"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
             helper.make_node("Concat", ["bu", "minus1"], ["t"], axis=0),
             helper.make_node("ConstantOfShape", ["two"], ["ones"], value=numpy_helper.from_array(ONE)),
             helper.make_node("Mul", ["ones", "minus1"], ["m"]),
             helper.make_node("Equal", ["t", "m"], ["is_m"]),
             helper.make_node("Where", ["is_m", "ones", "t"], ["target"]),
             helper.make_node("Expand", ["buf", "target"], ["out"])]
    inits = [const("zero", np.array(0, np.int64)), const("ax0", np.array([0], np.int64)),
             const("minus1", np.array([-1], np.int64)), const("two", np.array([2], np.int64)),
             const("buf", np.arange(6, dtype=np.float32).reshape(1, 6))]
    model = make_model(nodes, [("ids", I64, ["N", 5])], [("out", F, None)], inits, opset=17)
    info = compile_model(model, tmp_path / "art")
    for n in (1, 3):
        feeds = {"ids": np.zeros((n, 5), np.int64)}
        got = refruntime.run(info.program, [feeds["ids"]] + load_weights(info.metadata, model))
        np.testing.assert_array_equal(got[0], ort_run(model, feeds)[0])


def test_split_sizes_from_shapes_are_host_values(refruntime, tmp_path):
    """RotaryEmbedding's expansion splits x into [rotary_dim, head - rotary_dim] with the sizes computed from
    shapes (Shape, Slice, Sub, Concat): they are host values, so Split compiles over a symbolic head size."""
    nodes = [helper.make_node("Shape", ["cos"], ["half"], start=1, end=2),
             helper.make_node("Add", ["half", "half"], ["rot"]),
             helper.make_node("Shape", ["x"], ["head"], start=2, end=3),
             helper.make_node("Sub", ["head", "rot"], ["rest"]),
             helper.make_node("Concat", ["rot", "rest"], ["sizes"], axis=0),
             helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=2)]
    model = make_model(nodes, [("x", F, [2, 3, "H"]), ("cos", F, [1, "R"])], [("a", F, None), ("b", F, None)],
                       opset=18)
    info = compile_model(model, tmp_path / "art")
    rng = np.random.default_rng(0)
    for head, half in ((8, 2), (6, 3), (5, 0)):
        feeds = {"x": rng.standard_normal((2, 3, head)).astype(np.float32),
                 "cos": np.zeros((1, half), np.float32)}
        got = refruntime.run(info.program, [feeds["x"], feeds["cos"]])
        for g, w in zip(got, ort_run(model, feeds), strict=True):
            np.testing.assert_array_equal(g, w)


def test_split_sizes_from_a_small_graph_input(refruntime, tmp_path):
    model = make_model([helper.make_node("Split", ["x", "s"], ["a", "b", "c"], axis=1)],
                       [("x", F, [2, 7]), ("s", I64, [3])], [("a", F, None), ("b", F, None), ("c", F, None)],
                       opset=18)
    info = compile_model(model, tmp_path / "art")
    x = np.arange(14, dtype=np.float32).reshape(2, 7)
    for s in ([1, 2, 4], [0, 7, 0], [3, 3, 1]):
        feeds = {"x": x, "s": np.array(s, np.int64)}
        got = refruntime.run(info.program, [x, feeds["s"]])
        for g, w in zip(got, ort_run(model, feeds), strict=True):
            np.testing.assert_array_equal(g, w)
    # sizes that do not add up to the axis, or a negative one: the program fails the run (its message,
    # "split sizes [..] add up to 8 but the axis has size 7", is the runtime's to report)
    for bad in ([1, 3, 4], [-1, 4, 4]):
        with pytest.raises(RuntimeError, match="status 1"):
            refruntime.run(info.program, [x, np.array(bad, np.int64)])


def test_split_sizes_computed_by_a_kernel_are_refused(tmp_path):
    nodes = [helper.make_node("ReduceMax", ["v"], ["m"], keepdims=1),
             helper.make_node("Cast", ["m"], ["mi"], to=I64),
             helper.make_node("Concat", ["mi", "mi"], ["s"], axis=0),
             helper.make_node("Split", ["x", "s"], ["a", "b"], axis=0, name="split")]
    model = make_model(nodes, [("x", F, [4]), ("v", F, [1])], [("a", F, None), ("b", F, None)], opset=18)
    with pytest.raises(UnsupportedError, match="'split' .*split must be computable from constants, input shapes "
                                               "and small integer inputs"):
        compile_model(model, tmp_path / "art")
