"""fuse-linear-bias: a linear layer spelled Add(MatMul(x, W), b) (W, b constants) compiled as one gemm kernel call
with C = b, the Reshapes around it aliases, compared with onnxruntime's CPU EP on the unfused graph; near misses
(W or b not constant, b a full matrix or of another shape, the product read elsewhere or a graph output, another
element type, x of rank 1) stay as imported and stay correct; an x whose dynamic last dim is not K at run time
is refused, fused or not."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import pipeline as pipeline_mod
from hipdnn_ep_compiler.passes import run_pipeline

K, N = 8, 6
NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}
MATMUL = "node #0 (MatMul -> 'm')"


def linear_model(x_dims, bias_shape=(N,), swap=False, elem=T.FLOAT, w="init", b="init", outputs=("y",),
                 extra=(), k=K):
    """y = Add(MatMul(x, w), b); w [k, N] and b of `bias_shape` initializers ("init"), Constant nodes ("node"),
    Identity nodes of initializers ("identity") or graph inputs ("input"); `extra`: nodes appended (reading m or y)."""
    rng = np.random.default_rng(3)
    npt = NP[elem]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["b", "m"] if swap else ["m", "b"], ["y"])] + list(extra)
    inits, inputs = [], [("x", elem, list(x_dims))]
    for name, how, arr in (("w", w, rng.standard_normal((k, N)).astype(npt)),
                           ("b", b, rng.standard_normal(bias_shape).astype(npt))):
        if how == "init":
            inits.append(const(name, arr))
        elif how == "node":
            nodes.insert(0, helper.make_node("Constant", [], [name], value=const(name, arr)))
        elif how == "identity":  # torch.onnx.export's spelling of an initializer equal to an earlier one
            inits.append(const(f"{name}_src", arr))
            nodes.insert(0, helper.make_node("Identity", [f"{name}_src"], [name]))
        else:
            inputs.append((name, elem, list(arr.shape)))
    return make_model(nodes, inputs, [(o, elem, None) for o in outputs], inits)


def fused_ops(model) -> list[str]:
    """The import-level ops after fuse-linear-bias (constants left out)."""
    loaded, _ = load_model(model)
    module = run_pipeline(import_model(loaded), until="fuse-linear-bias")
    ops = module.body.operations[0].regions[0].blocks[0].operations
    return [op.operation.name for op in ops if op.operation.name not in ("hipdnn.weight", "hipdnn.constant")]


def feeds_for(model, shape, rng) -> dict[str, np.ndarray]:
    """Random feeds: x of `shape`, any other graph input (a W or b fed at run time) of its declared dims."""
    out = {}
    for vi in model.graph.input:
        npt = NP[vi.type.tensor_type.elem_type]
        dims = shape if vi.name == "x" else [d.dim_value for d in vi.type.tensor_type.shape.dim]
        out[vi.name] = rng.standard_normal(dims).astype(npt)
    return out


def check(model, refruntime, tmp_path, fused: bool, shapes, rtol=1e-5, atol=1e-5):
    """Compile and run `model` at each x shape, compare with onnxruntime; `fused`: the MatMul and Add are one
    gemm kernel call (the model's only one), else they stay a matmul and a binary call."""
    ops = fused_ops(model)
    if fused:
        assert "onnx.matmul" not in ops and "onnx.add" not in ops and ops.count("onnx.gemm") == 1
    else:
        assert "onnx.matmul" in ops and "onnx.gemm" not in ops
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(0)
    for shape in shapes:
        feeds = feeds_for(model, shape, rng)
        got = refruntime.run(info.program, list(feeds.values()) + weights)
        want = ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    if fused:
        assert info.metadata["kernel_nodes"] == [MATMUL]
    else:
        assert len(info.metadata["kernel_nodes"]) >= 2
    return info


# ---------------------------------------------------------------- linear layers that fuse


@pytest.mark.parametrize("x_dims,shapes", [
    (["m", K], [(5, K), (1, K)]),
    ([4, K], [(4, K)]),
    (["b", "s", K], [(2, 3, K), (1, 7, K)]),
    ([2, 3, K], [(2, 3, K)]),
    (["b", 2, "s", K], [(2, 2, 3, K), (1, 2, 1, K)]),
    ([1, 2, 3, 5, K], [(1, 2, 3, 5, K)]),
    (["m", "k"], [(5, K)]),
    (["b", "s", "k"], [(2, 3, K), (1, 4, K)]),
    ([2, 3, "k"], [(2, 3, K)]),
], ids=["rank2", "rank2_static", "rank3", "rank3_static", "rank4", "rank5_static", "rank2_k_dynamic",
        "rank3_k_dynamic", "rank3_k_dynamic_lead_static"])
def test_linear_layer_is_one_gemm(x_dims, shapes, refruntime, tmp_path):
    check(linear_model(x_dims), refruntime, tmp_path, True, shapes)


@pytest.mark.parametrize("bias_shape", [(N,), (1, N), (1, 1, N)])
@pytest.mark.parametrize("swap", [False, True], ids=["matmul_first", "bias_first"])
def test_bias_shapes_and_operand_order(bias_shape, swap, refruntime, tmp_path):
    check(linear_model(["b", "s", K], bias_shape, swap=swap), refruntime, tmp_path, True, [(2, 3, K), (1, 4, K)])


def test_bias_1xN_on_rank2_is_the_gemm_c_as_it_is(tmp_path):
    loaded, _ = load_model(linear_model(["m", K], (1, N)))
    text = str(run_pipeline(import_model(loaded), until="fuse-linear-bias"))
    assert "onnx.reshape" not in text
    assert f"(tensor<?x{K}xf32>, tensor<{K}x{N}xf32>, tensor<1x{N}xf32>) -> tensor<?x{N}xf32>" in text


@pytest.mark.parametrize("how", ["node", "identity"])
def test_constant_nodes_and_identities(how, refruntime, tmp_path):
    model = linear_model(["b", "s", K], w=how, b=how)
    info = compile_model(model, tmp_path / "art")
    assert len(info.metadata["kernel_nodes"]) == 1
    assert "onnx.gemm" in fused_ops(model)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, K)).astype(np.float32)
    got = refruntime.run(info.program, [x] + load_weights(info.metadata, model))
    np.testing.assert_allclose(got[0], ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_float16(refruntime, tmp_path):
    """float16 x, W, b: one gemm; the result is the float32 layer's to float16's precision."""
    model = linear_model(["b", "s", K], elem=T.FLOAT16)
    assert fused_ops(model).count("onnx.gemm") == 1
    ref = onnx.ModelProto()
    ref.CopyFrom(model)
    del ref.graph.value_info[:]
    for t in ref.graph.initializer:
        t.CopyFrom(const(t.name, onnx.numpy_helper.to_array(t).astype(np.float32)))
    for vi in list(ref.graph.input) + list(ref.graph.output):
        vi.type.tensor_type.elem_type = T.FLOAT
    info = compile_model(model, tmp_path / "art")
    assert info.metadata["kernel_nodes"] == [MATMUL]
    x = np.random.default_rng(2).standard_normal((2, 3, K)).astype(np.float16)
    (got,) = refruntime.run(info.program, [x] + load_weights(info.metadata, model))
    (want,) = ort_run(ref, {"x": x.astype(np.float32)})
    assert got.dtype == np.float16 and got.shape == (2, 3, N)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_result_keeps_name_type_and_readers(refruntime, tmp_path):
    """The Add's result, read by a Relu and a graph output too, is the fused layer's: same dims, same values."""
    extra = [helper.make_node("Relu", ["y"], ["r"])]
    model = linear_model(["b", "s", K], extra=extra, outputs=("y", "r"))
    ops = fused_ops(model)
    assert ops.count("onnx.gemm") == 1 and "onnx.matmul" not in ops
    info = compile_model(model, tmp_path / "art")
    assert info.metadata["kernel_nodes"] == [MATMUL, "node #2 (Relu -> 'r')"]
    x = np.random.default_rng(4).standard_normal((3, 2, K)).astype(np.float32)
    got = refruntime.run(info.program, [x] + load_weights(info.metadata, model))
    for g, w in zip(got, ort_run(model, {"x": x}), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_reshapes_and_shape_arithmetic_are_no_kernel_calls(tmp_path):
    """The dynamic rank-3 layer lowers to one hipdnn.gemm between two aliases, nothing else of the data flow."""
    from hipdnn_ep_compiler import ir as hir

    loaded, _ = load_model(linear_model(["b", "s", K]))
    module = run_pipeline(import_model(loaded))
    names = [op.name for op in hir.ops(module) if op.name not in ("hipdnn.weight", "func.return")]
    assert [n for n in names if not n.startswith("arith.")] == ["hipdnn.alias", "hipdnn.gemm", "hipdnn.alias"]


# ---------------------------------------------------------------- near misses: stay as imported


def _extra_reader():
    return [helper.make_node("Neg", ["m"], ["z"])]


@pytest.mark.parametrize("case", ["w_input", "b_input", "bias_full_matrix", "bias_of_1", "bias_rank_above_x",
                                  "product_read_twice", "product_an_output",
                                  "x_rank1"])
def test_near_misses_are_not_fused(case, refruntime, tmp_path):
    dims, shapes = ["b", "s", K], [(2, 3, K)]
    kw = {}
    if case == "w_input":
        kw = {"w": "input"}  # a MatMul of two activations (attention's Q K^T): fuse-attention's, not ours
    elif case == "b_input":
        kw = {"b": "input"}
    elif case == "bias_full_matrix":
        dims, shapes, kw = [4, K], [(4, K)], {"bias_shape": (4, N)}
    elif case == "bias_of_1":
        kw = {"bias_shape": (1,)}
    elif case == "bias_rank_above_x":  # y is [1, m, N], the product [m, N]
        dims, shapes, kw = ["m", K], [(3, K)], {"bias_shape": (1, 1, N)}
    elif case == "product_read_twice":
        kw = {"extra": _extra_reader(), "outputs": ("y", "z")}
    elif case == "product_an_output":
        kw = {"outputs": ("y", "m")}
    elif case == "x_rank1":
        dims, shapes = [K], [(K,)]
    check(linear_model(dims, **kw), refruntime, tmp_path, False, shapes)


def test_float64_is_not_fused():
    assert "onnx.gemm" not in fused_ops(linear_model(["b", "s", K], elem=T.DOUBLE))


def test_k_mismatch_is_refused_as_before(tmp_path):
    """x's last dim 5 against W's 8: ONNX shape inference refuses the model before any pass (the pass itself
    leaves a K mismatch alone: filecheck/fuse_linear_bias.mlir)."""
    from hipdnn_ep_compiler.errors import ModelError

    model = linear_model(["b", "s", 5], k=K)
    with pytest.raises(ModelError, match="matrix multiplication"):
        compile_model(model, tmp_path / "art")


@pytest.mark.parametrize("dims", [["m", "k"], ["b", "s", "k"]])
def test_a_dynamic_last_dim_other_than_k_is_refused_at_run_time(dims, refruntime, tmp_path, monkeypatch):
    """x's last dim, dynamic, fed as 5 against W's 8: the gemm call is refused as the matmul call is unfused (x
    goes to [-1, its last dim], not [-1, K], so no other dim absorbs the difference)."""
    model = linear_model(dims)
    info = compile_model(model, tmp_path / "art")
    assert info.metadata["kernel_nodes"] == [MATMUL]
    x = np.zeros([3] * (len(dims) - 1) + [5], np.float32)
    weights = load_weights(info.metadata, model)
    with pytest.raises(RuntimeError, match="program returned status"):
        refruntime.run(info.program, [x] + weights)
    with monkeypatch.context() as m:
        m.setattr(pipeline_mod, "PIPELINE", tuple(p for p in pipeline_mod.PIPELINE if p != "fuse-linear-bias"))
        unfused = compile_model(model, tmp_path / "unfused")
    with pytest.raises(RuntimeError, match="program returned status"):
        refruntime.run(unfused.program, [x] + load_weights(unfused.metadata, model))


# ---------------------------------------------------------------- whole models


def _kernel_calls_without_the_pass(model, tmp_path, monkeypatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(pipeline_mod, "PIPELINE", tuple(p for p in pipeline_mod.PIPELINE if p != "fuse-linear-bias"))
        return compile_model(model, tmp_path / "unfused").metadata["kernel_nodes"]


@pytest.mark.parametrize("mask,float16", [("legacy", False), ("sdpa", False), ("legacy", True)])
def test_exported_bert(mask, float16, refruntime, tmp_path, monkeypatch):
    """tests/models.py's BERT (as torch.onnx.export spells transformers' BertModel): every linear layer (Q, K, V,
    attention output, the two MLP ones per layer, the pooler) is one gemm; the outputs match onnxruntime."""
    ep_tests = Path(__file__).resolve().parents[2] / "ep" / "tests"
    sys.path.insert(0, str(ep_tests))
    try:
        from models import bert_feeds, exported_bert
    finally:
        sys.path.remove(str(ep_tests))
    layers = 2
    path = exported_bert(tmp_path / "bert.onnx", layers=layers, mask=mask, float16=float16)
    model = onnx.load(str(path))
    linears = 6 * layers + 1
    ops = fused_ops(model)
    assert ops.count("onnx.gemm") == linears
    # no linear layer's MatMul is left: at most each layer's Q K^T and P V (two activations), which fuse-attention
    # takes (the sdpa export's stay until refine-shapes has folded the Shape ops reading them)
    assert ops.count("onnx.matmul") <= 2 * layers
    info = compile_model(model, tmp_path / "art")
    unfused = _kernel_calls_without_the_pass(model, tmp_path, monkeypatch)
    assert len(unfused) - len(info.metadata["kernel_nodes"]) == linears
    weights = load_weights(info.metadata, model)
    tol = 2e-2 if float16 else 1e-4
    for batch, seq in ((2, 5), (1, 9)):
        feeds = bert_feeds(batch, seq)
        got = refruntime.run(info.program, [feeds[i.name] for i in model.graph.input] + weights)
        for g, w in zip(got, ort_run(model, feeds), strict=True):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_a_torch_export(refruntime, tmp_path):
    """torch.onnx.export (the TorchScript exporter, opset 17) of two Linear layers over [batch, seq, 8]."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    path = tmp_path / "m.onnx"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, (torch.randn(2, 3, 8),), str(path), opset_version=17, dynamo=False,
                              input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "b", 1: "s"}})
    except Exception as exc:  # noqa: BLE001 - a torch without the TorchScript exporter (or its dependencies)
        pytest.skip(f"torch.onnx.export (dynamo=False) is not available: {exc}")
    model = onnx.load(path)
    assert fused_ops(model).count("onnx.gemm") == 2
    info = compile_model(model, tmp_path / "art")
    assert len(info.metadata["kernel_nodes"]) == 3
    x = np.random.default_rng(5).standard_normal((2, 5, 8)).astype(np.float32)
    (got,) = refruntime.run(info.program, [x] + load_weights(info.metadata, model))
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


@pytest.mark.exports
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_a_transformers_bert_export(attn, refruntime, tmp_path, monkeypatch):
    """torch.onnx.export (TorchScript exporter, opset 17) of a small freshly initialized transformers BertModel
    (nothing downloaded): its equal zero biases are exported as Identity nodes of one initializer, the attention
    output's x has a dynamic last dim (after the head-merging Reshape); all 6 linear layers of each layer fuse."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    layers = 2
    cfg = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64, attn_implementation=attn)
    bert = transformers.BertModel(cfg).eval()

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    path = tmp_path / "bert.onnx"
    ids = torch.randint(0, 64, (2, 7))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Outputs().eval(), (ids, torch.ones_like(ids)), str(path), opset_version=17,
                              dynamo=False, input_names=["input_ids", "attention_mask"],
                              output_names=["last_hidden_state", "pooler_output"],
                              dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"}})
    except Exception as exc:  # noqa: BLE001 - a torch without the TorchScript exporter (or its dependencies)
        pytest.skip(f"torch.onnx.export (dynamo=False) is not available: {exc}")
    model = onnx.load(str(path))
    ops = fused_ops(model)
    assert ops.count("onnx.gemm") == 6 * layers + 1  # the pooler's is a Gemm already
    # no linear layer's MatMul is left: at most each layer's Q K^T and P V (two activations), which fuse-attention
    # takes (the sdpa export's stay until refine-shapes has folded the Shape ops reading them)
    assert ops.count("onnx.matmul") <= 2 * layers
    info = compile_model(model, tmp_path / "art")
    unfused = _kernel_calls_without_the_pass(model, tmp_path, monkeypatch)
    assert len(unfused) - len(info.metadata["kernel_nodes"]) == 6 * layers
    weights = load_weights(info.metadata, model)
    rng = np.random.default_rng(6)
    for batch, seq in ((2, 5), (1, 9)):
        mask = np.ones((batch, seq), np.int64)
        mask[:, -2:] = 0
        feeds = {"input_ids": rng.integers(0, 64, (batch, seq)).astype(np.int64), "attention_mask": mask}
        got = refruntime.run(info.program, [feeds["input_ids"], feeds["attention_mask"]] + weights)
        for g, w in zip(got, ort_run(model, feeds), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
