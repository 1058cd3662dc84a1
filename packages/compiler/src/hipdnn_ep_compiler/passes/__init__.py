"""The pass pipeline, in order.  Each pass is one module with NAME and run(module) -> module."""

from __future__ import annotations

from torch_mlir import ir

from .. import dialect
from .. import ir as hir
from ..abi import RuntimeAbi
from . import check_dtypes, eliminate_dead_ops, materialize_host_scalars, plan_memory, refine_shapes

PIPELINE = (refine_shapes, check_dtypes, eliminate_dead_ops, materialize_host_scalars, plan_memory)
PASSES = {p.NAME: p for p in PIPELINE}


def _verify(module: ir.Module, when: str) -> None:
    try:
        dialect.verify(module)
    except ValueError as exc:
        raise RuntimeError(f"internal error: IR fails verification {when}: {exc}") from None


def run_pipeline(module: ir.Module, until: str | None = None, abi: RuntimeAbi | None = None) -> ir.Module:
    """Run every pass (or up to and including `until`), verifying the IR before the first and after each.

    abi: the runtime ABI manifest compiled against, for passes that read it (USES_ABI);
    they fall back to the bundled manifest.
    """
    _verify(module, f"before {PIPELINE[0].NAME}")
    for p in PIPELINE:
        with hir.reading_shapes():
            module = p.run(module, abi) if getattr(p, "USES_ABI", False) else p.run(module)
        _verify(module, f"after {p.NAME}")
        if p.NAME == until:
            break
    return module
