"""numpy references of kernels whose semantics are involved enough that the compiler's reference runtime
(packages/compiler/tests/support/refruntime) and the runtime's kernel tests (packages/runtime/tests)
would otherwise each write them: Resize (resize_ref), GridSample (grid_sample_ref), the rotary embedding
(rope_ref) and GroupQueryAttention (gqa_ref), as the manifest's kernels of those names define them.

The kernels' semantics are part of the contract between the compiler and the runtime, so their
executable reference lives beside the manifest, not in either package: neither package's tests import
the other's. Test code only (numpy), never part of the ABI tool (hipdnn_ep_abi stays stdlib only); the
two test suites put this folder on their path (pytest's `pythonpath`).
"""

from __future__ import annotations

import itertools

import numpy as np


def resize_axis_weights(mode, coord, nearest, exclude, antialias, a, n_in, n_out, scale, roi_start, roi_end):
    """Resize along one axis as a [out, in] weight matrix and the rows outside the roi (extrapolated):
    the ONNX reference's per-coordinate taps, coordinates computed in float32 as onnxruntime does."""
    f = np.float32
    m = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, bool)
    for o in range(n_out):
        xo, lo, li, s = f(o), f(n_out), f(n_in), f(scale)
        if coord == 1:
            adj = lo / (s * li)
            x = li / f(2) * (f(1) - adj) + (xo + f(0.5)) / s - f(0.5)
        elif coord == 2:
            x = (xo + f(0.5)) / s - f(0.5) if n_out > 1 else f(0)
        elif coord == 3:
            x = f(0) if n_out == 1 else xo * (li - f(1)) / (lo - f(1))
        elif coord == 4:
            x = xo / s
        elif coord == 5:
            x = (xo + f(0.5)) / s
        elif coord == 6:
            rs, re = f(roi_start), f(roi_end)
            x = (rs * (li - f(1)) + xo * (re - rs) * (li - f(1)) / (lo - f(1)) if n_out > 1
                 else f(0.5) * (rs + re) * (li - f(1)))
        else:
            x = (xo + f(0.5)) / s - f(0.5)
        x = float(x)
        if coord == 6 and (x < 0 or x > n_in - 1):
            outside[o] = True
            continue
        if mode == 0:
            if nearest == 1:
                i = np.floor(x + 0.5) if x >= 0 else -np.floor(-x + 0.5)
            elif nearest == 2:
                i = np.floor(x)
            elif nearest == 3:
                i = np.ceil(x)
            elif nearest == 4:
                i = np.ceil(x) if scale < 1 else np.trunc(x)
            else:
                i = np.floor(x) if x == int(x) + 0.5 else (np.floor(x + 0.5) if x >= 0 else -np.floor(-x + 0.5))
            m[o, min(max(int(i), 0), n_in - 1)] = 1.0
            continue
        base = int(np.ceil(x)) - 1
        ratio = x - base
        ss = min(scale, 1.0) if antialias else 1.0
        support = 1.0 if mode == 1 else 2.0
        start = int(np.floor(-support / ss)) + 1
        js = np.arange(start, 2 - start)
        dist = np.abs((js - ratio) * ss)
        if mode == 1:
            c = np.maximum(0.0, 1.0 - dist)
        else:
            c = np.where(dist <= 1, ((a + 2) * dist - (a + 3)) * dist * dist + 1,
                         np.where(dist < 2, ((a * dist - 5 * a) * dist + 8 * a) * dist - 4 * a, 0.0))
        idx = base + js
        if exclude:
            c = np.where((idx >= 0) & (idx < n_in), c, 0.0)
        c = c / c.sum()
        for k, wk in zip(np.clip(idx, 0, n_in - 1), c, strict=True):
            m[o, k] += wk
    return m, outside


def resize_ref(x, mode, coord, nearest, exclude, antialias, a, extrapolation, scales, roi_starts, roi_ends, out_shape):
    """Resize as one weight matrix per axis (separable), extrapolated positions set afterwards."""
    y = x.astype(np.float64)
    mask = np.zeros(out_shape, bool)
    for d, (n_in, n_out) in enumerate(zip(x.shape, out_shape, strict=True)):
        s = scales[d] if scales[d] != 0 else np.float32(n_out) / np.float32(n_in)
        m, outside = resize_axis_weights(mode, coord, nearest, exclude, antialias, a, n_in, n_out, float(s),
                                         roi_starts[d], roi_ends[d])
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, d, 0), axes=(1, 0)), 0, d)
        shape = [1] * len(out_shape)
        shape[d] = n_out
        mask |= outside.reshape(shape)
    y[mask] = extrapolation
    return y


def grid_sample_ref(x, grid, mode, padding, align):
    """GridSample per output position and tap, in float64 (the ONNX reference's algorithm)."""
    x, grid = x.astype(np.float64), grid.astype(np.float64)
    n, c = x.shape[:2]
    sp = x.shape[2:]
    r = len(sp)
    out = grid.shape[1:-1]
    y = np.zeros((n, c, *out))

    def reflect(v, lo, hi):
        rng = hi - lo
        if rng <= 0:
            return 0.0
        if v < lo:
            dx = lo - v
            k = int(dx / rng)
            rr = dx - k * rng
            return lo + rr if k % 2 == 0 else hi - rr
        if v > hi:
            dx = v - hi
            k = int(dx / rng)
            rr = dx - k * rng
            return hi - rr if k % 2 == 0 else lo + rr
        return v

    def bounds(size):
        return (0.0, size - 1.0) if align else (-0.5, size - 0.5)

    def index(i, size):
        if padding == 0:
            return i if 0 <= i < size else None
        if padding == 1:
            return min(max(i, 0), size - 1)
        return min(max(int(reflect(float(i), *bounds(size))), 0), size - 1)

    def cubic(d, a=-0.75):
        d = abs(d)
        if d <= 1:
            return ((a + 2) * d - (a + 3)) * d * d + 1
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0

    for b in range(n):
        for o in np.ndindex(*out):
            taps = []
            for d in range(r):
                g = grid[(b, *o, r - 1 - d)]
                s = sp[d]
                v = (g + 1) / 2 * (s - 1) if align else ((g + 1) * s - 1) / 2
                if padding == 1 and mode != 2:  # cubic pads each tap's index only (as onnxruntime)
                    v = min(max(v, 0.0), s - 1.0)
                elif padding == 2 and mode != 2:
                    v = reflect(v, *bounds(s))
                if mode == 1:
                    taps.append([(int(np.rint(v)), 1.0)])
                elif mode == 0:
                    f = np.floor(v)
                    taps.append([(int(f), 1 - (v - f)), (int(f) + 1, v - f)])
                else:
                    f = np.floor(v)
                    taps.append([(int(f) - 1 + j, cubic(v - f - (j - 1))) for j in range(4)])
            for combo in itertools.product(*taps):
                idx = [index(i, sp[d]) for d, (i, _) in enumerate(combo)]
                if any(i is None for i in idx):
                    continue
                w = np.prod([wt for _, wt in combo])
                y[(b, slice(None), *o)] += w * x[(b, slice(None), *idx)]
    return y


def rope_ref(x, pos, cos, sin, interleaved, rotary_dim=None):
    """x [..., head_size] with pos broadcast to x's leading dims (without the head dim)."""
    x = x.astype(np.float64).copy()
    half = cos.shape[1] if rotary_dim is None else rotary_dim // 2
    c, s = cos[pos][..., :half].astype(np.float64), sin[pos][..., :half].astype(np.float64)
    if interleaved:
        x1, x2 = x[..., 0:2 * half:2].copy(), x[..., 1:2 * half:2].copy()
        x[..., 0:2 * half:2], x[..., 1:2 * half:2] = x1 * c - x2 * s, x2 * c + x1 * s
    else:
        x1, x2 = x[..., :half].copy(), x[..., half:2 * half].copy()
        x[..., :half], x[..., half:2 * half] = x1 * c - x2 * s, x2 * c + x1 * s
    return x


def gqa_ref(q, k, v, past_k, past_v, seqlens_k, total, heads, kv_heads, present_len, cos=None, sin=None,
            interleaved=False, scale=0.0, softcap=0.0, window=-1):
    """The op's semantics in numpy: q [B,S,H*D], k/v [B,S,KV*D], past [B,KV,P,D] -> output, present K, V."""
    bsz, seq, _ = q.shape
    d = q.shape[2] // heads
    first = seq == total
    q = q.reshape(bsz, seq, heads, d).astype(np.float64)
    k = k.reshape(bsz, seq, kv_heads, d).astype(np.float64)
    v = v.reshape(bsz, seq, kv_heads, d).astype(np.float64)
    pk = np.zeros((bsz, kv_heads, present_len, d))
    pv = np.zeros((bsz, kv_heads, present_len, d))
    out = np.zeros((bsz, seq, heads, d))
    scale = scale or 1 / np.sqrt(d)
    for b in range(bsz):
        valid = int(seqlens_k[b]) + 1
        past_len = 0 if first else valid - seq
        if past_len:
            pk[b, :, :past_len], pv[b, :, :past_len] = past_k[b, :, :past_len], past_v[b, :, :past_len]
        pos = np.array([(s if s < valid else 1) if first else past_len + s for s in range(seq)])
        kb, qb = k[b], q[b]
        if cos is not None:
            kb = rope_ref(kb, pos[:, None], cos, sin, interleaved)
            qb = rope_ref(qb, pos[:, None], cos, sin, interleaved)
        pk[b, :, past_len:past_len + seq] = kb.transpose(1, 0, 2)
        pv[b, :, past_len:past_len + seq] = v[b].transpose(1, 0, 2)
        for h in range(heads):
            g = h // (heads // kv_heads)
            for s in range(seq):
                end = min(past_len + s + 1, valid)
                begin = max(0, end - window) if window > 0 else 0
                sc = pk[b, g, begin:end] @ qb[s, h] * scale
                if softcap > 0:
                    sc = softcap * np.tanh(sc / softcap)
                p = np.exp(sc - sc.max())
                out[b, s, h] = (p / p.sum()) @ pv[b, g, begin:end]
    return out.reshape(bsz, seq, heads * d), pk, pv


def attention_ref(q, k, v, mask=None, q_heads=0, kv_heads=0, causal=False, scale=0.0, softcap=0.0):
    """hipdnn_ep_kernel_attention in float64, written from ONNX Attention (no KV cache): rank 3 inputs
    are split into heads and the output merged back; a query whose every key is masked gets zeros."""
    rank = q.ndim
    if rank == 3:
        b, sq, sk = q.shape[0], q.shape[1], k.shape[1]

        def heads(x, n):
            return x.reshape(b, x.shape[1], n, -1).transpose(0, 2, 1, 3)

        q, k, v = heads(q, q_heads), heads(k, kv_heads), heads(v, kv_heads)
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    reps = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, reps, axis=1), np.repeat(v, reps, axis=1)
    scale = scale or 1.0 / np.sqrt(q.shape[-1])
    scores = scale * q @ k.transpose(0, 1, 3, 2)
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
    bias = np.zeros(scores.shape[-2:])
    if mask is not None:
        bias = np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask.astype(np.float64)
    if causal:
        sq, sk = scores.shape[-2:]
        bias = bias + np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None], 0.0, -np.inf)
    scores = scores + bias
    most = scores.max(axis=-1, keepdims=True)
    empty = np.isneginf(most)
    e = np.exp(scores - np.where(empty, 0.0, most))
    total = e.sum(axis=-1, keepdims=True)
    probs = np.where(empty, 0.0, e / np.where(total == 0, 1.0, total))
    y = probs @ v
    if rank == 3:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return y
