"""The reference of the LLM kernels (MatMulNBits, RMSNorm, rotary embedding, GroupQueryAttention)."""

from __future__ import annotations

import numpy as np


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

    @staticmethod
    def _rope(x, pos, cos, sin, interleaved, rotary_dim):
        """x [..., head] rotated at positions pos (broadcast to x's leading dims)."""
        x = x.astype(np.float64).copy()
        half = rotary_dim // 2
        c, s = cos[pos][..., :half], sin[pos][..., :half]
        i1 = slice(0, 2 * half, 2) if interleaved else slice(0, half)
        i2 = slice(1, 2 * half, 2) if interleaved else slice(half, 2 * half)
        x1, x2 = x[..., i1].copy(), x[..., i2].copy()
        x[..., i1], x[..., i2] = x1 * c - x2 * s, x2 * c + x1 * s
        return x

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
            y = self._rope(xs, p[:, :, None], cos, sin, interleaved, rdim)
            return y.transpose(0, 2, 1, 3) if x.ndim == 4 else y.reshape(x.shape)
        return self._kernel(v, run)

    def fn_kernel_group_query_attention(self, v):
        def run(i, outs, ints, f):
            heads, kvh, window, do_rotary, interleaved = ints
            scale, softcap = f
            q = i[0]
            bsz, seq, width = q.shape
            packed = i[1] is None
            d = width // (heads + 2 * kvh) if packed else width // heads
            if packed:
                q, k, v_ = q[..., :heads * d], q[..., heads * d:(heads + kvh) * d], q[..., (heads + kvh) * d:]
            else:
                k, v_ = i[1], i[2]
            past_k, past_v = (i[3], i[4]) if len(i) > 3 and i[3] is not None else (None, None)
            seqlens, total = i[5], int(i[6].reshape(-1)[0])
            present_len = outs[1].shape[2]
            q = q.reshape(bsz, seq, heads, d).astype(np.float64)
            k = k.reshape(bsz, seq, kvh, d).astype(np.float64)
            v_ = v_.reshape(bsz, seq, kvh, d).astype(np.float64)
            pk, pv = np.zeros((bsz, kvh, present_len, d)), np.zeros((bsz, kvh, present_len, d))
            out = np.zeros((bsz, seq, heads, d))
            scale = scale or 1 / np.sqrt(d)
            first = seq == total
            for b in range(bsz):
                valid = int(seqlens[b]) + 1
                past = 0 if first else valid - seq
                if past:
                    pk[b, :, :past], pv[b, :, :past] = past_k[b, :, :past], past_v[b, :, :past]
                pos = np.array([(s if s < valid else 1) if first else past + s for s in range(seq)])
                kb, qb = k[b], q[b]
                if do_rotary:
                    rdim = 2 * i[7].shape[1]
                    kb = self._rope(kb, pos[:, None], i[7], i[8], interleaved, rdim)
                    qb = self._rope(qb, pos[:, None], i[7], i[8], interleaved, rdim)
                pk[b, :, past:past + seq], pv[b, :, past:past + seq] = kb.transpose(1, 0, 2), v_[b].transpose(1, 0, 2)
                for h in range(heads):
                    g = h // (heads // kvh)
                    for s in range(seq):
                        end = min(past + s + 1, valid)
                        begin = max(0, end - window) if window > 0 else 0
                        sc = pk[b, g, begin:end] @ qb[s, h] * scale
                        if softcap > 0:
                            sc = softcap * np.tanh(sc / softcap)
                        p = np.exp(sc - sc.max())
                        out[b, s, h] = (p / p.sum()) @ pv[b, g, begin:end]
            return [out.reshape(bsz, seq, heads * d), pk, pv]
        return self._kernel_outputs(v, run)
