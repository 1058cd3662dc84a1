#!/usr/bin/env python3
"""A soak of onnxruntime-genai generating on hipdnn-ep: thousands of dynamic-shape decode steps over prompts
of different lengths, with the device memory read after each prompt and a clean teardown.

The system this EP replaces failed exactly here: after about 250 dynamic-shape iterations its attention kernel
failed thousands of times and the GPU faulted at teardown. One model serves every prompt; each prompt gets a
fresh generator of the same --max-length (so each one's KV cache is the same size) and generates greedily until
its share of --steps decode steps is done. Every --check-every steps the logits are read and must be finite.

Memory is read after each prompt, its generator released: the GPU's used memory (NVML) on a GPU backend, the
process's resident set on the CPU. After the first prompt it must stay within --memory-slack MiB of what the
first left. A run error (a kernel's data error included) ends the soak at once. Exit status 0 only when every
step ran, every logit was finite, memory stayed flat and the model was torn down.

    python tools/gpu/llm_genai_soak.py FOLDER --backend cuda [--steps 5000] [--prompts 1000,7,300,...]

FOLDER is an onnxruntime-genai model folder (tools/models/genai_builder_model.py or tools/models/llm_models.py).
Needs onnxruntime >= 1.31, onnxruntime-genai, hipdnn-ep and hipdnn-ep-compiler; nvidia-ml-py for GPU memory.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np
from llm_genai_check import hipdnn_model

DEFAULT_PROMPTS = "1000,7,300,64,2000,128,17,513"


class MemoryReader:
    """Used device memory in MiB (NVML, device 0) on a GPU backend; the process's resident set on the CPU."""

    def __init__(self, backend: str):
        self.what = "process resident set"
        self._nvml = None
        if backend != "cpu":
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.what = "GPU used memory (NVML)"

    def mib(self) -> float:
        if self._nvml is not None:
            return self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used / 2**20
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


def prompt_steps(prompts: list[int], total: int) -> list[int]:
    """The decode steps of each prompt: total split evenly, the first ones taking the remainder."""
    share, extra = divmod(total, len(prompts))
    return [share + (i < extra) for i in range(len(prompts))]


def soak_prompt(og, model, prompt: np.ndarray, steps: int, max_length: int, check_every: int) -> tuple[float, str]:
    """Appends the prompt and generates steps tokens greedily; (seconds per decode step, problem or '')."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, batch_size=1)
    gen = og.Generator(model, params)
    gen.append_tokens(prompt)
    start = time.perf_counter()
    for step in range(steps):
        if gen.is_done():
            return 0.0, f"generator done after {step} of {steps} steps (max_length {max_length})"
        if step % check_every == 0:
            logits = gen.get_logits()
            if not np.isfinite(logits).all():
                return 0.0, f"non-finite logits at step {step}"
        gen.generate_next_token()
    elapsed = time.perf_counter() - start
    del gen
    return elapsed / max(steps, 1), ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--backend", default="cpu", help="hipdnn-ep backend option (cpu, cuda, hip)")
    ap.add_argument("--steps", type=int, default=5000, help="decode steps over all prompts")
    ap.add_argument("--prompts", default=DEFAULT_PROMPTS, help="prompt lengths, comma-separated, in order")
    ap.add_argument("--max-length", type=int, help="every generator's max_length (default: longest prompt + its "
                    "steps, rounded up to 256)")
    ap.add_argument("--check-every", type=int, default=64, help="read and check the logits every N steps")
    ap.add_argument("--memory-slack", type=float, default=64.0, help="MiB memory may grow after the first prompt")
    ap.add_argument("--cache-dir", help="hipdnn-ep compile cache folder")
    args = ap.parse_args(argv)

    import onnxruntime_genai as og

    folder = Path(args.folder)
    config = json.loads((folder / "genai_config.json").read_text())
    vocab, context = config["model"]["vocab_size"], config["model"]["context_length"]
    prompts = [int(n) for n in args.prompts.split(",")]
    steps = prompt_steps(prompts, args.steps)
    max_length = args.max_length or -(-max(p + s for p, s in zip(prompts, steps, strict=True)) // 256) * 256
    if max_length > context:
        print(f"max_length {max_length} is past the model's context length {context}: use fewer steps or "
              f"shorter prompts")
        return 2
    memory = MemoryReader(args.backend)
    before = memory.mib()
    start = time.perf_counter()
    model = hipdnn_model(folder, args.backend, args.cache_dir)
    # onnxruntime-genai keeps the KV cache and logits in the memory of its device: CPU means host memory, copied
    # to and from the EP's device every step
    print(f"hipdnn-ep ({args.backend}) model loaded in {time.perf_counter() - start:.1f} s; {memory.what} "
          f"{before:.0f} -> {memory.mib():.0f} MiB; max_length {max_length}; onnxruntime-genai's device "
          f"{getattr(model, 'device_type', '?')}", flush=True)

    rng = np.random.default_rng(0)
    after_prompt: list[float] = []
    done, failure = 0, ""
    for length, count in zip(prompts, steps, strict=True):
        prompt = rng.integers(3, vocab, (1, length)).astype(np.int32)
        try:
            per_step, failure = soak_prompt(og, model, prompt, count, max_length, args.check_every)
        except Exception as error:  # a run error ends the soak; it is the finding
            failure = f"run error: {error}"
        if failure:
            print(f"prompt {length}: {failure}")
            break
        gc.collect()
        after_prompt.append(memory.mib())
        done += count
        print(f"prompt {length:5d}: {count} steps, {per_step * 1e3:.3f} ms/step, {memory.what} "
              f"{after_prompt[-1]:.0f} MiB", flush=True)

    growth = max(after_prompt) - after_prompt[0] if after_prompt else 0.0
    flat = growth <= args.memory_slack
    del model
    gc.collect()
    print(f"teardown done; {memory.what} {memory.mib():.0f} MiB")
    ok = not failure and flat and done == args.steps
    print(f"{'ok' if ok else 'FAIL'}: {done} of {args.steps} decode steps over {len(after_prompt)} prompts, "
          f"{'no errors' if not failure else failure}; memory after the first prompt grew {growth:.0f} MiB "
          f"(allowed {args.memory_slack:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
