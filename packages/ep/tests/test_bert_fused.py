"""A BERT spelled as transformers exports it (tests/models.py), passed through onnxruntime's tools:
- its transformer optimizer (`optimize_model(model_type="bert")`), which fuses it into com.microsoft
  EmbedLayerNormalization, Attention, SkipLayerNormalization and BiasGelu;
- its dynamic quantizer (`quantize_dynamic`), which makes the weights int8 (MatMulInteger after
  DynamicQuantizeLinear, DequantizeLinear after the embeddings' Gather).
The EP claims each whole with CPU fallback off, and its outputs match ORT's CPU EP on the same graph at
two shapes of one session."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, cpu_session, make_session
from models import bert_feeds, exported_bert

optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")
quantization = pytest.importorskip("onnxruntime.quantization")
pytest.importorskip("sympy")  # the optimizer's symbolic shape inference

FUSED = {"EmbedLayerNormalization", "Attention", "SkipLayerNormalization", "BiasGelu"}


def fused_bert(tmp_path, hidden=32, heads=2):
    path = exported_bert(tmp_path / "bert.onnx", mask="legacy", hidden=hidden, heads=heads)
    model = optimizer.optimize_model(str(path), model_type="bert", num_heads=heads, hidden_size=hidden,
                                     opt_level=0)
    out = tmp_path / "bert_fused.onnx"
    model.save_model_to_file(str(out))
    return out


def test_fused_bert_is_claimed_whole_and_matches_the_cpu_ep(env, ep_devices, tmp_path):
    path = fused_bert(tmp_path)
    model = onnx.load(str(path))
    ops = collections.Counter(n.op_type for n in model.graph.node if n.domain == "com.microsoft")
    assert FUSED <= set(ops), f"the optimizer fused {dict(ops)}"
    sess = make_session(path, ep_devices, env.options, NO_FALLBACK, optimize=False)
    compiled = env.compiled_ops()
    assert len(compiled) == 1, "one partition: the whole model"
    assert len(compiled[0]) == len(model.graph.node)
    cpu = cpu_session(path)
    for batch, seq in ((2, 5), (3, 9)):
        feeds = bert_feeds(batch, seq)
        for got, want in zip(sess.run(None, feeds), cpu.run(None, feeds), strict=True):
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_dynamically_quantized_bert_is_claimed_whole_and_matches_the_cpu_ep(env, ep_devices, tmp_path):
    path = exported_bert(tmp_path / "bert.onnx", mask="legacy")
    quantized = tmp_path / "bert_int8.onnx"
    # reduce_range (7-bit weights): on x86 without VNNI the CPU EP's u8 x s8 kernels saturate pairs of products
    # in int16 (test_quantized_cnn.py), which moved its full-range result up to 0.1 off
    quantization.quantize_dynamic(str(path), str(quantized), weight_type=quantization.QuantType.QInt8,
                                  reduce_range=True)
    model = onnx.load(str(quantized))
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert {"DynamicQuantizeLinear", "MatMulInteger", "DequantizeLinear"} <= set(ops), dict(ops)
    sess = make_session(quantized, ep_devices, env.options, NO_FALLBACK, optimize=False)
    compiled = env.compiled_ops()
    assert len(compiled) == 1, "one partition: the whole model"
    assert len(compiled[0]) == len(model.graph.node)
    cpu = cpu_session(quantized)
    for batch, seq in ((2, 5), (3, 9)):
        feeds = bert_feeds(batch, seq)
        for got, want in zip(sess.run(None, feeds), cpu.run(None, feeds), strict=True):
            assert got.dtype == want.dtype == np.float32
            # the same integer arithmetic; float sums in another order can move a requantized value by one step
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
