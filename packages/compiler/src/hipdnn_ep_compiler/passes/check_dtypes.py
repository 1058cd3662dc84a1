"""Pass check-dtypes: refuse, at compile time and naming the node, element types the kernels reject.

IR in/out: canonical IR after refine-shapes (unchanged when every op passes).  Which element types
each kernel accepts is read from the runtime ABI manifest (its kernels' `dtypes` and `input_dtypes`
tables), the same tables the runtime validates kernel arguments with, so the two cannot drift.
That operands of one op share a type stays a rule here (the manifest does not state it).
Checking here turns a run-time UNSUPPORTED into a compile-time UnsupportedError.
"""

from __future__ import annotations

from functools import cache

from torch_mlir import ir

from .. import ir as hir
from ..abi import AbiFunction, RuntimeAbi, load_abi
from ..errors import UnsupportedError
from ..lowering.runtime_calls import KERNELS

NAME = "check-dtypes"
USES_ABI = True  # run_pipeline passes the target manifest

# Inputs whose rule is reported by what they are, not as the op's element type:
# "<label> must be <types>".  Other inputs with a rule of their own read "input <i>".
_INPUT_LABELS = {("hipdnn.where", 0): "the condition", ("hipdnn.gather", 1): "indices"}


@cache
def _bundled() -> RuntimeAbi:
    return load_abi()


def _kernel(op: ir.Operation, abi: RuntimeAbi) -> AbiFunction | None:
    entry = KERNELS.get(op.name)
    return abi.functions.get(abi.name(entry.kernel)) if entry else None


def _same_type_operands(op: ir.Operation) -> list[int]:
    if op.name in ("hipdnn.binary", "hipdnn.matmul", "hipdnn.gemm", "hipdnn.layer_norm", "hipdnn.concat"):
        return list(range(len(op.operands)))
    if op.name == "hipdnn.where":
        return [1, 2]
    return []


def _names(codes: frozenset[int]) -> str:
    return " or ".join(hir.DTYPE_NAMES[c] for c in sorted(codes))


def run(module: ir.Module, abi: RuntimeAbi | None = None) -> ir.Module:
    """abi: the manifest the graph is compiled against (default: the bundled one)."""
    abi = abi or _bundled()
    for op in hir.ops(module):
        if not op.name.startswith("hipdnn.") or not op.operands:
            continue
        where = hir.get_str(op, "onnx.node", op.name)
        dtypes = [hir.element_dtype_from_text(str(v.type)) for v in op.operands]
        kernel = _kernel(op, abi)
        kind = hir.get_str(op, "op")
        own_rules: dict[int, frozenset[int]] = {}
        if kernel is not None:
            allowed = kernel.input0_dtypes(kind)
            if allowed is not None and (op.name, 0) in _INPUT_LABELS:
                own_rules[0] = allowed
            elif allowed is not None and dtypes[0] not in allowed:
                what = f"{op.name.split('.', 1)[1]}{' ' + kind if kind else ''}"
                raise UnsupportedError(f"{where}: {what} does not support element type {hir.DTYPE_NAMES[dtypes[0]]}")
            own_rules.update(kernel.later_input_dtypes())
        same = _same_type_operands(op)
        if len({dtypes[i] for i in same}) > 1:
            names = ", ".join(hir.DTYPE_NAMES[dtypes[i]] for i in same)
            raise UnsupportedError(f"{where}: operands of mixed element types ({names}) are not supported")
        # Parameter inputs the IR keeps as attributes (reduce axes, transpose perm, slice starts and
        # steps) are not operands here: the lowering passes them as int64, which
        # runtime_calls.validate checks the manifest accepts.
        for i, allowed in sorted(own_rules.items()):
            if i < len(dtypes) and dtypes[i] not in allowed:
                label = _INPUT_LABELS.get((op.name, i), f"input {i}")
                raise UnsupportedError(f"{where}: {label} must be {_names(allowed)}")
    return module
