"""Our op-level IR: `onnx.*` (import level) and `hipdnn.*` (program level) operations, declared
and verified by dialect.py, in an MLIR module.

The program is `func.func @main`; its arguments are the graph inputs, its results the graph
outputs.  Weights are `hipdnn.weight` ops, small integer constants `hipdnn.constant`.
Per-value facts that passes compute live in attributes, so every pass is IR in, IR out:

  hipdnn.dims   one array of dimension expressions (symbolic.py strings) per result
  hipdnn.host   (host_tensor ops) the element values as expressions, computed on the host

Helpers here hide the MLIR Python binding details from the passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from torch_mlir import ir
from torch_mlir._mlir_libs import _mlir

from . import symbolic as sym
from .dtypes import DTYPE_NAMES, DTYPES, INT64  # noqa: F401  (re-exported for the passes)

# The bindings look up Python op classes per dialect namespace by import and retry a failed import
# on every op access: give our namespaces (onnx, hipdnn) modules to find, once.
if __package__ + "._dialect_modules" not in _mlir.globals.dialect_search_modules:
    _mlir.globals.append_dialect_search_prefix(__package__ + "._dialect_modules")


def mlir_string(text: str) -> str:
    """A quoted MLIR string literal; quotes, backslashes and non-printable bytes as \\XX escapes."""
    out = []
    for ch in text:
        if ch in '"\\' or not (32 <= ord(ch) < 127):
            out.extend(f"\\{b:02X}" for b in ch.encode())
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def new_context() -> ir.Context:
    """A context for our IR: the onnx and hipdnn ops are generic ops that dialect.py verifies."""
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    return ctx


def tensor_type_str(dtype: int, dims: Iterable[Any]) -> str:
    shape = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    elem = DTYPES[dtype][0]
    return f"tensor<{shape}x{elem}>" if shape else f"tensor<{elem}>"


def tensor_type(dtype: int, dims: Iterable[Any] | None) -> ir.Type:
    """The tensor type of an element type code and dims (ints static, anything else dynamic;
    None: unranked), in the current context."""
    elem = ir.Type.parse(DTYPES[dtype][0])
    if dims is None:
        return ir.UnrankedTensorType.get(elem)
    shape = [d if isinstance(d, int) else ir.ShapedType.get_dynamic_size() for d in dims]
    return ir.RankedTensorType.get(shape, elem)


def main_func(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func":
            return op.operation
    raise ValueError("module has no func.func")


def body(module: ir.Module) -> ir.Block:
    return main_func(module).regions[0].blocks[0]


def ops(module: ir.Module) -> list[ir.Operation]:
    return [o.operation for o in body(module).operations]


def get_str(op: ir.Operation, name: str, default: str | None = None) -> str | None:
    if name not in op.attributes:
        return default
    return ir.StringAttr(op.attributes[name]).value


def get_int(op: ir.Operation, name: str, default: int | None = None) -> int | None:
    if name not in op.attributes:
        return default
    return ir.IntegerAttr(op.attributes[name]).value


def get_float(op: ir.Operation, name: str, default: float | None = None) -> float | None:
    if name not in op.attributes:
        return default
    return ir.FloatAttr(op.attributes[name]).value


def get_ints(op: ir.Operation, name: str, default: list[int] | None = None) -> list[int] | None:
    if name not in op.attributes:
        return default
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes[name])]


def get_strs(op: ir.Operation, name: str) -> list[str] | None:
    if name not in op.attributes:
        return None
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[name])]


def get_json_pairs(op: ir.Operation, name: str) -> list[tuple[int, int]]:
    """An array of [int, int] pairs (empty when absent)."""
    if name not in op.attributes:
        return []
    return [tuple(ir.IntegerAttr(x).value for x in ir.ArrayAttr(p)) for p in ir.ArrayAttr(op.attributes[name])]


def get_json(op: ir.Operation, name: str) -> Any:
    return json.loads(get_str(op, name))


def set_attr(op: ir.Operation, name: str, value: Any) -> None:
    """Set an attribute from a Python value (str, bool, int, float, list of those, nested lists)."""
    with op.context:
        op.attributes[name] = to_attr(value)


def to_attr(value: Any) -> ir.Attribute:
    if isinstance(value, ir.Attribute):
        return value
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F64Type.get(), value)
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    if isinstance(value, (list, tuple)):
        return ir.ArrayAttr.get([to_attr(v) for v in value])
    raise TypeError(f"cannot turn {value!r} into an attribute")


def type_dtype(t: ir.Type) -> int:
    """The ONNX element type code of a tensor type's (or a scalar type's) MLIR element type."""
    elem = t.element_type if isinstance(t, ir.ShapedType) else t
    for code, (name, _) in DTYPES.items():
        if ir.Type.parse(name, elem.context) == elem:
            return code
    raise ValueError(f"unsupported element type {elem}")


def element_dtype(value: ir.Value) -> int:
    """The ONNX element type code of a tensor value."""
    return type_dtype(value.type)


def rank(value: ir.Value) -> int:
    return ir.RankedTensorType(value.type).rank


def defining_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner if isinstance(owner, ir.Operation) else (owner.operation if isinstance(owner, ir.OpView) else None)


def result_index(value: ir.Value) -> int:
    return ir.OpResult(value).result_number


def is_block_arg(value: ir.Value) -> bool:
    return isinstance(value.owner, ir.Block)


def dims_of(value: ir.Value) -> list[sym.Expr] | None:
    """The refined dims of a value: from hipdnn.dims on its op, or program input symbols."""
    if is_block_arg(value):
        arg = ir.BlockArgument(value)
        i = arg.arg_number
        shape = ir.RankedTensorType(value.type).shape
        return [d if not ir.ShapedType.is_dynamic_size(d) else sym.input_dim(i, j) for j, d in enumerate(shape)]
    op = defining_op(value)
    if "hipdnn.dims" not in op.attributes:
        return None
    per_result = ir.ArrayAttr(op.attributes["hipdnn.dims"])
    entry = ir.ArrayAttr(per_result[result_index(value)])
    return [sym.parse(ir.StringAttr(a).value) for a in entry]


def set_dims(op: ir.Operation, dims_per_result: list[list[sym.Expr]]) -> None:
    set_attr(op, "hipdnn.dims", [[sym.to_str(d) for d in dims] for dims in dims_per_result])


def host_values(value: ir.Value) -> list[sym.Expr] | None:
    """Element values of a host-computable value (hipdnn.host_tensor / hipdnn.constant), else None."""
    if is_block_arg(value):
        return _input_values(value)
    op = defining_op(value)
    if op.name not in ("hipdnn.host_tensor", "hipdnn.constant"):
        return None
    return [sym.parse(s) for s in get_strs(op, "values")]


HOST_READABLE_INPUT_ELEMENTS = 16


def _input_values(value: ir.Value) -> list[sym.Expr] | None:
    """A small static int32/int64 program input (a shape, axes, starts...) is readable on the host:
    its elements are "v" symbols, copied DEVICE_TO_HOST into the host scratch at run time."""
    t = ir.RankedTensorType(value.type)
    if str(t.element_type) not in ("i64", "i32") or t.rank > 1 or not t.has_static_shape:
        return None
    n = t.shape[0] if t.rank == 1 else 1
    if n > HOST_READABLE_INPUT_ELEMENTS:
        return None
    i = ir.BlockArgument(value).arg_number
    return [sym.input_value(i, k) for k in range(n)]


def users(value: ir.Value) -> list[ir.Operation]:
    return [u.owner for u in value.uses]


def create(name: str, operands: list[ir.Value], result_types: list[str | ir.Type], attrs: dict[str, Any],
           before: ir.Operation) -> ir.Operation:
    with before.context, before.location:
        return ir.Operation.create(
            name,
            results=[ir.Type.parse(t) if isinstance(t, str) else t for t in result_types],
            operands=operands,
            attributes={k: to_attr(v) for k, v in attrs.items()},
            ip=ir.InsertionPoint(before),
        )
