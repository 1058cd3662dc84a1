"""Pass fuse-gated-matmul-nbits: a gated MLP's two int4 projections and SiLU(gate) * up become one
`onnx.matmul_nbits_silu_mul` (one call of the runtime's matmul_nbits_silu_mul kernel) instead of three calls.

onnxruntime-genai's model builder writes a Llama MLP of an int4 model as two com.microsoft MatMulNBits of
one input A (the gate and up projections) and SiLU(gate) * up, which fuse-silu-mul (the pass before this one)
has made one `onnx.silu_mul`. A decode step then runs the gate GEMV, the up GEMV and SILU_MUL: three launches
a layer, the two [..., N] products written and read back. The runtime's matmul_nbits_silu_mul reads A once and
streams both weights, writing only the product. This pass rewrites

    y = onnx.silu_mul(MatMulNBits(A, B_gate, scales_gate [, zp_gate]), MatMulNBits(A, B_up, scales_up [, zp_up]))

into `onnx.matmul_nbits_silu_mul` (no ONNX op: a model cannot name it), whose shape rule (ops/llm.py) calls
the kernel. Its operands are the kernel's inputs A, B_gate, scales_gate, zero points of the gate, B_up,
scales_up, zero points of up, those left out (zero points: 8 each) absent: its `operand_roles` are kernel
input positions, as an imported op's are ONNX input positions. It is a rewrite pattern rooted at the
`onnx.silu_mul`, applied before refine-shapes as fuse-silu-mul is.

What is recognised: an `onnx.silu_mul` of x (under the sigmoid: the gate) and y (up), each the result of a
MatMulNBits, where
- both MatMulNBits read the same A (one SSA value) and have equal K, N and block_size and 4 bits;
- neither has g_idx (input 4) or bias (input 5); zero points may be given to either, or both, or neither;
- each result is read by the silu_mul alone (neither is a graph output nor read elsewhere: both ops go with
  the rewrite);
- x and y have one element type, float32 or float16 (the kernel's types). Their shapes are one too, A's dims
  but the last and N (the imported types of MatMulNBits results are mostly unranked: ONNX's shape inference
  does not know com.microsoft ops), so the silu_mul broadcasts nothing.
Anything else stays as imported, and so does every chain when compiling for a target runtime ABI without the
kernel (before 1.3): the two MatMulNBits and the SILU_MUL compile as before.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from ..abi import RuntimeAbi
from ..ops.llm import MATMUL_NBITS_SILU_MUL
from ..ops.node import kernel_in
from . import fusion

NAME = "fuse-gated-matmul-nbits"
USES_ABI = True  # run_pipeline passes the target manifest: no fusion for a runtime without the kernel

FLOAT32, FLOAT16 = 1, 10
_ATTRS = ("onnx.K", "onnx.N", "onnx.bits", "onnx.block_size")  # the MatMulNBits attributes the kernel takes


def _projection(value: ir.Value) -> ir.Operation | None:
    """The MatMulNBits whose result `value` is, read once, 4-bit, without g_idx or bias (its operands A, B,
    scales and, if given, zero points)."""
    op = hir.defining_op(value)
    if op is None or op.name != "onnx.matmul_nbits" or not fusion.one_use(value):
        return None
    roles = hir.get_ints(op, "operand_roles", list(range(len(op.operands))))
    if roles not in ([0, 1, 2], [0, 1, 2, 3]) or hir.get_int(op, "onnx.bits", 4) != 4:
        return None
    return op


def _attrs(op: ir.Operation) -> tuple[int | None, ...]:
    """K, N, bits and block_size of a MatMulNBits."""
    return tuple(hir.get_int(op, a, 4 if a == "onnx.bits" else None) for a in _ATTRS)


def _match(root: ir.Operation) -> tuple[list[ir.Value], list[int], ir.Operation, ir.Operation] | None:
    """(the kernel's operands, their kernel input positions, the gate's MatMulNBits, up's) where silu_mul `root`
    is SiLU(gate) * up of two MatMulNBits as described."""
    ins = fusion.given_inputs(root)
    if ins is None or len(ins) != 2:
        return None
    x, y = ins
    dtype = hir.element_dtype(x)
    if dtype not in (FLOAT32, FLOAT16) or hir.element_dtype(y) != dtype:
        return None
    gate, up = _projection(x), _projection(y)
    if gate is None or up is None or gate.operands[0] != up.operands[0] or _attrs(gate) != _attrs(up):
        return None
    g_ins, u_ins = list(gate.operands), list(up.operands)[1:]
    positions = [*range(len(g_ins)), *range(4, 4 + len(u_ins))]  # the gate's at 0..3, up's B, scales, zp at 4..6
    return g_ins + u_ins, positions, gate, up


def _rewrite(rewriter, root: ir.Operation, found) -> None:
    """Rewrites what _match found at a silu_mul (fusion.pattern calls it)."""
    operands, positions, gate, up = found
    with root.context:
        attrs = {a: gate.attributes[a] for a in _ATTRS if a in gate.attributes}
        attrs["operand_roles"] = hir.to_attr(positions)
    fusion.replace_chain(rewriter, root, "onnx.matmul_nbits_silu_mul", operands, [gate, up], attrs)


def run(module: ir.Module, abi: RuntimeAbi | None = None) -> ir.Module:
    """abi: the manifest compiled against (None: the bundled one)."""
    if not kernel_in(abi, MATMUL_NBITS_SILU_MUL):
        return module
    return fusion.apply(module, [("onnx.silu_mul", fusion.pattern(_match, _rewrite))], top_down=False)
