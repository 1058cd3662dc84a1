"""Where an LLM's prefill and decode time goes on a GPU: every kernel the process runs (this EP's, ORT's,
the GEMM library's) recorded by torch.profiler through CUPTI, as tables of the kernels that take the most
device time, per prefill and per decode step. The kernels alone, against their floors, are
tools/bench/llm_kernel_bench.py's.

    python tools/bench/llm_profile.py MODEL_FOLDER [--ep hipdnn|cuda] [--option backend=cuda] [-l 128] [-g 16]

The model runs as `hipdnn-ep bench --io binding` runs it (hipdnn_ep.bench): one warm-up repetition, then
one profiled prefill and `-g` profiled decode steps. Needs torch with CUDA (CUPTI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def _kernel_table(prof, per: int, title: str, wall_ms: float, top: int) -> None:
    """The kernels of a profile, most device time first; times per `per` (prefill: 1, decode: steps)."""
    from torch.autograd import DeviceType  # noqa: PLC0415

    rows = [e for e in prof.key_averages() if e.device_type == DeviceType.CUDA and e.self_device_time_total > 0]
    total = sum(e.self_device_time_total for e in rows) / 1e3 / per
    rows.sort(key=lambda e: -e.self_device_time_total)
    print(f"\n{title}: {wall_ms:.3f} ms wall, {total:.3f} ms of kernels ({len(rows)} kinds), "
          f"{100 * total / wall_ms:.0f}% of the wall time")
    print(f"{'ms':>8} {'share':>6} {'calls':>6} {'us/call':>8}  kernel")
    for e in rows[:top]:
        ms = e.self_device_time_total / 1e3 / per
        print(f"{ms:>8.3f} {100 * ms / total:>5.1f}% {e.count / per:>6.0f} {e.self_device_time_total / e.count:>8.1f}  "
              f"{e.key[:110]}")


def profile_model(args: argparse.Namespace) -> None:
    import time  # noqa: PLC0415

    import torch  # noqa: PLC0415
    from hipdnn_ep import bench  # noqa: PLC0415
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

    options = dict(kv.split("=", 1) for kv in args.option)
    decoder = bench.Decoder.read(Path(args.model))
    t = time.perf_counter()
    sess, ep_device = bench._session(decoder, args.ep, options)
    print(f"session {time.perf_counter() - t:.1f} s; providers {sess.get_providers()}")
    kv_type = np.dtype(bench.NP_TYPES[{i.name: i for i in sess.get_inputs()}[decoder.past_key % 0].type])
    memory = bench.DeviceMemory(args.ep, ep_device, options)
    run = argparse.Namespace(batch_size=1, prompt_length=args.prompt_length, generation_length=args.generation_length)
    rng, cache, timings = np.random.default_rng(0), {}, ([], [])
    for _ in range(2):  # warm-up: first shapes, then graph capture of repeated shapes
        bench._feeds_bound(decoder, sess, run, kv_type, rng, timings, False, memory, decoder.shared_kv, cache)
    prefill, decode = profile(activities=[ProfilerActivity.CUDA]), profile(activities=[ProfilerActivity.CUDA])

    def after(step: int) -> None:  # the prompt's profile ends with its step, the decode steps' starts after it
        if step == 0:
            prefill.__exit__(None, None, None)
            decode.__enter__()
        if step == args.generation_length:
            decode.__exit__(None, None, None)

    timings = ([], [])
    prefill.__enter__()
    bench._feeds_bound(decoder, sess, run, kv_type, rng, timings, True, memory, decoder.shared_kv, cache,
                       after_step=after)
    torch.cuda.synchronize()
    _kernel_table(prefill, 1, f"prefill {args.prompt_length} ({args.ep})", timings[0][0] * 1e3, args.top)
    steps = len(timings[1])
    if steps:
        _kernel_table(decode, steps, f"decode step, mean of {steps} ({args.ep})",
                      1e3 * sum(timings[1]) / steps, args.top)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="onnxruntime-genai model folder")
    ap.add_argument("--ep", choices=("hipdnn", "cuda"), default="hipdnn")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="hipdnn-ep option")
    ap.add_argument("-l", "--prompt-length", type=int, default=128)
    ap.add_argument("-g", "--generation-length", type=int, default=16)
    ap.add_argument("--top", type=int, default=15, help="kernels per table")
    args = ap.parse_args(argv)
    profile_model(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
