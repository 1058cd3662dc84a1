"""The LLM kernels alone on a GPU, at Llama-3.1-8B's shapes, against their floors, in one table.

    python tools/bench/llm_kernel_bench.py [--backend cuda] [--only gemv] [--iters 20] [--json FILE]

Each case calls one runtime kernel (hipdnn_ep_kernel_*) on device arrays through the runtime's Python
module, `--iters` times after a warm-up, and takes its device time from the CUDA profiler (CUPTI through
torch.profiler: the kernels' own durations, so the Python call's host time is not counted). The floors
are measured in the same run: the device-to-device copy bandwidth (bytes read + written over time, the
rate a memory-bound kernel can reach) and the fp16 matrix-product rate (torch.matmul, 8192^3). A
memory-bound case (decode GEMV, rms_norm, decode attention) reports the bytes it must move over its time
and its time over bytes / copy bandwidth; a compute-bound one (prefill projections and attention) its
useful FLOP/s and its time over FLOPs / matrix rate (the causal half only, for attention).

Shapes: hidden 4096, intermediate 14336, 32 query and 8 KV heads of 128, vocabulary 128256; int4 weights
in blocks of 128 with zero points (the decode GEMVs and a 128-token prompt's projections also in blocks of 32
without, the model builder's default); float16 activations. The gated MLP's gate and up projections with
SiLU(gate) * up in one call (matmul_nbits_silu_mul) are timed where the runtime has that kernel. Needs
torch with CUDA and a GPU build of the runtime (HIPDNN_EP_BACKENDS="cpu;cuda").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from gpu_timing import kernel_profile  # noqa: E402

HIDDEN, INTER, HEADS, KV_HEADS, HEAD, VOCAB, BLOCK = 4096, 14336, 32, 8, 128, 128256, 128


@dataclass
class Case:
    group: str             # gemv, prefill-matmul, rms_norm, gqa-decode, gqa-prefill, attention
    name: str
    kernel: str            # runtime kernel name without the hipdnn_ep_kernel_ prefix
    make: Callable         # (torch, rng) -> (inputs, outputs, ints, floats)
    bytes_moved: int = 0   # memory-bound cases: bytes the kernel must read and write
    flops: int = 0         # compute-bound cases: useful floating-point operations
    sets: int = 1          # input sets the calls rotate through, so that a case's data is not read from L2


def _nbits(m: int, k: int, n: int, block: int = BLOCK, zero_points: bool = True) -> tuple[Callable, int]:
    blocks = k // block

    def make(torch, rng):
        dev = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        b = dev(rng.integers(0, 256, (n, blocks, block // 2), dtype=np.uint8))
        scales = dev((rng.random(n * blocks) * 0.02).astype(np.float16))
        zp = dev(rng.integers(0, 256, n * ((blocks + 1) // 2), dtype=np.uint8)) if zero_points else None
        a = dev(rng.standard_normal((m, k)).astype(np.float16))
        y = torch.empty((m, n), dtype=torch.float16, device="cuda")
        return [a, b, scales, zp], [y], [k, n, 4, block], []

    weight_bytes = n * blocks * block // 2 + n * blocks * 2 + zero_points * n * ((blocks + 1) // 2)
    return make, weight_bytes + 2 * m * (k + n)


def _nbits_silu_mul(m: int, k: int, n: int, block: int = BLOCK, zero_points: bool = True) -> tuple[Callable, int]:
    """matmul_nbits_silu_mul: SiLU(A x gate) * (A x up), two weights of [n, k] on one A."""
    one, moved = _nbits(m, k, n, block, zero_points)

    def make(torch, rng):
        (a, *gate), y, ints, floats = one(torch, rng)
        (_, *up), _, _, _ = one(torch, rng)
        return [a, *gate, *up], y, ints, floats

    activations = 2 * m * (k + n)  # A read and Y written once, in float16
    return make, 2 * (moved - activations) + activations


def _weight_sets(moved: int) -> int:
    """Input sets of a decode GEMV whose weights together are several times the L2 cache (60 MB on an H200),
    as a decode step's layers are: one set of 8 to 30 MB would stay in L2 between calls."""
    return max(1, -(-(256 << 20) // moved))


def _rms_norm(rows: int, skip: bool) -> tuple[Callable, int]:
    def make(torch, rng):
        dev = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        x = dev(rng.standard_normal((rows, HIDDEN)).astype(np.float16))
        scale = dev(rng.standard_normal(HIDDEN).astype(np.float16))
        outs = [torch.empty((rows, HIDDEN), dtype=torch.float16, device="cuda") for _ in range(1 + skip)]
        inputs = [x, scale] + ([dev(rng.standard_normal((rows, HIDDEN)).astype(np.float16)), None] if skip else [])
        return inputs, outs, [1], [1e-5]

    tensors = 2 + 2 * skip  # x and y, plus skip and the sum
    return make, 2 * (tensors * rows * HIDDEN + HIDDEN)


def _gqa(seq: int, past: int) -> Callable:
    """GroupQueryAttention as onnxruntime-genai runs it: packed QKV, rotary fused, past and present one
    buffer of max_length (the shared-buffer mode) holding `past` valid tokens; the prompt when past is 0."""
    max_len = past + seq

    def make(torch, rng):
        dev = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        qkv = dev(rng.standard_normal((1, seq, (HEADS + 2 * KV_HEADS) * HEAD)).astype(np.float16))
        cache = [dev(rng.standard_normal((1, KV_HEADS, max_len, HEAD)).astype(np.float16)) for _ in range(2)]
        angles = np.arange(max_len)[:, None] / 10000 ** (np.arange(HEAD // 2) / (HEAD // 2))
        cos, sin = dev(np.cos(angles).astype(np.float16)), dev(np.sin(angles).astype(np.float16))
        seqlens = dev(np.array([past + seq - 1], np.int32))
        total = dev(np.array([past + seq], np.int32))
        out = torch.empty((1, seq, HEADS * HEAD), dtype=torch.float16, device="cuda")
        inputs = [qkv, None, None, cache[0], cache[1], seqlens, total, cos, sin]
        return inputs, [out, cache[0], cache[1]], [HEADS, KV_HEADS, -1, 1, 0], [0.0, 0.0]

    return make


def _attention(batch: int, seq: int, heads: int, head: int, causal: bool) -> Callable:
    """ONNX Attention as an encoder runs it once fused: rank-3 Q, K, V [batch, seq, heads * head] (the
    projections' outputs), an additive float16 padding mask [batch, 1, 1, seq]."""

    def make(torch, rng):
        dev = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        q, k, v = (dev(rng.standard_normal((batch, seq, heads * head)).astype(np.float16)) for _ in range(3))
        mask = dev(np.where(rng.random((batch, 1, 1, seq)) < 0.9, 0.0, -10000.0).astype(np.float16))
        out = torch.empty((batch, seq, heads * head), dtype=torch.float16, device="cuda")
        return [q, k, v, mask], [out], [heads, heads, int(causal)], [0.0, 0.0]

    return make


def cases() -> list[Case]:
    out = []
    for label, k, n in (("qkv_proj", HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD), ("o_proj", HIDDEN, HIDDEN),
                        ("gate/up_proj", HIDDEN, INTER), ("down_proj", INTER, HIDDEN), ("lm_head", HIDDEN, VOCAB)):
        make, moved = _nbits(1, k, n)
        out.append(Case("gemv", f"M 1 {label} {n}x{k}", "matmul_nbits", make, bytes_moved=moved,
                        sets=_weight_sets(moved)))
        # onnxruntime-genai's model builder quantizes in blocks of 32 without zero points by default
        make, moved = _nbits(1, k, n, block=32, zero_points=False)
        out.append(Case("gemv", f"M 1 {label} {n}x{k} block 32", "matmul_nbits", make, bytes_moved=moved,
                        sets=_weight_sets(moved)))
    # a gated MLP's gate and up projections and SiLU(gate) * up in one call (the compiler's fuse-gated-matmul-nbits)
    for block, zero_points in ((BLOCK, True), (32, False)):
        make, moved = _nbits_silu_mul(1, HIDDEN, INTER, block, zero_points)
        out.append(Case("gemv", f"M 1 gate+up SiLU {INTER}x{HIDDEN} block {block}", "matmul_nbits_silu_mul", make,
                        bytes_moved=moved, sets=_weight_sets(moved)))
    make, moved = _nbits(4, HIDDEN, INTER)
    out.append(Case("gemv", f"M 4 gate/up_proj {INTER}x{HIDDEN}", "matmul_nbits", make, bytes_moved=moved,
                    sets=_weight_sets(moved)))
    # a prompt's projections (the builder's blocks of 32 without zero points beside blocks of 128 with them)
    for label, k, n in (("qkv_proj", HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD), ("o_proj", HIDDEN, HIDDEN),
                        ("gate/up_proj", HIDDEN, INTER), ("down_proj", INTER, HIDDEN)):
        for block, zero_points in ((BLOCK, True), (32, False)):
            make, _ = _nbits(128, k, n, block, zero_points)
            out.append(Case("prefill-matmul", f"M 128 {label} {n}x{k} block {block}", "matmul_nbits", make,
                            flops=2 * 128 * k * n))
    for m in (512, 2048):
        make, _ = _nbits(m, HIDDEN, INTER)
        out.append(Case("prefill-matmul", f"M {m} gate/up_proj {INTER}x{HIDDEN}", "matmul_nbits", make,
                        flops=2 * m * HIDDEN * INTER))
    make, _ = _nbits_silu_mul(128, HIDDEN, INTER, 32, False)
    out.append(Case("prefill-matmul", f"M 128 gate+up SiLU {INTER}x{HIDDEN} block 32", "matmul_nbits_silu_mul",
                    make, flops=4 * 128 * HIDDEN * INTER))
    for rows in (1, 128, 2048):
        for skip in (False, True):
            make, moved = _rms_norm(rows, skip)
            out.append(Case("rms_norm", f"{rows}x{HIDDEN}{' skip+sum' if skip else ''}", "rms_norm", make,
                            bytes_moved=moved))
    for past in (128, 2048, 8192):
        kv_bytes = 2 * KV_HEADS * (past + 1) * HEAD * 2
        out.append(Case("gqa-decode", f"past {past}", "group_query_attention", _gqa(1, past),
                        bytes_moved=kv_bytes + 2 * (HEADS + 2 * KV_HEADS + HEADS) * HEAD))
    for seq in (128, 2048):
        causal_pairs = seq * (seq + 1) // 2
        out.append(Case("gqa-prefill", f"prompt {seq}", "group_query_attention", _gqa(seq, 0),
                        flops=4 * HEADS * HEAD * causal_pairs))
    for batch, seq, heads, head, causal in ((1, 128, 12, 64, False), (8, 128, 12, 64, False),
                                            (1, 1024, 16, 64, True)):
        pairs = seq * (seq + 1) // 2 if causal else seq * seq
        out.append(Case("attention", f"{'causal ' if causal else ''}{batch}x{seq} {heads}x{head}", "attention",
                        _attention(batch, seq, heads, head, causal), flops=4 * batch * heads * head * pairs))
    return out


def _device_us(torch, fn: Callable[[], None], iters: int, per_kernel: dict | None = None) -> float:
    """Mean device time of fn's kernels per call, from the CUDA profiler (gpu_timing.kernel_profile);
    per_kernel, when given, gets each kernel's share (by name)."""

    def step():
        fn()
        torch.cuda.synchronize()

    kernels = kernel_profile(step, iters)
    if per_kernel is not None:
        for label, _, us in kernels:
            per_kernel[label] = per_kernel.get(label, 0.0) + us
    return sum(us for _, _, us in kernels)


def measure_floors(torch) -> tuple[float, float]:
    """(copy bandwidth in bytes/s counting read + write, fp16 matrix rate in FLOP/s), measured here."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = _device_us(torch, lambda: dst.copy_(src), 10)
    a = torch.randn((8192, 8192), dtype=torch.float16, device="cuda")
    mm_us = _device_us(torch, lambda: torch.matmul(a, a), 5)
    return 2 * src.numel() / (copy_us * 1e-6), 2 * 8192**3 / (mm_us * 1e-6)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="run the cases whose group or name contains TEXT (repeatable)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)

    import hipdnn_ep_runtime as rt  # noqa: PLC0415
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("llm_kernel_bench: needs torch with a CUDA device", file=sys.stderr)
        return 2
    selected = [c for c in cases() if not args.only or any(t in c.group or t in c.name for t in args.only)]
    kernels = {f["name"] for f in rt.abi_manifest()["functions"]}
    for case in [c for c in selected if "hipdnn_ep_kernel_" + c.kernel not in kernels]:
        print(f"skipped: {case.name} (this runtime has no {case.kernel})")
        selected.remove(case)
    bandwidth, matrix_rate = measure_floors(torch)
    print(f"{torch.cuda.get_device_name()}: copy {bandwidth / 1e12:.2f} TB/s (read + write), "
          f"fp16 matrix {matrix_rate / 1e12:.0f} TFLOP/s")
    rows = []
    rng = np.random.default_rng(0)
    with rt.State(backend=args.backend) as state:
        for case in selected:
            made = [case.make(torch, rng) for _ in range(case.sets)]
            name = "hipdnn_ep_kernel_" + case.kernel
            turn = [0]

            def call(name=name, made=made, turn=turn):
                inputs, outputs, ints, floats = made[turn[0] % len(made)]
                turn[0] += 1
                rt._core.call_kernel(state, name, inputs, outputs, ints, floats)

            per_kernel: dict[str, float] = {}
            us = _device_us(torch, call, args.iters, per_kernel)
            state.synchronize()
            if case.bytes_moved:
                rate, floor_us = case.bytes_moved / us / 1e6, case.bytes_moved / bandwidth * 1e6
                rate_text = f"{rate:7.2f} TB/s"
            else:
                rate, floor_us = case.flops / us / 1e6, case.flops / matrix_rate * 1e6
                rate_text = f"{rate:7.1f} TFLOP/s"
            rows.append({"group": case.group, "case": case.name, "us": us, "rate": rate_text.strip(),
                         "floor_us": floor_us, "x_floor": us / floor_us, "kernels": per_kernel})
            del made
    print(f"\n{'group':<15} {'case':<32} {'us':>9} {'rate':>14} {'floor us':>9} {'x floor':>8}")
    for r in rows:
        print(f"{r['group']:<15} {r['case']:<32} {r['us']:>9.1f} {r['rate']:>14} {r['floor_us']:>9.1f} "
              f"{r['x_floor']:>8.2f}")
    for r in rows:  # the cases of several kernels: each one's time
        if len(r["kernels"]) > 1:
            print(f"  {r['case']}: " + ", ".join(f"{k} {v:.1f} us" for k, v in sorted(r["kernels"].items(),
                                                                                   key=lambda kv: -kv[1])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_bytes_per_s": bandwidth, "matrix_flops_per_s": matrix_rate, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
