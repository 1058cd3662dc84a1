"""Pass check-dtypes: refuse, at compile time and naming the node, element types the kernels reject.

IR in/out: canonical IR after refine-shapes (unchanged when every op passes).  Which element types
each kernel accepts is read from the runtime ABI manifest (its kernels' `dtypes` and `input_dtypes`
tables), the same tables the runtime validates kernel arguments with, so the two cannot drift.
Which operands of one op share a type, and how messages name an input, is the op's `Kernel` entry
in the op registry (the manifest does not state it).
Checking here turns a run-time UNSUPPORTED into a compile-time UnsupportedError.
"""

from __future__ import annotations

from functools import cache

from torch_mlir import ir

from .. import ir as hir
from ..abi import AbiFunction, RuntimeAbi, load_abi
from ..errors import UnsupportedError
from ..ops import Kernel, kernel

NAME = "check-dtypes"
USES_ABI = True  # run_pipeline passes the target manifest


@cache
def _bundled() -> RuntimeAbi:
    return load_abi()


def _kernel_fn(entry: Kernel | None, abi: RuntimeAbi) -> AbiFunction | None:
    return abi.functions.get(abi.name(entry.kernel)) if entry else None


def _names(codes: frozenset[int]) -> str:
    return " or ".join(hir.DTYPE_NAMES[c] for c in sorted(codes))


def run(module: ir.Module, abi: RuntimeAbi | None = None) -> ir.Module:
    """abi: the manifest the graph is compiled against (default: the bundled one)."""
    abi = abi or _bundled()
    for op in hir.ops(module):
        if not op.name.startswith("hipdnn.") or not op.operands or op.name in ("hipdnn.host_tensor",
                                                                                  "hipdnn.materialize"):
            continue  # host values' operands are index elements, not data
        where = hir.get_str(op, "onnx.node", op.name)
        # by kernel input position (ops with optional inputs say which operand is which: hipdnn.slots)
        slots = hir.get_ints(op, "hipdnn.slots", list(range(len(op.operands))))
        dtypes = dict(zip(slots, (hir.element_dtype(v) for v in op.operands), strict=True))
        entry = kernel(op.name)
        fn = _kernel_fn(entry, abi)
        kind = hir.get_str(op, "op")
        own_rules: dict[int, frozenset[int]] = {}
        if fn is not None:
            allowed = fn.input0_dtypes(kind)
            if allowed is not None and 0 in entry.labels:
                own_rules[0] = allowed
            elif allowed is not None and dtypes[0] not in allowed:
                what = f"{entry.shown or op.name.split('.', 1)[1]}{' ' + kind if kind else ''}"
                raise UnsupportedError(f"{where}: {what} does not support element type {hir.DTYPE_NAMES[dtypes[0]]}")
            own_rules.update(fn.later_input_dtypes())
        same = [i for i in entry.same_type_operands(max(slots) + 1) if i in dtypes] if entry else []
        if len({dtypes[i] for i in same}) > 1:
            names = ", ".join(hir.DTYPE_NAMES[dtypes[i]] for i in same)
            raise UnsupportedError(f"{where}: operands of mixed element types ({names}) are not supported")
        # Parameter inputs the IR keeps as attributes (reduce axes, transpose perm, slice starts and
        # steps) are not operands here: the lowering passes them as int64, which
        # runtime_calls.validate checks the manifest accepts.
        for i, allowed in sorted(own_rules.items()):
            if i in dtypes and dtypes[i] not in allowed:
                label = entry.labels.get(i, f"input {i}")
                raise UnsupportedError(f"{where}: {label} must be {_names(allowed)}")
    return module
