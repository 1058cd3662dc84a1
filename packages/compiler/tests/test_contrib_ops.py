"""The com.microsoft ops of onnxruntime's transformer optimizer (BiasGelu, FastGelu, QuickGelu, BiasAdd,
SkipLayerNormalization, EmbedLayerNormalization, Attention, MultiHeadAttention), each a single-node model
compiled and run on the reference runtime with fixed and dynamic shapes, compared with onnxruntime's
CPU EP on the same node; and the refusals that name the node."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const
from onnx import TensorProto as T
from onnx import helper
from test_llm_ops import model_of, run_both

from hipdnn_ep_compiler import ModelError, UnsupportedError, compile_model, load_weights

MS = "com.microsoft"


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def dims(dynamic, fixed):
    return ["batch", "seq", *fixed[2:]] if dynamic else list(fixed)


@pytest.mark.parametrize("op,bias", [("BiasGelu", True), ("FastGelu", True), ("FastGelu", False)])
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
def test_gelu_with_bias(op, bias, dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(0)
    node = helper.make_node(op, ["x", "b"] if bias else ["x"], ["y"], domain=MS)
    d = dims(dynamic, [2, 3, 16])
    inits = [const("b", rand(rng, 16))] if bias else []
    model = model_of([node], [("x", T.FLOAT, d)], [("y", T.FLOAT, d)], inits)
    shapes = [(2, 3), (1, 5)] if dynamic else [(2, 3)]
    run_both(model, [{"x": rand(rng, *s, 16)} for s in shapes], refruntime, tmp_path)


@pytest.mark.parametrize("alpha", [None, 1.0])
def test_quick_gelu(alpha, refruntime, tmp_path):
    rng = np.random.default_rng(1)
    node = helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, **({} if alpha is None else {"alpha": alpha}))
    model = model_of([node], [("x", T.FLOAT, ["n", 8])], [("y", T.FLOAT, ["n", 8])])
    run_both(model, [{"x": 3 * rand(rng, 4, 8)}, {"x": rand(rng, 1, 8)}], refruntime, tmp_path)


def test_bias_add(refruntime, tmp_path):
    rng = np.random.default_rng(2)
    node = helper.make_node("BiasAdd", ["x", "b", "s"], ["y"], domain=MS)
    d = ["n", "s", 8]
    model = model_of([node], [("x", T.FLOAT, d), ("s", T.FLOAT, d)], [("y", T.FLOAT, d)], [const("b", rand(rng, 8))])
    # onnxruntime has BiasAdd on its CUDA EP only: the reference is its definition, X + bias + skip
    info = compile_model(model, tmp_path / "art")
    x, s = rand(rng, 2, 3, 8), rand(rng, 2, 3, 8)
    (got,) = refruntime.run(info.program, [x, s] + load_weights(info.metadata, model))
    bias = np.frombuffer(model.graph.initializer[0].raw_data, np.float32)
    np.testing.assert_allclose(got, x + bias + s, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("beta,bias,with_sum", [(True, True, False), (False, False, False), (True, True, True),
                                                (True, False, True)])
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
def test_skip_layer_norm(beta, bias, with_sum, dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(3)
    names = ["x", "skip", "g", "b" if beta else "", "bias" if bias else ""]
    outs = ["y", "", "", "sum"] if with_sum else ["y"]
    node = helper.make_node("SkipLayerNormalization", names, outs, domain=MS, epsilon=1e-6)
    d = dims(dynamic, [2, 3, 32])
    inits = [const("g", rand(rng, 32))] + ([const("b", rand(rng, 32))] if beta else []) + (
        [const("bias", rand(rng, 32))] if bias else [])
    model = model_of([node], [("x", T.FLOAT, d), ("skip", T.FLOAT, d)],
                     [("y", T.FLOAT, d)] + ([("sum", T.FLOAT, d)] if with_sum else []), inits)
    shapes = [(2, 3), (1, 7)] if dynamic else [(2, 3)]
    run_both(model, [{"x": rand(rng, *s, 32), "skip": rand(rng, *s, 32)} for s in shapes], refruntime, tmp_path,
             tol=1e-4)


def test_skip_layer_norm_mean_output_is_refused(tmp_path):
    node = helper.make_node("SkipLayerNormalization", ["x", "skip", "g"], ["y", "mean"], domain=MS, name="sln")
    model = model_of([node], [("x", T.FLOAT, [1, 2, 4]), ("skip", T.FLOAT, [1, 2, 4])],
                     [("y", T.FLOAT, [1, 2, 4]), ("mean", T.FLOAT, None)], [const("g", np.ones(4, np.float32))])
    with pytest.raises(UnsupportedError, match=r"sln.*output 1 \(optional\) is not supported"):
        compile_model(model, tmp_path / "art")


@pytest.mark.parametrize("segments,mask,position_ids", [(True, True, False), (False, False, False),
                                                        (True, True, True)])
def test_embed_layer_norm(segments, mask, position_ids, refruntime, tmp_path):
    rng = np.random.default_rng(4)
    vocab, hidden, max_pos = 50, 16, 12
    names = ["ids", "seg" if segments else "", "we", "pe", "se" if segments else "", "g", "b",
             "mask" if mask else "", "pos" if position_ids else ""]
    node = helper.make_node("EmbedLayerNormalization", names, ["y", "mask_index", "sum"], domain=MS, epsilon=1e-5)
    inits = [const("we", rand(rng, vocab, hidden)), const("pe", rand(rng, max_pos, hidden)),
             const("g", rand(rng, hidden)), const("b", rand(rng, hidden))] + (
        [const("se", rand(rng, 2, hidden))] if segments else [])
    inputs = [("ids", T.INT32, ["batch", "seq"])]
    if segments:
        inputs.append(("seg", T.INT32, ["batch", "seq"]))
    if mask:
        inputs.append(("mask", T.INT32, ["batch", "seq"]))
    if position_ids:
        inputs.append(("pos", T.INT32, ["batch", "seq"]))
    model = model_of([node], inputs, [("y", T.FLOAT, ["batch", "seq", hidden]), ("mask_index", T.INT32, ["batch"]),
                                      ("sum", T.FLOAT, ["batch", "seq", hidden])], inits)
    feeds = []
    for b, s in ((2, 5), (1, 12)):
        f = {"ids": rng.integers(0, vocab, (b, s), dtype=np.int32)}
        if segments:
            f["seg"] = rng.integers(0, 2, (b, s), dtype=np.int32)
        if mask:
            f["mask"] = (np.arange(s)[None, :] < rng.integers(1, s + 1, (b, 1))).astype(np.int32)
        if position_ids:
            f["pos"] = rng.integers(0, max_pos, (b, s), dtype=np.int32)
        feeds.append(f)
    run_both(model, feeds, refruntime, tmp_path, tol=1e-4)


def attention_model(heads, hidden, mask_shape=None, unidirectional=0, bias=True, qkv_sizes=None, mask_filter=None,
                    scale=None):
    rng = np.random.default_rng(5)
    out_w = sum(qkv_sizes) if qkv_sizes else 3 * hidden
    attrs = {"num_heads": heads, "unidirectional": unidirectional}
    if qkv_sizes:
        attrs["qkv_hidden_sizes"] = qkv_sizes
    if mask_filter is not None:
        attrs["mask_filter_value"] = mask_filter
    if scale is not None:
        attrs["scale"] = scale
    names = ["x", "w", "bias" if bias else "", "mask" if mask_shape else ""]
    node = helper.make_node("Attention", names, ["y"], domain=MS, name="attn", **attrs)
    inits = [const("w", 0.3 * rand(rng, hidden, out_w))] + ([const("bias", rand(rng, out_w))] if bias else [])
    inputs = [("x", T.FLOAT, ["batch", "seq", hidden])] + ([("mask", T.INT32, mask_shape)] if mask_shape else [])
    v = qkv_sizes[2] if qkv_sizes else hidden
    return model_of([node], inputs, [("y", T.FLOAT, ["batch", "seq", v])], inits)


def attention_feeds(hidden, mask_kind, shapes=((2, 5), (1, 1), (3, 4))):
    rng = np.random.default_rng(6)
    feeds = []
    for b, s in shapes:
        f = {"x": rand(rng, b, s, hidden)}
        lengths = rng.integers(1, s + 1, b)
        if mask_kind == "2d":
            f["mask"] = (np.arange(s)[None, :] < lengths[:, None]).astype(np.int32)
        elif mask_kind == "1d":
            f["mask"] = lengths.astype(np.int32)
        elif mask_kind == "3d":
            f["mask"] = rng.integers(0, 2, (b, s, s)).astype(np.int32)
            f["mask"][:, :, 0] = 1
        feeds.append(f)
    return feeds


@pytest.mark.parametrize("mask_kind", [None, "1d", "2d", "3d"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention(mask_kind, unidirectional, refruntime, tmp_path):
    hidden = 16
    shape = {None: None, "1d": ["batch"], "2d": ["batch", "seq"], "3d": ["batch", "seq", "seq"]}[mask_kind]
    model = attention_model(4, hidden, shape, unidirectional)
    run_both(model, attention_feeds(hidden, mask_kind), refruntime, tmp_path, tol=1e-4)


def test_attention_options(refruntime, tmp_path):
    # unequal V size, no bias, a mask_filter_value and a scale of its own
    model = attention_model(2, 8, ["batch", "seq"], bias=False, qkv_sizes=[8, 8, 12], mask_filter=-1e4 * 3,
                            scale=0.2)
    run_both(model, attention_feeds(8, "2d"), refruntime, tmp_path, tol=1e-4)


def test_attention_refuses_past(tmp_path):
    node = helper.make_node("Attention", ["x", "w", "bias", "", "past"], ["y", "present"], domain=MS, name="attn",
                            num_heads=2)
    model = model_of([node], [("x", T.FLOAT, [1, 2, 4]), ("past", T.FLOAT, [2, 1, 2, 0, 2])],
                     [("y", T.FLOAT, [1, 2, 4]), ("present", T.FLOAT, None)],
                     [const("w", np.ones((4, 12), np.float32)), const("bias", np.ones(12, np.float32))])
    with pytest.raises(UnsupportedError, match=r"attn.*input 4 \(past\) is not supported"):
        compile_model(model, tmp_path / "art")


def test_attention_checks_the_hidden_sizes(tmp_path):
    node = helper.make_node("Attention", ["x", "w"], ["y"], domain=MS, name="attn", num_heads=3)
    model = model_of([node], [("x", T.FLOAT, [1, 2, 4])], [("y", T.FLOAT, None)],
                     [const("w", np.ones((4, 12), np.float32))])
    with pytest.raises(ModelError, match=r"attn.*multiples of num_heads 3"):
        compile_model(model, tmp_path / "art")


@pytest.mark.parametrize("mask_kind", [None, "2d", "1d"])
@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_attention(mask_kind, bias, refruntime, tmp_path):
    rng = np.random.default_rng(7)
    heads, hidden, vh = 2, 8, 12
    names = ["q", "k", "v", "bias" if bias else "", "mask" if mask_kind else ""]
    node = helper.make_node("MultiHeadAttention", names, ["y"], domain=MS, num_heads=heads)
    mshape = {"2d": ["batch", "kv"], "1d": ["batch"]}.get(mask_kind)
    inputs = [("q", T.FLOAT, ["batch", "seq", hidden]), ("k", T.FLOAT, ["batch", "kv", hidden]),
              ("v", T.FLOAT, ["batch", "kv", vh])] + ([("mask", T.INT32, mshape)] if mask_kind else [])
    inits = [const("bias", rand(rng, 2 * hidden + vh))] if bias else []
    model = model_of([node], inputs, [("y", T.FLOAT, ["batch", "seq", vh])], inits)
    feeds = []
    for b, s, L in ((2, 3, 5), (1, 4, 1)):
        f = {"q": rand(rng, b, s, hidden), "k": rand(rng, b, L, hidden), "v": rand(rng, b, L, vh)}
        lengths = rng.integers(1, L + 1, b)
        if mask_kind == "2d":
            f["mask"] = (np.arange(L)[None, :] < lengths[:, None]).astype(np.int32)
        elif mask_kind == "1d":
            f["mask"] = lengths.astype(np.int32)
        feeds.append(f)
    run_both(model, feeds, refruntime, tmp_path, tol=1e-4)


def test_multi_head_attention_refuses_packed_qkv(tmp_path):
    node = helper.make_node("MultiHeadAttention", ["q"], ["y"], domain=MS, name="mha", num_heads=2)
    model = model_of([node], [("q", T.FLOAT, [1, 2, 2, 3, 4])], [("y", T.FLOAT, None)])
    with pytest.raises(UnsupportedError, match=r"mha.*packed QKV is not"):
        compile_model(model, tmp_path / "art")


def test_multi_head_attention_unidirectional(refruntime, tmp_path):
    rng = np.random.default_rng(8)
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS, num_heads=2, unidirectional=1)
    d = ["batch", "seq", 8]
    model = model_of([node], [("q", T.FLOAT, d), ("k", T.FLOAT, d), ("v", T.FLOAT, d)], [("y", T.FLOAT, d)])
    feeds = [{n: rand(rng, b, s, 8) for n in "qkv"} for b, s in ((2, 4), (1, 1))]
    run_both(model, feeds, refruntime, tmp_path, tol=1e-4)


def test_multi_head_attention_unidirectional_cross_lengths_are_refused(refruntime, tmp_path):
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS, name="mha", num_heads=2,
                            unidirectional=1)
    model = model_of([node], [("q", T.FLOAT, [1, 3, 8]), ("k", T.FLOAT, [1, 5, 8]), ("v", T.FLOAT, [1, 5, 8])],
                     [("y", T.FLOAT, None)])
    with pytest.raises(UnsupportedError, match=r"mha.*unidirectional with a key length \(5\) other than the query's "
                                               r"sequence length \(3\) is not supported"):
        compile_model(model, tmp_path / "art")
    # dynamic lengths: checked when the program runs
    model = model_of([node], [("q", T.FLOAT, [1, "s", 8]), ("k", T.FLOAT, [1, "l", 8]), ("v", T.FLOAT, [1, "l", 8])],
                     [("y", T.FLOAT, None)])
    info = compile_model(model, tmp_path / "art2")
    x = np.zeros((1, 3, 8), np.float32)
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [x, np.zeros((1, 5, 8), np.float32), np.zeros((1, 5, 8), np.float32)])
    assert any(c["where"] == "node 'mha' (com.microsoft::MultiHeadAttention)" and
               c["text"].startswith("unidirectional attention needs the key length {0} to equal")
               for c in info.metadata["checks"])


def test_attention_refuses_a_4d_mask(tmp_path):
    node = helper.make_node("Attention", ["x", "w", "", "m"], ["y"], domain=MS, name="attn", num_heads=2)
    model = model_of([node], [("x", T.FLOAT, [1, 2, 4]), ("m", T.INT32, [1, 1, 2, 2])], [("y", T.FLOAT, None)],
                     [const("w", np.ones((4, 12), np.float32))])
    with pytest.raises(UnsupportedError, match=r"attn.*a mask \(input 3\) of rank 4 is not supported"):
        compile_model(model, tmp_path / "art")


def _kernel_ops(model) -> list[str]:
    from hipdnn_ep_compiler.frontend import load_model
    from hipdnn_ep_compiler.frontend.importer import import_model
    from hipdnn_ep_compiler.passes import run_pipeline

    module = run_pipeline(import_model(load_model(model)[0]))
    return [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]


@pytest.mark.parametrize("case", ["attention", "attention-causal", "attention-mask", "mha-bias",
                                  "mha-attention-bias", "mha-key-mask"])
def test_the_attention_ops_without_a_key_mask_are_one_fused_call(case, refruntime, tmp_path):
    """Attention and MultiHeadAttention call the fused attention kernel where no key mask is given (mask_index,
    key_padding_mask: mask_filter_value semantics stay composed)."""
    rng = np.random.default_rng(9)
    if case.startswith("attention"):
        model = attention_model(4, 16, ["batch", "seq"] if case == "attention-mask" else None,
                                unidirectional=int(case == "attention-causal"))
        feeds = attention_feeds(16, "2d" if case == "attention-mask" else None)
    else:
        heads, hidden, vh = 2, 8, 12
        names = ["q", "k", "v", "bias" if case == "mha-bias" else "", "m" if case == "mha-key-mask" else "",
                 "ab" if case == "mha-attention-bias" else ""]
        node = helper.make_node("MultiHeadAttention", names, ["y"], domain=MS, num_heads=heads)
        inputs = [("q", T.FLOAT, ["batch", "seq", hidden]), ("k", T.FLOAT, ["batch", "kv", hidden]),
                  ("v", T.FLOAT, ["batch", "kv", vh])]
        if case == "mha-key-mask":
            inputs.append(("m", T.INT32, ["batch", "kv"]))
        if case == "mha-attention-bias":
            inputs.append(("ab", T.FLOAT, [1, heads, "seq", "kv"]))
        inits = [const("bias", rand(rng, 2 * hidden + vh))] if case == "mha-bias" else []
        model = model_of([node], inputs, [("y", T.FLOAT, ["batch", "seq", vh])], inits)
        feeds = []
        for b, s, L in ((2, 3, 5), (1, 4, 1)):
            f = {"q": rand(rng, b, s, hidden), "k": rand(rng, b, L, hidden), "v": rand(rng, b, L, vh)}
            if case == "mha-key-mask":
                f["m"] = (np.arange(L)[None, :] < rng.integers(1, L + 1, b)[:, None]).astype(np.int32)
            if case == "mha-attention-bias":
                f["ab"] = rand(rng, 1, heads, s, L)
            feeds.append(f)
    ops = _kernel_ops(model)
    if case in ("attention-mask", "mha-key-mask"):
        assert "hipdnn.attention" not in ops and "hipdnn.softmax" in ops
    else:
        assert ops.count("hipdnn.attention") == 1 and "hipdnn.softmax" not in ops
    run_both(model, feeds, refruntime, tmp_path, tol=1e-4)
