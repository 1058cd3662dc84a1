#!/usr/bin/env python3
"""Llama-like LLMs in onnxruntime-genai's folder format, with random weights, for tests and benchmarks.

A folder holds ``genai_config.json``, ``model.onnx`` (plus ``model.onnx.data`` when the weights are
external) and a byte-level BPE ``tokenizer.json``/``tokenizer_config.json``. The graph has the
structure onnxruntime-genai's model builder emits for a Llama with ``-p int4``: the attention-mask
subgraph (ReduceSum/Sub/Cast for ``seqlens_k``, Shape/Gather/Cast for ``total_sequence_length``),
a Gather embedding, per layer SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization,
MatMulNBits projections (packed or separate QKV), com.microsoft GroupQueryAttention over
``past_key_values.N.key/value`` -> ``present.N.key/value`` (rotary fused into it, or
com.microsoft RotaryEmbedding nodes fed by a ``position_ids`` input), SiLU as Sigmoid + Mul, and an
int4 ``lm_head`` producing ``logits``.

Only onnx and numpy are needed (no onnxruntime-genai, no tokenizers, no network), so it runs on a
machine without a package registry. Weights are generated and written one tensor at a time: the
8B-shaped models (several GB) are streamed to the external data file and never held in memory.

    python tools/models/llm_models.py OUT --size tiny
    python tools/models/llm_models.py OUT --size llama3-8b-8l --fixed decode:128
    python tools/models/llm_models.py OUT --size small --block-size 64 --no-zero-points --rotary separate
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

MS = "com.microsoft"
DATA_FILE = "model.onnx.data"
EXTERNAL_THRESHOLD = 64 << 20  # weights above this many bytes go to DATA_FILE by default
ALIGN = 64  # byte alignment of each tensor in the external data file (mmap-friendly)


@dataclasses.dataclass(frozen=True)
class LlamaSpec:
    """Architecture and export options of one generated model.

    ``seq``/``past``/``batch`` of None are symbolic dims (the dynamic model onnxruntime-genai runs);
    fixed values give a fixed-shape variant (decode: ``seq=1, past=N``; prefill: ``seq=128,
    past=0``). With ``shared_kv`` the past and present caches both have ``max_length`` on their
    sequence axis (onnxruntime-genai's ``past_present_share_buffer`` mode)."""

    vocab: int = 2048
    hidden: int = 64
    intermediate: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    max_length: int = 256
    block_size: int = 32
    zero_points: bool = False
    dtype: str = "float32"  # io, embedding, norm, rotary cache and scale type: float32 or float16
    packed_qkv: bool = True
    rotary: str = "fused"  # "fused" (GroupQueryAttention do_rotary=1) or "separate" (RotaryEmbedding nodes)
    rotary_interleaved: bool = False
    local_window: int = -1
    softcap: float = 0.0
    rope_theta: float = 500000.0
    epsilon: float = 1e-5
    batch: int | None = None
    seq: int | None = None
    past: int | None = None
    shared_kv: bool = False

    def __post_init__(self) -> None:
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.hidden % self.block_size or self.intermediate % self.block_size:
            raise ValueError(f"hidden ({self.hidden}) and intermediate ({self.intermediate}) must be multiples of "
                             f"block_size ({self.block_size})")
        if self.block_size not in (16, 32, 64, 128, 256):
            raise ValueError(f"block_size must be 16, 32, 64, 128 or 256, not {self.block_size}")
        if self.dtype not in ("float32", "float16"):
            raise ValueError(f"dtype must be float32 or float16, not {self.dtype!r}")
        if self.rotary not in ("fused", "separate"):
            raise ValueError(f"rotary must be 'fused' or 'separate', not {self.rotary!r}")
        if self.shared_kv and self.past is not None and self.past != self.max_length:
            raise ValueError(f"with shared_kv the past length is max_length ({self.max_length}), not {self.past}")

    @property
    def np_dtype(self) -> type:
        return np.float16 if self.dtype == "float16" else np.float32

    @property
    def onnx_dtype(self) -> int:
        return TensorProto.FLOAT16 if self.dtype == "float16" else TensorProto.FLOAT

    def fixed(self, kind: str, length: int, batch: int = 1) -> LlamaSpec:
        """The fixed-shape variant: ``decode`` (seq 1 over a KV length ``length``) or ``prefill``
        (seq ``length``, empty past)."""
        if kind == "decode":
            return dataclasses.replace(self, batch=batch, seq=1, past=self.max_length if self.shared_kv else length)
        if kind == "prefill":
            return dataclasses.replace(self, batch=batch, seq=length, past=self.max_length if self.shared_kv else 0)
        raise ValueError(f"fixed shape kind must be 'decode' or 'prefill', not {kind!r}")

    def weight_bytes(self) -> int:
        """Bytes of all weights (what decode streams once per token)."""
        item = np.dtype(self.np_dtype).itemsize
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        mats = [(q + 2 * kv, self.hidden), (self.hidden, q), (self.intermediate, self.hidden),
                (self.intermediate, self.hidden), (self.hidden, self.intermediate)]
        per_layer = sum(_int4_bytes(n, k, self.block_size, self.zero_points, item) for n, k in mats)
        per_layer += 2 * self.hidden * item
        return (self.layers * per_layer + self.vocab * self.hidden * item + self.hidden * item
                + _int4_bytes(self.vocab, self.hidden, self.block_size, self.zero_points, item))

    def kv_bytes(self, batch: int, length: int) -> int:
        """Bytes of the whole KV cache at ``length`` positions."""
        return 2 * self.layers * batch * self.kv_heads * length * self.head_dim * np.dtype(self.np_dtype).itemsize


def _int4_bytes(n: int, k: int, block: int, zero_points: bool, scale_item: int) -> int:
    blocks = k // block
    return n * k // 2 + n * blocks * scale_item + (n * ((blocks + 1) // 2) if zero_points else 0)


SIZES: dict[str, LlamaSpec] = {
    # test sizes: small vocab, a few layers
    "tiny": LlamaSpec(),
    "small": LlamaSpec(vocab=4096, hidden=256, intermediate=512, layers=4, heads=8, kv_heads=2, head_dim=32,
                       max_length=512, block_size=32),
    "mid": LlamaSpec(vocab=8192, hidden=1024, intermediate=2816, layers=8, heads=16, kv_heads=4, head_dim=64,
                     max_length=2048, block_size=128, zero_points=True),
    # Llama-3.1-8B's per-layer shape, AWQ-like int4 (block 128 with zero points)
    "llama3-8b-8l": LlamaSpec(vocab=128256, hidden=4096, intermediate=14336, layers=8, heads=32, kv_heads=8,
                              head_dim=128, max_length=4096, block_size=128, zero_points=True, dtype="float16"),
    # Llama-3.2-1B's per-layer shape with 32 layers: an 8B's depth at a quarter of its weight bytes
    "llama3-1b-32l": LlamaSpec(vocab=128256, hidden=2048, intermediate=8192, layers=32, heads=32, kv_heads=8,
                               head_dim=64, max_length=4096, block_size=128, zero_points=True, dtype="float16"),
    "llama3-8b": LlamaSpec(vocab=128256, hidden=4096, intermediate=14336, layers=32, heads=32, kv_heads=8,
                           head_dim=128, max_length=4096, block_size=128, zero_points=True, dtype="float16"),
}


# -- int4 quantized weights in MatMulNBits' layout ------------------------------------------------------------------

def quantize_int4(w: np.ndarray, block: int, zero_points: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Quantizes ``w`` [K, N] (MatMul's B) per block of ``block`` rows into MatMulNBits' inputs:
    B uint8 [N, K/block, block/2] (element k of column n in the low nibble when k is even), scales
    [N, K/block] float32, zero points uint8 [N, ceil((K/block)/2)] (low nibble for even blocks) or None
    (symmetric, implied zero point 8; values -7..7 around it)."""
    k, n = w.shape
    blocks = w.T.reshape(n, k // block, block).astype(np.float32)
    if zero_points:
        lo, hi = blocks.min(axis=2), blocks.max(axis=2)
        scale = np.maximum(hi - lo, 1e-8) / 15.0
        zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    else:
        scale = np.maximum(np.abs(blocks).max(axis=2), 1e-8) / 7.0
        zp = np.full(scale.shape, 8, np.uint8)
    q = np.clip(np.round(blocks / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    packed = _pack_nibbles(q)
    return packed, scale.astype(np.float32), (_pack_nibbles(zp) if zero_points else None)


def dequantize_int4(b: np.ndarray, scales: np.ndarray, zp: np.ndarray | None, k: int) -> np.ndarray:
    """MatMulNBits' B back to a float32 [K, N] matrix (the reference for tests)."""
    n, nblocks, half = b.shape
    q = _unpack_nibbles(b, 2 * half).astype(np.float32)  # [N, blocks, block]
    z = _unpack_nibbles(zp.reshape(n, -1), nblocks).astype(np.float32) if zp is not None else np.full((n, nblocks), 8.0)
    w = (q - z[..., None]) * scales.reshape(n, nblocks).astype(np.float32)[..., None]
    return w.reshape(n, -1)[:, :k].T.copy()


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    """uint8 values < 16 along the last axis, two per byte (even index in the low nibble)."""
    if q.shape[-1] % 2:
        q = np.concatenate([q, np.zeros((*q.shape[:-1], 1), np.uint8)], axis=-1)
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)


def _unpack_nibbles(p: np.ndarray, count: int) -> np.ndarray:
    out = np.empty((*p.shape[:-1], p.shape[-1] * 2), np.uint8)
    out[..., 0::2] = p & 15
    out[..., 1::2] = p >> 4
    return out[..., :count]


def random_int4(rng: np.random.Generator, n: int, k: int, block: int, zero_points: bool,
                scale_dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Random MatMulNBits weights for a [K, N] projection whose output has roughly unit variance for
    unit-variance inputs, drawn directly in the quantized layout (fast enough for multi-GB models)."""
    nblocks = k // block
    packed = rng.integers(0, 256, size=(n, nblocks, block // 2), dtype=np.uint8)
    # (q - zp) is roughly uniform on [-8, 7] (std ~4.6); the scale makes each output ~ N(0, 1)
    base = 1.0 / (4.6 * np.sqrt(k))
    scales = (base * rng.uniform(0.5, 1.5, size=(n, nblocks))).astype(scale_dtype)
    zp = rng.integers(6, 11, size=(n, (nblocks + 1) // 2), dtype=np.uint8) if zero_points else None
    if zp is not None:
        zp = (zp & 15) | ((rng.integers(6, 11, size=zp.shape, dtype=np.uint8)) << 4)
    return packed, scales, zp


# -- weight storage (inline or streamed to external data) ----------------------------------------------------------

class _WeightWriter:
    """Makes initializers: inline, or appended to the external data file as they come."""

    def __init__(self, folder: Path, external: bool):
        self.folder, self.external = folder, external
        self.offset = 0
        self.file = open(folder / DATA_FILE, "wb") if external else None  # noqa: SIM115 (closed by close())

    def __call__(self, name: str, array: np.ndarray) -> TensorProto:
        array = np.ascontiguousarray(array)
        if not self.external:
            return onnx.numpy_helper.from_array(array, name)
        return self.stream(name, array.shape, array.dtype, iter([array]))

    def stream(self, name: str, shape: tuple[int, ...], dtype: type, chunks: Iterator[np.ndarray]) -> TensorProto:
        """A tensor written chunk by chunk (row blocks in order), never whole in memory when external."""
        if not self.external:
            return self(name, np.concatenate(list(chunks)).reshape(shape))
        pad = -self.offset % ALIGN
        self.file.write(b"\0" * pad)
        self.offset += pad
        start = self.offset
        for chunk in chunks:
            raw = np.ascontiguousarray(chunk, dtype).tobytes()
            self.file.write(raw)
            self.offset += len(raw)
        expected = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if self.offset - start != expected:
            raise ValueError(f"{name}: chunks gave {self.offset - start} bytes, the shape needs {expected}")
        return self._external(name, shape, dtype, start, expected)

    def _external(self, name: str, shape, dtype, offset: int, length: int) -> TensorProto:
        tensor = TensorProto(name=name, dims=shape, data_type=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", DATA_FILE), ("offset", str(offset)), ("length", str(length))):
            tensor.external_data.add(key=key, value=value)
        return tensor

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


# -- graph --------------------------------------------------------------------------------------------------------

def _dim(value: int | None, name: str) -> int | str:
    return name if value is None else value


def _rope_caches(spec: LlamaSpec) -> tuple[np.ndarray, np.ndarray]:
    half = spec.head_dim // 2
    inv = 1.0 / (spec.rope_theta ** (np.arange(half, dtype=np.float64) * 2 / spec.head_dim))
    angles = np.arange(spec.max_length, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(angles).astype(spec.np_dtype), np.sin(angles).astype(spec.np_dtype)


def build_graph(spec: LlamaSpec, weight: _WeightWriter, seed: int = 0) -> onnx.GraphProto:
    """The decoder graph; each initializer goes through ``weight`` as soon as it is drawn."""
    rng = np.random.default_rng(seed)
    dt, npdt = spec.onnx_dtype, spec.np_dtype
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []

    def node(op: str, name: str, inputs: list[str], outputs: int | list[str] = 1, domain: str = "",
             **attrs) -> list[str]:
        outs = [f"{name}/output_{i}" for i in range(outputs)] if isinstance(outputs, int) else outputs
        nodes.append(helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs))
        return outs

    def init(name: str, array: np.ndarray) -> str:
        inits.append(weight(name, array))
        return name

    def linear(name: str, weight_name: str, x: str, n: int, k: int, output: str | None = None) -> str:
        b, scales, zp = random_int4(rng, n, k, spec.block_size, spec.zero_points, npdt)
        ins = [x, init(f"{weight_name}.MatMul.weight_Q4", b), init(f"{weight_name}.MatMul.weight_scales", scales)]
        if zp is not None:
            ins.append(init(f"{weight_name}.MatMul.weight_zp_Q4", zp))
        return node("MatMulNBits", f"{name}/MatMul_Q4", ins, [output] if output else [f"{name}/MatMul/output_0"],
                    domain=MS, K=k, N=n, bits=4, block_size=spec.block_size, accuracy_level=4)[0]

    def norm_weight(name: str) -> str:
        return init(name, (1.0 + 0.1 * rng.standard_normal(spec.hidden)).astype(npdt))

    b, s = spec.batch, spec.seq
    total = None if (b is None or s is None or spec.past is None) else (
        spec.past + s if not spec.shared_kv else spec.past)
    if spec.shared_kv and total is not None:
        total = None  # the mask's length is the real length, not max_length: keep it symbolic
    # present has max_length in a fixed shared-buffer variant; in the dynamic model it is symbolic (as the
    # builder writes it) whatever the buffer mode, which only onnxruntime-genai's config decides
    kv_len_present = (None if spec.past is None or s is None else
                      spec.max_length if spec.shared_kv else spec.past + s)
    batch_dim = _dim(b, "batch_size")
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch_dim, _dim(s, "sequence_length")]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            [batch_dim, _dim(total, "total_sequence_length")])]
    if spec.rotary == "separate":
        inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64,
                                                    [batch_dim, _dim(s, "sequence_length")]))
    head_dim = spec.head_dim if spec.seq is not None else "kv_cache_dim"
    past_shape = [batch_dim, spec.kv_heads, _dim(spec.past, "past_sequence_length"), head_dim]
    present_shape = [batch_dim, spec.kv_heads, _dim(kv_len_present, "total_sequence_length"), head_dim]
    for kind in ("key", "value"):
        inputs += [helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", dt, past_shape)
                   for i in range(spec.layers)]
    outputs = [helper.make_tensor_value_info("logits", dt, [batch_dim, _dim(s, "sequence_length"), spec.vocab])]
    for kind in ("key", "value"):
        outputs += [helper.make_tensor_value_info(f"present.{i}.{kind}", dt, present_shape)
                    for i in range(spec.layers)]

    # attention-mask plumbing: seqlens_k = ReduceSum(mask) - 1, total_seq_len = Shape(mask)[1], both int32
    mask = "/model/attn_mask_reformat/attn_mask_subgraph"
    one_1d = node("Constant", "/model/constant_nodes/INT64/[1]", [], ["/model/constants/INT64/[1]"],
                  value=helper.make_tensor("", TensorProto.INT64, [1], [1]))[0]
    rsum = node("ReduceSum", f"{mask}/ReduceSum", ["attention_mask", one_1d], keepdims=0)[0]
    sub = node("Sub", f"{mask}/Sub", [rsum, one_1d])[0]
    seqlens_k = node("Cast", f"{mask}/Sub/Cast", [sub], to=TensorProto.INT32)[0]
    shape = node("Shape", f"{mask}/Shape", ["attention_mask"])[0]
    one = node("Constant", "/model/constant_nodes/INT64/1", [], ["/model/constants/INT64/1"],
               value=helper.make_tensor("", TensorProto.INT64, [], [1]))[0]
    gathered = node("Gather", f"{mask}/Gather", [shape, one], axis=0)[0]
    total_len = node("Cast", f"{mask}/Gather/Cast", [gathered], to=TensorProto.INT32)[0]

    rows = max(1, (16 << 20) // (4 * spec.hidden))  # the table is drawn 16 MiB at a time
    embedding = "model.embed_tokens.weight"
    inits.append(weight.stream(embedding, (spec.vocab, spec.hidden), npdt, (
        rng.standard_normal((min(rows, spec.vocab - r), spec.hidden), dtype=np.float32).astype(npdt)
        for r in range(0, spec.vocab, rows))))
    hidden_state = node("Gather", "/model/embed_tokens/Gather", [embedding, "input_ids"])[0]
    cos, sin = _rope_caches(spec)
    cos_cache, sin_cache = init("cos_cache", cos), init("sin_cache", sin)

    q_size, kv_size = spec.heads * spec.head_dim, spec.kv_heads * spec.head_dim
    residual = None
    normed = node("SimplifiedLayerNormalization", "/model/layers.0/input_layernorm/LayerNorm",
                  [hidden_state, norm_weight("model.layers.0.input_layernorm.weight")],
                  ["/model/layers.0/input_layernorm/output_0"], epsilon=spec.epsilon, axis=-1, stash_type=1)[0]
    residual = hidden_state
    for i in range(spec.layers):
        base = f"/model/layers.{i}"
        attn = f"{base}/attn"
        if spec.packed_qkv:
            q = linear(f"{attn}/qkv_proj", f"model.layers.{i}.attn.qkv_proj", normed, q_size + 2 * kv_size, spec.hidden)
            k = v = ""
        else:
            q = linear(f"{attn}/q_proj", f"model.layers.{i}.attn.q_proj", normed, q_size, spec.hidden)
            k = linear(f"{attn}/k_proj", f"model.layers.{i}.attn.k_proj", normed, kv_size, spec.hidden)
            v = linear(f"{attn}/v_proj", f"model.layers.{i}.attn.v_proj", normed, kv_size, spec.hidden)
        gqa_cos, gqa_sin = cos_cache, sin_cache
        if spec.rotary == "separate":
            if spec.packed_qkv:
                raise ValueError("separate rotary needs separate Q/K/V projections (packed_qkv=False)")
            q = node("RotaryEmbedding", f"{attn}/q_rotary/RotaryEmbedding", [q, "position_ids", cos_cache, sin_cache],
                     domain=MS, interleaved=int(spec.rotary_interleaved), num_heads=0, rotary_embedding_dim=0)[0]
            k = node("RotaryEmbedding", f"{attn}/k_rotary/RotaryEmbedding", [k, "position_ids", cos_cache, sin_cache],
                     domain=MS, interleaved=int(spec.rotary_interleaved), num_heads=0, rotary_embedding_dim=0)[0]
            gqa_cos = gqa_sin = ""
        gqa_inputs = [q, k, v, f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens_k, total_len,
                      gqa_cos, gqa_sin]
        while gqa_inputs[-1] == "":
            gqa_inputs.pop()
        attn_out = node("GroupQueryAttention", f"{attn}/GroupQueryAttention", gqa_inputs,
                        [f"{attn}/GroupQueryAttention/output_0", f"present.{i}.key", f"present.{i}.value"], domain=MS,
                        num_heads=spec.heads, kv_num_heads=spec.kv_heads, scale=float(spec.head_dim ** -0.5),
                        local_window_size=spec.local_window, softcap=float(spec.softcap),
                        do_rotary=int(spec.rotary == "fused"), rotary_interleaved=int(spec.rotary_interleaved))[0]
        o = linear(f"{attn}/o_proj", f"model.layers.{i}.attn.o_proj", attn_out, spec.hidden, q_size)
        post = f"{base}/post_attention_layernorm"
        outs = node("SkipSimplifiedLayerNormalization", f"{post}/SkipLayerNorm",
                    [residual, o, norm_weight(f"model.layers.{i}.post_attention_layernorm.weight")],
                    [f"{post}/output_0", "", "", f"{post}/output_3"], domain=MS, epsilon=spec.epsilon)
        normed, residual = outs[0], outs[3]
        mlp = f"{base}/mlp"
        gate = linear(f"{mlp}/gate_proj", f"model.layers.{i}.mlp.gate_proj", normed, spec.intermediate, spec.hidden)
        up = linear(f"{mlp}/up_proj", f"model.layers.{i}.mlp.up_proj", normed, spec.intermediate, spec.hidden)
        sig = node("Sigmoid", f"{mlp}/act_fn/Sigmoid", [gate])[0]
        silu = node("Mul", f"{mlp}/act_fn/Mul", [gate, sig])[0]
        prod = node("Mul", f"{mlp}/Mul", [silu, up])[0]
        down = linear(f"{mlp}/down_proj", f"model.layers.{i}.mlp.down_proj", prod, spec.hidden, spec.intermediate)
        last = i == spec.layers - 1
        nxt = f"/model/layers.{i + 1}/" + ("final_norm_layernorm" if last else "input_layernorm")
        wname = f"model.layers.{i + 1}." + ("final_norm_layernorm" if last else "input_layernorm") + ".weight"
        outs = node("SkipSimplifiedLayerNormalization", f"{nxt}/SkipLayerNorm", [residual, down, norm_weight(wname)],
                    [f"{nxt}/output_0"] if last else [f"{nxt}/output_0", "", "", f"{nxt}/output_3"],
                    domain=MS, epsilon=spec.epsilon)
        normed, residual = outs[0], outs[-1]
    linear("/lm_head", "lm_head", normed, spec.vocab, spec.hidden, output="logits")
    return helper.make_graph(nodes, "main_graph", inputs, outputs, inits)


# -- tokenizer and config ------------------------------------------------------------------------------------------

SPECIAL_TOKENS = ["<s>", "</s>", "<unk>"]


def _byte_chars() -> list[str]:
    """GPT-2's byte-to-printable-character table (what a ByteLevel pre-tokenizer maps bytes to)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def tokenizer_json(vocab_size: int) -> dict:
    """A byte-level BPE tokenizer with exactly ``vocab_size`` tokens: the special tokens, the 256 byte
    tokens, then merges of pairs of printable characters (deterministic, no training)."""
    byte_chars = _byte_chars()
    vocab: dict[str, int] = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for ch in byte_chars:
        vocab[ch] = len(vocab)
    alphabet = [c for c in " etaoinshrdlucmfwypvbgkjqxz" + "ETAOINSHRDLUCMFWYPVBGKJQXZ.,'0123456789"]
    alphabet = [byte_chars[ord(c)] for c in alphabet]
    merges = []
    for a in alphabet:
        for c in alphabet:
            if len(vocab) >= vocab_size:
                break
            if a + c not in vocab:
                vocab[a + c] = len(vocab)
                merges.append([a, c])
    if len(vocab) < vocab_size:  # beyond the pairs: filler tokens nothing merges into
        vocab.update({f"<extra_{i}>": len(vocab) + i for i in range(vocab_size - len(vocab))})
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(SPECIAL_TOKENS)]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": merges}}


def genai_config(spec: LlamaSpec) -> dict:
    inputs = {"input_ids": "input_ids", "attention_mask": "attention_mask"}
    if spec.rotary == "separate":
        inputs["position_ids"] = "position_ids"
    inputs |= {"past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"}
    return {
        "model": {
            "bos_token_id": 0, "context_length": spec.max_length, "eos_token_id": 1, "pad_token_id": 1,
            "type": "llama", "vocab_size": spec.vocab,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx", "head_size": spec.head_dim, "hidden_size": spec.hidden,
                "inputs": inputs,
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": spec.heads, "num_hidden_layers": spec.layers,
                "num_key_value_heads": spec.kv_heads,
            },
        },
        "search": {"diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
                   "max_length": spec.max_length, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
                   "num_return_sequences": 1, "past_present_share_buffer": spec.shared_kv,
                   "repetition_penalty": 1.0, "temperature": 1.0, "top_k": 50, "top_p": 1.0},
    }


def write_model(spec: LlamaSpec, folder: str | os.PathLike, seed: int = 0, external: bool | None = None) -> Path:
    """Writes the model folder and returns its path. ``external`` None: external data above 64 MiB."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if external is None:
        external = spec.weight_bytes() > EXTERNAL_THRESHOLD
    writer = _WeightWriter(folder, external)
    try:
        graph = build_graph(spec, writer, seed)
    finally:
        writer.close()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)],
                              producer_name="hipdnn-ep llm_models")
    model.ir_version = 10
    onnx.save_model(model, str(folder / "model.onnx"))
    (folder / "genai_config.json").write_text(json.dumps(genai_config(spec), indent=4) + "\n")
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json(spec.vocab), ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "model_max_length": spec.max_length,
         "tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": False}, indent=2) + "\n")
    return folder


# -- feeds for running the graph directly --------------------------------------------------------------------------

def feeds(spec: LlamaSpec, batch: int, seq: int, past: int, seed: int = 0,
          pad: list[int] | None = None) -> dict[str, np.ndarray]:
    """Inputs of one step: ``seq`` new tokens after ``past`` cached ones (the cache random). ``pad``
    per batch row: how many of the last positions of the mask are 0 (a shorter row, right-padded
    the way onnxruntime-genai pads a batch of prompts is not modelled here; rows are just shorter)."""
    rng = np.random.default_rng(seed)
    cache = spec.max_length if spec.shared_kv else past
    total = past + seq
    mask = np.ones((batch, total), np.int64)
    for row, p in enumerate(pad or []):
        if p:
            mask[row, total - p:] = 0
    out = {"input_ids": rng.integers(0, spec.vocab, (batch, seq), dtype=np.int64), "attention_mask": mask}
    if spec.rotary == "separate":
        out["position_ids"] = np.broadcast_to(np.arange(past, past + seq, dtype=np.int64), (batch, seq)).copy()
    for kind in ("key", "value"):
        for i in range(spec.layers):
            kv = np.zeros((batch, spec.kv_heads, cache, spec.head_dim), spec.np_dtype)
            kv[:, :, :past] = rng.standard_normal((batch, spec.kv_heads, past, spec.head_dim))
            out[f"past_key_values.{i}.{kind}"] = kv
    return out


def iter_sizes() -> Iterator[tuple[str, LlamaSpec]]:
    yield from SIZES.items()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", help="folder to write (genai_config.json, model.onnx, tokenizer)")
    parser.add_argument("--size", choices=SIZES, default="tiny")
    parser.add_argument("--layers", type=int, help="override the size's number of layers")
    parser.add_argument("--vocab", type=int, help="override the size's vocabulary")
    parser.add_argument("--dtype", choices=("float32", "float16"), help="io/scale type (default: the size's)")
    parser.add_argument("--block-size", type=int, choices=(16, 32, 64, 128, 256))
    parser.add_argument("--zero-points", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--qkv", choices=("packed", "separate"), default=None)
    parser.add_argument("--rotary", choices=("fused", "separate"), default=None,
                        help="separate: RotaryEmbedding nodes and a position_ids input (implies --qkv separate)")
    parser.add_argument("--shared-kv", action="store_true",
                        help="past and present have max_length (onnxruntime-genai's past_present_share_buffer)")
    parser.add_argument("--local-window", type=int)
    parser.add_argument("--softcap", type=float)
    parser.add_argument("--max-length", type=int)
    parser.add_argument("--fixed", metavar="decode:N|prefill:N",
                        help="fixed shapes: decode (one token over N cached) or prefill (N tokens)")
    parser.add_argument("--batch", type=int, default=1, help="batch of a fixed-shape variant")
    parser.add_argument("--external", action=argparse.BooleanOptionalAction, default=None,
                        help="weights in model.onnx.data (default: when above 64 MiB)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    spec = SIZES[args.size]
    changes = {k: v for k, v in {"layers": args.layers, "vocab": args.vocab, "dtype": args.dtype,
                                 "block_size": args.block_size, "zero_points": args.zero_points,
                                 "rotary": args.rotary, "local_window": args.local_window,
                                 "softcap": args.softcap, "max_length": args.max_length}.items() if v is not None}
    if args.qkv:
        changes["packed_qkv"] = args.qkv == "packed"
    if args.rotary == "separate":
        changes["packed_qkv"] = False
    if args.shared_kv:
        changes["shared_kv"] = True
    try:
        spec = dataclasses.replace(spec, **changes)
        if args.fixed:
            kind, _, length = args.fixed.partition(":")
            if not length.isdigit():
                raise ValueError(f"--fixed takes decode:N or prefill:N, not {args.fixed!r}")
            spec = spec.fixed(kind, int(length), args.batch)
    except ValueError as e:
        parser.error(str(e))
    folder = write_model(spec, args.output, seed=args.seed, external=args.external)
    print(f"wrote {folder} ({spec.weight_bytes() / 2**20:.1f} MiB of weights)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
