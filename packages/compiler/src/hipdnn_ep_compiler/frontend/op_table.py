"""Which ONNX ops the frontend accepts, and the hipdnn IR op each becomes.

Contrib ops (com.microsoft) have their own table so that adding one is a one-line change.
"""

from __future__ import annotations

# ai.onnx op_type -> hipdnn IR op name (without the "hipdnn." prefix)
ONNX_OPS: dict[str, str] = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow",
    "Equal": "equal", "Less": "less", "Greater": "greater",
    "Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
    "Sqrt": "sqrt", "Neg": "neg", "Erf": "erf", "Gelu": "gelu",
    "MatMul": "matmul", "Gemm": "gemm", "Softmax": "softmax",
    "LayerNormalization": "layer_norm",
    "ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max",
    "Reshape": "reshape", "Transpose": "transpose", "Concat": "concat", "Slice": "slice",
    "Gather": "gather", "Unsqueeze": "unsqueeze", "Squeeze": "squeeze", "Shape": "shape",
    "Expand": "expand", "Cast": "cast", "Where": "where", "Identity": "identity",
}

# com.microsoft contrib ops -> hipdnn IR op name
CONTRIB_OPS: dict[str, str] = {
    "Gelu": "gelu",
}

DOMAINS: dict[str, dict[str, str]] = {"": ONNX_OPS, "ai.onnx": ONNX_OPS, "com.microsoft": CONTRIB_OPS}


def lookup(domain: str, op_type: str) -> str | None:
    table = DOMAINS.get(domain)
    return None if table is None else table.get(op_type)


def supported_ops() -> dict[str, list[str]]:
    """Supported op types per domain ("ai.onnx", "com.microsoft"), sorted."""
    return {"ai.onnx": sorted(ONNX_OPS), "com.microsoft": sorted(CONTRIB_OPS)}
