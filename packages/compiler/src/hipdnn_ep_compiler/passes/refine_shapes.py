"""Pass refine-shapes: symbolic shape refinement and folding of shape computations.

Each op's shape rule is its entry's in the op registry (ops/); this pass is the driver.

IR in: ops as imported (ONNX semantics, parameter tensors as operands, `onnx.*` attributes).
IR out: every value's dims as symbolic expressions (`hipdnn.dims`) over program input dims, and
its tensor type refined with the rank and every dim known statically (so is @main's signature);
every computation on host-computable integer values (Shape, Gather, Concat, Slice, Squeeze,
Unsqueeze, Reshape, Cast, Add/Sub/Mul/Div on shape values) folded into `hipdnn.host_tensor`
ops holding element expressions; every remaining op in its kernel-level form (a registry
`Kernel`: `hipdnn.binary {op}`, `hipdnn.reduce {op, axes}`, ...) with only data operands and
parameters as attributes, or `hipdnn.alias`.

`hipdnn.alias` (Reshape, Squeeze, Unsqueeze, Identity) has new dims and shares its input's data.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from ..errors import ModelError, UnsupportedError
from ..ops import by_ir_name
from ..ops.node import Node

NAME = "refine-shapes"


def run(module: ir.Module) -> ir.Module:
    func = hir.main_func(module)
    for op in hir.ops(module):
        if op.name == "func.return":
            continue
        if op.name == "hipdnn.weight":
            if "hipdnn.dims" not in op.attributes:
                shape = ir.RankedTensorType(op.results[0].type).shape
                hir.set_dims(op, [list(shape)])
            continue
        if op.name == "hipdnn.constant":
            continue
        entry = by_ir_name(op.name)
        o = Node(op, func, entry)
        if entry is None:
            raise UnsupportedError(f"{o.where}: no shape rule for {op.name}")
        try:
            entry.rule(o)
        except ZeroDivisionError as exc:
            raise ModelError(f"{o.where}: {exc}") from None
    # the results' types are refined: the signature follows what is returned
    ret = hir.ops(module)[-1]
    with module.context:
        inputs = [a.type for a in hir.body(module).arguments]
        func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in ret.operands]))
    return module
