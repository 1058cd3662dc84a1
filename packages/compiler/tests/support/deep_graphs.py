"""Deep graphs whose shape reasoning grows with depth unless it is bounded: each node's dims are built
from its input's dims used more than once (Add(y, Transpose(y)) broadcasts y's dims against each
other; Slice clamps start and end by the dim; exporters' Shape/Gather/Concat/Reshape arithmetic
reuses a dim per axis).  Shared by the compile-time regression tests and tools/bench/compile_bench_deep.py.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OPSET = 17


def _model(nodes, x_dims, out: str, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("y0", T.FLOAT, list(x_dims))],
                              [helper.make_tensor_value_info(out, T.FLOAT, None)], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _i64(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def add_transpose_chain(n: int, dims=("a", "b")) -> onnx.ModelProto:
    """y[k+1] = Add(y[k], Transpose(y[k])) n times (2n nodes): y's dims, unproven equal, broadcast
    against each other at every level."""
    nodes = []
    for k in range(n):
        nodes += [helper.make_node("Transpose", [f"y{k}"], [f"t{k}"], perm=[1, 0], name=f"transpose_{k}"),
                  helper.make_node("Add", [f"y{k}", f"t{k}"], [f"y{k + 1}"], name=f"add_{k}")]
    return _model(nodes, dims, f"y{n}")


def slice_chain(n: int) -> onnx.ModelProto:
    """y[k+1] = y[k][1:-1] along axis 0, n times: each count clamps its start and end by the dim."""
    nodes = [helper.make_node("Slice", [f"y{k}", "one", "minus_one", "axis0"], [f"y{k + 1}"], name=f"slice_{k}")
             for k in range(n)]
    return _model(nodes, ("a", 4), f"y{n}", [_i64("one", [1]), _i64("minus_one", [-1]), _i64("axis0", [0])])


def reshape_chain(n: int) -> onnx.ModelProto:
    """n blocks as exporters write shape code (7 nodes each): Shape, Gather dim 1, Unsqueeze, Concat
    [dim 1, -1], Reshape to it, Slice the first row off (end INT64_MAX), Concat the result with itself."""
    inits = [_i64("i1", 1), _i64("axis0", [0]), _i64("one", [1]), _i64("minus_one", [-1]),
             _i64("end", [2**63 - 1])]
    nodes = []
    for k in range(n):
        p, y = f"b{k}_", f"y{k}"
        nodes += [
            helper.make_node("Shape", [y], [p + "shape"], name=p + "shape"),
            helper.make_node("Gather", [p + "shape", "i1"], [p + "d1"], axis=0, name=p + "gather1"),
            helper.make_node("Unsqueeze", [p + "d1", "axis0"], [p + "d1_1"], name=p + "unsqueeze_d1"),
            helper.make_node("Concat", [p + "d1_1", "minus_one"], [p + "target"], axis=0, name=p + "target"),
            helper.make_node("Reshape", [y, p + "target"], [p + "r"], name=p + "reshape"),
            helper.make_node("Slice", [p + "r", "one", "end", "axis0"], [p + "s"], name=p + "slice"),
            helper.make_node("Concat", [p + "s", p + "s"], [f"y{k + 1}"], axis=0, name=p + "concat"),
        ]
    return _model(nodes, ("a", "b"), f"y{n}", inits)


PATTERNS = {"add_transpose": add_transpose_chain, "slice": slice_chain, "reshape": reshape_chain}


def expression_size(text: str) -> int:
    """Nodes of an S-expression (ops, symbols and literals), as symbolic.size counts them."""
    return len(text.replace("(", " ").replace(")", " ").split())


def expressions(meta: dict) -> list[str]:
    """Every dim expression an artifact's metadata spells: output dims, check values, memory plan,
    named symbols' definitions."""
    out = [d for o in meta["outputs"] for d in o["dims"]]
    out += [v for c in meta["checks"] for v in c["values"]]
    plan = meta["memory_plan"]
    out += [plan["pool_bytes"]] + [b[k] for b in plan["buffers"] for k in ("offset", "bytes")]
    out += [s["value"] for s in meta.get("symbols", [])]
    return [e for e in out if isinstance(e, str)]
