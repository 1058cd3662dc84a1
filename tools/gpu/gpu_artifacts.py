"""Compiles the models of the GPU end-to-end tests for the cuda backend, with their feeds.

The GPU test machine has no MLIR bindings, so the artifacts are compiled ahead of time where
the compiler is installed and travel with the source tree:

    python tools/gpu/gpu_artifacts.py [OUT_DIR]      (default: build/gpu-artifacts)

Each model gets OUT_DIR/<name>/ holding the artifact (program.so with its metadata) and
feeds.npz: the graph inputs (one set per shape, `<shape>/<input>`) then the weights in
metadata order (`weight/<i>`). packages/runtime/tests/test_gpu_artifacts.py runs every artifact
on a cpu and a GPU state and compares them (pytest --gpu-artifacts=OUT_DIR).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
import llm_models  # noqa: E402
import models  # noqa: E402


def _feeds_attention(shapes: list[tuple[int, int]]) -> dict[str, dict[str, np.ndarray]]:
    return {f"b{b}s{s}": models.attention_feeds(b, s, hidden=64, seed=b * 1000 + s) for b, s in shapes}


def three_node_model(width: int = 64) -> onnx.ModelProto:
    """y = relu(x + a) * b on [1, width] float32: the per-Run overhead benchmark's small graph."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), n) for n in ("a", "b")]
    nodes = [helper.make_node("Add", ["x", "a"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Mul", ["r", "b"], ["y"])]
    graph = helper.make_graph(nodes, "three_node", [helper.make_tensor_value_info("x", T.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [1, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reshape_target_model() -> onnx.ModelProto:
    """relu(reshape(x, target)) with the target a graph input: the program reads it on the host
    (hipdnn_ep_memcpy DEVICE_TO_HOST), which keeps it from being captured into a graph."""
    from onnx import TensorProto as T
    from onnx import helper

    nodes = [helper.make_node("Reshape", ["x", "target"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "reshape_target", [helper.make_tensor_value_info("x", T.FLOAT, [2, 6]),
                                                        helper.make_tensor_value_info("target", T.INT64, [2])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["rows", "cols"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def embedding_model(vocab: int = 50, hidden: int = 16) -> onnx.ModelProto:
    """sigmoid(table[ids]) * scale with ids [batch, seq] int64 (a BERT embedding lookup): gather
    checks its indices on the device."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal((vocab, hidden)).astype(np.float32), "table"),
             numpy_helper.from_array(rng.standard_normal(hidden).astype(np.float32), "scale")]
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"]), helper.make_node("Sigmoid", ["e"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["y"])]
    graph = helper.make_graph(nodes, "embedding", [helper.make_tensor_value_info("ids", T.INT64, ["batch", "seq"])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def int_division_model() -> onnx.ModelProto:
    """(a / b) + a on int64 [n]: integer division checks its divisors on the device."""
    from onnx import TensorProto as T
    from onnx import helper

    nodes = [helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Add", ["q", "a"], ["y"])]
    graph = helper.make_graph(nodes, "int_division", [helper.make_tensor_value_info("a", T.INT64, ["n"]),
                                                      helper.make_tensor_value_info("b", T.INT64, ["n"])],
                              [helper.make_tensor_value_info("y", T.INT64, ["n"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# One-layer Llama-like LLMs (tools/models/llm_models.py): the fixed-shape decode step with the shared KV
# buffer (GroupQueryAttention with fused rotary), and the dynamic model with RotaryEmbedding nodes.
LLM_TINY = llm_models.LlamaSpec(vocab=128, layers=1, max_length=16)
LLM_DECODE = dataclasses.replace(LLM_TINY, shared_kv=True).fixed("decode", 0)
LLM_ROTARY = dataclasses.replace(LLM_TINY, rotary="separate", packed_qkv=False)
# The float16 decode step in onnxruntime-genai's model builder's layout (blocks of 32, no zero points): on
# CUDA its int4 products take the tensor-core GEMV (gate and up as the paired form), reading the weights
# before their stream predecessor ends.
LLM_HALF = dataclasses.replace(LLM_TINY, hidden=128, intermediate=256, head_dim=32, dtype="float16",
                               shared_kv=True).fixed("decode", 0)


def llm_model(spec: llm_models.LlamaSpec) -> onnx.ModelProto:
    with tempfile.TemporaryDirectory() as folder:
        return onnx.load(llm_models.write_model(spec, folder, seed=3, external=False) / "model.onnx")


def _feeds_llm(spec: llm_models.LlamaSpec, steps: list[tuple[int, int]]) -> dict[str, dict[str, np.ndarray]]:
    return {f"s{seq}p{past}": llm_models.feeds(spec, 1, seq, past, seed=seq * 100 + past) for seq, past in steps}


def cases() -> dict[str, tuple[onnx.ModelProto, dict[str, dict[str, np.ndarray]]]]:
    """name -> (model, {shape label: feeds}); dynamic models run at several shapes."""
    rng = np.random.default_rng(0)
    chain_feeds = {f"b{b}s{s}": {"x": rng.standard_normal((b, s, 8)).astype(np.float32)} for b, s in
                   [(1, 3), (2, 17), (4, 128)]}
    return {
        "attention_dynamic": (models.attention_model(hidden=64, heads=4),
                              _feeds_attention([(1, 1), (2, 7), (1, 128), (3, 33)])),
        "attention_seq128": (models.attention_model(batch=1, seq=128, hidden=64, heads=4),
                             _feeds_attention([(1, 128)])),
        "shape_chain_dynamic": (models.shape_chain_model(hidden=8), chain_feeds),
        "three_node": (three_node_model(), {"w64": {"x": rng.standard_normal((1, 64)).astype(np.float32)}}),
        "reshape_target_input": (reshape_target_model(), {
            f"t{r}x{c}": {"x": rng.standard_normal((2, 6)).astype(np.float32), "target": np.array([r, c], np.int64)}
            for r, c in [(3, 4), (12, 1)]}),
        "embedding_dynamic": (embedding_model(), {
            f"b{b}s{q}": {"ids": rng.integers(0, 50, (b, q), dtype=np.int64)} for b, q in [(1, 5), (2, 9)]}),
        "int_division_dynamic": (int_division_model(), {
            f"n{n}": {"a": rng.integers(-1000, 1000, n, dtype=np.int64), "b": rng.integers(1, 20, n, dtype=np.int64)}
            for n in (7, 300)}),
        "llm_decode_shared_kv": (llm_model(LLM_DECODE), _feeds_llm(LLM_DECODE, [(1, 5), (1, 9)])),
        "llm_rotary_dynamic": (llm_model(LLM_ROTARY), _feeds_llm(LLM_ROTARY, [(1, 5), (4, 0)])),
        "llm_decode_float16": (llm_model(LLM_HALF), _feeds_llm(LLM_HALF, [(1, 5), (1, 9)])),
        # One BERT-base-shaped encoder layer (hidden 768, 12 heads, seq 128), for tools/gpu/gpu_bench.py.
        "bert_layer_seq128": (models.attention_model(batch=1, seq=128, hidden=768, heads=12),
                              {"b1s128": models.attention_feeds(1, 128, hidden=768, seed=5)}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(Path(__file__).resolve().parents[2] / "build/gpu-artifacts"))
    parser.add_argument("--backend", default="cuda", choices=("cuda", "hip"))
    args = parser.parse_args(argv)
    import hipdnn_ep_compiler as hc

    out = Path(args.out)
    for name, (model, feeds) in cases().items():
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        model_path = directory / "model.onnx"
        onnx.save(model, model_path)
        info = hc.compile_model(model_path, directory, backend=args.backend)
        weights = hc.load_weights(directory, model_path)
        arrays = {f"{label}/{k}": v for label, f in feeds.items() for k, v in f.items()}
        arrays |= {f"weight/{i}": np.array(w, order="C") for i, w in enumerate(weights)}  # keeps 0-d
        np.savez(directory / "feeds.npz", **arrays)
        model_path.unlink()  # the weights travel in feeds.npz
        print(f"{name}: {len(info.metadata['imports'])} imports, {len(weights)} weights, "
              f"shapes {', '.join(feeds)} -> {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
