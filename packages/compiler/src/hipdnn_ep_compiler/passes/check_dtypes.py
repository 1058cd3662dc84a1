"""Pass check-dtypes: refuse, at compile time and naming the node, element types the kernels reject.

IR in/out: canonical IR after refine-shapes (unchanged when every op passes).  The rules are the
kernels' documented contract (packages/runtime/src/kernels): floating ops take float32/float16;
integer arithmetic takes int32/int64; both operands of a binary op share one type.  Checking here
turns a run-time UNSUPPORTED into a compile-time UnsupportedError.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from ..errors import UnsupportedError

NAME = "check-dtypes"

FLOAT = {1, 10}
INT = {6, 7}
BOOL = {9}


def _allowed(op: ir.Operation) -> set[int] | None:
    """Element types operand 0 may have (None: no rule)."""
    name = op.name
    kind = hir.get_str(op, "op")
    if name == "hipdnn.binary":
        return FLOAT if kind == "POW" else (FLOAT | INT | BOOL if kind == "EQUAL" else FLOAT | INT)
    if name == "hipdnn.unary":
        return FLOAT | INT if kind in ("RELU", "NEG") else FLOAT
    if name == "hipdnn.reduce":
        return FLOAT if kind == "MEAN" else FLOAT | INT
    if name in ("hipdnn.matmul", "hipdnn.gemm", "hipdnn.softmax", "hipdnn.layer_norm"):
        return FLOAT
    return None


def _same_type_operands(op: ir.Operation) -> list[int]:
    if op.name in ("hipdnn.binary", "hipdnn.matmul", "hipdnn.gemm", "hipdnn.layer_norm", "hipdnn.concat"):
        return list(range(len(op.operands)))
    if op.name == "hipdnn.where":
        return [1, 2]
    return []


def run(module: ir.Module) -> ir.Module:
    for op in hir.ops(module):
        if not op.name.startswith("hipdnn.") or not op.operands:
            continue
        where = hir.get_str(op, "onnx.node", op.name)
        dtypes = [hir.element_dtype_from_text(str(v.type)) for v in op.operands]
        allowed = _allowed(op)
        if allowed is not None and dtypes[0] not in allowed:
            kind = hir.get_str(op, "op")
            what = f"{op.name.split('.', 1)[1]}{' ' + kind if kind else ''}"
            raise UnsupportedError(f"{where}: {what} does not support element type {hir.DTYPE_NAMES[dtypes[0]]}")
        same = _same_type_operands(op)
        if len({dtypes[i] for i in same}) > 1:
            names = ", ".join(hir.DTYPE_NAMES[dtypes[i]] for i in same)
            raise UnsupportedError(f"{where}: operands of mixed element types ({names}) are not supported")
        if op.name == "hipdnn.where" and dtypes[0] not in BOOL:
            raise UnsupportedError(f"{where}: the condition must be bool")
        if op.name == "hipdnn.gather" and dtypes[1] not in INT:
            raise UnsupportedError(f"{where}: indices must be int32 or int64")
    return module
