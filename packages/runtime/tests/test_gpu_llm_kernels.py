"""The LLM kernels on the GPU (cuda/hip backends) against the CPU backend's.

Each case runs one kernel on a cpu State over numpy arrays (the reference, itself checked against
numpy in test_llm_kernels.py) and on a GPU State over device arrays, whose outputs start as
garbage the kernel must overwrite. Tolerances, GPU vs CPU (`close`: |gpu - cpu| <= tol * (1 + |cpu|)
elementwise, for float32 / float16):

- matmul_nbits: 1e-4 / 4e-3, relative to the output's largest magnitude (|gpu - cpu| <= tol *
  max(1, max |cpu|)): each output is a sum of K products, so its rounding error is absolute, on the
  scale of the largest outputs. The GEMV (up to 16 rows of A) and the dequantize + GEMM path (more
  rows) sum in float in another order; in float16 the GEMM path rounds the dequantized weights to
  half before the library's float accumulation (measured on an H200: 0.0625 at outputs up to 45,
  K 4096), and both round the result to half.
- rms_norm, skip_layer_norm: 2e-5 / 2e-3 (the CPU sums in double, the GPU in float).
- rotary_embedding: 1e-6 / 1e-3 (the same float operations; half rounding of the result).
- attention: 2e-5 / 4e-3 (float online softmax over tiles of keys vs the CPU's two passes).
- group_query_attention: 2e-5 / 4e-3 for the output (float online softmax in chunks vs the CPU's
  two passes; float16 prompts on CUDA's tensor cores also round the rotated queries and the softmax
  weights to half before the two products, within the same bound); the present cache is exact
  (copies and the same rotation arithmetic) in float32 and within one half ulp in float16.

Run with ``pytest --gpu=auto`` (skipped without a GPU backend or a GPU), ``--gpu=cuda`` to require one.
"""

from __future__ import annotations

import pytest
from gpu_util import BINARY, run_both
from test_llm_kernels import (
    ATTENTION_CASES,
    MASKS,
    attention_arguments,
    dequantized,
    gqa_arguments,
    gqa_case,
    quantized,
    rope_caches,
)
from test_llm_kernels import CASES as CPU_CASES

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")
_core = rt._core

pytestmark = pytest.mark.gpu

F32, F16 = np.float32, np.float16
TOL = {  # kernel: (float32, float16)
    "matmul_nbits": (1e-4, 4e-3),
    "matmul_nbits_silu_mul": (1e-4, 4e-3),
    "rms_norm": (2e-5, 2e-3),
    "skip_layer_norm": (2e-5, 2e-3),
    "rotary_embedding": (1e-6, 1e-3),
    "group_query_attention": (2e-5, 4e-3),
    "attention": (2e-5, 4e-3),
}


def close(kernel, actual, expected, what=""):
    tol = TOL[kernel][actual.dtype == F16]
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    assert np.isfinite(a).all(), f"{kernel} {what}: non-finite output"
    bound = tol * max(1.0, float(np.abs(e).max())) if kernel.startswith("matmul_nbits") else tol * (1 + np.abs(e))
    bad = np.abs(a - e) > bound
    assert not bad.any(), (f"{kernel} {what}: {bad.sum()} of {bad.size} elements differ by more than {tol}; "
                           f"max difference {np.abs(a - e).max():.3g}")


# ---------------------------------------------------------------- matmul_nbits

@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("block", [16, 32, 64, 128])
@pytest.mark.parametrize("zero_points", [False, True])
@pytest.mark.parametrize("a_shape", [(1, 1, 256), (3, 256), (2, 5, 200), (40, 256), (2, 24, 72)])
def test_matmul_nbits(cpu, gpu, dev, dtype, block, zero_points, a_shape):
    rng = np.random.default_rng(block + len(a_shape))
    k, n = a_shape[-1], 44
    b, scales, zp = quantized(rng, n, k, block, zero_points, dtype)
    a = rng.standard_normal(a_shape).astype(dtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits", [a, b, scales, zp], [((*a_shape[:-1], n), dtype)],
                             ints=(k, n, 4, block))
    close("matmul_nbits", y, want, f"{a_shape} block {block}")


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("m", [1, 2, 64])
def test_matmul_nbits_llm_shape_with_bias(cpu, gpu, dev, dtype, m):
    """K 4096, block 128 with zero points: the 16-byte loads of the decode GEMV, and the GEMM path."""
    rng = np.random.default_rng(m)
    k, n, block = 4096, 160, 128
    b, scales, zp = quantized(rng, n, k, block, True, dtype)
    a, bias = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal(n).astype(dtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits", [a, b, scales, zp, bias], [((m, n), dtype)],
                             ints=(k, n, 4, block))
    close("matmul_nbits", y, want)
    exact = a.astype(np.float64) @ dequantized(b, scales, zp, k) + bias
    rel = np.linalg.norm(y.astype(np.float64) - exact) / np.linalg.norm(exact)
    assert rel < (1e-6 if dtype == F32 else 1e-3)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize(("k", "block", "zero_points"), [(9000, 128, True), (4160, 32, False), (8192, 64, True)])
def test_matmul_nbits_one_row_long_k(cpu, gpu, dev, dtype, k, block, zero_points):
    """One row of A (the decode GEMV's own kernel, 4 loads of 16 bytes per lane in flight): K over
    several rounds of loads, a last block that K ends inside (9000 = 70 blocks of 128 + 40), a bias."""
    rng = np.random.default_rng(k)
    n = 72
    b, scales, zp = quantized(rng, n, k, block, zero_points, dtype)
    a, bias = rng.standard_normal((1, k)).astype(dtype), rng.standard_normal(n).astype(dtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits", [a, b, scales, zp, bias], [((1, n), dtype)],
                             ints=(k, n, 4, block))
    close("matmul_nbits", y, want, f"K {k} block {block}")


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize(("k", "n", "block", "zero_points"),
                         [(1001, 40, 128, True), (4096, 33, 256, False), (9000, 24, 128, True), (512, 16, 128, False),
                          (65536, 24, 128, True), (4096, 40, 32, False), (4096, 33, 32, True), (1024, 24, 64, False),
                          (14336, 16, 64, True), (1000, 24, 32, True), (65536, 16, 32, False)])
def test_matmul_nbits_tensor_core_gemv(cpu, gpu, dev, m, k, n, block, zero_points):
    """float16, 1..8 rows of A, blocks of a multiple of 128 (the tensor-core GEMV on CUDA): K not a multiple
    of 8 (A read element by element) and ending inside the last block, N not a multiple of the block's 16
    columns, blocks of 256 (two steps of K per block), no zero points, a bias; K 65536, whose one row of A
    does not fit the block's shared memory (read from global memory instead, as for several rows). Blocks of
    32 and 64 (several blocks a step, one row only; other rows, a K that ends inside a step and a row too long
    for shared memory take the CUDA-core GEMV)."""
    rng = np.random.default_rng(k + m)
    b, scales, zp = quantized(rng, n, k, block, zero_points, F16)
    a, bias = rng.standard_normal((m, k)).astype(F16), rng.standard_normal(n).astype(F16)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits", [a, b, scales, zp, bias], [((m, n), F16)],
                             ints=(k, n, 4, block))
    close("matmul_nbits", y, want, f"M {m} K {k} N {n} block {block}")
    exact = a.astype(np.float64) @ dequantized(b, scales, zp, k) + bias
    rel = np.linalg.norm(y.astype(np.float64) - exact) / np.linalg.norm(exact)
    assert rel < 1e-3


@pytest.mark.parametrize(("block", "zero_points"), [(128, True), (32, False)])
@pytest.mark.parametrize(("n", "k"), [(6144, 4096), (4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)])
def test_matmul_nbits_decode_at_llama_8b_shapes(cpu, gpu, dev, n, k, block, zero_points):
    """One row of A at Llama-3.1-8B's projections (packed QKV, o_proj, gate/up, down_proj, lm_head): float16,
    as the decode step runs them, with blocks of 128 and zero points (AWQ-style) and with onnxruntime-genai's
    model builder's default, blocks of 32 without zero points."""
    rng = np.random.default_rng(n + k)
    b, scales, zp = quantized(rng, n, k, block, zero_points, F16)
    a = rng.standard_normal((1, k)).astype(F16)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits", [a, b, scales, zp], [((1, n), F16)],
                             ints=(k, n, 4, block))
    close("matmul_nbits", y, want, f"{n}x{k} block {block}")


@pytest.mark.parametrize(("n", "k"), [(6144, 4096), (4096, 14336)])
def test_matmul_nbits_reads_a_only_after_the_kernel_that_writes_it(cpu, gpu, dev, n, k):
    """A decode step's order: rms_norm writes A, the int4 GEMV reads it next, launched back to back with no
    wait between (the GEMV may start before the norm ends, and must read A only after it). The norm runs over
    8192 rows and A is its last one, written by its last blocks; A starts as NaN each time, so a GEMV that
    read it early gives NaN or a wrong sum."""
    rows = 8192
    rng = np.random.default_rng(n + k)
    x, scale = rng.standard_normal((rows, k)).astype(F16), rng.standard_normal(k).astype(F16)
    b, scales, zp = quantized(rng, n, k, 128, True, F16)
    normed, want = np.zeros((1, k), F16), np.zeros((1, n), F16)
    _core.call_kernel(cpu, "hipdnn_ep_kernel_rms_norm", [x[-1:], scale], [normed], [1], [1e-5])
    _core.call_kernel(cpu, "hipdnn_ep_kernel_matmul_nbits", [normed, b, scales, zp], [want], [k, n, 4, 128], [])
    weights = [dev.to_device(w) for w in (b, scales, zp)]
    x_dev, scale_dev = dev.to_device(x), dev.to_device(scale)
    for attempt in range(10):
        y_norm = dev.to_device(np.full((rows, k), np.nan, F16))
        y_dev = dev.to_device(np.full((1, n), 77, F16))
        dev.synchronize()
        _core.call_kernels(gpu, [("hipdnn_ep_kernel_rms_norm", [x_dev, scale_dev], [y_norm], [1], [1e-5]),
                                 ("hipdnn_ep_kernel_matmul_nbits", [y_norm[-1:], *weights], [y_dev], [k, n, 4, 128],
                                  [])])
        close("matmul_nbits", dev.to_host(y_dev), want, f"{n}x{k}, attempt {attempt}")


@pytest.mark.parametrize(("dtype", "m", "k", "n", "block"),
                         [(F16, 1, 4096, 40, 32), (F16, 1, 4096, 33, 128), (F16, 1, 1024, 24, 64),
                          (F16, 3, 1001, 40, 128), (F16, 8, 4096, 24, 256), (F16, 1, 1000, 24, 32),
                          (F16, 1, 1056, 24, 32), (F16, 17, 512, 40, 128), (F32, 1, 512, 40, 128),
                          (F16, 1, 256, 24, 16)])
@pytest.mark.parametrize("zero_points", [(True, True), (False, False), (True, False)])
def test_matmul_nbits_silu_mul(cpu, gpu, dev, dtype, m, k, n, block, zero_points):
    """SiLU(A x gate) * (A x up) in one call: on CUDA's tensor-core GEMV in float16 where it applies (blocks of
    128 or more, one or several rows; K not a multiple of 8; N not a multiple of the block's 8 columns), else
    both products and one SiLU pass (blocks of 32 and 64, where the two tensor-core GEMVs beat the gated one,
    K 1000 ending inside a block and K 1056 not filling the last step of 128; 17 rows: the GEMM path;
    float32; blocks of 16). Zero points on both weights, on neither, on the gate only."""
    rng = np.random.default_rng(k + m + n)
    gate = quantized(rng, n, k, block, zero_points[0], dtype)
    up = quantized(rng, n, k, block, zero_points[1], dtype)
    a = rng.standard_normal((m, k)).astype(dtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits_silu_mul", [a, *gate, *up], [((m, n), dtype)],
                             ints=(k, n, 4, block))
    close("matmul_nbits_silu_mul", y, want, f"M {m} K {k} N {n} block {block}")


@pytest.mark.parametrize(("block", "zero_points"), [(128, True), (32, False)])
def test_matmul_nbits_silu_mul_at_llama_8b_shape(cpu, gpu, dev, block, zero_points):
    """One row of A at Llama-3.1-8B's gate and up projections (14336 x 4096), float16, in both int4 layouts."""
    rng = np.random.default_rng(block)
    n, k = 14336, 4096
    gate, up = quantized(rng, n, k, block, zero_points, F16), quantized(rng, n, k, block, zero_points, F16)
    a = rng.standard_normal((1, k)).astype(F16)
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits_silu_mul", [a, *gate, *up], [((1, n), F16)],
                             ints=(k, n, 4, block))
    close("matmul_nbits_silu_mul", y, want, f"{n}x{k} block {block}")


@pytest.mark.parametrize("offset", [4, 1])
def test_matmul_nbits_unaligned_weights(cpu, gpu, dev, offset):
    """B not 16-byte aligned: the word and byte loads give the same result."""
    rng = np.random.default_rng(offset)
    k, n, block = 256, 12, 32
    b, scales, zp = quantized(rng, n, k, block, True, F32)
    a = rng.standard_normal((1, k)).astype(F32)
    (want,) = [np.zeros((1, n), F32)]
    _core.call_kernel(cpu, "hipdnn_ep_kernel_matmul_nbits", [a, b, scales, zp], [want], [k, n, 4, block], [])
    padded = dev.to_device(np.concatenate([np.zeros(offset, np.uint8), b.reshape(-1)]))
    y = dev.to_device(np.full((1, n), 77, F32))
    _core.call_kernel(gpu, "hipdnn_ep_kernel_matmul_nbits", [dev.to_device(a), padded[offset:], dev.to_device(scales),
                                                             dev.to_device(zp)], [y], [k, n, 4, block], [])
    close("matmul_nbits", dev.to_host(y), want)


@pytest.mark.parametrize("kernel", ["matmul_nbits", "matmul_nbits_silu_mul"])
@pytest.mark.parametrize("zero_points", [False, True])
def test_matmul_nbits_blocks_of_32_with_scales_off_a_word(cpu, gpu, dev, kernel, zero_points):
    """One row, blocks of 32: the tensor-core GEMV (on CUDA; gate and up as its paired form) reads a lane's two
    scales as one 4-byte word, so scales that start 2 bytes off a word take the CUDA-core GEMV instead, with
    the same result. Flat scales, as a model's initializer may hold them."""
    rng = np.random.default_rng(32 + zero_points)
    k, n, block = 4096, 40, 32
    weights = [quantized(rng, n, k, block, zero_points, F16) for _ in range(2 if kernel.endswith("silu_mul") else 1)]
    a = rng.standard_normal((1, k)).astype(F16)
    want = np.zeros((1, n), F16)
    _core.call_kernel(cpu, f"hipdnn_ep_kernel_{kernel}", [a, *[x for w in weights for x in w]], [want],
                      [k, n, 4, block], [])

    def off_a_word(scales):
        return dev.to_device(np.concatenate([np.zeros(1, F16), scales.reshape(-1)]))[1:]

    inputs = [dev.to_device(a)]
    for b, scales, zp in weights:
        inputs += [dev.to_device(b), off_a_word(scales), None if zp is None else dev.to_device(zp)]
    y = dev.to_device(np.full((1, n), 77, F16))
    _core.call_kernel(gpu, f"hipdnn_ep_kernel_{kernel}", inputs, [y], [k, n, 4, block], [])
    close(kernel, dev.to_host(y), want, f"zero points {zero_points}")


# N of at least 72 tiles of 128 columns: the prefill GEMM fills the device (up to 144 SMs) and takes them
PREFILL_GEMM_CASES = [(17, 512, 9300, 32, False, False), (128, 512, 9216, 64, True, True),
                      (100, 320, 9301, 128, True, True), (64, 768, 9250, 256, True, False),
                      (40, 512, 9216, 32, True, True), (129, 256, 9216, 32, False, False)]


@pytest.mark.parametrize(("m", "k", "n", "block", "zero_points", "with_bias"), PREFILL_GEMM_CASES)
def test_matmul_nbits_prefill_gemm(cpu, gpu, dev, m, k, n, block, zero_points, with_bias):
    """A prompt's rows with a wide N, in float16: on CUDA the tensor-core GEMM that dequantizes B in shared
    memory (up to 128 rows; K a multiple of 64) over its tiles of 128 x 128 (rows and columns past the last
    tile, an odd N), with a bias or without; K 320 ends inside a block of 128. 129 rows, and elsewhere, the
    dequantize + GEMM path, with the same result."""
    rng = np.random.default_rng(m + k + n)
    b, scales, zp = quantized(rng, n, k, block, zero_points, F16)
    a = rng.standard_normal((m, k)).astype(F16)
    bias = rng.standard_normal(n).astype(F16) if with_bias else None
    (y,), (want,) = run_both(cpu, gpu, dev, "matmul_nbits", [a, b, scales, zp, bias], [((m, n), F16)],
                             ints=(k, n, 4, block))
    close("matmul_nbits", y, want, f"M {m} K {k} N {n} block {block}")


def test_matmul_nbits_prefill_gemm_holds_no_dequantized_copy(cpu, gpu_backend, dev):
    """CUDA's prefill GEMM turns B into halves in shared memory: the state's allocator lends it nothing,
    where the dequantize + GEMM path takes a temporary of N x K halves (here 18 MiB)."""
    if gpu_backend != "cuda":
        pytest.skip("the tensor-core prefill GEMM is CUDA's")
    rng = np.random.default_rng(9)
    m, k, n, block = 64, 1024, 9216, 32
    b, scales, zp = quantized(rng, n, k, block, True, F16)
    a = rng.standard_normal((m, k)).astype(F16)
    want = np.zeros((m, n), F16)
    _core.call_kernel(cpu, "hipdnn_ep_kernel_matmul_nbits", [a, b, scales, zp], [want], [k, n, 4, block], [])
    y = dev.to_device(np.full((m, n), 77, F16))
    with rt.State(backend=gpu_backend) as state:
        _core.call_kernel(state, "hipdnn_ep_kernel_matmul_nbits", [dev.to_device(x) for x in (a, b, scales, zp)],
                          [y], [k, n, 4, block], [])
        peak = state.memory_stats()["peak_bytes_in_use"]
    assert peak == 0, f"the prefill GEMM took {peak / 2**20:.1f} MiB"
    close("matmul_nbits", dev.to_host(y), want)


@pytest.mark.parametrize("dtype", [F32, F16])
def test_matmul_nbits_prefill_dequantizes_in_bounded_chunks(cpu, gpu_backend, dev, dtype):
    """The GEMM path dequantizes W a chunk of columns at a time into a temporary of at most 32 MiB (an
    lm_head of 128256 x 4096 took a 1 GiB one); three chunks, the last one partial, with a bias. (On CUDA in
    float16 the prefill GEMM that takes no temporary runs instead.)"""
    rng = np.random.default_rng(7)
    k, block, m = 4096, 128, 17
    chunk = (32 << 20) // (k * np.dtype(dtype).itemsize)
    n = 2 * chunk + 264
    b, scales, zp = quantized(rng, n, k, block, True, dtype)
    a, bias = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal(n).astype(dtype)
    want = np.zeros((m, n), dtype)
    _core.call_kernel(cpu, "hipdnn_ep_kernel_matmul_nbits", [a, b, scales, zp, bias], [want], [k, n, 4, block], [])
    y = dev.to_device(np.full((m, n), 77, dtype))
    with rt.State(backend=gpu_backend) as state:  # its allocator holds only the kernel's temporary
        _core.call_kernel(state, "hipdnn_ep_kernel_matmul_nbits", [dev.to_device(x) for x in (a, b, scales, zp, bias)],
                          [y], [k, n, 4, block], [])
        peak = state.memory_stats()["peak_bytes_in_use"]
    assert peak <= (32 << 20), f"the dequantized temporary took {peak / 2**20:.1f} MiB"
    close("matmul_nbits", dev.to_host(y), want)


# ---------------------------------------------------------------- rms_norm

@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape,axis", [((2, 3, 64), 2), ((3, 4, 8), 1), ((2, 4096), 1), ((1, 1, 1000), 2)])
def test_rms_norm(cpu, gpu, dev, dtype, shape, axis):
    rng = np.random.default_rng(len(shape) + axis)
    x, scale = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[axis:]).astype(dtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "rms_norm", [x, scale], [(shape, dtype)], ints=(axis,), floats=(1e-5,))
    close("rms_norm", y, want)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("skip_shape", [(2, 5, 32), (5, 32)])
def test_rms_norm_with_skip_returns_the_sum(cpu, gpu, dev, dtype, with_bias, skip_shape):
    rng = np.random.default_rng(4)
    x, skip = rng.standard_normal((2, 5, 32)).astype(dtype), rng.standard_normal(skip_shape).astype(dtype)
    scale = rng.standard_normal(32).astype(dtype)
    bias = rng.standard_normal(32).astype(dtype) if with_bias else None
    (y, s), (want_y, want_s) = run_both(cpu, gpu, dev, "rms_norm", [x, scale, skip, bias],
                                        [(x.shape, dtype), (x.shape, dtype)], ints=(2,), floats=(1e-6,))
    close("rms_norm", y, want_y, "output")
    close("rms_norm", s, want_s, "sum")


@pytest.mark.parametrize("size", [4096, 5001], ids=["registers", "general"])
def test_rms_norm_waits_for_the_kernel_before_it(cpu, gpu, dev, size):
    """CUDA launches the norm so that it may start while the kernel before it in the stream still runs
    (programmatic dependent launch, sm_90): it must read nothing before that kernel has ended. An add that
    writes 16M halves is followed back to back (call_kernels) by a norm of the last row it writes, with that
    row as the skip too, 10 times over fresh zeros."""
    rng = np.random.default_rng(size)
    rows = (1 << 24) // size
    a, b = (rng.standard_normal((rows, size)).astype(F16) for _ in range(2))
    scale = rng.standard_normal(size).astype(F16)
    last = (a[-1:] + b[-1:]).astype(F16)
    want = [np.full((1, size), 77, F16), np.full((1, size), 77, F16)]
    _core.call_kernel(cpu, "hipdnn_ep_kernel_rms_norm", [last, scale, last, None], want, [1], [1e-5])
    d_a, d_b, d_scale = dev.to_device(a), dev.to_device(b), dev.to_device(scale)
    for _ in range(10):
        total = dev.to_device(np.zeros((rows, size), F16))
        y, y_sum = dev.to_device(np.full((1, size), 77, F16)), dev.to_device(np.full((1, size), 77, F16))
        dev.synchronize()
        _core.call_kernels(gpu, [("hipdnn_ep_kernel_binary", [d_a, d_b], [total], [BINARY["ADD"]], []),
                                 ("hipdnn_ep_kernel_rms_norm", [total[-1:], d_scale, total[-1:], None], [y, y_sum],
                                  [1], [1e-5])])
        close("rms_norm", dev.to_host(y), want[0], "output")
        close("rms_norm", dev.to_host(y_sum), want[1], "sum")


# The kernel's paths: a row in registers read once (16-byte vectors, or single elements when the row
# length is not a multiple of 8 halves / 4 floats), a group of threads per row sized to it (one vector
# each for few rows, up to 4 each and several rows per block for many); longer rows take the general
# two-pass kernel.
RMS_ROWS = [
    (1, 4096),    # a decode step: one row, 512 threads
    (300, 4096),  # many rows: 4 vectors per thread, several rows per block
    (700, 96),    # many short rows: a few lanes per row, many rows per warp
    (3, 16384),   # the most the registers hold in 16-byte vectors
    (5, 4095),    # not a multiple of 8: single elements
    (3, 37),
    (2, 5001),    # single elements, too long for registers: the general kernel
    (2, 20000),   # vectors, too long for registers: the general kernel
]
RMS_INPUTS = ["plain", "skip", "skip+sum", "skip+bias+sum"]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape", RMS_ROWS, ids=[f"{r}x{s}" for r, s in RMS_ROWS])
@pytest.mark.parametrize("inputs", RMS_INPUTS)
def test_rms_norm_paths(cpu, gpu, dev, dtype, shape, inputs):
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    x, scale = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[-1]).astype(dtype)
    skip = rng.standard_normal(shape).astype(dtype) if "skip" in inputs else None
    bias = rng.standard_normal(shape[-1]).astype(dtype) if "bias" in inputs else None
    outputs = [(shape, dtype)] * (2 if "sum" in inputs else 1)
    got, want = run_both(cpu, gpu, dev, "rms_norm", [x, scale, skip, bias], outputs, ints=(1,), floats=(1e-5,))
    close("rms_norm", got[0], want[0], "output")
    if "sum" in inputs:
        close("rms_norm", got[1], want[1], "sum")


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("shape", RMS_ROWS, ids=[f"{r}x{s}" for r, s in RMS_ROWS])
@pytest.mark.parametrize("inputs", ["plain", "beta", "skip+sum", "skip+bias+beta+sum"])
def test_skip_layer_norm_paths(cpu, gpu, dev, dtype, shape, inputs):
    """skip_layer_norm runs rms_norm's paths with the mean subtracted (from the registers, or one more
    pass of the general kernel) and B added."""
    rng = np.random.default_rng(shape[0] * 5 + shape[1])
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    scale = rng.standard_normal(shape[-1]).astype(dtype)
    beta = rng.standard_normal(shape[-1]).astype(dtype) if "beta" in inputs else None
    skip = rng.standard_normal(shape).astype(dtype) if "skip" in inputs else None
    bias = rng.standard_normal(shape[-1]).astype(dtype) if "bias" in inputs else None
    outputs = [(shape, dtype)] * (2 if "sum" in inputs else 1)
    got, want = run_both(cpu, gpu, dev, "skip_layer_norm", [x, scale, beta, skip, bias], outputs, ints=(1,),
                         floats=(1e-5,))
    close("skip_layer_norm", got[0], want[0], "output")
    if "sum" in inputs:
        close("skip_layer_norm", got[1], want[1], "sum")


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("misaligned", ["x", "skip", "sum"])
def test_rms_norm_unaligned_pointers(cpu, gpu, dev, dtype, misaligned):
    """A tensor not 16-byte aligned (one element into a buffer): the single-element loads and stores."""
    rng = np.random.default_rng(11)
    shape = (6, 1024)
    x, skip = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    scale = rng.standard_normal(shape[-1]).astype(dtype)
    want = [np.zeros(shape, dtype), np.zeros(shape, dtype)]
    _core.call_kernel(cpu, "hipdnn_ep_kernel_rms_norm", [x, scale, skip, None], want, [1], [1e-5])

    def placed(a, offset):
        flat = dev.to_device(np.concatenate([np.zeros(offset, dtype), a.reshape(-1)]))
        return flat[offset:].reshape(shape)

    d_x = placed(x, 1 if misaligned == "x" else 0)
    d_skip = placed(skip, 1 if misaligned == "skip" else 0)
    y = placed(np.full(shape, 77, dtype), 0)
    total = placed(np.full(shape, 77, dtype), 1 if misaligned == "sum" else 0)
    _core.call_kernel(gpu, "hipdnn_ep_kernel_rms_norm", [d_x, dev.to_device(scale), d_skip, None], [y, total], [1],
                      [1e-5])
    close("rms_norm", dev.to_host(y), want[0], "output")
    close("rms_norm", dev.to_host(total), want[1], "sum")


# ---------------------------------------------------------------- rotary

@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_bsd(cpu, gpu, dev, dtype, interleaved):
    rng = np.random.default_rng(6)
    b, s, h, d = 2, 5, 3, 16
    x = rng.standard_normal((b, s, h * d)).astype(dtype)
    pos = rng.integers(0, 40, (b, s)).astype(np.int64)
    cos, sin = rope_caches(40, d, dtype)
    (y,), (want,) = run_both(cpu, gpu, dev, "rotary_embedding", [x, pos, cos, sin], [(x.shape, dtype)],
                             ints=(interleaved, h, 0))
    close("rotary_embedding", y, want)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_bnsh_partial_dim_and_offset(cpu, gpu, dev, interleaved):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4, 16)).astype(F32)
    cos, sin = rope_caches(32, 16, F32)
    (y,), (want,) = run_both(cpu, gpu, dev, "rotary_embedding", [x, np.array([3], np.int64), cos, sin],
                             [(x.shape, F32)], ints=(interleaved, 0, 8))
    close("rotary_embedding", y, want)


def test_rotary_embedding_refuses_a_position_outside_the_cache(gpu, dev):
    cos, sin = (dev.to_device(c) for c in rope_caches(8, 16, F32))
    x, y = dev.to_device(np.ones((1, 2, 16), F32)), dev.to_device(np.zeros((1, 2, 16), F32))
    with pytest.raises(rt.InvalidArgumentError, match="position 8 is outside the rotary cache's 8 positions"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_rotary_embedding",
                          [x, dev.to_device(np.array([[0, 8]], np.int64)), cos, sin], [y], [0, 0, 0], [])


# ---------------------------------------------------------------- group_query_attention

def gqa_inputs(rng, dtype, bsz, seq, past, valid, heads, kv_heads, d, rotary, packed, max_pos=64):
    """The kernel's inputs and outputs for one case (test_llm_kernels' gqa_case), with rotary caches of
    max_pos positions when rotary."""
    q, k, v, past_k, past_v, seqlens, total, present = gqa_case(rng, dtype, bsz, seq, past, valid, heads, kv_heads, d)
    cos, sin = rope_caches(max_pos, d, dtype) if rotary else (None, None)
    return gqa_arguments(q, k, v, past_k, past_v, seqlens, total, heads, kv_heads, present, cos, sin, packed)


CASES = {  # name: batch, seq, past (cache length), valid lengths, heads, kv_heads, head_size
    **CPU_CASES,  # the CPU suite's cases, then shapes large enough for the GPU kernels' other paths
    "decode-8b-heads": (1, 1, 300, [301], 32, 8, 128),
    "prompt-8b-heads-many-chunks": (1, 70, 0, [70], 32, 8, 128),
    "head-256": (1, 3, 40, [43], 4, 2, 256),
}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_group_query_attention(cpu, gpu, dev, case, rotary, packed, dtype):
    bsz, seq, past, valid, heads, kv_heads, d = CASES[case]
    rng = np.random.default_rng(len(case) + 10 * rotary)
    inputs, outputs = gqa_inputs(rng, dtype, bsz, seq, past, valid, heads, kv_heads, d, rotary, packed, max_pos=512)
    got, want = run_both(cpu, gpu, dev, "group_query_attention", inputs, outputs,
                         ints=(heads, kv_heads, -1, int(rotary), 0), floats=(0.0, 0.0))
    for name, g, w in zip(("output", "present_key", "present_value"), got, want, strict=True):
        close("group_query_attention", g, w, name)


@pytest.mark.parametrize("window,softcap,interleaved", [(3, 0.0, 0), (-1, 2.0, 1), (2, 5.0, 1), (40, 0.0, 0)])
def test_group_query_attention_window_softcap_interleaved(cpu, gpu, dev, window, softcap, interleaved):
    rng = np.random.default_rng(12)
    inputs, outputs = gqa_inputs(rng, F32, 1, 50, 0, [50], 4, 2, 16, True, False)
    inputs[0] = inputs[0] * 3
    got, want = run_both(cpu, gpu, dev, "group_query_attention", inputs, outputs,
                         ints=(4, 2, window, 1, interleaved), floats=(0.5, softcap))
    for g, w in zip(got, want, strict=True):
        close("group_query_attention", g, w)


DECODE_CASES = {  # name: batch, past (cache length), valid lengths, heads, kv_heads, head_size, window, softcap
    "long-cache": (1, 2047, [2000], 32, 8, 128, -1, 0.0),
    "window-softcap-ragged": (2, 99, [100, 37], 16, 1, 64, 5, 2.0),
    "head-256": (1, 70, [71], 4, 2, 256, -1, 0.0),
    "group-32": (1, 40, [41], 64, 2, 16, -1, 0.0),
    "8b-past-128": (1, 128, [129], 32, 8, 128, -1, 0.0),
    "split-ragged": (2, 1100, [1100, 300], 32, 8, 128, -1, 0.0),
    "split-window-softcap": (2, 1500, [1500, 700], 16, 4, 64, 300, 3.0),
    "head-20-scalar-loads": (1, 50, [51], 4, 2, 20, -1, 0.0),
    # split sizes come from each row's valid keys on the device: a short past in a long cache buffer uses a few
    # of the launched splits; caches over 4096 keys take two query heads per block (an odd group: one in the last)
    "8b-short-past-long-buffer": (1, 4095, [129], 32, 8, 128, -1, 0.0),
    "8b-cache-over-4096": (1, 5000, [4700], 32, 8, 128, -1, 0.0),
    "group-3-over-4096-ragged": (2, 4200, [4150, 900], 6, 2, 64, -1, 0.0),
    "ragged-short-buffer": (2, 20, [6, 11], 8, 2, 32, -1, 0.0),
}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", DECODE_CASES)
def test_group_query_attention_decode_over_key_chunks(cpu, gpu, dev, case, dtype):
    """One new token: each row's keys split over blocks by its valid length and merged (ragged rows using
    fewer splits), one or two query heads per block; window, softcap, interleaved rotary, head size 256 and a
    head size that is no multiple of 8 (element loads)."""
    bsz, past, valid, heads, kv_heads, d, window, softcap = DECODE_CASES[case]
    rng = np.random.default_rng(len(case))
    inputs, outputs = gqa_inputs(rng, dtype, bsz, 1, past, valid, heads, kv_heads, d, True, False,
                                 max_pos=max(2100, past + 8))
    got, want = run_both(cpu, gpu, dev, "group_query_attention", inputs, outputs,
                         ints=(heads, kv_heads, window, 1, int(softcap > 0)), floats=(0.0, softcap))
    for name, g, w in zip(("output", "present_key", "present_value"), got, want, strict=True):
        close("group_query_attention", g, w, f"{case} {name}")


PREFILL_CASES = {  # name: batch, seq, past, valid lengths, heads, kv_heads, head_size, window, softcap
    "8b-prompt-128": (1, 128, 0, [128], 32, 8, 128, -1, 0.0),
    "8b-prompt-1024": (1, 1024, 0, [1024], 32, 8, 128, -1, 0.0),
    "8b-prompt-ragged-batch": (3, 100, 0, [100, 37, 64], 32, 8, 128, -1, 0.0),
    "continuation-ragged": (2, 40, 90, [130, 101], 8, 2, 64, -1, 0.0),
    "window-softcap": (1, 200, 0, [200], 8, 2, 64, 37, 3.0),
    "group-1-odd-tiles": (1, 77, 0, [77], 4, 4, 64, -1, 0.0),
    "group-8-window-over-past": (1, 70, 60, [130], 16, 2, 128, 100, 0.0),
}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", PREFILL_CASES)
def test_group_query_attention_prefill(cpu, gpu, dev, case, dtype):
    """Prompts and continuations at head sizes 64 and 128 (float16 takes the tensor-core kernel on CUDA):
    the 8B head layout at 128 and 1024 tokens, ragged batches, key tiles cut by the causal diagonal,
    the window and the softcap, groups of 1 to 8 query heads."""
    bsz, seq, past, valid, heads, kv_heads, d, window, softcap = PREFILL_CASES[case]
    rng = np.random.default_rng(len(case) + seq)
    inputs, outputs = gqa_inputs(rng, dtype, bsz, seq, past, valid, heads, kv_heads, d, True, case.startswith("cont"),
                                 max_pos=past + seq + 8)
    inputs[0] = inputs[0] * 2  # sharper softmax rows than unit-variance scores give
    got, want = run_both(cpu, gpu, dev, "group_query_attention", inputs, outputs,
                         ints=(heads, kv_heads, window, 1, int(softcap > 0)), floats=(0.0, softcap))
    for name, g, w in zip(("output", "present_key", "present_value"), got, want, strict=True):
        close("group_query_attention", g, w, f"{case} {name}")


def test_group_query_attention_decode_waits_for_the_kernel_before_it(cpu, gpu, dev):
    """CUDA launches the decode kernel and its merge so that each may start while the kernel before it in
    the stream still runs (programmatic dependent launch, sm_90); each must read nothing before that one has
    ended. An add that writes 16M halves, the packed query, key and value in its last row, is followed back
    to back (call_kernels) by a decode step in a shared buffer whose past of 1000 keys takes several splits
    and the merge, 5 times over fresh zeros and caches."""
    heads, kv_heads, d, past = 32, 8, 128, 1000
    rng = np.random.default_rng(21)
    inputs, outputs = gqa_inputs(rng, F16, 1, 1, past, [past + 1], heads, kv_heads, d, True, True, max_pos=1100)
    length = outputs[1][0][2]
    for i in (3, 4):  # the past padded to the present length: one buffer
        inputs[i] = np.concatenate([inputs[i], np.zeros((1, kv_heads, length - past, d), F16)], axis=2)
    ints, floats = [heads, kv_heads, -1, 1, 0], [0.0, 0.0]
    want = [np.full(shape, 77, F16) for shape, _ in outputs]
    _core.call_kernel(cpu, "hipdnn_ep_kernel_group_query_attention", inputs, want, ints, floats)
    width = inputs[0].shape[-1]
    rows = (1 << 24) // width
    a = rng.standard_normal((rows, width)).astype(F16)
    a[-1] = inputs[0].reshape(-1)  # + 0: exact
    d_a, d_zeros = dev.to_device(a), dev.to_device(np.zeros((rows, width), F16))
    lengths_and_caches = [dev.to_device(x) for x in inputs[5:]]
    for attempt in range(5):
        total = dev.to_device(np.zeros((rows, width), F16))
        key_cache, value_cache = dev.to_device(inputs[3]), dev.to_device(inputs[4])
        out = dev.to_device(np.full(outputs[0][0], 77, F16))
        dev.synchronize()
        _core.call_kernels(gpu, [("hipdnn_ep_kernel_binary", [d_a, d_zeros], [total], [BINARY["ADD"]], []),
                                 ("hipdnn_ep_kernel_group_query_attention",
                                  [total[-1:].reshape(1, 1, width), None, None, key_cache, value_cache,
                                   *lengths_and_caches], [out, key_cache, value_cache], ints, floats)])
        close("group_query_attention", dev.to_host(out), want[0], f"attempt {attempt}")


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("case", DECODE_CASES)
def test_group_query_attention_decode_in_a_shared_buffer(cpu, gpu, dev, case, packed, dtype):
    """The decode cases with past and present as one device buffer (onnxruntime-genai's shared-buffer mode),
    where the decode kernel writes the new token's K (rotated) and V itself: the output, each row's valid
    cache positions (the new token's included; V exactly, a copy) and every position past them untouched."""
    bsz, past, valid, heads, kv_heads, d, window, softcap = DECODE_CASES[case]
    rng = np.random.default_rng(len(case) + packed)
    inputs, outputs = gqa_inputs(rng, dtype, bsz, 1, past, valid, heads, kv_heads, d, True, packed,
                                 max_pos=max(2100, past + 8))
    length = outputs[1][0][2]  # the present length: the past's, or the longest row's when that is longer
    for i in (3, 4):  # the past padded to it: one buffer, one length
        pad = rng.standard_normal((bsz, kv_heads, length - past, d)).astype(dtype)
        inputs[i] = np.concatenate([inputs[i], pad], axis=2)
    ints, floats = [heads, kv_heads, window, 1, int(softcap > 0)], [0.0, softcap]
    want = [np.full(shape, 77, dtype=t) for shape, t in outputs]
    _core.call_kernel(cpu, "hipdnn_ep_kernel_group_query_attention", inputs, want, ints, floats)
    dev_inputs = [None if x is None else dev.to_device(x) for x in inputs]
    out = dev.to_device(np.full(outputs[0][0], 77, dtype))
    _core.call_kernel(gpu, "hipdnn_ep_kernel_group_query_attention", dev_inputs, [out, dev_inputs[3], dev_inputs[4]],
                      ints, floats)
    close("group_query_attention", dev.to_host(out), want[0], f"{case} output")
    for name, cache, before, expected in (("present_key", dev_inputs[3], inputs[3], want[1]),
                                          ("present_value", dev_inputs[4], inputs[4], want[2])):
        got = dev.to_host(cache)
        for b, n in enumerate(valid):
            if name == "present_value":
                np.testing.assert_array_equal(got[b, :, :n], expected[b, :, :n])
            else:
                close("group_query_attention", got[b, :, :n], expected[b, :, :n], f"{case} {name} row {b}")
            np.testing.assert_array_equal(got[b, :, n:], before[b, :, n:])


def test_group_query_attention_decode_in_a_shared_buffer_refuses_bad_lengths_and_positions(gpu, dev):
    """The shared-buffer decode makes the checks the present kernel makes elsewhere: lengths that do not fit
    and a rotary position past the cache are refused at the wait, and the cache is left as it was."""
    def run(seqlens, total, length, positions=16, error=None):
        cache = np.arange(length * 16, dtype=F32).reshape(1, 1, length, 16)
        k_dev, v_dev = dev.to_device(cache), dev.to_device(cache)
        q = dev.to_device(np.ones((1, 1, 48), F32))  # packed: one query head, one KV head of 16
        cos = dev.to_device(np.ones((positions, 8), F32))
        args = [q, None, None, k_dev, v_dev, dev.to_device(np.array(seqlens, np.int32)),
                dev.to_device(np.array([total], np.int32)), cos, cos]
        outs = [dev.to_device(np.zeros((1, 1, 16), F32)), k_dev, v_dev]

        def call():
            _core.call_kernel(gpu, "hipdnn_ep_kernel_group_query_attention", args, outs, [1, 1, -1, 1, 0], [0.0, 0.0])

        if error is None:
            call()
            assert not np.array_equal(dev.to_host(k_dev), cache)  # the new token was written
            return
        with pytest.raises(rt.InvalidArgumentError, match=error):
            call()
        np.testing.assert_array_equal(dev.to_host(k_dev), cache)
        np.testing.assert_array_equal(dev.to_host(v_dev), cache)

    run([9], 5, 5, error=r"seqlens_k\[0\] = 9 does not fit the present buffer of 5")
    run([4], 7, 5, error="total_sequence_length 7 must be in")
    run([4], 5, 5, positions=3, error="position 4 is outside the rotary cache's 3 positions")
    run([4], 5, 5)  # the state still works after the refusals


def test_group_query_attention_refuses_lengths_that_do_not_fit(gpu, dev):
    def run(seqlens, total, present):
        q = dev.to_device(np.ones((1, 1, 16), F32))
        past = dev.to_device(np.ones((1, 1, 4, 16), F32))
        outs = [dev.to_device(np.zeros(s, F32)) for s in ((1, 1, 16), (1, 1, present, 16), (1, 1, present, 16))]
        _core.call_kernel(gpu, "hipdnn_ep_kernel_group_query_attention",
                          [q, q, q, past, past, dev.to_device(np.array(seqlens, np.int32)),
                           dev.to_device(np.array([total], np.int32))], outs, [1, 1, -1, 0, 0], [0.0, 0.0])

    with pytest.raises(rt.InvalidArgumentError, match=r"seqlens_k\[0\] = 9 does not fit the present buffer of 5"):
        run([9], 5, 5)
    with pytest.raises(rt.InvalidArgumentError, match="total_sequence_length 7 must be in"):
        run([4], 7, 5)
    with pytest.raises(rt.InvalidArgumentError, match=r"seqlens_k\[0\] = 5 with 1 new tokens needs 5 past positions"):
        run([5], 6, 6)
    run([4], 5, 5)  # the state still works after the refusals


# ---------------------------------------------------------------- attention

GPU_ATTENTION_CASES = {**ATTENTION_CASES,  # rank, batch, q_seq, kv_seq, q_heads, kv_heads, head_size, v_head_size
                       "bert-base": (3, 1, 128, 128, 12, 12, 64, 64),
                       "head-256-fewer-keys-per-tile": (4, 1, 5, 70, 2, 1, 256, 256),
                       "head-512-value-96": (4, 1, 3, 33, 2, 2, 512, 96),
                       "head-80-rows-past-a-block": (3, 2, 21, 19, 2, 2, 80, 80),
                       # float16 with head size 64 or 128 runs on tensor cores (attention_flash.hip), its block
                       # shape by how many blocks the call has: 4 or 2 warps of distinct rows, or the keys split
                       # over the warps of one row group (bert-base and long-keys above, the first two here;
                       # some warps with no key at all); query and key tiles cut short, more queries than keys
                       # (causal rows past the last key), grouped heads
                       "flash-128-cross-gqa": (4, 2, 70, 150, 4, 2, 128, 128),
                       "flash-more-queries-than-keys": (3, 1, 300, 130, 2, 2, 64, 64),
                       "flash-two-warps": (3, 1, 128, 97, 40, 40, 64, 64),
                       "flash-four-warps": (4, 4, 130, 66, 36, 12, 64, 64),
                       "flash-128-four-warps": (4, 2, 130, 70, 40, 8, 128, 128)}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("case", GPU_ATTENTION_CASES)
def test_attention(cpu, gpu, dev, case, mask, dtype):
    rng = np.random.default_rng(len(case) + len(mask))
    mask_dtype = np.bool_ if mask == "key" else dtype
    inputs, out, ints = attention_arguments(rng, GPU_ATTENTION_CASES[case], dtype, MASKS[mask], mask_dtype)
    for causal in (0, 1):
        got, want = run_both(cpu, gpu, dev, "attention", inputs, [out], ints=ints + [causal], floats=(0.0, 0.0))
        close("attention", got[0], want[0], f"causal={causal}")


def test_attention_softcap_and_masked_rows(cpu, gpu, dev):
    rng = np.random.default_rng(13)
    inputs, out, ints = attention_arguments(rng, ATTENTION_CASES["gqa-rank3"], F16, ("q", "k"), np.bool_)
    inputs[3][1] = False  # query 1 attends no key: zeros on both backends
    got, want = run_both(cpu, gpu, dev, "attention", inputs, [out], ints=ints + [1], floats=(0.5, 2.0))
    assert (want[0][:, 1] == 0).all() and (got[0][:, 1] == 0).all()
    close("attention", got[0], want[0])


@pytest.mark.parametrize("dtype", [F32, F16])
def test_attention_rows_masked_by_the_lowest_value(cpu, gpu, dev, dtype):
    # transformers masks padding with the dtype's lowest value (not -inf): a row whose every key has it still
    # weighs its keys by their scores, on both backends (the flash kernel subtracts the row's max before
    # scaling to base 2, so -FLT_MAX * log2(e) never overflows)
    rng = np.random.default_rng(17)
    inputs, out, ints = attention_arguments(rng, GPU_ATTENTION_CASES["bert-base"], dtype, ("b", 1, "q", "k"), dtype)
    inputs[3][:] = 0
    inputs[3][0, 0, :, 100:] = np.finfo(dtype).min  # padding keys
    inputs[3][0, 0, 3, :] = np.finfo(dtype).min  # a row with no key left
    got, want = run_both(cpu, gpu, dev, "attention", inputs, [out], ints=ints + [0], floats=(0.0, 0.0))
    assert np.isfinite(want[0]).all() and np.abs(want[0][0, 3]).max() > 0
    close("attention", got[0], want[0])


def test_attention_refuses_a_value_head_too_large_for_the_gpu_kernel(gpu, dev):
    q = dev.to_device( np.ones((1, 1, 2, 8), F32))
    v = dev.to_device( np.ones((1, 1, 2, 300), F32))
    y = dev.to_device( np.zeros((1, 1, 2, 300), F32))
    with pytest.raises(rt.HipdnnEpError, match="head sizes up to 512 .* and 256 .*; got 8 and 300"):
        _core.call_kernel(gpu, "hipdnn_ep_kernel_attention", [q, q, v, None], [y], [0, 0, 0], [0.0, 0.0], [])
