"""The LLM ops of onnxruntime-genai's graphs (MatMulNBits, SimplifiedLayerNormalization,
SkipSimplifiedLayerNormalization, RotaryEmbedding, GroupQueryAttention with its attention-mask
plumbing), compiled and executed on the reference runtime with fixed and dynamic shapes,
compared with onnxruntime's CPU EP; and the refusals that name the node."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import ModelError, UnsupportedError, compile_model, load_weights

MS = "com.microsoft"


def model_of(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])


def run_both(model, feeds_list, refruntime, tmp_path, tol=1e-5):
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    for feeds in feeds_list:
        got = refruntime.run(info.program, [feeds[n] for n in names] + weights)
        want = ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            t = 3e-3 if g.dtype == np.float16 else tol
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=t, atol=t)
    return info


def int4_weights(rng, n, k, block, zero_points):
    blocks = -(-k // block)
    inits = [const("b", rng.integers(0, 256, (n, blocks, block // 2), dtype=np.uint8)),
             const("s", rng.uniform(0.01, 0.1, (n, blocks)).astype(np.float32))]
    if zero_points:
        inits.append(const("z", rng.integers(0, 256, (n * ((blocks + 1) // 2),), dtype=np.uint8)))
    return inits


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("block,zero_points,bias", [(32, False, False), (64, True, False), (128, True, True)])
def test_matmul_nbits(block, zero_points, bias, dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(block)
    k, n = 256, 48
    inits = int4_weights(rng, n, k, block, zero_points)
    names = ["x", "b", "s", "z" if zero_points else ""]
    if bias:
        inits.append(const("bias", rng.standard_normal(n).astype(np.float32)))
        names += ["", "bias"]
    node = helper.make_node("MatMulNBits", names, ["y"], domain=MS, K=k, N=n, bits=4, block_size=block,
                            accuracy_level=0)
    batch = ["batch", "seq"] if dynamic else [2, 3]
    model = model_of([node], [("x", T.FLOAT, [*batch, k])], [("y", T.FLOAT, [*batch, n])], inits)
    shapes = [(2, 3), (1, 1), (1, 9)] if dynamic else [(2, 3)]
    run_both(model, [{"x": rng.standard_normal((*s, k)).astype(np.float32)} for s in shapes], refruntime, tmp_path,
             tol=1e-4)


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
def test_simplified_layer_norm_in_the_default_domain(dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(1)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "w"], ["y"], epsilon=1e-5, axis=-1, stash_type=1)
    dims = ["batch", "seq", 32] if dynamic else [2, 5, 32]
    model = model_of([node], [("x", T.FLOAT, dims)], [("y", T.FLOAT, dims)],
                     [const("w", rng.standard_normal(32).astype(np.float32))])
    shapes = [(2, 5), (1, 1), (3, 7)] if dynamic else [(2, 5)]
    run_both(model, [{"x": rng.standard_normal((*s, 32)).astype(np.float32)} for s in shapes], refruntime, tmp_path)


@pytest.mark.parametrize("with_sum,with_bias", [(True, False), (False, True), (True, True)])
def test_skip_simplified_layer_norm(with_sum, with_bias, refruntime, tmp_path):
    rng = np.random.default_rng(2)
    dims = ["batch", "seq", 16]
    inputs = ["x", "skip", "w"] + (["bias"] if with_bias else [])
    outputs = ["y", "", "", "sum"] if with_sum else ["y"]
    node = helper.make_node("SkipSimplifiedLayerNormalization", inputs, outputs, domain=MS, epsilon=1e-6)
    inits = [const("w", rng.standard_normal(16).astype(np.float32))]
    if with_bias:
        inits.append(const("bias", rng.standard_normal(16).astype(np.float32)))
    model = model_of([node], [("x", T.FLOAT, dims), ("skip", T.FLOAT, dims)],
                     [(o, T.FLOAT, dims) for o in outputs if o], inits)
    feeds = [{"x": rng.standard_normal((b, s, 16)).astype(np.float32),
              "skip": rng.standard_normal((b, s, 16)).astype(np.float32)} for b, s in [(1, 4), (2, 1)]]
    run_both(model, feeds, refruntime, tmp_path)


def test_skip_simplified_layer_norm_outputs_returned_and_sums_used_inside(refruntime, tmp_path):
    """The memory plan crashed (KeyError) on a node whose first result is a graph output and a later
    one is not: setting the output's attributes changed the op's hash, its dict key. The lookup
    failed most of the time, not always: six such nodes make the old failure all but certain."""
    rng = np.random.default_rng(9)
    dims = [2, 3, 16]
    nodes, outputs, prev = [], [], "x"
    for i in range(6):
        nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [prev, "skip", "w"],
                                      [f"y{i}", "", "", f"s{i}"], domain=MS, epsilon=1e-6))
        outputs.append((f"y{i}", T.FLOAT, dims))
        prev = f"s{i}"
    nodes.append(helper.make_node("Relu", [prev], ["r"]))
    model = model_of(nodes, [("x", T.FLOAT, dims), ("skip", T.FLOAT, dims)], [*outputs, ("r", T.FLOAT, dims)],
                     [const("w", rng.standard_normal(16).astype(np.float32))])
    feeds = {"x": rng.standard_normal(dims).astype(np.float32), "skip": rng.standard_normal(dims).astype(np.float32)}
    run_both(model, [feeds], refruntime, tmp_path)


def rope_caches(max_pos, half):
    angles = np.arange(max_pos)[:, None] / (10000 ** (np.arange(half) / half))[None]
    return const("cos", np.cos(angles).astype(np.float32)), const("sin", np.sin(angles).astype(np.float32))


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding(interleaved, refruntime, tmp_path):
    rng = np.random.default_rng(3)
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, interleaved=interleaved)
    dims = ["batch", "seq", 64]
    model = model_of([node], [("x", T.FLOAT, dims), ("pos", T.INT64, ["batch", "seq"])], [("y", T.FLOAT, dims)],
                     rope_caches(32, 8))
    feeds = [{"x": rng.standard_normal((b, s, 64)).astype(np.float32),
              "pos": rng.integers(0, 32, (b, s)).astype(np.int64)} for b, s in [(2, 3), (1, 1)]]
    run_both(model, feeds, refruntime, tmp_path)


def gqa_model(heads, kv_heads, head, packed, rotary, window=-1, softcap=0.0, fixed=None):
    """GroupQueryAttention fed by onnxruntime-genai's mask plumbing (seqlens_k = ReduceSum(mask) - 1 and
    total_sequence_length = Shape(mask)[1], both cast to int32). fixed: (batch, seq, past) or None."""
    b, s, p = fixed or ("batch", "seq", "past")
    total = "total" if fixed is None else p + s
    nodes = [helper.make_node("ReduceSum", ["mask", "one"], ["rs"], keepdims=0),
             helper.make_node("Sub", ["rs", "one"], ["sub"]),
             helper.make_node("Cast", ["sub"], ["seqlens_k"], to=T.INT32),
             helper.make_node("Shape", ["mask"], ["shape"]),
             helper.make_node("Gather", ["shape", "one_scalar"], ["tot64"], axis=0),
             helper.make_node("Cast", ["tot64"], ["total_len"], to=T.INT32)]
    qkv = ["qkv", "", ""] if packed else ["q", "k", "v"]
    ins = [*qkv, "past_k", "past_v", "seqlens_k", "total_len"] + (["cos", "sin"] if rotary else [])
    nodes.append(helper.make_node("GroupQueryAttention", ins, ["out", "present_k", "present_v"], domain=MS,
                                  num_heads=heads, kv_num_heads=kv_heads, do_rotary=int(rotary),
                                  local_window_size=window, softcap=softcap))
    width = (heads + 2 * kv_heads) * head
    inputs = ([("qkv", T.FLOAT, [b, s, width])] if packed else
              [("q", T.FLOAT, [b, s, heads * head]), ("k", T.FLOAT, [b, s, kv_heads * head]),
               ("v", T.FLOAT, [b, s, kv_heads * head])])
    inputs += [("past_k", T.FLOAT, [b, kv_heads, p, head]), ("past_v", T.FLOAT, [b, kv_heads, p, head]),
               ("mask", T.INT64, [b, total])]
    present = [b, kv_heads, total, head]
    inits = [const("one", np.array([1], np.int64)), const("one_scalar", np.array(1, np.int64))]
    if rotary:
        inits += list(rope_caches(256, head // 2))
    return model_of(nodes, inputs, [("out", T.FLOAT, [b, s, heads * head]), ("present_k", T.FLOAT, present),
                                    ("present_v", T.FLOAT, present)], inits)


def gqa_feeds(rng, heads, kv_heads, head, packed, b, s, p):
    f = {"past_k": rng.standard_normal((b, kv_heads, p, head)).astype(np.float32),
         "past_v": rng.standard_normal((b, kv_heads, p, head)).astype(np.float32),
         "mask": np.ones((b, p + s), np.int64)}
    if packed:
        f["qkv"] = rng.standard_normal((b, s, (heads + 2 * kv_heads) * head)).astype(np.float32)
    else:
        for name, n in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
            f[name] = rng.standard_normal((b, s, n * head)).astype(np.float32)
    return f


@pytest.mark.parametrize("packed,rotary", [(True, True), (False, True), (True, False)])
def test_group_query_attention_dynamic(packed, rotary, refruntime, tmp_path):
    """One artifact serves the prompt (empty past) and decode steps of several lengths and batches."""
    rng = np.random.default_rng(4)
    heads, kv_heads, head = 4, 2, 16
    model = gqa_model(heads, kv_heads, head, packed, rotary)
    shapes = [(1, 7, 0), (2, 1, 7), (3, 1, 12), (1, 5, 0)]  # (batch, seq, past)
    info = run_both(model, [gqa_feeds(rng, heads, kv_heads, head, packed, *s) for s in shapes], refruntime,
                    tmp_path, tol=1e-4)
    assert any(i["name"].endswith("group_query_attention") for i in info.metadata["imports"])


@pytest.mark.parametrize("fixed", [(1, 1, 31), (2, 16, 0)], ids=["decode", "prefill"])
def test_group_query_attention_fixed(fixed, refruntime, tmp_path):
    rng = np.random.default_rng(5)
    model = gqa_model(8, 2, 16, True, True, fixed=fixed)
    run_both(model, [gqa_feeds(rng, 8, 2, 16, True, *fixed)], refruntime, tmp_path, tol=1e-4)


def test_group_query_attention_window_and_softcap(refruntime, tmp_path):
    """Also with smooth_softmax at -1, the schema default ONNX Runtime hands an EP (unset)."""
    rng = np.random.default_rng(6)
    model = gqa_model(2, 1, 16, False, False, window=3, softcap=4.0)
    model.graph.node[-1].attribute.append(helper.make_attribute("smooth_softmax", -1))
    feeds = [gqa_feeds(rng, 2, 1, 16, False, *s) for s in [(1, 6, 0), (1, 1, 9)]]
    run_both(model, feeds, refruntime, tmp_path, tol=1e-4)



def test_group_query_attention_checks_a_fed_total_sequence_length(refruntime, tmp_path):
    """total_sequence_length fed as a graph input: past + sequence (a growing cache) and at most past (a
    shared, preallocated cache) run as in onnxruntime; a larger one, which would size the present caches,
    is refused before anything is allocated, as onnxruntime refuses it."""
    heads, kv_heads, head = 2, 1, 8
    node = helper.make_node("GroupQueryAttention", ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total"],
                            ["out", "present_k", "present_v"], name="attn", domain=MS, num_heads=heads,
                            kv_num_heads=kv_heads)
    kv = ["batch", kv_heads, "past", head]
    model = model_of([node], [("q", T.FLOAT, ["batch", "seq", heads * head]),
                              ("k", T.FLOAT, ["batch", "seq", kv_heads * head]),
                              ("v", T.FLOAT, ["batch", "seq", kv_heads * head]), ("past_k", T.FLOAT, kv),
                              ("past_v", T.FLOAT, kv), ("seqlens_k", T.INT32, ["batch"]), ("total", T.INT32, [])],
                     [("out", T.FLOAT, None), ("present_k", T.FLOAT, None), ("present_v", T.FLOAT, None)])
    info = compile_model(model, tmp_path / "art")
    names = [i["name"] for i in info.metadata["inputs"]]
    rng = np.random.default_rng(9)

    def feeds(past: int, total: int) -> dict:
        f = gqa_feeds(rng, heads, kv_heads, head, False, 1, 1, past)
        del f["mask"]
        return dict(f, seqlens_k=np.array([min(total, past + 1) - 1], np.int32), total=np.array(total, np.int32))

    for past, total in [(4, 5), (8, 6), (8, 8)]:  # growing cache, then a shared buffer of 8 positions
        f = feeds(past, total)
        got = refruntime.run(info.program, [f[n] for n in names])
        for g, w in zip(got, ort_run(model, f), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    for past, total in [(4, 6), (4, 4096), (8, 10)]:
        f = feeds(past, total)
        with pytest.raises(Exception, match="total_sequence_length"):
            ort_run(model, f)
        with pytest.raises(RuntimeError, match="status 1"):
            refruntime.run(info.program, [f[n] for n in names])
    assert any(c["where"] == "node 'attn' (com.microsoft::GroupQueryAttention)" and
               c["text"].startswith("total_sequence_length {2} must equal past_sequence_length {3}")
               for c in info.metadata["checks"])


@pytest.mark.parametrize("change,message", [
    ({"bits": 8}, "bits=8 is not supported"),
    ({"g_idx": True}, "g_idx"),
    ({"float_zp": True}, "zero points must be packed UINT8"),
])
def test_matmul_nbits_refusals_name_the_node(change, message, tmp_path):
    rng = np.random.default_rng(7)
    inits = int4_weights(rng, 8, 64, 32, False)
    names = ["x", "b", "s"]
    if change.get("g_idx"):
        inits.append(const("g", np.zeros(64, np.int32)))
        names += ["", "g"]
    if change.get("float_zp"):
        inits.append(const("zf", np.full(16, 8.0, np.float32)))
        names += ["zf"]
    node = helper.make_node("MatMulNBits", names, ["y"], name="mm4", domain=MS, K=64, N=8,
                            bits=change.get("bits", 4), block_size=32)
    model = model_of([node], [("x", T.FLOAT, [1, 64])], [("y", T.FLOAT, [1, 8])], inits)
    with pytest.raises(UnsupportedError, match=rf"node 'mm4' \(com.microsoft::MatMulNBits\): .*{message}"):
        compile_model(model, tmp_path / "art")


def test_group_query_attention_smooth_softmax_is_refused(tmp_path):
    model = gqa_model(2, 1, 16, True, False, fixed=(1, 2, 0))
    model.graph.node[-1].name = "attn"
    model.graph.node[-1].attribute.append(helper.make_attribute("smooth_softmax", 1))
    with pytest.raises(UnsupportedError, match="node 'attn'.*smooth_softmax=1 is not supported"):
        compile_model(model, tmp_path / "art")


def test_group_query_attention_without_present_outputs_is_refused(tmp_path):
    model = gqa_model(2, 1, 16, True, False, fixed=(1, 2, 0))
    gqa = model.graph.node[-1]
    gqa.name = "attn"
    del gqa.output[1:]
    del model.graph.output[1:]
    with pytest.raises(UnsupportedError, match="node 'attn'.*present_key and present_value outputs are required"):
        compile_model(model, tmp_path / "art")


# ---------------------------------------------------------------- inconsistent static attributes and shapes

def _mm4(**attrs):
    inits = int4_weights(np.random.default_rng(8), 8, 64, 32, False)
    k = attrs.get("K", 64)
    node = helper.make_node("MatMulNBits", ["x", "b", "s"], ["y"], name="n", domain=MS,
                            **{"K": 64, "N": 8, "bits": 4, "block_size": 32, **attrs})
    return model_of([node], [("x", T.FLOAT, [1, k])], [("y", T.FLOAT, [1, attrs.get("N", 8)])], inits)


def _norm(skip=False, scale=32, skip_dims=(2, 5, 32), eps=1e-5, inputs=None):
    if skip:
        node = helper.make_node("SkipSimplifiedLayerNormalization", inputs or ["x", "skip", "w"], ["y"], name="n",
                                domain=MS, epsilon=eps)
        inputs = [("x", T.FLOAT, [2, 5, 32]), ("skip", T.FLOAT, list(skip_dims))]
    else:
        node = helper.make_node("SimplifiedLayerNormalization", inputs or ["x", "w"], ["y"], name="n", epsilon=eps,
                                axis=-1)
        inputs = [("x", T.FLOAT, [2, 5, 32])]
    return model_of([node], inputs, [("y", T.FLOAT, [2, 5, 32])], [const("w", np.ones(scale, np.float32))])


def _rope(x=(2, 3, 64), pos=(2, 3), cache=(32, 8), sin=None, **attrs):
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], name="n", domain=MS, **attrs)
    return model_of([node], [("x", T.FLOAT, list(x)), ("pos", T.INT64, list(pos))], [("y", T.FLOAT, list(x))],
                    [const("cos", np.ones(cache, np.float32)), const("sin", np.ones(sin or cache, np.float32))])


def _gqa(packed=True, rotary=True, fixed=(1, 2, 0), dims=None, inits=None, **attrs):
    model = gqa_model(4, 2, 16, packed, rotary, fixed=fixed)
    node = model.graph.node[-1]
    node.name = "n"
    for name, value in attrs.items():
        for a in [a for a in node.attribute if a.name == name]:
            node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(name, value))
    for name, shape in (dims or {}).items():
        (vi,) = [i for i in model.graph.input if i.name == name]
        vi.CopyFrom(helper.make_tensor_value_info(name, vi.type.tensor_type.elem_type, shape))
    for name, array in (inits or {}).items():
        (k,) = [k for k, i in enumerate(model.graph.initializer) if i.name == name]
        model.graph.initializer[k].CopyFrom(const(name, array))
    return model


@pytest.mark.parametrize("build,message", [
    (lambda: _mm4(K=0), r"K = 0 and N = 8 must be positive"),
    (lambda: _mm4(N=0), r"K = 64 and N = 0 must be positive"),
    (lambda: _mm4(accuracy_level=7), r"accuracy_level 7 is outside 0..4"),
    (lambda: _norm(scale=16), r"scale \(input 1\) has shape \[16\], which does not broadcast to the normalized dims"),
    (lambda: _norm(eps=-1.0), r"epsilon is -1.0; it must be a finite number >= 0"),
    (lambda: _norm(eps=float("nan")), r"epsilon is nan"),
    (lambda: _norm(skip=True, skip_dims=(2, 5, 16)), r"skip \(input 1\) has shape \[2, 5, 16\], which does"),
    (lambda: _norm(skip=True, scale=16), r"gamma \(input 2\) has shape \[16\]"),
    (lambda: _norm(inputs=["x"]), r"the scale \(input 1\) must be given"),
    (lambda: _norm(skip=True, inputs=["x", "", "w"]), r"the skip \(input 1\) must be given"),
    (lambda: _rope(cache=(32,)), r"cos_cache \(input 2\) has shape \[32\]; it must be \[max_position, rotary"),
    (lambda: _rope(sin=(32, 4)), r"sin_cache \(input 3\) has shape \[32, 4\]; it must be cos_cache's shape \[32, 8\]"),
    (lambda: _rope(rotary_embedding_dim=7), r"rotary_embedding_dim 7 must be even"),
    (lambda: _rope(rotary_embedding_dim=32), r"rotary_embedding_dim 32 is more than twice the caches' dim 1 \(8\)"),
    (lambda: _rope(num_heads=-1), r"num_heads -1 must be >= 0"),
    (lambda: _rope(num_heads=5), r"input.s hidden size 64 is not a multiple of num_heads 5"),
    (lambda: _rope(num_heads=8), r"rotary dim 16 .* is larger than the head size 8"),
    (lambda: _rope(pos=(3, 2)), r"position_ids has shape \[3, 2\]; it must be \[batch, sequence\] = \[2, 3\]"),
    (lambda: _gqa(dims={"qkv": [1, 2, 0]}), r"query hidden size 0 leaves no room for 8 heads"),
    (lambda: _gqa(dims={"qkv": [1, 0, 128]}), r"\[1, 0, 128\]; GroupQueryAttention needs at least one new token"),
    (lambda: _gqa(inits={"sin": np.ones((256, 4), np.float32)}), r"sin_cache \(input 8\) has shape \[256, 4\]"),
    (lambda: _gqa(inits={"cos": np.ones((9, 16), np.float32), "sin": np.ones((9, 16), np.float32)}),
     r"rotary dim 32 .* is larger than the head size 16"),
    (lambda: _gqa(softcap=-1.0), r"softcap is -1.0; it must be a finite number >= 0"),
    (lambda: _gqa(scale=float("inf")), r"scale is inf; it must be a finite number"),
    (lambda: _gqa(fixed=(1, 1, 4), dims={"past_k": [1, 3, 4, 16]}),
     r"past_key \(input 3\) has shape \[1, 3, 4, 16\]; it must be \[batch, kv_num_heads, past, head_size\]"),
    (lambda: _gqa(fixed=(1, 1, 4), dims={"past_v": [1, 2, 5, 16]}), r"past_value \(input 4\) has shape \[1, 2, 5"),
    (lambda: _gqa(packed=False, dims={"k": [1, 2, 24]}), r"key \(input 1\) has .* = \[1, 2, 32\]"),
    (lambda: _gqa(fixed=(1, 1, 4), dims={"mask": [2, 5]}), r"seqlens_k \(input 5\) has .* = \[1\]"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_inconsistent_llm_nodes_are_refused_at_compile_time(build, message, tmp_path):
    """Each was compiled before and failed only when the runtime kernel ran (or ran on nonsense attributes)."""
    with pytest.raises(ModelError, match=r"node 'n' \(.*\): .*" + message):
        compile_model(build(), tmp_path / "art")
