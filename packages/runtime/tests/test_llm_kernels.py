"""The LLM kernels (matmul_nbits, rms_norm, skip_layer_norm, rotary_embedding, group_query_attention,
attention) on the CPU backend against numpy references written from the com.microsoft and ONNX op
definitions."""

from __future__ import annotations

import pytest
from kernel_reference import attention_ref, gqa_ref, rope_ref
from kernel_util import BINARY

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

F32, F16 = np.float32, np.float16
InvalidArgumentError = rt.InvalidArgumentError


@pytest.fixture(scope="module")
def state():
    s = rt.State(backend="cpu")
    yield s
    s.close()


def call(state, kernel, inputs, outputs, ints=(), floats=()):
    """Calls hipdnn_ep_kernel_<kernel>; None inputs are absent; outputs are (shape, dtype) pairs."""
    ins = [np.array(x, order="C") if x is not None else None for x in inputs]
    outs = [np.full(shape, 77, dtype=dtype) for shape, dtype in outputs]
    _core.call_kernel(state, "hipdnn_ep_kernel_" + kernel, ins, outs, list(ints), [float(f) for f in floats])
    return outs


def close(actual, expected, dtype, tol=2e-5):
    tol = 3e-3 if dtype == F16 else tol
    np.testing.assert_allclose(actual.astype(F32), np.asarray(expected, F32), rtol=tol, atol=tol)


# ---------------------------------------------------------------- matmul_nbits

def quantized(rng, n, k, block, zero_points, dtype):
    blocks = -(-k // block)
    b = rng.integers(0, 256, size=(n, blocks, block // 2), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.1, size=(n, blocks)).astype(dtype)
    zp = rng.integers(0, 256, size=(n, (blocks + 1) // 2), dtype=np.uint8) if zero_points else None
    return b, scales, zp


def dequantized(b, scales, zp, k):
    n, blocks, half = b.shape
    q = np.stack([b & 15, b >> 4], axis=-1).reshape(n, blocks, 2 * half).astype(np.float64)
    if zp is None:
        z = np.full((n, blocks), 8.0)
    else:
        z = np.stack([zp & 15, zp >> 4], axis=-1).reshape(n, -1)[:, :blocks].astype(np.float64)
    w = (q - z[..., None]) * scales.astype(np.float64)[..., None]
    return w.reshape(n, -1)[:, :k].T


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("block", [16, 32, 64, 128])
@pytest.mark.parametrize("zero_points", [False, True])
@pytest.mark.parametrize("a_shape", [(1, 1, 256), (3, 256), (2, 5, 256), (4, 200)])
def test_matmul_nbits(state, dtype, block, zero_points, a_shape):
    rng = np.random.default_rng(block)
    k, n = a_shape[-1], 24
    b, scales, zp = quantized(rng, n, k, block, zero_points, dtype)
    a = rng.standard_normal(a_shape).astype(dtype)
    (y,) = call(state, "matmul_nbits", [a, b, scales, zp], [((*a_shape[:-1], n), dtype)], ints=(k, n, 4, block))
    close(y, a.astype(np.float64) @ dequantized(b, scales, zp, k), dtype, tol=1e-4)


def test_matmul_nbits_bias_and_flat_scales(state):
    rng = np.random.default_rng(1)
    k, n, block = 64, 8, 32
    b, scales, zp = quantized(rng, n, k, block, True, F32)
    a, bias = rng.standard_normal((2, k)).astype(F32), rng.standard_normal(n).astype(F32)
    (y,) = call(state, "matmul_nbits", [a, b, scales.reshape(-1), zp.reshape(-1), bias], [((2, n), F32)],
                ints=(k, n, 4, block))
    close(y, a @ dequantized(b, scales, zp, k) + bias, F32, tol=1e-4)


@pytest.mark.parametrize("ints,message", [((64, 8, 8, 32), "bits 8"), ((64, 8, 4, 24), "block_size 24"),
                                          ((32, 8, 4, 32), "must end with K = 32"),
                                          ((64, 9, 4, 32), "B.* expected 288")])
def test_matmul_nbits_refuses_bad_arguments(state, ints, message):
    rng = np.random.default_rng(2)
    b, scales, _ = quantized(rng, 8, 64, 32, False, F32)
    a = np.ones((1, 64), F32)
    with pytest.raises(rt.HipdnnEpError, match=message):
        call(state, "matmul_nbits", [a, b, scales], [((1, ints[1]), F32)], ints=ints)


def silu_mul_ref(a, gate, up, k):
    """SiLU(A x gate) * (A x up) in float64; gate and up are (B, scales, zero points)."""
    g = a.astype(np.float64) @ dequantized(*gate, k)
    u = a.astype(np.float64) @ dequantized(*up, k)
    return g / (1.0 + np.exp(-g)) * u


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("block", [16, 32, 128])
@pytest.mark.parametrize("zero_points", [(False, False), (True, True), (True, False), (False, True)])
@pytest.mark.parametrize("a_shape", [(1, 1, 256), (2, 5, 256), (3, 200)])
def test_matmul_nbits_silu_mul(state, dtype, block, zero_points, a_shape):
    rng = np.random.default_rng(block + 7)
    k, n = a_shape[-1], 24
    gate = quantized(rng, n, k, block, zero_points[0], dtype)
    up = quantized(rng, n, k, block, zero_points[1], dtype)
    a = rng.standard_normal(a_shape).astype(dtype)
    (y,) = call(state, "matmul_nbits_silu_mul", [a, *gate, *up], [((*a_shape[:-1], n), dtype)], ints=(k, n, 4, block))
    close(y, silu_mul_ref(a, gate, up, k), dtype, tol=1e-4)


def test_matmul_nbits_silu_mul_is_the_two_products_and_silu_mul(state):
    """The fused call equals matmul_nbits twice and binary SILU_MUL (float32: the same sums in float)."""
    rng = np.random.default_rng(3)
    k, n, block = 96, 40, 32
    gate, up = quantized(rng, n, k, block, True, F32), quantized(rng, n, k, block, False, F32)
    a = rng.standard_normal((4, k)).astype(F32)
    (y,) = call(state, "matmul_nbits_silu_mul", [a, *gate, *up], [((4, n), F32)], ints=(k, n, 4, block))
    (g,) = call(state, "matmul_nbits", [a, *gate], [((4, n), F32)], ints=(k, n, 4, block))
    (u,) = call(state, "matmul_nbits", [a, *up], [((4, n), F32)], ints=(k, n, 4, block))
    (want,) = call(state, "binary", [g, u], [((4, n), F32)], ints=(BINARY["SILU_MUL"],))
    close(y, want, F32, tol=1e-5)


@pytest.mark.parametrize("drop,message", [(4, "input 4 .B of up. and its scales are required"),
                                          (5, "input 4 .B of up. and its scales are required")])
def test_matmul_nbits_silu_mul_needs_both_weights(state, drop, message):
    rng = np.random.default_rng(4)
    gate, up = quantized(rng, 8, 64, 32, False, F32), quantized(rng, 8, 64, 32, False, F32)
    inputs = [np.ones((1, 64), F32), *gate, *up]
    inputs[drop] = None
    with pytest.raises(rt.HipdnnEpError, match=message):
        call(state, "matmul_nbits_silu_mul", inputs, [((1, 8), F32)], ints=(64, 8, 4, 32))


@pytest.mark.parametrize("bad,message", [("up_rows", r"input 4 \(B of up\) has .* expected 256"),
                                         ("up_scales", r"input 5 \(scales of up\) has .* expected 16"),
                                         ("gate_zp", r"input 3 \(zero points of the gate\) has .* expected 8"),
                                         ("output", "output 0 has dims")])
def test_matmul_nbits_silu_mul_refuses_mismatched_weights(state, bad, message):
    rng = np.random.default_rng(5)
    k, n, block = 64, 8, 32
    gate, up = list(quantized(rng, n, k, block, True, F32)), list(quantized(rng, n, k, block, False, F32))
    out = (1, n)
    if bad == "up_rows":
        up[0] = up[0][:4]
    elif bad == "up_scales":
        up[1] = up[1].reshape(-1)[:10]
    elif bad == "gate_zp":
        gate[2] = gate[2].reshape(-1)[:5]
    else:
        out = (1, n + 1)
    with pytest.raises(rt.HipdnnEpError, match=message):
        call(state, "matmul_nbits_silu_mul", [np.ones((1, k), F32), *gate, *up], [(out, F32)], ints=(k, n, 4, block))


# ---------------------------------------------------------------- rms_norm

def rms_ref(x, scale, eps, skip=None, bias=None):
    s = x.astype(np.float64) + (0 if skip is None else skip) + (0 if bias is None else bias)
    return s / np.sqrt((s * s).mean(axis=-1, keepdims=True) + eps) * scale, s


@pytest.mark.parametrize("dtype", [F32, F16])
def test_rms_norm_simplified(state, dtype):
    rng = np.random.default_rng(3)
    x, scale = rng.standard_normal((2, 3, 64)).astype(dtype), rng.standard_normal(64).astype(dtype)
    (y,) = call(state, "rms_norm", [x, scale], [(x.shape, dtype)], ints=(2,), floats=(1e-5,))
    close(y, rms_ref(x, scale, 1e-5)[0], dtype)


@pytest.mark.parametrize("with_bias", [False, True])
def test_rms_norm_with_skip_returns_the_sum(state, with_bias):
    rng = np.random.default_rng(4)
    x, skip = rng.standard_normal((2, 5, 32)).astype(F32), rng.standard_normal((2, 5, 32)).astype(F32)
    scale, bias = rng.standard_normal(32).astype(F32), rng.standard_normal(32).astype(F32) if with_bias else None
    y, s = call(state, "rms_norm", [x, scale, skip, bias], [(x.shape, F32), (x.shape, F32)], ints=(2,), floats=(1e-6,))
    want_y, want_s = rms_ref(x, scale, 1e-6, skip, bias)
    close(y, want_y, F32)
    close(s, want_s, F32)


def skip_layer_norm_ref(x, scale, beta, eps, skip=None, bias=None):
    s = x.astype(np.float64) + (0 if skip is None else skip) + (0 if bias is None else bias)
    d = s - s.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps) * scale + (0 if beta is None else beta), s


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("inputs", ["plain", "beta", "skip+sum", "skip+bias+beta+sum", "broadcast-skip"])
def test_skip_layer_norm(state, dtype, inputs):
    rng = np.random.default_rng(len(inputs))
    x = (rng.standard_normal((2, 5, 48)) * 3 + 2).astype(dtype)  # a mean far from 0: the centering shows
    scale = rng.standard_normal(48).astype(dtype)
    beta = rng.standard_normal(48).astype(dtype) if "beta" in inputs else None
    skip = rng.standard_normal((5, 48) if "broadcast" in inputs else (2, 5, 48)).astype(dtype) if "skip" in inputs \
        else None
    bias = rng.standard_normal(48).astype(dtype) if "bias" in inputs else None
    outputs = [(x.shape, dtype)] * (2 if "sum" in inputs else 1)
    got = call(state, "skip_layer_norm", [x, scale, beta, skip, bias], outputs, ints=(2,), floats=(1e-5,))
    want_y, want_s = skip_layer_norm_ref(x, scale, beta, 1e-5, skip, bias)
    close(got[0], want_y, dtype)
    if "sum" in inputs:
        close(got[1], want_s, dtype)


def test_skip_layer_norm_refuses_bad_inputs(state):
    x, scale = np.ones((2, 8), F32), np.ones(8, F32)
    with pytest.raises(InvalidArgumentError, match="input 1 is absent but required"):
        call(state, "skip_layer_norm", [x, None, None, x], [(x.shape, F32)], ints=(1,), floats=(1e-5,))
    with pytest.raises(InvalidArgumentError, match=r"Skip dims \[3, 8\] do not broadcast to \[2, 8\]"):
        call(state, "skip_layer_norm", [x, scale, None, np.ones((3, 8), F32)], [(x.shape, F32)], ints=(1,),
             floats=(1e-5,))
    with pytest.raises(InvalidArgumentError, match=r"B dims \[7\] do not broadcast to \[8\]"):
        call(state, "skip_layer_norm", [x, scale, np.ones(7, F32)], [(x.shape, F32)], ints=(1,), floats=(1e-5,))


def test_rms_norm_over_two_axes(state):
    x = np.random.default_rng(5).standard_normal((3, 4, 8)).astype(F32)
    scale = np.full((4, 8), 2.0, F32)
    (y,) = call(state, "rms_norm", [x, scale], [(x.shape, F32)], ints=(1,), floats=(0.0,))
    flat = x.reshape(3, 32).astype(np.float64)
    close(y, (flat / np.sqrt((flat ** 2).mean(-1, keepdims=True)) * 2).reshape(x.shape), F32)


# ---------------------------------------------------------------- rotary

def rope_caches(max_pos, rotary_dim, dtype):
    inv = 1.0 / (10000 ** (np.arange(rotary_dim // 2) * 2 / rotary_dim))
    ang = np.arange(max_pos)[:, None] * inv[None]
    return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_bsd(state, dtype, interleaved):
    rng = np.random.default_rng(6)
    b, s, h, d = 2, 5, 3, 16
    x = rng.standard_normal((b, s, h * d)).astype(dtype)
    pos = rng.integers(0, 40, (b, s)).astype(np.int64)
    cos, sin = rope_caches(40, d, dtype)
    (y,) = call(state, "rotary_embedding", [x, pos, cos, sin], [(x.shape, dtype)], ints=(interleaved, h, 0))
    want = rope_ref(x.reshape(b, s, h, d), pos[:, :, None], cos, sin, interleaved).reshape(x.shape)
    close(y, want, dtype)


def test_rotary_embedding_bnsh_partial_dim_and_offset(state):
    rng = np.random.default_rng(7)
    b, h, s, d = 1, 2, 4, 16
    x = rng.standard_normal((b, h, s, d)).astype(F32)
    cos, sin = rope_caches(32, 16, F32)
    (y,) = call(state, "rotary_embedding", [x, np.array([3], np.int64), cos, sin], [(x.shape, F32)], ints=(0, 0, 8))
    pos = (3 + np.arange(s))[None, None, :]
    close(y, rope_ref(x, pos, cos, sin, False, rotary_dim=8), F32)


def test_rotary_embedding_refuses_a_position_outside_the_cache(state):
    cos, sin = rope_caches(8, 16, F32)
    x = np.ones((1, 2, 16), F32)
    with pytest.raises(InvalidArgumentError, match="position 8 is outside"):
        call(state, "rotary_embedding", [x, np.array([[0, 8]], np.int64), cos, sin], [(x.shape, F32)], ints=(0, 0, 0))


# ---------------------------------------------------------------- group_query_attention

def gqa_arguments(q, k, v, past_k, past_v, seqlens_k, total, heads, kv_heads, present_len, cos=None, sin=None,
                  packed=False):
    """The kernel's inputs (q, k, v packed into the first when asked; None for an absent one) and its
    outputs as (shape, dtype) pairs: output [B,S,H*D], present key and value [B,KV,present_len,D]."""
    dtype = q.dtype
    bsz, seq, _ = q.shape
    d = q.shape[2] // heads
    inputs = [np.concatenate([q, k, v], axis=-1), None, None] if packed else [q, k, v]
    inputs += [past_k, past_v, np.asarray(seqlens_k, np.int32), np.array([total], np.int32)]
    if cos is not None:
        inputs += [cos, sin]
    outputs = [((bsz, seq, heads * d), dtype), ((bsz, kv_heads, present_len, d), dtype),
               ((bsz, kv_heads, present_len, d), dtype)]
    return inputs, outputs


def run_gqa(state, q, k, v, past_k, past_v, seqlens_k, total, heads, kv_heads, present_len, cos=None, sin=None,
            interleaved=0, scale=0.0, softcap=0.0, window=-1, packed=False):
    inputs, outputs = gqa_arguments(q, k, v, past_k, past_v, seqlens_k, total, heads, kv_heads, present_len, cos,
                                    sin, packed)
    ints = (heads, kv_heads, window, int(cos is not None), interleaved)
    return call(state, "group_query_attention", inputs, outputs, ints=ints, floats=(scale, softcap))


def gqa_case(rng, dtype, bsz, seq, past, valid, heads, kv_heads, d):
    """Random q, k, v and past caches (None without a past) for sequences of `valid` lengths, with the
    op's length inputs: returns q, k, v, past_k, past_v, seqlens_k, total_sequence_length, present length."""
    q = rng.standard_normal((bsz, seq, heads * d)).astype(dtype)
    k = rng.standard_normal((bsz, seq, kv_heads * d)).astype(dtype)
    v = rng.standard_normal((bsz, seq, kv_heads * d)).astype(dtype)
    past_k = rng.standard_normal((bsz, kv_heads, past, d)).astype(dtype) if past else None
    past_v = rng.standard_normal((bsz, kv_heads, past, d)).astype(dtype) if past else None
    total = max(valid) if seq != max(valid) or past == 0 else seq
    return q, k, v, past_k, past_v, [x - 1 for x in valid], total, max(past, total)


CASES = {  # name: batch, seq, past (cache length), valid lengths, heads, kv_heads, head_size
    "prompt": (1, 7, 0, [7], 4, 2, 16),
    "prompt-batch-padded": (2, 6, 0, [6, 4], 4, 2, 16),
    "decode": (2, 1, 9, [10, 10], 8, 2, 32),
    "decode-ragged": (2, 1, 9, [10, 6], 4, 4, 16),
    "continuation": (1, 5, 6, [11], 6, 2, 8),
}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_group_query_attention(state, case, rotary, packed, dtype):
    bsz, seq, past, valid, heads, kv_heads, d = CASES[case]
    rng = np.random.default_rng(len(case) + 10 * rotary)
    q, k, v, past_k, past_v, seqlens, total, present = gqa_case(rng, dtype, bsz, seq, past, valid, heads, kv_heads, d)
    cos, sin = rope_caches(64, d, dtype) if rotary else (None, None)
    got = run_gqa(state, q, k, v, past_k, past_v, seqlens, total, heads, kv_heads, present, cos, sin, packed=packed)
    want = gqa_ref(q, k, v, past_k, past_v, seqlens, total, heads, kv_heads, present, cos, sin)
    for b, n in enumerate(valid):  # rows past a padded prompt's length are not defined by the op
        rows = min(seq, n) if past == 0 else seq
        close(got[0][b, :rows], want[0][b, :rows], dtype, tol=1e-4)
        close(got[1][b, :, :n], want[1][b, :, :n], dtype)
        close(got[2][b, :, :n], want[2][b, :, :n], dtype)


def test_group_query_attention_shared_buffer_layout(state):
    """past and present both max_length long: the valid prefix carries over, new tokens follow it, zeros beyond."""
    rng = np.random.default_rng(11)
    heads, kv_heads, d, max_len = 4, 2, 16, 12
    past_k = rng.standard_normal((1, kv_heads, max_len, d)).astype(F32)
    past_v = rng.standard_normal((1, kv_heads, max_len, d)).astype(F32)
    q, k, v = (rng.standard_normal((1, 1, n * d)).astype(F32) for n in (heads, kv_heads, kv_heads))
    got = run_gqa(state, q, k, v, past_k, past_v, [5], 6, heads, kv_heads, max_len)
    want = gqa_ref(q, k, v, past_k, past_v, [5], 6, heads, kv_heads, max_len)
    close(got[0], want[0], F32, tol=1e-4)
    np.testing.assert_array_equal(got[1][:, :, :5], past_k[:, :, :5])
    assert not got[1][:, :, 6:].any()
    close(got[1][:, :, 5], k.reshape(1, kv_heads, d), F32)


@pytest.mark.parametrize("window,softcap", [(3, 0.0), (-1, 2.0), (2, 5.0)])
def test_group_query_attention_window_and_softcap(state, window, softcap):
    rng = np.random.default_rng(12)
    heads, kv_heads, d = 2, 1, 8
    q, k, v = (rng.standard_normal((1, 6, n * d)).astype(F32) * 3 for n in (heads, kv_heads, kv_heads))
    got = run_gqa(state, q, k, v, None, None, [5], 6, heads, kv_heads, 6, window=window, softcap=softcap, scale=0.5)
    want = gqa_ref(q, k, v, None, None, [5], 6, heads, kv_heads, 6, window=window, softcap=softcap, scale=0.5)
    close(got[0], want[0], F32, tol=1e-4)


def test_group_query_attention_refuses_lengths_that_do_not_fit(state):
    q, k, v = np.ones((1, 1, 16), F32), np.ones((1, 1, 16), F32), np.ones((1, 1, 16), F32)
    past = np.ones((1, 1, 4, 16), F32)
    with pytest.raises(InvalidArgumentError, match="seqlens_k"):
        run_gqa(state, q, k, v, past, past, [9], 5, 1, 1, 5)
    with pytest.raises(InvalidArgumentError, match="total_sequence_length 7"):
        run_gqa(state, q, k, v, past, past, [4], 7, 1, 1, 5)
    with pytest.raises(InvalidArgumentError, match="present_key dims"):
        run_gqa(state, q, k, v, past, past, [4], 5, 1, 1, 3)


# ---------------------------------------------------------------- several threads

def test_matmul_nbits_large_enough_for_threads(state):
    """2M multiply-adds: the columns are split over the hardware threads; the result is the same function."""
    rng = np.random.default_rng(21)
    k, n, block = 1024, 2048, 128
    b, scales, zp = quantized(rng, n, k, block, True, F32)
    a = rng.standard_normal((1, k)).astype(F32)
    (y,) = call(state, "matmul_nbits", [a, b, scales, zp], [((1, n), F32)], ints=(k, n, 4, block))
    close(y, a.astype(np.float64) @ dequantized(b, scales, zp, k), F32, tol=1e-4)


def decode_inputs_for_threads(rng):
    """One decode token for 2 sequences over 32 query / 8 KV heads and 255 past positions: enough
    (sequence, KV head) pairs to be split over threads. Returns q, k, v, past_k, past_v and the head size."""
    bsz, heads, kv_heads, d, past = 2, 32, 8, 64, 255
    q = rng.standard_normal((bsz, 1, heads * d)).astype(F32)
    k, v = (rng.standard_normal((bsz, 1, kv_heads * d)).astype(F32) for _ in range(2))
    past_k, past_v = (rng.standard_normal((bsz, kv_heads, past, d)).astype(F32) for _ in range(2))
    return q, k, v, past_k, past_v, d


def test_group_query_attention_large_enough_for_threads(state):
    rng = np.random.default_rng(22)
    q, k, v, past_k, past_v, d = decode_inputs_for_threads(rng)
    heads, kv_heads = 32, 8
    cos, sin = rope_caches(300, d, F32)
    got = run_gqa(state, q, k, v, past_k, past_v, [255, 200], 256, heads, kv_heads, 256, cos, sin)
    want = gqa_ref(q, k, v, past_k, past_v, [255, 200], 256, heads, kv_heads, 256, cos, sin)
    close(got[0], want[0], F32, tol=1e-4)
    close(got[1][0], want[1][0], F32)
    close(got[2][1, :, :201], want[2][1, :, :201], F32)


def test_group_query_attention_error_on_a_worker_thread_reaches_the_caller(state):
    """Row 1's position is outside the rotary cache; the pair that finds it may run on another thread."""
    rng = np.random.default_rng(23)
    q, k, v, past_k, past_v, d = decode_inputs_for_threads(rng)
    heads, kv_heads = 32, 8
    cos, sin = rope_caches(220, d, F32)
    with pytest.raises(InvalidArgumentError, match="position 255 is outside the rotary cache's 220 positions"):
        run_gqa(state, q, k, v, past_k, past_v, [100, 255], 256, heads, kv_heads, 256, cos, sin)


# ---------------------------------------------------------------- hostile arguments

def test_group_query_attention_refuses_head_counts_whose_sum_wraps(state):
    """num_heads + 2 * kv_num_heads (packed) wraps int64 to 8 for these counts; the query's last dim 8
    then looked like 8 heads of size 1 (and the sum itself is undefined behaviour)."""
    h = (2**64 + 8) // 3
    q = np.ones((1, 1, 8), F32)
    lengths = [np.array([0], np.int32), np.array([1], np.int32)]
    outputs = [((1, 1, 8), F32), ((1, 1, 1, 1), F32), ((1, 1, 1, 1), F32)]
    with pytest.raises(InvalidArgumentError,
                       match=r"query's last dim 8 is smaller than num_heads \+ 2 \* kv_num_heads"):
        call(state, "group_query_attention", [q, None, None, None, None, *lengths], outputs,
             ints=(h, h, -1, 0, 0), floats=(0.0, 0.0))


def test_group_query_attention_refuses_an_empty_sequence(state):
    """No new token: the kernel used to return early and leave present_key/present_value unwritten."""
    q, k, v = (np.ones((1, 0, n), F32) for n in (32, 16, 16))
    past = np.ones((1, 2, 4, 8), F32)
    with pytest.raises(InvalidArgumentError, match="the sequence length is 0"):
        run_gqa(state, q, k, v, past, past, [3], 4, 4, 2, 4)


# ---------------------------------------------------------------- attention (ONNX Attention, no KV cache)

ATTENTION_CASES = {  # name: rank, batch, q_seq, kv_seq, q_heads, kv_heads, head_size, v_head_size
    "bert-rank3": (3, 2, 9, 9, 4, 4, 16, 16),
    "gqa-rank3": (3, 1, 5, 11, 6, 2, 8, 12),
    "rank4": (4, 2, 7, 4, 3, 3, 10, 6),
    "gqa-rank4-one-query": (4, 1, 1, 40, 8, 2, 32, 32),
    "long-keys": (3, 1, 3, 300, 2, 1, 64, 64),
}
MASKS = {  # name: mask dims (rank <= 4, broadcast to [batch, q_heads, q_seq, kv_seq]); None: no mask
    "none": None, "padding": ("b", 1, 1, "k"), "full": ("b", "h", "q", "k"), "2d": ("q", "k"), "key": ("k",),
}


def attention_arguments(rng, shape, dtype, mask=None, mask_dtype=None):
    """Q, K, V and the mask (None, or dims naming b, h, q and k), the output's (shape, dtype) and the
    heads attributes of one call of `shape` (an ATTENTION_CASES entry)."""
    rank, b, sq, sk, hq, hkv, d, dv = shape
    if rank == 3:
        shapes = [(b, sq, hq * d), (b, sk, hkv * d), (b, sk, hkv * dv)]
        out, ints = (b, sq, hq * dv), [hq, hkv]
    else:
        shapes = [(b, hq, sq, d), (b, hkv, sk, d), (b, hkv, sk, dv)]
        out, ints = (b, hq, sq, dv), [0, 0]
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in shapes)
    m = None
    if mask is not None:
        dims = tuple({"b": b, "h": hq, "q": sq, "k": sk}.get(x, x) for x in mask)
        m = rng.random(dims) < 0.7 if mask_dtype == np.bool_ else (rng.standard_normal(dims) * 2).astype(dtype)
    return [q, k, v, m], (out, dtype), ints


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("case", ATTENTION_CASES)
def test_attention(state, case, mask, dtype):
    rng = np.random.default_rng(len(case) + len(mask))
    mask_dtype = np.bool_ if mask == "key" else dtype
    inputs, out, ints = attention_arguments(rng, ATTENTION_CASES[case], dtype, MASKS[mask], mask_dtype)
    for causal in (0, 1):
        (y,) = call(state, "attention", inputs, [out], ints + [causal], [0.0, 0.0])
        want = attention_ref(*inputs, q_heads=ints[0], kv_heads=ints[1], causal=bool(causal))
        close(y, want, dtype, tol=1e-5)


@pytest.mark.parametrize("scale,softcap", [(0.25, 0.0), (0.0, 3.0), (2.0, 1.5)])
def test_attention_scale_and_softcap(state, scale, softcap):
    rng = np.random.default_rng(3)
    inputs, out, ints = attention_arguments(rng, ATTENTION_CASES["gqa-rank3"], F32, ("q", "k"), F32)
    (y,) = call(state, "attention", inputs, [out], ints + [1], [scale, softcap])
    close(y, attention_ref(*inputs, q_heads=6, kv_heads=2, causal=True, scale=scale, softcap=softcap), F32)


def test_attention_query_with_every_key_masked_gets_zeros(state):
    rng = np.random.default_rng(4)
    inputs, out, ints = attention_arguments(rng, ATTENTION_CASES["rank4"], F32, ("q", "k"), np.bool_)
    inputs[3][2] = False  # query 2 attends no key
    inputs[3][3] = True
    (y,) = call(state, "attention", inputs, [out], ints + [0], [0.0, 0.0])
    assert (y[:, :, 2] == 0).all()
    close(y, attention_ref(*inputs), F32)
    ninf = np.where(inputs[3], 0.0, -np.inf).astype(F32)  # the same with a float mask of -inf
    (y2,) = call(state, "attention", inputs[:3] + [ninf], [out], ints + [0], [0.0, 0.0])
    np.testing.assert_array_equal(y, y2)


def test_attention_large_enough_for_threads(state):
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 64, 8 * 32)).astype(F32) for _ in range(3))
    (y,) = call(state, "attention", [q, k, v, None], [((2, 64, 8 * 32), F32)], [8, 8, 1], [0.0, 0.0])
    close(y, attention_ref(q, k, v, q_heads=8, kv_heads=8, causal=True), F32, tol=1e-5)


ATTENTION_REFUSALS = {  # name: (inputs edit, ints, message)
    "rank-mismatch": (lambda a: a.__setitem__(1, a[1][0]), [4, 4, 0], "must all have rank 3"),
    "heads-not-dividing": (None, [3, 3, 0], "not a positive multiple of q_num_heads 3"),
    "kv-heads-not-dividing": (None, [4, 3, 0], "must be a multiple of the key/value heads 3"),
    "zero-heads": (None, [0, 4, 0], "must be positive for rank 3 inputs"),
    "key-width": (lambda a: a.__setitem__(1, a[1][:, :, :32]), [4, 4, 0], "K's last dim 32 must be kv_num_heads"),
    "value-keys": (lambda a: a.__setitem__(2, a[2][:, :5]), [4, 4, 0], "V has 5 keys, K 9"),
    "mask-shape": (lambda a: a.__setitem__(3, np.zeros((2, 1, 1, 8), F32)), [4, 4, 0], "attn_mask dims"),
    "mask-rank": (lambda a: a.__setitem__(3, np.zeros((1, 2, 1, 1, 9), F32)), [4, 4, 0], "attn_mask dims"),
    "causal-flag": (None, [4, 4, 2], "is_causal 2 must be 0 or 1"),
}


@pytest.mark.parametrize("name", ATTENTION_REFUSALS)
def test_attention_refuses_bad_shapes_naming_them(state, name):
    edit, ints, message = ATTENTION_REFUSALS[name]
    inputs, out, _ = attention_arguments(np.random.default_rng(6), ATTENTION_CASES["bert-rank3"], F32)
    if edit:
        edit(inputs)
    with pytest.raises(InvalidArgumentError, match=message):
        call(state, "attention", inputs, [out], ints, [0.0, 0.0])


def test_attention_mask_dtypes_and_rank4_head_attributes(state):
    inputs, out, _ = attention_arguments(np.random.default_rng(7), ATTENTION_CASES["rank4"], F32)
    with pytest.raises(InvalidArgumentError, match="must be 0 for rank 4"):
        call(state, "attention", inputs, [out], [3, 3, 0], [0.0, 0.0])
    mixed = inputs[:3] + [np.random.default_rng(8).standard_normal((7, 4)).astype(F16)]
    (y,) = call(state, "attention", mixed, [out], [0, 0, 0], [0.0, 0.0])  # a float16 mask on float32 Q
    close(y, attention_ref(*mixed), F32)
    with pytest.raises(rt.HipdnnEpError, match="attn_mask has dtype INT32, expected FLOAT32 or BOOL or FLOAT16"):
        call(state, "attention", inputs[:3] + [np.zeros((7, 4), np.int32)], [out], [0, 0, 0], [0.0, 0.0])
    with pytest.raises(InvalidArgumentError, match="softcap"):
        call(state, "attention", inputs, [out], [0, 0, 0], [0.0, -1.0])
