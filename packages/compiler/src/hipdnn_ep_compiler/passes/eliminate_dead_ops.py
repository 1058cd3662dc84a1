"""Pass eliminate-dead-ops: erase ops none of whose results is used (after folding, most shape ops)."""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir

NAME = "eliminate-dead-ops"


def run(module: ir.Module) -> ir.Module:
    for op in reversed(hir.ops(module)):
        if op.name == "func.return":
            continue
        if all(not list(r.uses) for r in op.results):
            op.erase()
    return module
