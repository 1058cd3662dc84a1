"""fuse-attention: multi-head attention spelled out op by op (torch.onnx.export of transformers' BERT) compiled as
one fused attention kernel call per layer, compared with onnxruntime's CPU EP on the unfused graph; chains that
are not exactly attention (an intermediate read elsewhere, a wrong perm, axis or constant) stay as imported and
stay correct."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper
from support.runtime_cpu import run_on_runtime

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import run_pipeline

NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}
H, D = 2, 8
HID = H * D


def attention_chain(*, scale="div", k_perm="0231", mask="b11s", isnan=False, target="concat", elem=T.FLOAT,
                    q_perm=(0, 2, 1, 3), out_perm=(0, 2, 1, 3), axis=-1, scale_value=None, outputs=(),
                    kv_heads=H, sdpa_tail=None, seed=0):
    """x [b, s, HID] -> Q, K, V projections -> heads -> attention -> [b, s, HID] ("y"), as transformers' BERT
    export spells it; the keyword arguments make the variants and near-misses.  Inputs x and (with a mask) m.
    sdpa_tail: the dims (value, index) of the context's Reshape before its Transpose, read by Shape ops as
    torch's scaled_dot_product_attention export writes it ("-1" for a constant -1)."""
    rng = np.random.default_rng(seed)
    npt = NP[elem]
    n = helper.make_node
    nodes, inits = [], []

    def c(name, value, dtype=None):
        inits.append(const(name, np.asarray(value, dtype if dtype is not None else npt)))
        return name

    kv_hid = kv_heads * D

    def linear(name, width):
        nodes.append(n("MatMul", ["x", c(f"{name}.w", rng.normal(0, 0.3, (HID, width)))], [f"{name}.mm"]))
        nodes.append(n("Add", [f"{name}.mm", c(f"{name}.b", rng.normal(0, 0.1, width))], [name]))
        return name

    def heads_target(name, h):
        if target == "const":
            return c(f"{name}.shape", [0, 0, h, D], np.int64)
        nodes.append(n("Shape", ["x"], [f"{name}.xs"]))
        for k in (0, 1):
            nodes.append(n("Gather", [f"{name}.xs", c(f"{name}.i{k}", k, np.int64)], [f"{name}.g{k}"], axis=0))
            nodes.append(n("Unsqueeze", [f"{name}.g{k}", c(f"{name}.ax{k}", [0], np.int64)], [f"{name}.u{k}"]))
        tail = [h, D] if target == "concat" else [-1, D]
        nodes.append(n("Concat", [f"{name}.u0", f"{name}.u1", c(f"{name}.hd", tail, np.int64)], [f"{name}.shape"],
                       axis=0))
        return f"{name}.shape"

    def heads(x, h, perms):
        nodes.append(n("Reshape", [x, heads_target(x, h)], [f"{x}.r"]))
        cur = f"{x}.r"
        for k, perm in enumerate(perms):
            nodes.append(n("Transpose", [cur], [f"{x}.t{k}"], perm=list(perm)))
            cur = f"{x}.t{k}"
        return cur

    q = heads(linear("q", HID), H, [q_perm])
    k = heads(linear("k", kv_hid), kv_heads, [(0, 2, 3, 1)] if k_perm == "0231" else [(0, 2, 1, 3), (0, 1, 3, 2)])
    v = heads(linear("v", kv_hid), kv_heads, [(0, 2, 1, 3)])
    if scale == "qk":  # torch's sdpa export: Q and K^T each times sqrt(scale)
        root = (scale_value or 1 / math.sqrt(D)) ** 0.5
        nodes.append(n("Mul", [q, c("sq", root)], ["qs"]))
        nodes.append(n("Mul", [c("sk", root), k], ["ks"]))
        q, k = "qs", "ks"
    nodes.append(n("MatMul", [q, k], ["scores"]))
    s = "scores"
    if scale == "div":
        nodes.append(n("Div", [s, c("scale", scale_value or math.sqrt(D))], ["scaled"]))
        s = "scaled"
    elif scale == "mul":
        nodes.append(n("Mul", [c("scale", scale_value or 1 / math.sqrt(D)), s], ["scaled"]))
        s = "scaled"
    elif scale == "vector":  # a per-key-column constant: no scalar scale
        nodes.append(n("Mul", [s, c("scale", np.full((1, 1, 1, 3), 1 / math.sqrt(D)))], ["scaled"]))
        s = "scaled"
    inputs = [("x", elem, ["b", "s", HID])]
    if mask is not None:
        inputs.append(("m", elem, ["b", 1, 1, "s"] if mask == "b11s" else ["b", 1, "s", "s"]))
        nodes.append(n("Add", ["m", s] if mask == "b11s" else [s, "m"], ["masked"]))
        s = "masked"
    nodes.append(n("Softmax", [s], ["probs"], **({} if axis is None else {"axis": axis})))
    p = "probs"
    if isnan:
        nodes.append(n("IsNaN", [p], ["nan"]))
        nodes.append(n("Where", ["nan", c("zero", 0.0), p], ["probs_clean"]))
        p = "probs_clean"
    nodes.append(n("MatMul", [p, v], ["ctx"]))
    ctx = "ctx"
    if sdpa_tail is not None:  # Reshape(ctx, [ctx.shape[0], -1, q.shape[2], v.shape[3]]), dims read by Shape
        pieces = []
        for k, d in enumerate(sdpa_tail):
            if d == "-1":
                pieces.append(c(f"tail.m{k}", [-1], np.int64))
                continue
            src, idx = d
            src = {"q": "q.t0", "v": "v.t0", "ctx": "ctx"}[src]
            nodes.append(n("Shape", [src], [f"tail.s{k}"]))
            nodes.append(n("Gather", [f"tail.s{k}", c(f"tail.i{k}", idx, np.int64)], [f"tail.g{k}"], axis=0))
            nodes.append(n("Unsqueeze", [f"tail.g{k}", c(f"tail.a{k}", [0], np.int64)], [f"tail.u{k}"]))
            pieces.append(f"tail.u{k}")
        nodes.append(n("Concat", pieces, ["tail.shape"], axis=0))
        nodes.append(n("Reshape", ["ctx", "tail.shape"], ["ctx_r"]))
        ctx = "ctx_r"
    nodes.append(n("Transpose", [ctx], ["ctx_t"], perm=list(out_perm)))
    nodes.append(n("Reshape", ["ctx_t", c("merged", [0, 0, HID], np.int64)], ["y"]))
    outs = [("y", elem, ["b", "s", HID])] + [(o, elem, None) for o in outputs]
    return make_model(nodes, inputs, outs, inits)


def pipeline_ops(model, until: str | None = None) -> list[str]:
    loaded, _ = load_model(model)
    module = run_pipeline(import_model(loaded), until=until)
    return [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]


def feeds_for(model, b, s, rng, elem=T.FLOAT, mask_kind="b11s", empty_row=False):
    npt = NP[elem]
    f = {"x": rng.standard_normal((b, s, HID)).astype(npt)}
    names = [i.name for i in model.graph.input]
    if "m" in names:
        shape = (b, 1, 1, s) if mask_kind == "b11s" else (b, 1, s, s)
        m = np.where(rng.random(shape) < 0.3, -np.inf if empty_row else -1e4, 0.0).astype(npt)
        m[..., 0] = 0.0  # no row without a key unless asked
        if empty_row:
            m[-1, ..., :] = -np.inf  # the last batch row attends nothing: NaN unfused, zeroed by Where(IsNaN)
        f["m"] = m
    return f


def check(model, refruntime, tmp_path, fused: bool, elem=T.FLOAT, mask_kind="b11s", empty_row=False, tol=None):
    """Compile and run `model` on two shapes against onnxruntime; `fused`: whether it must be one attention
    kernel call (no softmax, no matmul or gemm but the three projections)."""
    ops = pipeline_ops(model, until="fuse-attention")
    kernels = pipeline_ops(model)
    if fused:  # (an intermediate that a Shape reads stays for it until refine-shapes)
        assert ops.count("onnx.onnx_attention") == 1
        assert "onnx.shape" in ops or ("onnx.softmax" not in ops and "onnx.transpose" not in ops)
        assert kernels.count("hipdnn.attention") == 1 and "hipdnn.softmax" not in kernels
        # the three projections: MatMul, or Gemm where fuse-linear-bias took their bias Add
        assert "hipdnn.transpose" not in kernels and kernels.count("hipdnn.matmul") + kernels.count("hipdnn.gemm") == 3
    else:
        assert "onnx.onnx_attention" not in ops and "hipdnn.attention" not in kernels
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    rng = np.random.default_rng(1)
    t = tol or (3e-3 if elem == T.FLOAT16 else 1e-5)
    for b, s in ((2, 5), (1, 3)):
        feeds = feeds_for(model, b, s, rng, elem, mask_kind, empty_row)
        got = refruntime.run(info.program, [feeds[k] for k in names] + weights)
        want = ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=t, atol=t)
    return info


# ---------------------------------------------------------------- what fuses


@pytest.mark.parametrize("scale", ["div", "mul", "qk", "none"])
@pytest.mark.parametrize("k_perm", ["0231", "two"])
def test_the_chain_is_one_attention_call(scale, k_perm, refruntime, tmp_path):
    check(attention_chain(scale=scale, k_perm=k_perm), refruntime, tmp_path, fused=True)


@pytest.mark.parametrize("target", ["const", "concat", "minus1"])
@pytest.mark.parametrize("mask", [None, "b11s", "b1ss"])
def test_heads_targets_and_masks(target, mask, refruntime, tmp_path):
    model = attention_chain(target=target, mask=mask)
    check(model, refruntime, tmp_path, fused=True, mask_kind=mask or "b11s")


@pytest.mark.parametrize("axis", [3, None], ids=["axis3", "no-axis"])
def test_softmax_axes(axis, refruntime, tmp_path):
    check(attention_chain(axis=axis), refruntime, tmp_path, fused=True)


def test_the_sdpa_zeroing_of_rows_without_a_key_goes_with_it(refruntime, tmp_path):
    # Where(IsNaN(softmax), 0, softmax): a row whose keys are all -inf is 0 (unfused: NaN, zeroed); the kernel
    # gives such a row zeros
    model = attention_chain(mask="b1ss", isnan=True)
    check(model, refruntime, tmp_path, fused=True, mask_kind="b1ss", empty_row=True)


SDPA_TAIL = [("ctx", 0), "-1", ("q", 2), ("v", 3)]


def test_the_sdpa_export_tail_and_its_shape_reads(refruntime, tmp_path):
    # torch's sdpa export: Q and K^T scaled by sqrt(scale), Shape reads of Q's heads, the context and V's heads,
    # and an identity Reshape of the context before its Transpose: fused; the read intermediates are left to
    # the Shapes and erased once those are folded (no softmax, transpose or extra matmul is compiled)
    model = attention_chain(scale="qk", mask="b1ss", isnan=True, sdpa_tail=SDPA_TAIL)
    check(model, refruntime, tmp_path, fused=True, mask_kind="b1ss")
    ops = pipeline_ops(model, until="fuse-attention")
    assert ops.count("onnx.shape") == 6  # x's (one per heads target) and the three the tail reads


@pytest.mark.parametrize("tail", [[("ctx", 0), ("ctx", 1), ("ctx", 2), ("ctx", 3)],
                                  [("ctx", 0), "-1", ("ctx", 2), ("v", 3)]], ids=["ctx-dims", "ctx-and-v"])
def test_identity_context_reshapes(tail, refruntime, tmp_path):
    check(attention_chain(sdpa_tail=tail), refruntime, tmp_path, fused=True)


@pytest.mark.parametrize("tail", [[("ctx", 0), "-1", ("ctx", 3), ("v", 2)], [("ctx", 0), "-1", ("q", 2), ("q", 3)],
                                  [("q", 0), ("ctx", 1), ("q", 1), ("v", 3)]],
                         ids=["swapped", "q-head-size", "q-dims"])
def test_other_context_reshapes_are_not_fused(tail):
    # not known to keep the context's shape (Q's head size is V's here only by chance)
    assert "onnx.onnx_attention" not in pipeline_ops(attention_chain(sdpa_tail=tail), until="fuse-attention")


def test_grouped_kv_heads(refruntime, tmp_path):
    # K and V of one head broadcast by the MatMuls over Q's two heads: kv_num_heads 1
    check(attention_chain(kv_heads=1), refruntime, tmp_path, fused=True)


def test_float16(refruntime, tmp_path):
    check(attention_chain(elem=T.FLOAT16, mask="b1ss", scale="qk"), refruntime, tmp_path, fused=True,
          elem=T.FLOAT16, mask_kind="b1ss")


def test_the_scale_is_the_constants_read(refruntime, tmp_path):
    # any scale is what it is (not assumed 1 / sqrt(D)): 0.05 on the scores
    check(attention_chain(scale="mul", scale_value=0.05), refruntime, tmp_path, fused=True)


# ---------------------------------------------------------------- near misses: nothing fuses


@pytest.mark.parametrize("out", ["probs", "scores", "ctx", "q.t0", "masked", "scaled"])
def test_an_intermediate_read_elsewhere_is_not_fused(out, refruntime, tmp_path):
    check(attention_chain(outputs=(out,)), refruntime, tmp_path, fused=False)


@pytest.mark.parametrize("case", ["axis", "no_scale_div_by_vector"])
def test_a_chain_that_is_not_attention_is_not_fused(case, refruntime, tmp_path):
    kw = {"axis": {"axis": 2}, "no_scale_div_by_vector": {"scale": "vector"}}[case]
    if case == "axis":  # a softmax over the queries
        check(attention_chain(**kw), refruntime, tmp_path, fused=False)
    else:  # a scale of one value per key column (3 keys): compile-only, the graph runs for s = 3 alone
        assert "onnx.onnx_attention" not in pipeline_ops(attention_chain(**kw), until="fuse-attention")


@pytest.mark.parametrize("kw", [{"q_perm": (0, 2, 3, 1)}, {"out_perm": (0, 1, 2, 3)}, {"k_perm": "two", "kv_heads": 2,
                                                                                        "q_perm": (0, 1, 2, 3)}],
                         ids=["q-perm", "out-perm", "q-untransposed"])
def test_other_perms_are_not_fused(kw):
    # graphs whose shapes agree for some sizes only: the pass's decision is what is checked
    assert "onnx.onnx_attention" not in pipeline_ops(attention_chain(**kw), until="fuse-attention")


def test_an_isnan_without_its_where_keeps_the_softmax(refruntime, tmp_path):
    model = attention_chain(isnan=True, mask="b1ss", outputs=("nan",))
    model.graph.output[1].type.tensor_type.elem_type = T.BOOL
    ops = pipeline_ops(model, until="fuse-attention")
    assert "onnx.onnx_attention" not in ops and "onnx.softmax" in ops


def test_float64_is_not_fused():
    model = attention_chain(elem=T.DOUBLE)
    assert "onnx.onnx_attention" not in pipeline_ops(model, until="fuse-attention")


# ---------------------------------------------------------------- the exported BERT (packages/ep/tests/models.py)


def _ep_models():
    path = Path(__file__).resolve().parents[2] / "ep" / "tests" / "models.py"
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    spec = importlib.util.spec_from_file_location("ep_test_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("float16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("mask", ["legacy", "sdpa"])
def test_exported_bert(mask, float16, refruntime, tmp_path):
    import onnx

    models = _ep_models()
    layers = 2
    path = models.exported_bert(tmp_path / "bert.onnx", layers=layers, mask=mask, float16=float16)
    model = onnx.load(path)
    ops = pipeline_ops(model, until="fuse-attention")
    assert ops.count("onnx.onnx_attention") == layers and "onnx.softmax" not in ops
    kernels = pipeline_ops(model)
    assert kernels.count("hipdnn.attention") == layers
    assert "hipdnn.softmax" not in kernels and "hipdnn.transpose" not in kernels
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    tol = 2e-2 if float16 else 1e-4
    for b, s in ((2, 7), (1, 4), (3, 1)):
        feeds = models.bert_feeds(b, s)
        got = refruntime.run(info.program, [feeds[k] for k in names] + weights)
        want = ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("float16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("mask", ["legacy", "sdpa"])
def test_exported_bert_on_the_runtime_cpu_backend(mask, float16, tmp_path):
    """The same BERT on the C++ runtime's CPU backend (its attention kernel), where the runtime is installed."""
    import onnx

    models = _ep_models()
    path = models.exported_bert(tmp_path / "bert.onnx", layers=2, mask=mask, float16=float16)
    model = onnx.load(path)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    feeds = [models.bert_feeds(b, s) for b, s in ((2, 7), (1, 4), (3, 1))]
    results = run_on_runtime(info.program, [[f[k] for k in names] + weights for f in feeds], tmp_path)
    tol = 2e-2 if float16 else 1e-4
    for f, got in zip(feeds, results, strict=True):
        want = ort_run(model, f)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


# ---------------------------------------------------------------- a real export


@pytest.mark.exports
@pytest.mark.parametrize("float16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_a_transformers_bert_export(implementation, float16, refruntime, tmp_path):
    """torch.onnx.export (TorchScript exporter, opset 17) of transformers' BertModel, eager attention or torch's
    scaled_dot_product_attention (Shape reads of the heads and the context, an identity Reshape, Q and K scaled
    apart, IsNaN/Where): one attention call per layer (the heads Reshape target is [B, S, -1, head_size]
    there), matching onnxruntime; also converted to float16 by onnxruntime's convert_float_to_float16
    (keep_io_types: Casts at the edges)."""
    import warnings

    import onnx

    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, attn_implementation=implementation)
    bert = transformers.BertModel(config).eval()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask):
            return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state

    path = tmp_path / "bert.onnx"
    ids, mask = torch.randint(0, 64, (2, 5)), torch.ones(2, 5, dtype=torch.int64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Wrapper(), (ids, mask), str(path), opset_version=17, dynamo=False,
                              input_names=["input_ids", "attention_mask"], output_names=["y"],
                              dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"}})
    except Exception as exc:  # noqa: BLE001 - a torch without the TorchScript exporter (or its dependencies)
        pytest.skip(f"torch.onnx.export (dynamo=False) is not available: {exc}")
    model = onnx.load(path)
    if float16:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from onnxruntime.transformers.float16 import convert_float_to_float16

            model = convert_float_to_float16(model, keep_io_types=True)
    kernels = pipeline_ops(model)
    assert kernels.count("hipdnn.attention") == 2 and "hipdnn.softmax" not in kernels
    assert "hipdnn.transpose" not in kernels
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    rng = np.random.default_rng(3)
    for b, s in ((2, 5), (1, 3)):
        m = np.ones((b, s), np.int64)
        m[-1, -1:] = 0
        feeds = {"input_ids": rng.integers(0, 64, (b, s)).astype(np.int64), "attention_mask": m}
        (got,) = refruntime.run(info.program, [feeds[k] for k in names] + weights)
        (want,) = ort_run(model, feeds)
        tol = 2e-2 if float16 else 1e-4
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_target_abi_without_the_attention_kernel_keeps_the_chain(refruntime, tmp_path):
    # the kernel is ABI 1.3's: compiled for 1.2, the chain stays as imported (and needs nothing newer)
    model = attention_chain(target="const")
    info = compile_model(model, tmp_path / "a12", abi="1.2")
    assert info.metadata["abi"]["min_minor"] <= 2
    assert compile_model(model, tmp_path / "a13").metadata["abi"]["min_minor"] == 3
