"""tools/models/llm_models.py: the generated onnxruntime-genai folders load and run on onnxruntime's CPU EP
(dynamic and fixed shapes, every export option), the int4 layout round-trips through MatMulNBits,
big models stream their weights to external data, and onnxruntime-genai generates from a folder
when it is installed."""

from __future__ import annotations

import dataclasses
import json

import llm_models as lm
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ort = pytest.importorskip("onnxruntime")

VARIANTS = {
    "default": {},
    "zero-points-block64": {"zero_points": True, "block_size": 64},
    "block128": {"block_size": 128, "hidden": 128, "intermediate": 256, "heads": 4, "head_dim": 32},
    "separate-qkv": {"packed_qkv": False},
    "separate-rotary": {"packed_qkv": False, "rotary": "separate"},
    "float16": {"dtype": "float16"},
    "window-softcap": {"local_window": 4, "softcap": 30.0},
}


def _session(folder):
    return ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", VARIANTS)
def test_dynamic_model_runs_prefill_then_decode(name, tmp_path):
    spec = dataclasses.replace(lm.SIZES["tiny"], **VARIANTS[name])
    folder = lm.write_model(spec, tmp_path / name)
    sess = _session(folder)
    assert [i.name for i in sess.get_inputs()][:2] == ["input_ids", "attention_mask"]
    logits, *present = sess.run(None, lm.feeds(spec, 1, 7, 0))
    assert logits.shape == (1, 7, spec.vocab) and logits.dtype == spec.np_dtype
    assert present[0].shape == (1, spec.kv_heads, 7, spec.head_dim)
    assert np.isfinite(logits).all() and 0.3 < float(logits.astype(np.float32).std()) < 10
    decode = lm.feeds(spec, 1, 1, 7, seed=1)
    for i in range(spec.layers):
        decode[f"past_key_values.{i}.key"], decode[f"past_key_values.{i}.value"] = present[i], present[spec.layers + i]
    logits1, *present1 = sess.run(None, decode)
    assert logits1.shape == (1, 1, spec.vocab) and present1[0].shape == (1, spec.kv_heads, 8, spec.head_dim)
    np.testing.assert_array_equal(present1[0][:, :, :7], present[0])


def test_graph_has_the_builders_structure(tmp_path):
    spec = lm.SIZES["tiny"]
    model = onnx.load(lm.write_model(spec, tmp_path / "m") / "model.onnx")
    ops = [(n.domain, n.op_type) for n in model.graph.node]
    per_layer = {("com.microsoft", "MatMulNBits"): 5, ("com.microsoft", "GroupQueryAttention"): 1,
                 ("com.microsoft", "SkipSimplifiedLayerNormalization"): 2, ("", "Sigmoid"): 1, ("", "Mul"): 2}
    for op, count in per_layer.items():
        assert ops.count(op) == count * spec.layers + (op == ("com.microsoft", "MatMulNBits"))
    assert ops.count(("", "SimplifiedLayerNormalization")) == 1
    assert ops[:8] == [("", "Constant"), ("", "ReduceSum"), ("", "Sub"), ("", "Cast"), ("", "Shape"),
                       ("", "Constant"), ("", "Gather"), ("", "Cast")]
    gqa = next(n for n in model.graph.node if n.op_type == "GroupQueryAttention")
    attrs = {a.name: helper.get_attribute_value(a) for a in gqa.attribute}
    assert attrs["do_rotary"] == 1 and attrs["num_heads"] == 4 and attrs["kv_num_heads"] == 2
    assert list(gqa.input)[1:3] == ["", ""] and list(gqa.input)[7:] == ["cos_cache", "sin_cache"]
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    assert dims["past_key_values.0.key"] == ["batch_size", 2, "past_sequence_length", "kv_cache_dim"]
    config = json.loads((tmp_path / "m" / "genai_config.json").read_text())
    assert config["model"]["decoder"]["num_key_value_heads"] == 2
    assert config["model"]["decoder"]["inputs"]["past_key_names"] == "past_key_values.%d.key"


@pytest.mark.parametrize("kind,length", [("decode", 16), ("prefill", 128)])
def test_fixed_shape_variants(kind, length, tmp_path):
    spec = lm.SIZES["tiny"].fixed(kind, length, batch=2)
    model = onnx.load(lm.write_model(spec, tmp_path / kind) / "model.onnx")
    for vi in [*model.graph.input, *model.graph.output]:
        assert all(d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim), vi.name
    seq, past = (1, length) if kind == "decode" else (length, 0)
    logits, *present = _session(tmp_path / kind).run(None, lm.feeds(spec, 2, seq, past))
    assert logits.shape == (2, seq, spec.vocab) and present[0].shape == (2, 2, past + seq, spec.head_dim)


def test_shared_buffer_model_keeps_max_length(tmp_path):
    spec = dataclasses.replace(lm.SIZES["tiny"], shared_kv=True, max_length=64)
    sess = _session(lm.write_model(spec, tmp_path / "s"))
    logits, *present = sess.run(None, lm.feeds(spec, 1, 5, 3))
    assert present[0].shape == (1, 2, 64, spec.head_dim)


@pytest.mark.parametrize("block,zero_points,scale_type", [(32, False, np.float32), (64, True, np.float32),
                                                          (128, True, np.float16), (128, False, np.float16)])
def test_int4_layout_matches_matmulnbits(block, zero_points, scale_type):
    rng = np.random.default_rng(block)
    k, n = 256, 24
    b, scales, zp = lm.random_int4(rng, n, k, block, zero_points, scale_type)
    w = lm.dequantize_int4(b, scales, zp, k)
    x = rng.standard_normal((3, k)).astype(scale_type)
    inits = [onnx.numpy_helper.from_array(b, "b"), onnx.numpy_helper.from_array(scales, "s")]
    if zp is not None:
        inits.append(onnx.numpy_helper.from_array(zp, "z"))
    node = helper.make_node("MatMulNBits", ["x", "b", "s", *(["z"] if zp is not None else [])], ["y"],
                            domain="com.microsoft", K=k, N=n, bits=4, block_size=block)
    dt = helper.np_dtype_to_tensor_dtype(np.dtype(scale_type))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dt, [3, k])],
                              [helper.make_tensor_value_info("y", dt, [3, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(lm.MS, 1)])
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    want = x.astype(np.float32) @ w
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2 if scale_type == np.float16 else 1e-4,
                               atol=2e-2 if scale_type == np.float16 else 1e-4)


def test_quantize_round_trips_within_half_a_step():
    w = np.random.default_rng(0).standard_normal((128, 16)).astype(np.float32)
    for zero_points in (False, True):
        b, scales, zp = lm.quantize_int4(w, 32, zero_points)
        back = lm.dequantize_int4(b, scales, zp, 128)
        step = np.repeat(scales, 32, axis=1).T
        assert (np.abs(back - w) <= 0.5 * step + 1e-6).all()


def test_big_models_stream_to_external_data(tmp_path):
    spec = dataclasses.replace(lm.SIZES["mid"], layers=2, vocab=2048)
    folder = lm.write_model(spec, tmp_path / "mid", external=True)
    model = onnx.load(folder / "model.onnx", load_external_data=False)
    assert all(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer)
    size = (folder / lm.DATA_FILE).stat().st_size
    assert size >= spec.weight_bytes() and (folder / "model.onnx").stat().st_size < 200_000
    logits = _session(folder).run(None, lm.feeds(spec, 1, 3, 0))[0]
    assert logits.shape == (1, 3, spec.vocab) and np.isfinite(logits).all()


def test_8b_shape_bytes():
    spec = lm.SIZES["llama3-8b"]
    assert (spec.hidden, spec.intermediate, spec.heads, spec.kv_heads, spec.head_dim) == (4096, 14336, 32, 8, 128)
    # per layer: 218M int4 weights (0.5 B each) plus fp16 scales and packed zero points
    assert 4.0e9 < spec.weight_bytes() < 5.5e9
    assert spec.kv_bytes(1, 128) == 2 * 32 * 8 * 128 * 128 * 2


def test_tokenizer_has_the_model_vocab():
    tok = lm.tokenizer_json(4096)
    assert len(tok["model"]["vocab"]) == 4096 and sorted(tok["model"]["vocab"].values()) == list(range(4096))
    tokenizers = pytest.importorskip("tokenizers")
    t = tokenizers.Tokenizer.from_str(json.dumps(tok))
    ids = t.encode("hello world, the end").ids
    assert t.decode(ids) == "hello world, the end" and len(ids) < 20


def test_cli_writes_a_fixed_decode_folder(tmp_path):
    assert lm.main([str(tmp_path / "d"), "--size", "tiny", "--fixed", "decode:8", "--zero-points"]) == 0
    assert {p.name for p in (tmp_path / "d").iterdir()} == {"model.onnx", "genai_config.json", "tokenizer.json",
                                                            "tokenizer_config.json"}
    with pytest.raises(SystemExit):
        lm.main([str(tmp_path / "e"), "--fixed", "decode"])


def test_onnxruntime_genai_generates_from_the_folder(tmp_path):
    og = pytest.importorskip("onnxruntime_genai")
    folder = lm.write_model(lm.SIZES["tiny"], tmp_path / "g")
    model = og.Model(str(folder))
    tokenizer = og.Tokenizer(model)
    prompt = tokenizer.encode("hello world, the quick brown fox")
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + 8)
    gen = og.Generator(model, params)
    gen.append_tokens(prompt)
    while not gen.is_done():
        gen.generate_next_token()
    assert len(gen.get_sequence(0)) == len(prompt) + 8
    assert tokenizer.decode(gen.get_sequence(0)).startswith("hello world, the quick brown fox")


# ---------------------------------------------------------------- compiled and run on the runtime

def _exact(model_path, out_path):
    """The model with accuracy_level 0 (ORT's MatMulNBits then computes in float, as our kernel does;
    at level 4 it quantizes the activations to int8, about 0.1 off on logits of unit scale)."""
    model = onnx.load(str(model_path))
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.name == "accuracy_level":
                attr.i = 0
    onnx.save(model, str(out_path))
    return out_path


STEPS = [(1, 7, 0), (1, 1, 7), (2, 1, 9), (2, 5, 0), (1, 3, 12)]  # (batch, new tokens, cached)


@pytest.mark.parametrize("name", ["default", "zero-points-block64", "separate-rotary", "window-softcap"])
def test_dynamic_model_runs_on_the_runtime(name, compiler, runtime, state, tmp_path):
    spec = dataclasses.replace(lm.SIZES["tiny"], **VARIANTS[name])
    folder = lm.write_model(spec, tmp_path / "m")
    path = _exact(folder / "model.onnx", tmp_path / "exact.onnx")
    info = compiler.compile_model(str(path), tmp_path / "art")
    artifact = runtime.Artifact(str(info.path))
    weights = compiler.load_weights(artifact.metadata, str(path))
    names = [i["name"] for i in artifact.metadata["inputs"]]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch, seq, past in STEPS:
        feeds = lm.feeds(spec, batch, seq, past, seed=seq + past)
        got = artifact.run(state, [feeds[n] for n in names] + list(weights))
        for g, w in zip(got, sess.run(None, feeds), strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind,length", [("decode", 24), ("prefill", 32)])
def test_fixed_model_runs_on_the_runtime(kind, length, compiler, runtime, state, tmp_path):
    spec = dataclasses.replace(lm.SIZES["tiny"], zero_points=True).fixed(kind, length, batch=2)
    path = _exact(lm.write_model(spec, tmp_path / "m") / "model.onnx", tmp_path / "exact.onnx")
    info = compiler.compile_model(str(path), tmp_path / "art")
    assert "hipdnn_ep_get_host_scratch_base" not in info.imports  # fully static
    artifact = runtime.Artifact(str(info.path))
    weights = compiler.load_weights(artifact.metadata, str(path))
    seq, past = (1, length) if kind == "decode" else (length, 0)
    feeds = lm.feeds(spec, 2, seq, past)
    got = artifact.run(state, [feeds[i["name"]] for i in artifact.metadata["inputs"]] + list(weights))
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
