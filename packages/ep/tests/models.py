"""Small ONNX models for the tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph: onnx.GraphProto, path: Path, opset: int = 17) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def elementwise(path: Path, dims: list, middle: str = "Mul") -> Path:
    """z = Relu(middle(Add(x, y), y)); middle=Cos (unsupported by the compiler) makes the EP split the graph."""
    nodes = [helper.make_node("Add", ["x", "y"], ["a"], name="add0")]
    if middle == "Cos":
        nodes.append(helper.make_node("Cos", ["a"], ["b"], name="cos"))
        nodes.append(helper.make_node("Add", ["b", "y"], ["c"], name="add1"))
    else:
        nodes.append(helper.make_node(middle, ["a", "y"], ["c"], name="mid"))
    nodes.append(helper.make_node("Relu", ["c"], ["z"], name="relu0"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
                                        helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, dims)])
    return save(g, path)


def with_weights(path: Path, n: int, seed: int = 1) -> Path:
    """z = Relu(x * w_big + w_small) with x: [n]; w_big > 1 KiB goes external; `seed` picks the weights' values."""
    rng = np.random.default_rng(seed)
    w_big = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "w_big")
    w_small = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32)[:n], "w_small")
    nodes = [helper.make_node("Mul", ["x", "w_big"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "w_small"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["z"], name="relu")]
    g = helper.make_graph(nodes, "w", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [n])],
                          initializer=[w_big, w_small])
    return save(g, path)


def reference(x: np.ndarray, y: np.ndarray, middle: str = "Mul") -> np.ndarray:
    a = x + y
    c = {"Mul": lambda: a * y, "Add": lambda: a + y, "Cos": lambda: np.cos(a) + y}[middle]()
    return np.maximum(c, 0)


def matmul_chain(path: Path, widths: list[int]) -> Path:
    """x: [batch, seq, widths[0]] through one MatMul per further width (weights seeded):
    activations grow with batch * seq, so a memory limit admits small shapes only."""
    rng = np.random.default_rng(2)
    weights, nodes, prev = [], [], "x"
    for i, (k, n) in enumerate(zip(widths, widths[1:], strict=False)):
        weights.append(numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), f"w{i}"))
        out = "y" if i == len(widths) - 2 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out], name=f"matmul{i}"))
        prev = out
    g = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", widths[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", widths[-1]])],
                          initializer=weights)
    return save(g, path)


def many_initializers(path: Path, count: int = 16) -> Path:
    """z = ((x + b0) + b1) ... with `count` small initializers: ORT hands them to the EP in
    an order that changes between sessions, which the subgraph the EP writes must not show."""
    rng = np.random.default_rng(4)
    weights, nodes, prev = [], [], "x"
    for i in range(count):
        weights.append(numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), f"b{i}"))
        out = "z" if i == count - 1 else f"s{i}"
        nodes.append(helper.make_node("Add", [prev, f"b{i}"], [out], name=f"add{i}"))
        prev = out
    g = helper.make_graph(nodes, "inits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4])], initializer=weights)
    return save(g, path)
