"""fuse-skip-layer-norm: a residual Add feeding LayerNormalization (every encoder layer of a transformers
export, twice) compiled as one skip_layer_norm kernel call, compared with onnxruntime's CPU EP on the unfused
graph; pairs that are not exactly that (the sum read elsewhere, an operand that broadcasts, a normalization
over more than the last axis, Mean/InvStdDev used) stay as imported and stay correct. Also the com.microsoft
SkipLayerNormalization node itself, which lowers to the same kernel."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import run_pipeline

NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16}
HIDDEN = 16


def fused_ops(model) -> list[str]:
    """The import-level ops after fuse-skip-layer-norm (constants left out)."""
    loaded, _ = load_model(model)
    module = run_pipeline(import_model(loaded), until="fuse-skip-layer-norm")
    ops = module.body.operations[0].regions[0].blocks[0].operations
    return [op.operation.name for op in ops if op.operation.name not in ("hipdnn.weight", "hipdnn.constant")]


def residual_ln(elem=T.FLOAT, dims=("b", "s", HIDDEN), skip_dims=None, axis=-1, beta=True, outputs=("y",),
                swap=False, ln_outputs=("y",)):
    rng = np.random.default_rng(1)
    n = helper.make_node
    norm_dims = [HIDDEN] if axis in (-1, len(dims) - 1) else list(dims[axis:])
    inits = [const("g", (rng.standard_normal(norm_dims) + 1).astype(NP[elem]))]
    if beta:
        inits.append(const("beta", rng.standard_normal(norm_dims).astype(NP[elem])))
    skip_dims = list(dims) if skip_dims is None else list(skip_dims)
    nodes = [n("Add", ["r", "x"] if swap else ["x", "r"], ["s"]),
             n("LayerNormalization", ["s", "g"] + (["beta"] if beta else []), list(ln_outputs), axis=axis,
               epsilon=1e-5)]
    outs = [(o, elem, None) for o in outputs]
    return make_model(nodes, [("x", elem, list(dims)), ("r", elem, skip_dims)], outs, inits)


def check(model, refruntime, tmp_path, fused: bool, shapes, tol):
    ops = fused_ops(model)
    assert ("onnx.skip_layer_norm" in ops) == fused and ("onnx.add" not in ops) == fused
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    dtype = NP[model.graph.input[0].type.tensor_type.elem_type]
    for xs, rs in shapes:
        x = (3 * rng.standard_normal(xs) + 1).astype(dtype)
        r = rng.standard_normal(rs).astype(dtype)
        got = refruntime.run(info.program, [x, r] + weights)
        want = ort_run(model, {"x": x, "r": r})
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=tol, atol=tol)
    return info


@pytest.mark.parametrize("elem", [T.FLOAT, T.FLOAT16])
@pytest.mark.parametrize("beta", [True, False])
@pytest.mark.parametrize("swap", [False, True])
def test_residual_add_and_layer_norm_are_one_kernel_call(elem, beta, swap, refruntime, tmp_path):
    model = residual_ln(elem, beta=beta, swap=swap)
    tol = 1e-5 if elem == T.FLOAT else 4e-3
    info = check(model, refruntime, tmp_path, True, [((2, 3, HIDDEN),) * 2, ((1, 5, HIDDEN),) * 2], tol)
    assert len(info.metadata["kernel_nodes"]) == 1


def test_rank_2_and_axis_given_as_the_last(refruntime, tmp_path):
    model = residual_ln(dims=("t", HIDDEN), axis=1)
    check(model, refruntime, tmp_path, True, [((4, HIDDEN),) * 2, ((7, HIDDEN),) * 2], 1e-5)


NEAR_MISSES = {  # name: residual_ln arguments; each stays an Add and a LayerNormalization
    "sum-also-an-output": dict(outputs=("y", "s")),
    "operand-broadcasts": dict(skip_dims=(HIDDEN,)),
    "two-normalized-axes": dict(axis=1, dims=(2, 3, HIDDEN)),
    "rank-4": dict(dims=("b", 2, 3, HIDDEN)),
    "mean-used": dict(ln_outputs=("y", "mean"), outputs=("y", "mean")),
}


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_near_misses_stay_as_imported_and_correct(name, refruntime, tmp_path):
    kw = NEAR_MISSES[name]
    model = residual_ln(**kw)
    dims = kw.get("dims", (2, 3, HIDDEN))
    dims = [2 if isinstance(d, str) else d for d in dims]
    skip = list(kw.get("skip_dims", dims))
    check(model, refruntime, tmp_path, False, [(dims, skip)], 1e-5)


def test_com_microsoft_skip_layer_norm_is_one_kernel_call_with_its_sum(refruntime, tmp_path):
    rng = np.random.default_rng(2)
    n = helper.make_node("SkipLayerNormalization", ["x", "r", "g", "beta", "bias"], ["y", "", "", "s"],
                         domain="com.microsoft", epsilon=1e-5)
    inits = [const("g", rng.standard_normal(HIDDEN).astype(np.float32)),
             const("beta", rng.standard_normal(HIDDEN).astype(np.float32)),
             const("bias", rng.standard_normal(HIDDEN).astype(np.float32))]
    model = make_model([n], [("x", T.FLOAT, ["b", 3, HIDDEN]), ("r", T.FLOAT, ["b", 3, HIDDEN])],
                       [("y", T.FLOAT, None), ("s", T.FLOAT, None)], inits, extra_opsets=[("com.microsoft", 1)])
    info = compile_model(model, tmp_path / "art")
    assert len(info.metadata["kernel_nodes"]) == 1
    weights = load_weights(info.metadata, model)
    x, r = (rng.standard_normal((2, 3, HIDDEN)).astype(np.float32) for _ in range(2))
    got = refruntime.run(info.program, [x, r] + weights)
    for g, w in zip(got, ort_run(model, {"x": x, "r": r}), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_target_abi_without_the_kernel_keeps_the_add_and_the_layer_norm(refruntime, tmp_path):
    # skip_layer_norm is ABI 1.3's: compiled for 1.2 the pair stays two kernel calls (and needs nothing newer),
    # as before the pass; the compatibility matrix compiled it for 1.1 and 1.2 runtimes and the node was refused
    model = residual_ln()
    info = compile_model(model, tmp_path / "a12", abi="1.2")
    assert info.metadata["abi"]["min_minor"] <= 2 and len(info.metadata["kernel_nodes"]) == 2
    x = np.random.default_rng(2).standard_normal((2, 3, HIDDEN)).astype(np.float32)
    (got,) = refruntime.run(info.program, [x, x + 1] + load_weights(info.metadata, model))
    np.testing.assert_allclose(got, ort_run(model, {"x": x, "r": x + 1})[0], rtol=1e-5, atol=1e-5)
    fused = compile_model(model, tmp_path / "a13")
    assert fused.metadata["abi"]["min_minor"] == 3 and len(fused.metadata["kernel_nodes"]) == 1


@pytest.mark.parametrize("bias", [False, True])
def test_com_microsoft_skip_layer_norm_composes_for_a_target_abi_without_the_kernel(bias, refruntime, tmp_path):
    # for a runtime before ABI 1.3 the node is an add (and the bias's) and a layer_norm, as before the kernel: it
    # compiled for 1.2 then, and must still (not refused for a function the target lacks)
    rng = np.random.default_rng(4)
    n = helper.make_node
    inits = [const("g", rng.standard_normal(HIDDEN).astype(np.float32)),
             const("beta", rng.standard_normal(HIDDEN).astype(np.float32))]
    ins = ["x", "r", "g", "beta"]
    if bias:
        inits.append(const("bias", rng.standard_normal(HIDDEN).astype(np.float32)))
        ins.append("bias")
    node = n("SkipLayerNormalization", ins, ["y", "", "", "sum"], domain="com.microsoft", epsilon=1e-5)
    model = make_model([node], [("x", T.FLOAT, ["b", 3, HIDDEN]), ("r", T.FLOAT, ["b", 3, HIDDEN])],
                       [("y", T.FLOAT, None), ("sum", T.FLOAT, None)], inits, extra_opsets=[("com.microsoft", 1)])
    x, r = (rng.standard_normal((2, 3, HIDDEN)).astype(np.float32) for _ in range(2))
    want = ort_run(model, {"x": x, "r": r})
    for abi, calls in (("1.2", 3 if bias else 2), (None, 1)):
        info = compile_model(model, tmp_path / f"a{abi}", **({"abi": abi} if abi else {}))
        assert len(info.metadata["kernel_nodes"]) == calls
        got = refruntime.run(info.program, [x, r] + load_weights(info.metadata, model))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
