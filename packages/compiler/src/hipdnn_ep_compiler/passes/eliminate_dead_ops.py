"""Pass eliminate-dead-ops: erase ops none of whose results is used (after folding, most shape ops).

A result whose only users are its ties (`hipdnn.tie_dims`, `hipdnn.tie_param`) is unused; the ties go
with it, and upstream canonicalize then drops the shape arithmetic nothing needs any more.  Checks
(`hipdnn.check`) stay: a relation the model promises is verified even when its node's result goes
unused, as ONNX Runtime does.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir

NAME = "eliminate-dead-ops"
FOLLOW = hir.FOLD  # canonicalize drops the shape arithmetic the erased ops used
_TIES = (hir.TIE_DIMS, hir.TIE_PARAM)


def _owner(use) -> ir.Operation:
    owner = use.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def run(module: ir.Module) -> ir.Module:
    for op in reversed(hir.ops(module)):
        if op.name == "func.return":
            continue
        users = [_owner(u) for r in op.results for u in r.uses]
        if all(u.name in _TIES for u in users):
            for u in users:
                u.erase()
            op.erase()
    return module
