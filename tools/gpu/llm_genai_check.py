#!/usr/bin/env python3
"""onnxruntime-genai on hipdnn-ep (any backend) against ONNX Runtime's CPU EP, logits step by step.

One model per EP serves prompts of 7, 128, 64, 128 and 7 tokens, each followed by decode steps that
feed both the reference's greedy token (random weights give near-flat distributions, so logits are
compared, not tokens); then a batch of 2. Prints the largest logit difference and exits 1 above the
tolerance. The folder is one tools/models/llm_models.py wrote; its MatMulNBits are set to accuracy_level 0
first (at level 4 ORT's CPU kernel quantizes activations to int8, which our kernels do not).

    python tools/gpu/llm_genai_check.py FOLDER --backend cuda [--tolerance 1e-3] [--steps 6]

Needs onnxruntime >= 1.31, onnxruntime-genai, hipdnn-ep and hipdnn-ep-compiler.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnx


def set_accuracy_level_0(folder: Path) -> None:
    """Rewrites the folder's model.onnx with every accuracy_level attribute 0 (untouched if none differs)."""
    path = folder / "model.onnx"
    model = onnx.load(str(path), load_external_data=False)
    changed = False
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.name == "accuracy_level" and attr.i != 0:
                attr.i, changed = 0, True
    if changed:
        onnx.save(model, str(path))


def hipdnn_model(folder: Path, backend: str, cache_dir: str | None = None):
    """An onnxruntime-genai Model of the folder with hipdnn-ep as its only provider (compiler run by this
    Python), on the backend's device."""
    import hipdnn_ep
    import onnxruntime_genai as og

    name = hipdnn_ep.get_ep_name()
    og.register_execution_provider_library(name, hipdnn_ep.get_library_path())
    config = og.Config(str(folder))
    config.clear_providers()
    config.append_provider(name)
    config.set_provider_option(name, "backend", backend)
    config.set_provider_option(name, "compiler_python", sys.executable)  # this environment has the compiler
    if cache_dir:
        config.set_provider_option(name, "cache_dir", cache_dir)
    if backend != "cpu":
        # onnxruntime-genai hands ORT every EP device of the provider unless filtered: keep the GPU one.
        config.set_decoder_provider_options_hardware_device_type(name, "gpu")
    return og.Model(config)


def paired_generators(models, prompt: np.ndarray, new_tokens: int) -> list:
    """An onnxruntime-genai generator per model, each with the prompt [batch, length] appended and room
    for new_tokens more."""
    import onnxruntime_genai as og

    gens = []
    for model in models:
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=prompt.shape[1] + new_tokens, batch_size=prompt.shape[0])
        gen = og.Generator(model, params)
        gen.append_tokens(prompt)
        gens.append(gen)
    return gens


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--backend", default="cpu", help="hipdnn-ep backend option (cpu, cuda, hip)")
    ap.add_argument("--tolerance", type=float, default=1e-4, help="max |logit difference| allowed")
    ap.add_argument("--steps", type=int, default=6, help="decode steps after each prompt")
    ap.add_argument("--cache-dir", help="hipdnn-ep compile cache folder")
    args = ap.parse_args(argv)

    import onnxruntime_genai as og

    folder = Path(args.folder)
    set_accuracy_level_0(folder)
    vocab = json.loads((folder / "genai_config.json").read_text())["model"]["vocab_size"]
    start = time.perf_counter()
    ours = hipdnn_model(folder, args.backend, args.cache_dir)
    print(f"hipdnn-ep ({args.backend}) model loaded in {time.perf_counter() - start:.1f} s", flush=True)
    reference = og.Model(str(folder))

    rng = np.random.default_rng(0)
    worst, scale, steps = 0.0, 0.0, 0
    for batch, length in ((1, 7), (1, 128), (1, 64), (1, 128), (1, 7), (2, 12)):
        prompt = rng.integers(3, vocab, (batch, length)).astype(np.int32)
        mine, ref = paired_generators((ours, reference), prompt, args.steps)
        for _ in range(args.steps):
            got, want = mine.get_logits(), ref.get_logits()
            if got.shape != want.shape:
                print(f"logits shape {got.shape} != reference {want.shape}")
                return 1
            worst = max(worst, float(np.abs(got - want).max()))
            scale = max(scale, float(np.abs(want).max()))
            steps += 1
            if batch == 1:  # the same token for both: the reference's greedy choice
                token = want.reshape(batch, -1).argmax(-1).astype(np.int32).reshape(batch, 1)
                mine.append_tokens(token)
                ref.append_tokens(token)
            else:  # a batch appends its prompt once; then each generates greedily
                mine.generate_next_token()
                ref.generate_next_token()
        print(f"batch {batch} prompt {length:4d}: max |logit difference| so far {worst:.3g}", flush=True)
    ok = worst <= args.tolerance
    print(f"{'ok' if ok else 'FAIL'}: {steps} steps, max |logit difference| {worst:.3g} (largest |logit| {scale:.3g}, "
          f"tolerance {args.tolerance:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
