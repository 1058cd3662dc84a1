#!/usr/bin/env python3
"""An LLM written by onnxruntime-genai's own model builder, from a Hugging Face Llama checkpoint with random
weights (nothing downloaded).

tools/models/llm_models.py writes graphs shaped like the builder's output with onnx alone; this tool runs the
builder itself, so the EP is also measured on what users actually get from it. The checkpoint is written one
tensor at a time (safetensors shards of at most 2 GB, bfloat16), so an 8B-shaped model never sits in memory
whole; then `python -m onnxruntime_genai.models.builder -i CHECKPOINT -o OUT -p int4 -e cuda` runs with
extra options (block size, accuracy level...). The output folder is an onnxruntime-genai model folder, as
tools/bench/llm_session_bench.py --model and tools/gpu/llm_genai_check.py take.

    python tools/models/genai_builder_model.py OUT --size llama3-8b          (32 layers, about 5 GB of int4 weights)
    python tools/models/genai_builder_model.py OUT --size small --extra block_size=32
    python tools/models/genai_builder_model.py OUT --size llama3-8b --extra      (the builder's own defaults)

By default the int4 weights are in blocks of 128 (`--extra block_size=128 accuracy_level=0`); the builder's
own default, what a user gets without options, is blocks of 32 without zero points. onnxruntime-genai 0.18
renamed the options (`int4_block_size` is now `block_size`) and ignores the old names without a word, so
this tool rewrites the old names to the new ones.

Needs torch, transformers, safetensors, onnxruntime-genai and onnx_ir (what the builder imports).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from llm_models import SIZES, LlamaSpec, tokenizer_json

SHARD_BYTES = 2 << 30


def hf_config(spec: LlamaSpec) -> dict:
    """A transformers LlamaConfig (as config.json) with the spec's shape."""
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": spec.vocab, "hidden_size": spec.hidden, "intermediate_size": spec.intermediate,
        "num_hidden_layers": spec.layers, "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads, "head_dim": spec.head_dim,
        "max_position_embeddings": spec.max_length, "rms_norm_eps": spec.epsilon,
        "rope_theta": spec.rope_theta, "hidden_act": "silu", "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
    }


def checkpoint_tensors(spec: LlamaSpec):
    """(name, shape) of every weight of a LlamaForCausalLM, in the order transformers names them."""
    q, kv = spec.heads * spec.head_dim, spec.kv_heads * spec.head_dim
    yield "model.embed_tokens.weight", (spec.vocab, spec.hidden)
    for i in range(spec.layers):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (spec.hidden,)
        yield p + "self_attn.q_proj.weight", (q, spec.hidden)
        yield p + "self_attn.k_proj.weight", (kv, spec.hidden)
        yield p + "self_attn.v_proj.weight", (kv, spec.hidden)
        yield p + "self_attn.o_proj.weight", (spec.hidden, q)
        yield p + "post_attention_layernorm.weight", (spec.hidden,)
        yield p + "mlp.gate_proj.weight", (spec.intermediate, spec.hidden)
        yield p + "mlp.up_proj.weight", (spec.intermediate, spec.hidden)
        yield p + "mlp.down_proj.weight", (spec.hidden, spec.intermediate)
    yield "model.norm.weight", (spec.hidden,)
    yield "lm_head.weight", (spec.vocab, spec.hidden)


def write_checkpoint(spec: LlamaSpec, folder: Path, seed: int = 0) -> None:
    """config.json, a byte-level BPE tokenizer and random bfloat16 weights in safetensors shards."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(hf_config(spec), indent=2) + "\n")
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json(spec.vocab), ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "model_max_length": spec.max_length,
         "tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": False}, indent=2) + "\n")
    generator = torch.Generator().manual_seed(seed)
    weight_map: dict[str, str] = {}
    shard: dict = {}
    shard_bytes = 0

    def flush() -> None:  # one shard in memory at a time
        nonlocal shard, shard_bytes
        name = f"model-{len(set(weight_map.values())):05d}.safetensors"
        save_file(shard, str(folder / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, name))
        shard, shard_bytes = {}, 0

    for name, shape in checkpoint_tensors(spec):
        if name.endswith("norm.weight"):
            tensor = torch.ones(shape, dtype=torch.bfloat16)
        else:  # std 1/sqrt(fan_in) keeps the activations of a deep random stack bounded
            tensor = (torch.randn(shape, generator=generator) * shape[-1] ** -0.5).to(torch.bfloat16)
        if shard and shard_bytes + tensor.numel() * 2 > SHARD_BYTES:
            flush()
        shard[name] = tensor
        shard_bytes += tensor.numel() * 2
    flush()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


RENAMED_OPTIONS = {"int4_block_size": "block_size", "int4_accuracy_level": "accuracy_level"}


def builder_options(extra: list[str]) -> list[str]:
    """The --extra_options pairs with the names onnxruntime-genai 0.18 renamed written the new way."""
    out = []
    for pair in extra:
        key, sep, value = pair.partition("=")
        out.append(RENAMED_OPTIONS.get(key, key) + sep + value)
    return out


def run_builder(checkpoint: Path, output: Path, precision: str, provider: str, extra: list[str]) -> float:
    """Runs the builder in its own process; returns its wall seconds."""
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(checkpoint), "-o", str(output),
               "-p", precision, "-e", provider, "-c", str(output.parent / (output.name + ".cache"))]
    if extra:
        command += ["--extra_options", *builder_options(extra)]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", type=Path, help="the onnxruntime-genai model folder to write")
    ap.add_argument("--size", default="tiny", choices=sorted(SIZES), help="a tools/models/llm_models.py shape")
    ap.add_argument("--precision", default="int4", choices=["int4", "fp16", "fp32"])
    ap.add_argument("--execution-provider", default="cuda", choices=["cpu", "cuda"],
                    help="the builder's target: cuda writes float16 activations, cpu float32")
    ap.add_argument("--extra", nargs="*", default=["block_size=128", "accuracy_level=0"],
                    help="the builder's --extra_options KEY=VALUE pairs (none: the builder's defaults)")
    ap.add_argument("--keep-checkpoint", action="store_true", help="keep the random Hugging Face checkpoint")
    args = ap.parse_args(argv)
    spec = SIZES[args.size]
    checkpoint = args.output.parent / (args.output.name + ".hf")
    start = time.perf_counter()
    write_checkpoint(spec, checkpoint)
    print(f"checkpoint written in {time.perf_counter() - start:.1f} s: {checkpoint}")
    seconds = run_builder(checkpoint, args.output, args.precision, args.execution_provider, args.extra)
    print(f"builder ran in {seconds:.1f} s: {args.output}")
    if not args.keep_checkpoint:
        shutil.rmtree(checkpoint, ignore_errors=True)
        shutil.rmtree(args.output.parent / (args.output.name + ".cache"), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
