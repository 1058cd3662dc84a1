"""The pass pipeline, in order.  Each pass is one module with NAME and run(module) -> module."""

from __future__ import annotations

from torch_mlir import ir

from ..abi import RuntimeAbi
from . import check_dtypes, eliminate_dead_ops, materialize_host_scalars, plan_memory, refine_shapes

PIPELINE = (refine_shapes, check_dtypes, eliminate_dead_ops, materialize_host_scalars, plan_memory)
PASSES = {p.NAME: p for p in PIPELINE}


def run_pipeline(module: ir.Module, until: str | None = None, abi: RuntimeAbi | None = None) -> ir.Module:
    """Run every pass (or up to and including `until`), verifying the IR after each.

    abi: the runtime ABI manifest compiled against, for passes that read it (USES_ABI);
    they fall back to the bundled manifest.
    """
    for p in PIPELINE:
        module = p.run(module, abi) if getattr(p, "USES_ABI", False) else p.run(module)
        if not module.operation.verify():
            raise RuntimeError(f"internal error: IR fails verification after {p.NAME}")
        if p.NAME == until:
            break
    return module
