"""The attention ops of ai.onnx: Attention (opset 23, with opset 24's nonpad_kv_seqlen input and opset
25's sliding-window attributes) and RotaryEmbedding (opset 23).

Attention without a KV cache, nonpad_kv_seqlen or sliding window, whose only output is Y, of float32 or
float16, with a mask (if any) whose last dim is known to be the key count, is one call of the fused
attention kernel (its is_causal is top-left aligned, as ONNX's is without a past).  The Attention that
fuse-attention writes for a spelled-out chain carries `hipdnn.mask_broadcasts`: its mask stood in an Add
that broadcast it onto the scores, so any last dim goes to the kernel, which checks the broadcast at run time.

Any other Attention is composed of existing kernel calls (matmul, softmax, binary, unary, where, transpose,
concat, gather, reduce, range, fill, cast), as ONNX's reference defines it:

    scores = scale * Q K^T             (Q [B, H, S, D], K [B, kv_heads, T, D], T = past + new keys)
    scores = softcap * tanh(scores / softcap)           when softcap > 0, before any mask
    scores = scores + bias                              the attention mask, causal and window masks
    probs  = softmax(scores), zero on rows whose bias is -inf everywhere (no key to attend)
    Y      = probs V

A boolean mask (True: attend) becomes 0 / -inf; a float mask is added as it is; a mask shorter than T
on its last axis is padded with -inf (False).  Causal masking is bottom-right aligned: query i sees
key j when j <= i + past (past: past_key's length; with nonpad_kv_seqlen, nonpad_kv_seqlen[b] - S).
Grouped-query attention (kv_num_heads dividing the query heads, each KV head serving consecutive query
heads) views Q as [B, kv_heads, reps * S, D], so no KV head is copied.  3-D inputs ([B, S, heads * D])
are split into heads and the output merged back.

RotaryEmbedding calls com.microsoft RotaryEmbedding's kernel (the same rotation), its inputs
reordered; without position_ids the caches are per token ([B, S, rotary_dim / 2]) and the kernel
reads them as a [B * S, rotary_dim / 2] table at positions 0 .. B * S - 1.
"""

from __future__ import annotations

import math

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .contrib import ATTENTION, Builder, _results
from .llm import ROTARY, _rope_caches
from .mask import FILL, RANGE
from .node import Node, finish, replace, show
from .onnx import BINARY, CAST, CONCAT, GATHER, MATMUL, REDUCE, SOFTMAX, TRANSPOSE, UNARY, WHERE
from .registry import OpDef, register

BOOL, INT32, INT64 = 9, 6, 7
FLOAT, FLOAT16, DOUBLE = 1, 10, 11
NEG_INF = float("-inf")


def _same(o: Node, got: sym.Expr, want: sym.Expr, text: str) -> None:
    """got == want: a ModelError now when both are static, else a check at run time.  `text` has {0}
    for got and {1} for want."""
    if got == want:
        return
    if isinstance(got, int) and isinstance(want, int):
        raise ModelError(f"{o.where}: {text.format(got, want)}")
    o.require("eq", [got, want], text)


def _divide(o: Node, total: sym.Expr, parts: sym.Expr, text: str) -> sym.Expr:
    """total / parts, which must be exact (text: {0} total, {1} parts)."""
    if parts == 1:
        return total
    if isinstance(total, int) and isinstance(parts, int):
        if parts <= 0 or total % parts:
            raise ModelError(f"{o.where}: {text.format(total, parts)}")
        return total // parts
    q = sym.div(total, parts)
    t = checks.Text(sym.mul(q, parts), total)
    o.require("eq", t.values, text.format(t.ref(total), t.ref(parts)))
    return q


def _head_dims(o: Node, i: int, heads: int, what: str) -> list[sym.Expr]:
    """[B, heads, L, D] of 3-D input i [B, L, heads * D] (the hidden size checked to be a multiple)."""
    d = o.dims(i)
    size = _divide(o, d[2], heads, f"{what} (input {i}) has hidden size {{0}}, which is not a multiple of the "
                                   f"{{1}} heads")
    return [d[0], heads, d[1], size]


def _split_heads(b: Builder, i: int, dims: list[sym.Expr]) -> tuple:
    """3-D input i [B, L, heads * D] -> [B, heads, L, D] (dims: _head_dims')."""
    return b.transpose(b.alias(b.input(i), [dims[0], dims[2], dims[1], dims[3]]), [0, 2, 1, 3])


def _pad_mask(o: Node, b: Builder, m: tuple, total: sym.Expr, is_bool: bool) -> tuple:
    """The mask with its last axis (L <= total) padded to total with False / -inf."""
    length = m[1][-1]
    if length == total:
        return m
    t = checks.Text(length, total)
    o.require("le", t.values, "attn_mask's last dim {0} is longer than the total sequence length {1}")
    t = checks.Text(1, length)
    o.require("le", t.values, "attn_mask's last dim is {1}; it must be at least 1")
    cols = b.arange(total)
    last = b.arange(1, sym.sub(length, 1))
    idx = b.binary("MIN", cols, last)
    rank = len(m[1])
    dims = m[1][:-1] + [total]
    g = b.call(GATHER, [m[0], idx[0]], {"axis": rank - 1}, dims, hir.element_dtype(m[0])), dims
    inside = b.binary("LESS", cols, b.arange(1, length))
    if is_bool:
        return b.binary("AND", g, inside)
    return b.where(inside, g, b.scalar(NEG_INF))


def _and(b: Builder, a: tuple | None, c: tuple) -> tuple:
    return c if a is None else b.binary("AND", a, c)


def _fused(o: Node, roles: list[int], dtype: int, scores: list[sym.Expr], v_size: sym.Expr, qh: int,
           kvh: int) -> bool:
    """One call of the fused attention kernel where the node is what it computes (Q, K and V checked by the
    caller; scores: [batch, q_heads, q_seq, keys], v_size: V's head size; qh, kvh: the heads attributes of 3-D
    inputs, 0 for 4-D): no KV cache, no nonpad_kv_seqlen, no sliding window, only output Y, float32 or float16
    inputs with softmax_precision unset, FLOAT or DOUBLE, a nonzero or unset scale, and a mask (if any) of BOOL
    or Q's type and of rank <= 4 that broadcasts to the scores with a last dim known to be the key count (a
    shorter one, 1 included, is padded by the composition).  True when the node was replaced."""
    if dtype not in (FLOAT, FLOAT16) or set(roles) != {0}:
        return False
    if any(o.input(i) is not None for i in (4, 5, 6)):
        return False
    if o.attr_int("left_window_size", -1) != -1 or o.attr_int("right_window_size", -1) != -1:
        return False
    if o.attr_int("softmax_precision", 0) not in (0, FLOAT, DOUBLE):
        return False
    if o.attr_int("is_causal", 0) not in (0, 1):
        return False
    scale = o.attr_float("scale", math.nan)
    if scale == 0.0 or (not math.isnan(scale) and not math.isfinite(scale)):
        return False
    softcap = o.attr_float("softcap", 0.0)
    if not math.isfinite(softcap) or softcap < 0:
        return False
    operands = [o.input(0), o.input(1), o.input(2)]
    if o.input(3) is not None:
        m = o.dims(3)
        if hir.element_dtype(o.input(3)) not in (BOOL, dtype) or not 1 <= len(m) <= 4:
            return False
        # ONNX pads a mask shorter than the keys (a last dim of 1 too: only key 0 is attended); the kernel
        # broadcasts it.  fuse-attention's Attention stands for an Add that broadcast the mask onto the
        # scores: there the kernel's broadcast is the meaning, and its run-time check the Add's
        broadcasts = hir.get_int(o.op, "hipdnn.mask_broadcasts", 0)
        if m[-1] != scores[-1] and not broadcasts:
            return False
        for got, want in zip(reversed(m), reversed(scores), strict=False):
            if isinstance(got, int) and got != 1 and isinstance(want, int) and got != want:
                return False  # the composition names the mismatch
        operands.append(o.input(3))
    batch, heads, seq = scores[:3]
    y = [batch, seq, sym.mul(heads, v_size)] if qh else [batch, heads, seq, v_size]
    replace(o, ATTENTION, operands,
            {"q_num_heads": qh, "kv_num_heads": kvh, "is_causal": o.attr_int("is_causal", 0),
             "scale": 0.0 if math.isnan(scale) else scale, "softcap": softcap}, [y])
    return True


def _attention(o: Node) -> None:
    names = {0: "Q", 1: "K", 2: "V", 3: "attn_mask", 4: "past_key", 5: "past_value", 6: "nonpad_kv_seqlen"}
    roles = _results(o)
    for i in (0, 1, 2):
        if o.input(i) is None:
            raise ModelError(f"{o.where}: {names[i]} (input {i}) must be given")
    extra = sorted(set(o.inputs) - set(names))
    if extra:
        o.fail(f"input {extra[0]} is not supported")
    rank = len(o.dims(0))
    if rank not in (3, 4) or len(o.dims(1)) != rank or len(o.dims(2)) != rank:
        raise ModelError(f"{o.where}: Q {show(o.dims(0))}, K {show(o.dims(1))} and V {show(o.dims(2))} must be all "
                         "3-D [batch, sequence, heads * head_size] or all 4-D [batch, heads, sequence, head_size]")
    mode = o.attr_int("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        raise ModelError(f"{o.where}: qk_matmul_output_mode {mode} must be 0, 1, 2 or 3")
    b = Builder(o)
    qh = kvh = 0
    if rank == 3:
        qh, kvh = o.attr_int("q_num_heads", 0), o.attr_int("kv_num_heads", 0)
        if not qh or not kvh or qh <= 0 or kvh <= 0:
            raise ModelError(f"{o.where}: 3-D inputs need q_num_heads and kv_num_heads > 0 (got {qh} and {kvh})")
        qd, kd, vd = _head_dims(o, 0, qh, "Q"), _head_dims(o, 1, kvh, "K"), _head_dims(o, 2, kvh, "V")
    else:
        qd, kd, vd = o.dims(0), o.dims(1), o.dims(2)
    batch, heads, seq, size = qd
    kv_heads, kv_len, v_size = kd[1], kd[2], vd[3]
    _same(o, kd[0], batch, "K's batch size {0} differs from Q's {1}")
    _same(o, vd[0], batch, "V's batch size {0} differs from Q's {1}")
    _same(o, kd[3], size, "K's head size {0} differs from Q's {1}")
    _same(o, vd[1], kv_heads, "V has {0} heads; K has {1}")
    _same(o, vd[2], kv_len, "V's sequence length {0} differs from K's {1}")
    reps = _divide(o, heads, kv_heads, "Q's {0} heads are not a multiple of K and V's {1} heads")
    if _fused(o, roles, b.dtype, [batch, heads, seq, kv_len], v_size, qh, kvh):
        return
    if rank == 3:
        q4, k4, v4 = _split_heads(b, 0, qd), _split_heads(b, 1, kd), _split_heads(b, 2, vd)
    else:
        q4, k4, v4 = b.input(0), b.input(1), b.input(2)
    # one set of dims from here on (the checks above tie the others to them)
    k4 = b.alias(k4, [batch, kv_heads, kv_len, size])
    v4 = b.alias(v4, [batch, kv_heads, kv_len, v_size])

    # ---- the KV cache
    if (o.input(4) is None) != (o.input(5) is None):
        raise ModelError(f"{o.where}: past_key (input 4) and past_value (input 5) must be both given or both absent")
    if o.input(6) is not None and o.input(4) is not None:
        raise ModelError(f"{o.where}: nonpad_kv_seqlen (input 6) cannot be combined with past_key and past_value")
    past: sym.Expr = 0
    if o.input(4) is not None:
        pk, pv = o.dims(4), o.dims(5)
        if len(pk) != 4 or len(pv) != 4:
            raise ModelError(f"{o.where}: past_key {show(pk)} and past_value {show(pv)} must be 4-D [batch, "
                             "kv_num_heads, past_sequence_length, head_size]")
        past = pk[2]
        for got, want, what in ((pk[0], batch, "past_key's batch size"), (pk[1], kv_heads, "past_key's heads"),
                                (pk[3], size, "past_key's head size"), (pv[0], batch, "past_value's batch size"),
                                (pv[1], kv_heads, "past_value's heads"), (pv[2], past, "past_value's length"),
                                (pv[3], v_size, "past_value's head size")):
            _same(o, got, want, what + " is {0}; it must be {1}")
        total = sym.add(past, kv_len)
        k4 = b.call(CONCAT, [o.input(4), k4[0]], {"axis": 2}, [batch, kv_heads, total, size]), \
            [batch, kv_heads, total, size]
        v4 = b.call(CONCAT, [o.input(5), v4[0]], {"axis": 2}, [batch, kv_heads, total, v_size]), \
            [batch, kv_heads, total, v_size]
    total = k4[1][2]

    # ---- the mask: keep (BOOL, attend where True) and bias (added), both broadcasting to [B, H, S, T]
    keep, bias = None, None
    may_empty = False  # whether a row may have no key to attend
    if o.input(3) is not None:
        m = o.dims(3)
        mdt = hir.element_dtype(o.input(3))
        if mdt != BOOL and mdt != b.dtype:
            raise ModelError(f"{o.where}: attn_mask (input 3) has element type {mdt}; it must be BOOL or Q's "
                             f"({b.dtype})")
        if not 1 <= len(m) <= 4:
            raise ModelError(f"{o.where}: attn_mask (input 3) has shape {show(m)}; it must have rank 1 to 4 and "
                             "broadcast to [batch, q_num_heads, q_sequence_length, total_sequence_length]")
        mask = _pad_mask(o, b, b.input(3), total, mdt == BOOL)
        if mdt == BOOL:
            keep = mask
        else:
            bias = mask
        may_empty = True
    causal = bool(o.attr_int("is_causal", 0))
    left, right = o.attr_int("left_window_size", -1), o.attr_int("right_window_size", -1)
    for name, v in (("left_window_size", left), ("right_window_size", right)):
        if v < -1:
            raise ModelError(f"{o.where}: {name} {v} must be -1 (unbounded) or >= 0")
    window = left >= 0 or right >= 0
    nonpad = None
    if o.input(6) is not None:
        nd = o.dims(6)
        if len(nd) != 1:
            raise ModelError(f"{o.where}: nonpad_kv_seqlen (input 6) has shape {show(nd)}; it must be [batch]")
        _same(o, nd[0], batch, "nonpad_kv_seqlen has {0} entries; it must have one per batch row ({1})")
        nonpad = b.alias(b.input(6), [batch, 1, 1, 1])
        if hir.element_dtype(o.input(6)) != INT64:
            nonpad = b.cast(nonpad, INT64)
        may_empty = True
    if causal or window or nonpad is not None:
        if nonpad is None:
            rows = b.alias(b.arange(seq, past), [seq, 1])  # query i's position: i + past
            cols = b.alias(b.arange(total), [1, total])
        else:
            rows = b.binary("ADD", b.alias(b.arange(seq, sym.sub(0, seq)), [1, 1, seq, 1]), nonpad)
            cols = b.alias(b.arange(total), [1, 1, 1, total])
            keep = _and(b, keep, b.binary("LESS", cols, nonpad))
        if causal:
            keep = _and(b, keep, b.binary("LESS_OR_EQUAL", cols, rows))
            may_empty = may_empty or nonpad is not None
        if window:
            diff = b.binary("SUB", rows, cols)
            if left >= 0:
                keep = _and(b, keep, b.binary("LESS_OR_EQUAL", diff, b.scalar(left, INT64)))
            if right >= 0:
                keep = _and(b, keep, b.binary("GREATER_OR_EQUAL", diff, b.scalar(-right, INT64), BOOL))
            may_empty = True
    if keep is not None:
        bias = b.where(keep, bias if bias is not None else b.scalar(0.0), b.scalar(NEG_INF))

    # ---- scores
    qg = b.alias(q4, [batch, kv_heads, sym.mul(reps, seq), size]) if reps != 1 else q4
    scores = b.matmul(qg, b.transpose(k4, [0, 1, 3, 2]))
    if reps != 1:
        scores = b.alias(scores, [batch, heads, seq, total])
    scale = o.attr_float("scale", math.nan)
    if math.isnan(scale) and isinstance(size, int):
        scale = 1.0 / math.sqrt(size) if size > 0 else math.inf
    if math.isnan(scale):  # the head size is known at run time only: 1 / sqrt(size) computed there
        s = b.unary("SQRT", b.cast(b.arange(1, size), FLOAT))
        s = b.call(UNARY, [s[0]], {"op": "RECIPROCAL"}, [1], FLOAT), [1]
        scores = b.binary("MUL", scores, s if b.dtype == FLOAT else b.cast(s, b.dtype))
    elif not math.isfinite(scale):
        raise ModelError(f"{o.where}: scale is {scale}; it must be a finite number")
    elif scale != 1.0:
        scores = b.binary("MUL", scores, b.scalar(scale))
    softcap = o.attr_float("softcap", 0.0)
    if not math.isfinite(softcap) or softcap < 0:
        raise ModelError(f"{o.where}: softcap is {softcap}; it must be a finite number >= 0")
    raw = scores
    if softcap > 0:
        scores = b.binary("MUL", b.unary("TANH", b.binary("DIV", scores, b.scalar(softcap))), b.scalar(softcap))
    capped = scores
    if bias is not None:
        scores = b.binary("ADD", scores, bias)

    # ---- softmax (in softmax_precision), rows without a key zeroed, and the product with V
    precision = o.attr_int("softmax_precision", 0)
    compute = {0: b.dtype, FLOAT: FLOAT, DOUBLE: FLOAT, FLOAT16: FLOAT16}.get(precision)
    if compute is None:
        o.fail(f"softmax_precision={precision} is not supported (FLOAT, FLOAT16, or DOUBLE computed as FLOAT)")
    x = scores if compute == b.dtype else b.cast(scores, compute)
    empty = None
    if may_empty and bias is not None:
        # a row whose bias is -inf everywhere attends nothing: its probabilities are 0 (its softmax input
        # is made 0 first, so that no -inf - -inf is computed)
        bd = bias[1]
        most = b.call(REDUCE, [bias[0]], {"op": "MAX", "axes": [len(bd) - 1]}, bd[:-1] + [1]), bd[:-1] + [1]
        empty = b.binary("EQUAL", most, b.scalar(NEG_INF))
        x = b.where(empty, b.scalar(0.0, compute), x)
    probs = b.call(SOFTMAX, [x[0]], {"axis": 3}, x[1], compute), x[1]
    if empty is not None:
        probs = b.where(empty, b.scalar(0.0, compute), probs)
    if compute != b.dtype:
        probs = b.cast(probs, b.dtype)
    pg = b.alias(probs, [batch, kv_heads, sym.mul(reps, seq), total]) if reps != 1 else probs
    y = b.matmul(pg, v4)
    if reps != 1:
        y = b.alias(y, [batch, heads, seq, v_size])
    if rank == 3:
        y = b.alias(b.transpose(y, [0, 2, 1, 3]), [batch, seq, sym.mul(heads, v_size)])

    outs = []
    for r in roles:
        if r == 0:
            outs.append(y[0])
        elif r == 1:
            outs.append(b.alias(k4, k4[1])[0])
        elif r == 2:
            outs.append(b.alias(v4, v4[1])[0])
        else:
            qk = {0: raw, 1: capped, 2: scores, 3: probs}[mode]
            outs.append(b.alias(qk, [batch, heads, seq, total])[0])
    finish(o, outs)


register(OpDef("Attention", "onnx_attention", _attention,
               (ATTENTION, MATMUL, SOFTMAX, BINARY, UNARY, WHERE, TRANSPOSE, CONCAT, GATHER, REDUCE, RANGE, FILL,
                CAST)))


# ---------------------------------------------------------------- RotaryEmbedding (ai.onnx, opset 23)


def _rotary_embedding(o: Node) -> None:
    x = o.dims(0)
    if len(x) not in (3, 4):
        raise ModelError(f"{o.where}: X has shape {show(x)}; it must be [batch, sequence, hidden] or "
                         "[batch, num_heads, sequence, head_size]")
    for i, what in ((1, "cos_cache"), (2, "sin_cache")):
        if o.input(i) is None:
            raise ModelError(f"{o.where}: {what} (input {i}) must be given")
    heads = o.attr_int("num_heads", 0)
    rotary_dim = o.attr_int("rotary_embedding_dim", 0)
    interleaved = o.attr_int("interleaved", 0)
    if interleaved not in (0, 1):
        raise ModelError(f"{o.where}: interleaved is {interleaved}; it must be 0 or 1")
    batch, seq = x[0], (x[2] if len(x) == 4 else x[1])
    if len(x) == 3:
        if heads <= 0:
            raise ModelError(f"{o.where}: a 3-D X needs num_heads > 0 (got {heads})")
        head_size = _divide(o, x[2], heads, "X's hidden size {0} is not a multiple of num_heads {1}")
    else:
        head_size = x[3]
        if heads > 0:
            _same(o, x[1], heads, "X has {0} heads; num_heads is {1}")
    c = o.dims(1)
    if o.input(3) is not None:  # caches [max_position, rotary_dim / 2], read at position_ids [batch, sequence]
        _rope_caches(o, 1, head_size, rotary_dim)
        pos = o.dims(3)
        if len(pos) != 2:
            raise ModelError(f"{o.where}: position_ids has shape {show(pos)}; it must be [batch, sequence]")
        _same(o, pos[0], batch, "position_ids' dim 0 is {0}; it must be X's batch size {1}")
        _same(o, pos[1], seq, "position_ids' dim 1 is {0}; it must be X's sequence length {1}")
        operands = [o.input(0), o.input(3), o.input(1), o.input(2)]
    else:  # caches [batch, sequence, rotary_dim / 2], one row per token
        b = Builder(o)
        if len(c) != 3 or len(o.dims(2)) != 3:
            raise ModelError(f"{o.where}: without position_ids, cos_cache {show(c)} and sin_cache "
                             f"{show(o.dims(2))} must be [batch, sequence, rotary_dim / 2]")
        _same(o, c[0], batch, "cos_cache's dim 0 is {0}; it must be X's batch size {1}")
        _same(o, c[1], seq, "cos_cache's dim 1 is {0}; it must be X's sequence length {1}")
        for k in range(3):
            _same(o, o.dims(2)[k], c[k], f"sin_cache's dim {k} is {{0}}; it must be cos_cache's {{1}}")
        flat = [sym.mul(batch, seq), c[2]]
        cos = b.alias(b.input(1), flat)
        sin = b.alias(b.input(2), flat)
        # the caches' shape rules, on the flat table
        if isinstance(c[2], int) and (c[2] <= 0 or rotary_dim > 2 * c[2] or rotary_dim < 0 or rotary_dim % 2):
            raise ModelError(f"{o.where}: the caches have shape {show(c)} and rotary_embedding_dim is {rotary_dim}; "
                             "it must be even, >= 0 and at most twice the caches' last dim")
        ids = b.alias(b.arange(sym.mul(batch, seq)), [batch, seq])
        operands = [o.input(0), ids[0], cos[0], sin[0]]
    if not rotary_dim and isinstance(c[-1], int) and isinstance(head_size, int) and 2 * c[-1] != head_size:
        raise ModelError(f"{o.where}: the caches' last dim {c[-1]} must be half the head size {head_size} "
                         "(rotary_embedding_dim is 0: the whole head rotates)")
    if isinstance(head_size, int) and rotary_dim > head_size:
        raise ModelError(f"{o.where}: rotary_embedding_dim {rotary_dim} is larger than the head size {head_size}")
    replace(o, ROTARY, operands,
            {"interleaved": interleaved, "num_heads": heads if len(x) == 3 else 0,
             "rotary_embedding_dim": rotary_dim, "hipdnn.slots": [0, 1, 2, 3]}, [x])


register(OpDef("RotaryEmbedding", "onnx_rotary_embedding", _rotary_embedding, (ROTARY,)))
