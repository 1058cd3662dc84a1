"""The attention ops of ai.onnx (Attention, opset 23 to 25; RotaryEmbedding, opset 23), each a
single-node model compiled and run on the reference runtime with fixed and dynamic shapes, compared
with onnxruntime's CPU EP (or with ONNX's reference implementation where onnxruntime differs from the
standard); and the refusals that name the node."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import ModelError, UnsupportedError, compile_model, load_weights


def _ort_has(op: str, opset: int) -> str | None:
    """Why onnxruntime's CPU EP cannot run ai.onnx `op` at `opset` (None: it can)."""
    node = helper.make_node(op, ["x", "c", "s", "p"] if op == "RotaryEmbedding" else ["x", "x", "x"], ["y"])
    if op == "RotaryEmbedding":
        inputs = [helper.make_tensor_value_info("x", T.FLOAT, [1, 1, 1, 2]),
                  helper.make_tensor_value_info("c", T.FLOAT, [1, 1]),
                  helper.make_tensor_value_info("s", T.FLOAT, [1, 1]),
                  helper.make_tensor_value_info("p", T.INT64, [1, 1])]
    else:
        inputs = [helper.make_tensor_value_info("x", T.FLOAT, [1, 1, 1, 2])]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", T.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001  (NOT_IMPLEMENTED, or an opset this onnxruntime does not know)
        return f"onnxruntime {onnxruntime.__version__} has no CPU {op}-{opset}: {str(exc)[:120]}"
    return None


def needs_ort(op: str, opset: int):
    why = _ort_has(op, opset)
    return pytest.mark.skipif(why is not None, reason=why or "")


def model_of(node, inputs, outputs, opset=23):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def reference_run(model, feeds):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def ort_run(model, feeds):
    sess = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_both(model, feeds_list, refruntime, tmp_path, tol=1e-4, against=ort_run):
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    for feeds in feeds_list:
        got = refruntime.run(info.program, [feeds[n] for n in names] + weights)
        want = against(model, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            t = 3e-3 if g.dtype == np.float16 else tol
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=t, atol=t)
    return info


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- Attention

# (batch, q_seq, kv_seq, past) per run; dynamic models run several
SIZES_FIXED = [(2, 3, 5, 4)]
SIZES_DYNAMIC = [(2, 3, 5, 4), (1, 1, 2, 6), (3, 4, 4, 1)]


def attention_case(rng, *, rank=4, heads=4, kv_heads=4, size=8, v_size=8, mask=None, past=False, qk=False,
                   dynamic=False, dtype=T.FLOAT, **attrs):
    """One Attention node with its declared inputs and feeds for each size."""
    names = ["Q", "K", "V", "attn_mask" if mask else "", "past_key" if past else "", "past_value" if past else ""]
    while names[-1] == "":
        names.pop()
    outs = ["Y"] + (["present_key", "present_value"] if past else (["", ""] if qk else [])) + (["qk"] if qk else [])
    if rank == 3:
        attrs = {"q_num_heads": heads, "kv_num_heads": kv_heads, **attrs}
    node = helper.make_node("Attention", names, outs, name="attn", **attrs)
    B, S, L, P = ("b", "s", "l", "p") if dynamic else SIZES_FIXED[0]
    T_ = "t" if dynamic else L + (P if past else 0)

    def shape(h, seq, d):
        return [B, seq, h * d] if rank == 3 else [B, h, seq, d]

    inputs = [("Q", dtype, shape(heads, S, size)), ("K", dtype, shape(kv_heads, L, size)),
              ("V", dtype, shape(kv_heads, L, v_size))]
    mask_dims = None
    if mask:
        kind, mshape = mask
        mask_dims = [{"B": B, "H": heads, "S": S, "T": T_}.get(m, m) for m in mshape]
        inputs.append(("attn_mask", T.BOOL if kind == "bool" else dtype, mask_dims))
    if past:
        inputs += [("past_key", dtype, [B, kv_heads, P, size]), ("past_value", dtype, [B, kv_heads, P, v_size])]
    outputs = [("Y", dtype, None)] + ([("present_key", dtype, None), ("present_value", dtype, None)] if past else [])
    outputs += [("qk", dtype, None)] if qk else []
    model = model_of(node, inputs, outputs)
    npdt = np.float16 if dtype == T.FLOAT16 else np.float32
    feeds = []
    for b, s, n, p in SIZES_DYNAMIC if dynamic else SIZES_FIXED:
        t = n + (p if past else 0)

        def sh(h, seq, d, b=b):
            return (b, seq, h * d) if rank == 3 else (b, h, seq, d)

        f = {"Q": rand(rng, *sh(heads, s, size), dtype=npdt), "K": rand(rng, *sh(kv_heads, n, size), dtype=npdt),
             "V": rand(rng, *sh(kv_heads, n, v_size), dtype=npdt)}
        if mask:
            ms = tuple({"B": b, "H": heads, "S": s, "T": t}.get(m, m) for m in mask[1])
            if mask[0] == "bool":
                f["attn_mask"] = rng.random(ms) > 0.3
            else:
                f["attn_mask"] = (rng.standard_normal(ms) * 2).astype(npdt)
        if past:
            f["past_key"] = rand(rng, b, kv_heads, p, size, dtype=npdt)
            f["past_value"] = rand(rng, b, kv_heads, p, v_size, dtype=npdt)
        feeds.append(f)
    return model, feeds


pytestmark_ort = needs_ort("Attention", 23)


@pytestmark_ort
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("kv_heads,v_size", [(4, 8), (2, 8), (1, 6)], ids=["mha", "gqa", "mqa-vsize"])
def test_attention(rank, kv_heads, v_size, dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(rank * 10 + kv_heads)
    model, feeds = attention_case(rng, rank=rank, kv_heads=kv_heads, v_size=v_size, dynamic=dynamic)
    run_both(model, feeds, refruntime, tmp_path)


@pytestmark_ort
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("opts", [
    {"is_causal": 1},
    {"scale": 0.3},
    {"softcap": 1.5},
    {"mask": ("float", ["S", "T"])},
    {"mask": ("bool", ["B", 1, "S", "T"])},
    {"mask": ("float", ["B", "H", "S", "T"]), "is_causal": 1},
    {"mask": ("bool", [1, "S", "T"]), "softcap": 2.0},
    {"past": True, "is_causal": 1},
    {"past": True, "mask": ("float", ["S", "T"]), "kv_heads": 2},
], ids=["causal", "scale", "softcap", "mask2d", "bool-mask4d", "mask4d-causal", "bool-mask3d-softcap", "past-causal",
        "past-mask-gqa"])
def test_attention_options(opts, dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(len(str(opts)))
    opts = dict(opts)
    model, feeds = attention_case(rng, dynamic=dynamic, rank=3 if "kv_heads" in opts else 4, **opts)
    # causal with a past and fewer queries than new keys: onnxruntime aligns query 0 elsewhere than ONNX's
    # reference (key j visible from query i when j <= i + past_sequence_length)
    odd = opts.get("past") and opts.get("is_causal")
    run_both(model, feeds, refruntime, tmp_path, against=reference_run if odd else ort_run)


@pytestmark_ort
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("past", [False, True])
def test_attention_qk_matmul_output(mode, past, refruntime, tmp_path):
    rng = np.random.default_rng(mode)
    model, feeds = attention_case(rng, mask=("float", ["S", "T"]), past=past, qk=True, softcap=2.0,
                                  qk_matmul_output_mode=mode, dynamic=True)
    run_both(model, feeds, refruntime, tmp_path)


@pytestmark_ort
@pytest.mark.parametrize("precision", [None, T.FLOAT])
def test_attention_float16(precision, refruntime, tmp_path):
    rng = np.random.default_rng(3)
    attrs = {} if precision is None else {"softmax_precision": precision}
    model, feeds = attention_case(rng, dtype=T.FLOAT16, kv_heads=2, mask=("bool", ["S", "T"]), qk=True,
                                  qk_matmul_output_mode=3, dynamic=True, **attrs)
    run_both(model, feeds, refruntime, tmp_path)


@pytestmark_ort
@pytest.mark.parametrize("rank", [3, 4])
def test_attention_present_without_past(rank, refruntime, tmp_path):
    # present_key / present_value are K and V (as 4-D) when there is no past
    rng = np.random.default_rng(11)
    attrs = {"q_num_heads": 2, "kv_num_heads": 1} if rank == 3 else {}
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y", "pk", "pv"], **attrs)
    q, kv = (["b", "s", 16], ["b", "l", 8]) if rank == 3 else (["b", 2, "s", 8], ["b", 1, "l", 8])
    model = model_of(node, [("Q", T.FLOAT, q), ("K", T.FLOAT, kv), ("V", T.FLOAT, kv)],
                     [("Y", T.FLOAT, None), ("pk", T.FLOAT, None), ("pv", T.FLOAT, None)])
    feeds = []
    for b, s, n in ((2, 3, 4), (1, 1, 1)):
        qs, ks = ((b, s, 16), (b, n, 8)) if rank == 3 else ((b, 2, s, 8), (b, 1, n, 8))
        feeds.append({"Q": rand(rng, *qs), "K": rand(rng, *ks), "V": rand(rng, *ks)})
    run_both(model, feeds, refruntime, tmp_path)


def test_attention_fully_masked_rows_are_zero(refruntime, tmp_path):
    # a boolean mask with a row of False everywhere: that query's output (and probabilities) are 0
    rng = np.random.default_rng(4)
    model, feeds = attention_case(rng, mask=("bool", ["S", "T"]), qk=True, qk_matmul_output_mode=3)
    for f in feeds:
        f["attn_mask"][1] = False
    info = run_both(model, feeds, refruntime, tmp_path, against=reference_run)
    got = refruntime.run(info.program, [feeds[0][n] for n in ("Q", "K", "V", "attn_mask")])
    assert not got[0][:, :, 1].any() and not got[1][:, :, 1].any()


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
def test_attention_short_mask_is_padded(kind, dynamic, refruntime, tmp_path):
    # a mask shorter than the total sequence: the missing keys are masked (onnxruntime refuses such a mask,
    # so this compares with ONNX's reference implementation)
    rng = np.random.default_rng(5)
    node = helper.make_node("Attention", ["Q", "K", "V", "m"], ["Y"], is_causal=1)
    dt = T.BOOL if kind == "bool" else T.FLOAT
    model = model_of(node, [("Q", T.FLOAT, [1, 2, 3, 4]), ("K", T.FLOAT, [1, 2, 6, 4]), ("V", T.FLOAT, [1, 2, 6, 4]),
                            ("m", dt, ["s", "l"] if dynamic else [3, 4])], [("Y", T.FLOAT, None)])
    m = rng.random((3, 4)) > 0.2 if kind == "bool" else rand(rng, 3, 4)
    feeds = {"Q": rand(rng, 1, 2, 3, 4), "K": rand(rng, 1, 2, 6, 4), "V": rand(rng, 1, 2, 6, 4), "m": m}
    run_both(model, [feeds], refruntime, tmp_path, against=reference_run)


@needs_ort("Attention", 24)
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_nonpad_kv_seqlen(causal, refruntime, tmp_path):
    rng = np.random.default_rng(6)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "", "", "n"], ["Y"], is_causal=causal)
    model = model_of(node, [("Q", T.FLOAT, ["b", 4, 2, 8]), ("K", T.FLOAT, ["b", 2, 6, 8]),
                            ("V", T.FLOAT, ["b", 2, 6, 8]), ("n", T.INT64, ["b"])], [("Y", T.FLOAT, None)], opset=24)
    feeds = [{"Q": rand(rng, 3, 4, 2, 8), "K": rand(rng, 3, 2, 6, 8), "V": rand(rng, 3, 2, 6, 8),
              "n": np.array([6, 3, 2], np.int64)}]
    run_both(model, feeds, refruntime, tmp_path)


@needs_ort("Attention", 25)
@pytest.mark.parametrize("window", [{"left_window_size": 2, "is_causal": 1}, {"left_window_size": 1,
                                                                             "right_window_size": 2}])
def test_attention_sliding_window(window, refruntime, tmp_path):
    rng = np.random.default_rng(7)
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], **window)
    model = model_of(node, [("Q", T.FLOAT, ["b", 2, "s", 8]), ("K", T.FLOAT, ["b", 2, "l", 8]),
                            ("V", T.FLOAT, ["b", 2, "l", 8])], [("Y", T.FLOAT, None)], opset=25)
    feeds = [{"Q": rand(rng, 2, 2, s, 8), "K": rand(rng, 2, 2, n, 8), "V": rand(rng, 2, 2, n, 8)}
             for s, n in ((4, 6), (5, 5))]
    run_both(model, feeds, refruntime, tmp_path)


def _compile(node, inputs, tmp_path, opset=23):
    return compile_model(model_of(node, inputs, [("Y", T.FLOAT, None)], opset), tmp_path / "art")


QKV4 = [("Q", T.FLOAT, [1, 4, 3, 8]), ("K", T.FLOAT, [1, 2, 5, 8]), ("V", T.FLOAT, [1, 2, 5, 8])]


def test_attention_refusals(tmp_path):
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="attn", softmax_precision=T.BFLOAT16)
    with pytest.raises(UnsupportedError, match=r"attn.*softmax_precision=16 is not supported"):
        _compile(node, QKV4, tmp_path)
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="attn")
    with pytest.raises(ModelError, match=r"attn.*q_num_heads"):
        _compile(node, [(n, T.FLOAT, [1, 3, 8]) for n in "QKV"], tmp_path)
    bad = [("Q", T.FLOAT, [1, 3, 3, 8]), ("K", T.FLOAT, [1, 2, 5, 8]), ("V", T.FLOAT, [1, 2, 5, 8])]
    with pytest.raises(ModelError, match=r"attn.*Q's 3 heads are not a multiple of K and V's 2 heads"):
        _compile(node, bad, tmp_path)
    bad = [("Q", T.FLOAT, [1, 4, 3, 8]), ("K", T.FLOAT, [1, 2, 5, 4]), ("V", T.FLOAT, [1, 2, 5, 8])]
    with pytest.raises(ModelError, match=r"attn.*K's head size 4 differs from Q's 8"):
        _compile(node, bad, tmp_path)
    with pytest.raises(ModelError, match=r"attn.*must be all 3-D .* or all 4-D"):
        _compile(node, [("Q", T.FLOAT, [1, 4, 3, 8]), ("K", T.FLOAT, [1, 5, 16]), ("V", T.FLOAT, [1, 5, 16])],
                 tmp_path)
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="attn", qk_matmul_output_mode=4)
    with pytest.raises(ModelError, match=r"attn.*qk_matmul_output_mode 4 must be 0, 1, 2 or 3"):
        _compile(node, QKV4, tmp_path)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "pk"], ["Y"], name="attn")
    with pytest.raises(ModelError, match=r"attn.*past_key \(input 4\) and past_value \(input 5\) must be both"):
        _compile(node, QKV4 + [("pk", T.FLOAT, [1, 2, 2, 8])], tmp_path)
    node = helper.make_node("Attention", ["Q", "K", "V", "m"], ["Y"], name="attn")
    with pytest.raises(ModelError, match=r"attn.*attn_mask's last dim 7 is longer than the total sequence length 5"):
        _compile(node, QKV4 + [("m", T.FLOAT, [3, 7])], tmp_path)
    with pytest.raises(ModelError, match=r"attn.*attn_mask \(input 3\) has element type 6"):
        _compile(node, QKV4 + [("m", T.INT32, [3, 5])], tmp_path)
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="attn", softcap=-1.0)
    with pytest.raises(ModelError, match=r"attn.*softcap is -1.0; it must be a finite number >= 0"):
        _compile(node, QKV4, tmp_path)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "pk", "pv", "n"], ["Y"], name="attn")
    with pytest.raises(ModelError, match=r"attn.*nonpad_kv_seqlen \(input 6\) cannot be combined with past_key"):
        _compile(node, QKV4 + [("pk", T.FLOAT, [1, 2, 2, 8]), ("pv", T.FLOAT, [1, 2, 2, 8]),
                               ("n", T.INT64, [1])], tmp_path, opset=24)


def test_attention_dynamic_heads_are_checked_at_run_time(refruntime, tmp_path):
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="attn")
    info = compile_model(model_of(node, [("Q", T.FLOAT, [1, "h", 3, 8]), ("K", T.FLOAT, [1, "g", 5, 8]),
                                         ("V", T.FLOAT, [1, "g", 5, 8])], [("Y", T.FLOAT, None)]), tmp_path / "art")
    z = np.zeros
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [z((1, 3, 3, 8), np.float32), z((1, 2, 5, 8), np.float32),
                                      z((1, 2, 5, 8), np.float32)])
    assert any(c["where"] == "node 'attn' (Attention)" for c in info.metadata["checks"])


# ---------------------------------------------------------------- RotaryEmbedding


def rotary_case(rng, *, rank=4, interleaved=0, rotary_dim=0, positions=True, dynamic=False):
    heads, size, max_pos = 2, 8, 16
    half = (rotary_dim or size) // 2
    attrs = {"interleaved": interleaved}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    if rank == 3:
        attrs["num_heads"] = heads
    names = ["x", "cos", "sin"] + (["pos"] if positions else [])
    node = helper.make_node("RotaryEmbedding", names, ["y"], name="rope", **attrs)
    B, S = ("b", "s") if dynamic else (2, 3)
    x = [B, S, heads * size] if rank == 3 else [B, heads, S, size]
    cache = [max_pos, half] if positions else [B, S, half]
    inputs = [("x", T.FLOAT, x), ("cos", T.FLOAT, cache), ("sin", T.FLOAT, cache)]
    inputs += [("pos", T.INT64, [B, S])] if positions else []
    model = model_of(node, inputs, [("y", T.FLOAT, None)])
    feeds = []
    for b, s in ((2, 3), (1, 5), (3, 1)) if dynamic else ((2, 3),):
        xs = (b, s, heads * size) if rank == 3 else (b, heads, s, size)
        f = {"x": rand(rng, *xs)}
        if positions:
            angles = rng.uniform(0, 6, (max_pos, half))
            f["pos"] = rng.integers(0, max_pos, (b, s)).astype(np.int64)
        else:
            angles = rng.uniform(0, 6, (b, s, half))
        f["cos"], f["sin"] = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        feeds.append(f)
    return model, feeds


@needs_ort("RotaryEmbedding", 23)
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("positions", [True, False], ids=["position_ids", "no-position_ids"])
@pytest.mark.parametrize("rank,interleaved,rotary_dim", [(4, 0, 0), (4, 1, 0), (3, 0, 4), (3, 1, 0), (4, 1, 6)])
def test_rotary_embedding(rank, interleaved, rotary_dim, positions, dynamic, refruntime, tmp_path):
    rng = np.random.default_rng(rank + 2 * interleaved + rotary_dim)
    model, feeds = rotary_case(rng, rank=rank, interleaved=interleaved, rotary_dim=rotary_dim, positions=positions,
                               dynamic=dynamic)
    run_both(model, feeds, refruntime, tmp_path, tol=1e-5)


def test_rotary_embedding_refusals(tmp_path):
    def compile_(attrs, x, cache, names=("x", "cos", "sin", "pos"), pos=(2, 3)):
        node = helper.make_node("RotaryEmbedding", list(names), ["y"], name="rope", **attrs)
        inputs = [("x", T.FLOAT, x), ("cos", T.FLOAT, cache), ("sin", T.FLOAT, cache)]
        inputs += [("pos", T.INT64, list(pos))] if "pos" in names else []
        return compile_model(model_of(node, inputs, [("y", T.FLOAT, None)]), tmp_path / "art")

    with pytest.raises(ModelError, match=r"rope.*num_heads"):
        compile_({}, [2, 3, 16], [8, 4])
    with pytest.raises(ModelError, match=r"rope.*X's hidden size 16 is not a multiple of num_heads 3"):
        compile_({"num_heads": 3}, [2, 3, 16], [8, 4])
    with pytest.raises(ModelError, match=r"rope.*the caches' last dim 2 must be half the head size 8"):
        compile_({}, [2, 2, 3, 8], [8, 2])
    with pytest.raises(ModelError, match=r"rope.*position_ids' dim 1 is 4; it must be X's sequence length 3"):
        compile_({}, [2, 2, 3, 8], [8, 4], pos=(2, 4))
    with pytest.raises(ModelError, match=r"rope.*without position_ids, cos_cache \[8, 4\]"):
        compile_({}, [2, 2, 3, 8], [8, 4], names=("x", "cos", "sin"))
    with pytest.raises(ModelError, match=r"rope.*cos_cache's dim 1 is 4; it must be X's sequence length 3"):
        compile_({}, [2, 2, 3, 8], [2, 4, 4], names=("x", "cos", "sin"))


def test_a_3d_output_over_symbolic_dims_keeps_its_computed_hidden_size(tmp_path):
    """onnx's shape inference writes dim 0 for Attention's 3-D output hidden size over symbolic dims; the
    artifact must declare the size the program computes (q_num_heads times V's head size), not that 0."""
    from hipdnn_ep_compiler.artifact import read_metadata

    f = T.FLOAT
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], q_num_heads=3, kv_num_heads=3)
    graph = helper.make_graph(
        [node], "attention", [helper.make_tensor_value_info(n, f, ["b", "s", f"{n}_h"]) for n in "QKV"],
        [helper.make_tensor_value_info("Y", f, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    compile_model(model, tmp_path / "a")
    dims = read_metadata(tmp_path / "a")["outputs"][0]["dims"]
    assert dims[2] != 0 and isinstance(dims[2], str), dims


# ---------------------------------------------------------------- Attention as one fused kernel call


def lowered_ops(model) -> list[str]:
    """The names of the ops of the compiled program (the full pipeline)."""
    from hipdnn_ep_compiler.frontend import load_model
    from hipdnn_ep_compiler.frontend.importer import import_model
    from hipdnn_ep_compiler.passes import run_pipeline

    loaded, _ = load_model(model)
    module = run_pipeline(import_model(loaded))
    return [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]


def assert_fused(model, fused: bool = True):
    ops = lowered_ops(model)
    if fused:
        assert ops.count("hipdnn.attention") == 1 and "hipdnn.softmax" not in ops and "hipdnn.matmul" not in ops
    else:
        assert "hipdnn.attention" not in ops and "hipdnn.softmax" in ops


@pytestmark_ort
@pytest.mark.parametrize("opts", [
    {},
    {"rank": 3},
    {"rank": 3, "kv_heads": 2},
    {"kv_heads": 1, "v_size": 6},
    {"is_causal": 1},
    {"rank": 3, "kv_heads": 2, "is_causal": 1},
    {"scale": 0.3, "softcap": 1.5},
    {"mask": ("bool", ["B", 1, "S", "T"])},
    {"mask": ("bool", ["S", "T"]), "is_causal": 1},
    {"mask": ("float", ["B", "H", "S", "T"])},
    {"mask": ("float", [1, "S", "T"])},
    {"mask": ("float", ["B", 1, 1, "T"])},
    {"mask": ("float", ["T"])},
    {"rank": 3, "kv_heads": 2, "mask": ("float", ["B", 1, "S", "T"]), "is_causal": 1},
    {"softmax_precision": T.FLOAT},
], ids=["mha4", "mha3", "gqa3", "mqa-vsize", "causal", "gqa3-causal", "scale-softcap", "bool-mask4d",
        "bool-mask2d-causal", "float-mask4d", "float-mask3d", "float-mask-keys", "float-mask1d",
        "gqa3-mask-causal", "precision-float"])
def test_attention_is_one_fused_kernel_call(opts, refruntime, tmp_path):
    rng = np.random.default_rng(len(str(opts)) + 100)
    model, feeds = attention_case(rng, **opts)
    assert_fused(model)
    # onnxruntime wants the mask's last two dims to be the query and key counts: other masks (broadcast along
    # them) go to ONNX's reference
    mask = opts.get("mask", ("", ["S", "T"]))[1]
    run_both(model, feeds, refruntime, tmp_path, against=ort_run if mask[-2:] == ["S", "T"] else reference_run)


@pytestmark_ort
@pytest.mark.parametrize("rank", [3, 4])
def test_attention_float16_is_one_fused_kernel_call(rank, refruntime, tmp_path):
    rng = np.random.default_rng(12)
    model, feeds = attention_case(rng, rank=rank, kv_heads=2, dtype=T.FLOAT16, mask=("float", ["B", 1, "S", "T"]),
                                  is_causal=1)
    assert_fused(model)
    run_both(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_fused_fully_masked_rows_are_zero(kind, refruntime, tmp_path):
    # a query with no key to attend (False everywhere, or -inf everywhere) gets zeros, as ONNX's reference gives
    rng = np.random.default_rng(13)
    model, feeds = attention_case(rng, mask=(kind, ["S", "T"]))
    assert_fused(model)
    for f in feeds:
        f["attn_mask"][1] = False if kind == "bool" else -np.inf
    info = run_both(model, feeds, refruntime, tmp_path, against=reference_run)
    (got,) = refruntime.run(info.program, [feeds[0][n] for n in ("Q", "K", "V", "attn_mask")])
    assert not got[:, :, 1].any() and got[:, :, 0].any()


@pytest.mark.parametrize("case", ["past", "qk-output", "present", "short-mask", "mask-last1", "dynamic-mask",
                                  "precision-half", "scale-zero"])
def test_attention_the_fused_kernel_does_not_take(case, refruntime, tmp_path):
    """What the fused kernel does not compute stays composed (and correct)."""
    rng = np.random.default_rng(14)
    against = ort_run
    if case == "past":
        model, feeds = attention_case(rng, past=True)
    elif case == "qk-output":
        model, feeds = attention_case(rng, qk=True, qk_matmul_output_mode=3)
    elif case == "present":
        node = helper.make_node("Attention", ["Q", "K", "V"], ["Y", "pk", "pv"])
        model = model_of(node, QKV4, [("Y", T.FLOAT, None), ("pk", T.FLOAT, None), ("pv", T.FLOAT, None)])
        feeds = [{"Q": rand(rng, 1, 4, 3, 8), "K": rand(rng, 1, 2, 5, 8), "V": rand(rng, 1, 2, 5, 8)}]
    elif case == "short-mask":  # a mask over the first 4 of 5 keys: the composition pads it
        node = helper.make_node("Attention", ["Q", "K", "V", "m"], ["Y"])
        model = model_of(node, QKV4 + [("m", T.FLOAT, [3, 4])], [("Y", T.FLOAT, None)])
        feeds = [{"Q": rand(rng, 1, 4, 3, 8), "K": rand(rng, 1, 2, 5, 8), "V": rand(rng, 1, 2, 5, 8),
                  "m": rand(rng, 3, 4)}]
        against = reference_run
    elif case == "mask-last1":  # ONNX pads a last dim of 1 too (only key 0 is attended): no broadcast
        model, feeds = attention_case(rng, mask=("float", ["S", 1]))
        against = reference_run
    elif case == "dynamic-mask":  # a mask whose key count is not known to be K's may be shorter: padded
        model, feeds = attention_case(rng, mask=("float", ["S", "T"]), dynamic=True)
    elif case == "precision-half":
        model, feeds = attention_case(rng, softmax_precision=T.FLOAT16)
        against = reference_run
    else:  # an explicit scale 0 (the kernel's 0 would mean 1 / sqrt(head_size))
        model, feeds = attention_case(rng, scale=0.0)
        against = reference_run
    assert_fused(model, fused=False)
    if _ort_has("Attention", 23) is not None and against is ort_run:
        pytest.skip(_ort_has("Attention", 23))
    # a float16 softmax of float32 scores: float16's rounding
    run_both(model, feeds, refruntime, tmp_path, against=against, tol=3e-3 if case == "precision-half" else 1e-4)


@pytestmark_ort
@pytest.mark.parametrize("opts", [
    {"rank": 3, "kv_heads": 2, "mask": ("float", ["B", 1, "S", "T"]), "is_causal": 1},
    {"mask": ("bool", ["B", 1, "S", "T"]), "softcap": 2.0, "scale": 0.2},
    {"kv_heads": 1, "v_size": 6, "dtype": T.FLOAT16, "mask": ("float", ["S", "T"])},
], ids=["gqa3-mask-causal", "bool-mask-softcap", "mqa-float16"])
def test_attention_fused_on_the_runtime_cpu_backend(opts, tmp_path):
    """Fused Attention on the C++ runtime's CPU backend, where the runtime is installed."""
    from support.runtime_cpu import run_on_runtime

    model, feeds = attention_case(np.random.default_rng(15), **opts)
    assert_fused(model)
    info = compile_model(model, tmp_path / "art")
    names = [i["name"] for i in info.metadata["inputs"]]
    results = run_on_runtime(info.program, [[f[n] for n in names] for f in feeds], tmp_path)
    for f, (got,) in zip(feeds, results, strict=True):
        (want,) = ort_run(model, f)
        t = 3e-3 if got.dtype == np.float16 else 1e-4
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=t, atol=t)
