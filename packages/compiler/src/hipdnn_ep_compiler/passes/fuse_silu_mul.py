"""Pass fuse-silu-mul: a gated MLP's SiLU(gate) * up, spelled Mul(Mul(x, Sigmoid(x)), y), becomes one
`onnx.silu_mul` (one binary kernel call, op SILU_MUL) instead of three calls.

onnxruntime-genai's model builder writes a Llama MLP's SiLU as Sigmoid and Mul, then multiplies by the up
projection: three launches and passes over [batch, seq, intermediate] a layer, each a latency-bound launch
in a decode step. This pass rewrites the chain into the IR op `onnx.silu_mul` (no ONNX op: a model cannot
name it), whose shape rule (ops/onnx.py) calls the binary kernel's SILU_MUL, x * sigmoid(x) * y. It is a
rewrite pattern rooted at the outer `onnx.mul`, applied before refine-shapes as fuse-gelu is.

What is recognised: a Mul of y and Mul(x, Sigmoid(x)) (the operands of both Muls in either order), where
- the Sigmoid's result and the inner Mul's have one user each, the chain's next op (neither is a graph
  output nor read elsewhere: the ops go with the rewrite);
- x is float32, float16 or float64 (the kernel's types) and y has its type.
The outer Mul broadcasts x's and y's shapes as Mul does. Anything else stays as imported, and so does every
chain when compiling for a target runtime ABI before 1.3 (no SILU_MUL).
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from ..abi import RuntimeAbi
from ..ops.node import enum_value_in
from . import fusion

NAME = "fuse-silu-mul"
USES_ABI = True  # run_pipeline passes the target manifest: no fusion for a runtime without SILU_MUL

_FLOATS = (1, 10, 11)  # FLOAT32, FLOAT16, FLOAT64


def _silu_of(value: ir.Value) -> tuple[ir.Value, list[ir.Operation]] | None:
    """(x, [the Mul, the Sigmoid]) where `value`, read once, is Mul(x, Sigmoid(x)) with the Sigmoid read once."""
    mul = hir.defining_op(value)
    if mul is None or mul.name != "onnx.mul" or not fusion.one_use(value):
        return None
    pair = fusion.given_inputs(mul)
    if pair is None or len(pair) != 2:
        return None
    for x, s in ((pair[0], pair[1]), (pair[1], pair[0])):
        sigmoid = hir.defining_op(s)
        if sigmoid is None or sigmoid.name != "onnx.sigmoid" or not fusion.one_use(s):
            continue
        if len(sigmoid.operands) == 1 and sigmoid.operands[0] == x:
            return x, [mul, sigmoid]
    return None


def _match(root: ir.Operation) -> tuple[ir.Value, ir.Value, list[ir.Operation]] | None:
    """(x, y, the chain's ops but the root) where Mul `root` is Mul(Mul(x, Sigmoid(x)), y)."""
    ins = fusion.given_inputs(root)
    dtype = hir.element_dtype(root.results[0])
    if ins is None or len(ins) != 2 or dtype not in _FLOATS:
        return None
    for silu, y in ((ins[0], ins[1]), (ins[1], ins[0])):
        found = _silu_of(silu)
        if found is not None and hir.element_dtype(found[0]) == dtype and hir.element_dtype(y) == dtype:
            return found[0], y, found[1]
    return None


def _rewrite(rewriter, root: ir.Operation, found) -> None:
    """Rewrites what _match found at a Mul (fusion.pattern calls it)."""
    x, y, ops = found
    fusion.replace_chain(rewriter, root, "onnx.silu_mul", [x, y], ops)


def run(module: ir.Module, abi: RuntimeAbi | None = None) -> ir.Module:
    """abi: the manifest compiled against (None: the bundled one, which has SILU_MUL)."""
    if not enum_value_in(abi, "binary_op", "SILU_MUL"):
        return module
    return fusion.apply(module, [("onnx.mul", fusion.pattern(_match, _rewrite))], top_down=False)
