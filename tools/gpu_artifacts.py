"""Compiles the models of the GPU end-to-end tests for the cuda backend, with their feeds.

The GPU test machine has no MLIR bindings, so the artifacts are compiled ahead of time where
the compiler is installed and travel with the source tree:

    python tools/gpu_artifacts.py [OUT_DIR]      (default: build/gpu-artifacts)

Each model gets OUT_DIR/<name>/ holding the artifact (program.so with its metadata) and
feeds.npz: the graph inputs (one set per shape, `<shape>/<input>`) then the weights in
metadata order (`weight/<i>`). packages/runtime/tests/test_gpu_artifacts.py runs every artifact
on a cpu and a GPU state and compares them (pytest --gpu-artifacts=OUT_DIR).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
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
        # One BERT-base-shaped encoder layer (hidden 768, 12 heads, seq 128), for tools/gpu_bench.py.
        "bert_layer_seq128": (models.attention_model(batch=1, seq=128, hidden=768, heads=12),
                              {"b1s128": models.attention_feeds(1, 128, hidden=768, seed=5)}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(Path(__file__).resolve().parents[1] / "build/gpu-artifacts"))
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
