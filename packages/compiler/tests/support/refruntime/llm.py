"""The reference of the LLM kernels (MatMulNBits, RMSNorm, rotary embedding, GroupQueryAttention, the fused
attention); the rotary embedding's and GroupQueryAttention's semantics are kernel_reference's (shared with the
runtime's tests), the fused attention's the manifest's doc string, written out here."""

from __future__ import annotations

import numpy as np
from kernel_reference import gqa_ref, rope_ref


class LlmKernels:
    def fn_kernel_matmul_nbits(self, v):
        def run(i, o, ints, f):
            k, n, _, block = ints
            b, scales, zp = i[1], i[2], i[3] if len(i) > 3 else None
            blocks = -(-k // block)
            q = np.stack([b & 15, b >> 4], axis=-1).reshape(n, blocks, block).astype(np.float64)
            z = (np.full((n, blocks), 8.0) if zp is None else
                 np.stack([zp & 15, zp >> 4], axis=-1).reshape(n, -1)[:, :blocks].astype(np.float64))
            w = ((q - z[..., None]) * scales.reshape(n, blocks, 1)).reshape(n, -1)[:, :k]
            y = i[0].astype(np.float64) @ w.T
            return y + i[4] if len(i) > 4 and i[4] is not None else y
        return self._kernel(v, run)

    def fn_kernel_rms_norm(self, v):
        def run(i, outs, ints, f):
            x = i[0].astype(np.float64)
            for extra in i[2:]:
                x = x + extra if extra is not None else x
            axes = tuple(range(ints[0], x.ndim))
            y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + f[0]) * i[1]
            return [y, x][:len(outs)]
        return self._kernel_outputs(v, run)

    def fn_kernel_rotary_embedding(self, v):
        def run(i, o, ints, f):
            x, pos, cos, sin = i
            interleaved, heads, rdim = ints
            rdim = rdim or 2 * cos.shape[1]
            if x.ndim == 4:
                b, h, s, d = x.shape
                xs = x.transpose(0, 2, 1, 3)
            else:
                b, s, hidden = x.shape
                d = hidden // heads if heads else rdim
                xs = x.reshape(b, s, hidden // d, d)
            if pos.size == b * s and pos.ndim == 2:
                p = pos.reshape(b, s)
            else:
                p = np.broadcast_to(pos[0] + np.arange(s), (b, s))
            y = rope_ref(xs, p[:, :, None], cos, sin, interleaved, rdim)
            return y.transpose(0, 2, 1, 3) if x.ndim == 4 else y.reshape(x.shape)
        return self._kernel(v, run)

    def fn_kernel_group_query_attention(self, v):
        def run(i, outs, ints, f):
            heads, kvh, window, do_rotary, interleaved = ints
            scale, softcap = f
            q = i[0]
            width = q.shape[2]
            packed = i[1] is None
            d = width // (heads + 2 * kvh) if packed else width // heads
            if packed:
                q, k, v_ = q[..., :heads * d], q[..., heads * d:(heads + kvh) * d], q[..., (heads + kvh) * d:]
            else:
                k, v_ = i[1], i[2]
            past_k, past_v = (i[3], i[4]) if len(i) > 3 and i[3] is not None else (None, None)
            seqlens, total = i[5], int(i[6].reshape(-1)[0])
            present_len = outs[1].shape[2]
            cos, sin = (i[7], i[8]) if do_rotary else (None, None)
            out, pk, pv = gqa_ref(q, k, v_, past_k, past_v, seqlens, total, heads, kvh, present_len, cos, sin,
                                  interleaved, scale, softcap, window)
            return [out, pk, pv]
        return self._kernel_outputs(v, run)

    def fn_kernel_attention(self, v):
        def run(i, o, ints, f):
            q, k, v_ = i[0], i[1], i[2]
            mask = i[3] if len(i) > 3 else None
            qh, kvh, causal = ints
            scale, softcap = f
            if q.ndim == 3:  # [B, S, heads * D] -> [B, heads, S, D]
                def split(x, h):
                    return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3)
                q4, k4, v4 = split(q, qh), split(k, kvh), split(v_, kvh)
            else:
                q4, k4, v4 = q, k, v_
            b, heads, s, d = q4.shape
            kv_heads, t = k4.shape[1], k4.shape[2]
            if heads % kv_heads or k4.shape[0] != b or v4.shape[:3] != k4.shape[:3] or k4.shape[3] != d:
                raise ValueError("attention: Q, K, V shapes do not agree")
            rep = heads // kv_heads
            k4 = np.repeat(k4.astype(np.float64), rep, axis=1)
            v4 = np.repeat(v4.astype(np.float64), rep, axis=1)
            score = (q4.astype(np.float64) @ k4.transpose(0, 1, 3, 2)) * (scale if scale else 1 / np.sqrt(d))
            if softcap > 0:
                score = softcap * np.tanh(score / softcap)
            keep = np.ones((b, heads, s, t), bool)
            if mask is not None:
                if mask.ndim > 4:
                    raise ValueError("attention: the mask has rank > 4")
                m = np.broadcast_to(mask, (b, heads, s, t))  # raises where it does not broadcast
                if mask.dtype == np.bool_:
                    keep &= m
                else:
                    score = score + m.astype(np.float64)
            if causal:
                keep &= np.arange(t)[None, :] <= np.arange(s)[:, None]
            score = np.where(keep, score, -np.inf)
            top = score.max(axis=-1, keepdims=True)
            empty = top == -np.inf
            e = np.where(empty, 0.0, np.exp(score - np.where(empty, 0.0, top)))
            total = e.sum(axis=-1, keepdims=True)
            p = np.where(empty, 0.0, e / np.where(total == 0, 1.0, total))
            y = p @ v4
            return y.transpose(0, 2, 1, 3).reshape(b, s, -1) if q.ndim == 3 else y
        return self._kernel(v, run)
