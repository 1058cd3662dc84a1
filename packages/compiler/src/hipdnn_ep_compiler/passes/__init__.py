"""The compiler's passes, registered once, and the pipeline: one MLIR `PassManager`.

Each pass is one module with NAME and run(module) -> module (run(module, abi) when USES_ABI: it
reads the target runtime ABI manifest).  `register` makes it a `PassDef`: the pass runs inside MLIR's
pass manager as a Python-defined pass (`PassManager.add(callable)`), followed by the upstream
passes it names in FOLLOW (a pass that leaves shape arithmetic behind names `FOLD`: upstream
canonicalize and cse fold and share it).  Upstream MLIR passes join the same pass manager from their
pipeline text, which MLIR parses (pipeline.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from ..ir import FOLD
from . import (
    check_dtypes,
    eliminate_dead_ops,
    fuse_attention,
    fuse_gated_matmul_nbits,
    fuse_gelu,
    fuse_linear_bias,
    fuse_qdq,
    fuse_silu_mul,
    fuse_skip_layer_norm,
    materialize_host_scalars,
    plan_memory,
    refine_shapes,
)


@dataclass(frozen=True)
class PassDef:
    """One of this compiler's passes as the pass manager runs it."""

    name: str  # its pipeline name (refine-shapes)
    module: ModuleType  # NAME, run, and optionally USES_ABI and FOLLOW
    follow: str | None  # upstream pipeline text run right after it, within the same pass manager

    @property
    def uses_abi(self) -> bool:
        return getattr(self.module, "USES_ABI", False)

    def run(self, module, abi=None):
        return self.module.run(module, abi) if self.uses_abi else self.module.run(module)


PASSES: dict[str, PassDef] = {}


def register(module: ModuleType) -> PassDef:
    """Register a pass module under its NAME (once)."""
    if module.NAME in PASSES:
        raise ValueError(f"pass {module.NAME} is registered twice")
    PASSES[module.NAME] = PassDef(module.NAME, module, getattr(module, "FOLLOW", None))
    return PASSES[module.NAME]


for _p in (fuse_qdq, fuse_gelu, fuse_silu_mul, fuse_gated_matmul_nbits, fuse_attention, fuse_linear_bias,
           fuse_skip_layer_norm, refine_shapes, check_dtypes, eliminate_dead_ops, materialize_host_scalars,
           plan_memory):
    register(_p)

# The compile pipeline, in order.
PIPELINE = ("fuse-qdq", "fuse-gelu", "fuse-silu-mul", "fuse-gated-matmul-nbits", "fuse-attention", "fuse-linear-bias",
            "fuse-skip-layer-norm", "refine-shapes", "check-dtypes", "eliminate-dead-ops", "materialize-host-scalars",
            "plan-memory")

from .pipeline import Pipeline, build, run_pass, run_pipeline  # noqa: E402  (it reads PASSES)

__all__ = ["FOLD", "PASSES", "PIPELINE", "PassDef", "Pipeline", "build", "register", "run_pass", "run_pipeline"]
