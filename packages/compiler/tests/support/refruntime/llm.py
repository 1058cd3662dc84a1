"""The reference of the LLM kernels (MatMulNBits and its gated form, SiLU(A x W_gate) * (A x W_up), RMSNorm,
rotary embedding, GroupQueryAttention, the fused attention); the rotary embedding's, GroupQueryAttention's and the
fused attention's semantics are kernel_reference's (shared with the runtime's tests)."""

from __future__ import annotations

import numpy as np
from kernel_reference import attention_ref, gqa_ref, rope_ref


def _dequantized(b, scales, zp, k: int, n: int, block: int) -> np.ndarray:
    """MatMulNBits' 4-bit weight [N, K] from B, scales and zero points (None: 8)."""
    blocks = -(-k // block)
    q = np.stack([b & 15, b >> 4], axis=-1).reshape(n, blocks, block).astype(np.float64)
    z = (np.full((n, blocks), 8.0) if zp is None else
         np.stack([zp & 15, zp >> 4], axis=-1).reshape(n, -1)[:, :blocks].astype(np.float64))
    return ((q - z[..., None]) * scales.reshape(n, blocks, 1)).reshape(n, -1)[:, :k]


class LlmKernels:
    def fn_kernel_matmul_nbits(self, v):
        def run(i, o, ints, f):
            k, n, _, block = ints
            y = i[0].astype(np.float64) @ _dequantized(i[1], i[2], i[3] if len(i) > 3 else None, k, n, block).T
            return y + i[4] if len(i) > 4 and i[4] is not None else y
        return self._kernel(v, run)

    def fn_kernel_matmul_nbits_silu_mul(self, v):
        def run(i, o, ints, f):
            k, n, _, block = ints
            i = i + [None] * (7 - len(i))
            a = i[0].astype(np.float64)
            gate = a @ _dequantized(i[1], i[2], i[3], k, n, block).T
            up = a @ _dequantized(i[4], i[5], i[6], k, n, block).T
            return gate * 0.5 * (1 + np.tanh(gate / 2)) * up  # SiLU(gate) * up, sigmoid without overflow
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

    def fn_kernel_skip_layer_norm(self, v):
        def run(i, outs, ints, f):
            x, scale, beta = i[0].astype(np.float64), i[1], (i[2] if len(i) > 2 else None)
            for extra in i[3:]:
                x = x + extra if extra is not None else x
            axes = tuple(range(ints[0], x.ndim))
            d = x - x.mean(axis=axes, keepdims=True)
            y = d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + f[0]) * scale
            y = y + beta if beta is not None else y
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
            mask = i[3] if len(i) > 3 else None
            if mask is not None:  # the kernel refuses a mask that does not broadcast to the scores
                q4 = i[0].shape if i[0].ndim == 4 else (i[0].shape[0], ints[0], i[0].shape[1], 0)
                np.broadcast_shapes(mask.shape, (q4[0], q4[1], q4[2], i[1].shape[-2]))
                if mask.ndim > 4:
                    raise ValueError("attn_mask has rank > 4")
            return attention_ref(i[0], i[1], i[2], mask, ints[0], ints[1], bool(ints[2]), f[0], f[1])
        return self._kernel(v, run)
