"""The com.microsoft ops of onnxruntime's transformer optimizer (BERT-like models): BiasGelu, FastGelu
with a bias, QuickGelu, BiasAdd, SkipLayerNormalization, EmbedLayerNormalization, Attention and
MultiHeadAttention.

Each is composed of existing kernel calls (binary, unary, matmul, softmax, layer_norm, gather, slice,
transpose, where, fill, range), so every backend that runs those runs these; Attention and
MultiHeadAttention without a key mask (mask_index, key_padding_mask) of float32 or float16 are one call of
the fused attention kernel after their projections and bias (attention_bias its mask).  The attention ops follow
onnxruntime's CPU EP: scores = scale * Q K^T plus a mask bias that is 0 where a key is kept and
mask_filter_value where it is masked (not a replacement: a row with every key masked stays a softmax of
the shifted scores, as there), then softmax and the product with V.
"""

from __future__ import annotations

import math

import numpy as np
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .llm import SKIP_LAYER_NORM
from .mask import FILL, RANGE, _fill_bits
from .node import Node, broadcast, emit, finish, show, target_has
from .onnx import BINARY, CAST, GATHER, LAYER_NORM, MATMUL, REDUCE, SLICE, SOFTMAX, TRANSPOSE, UNARY, WHERE
from .registry import Kernel, OpDef, register, register_kernel

MS = "com.microsoft"
BOOL, INT32, INT64 = 9, 6, 7
FLOAT, FLOAT16 = 1, 10

# The fused attention kernel (ABI 1.3): softmax(scale * Q K^T + mask) V in one call, the scores never
# written.  ai.onnx Attention (ops/attention.py), MultiHeadAttention and Attention here, and the chains
# that fuse-attention recognises call it.  Operands Q, K, V and the optional mask (BOOL, or Q's type).
ATTENTION = register_kernel(Kernel("attention", "kernel_attention", ("q_num_heads", "kv_num_heads", "is_causal"),
                                   ("scale", "softcap"), arity=(3, 4), same_type=(0, 1, 2),
                                   labels={3: "attn_mask"}))

# ---------------------------------------------------------------- building blocks


class Builder:
    """Kernel calls emitted before one node, each result a (value, dims) pair."""

    def __init__(self, o: Node):
        self.o = o
        self.dtype = o.result_dtype()

    def call(self, op, operands: list[ir.Value], attrs: dict, dims: list[sym.Expr], dtype: int | None = None,
             params: dict | None = None) -> ir.Value:
        with self.o.op.context:
            t = ir.Type.parse(hir.tensor_type_str(self.dtype if dtype is None else dtype, dims))
        return emit(self.o, op, operands, attrs, [dims], [t], params).results[0]

    def binary(self, key: str, a: tuple, b: tuple, dtype: int | None = None) -> tuple:
        dims = broadcast(self.o, a[1], b[1])
        if dtype is None:
            dtype = BOOL if key in ("LESS", "LESS_OR_EQUAL", "GREATER", "EQUAL", "AND") else hir.element_dtype(a[0])
        return self.call(BINARY, [a[0], b[0]], {"op": key}, dims, dtype), dims

    def unary(self, key: str, a: tuple) -> tuple:
        return self.call(UNARY, [a[0]], {"op": key}, a[1], hir.element_dtype(a[0])), a[1]

    def scalar(self, value: float, dtype: int | None = None) -> tuple:
        dtype = self.dtype if dtype is None else dtype
        bits = _fill_bits(np.array([value]), dtype)
        return self.call(FILL, [], {"bits": bits}, [], dtype), []

    def alias(self, a: tuple, dims: list[sym.Expr]) -> tuple:
        return self.call("hipdnn.alias", [a[0]], {}, dims, hir.element_dtype(a[0])), dims

    def transpose(self, a: tuple, perm: list[int]) -> tuple:
        dims = [a[1][p] for p in perm]
        return self.call(TRANSPOSE, [a[0]], {"perm": perm}, dims, hir.element_dtype(a[0])), dims

    def slice_last(self, a: tuple, start: sym.Expr, count: sym.Expr) -> tuple:
        d = a[1]
        dims = d[:-1] + [count]
        starts = [0] * (len(d) - 1) + [start]
        return self.call(SLICE, [a[0]], {"steps": [1] * len(d)}, dims, hir.element_dtype(a[0]),
                         params={"starts": starts}), dims

    def slice_rows(self, a: tuple, count: sym.Expr) -> tuple:
        d = a[1]
        dims = [count] + d[1:]
        return self.call(SLICE, [a[0]], {"steps": [1] * len(d)}, dims, hir.element_dtype(a[0]),
                         params={"starts": [0] * len(d)}), dims

    def matmul(self, a: tuple, b: tuple) -> tuple:
        dims = broadcast(self.o, a[1][:-2], b[1][:-2]) + [a[1][-2], b[1][-1]]
        if len(b[1]) == 2:
            dims = a[1][:-1] + [b[1][-1]]
        return self.call(MATMUL, [a[0], b[0]], {}, dims, hir.element_dtype(a[0])), dims

    def cast(self, a: tuple, to: int) -> tuple:
        return self.call(CAST, [a[0]], {"to": to}, a[1], to), a[1]

    def where(self, cond: tuple, x: tuple, y: tuple) -> tuple:
        dims = broadcast(self.o, cond[1], x[1], y[1])
        return self.call(WHERE, [cond[0], x[0], y[0]], {}, dims, hir.element_dtype(x[0])), dims

    def arange(self, n: sym.Expr, start: sym.Expr = 0) -> tuple:
        return self.call(RANGE, [], {}, [n], INT64, params={"start_delta": [start, 1]}), [n]

    def input(self, i: int) -> tuple:
        return self.o.input(i), self.o.dims(i)


def _results(o: Node) -> list[int]:
    """The ONNX output positions the node's results stand for."""
    return hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))


def _only_outputs(o: Node, allowed: int, names: dict[int, str]) -> list[int]:
    roles = _results(o)
    extra = [r for r in roles if r >= allowed or r not in names]
    if extra:
        o.fail(f"output {extra[0]} ({names.get(extra[0], 'optional')}) is not supported")
    return roles


def _only_inputs(o: Node, allowed: set[int], names: dict[int, str]) -> None:
    extra = sorted(set(o.inputs) - allowed)
    if extra:
        o.fail(f"input {extra[0]} ({names.get(extra[0], 'optional')}) is not supported")


def _expect_vector(o: Node, i: int, what: str, n: sym.Expr) -> None:
    d = o.dims(i)
    if len(d) != 1 or (isinstance(d[0], int) and isinstance(n, int) and d[0] != n):
        raise ModelError(f"{o.where}: {what} (input {i}) has shape {show(d)}; it must be [{sym.to_str(n)}]")


def _finite(o: Node, name: str, default: float) -> float:
    v = o.attr_float(name, default)
    if not math.isfinite(v):
        raise ModelError(f"{o.where}: {name} is {v}; it must be a finite number")
    return v


# ---------------------------------------------------------------- activations with a bias


def _bias_gelu(o: Node) -> None:
    b = Builder(o)
    x = b.input(0)
    if o.input(1) is not None:
        _expect_vector(o, 1, "bias", x[1][-1] if x[1] else 1)
        x = b.binary("ADD", x, b.input(1))
    key = "GELU_ERF" if o.kind == "bias_gelu" else "GELU_TANH"
    finish(o, [b.unary(key, x)[0]])


register(OpDef("BiasGelu", "bias_gelu", _bias_gelu, (BINARY, UNARY), domains=(MS,)))
register(OpDef("FastGelu", "fast_gelu", _bias_gelu, (BINARY, UNARY), domains=(MS,)))


def _quick_gelu(o: Node) -> None:
    # x * sigmoid(alpha * x), alpha defaulting to 1.702 as in onnxruntime
    b = Builder(o)
    x = b.input(0)
    alpha = _finite(o, "alpha", 1.702)
    s = b.unary("SIGMOID", b.binary("MUL", x, b.scalar(alpha)))
    finish(o, [b.binary("MUL", x, s)[0]])


register(OpDef("QuickGelu", "quick_gelu", _quick_gelu, (BINARY, UNARY), domains=(MS,)))


def _bias_add(o: Node) -> None:
    # X [N, S, C] + bias [C] + skip [N, S, C]
    x = o.dims(0)
    if len(x) != 3:
        raise ModelError(f"{o.where}: X has shape {show(x)}; BiasAdd takes [batch, sequence, channels]")
    _expect_vector(o, 1, "bias", x[2])
    if len(o.dims(2)) != 3 or any(isinstance(a, int) and isinstance(b, int) and a != b
                                  for a, b in zip(o.dims(2), x, strict=True)):
        raise ModelError(f"{o.where}: skip has shape {show(o.dims(2))}; it must be X's shape {show(x)}")
    b = Builder(o)
    finish(o, [b.binary("ADD", b.binary("ADD", b.input(0), b.input(1)), b.input(2))[0]])


register(OpDef("BiasAdd", "bias_add", _bias_add, (BINARY,), domains=(MS,)))


# ---------------------------------------------------------------- layer normalizations


def _skip_layer_norm(o: Node) -> None:
    # inputs: input, skip, gamma, beta, bias; outputs: output, mean, inv_std_var, input_skip_bias_sum
    roles = _only_outputs(o, 4, {0: "output", 3: "input_skip_bias_sum"})
    if 0 not in roles:
        o.fail("the output (output 0) is required")
    x = o.dims(0)
    if len(x) not in (2, 3):
        raise ModelError(f"{o.where}: input has shape {show(x)}; it must be [batch, sequence, hidden] or "
                         "[tokens, hidden]")
    if o.input(1) is None or o.input(2) is None:
        raise ModelError(f"{o.where}: skip (input 1) and gamma (input 2) must be given")
    hidden = x[-1]
    sk = o.dims(1)
    if len(sk) > len(x) or len(sk) < 2 or (isinstance(sk[-1], int) and isinstance(hidden, int) and sk[-1] != hidden):
        raise ModelError(f"{o.where}: skip has shape {show(sk)}; it must be the input's shape {show(x)} or "
                         "broadcast to it from [sequence, hidden]")
    for i, what in ((2, "gamma"), (3, "beta"), (4, "bias")):
        if o.input(i) is not None:
            _expect_vector(o, i, what, hidden)
    text = checks.Text(1, hidden)
    o.require("le", text.values, f"input shape {text.dims(x)} has hidden size {{1}}; layer normalization needs "
                                 "at least 1")
    if not target_has(SKIP_LAYER_NORM):  # a runtime before ABI 1.3: the sum, then layer_norm
        b = Builder(o)
        s = b.binary("ADD", b.input(0), b.input(1))
        s = (s[0], x)  # the skip may broadcast from [sequence, hidden]: the sum has the input's dims
        if o.input(4) is not None:
            s = b.binary("ADD", s, b.input(4))
        operands = [s[0], o.input(2)] + ([o.input(3)] if o.input(3) is not None else [])
        y = b.call(LAYER_NORM, operands, {"axis": len(x) - 1, "epsilon": _finite(o, "epsilon", 1e-12)}, x)
        finish(o, [y if r == 0 else s[0] for r in roles])
        return
    # one kernel call: inputs X, Scale, B, Skip, Bias by position (ONNX: input, skip, gamma, beta, bias),
    # results Y and, when the graph reads it, the sum
    to_slot = {0: 0, 2: 1, 3: 2, 1: 3, 4: 4}
    by_slot = sorted((to_slot[i], o.input(i)) for i in range(5) if o.input(i) is not None)
    with o.op.context:
        t = ir.Type.parse(hir.tensor_type_str(hir.element_dtype(o.input(0)), x))
    n = 2 if 3 in roles else 1
    call = emit(o, SKIP_LAYER_NORM, [v for _, v in by_slot],
                {"axis": len(x) - 1, "epsilon": _finite(o, "epsilon", 1e-12), "hipdnn.slots": [k for k, _ in by_slot]},
                [x] * n, [t] * n)
    finish(o, [call.results[0] if r == 0 else call.results[1] for r in roles])


register(OpDef("SkipLayerNormalization", "skip_layer_norm", _skip_layer_norm, (SKIP_LAYER_NORM, BINARY, LAYER_NORM),
               domains=(MS,)))


def _embed_layer_norm(o: Node) -> None:
    # inputs: input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta,
    # mask, position_ids; outputs: output, mask_index, embedding_sum
    names = {0: "input_ids", 1: "segment_ids", 2: "word_embedding", 3: "position_embedding",
             4: "segment_embedding", 5: "gamma", 6: "beta", 7: "mask", 8: "position_ids"}
    roles = _only_outputs(o, 3, {0: "output", 1: "mask_index", 2: "embedding_sum"})
    for i in (0, 2, 3, 5, 6):
        if o.input(i) is None:
            raise ModelError(f"{o.where}: {names[i]} (input {i}) must be given")
    if (o.input(1) is None) != (o.input(4) is None):
        raise ModelError(f"{o.where}: segment_ids (input 1) and segment_embedding (input 4) must be both given or "
                         "both absent")
    ids = o.dims(0)
    if len(ids) != 2:
        raise ModelError(f"{o.where}: input_ids has shape {show(ids)}; it must be [batch, sequence]")
    batch, seq = ids
    word = o.dims(2)
    if len(word) != 2:
        raise ModelError(f"{o.where}: word_embedding has shape {show(word)}; it must be [vocabulary, hidden]")
    hidden = word[1]
    for i in (3, 4):
        if o.input(i) is not None and (len(o.dims(i)) != 2 or o.dims(i)[1] != hidden):
            raise ModelError(f"{o.where}: {names[i]} (input {i}) has shape {show(o.dims(i))}; it must be "
                             f"[rows, {sym.to_str(hidden)}]")
    for i in (5, 6):
        _expect_vector(o, i, names[i], hidden)
    for i in (1, 7):
        if o.input(i) is not None and (len(o.dims(i)) != 2 or any(
                isinstance(a, int) and isinstance(c, int) and a != c for a, c in zip(o.dims(i), ids, strict=True))):
            raise ModelError(f"{o.where}: {names[i]} (input {i}) has shape {show(o.dims(i))}; it must be "
                             f"input_ids' shape {show(ids)}")
    b = Builder(o)
    out_dims = [batch, seq, hidden]
    e = b.call(GATHER, [o.input(2), o.input(0)], {"axis": 0}, out_dims, b.dtype), out_dims
    if o.input(8) is not None:
        pd = o.dims(8)
        if len(pd) != 2 or (isinstance(pd[0], int) and pd[0] != 1 and isinstance(batch, int) and pd[0] != batch):
            raise ModelError(f"{o.where}: position_ids (input 8) has shape {show(pd)}; it must be [batch, sequence] "
                             "or [1, sequence]")
        pos = b.call(GATHER, [o.input(3), o.input(8)], {"axis": 0}, pd + [hidden], b.dtype), pd + [hidden]
    else:
        rows = o.dims(3)[0]
        text = checks.Text(seq, rows)
        o.require("le", text.values, "the sequence length {0} is more than the position_embedding's {1} rows")
        pos = b.slice_rows(b.input(3), seq)
    e = b.binary("ADD", e, pos)
    if o.input(1) is not None:
        seg = b.call(GATHER, [o.input(4), o.input(1)], {"axis": 0}, out_dims, b.dtype), out_dims
        e = b.binary("ADD", e, seg)
    e = (e[0], out_dims)
    y = b.call(LAYER_NORM, [e[0], o.input(5), o.input(6)],
               {"axis": 2, "epsilon": _finite(o, "epsilon", 1e-12)}, out_dims)
    outs = []
    for r in roles:
        if r == 0:
            outs.append(y)
        elif r == 2:
            outs.append(e[0])
        elif o.input(7) is not None:  # mask_index: the number of kept tokens per row (onnxruntime's CPU EP)
            m = b.binary("GREATER", b.input(7), b.scalar(0, hir.element_dtype(o.input(7))))
            m = b.cast(m, INT32)
            outs.append(b.call(REDUCE, [m[0]], {"op": "SUM", "axes": [1]}, [batch], INT32))
        else:
            outs.append(b.call(FILL, [], {"bits": 0}, [batch], INT32))
    finish(o, outs)


register(OpDef("EmbedLayerNormalization", "embed_layer_norm", _embed_layer_norm, (GATHER, BINARY, LAYER_NORM),
               domains=(MS,)))


# ---------------------------------------------------------------- attention


def _key_mask(o: Node, b: Builder, i: int, batch: sym.Expr, seq: sym.Expr, kv: sym.Expr) -> tuple | None:
    """The mask input i as a BOOL 'key kept' tensor broadcasting to [batch, heads, seq, kv], or None."""
    if o.input(i) is None:
        return None
    m = o.dims(i)
    mdt = hir.element_dtype(o.input(i))
    if mdt != INT32:
        o.fail(f"a mask (input {i}) of element type {mdt} is not supported (INT32)")
    if len(m) == 1:
        if isinstance(m[0], int) and isinstance(batch, int) and m[0] == 2 * batch and batch != m[0]:
            o.fail("a mask of end and start positions ([2 * batch]) is not supported")
        if isinstance(m[0], int) and isinstance(batch, int) and m[0] != batch:
            raise ModelError(f"{o.where}: mask (input {i}) has shape {show(m)}; a 1-D mask holds the key length "
                             f"of each row: [batch] = [{sym.to_str(batch)}]")
        # key j of row r is kept when j < mask[r]
        lengths = b.alias(b.cast(b.input(i), INT64), [m[0], 1, 1, 1])
        cols = b.alias(b.arange(kv), [1, 1, 1, kv])
        return b.binary("LESS", cols, lengths)
    if len(m) == 2:
        want = [batch, kv]
        shaped = [m[0], 1, 1, m[1]]
    elif len(m) == 3:
        want = [batch, seq, kv]
        shaped = [m[0], 1, m[1], m[2]]
    else:
        o.fail(f"a mask (input {i}) of rank {len(m)} is not supported (1-D key lengths, 2-D [batch, keys] or "
               "3-D [batch, sequence, keys])")
    if any(isinstance(g, int) and isinstance(w, int) and g != w for g, w in zip(m, want, strict=True)):
        raise ModelError(f"{o.where}: mask (input {i}) has shape {show(m)}; it must be {show(want)}")
    for g, w in zip(m, want, strict=True):
        if g != w:
            text = checks.Text(g, w)
            o.require("eq", text.values, f"mask (input {i}) has shape {text.dims(m)}; it must be "
                                         f"{text.dims(want)}")
    m4 = b.alias(b.input(i), shaped)
    return b.binary("GREATER", m4, b.scalar(0, INT32))


def _causal(b: Builder, seq: sym.Expr, kv: sym.Expr) -> tuple:
    """BOOL [seq, kv]: key j is visible from query i when j <= i + (kv - seq)."""
    rows = b.alias(b.arange(seq, sym.sub(kv, seq)), [seq, 1])
    cols = b.alias(b.arange(kv), [1, kv])
    return b.binary("LESS_OR_EQUAL", cols, rows)


def _heads(b: Builder, x: tuple, n: int, h: int, perm: list[int]) -> tuple:
    """[batch, seq, n * h] -> [batch, seq, n, h] -> transposed by perm."""
    d = x[1]
    return b.transpose(b.alias(x, [d[0], d[1], n, h]), perm)


def _attend(o: Node, b: Builder, q: tuple, k: tuple, v: tuple, heads: int, scale: float, keep: tuple | None,
            bias: tuple | None, unidirectional: bool) -> ir.Value:
    """q [B, S, N*H], k [B, L, N*H], v [B, L, N*Hv] -> [B, S, N*Hv]."""
    batch, seq = q[1][0], q[1][1]
    kv = k[1][1]
    hq, hv = q[1][2] // heads, v[1][2] // heads
    if keep is None and b.dtype in (FLOAT, FLOAT16) and (bias is None or hir.element_dtype(bias[0]) == b.dtype):
        # one fused kernel call: its causal mask is top-left aligned, the same as the bottom-right one here
        # (unidirectional needs as many keys as queries), and masks with -inf where the composition adds
        # mask_filter_value (a causal row always keeps key 0, so no row is left without a key)
        operands = [q[0], k[0], v[0]] + ([bias[0]] if bias is not None else [])
        return b.call(ATTENTION, operands, {"q_num_heads": heads, "kv_num_heads": heads,
                                            "is_causal": int(unidirectional), "scale": scale, "softcap": 0.0},
                      [batch, seq, heads * hv])
    qh = _heads(b, q, heads, hq, [0, 2, 1, 3])  # [B, N, S, H]
    kt = _heads(b, k, heads, hq, [0, 2, 3, 1])  # [B, N, H, L]
    vh = _heads(b, v, heads, hv, [0, 2, 1, 3])  # [B, N, L, Hv]
    scores = b.binary("MUL", b.matmul(qh, kt), b.scalar(scale))
    if unidirectional:
        causal = _causal(b, seq, kv)
        keep = causal if keep is None else b.binary("AND", keep, causal)
    if keep is not None:
        filt = _finite(o, "mask_filter_value", -10000.0)
        scores = b.binary("ADD", scores, b.where(keep, b.scalar(0.0), b.scalar(filt)))
    if bias is not None:
        scores = b.binary("ADD", scores, bias)
    probs = b.call(SOFTMAX, [scores[0]], {"axis": 3}, scores[1]), scores[1]
    ctx = b.transpose(b.matmul(probs, vh), [0, 2, 1, 3])  # [B, S, N, Hv]
    return b.alias(ctx, [batch, seq, heads * hv])[0]


def _num_heads(o: Node) -> int:
    heads = o.attr_int("num_heads", 0)
    if not heads or heads <= 0:
        raise ModelError(f"{o.where}: num_heads {heads} must be positive")
    return heads


def _scale(o: Node, head_size: int) -> float:
    scale = _finite(o, "scale", 0.0)
    return scale if scale != 0.0 else 1.0 / math.sqrt(head_size)


def _attention_bias(o: Node, b: Builder, i: int, batch, heads, seq, kv) -> tuple | None:
    if o.input(i) is None:
        return None
    d = o.dims(i)
    if len(d) != 4 or any(isinstance(g, int) and isinstance(w, int) and g not in (1, w)
                          for g, w in zip(d, [batch, heads, seq, kv], strict=True)):
        raise ModelError(f"{o.where}: attention_bias (input {i}) has shape {show(d)}; it must broadcast to "
                         f"[batch, num_heads, sequence, keys] = {show([batch, heads, seq, kv])}")
    return b.input(i)


def _attention(o: Node) -> None:
    # inputs: input, weights, bias, mask_index, past, attention_bias, past_sequence_length; outputs: output, present
    names = {0: "input", 1: "weights", 2: "bias", 3: "mask_index", 4: "past", 5: "attention_bias",
             6: "past_sequence_length"}
    _only_inputs(o, {0, 1, 2, 3, 5}, names)
    _only_outputs(o, 1, {0: "output"})
    for a in ("do_rotary", "past_present_share_buffer"):
        if o.attr_int(a, 0):
            o.fail(f"{a}={o.attr_int(a, 0)} is not supported")
    heads = _num_heads(o)
    x, w = o.dims(0), o.dims(1)
    if len(x) != 3:
        raise ModelError(f"{o.where}: input has shape {show(x)}; it must be [batch, sequence, input_hidden]")
    if len(w) != 2 or (isinstance(w[0], int) and isinstance(x[2], int) and w[0] != x[2]):
        raise ModelError(f"{o.where}: weights has shape {show(w)}; it must be [input_hidden, q + k + v hidden] with "
                         f"input_hidden = {sym.to_str(x[2])}")
    if not isinstance(w[1], int):
        o.fail("the weights' dim 1 must be static")
    sizes = o.attr_ints("qkv_hidden_sizes") or [w[1] // 3] * 3
    if len(sizes) != 3 or sum(sizes) != w[1] or any(s <= 0 or s % heads for s in sizes) or sizes[0] != sizes[1]:
        raise ModelError(f"{o.where}: the q, k, v hidden sizes {sizes} must be three positive multiples of num_heads "
                         f"{heads}, q and k equal, adding up to the weights' dim 1 ({w[1]})")
    if o.input(2) is not None:
        _expect_vector(o, 2, "bias", w[1])
    b = Builder(o)
    batch, seq = x[0], x[1]
    qkv = b.matmul(b.input(0), b.input(1))
    if o.input(2) is not None:
        qkv = b.binary("ADD", qkv, b.input(2))
    q = b.slice_last(qkv, 0, sizes[0])
    k = b.slice_last(qkv, sizes[0], sizes[1])
    v = b.slice_last(qkv, sizes[0] + sizes[1], sizes[2])
    keep = _key_mask(o, b, 3, batch, seq, seq)
    bias = _attention_bias(o, b, 5, batch, heads, seq, seq)
    out = _attend(o, b, q, k, v, heads, _scale(o, sizes[0] // heads), keep, bias, bool(o.attr_int("unidirectional", 0)))
    finish(o, [out])


register(OpDef("Attention", "attention", _attention,
               (ATTENTION, MATMUL, BINARY, SLICE, TRANSPOSE, SOFTMAX, WHERE, RANGE, FILL, CAST), domains=(MS,)))


def _multi_head_attention(o: Node) -> None:
    # inputs: query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value, ...
    names = {0: "query", 1: "key", 2: "value", 3: "bias", 4: "key_padding_mask", 5: "attention_bias",
             6: "past_key", 7: "past_value", 8: "past_sequence_length", 9: "cache_indirection"}
    _only_inputs(o, {0, 1, 2, 3, 4, 5}, names)
    _only_outputs(o, 1, {0: "output"})
    heads = _num_heads(o)
    q = o.dims(0)
    if len(q) != 3:
        o.fail(f"a query of shape {show(q)} is not supported (only [batch, sequence, hidden]; packed QKV is not)")
    if o.input(1) is None or o.input(2) is None:
        o.fail("packed QKV or KV (key or value absent) is not supported")
    k, v = o.dims(1), o.dims(2)
    if len(k) != 3 or len(v) != 3:
        o.fail(f"key {show(k)} and value {show(v)} must be [batch, keys, hidden] (4-D key and value are not "
               "supported)")
    if not all(isinstance(d, int) for d in (q[2], k[2], v[2])):
        o.fail("the hidden sizes of query, key and value must be static")
    if q[2] != k[2] or q[2] % heads or v[2] % heads:
        raise ModelError(f"{o.where}: query hidden {q[2]} and key hidden {k[2]} must be equal and, with value hidden "
                         f"{v[2]}, multiples of num_heads {heads}")
    for g, w, what in ((k[0], q[0], "key's batch"), (v[0], q[0], "value's batch"), (v[1], k[1], "value's keys")):
        if isinstance(g, int) and isinstance(w, int) and g != w:
            raise ModelError(f"{o.where}: the {what} {g} differs from {w}")
    b = Builder(o)
    qv, kv_, vv = b.input(0), b.input(1), b.input(2)
    if o.input(3) is not None:
        _expect_vector(o, 3, "bias", 2 * q[2] + v[2])
        bias = b.input(3)
        qv = b.binary("ADD", qv, b.slice_last(bias, 0, q[2]))
        kv_ = b.binary("ADD", kv_, b.slice_last(bias, q[2], k[2]))
        vv = b.binary("ADD", vv, b.slice_last(bias, 2 * q[2], v[2]))
    qv, kv_, vv = (qv[0], q), (kv_[0], k), (vv[0], v)
    unidirectional = bool(o.attr_int("unidirectional", 0))
    if unidirectional and k[1] != q[1]:
        # onnxruntime's CPU EP agrees with no causal alignment we know of when they differ: refused when
        # static, else the program checks that they are equal
        if isinstance(k[1], int) and isinstance(q[1], int):
            o.fail(f"unidirectional with a key length ({k[1]}) other than the query's sequence length ({q[1]}) is "
                   "not supported")
        t = checks.Text(k[1], q[1])
        o.require("eq", t.values, "unidirectional attention needs the key length {0} to equal the query's sequence "
                                  "length {1} (other lengths are not supported)")
    keep = _key_mask(o, b, 4, q[0], q[1], k[1])
    ab = _attention_bias(o, b, 5, q[0], heads, q[1], k[1])
    out = _attend(o, b, qv, kv_, vv, heads, _scale(o, q[2] // heads), keep, ab, unidirectional)
    finish(o, [out])


register(OpDef("MultiHeadAttention", "multi_head_attention", _multi_head_attention,
               (ATTENTION, MATMUL, BINARY, SLICE, TRANSPOSE, SOFTMAX, WHERE, RANGE, FILL, CAST), domains=(MS,)))
