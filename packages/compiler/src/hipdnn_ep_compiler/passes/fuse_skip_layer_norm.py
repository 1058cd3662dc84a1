"""Pass fuse-skip-layer-norm: a residual Add feeding LayerNormalization becomes one SkipLayerNormalization.

Every encoder layer of a transformers export (BERT, RoBERTa, ViT, Whisper's encoder...) ends its attention
and its MLP with

    y = LayerNormalization(Add(residual, branch), scale, bias, axis=-1)

which is two kernel launches and a round trip of the sum through memory. This pass rewrites each such pair
into the import-level op of com.microsoft SkipLayerNormalization (`onnx.skip_layer_norm`, inputs input,
skip, gamma, beta), whose shape rule (ops/contrib.py) calls the runtime's skip_layer_norm kernel once.

It is fused only where the result is the same computation:
- the Add has two inputs of one float type (float32 or float16) and the same rank (2 or 3) and dims (a
  dynamic dim of one matching either of the other), so neither operand broadcasts; its result is read by
  the LayerNormalization alone (not a graph output);
- the LayerNormalization normalizes the last axis only (axis -1 or rank - 1), its Scale and B (if given)
  are rank-1 of the Add's type, it has the default stash_type (float) and only its output Y is used (Mean
  and InvStdDev are absent).
Anything else stays as imported, and nothing fuses when compiling for a runtime ABI without the
skip_layer_norm kernel (before 1.3): the Add and the LayerNormalization compile as before.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from ..abi import RuntimeAbi
from ..ops.llm import SKIP_LAYER_NORM
from ..ops.node import kernel_in
from . import fusion

NAME = "fuse-skip-layer-norm"
USES_ABI = True  # run_pipeline passes the target manifest: no fusion for a runtime without the kernel

FLOAT32, FLOAT16 = 1, 10


def _match(ln: ir.Operation) -> tuple[ir.Value, ir.Value, ir.Operation] | None:
    """(residual, branch, the Add) where LayerNormalization `ln` normalizes a residual sum as described."""
    if len(ln.results) != 1 or hir.get_ints(ln, "result_roles", [0]) != [0]:  # Y alone: no Mean, InvStdDev
        return None
    if hir.get_int(ln, "onnx.stash_type", 1) != 1:
        return None
    roles = hir.get_ints(ln, "operand_roles", list(range(len(ln.operands))))
    if roles not in ([0, 1], [0, 1, 2]):
        return None
    x = ln.operands[0]
    add = hir.defining_op(x)
    if add is None or add.name != "onnx.add" or not fusion.one_use(x):
        return None
    if hir.get_ints(add, "operand_roles", [0, 1]) != [0, 1] or len(add.operands) != 2:
        return None
    tx = fusion.ranked(x)
    dtype = hir.element_dtype(x)
    if tx is None or tx.rank not in (2, 3) or dtype not in (FLOAT32, FLOAT16):
        return None
    axis = hir.get_int(ln, "onnx.axis", -1)
    if axis not in (-1, tx.rank - 1):
        return None
    for param in ln.operands[1:]:
        t = fusion.ranked(param)
        if t is None or t.rank != 1 or hir.element_dtype(param) != dtype:
            return None
    a, b = add.operands
    if hir.element_dtype(a) != dtype or hir.element_dtype(b) != dtype:
        return None
    if not (fusion.same_shape(a, x) and fusion.same_shape(b, x)):
        return None
    return a, b, add


def _rewrite(rewriter, ln: ir.Operation, found) -> None:
    """Rewrites what _match found at a LayerNormalization (fusion.pattern calls it)."""
    a, b, add = found
    with ln.context, ln.location:
        epsilon = ir.FloatAttr.get(ir.F64Type.get(), hir.get_float(ln, "onnx.epsilon", 1e-5))
    fusion.replace_chain(rewriter, ln, "onnx.skip_layer_norm", [a, b, *ln.operands[1:]], [add],
                         {"onnx.epsilon": epsilon})


def run(module: ir.Module, abi: RuntimeAbi | None = None) -> ir.Module:
    """abi: the manifest compiled against (None: the bundled one)."""
    if not kernel_in(abi, SKIP_LAYER_NORM):
        return module
    return fusion.apply(module, [("onnx.layer_norm", fusion.pattern(_match, _rewrite))], top_down=True)
