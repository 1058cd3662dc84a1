"""Pass refine-shapes: symbolic shape refinement and folding of shape computations.

Each op's shape rule is its entry's in the op registry (ops/); this pass is the driver.

IR in: ops as imported (ONNX semantics, parameter tensors as operands, `onnx.*` attributes).
IR out: every value's tensor type refined with the rank and every dim known statically (so is @main's
signature), and the dims of every value that is not fully static tied to it as `index` values
(`hipdnn.tie_dims`): arith over `tensor.dim`s of the program inputs, folded and shared by upstream
canonicalize and cse;
every computation on host-computable integer values (Shape, Gather, Concat, Slice, Squeeze,
Unsqueeze, Reshape, Cast, Add/Sub/Mul/Div on shape values) folded into `hipdnn.host_tensor`
ops whose operands are the elements (index values); every remaining op in its kernel-level form (a registry
`Kernel`: `hipdnn.binary {op}`, `hipdnn.reduce {op, axes}`, ...) with only data operands and
parameters as attributes (run-time ones, Slice starts, tied as index values: `hipdnn.tie_param`),
or `hipdnn.alias`.  A relation the model promises that is not decided at compile time is a
`hipdnn.check` op over index values (checks.py).

`hipdnn.alias` (Reshape, Squeeze, Unsqueeze, Identity) has new dims and shares its input's data.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError, UnsupportedError
from ..ops import by_ir_name
from ..ops.node import Node

NAME = "refine-shapes"


def run(module: ir.Module) -> ir.Module:
    func = hir.main_func(module)
    for op in hir.ops(module):
        if op.name == "func.return":
            continue
        if op.name in ("hipdnn.weight", "hipdnn.constant"):
            continue
        entry = by_ir_name(op.name)
        o = Node(op, func, entry)
        if entry is None:
            raise UnsupportedError(f"{o.where}: no shape rule for {op.name}")
        try:
            with sym.current_scope().node():
                entry.rule(o)
        except ZeroDivisionError as exc:
            raise ModelError(f"{o.where}: {exc}") from None
        except sym.ShapeBoundError as exc:
            raise UnsupportedError(f"{o.where}: {exc}") from None
    # the results' types are refined: the signature follows what is returned
    ret = hir.ops(module)[-1]
    with module.context:
        inputs = [a.type for a in hir.body(module).arguments]
        func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in ret.operands]))
    hir.fold_shapes(module)
    return module
