"""The compiler's two op vocabularies and their verifier, derived from the op registry.

- `onnx.<name>`: the import level, one op per registry `OpDef` (ONNX semantics: the node's present
  inputs as operands, `operand_roles` = their ONNX input positions, the node's attributes as
  `onnx.<attr>`).  refine-shapes rewrites every one of them away.
- `hipdnn.<name>`: the program level, one op per registry `Kernel` (its manifest attributes and
  parameter arrays are required attributes of the right kind, its operand count is declared) and
  the structural ops the passes use: `weight`, `constant`, `host_tensor`, `alias`, `materialize`,
  `copy`, and the shape computation's `tie_dims`, `tie_param`, `check`, `place` and `pool` (ir.py: dims as SSA values;
  the arithmetic itself is upstream `arith`, `tensor.dim` and `tensor.extract`).

`verify` checks a module against these declarations (unknown ops, operand and result counts,
tensor types, required attributes and their kinds); the pipeline runs it after every pass.

Why not a registered dialect: the only way to register one from the torch-mlir wheel is IRDL, and
IRDL (as of this LLVM) binds a constraint variable to one type across a variadic operand group, so
an op whose operands differ in type and number (Concat at both levels; every import-level op with
optional inputs) cannot be declared; a C++ dialect would need our own build of the MLIR Python
bindings.  The ops therefore stay generic operations of unregistered dialects, and this module is
their verifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch_mlir import ir

from .ops import entries, kernels

_KINDS = {"string": ir.StringAttr, "array": ir.ArrayAttr, "int": ir.IntegerAttr, "float": ir.FloatAttr}


@dataclass(frozen=True)
class OpSpec:
    """What an op of ours must look like: operand and result counts (max None: any), required
    attributes {name: "string" | "array" | "int" | "float"}, and how many leading operands are tensors
    (None: all; the rest are `index` values: dims, host-computed elements)."""

    operands: tuple[int, int | None]
    results: tuple[int, int | None] = (1, 1)
    attrs: dict[str, str] = field(default_factory=dict)
    tensors: int | None = None


STRUCTURAL = {
    "hipdnn.weight": OpSpec((0, 0), attrs={"name": "string"}),
    "hipdnn.constant": OpSpec((0, 0), attrs={"name": "string", "values": "array"}),
    "hipdnn.host_tensor": OpSpec((0, None), tensors=0),  # operands: the elements
    "hipdnn.materialize": OpSpec((0, None), tensors=0),
    "hipdnn.tie_dims": OpSpec((1, None), (0, 0), tensors=1),  # a tensor and every one of its dims
    "hipdnn.tie_param": OpSpec((1, None), (0, 0), {"name": "string"}, tensors=1),  # a kernel's result, an array
    "hipdnn.check": OpSpec((1, None), (0, 0), {"where": "string", "kind": "string", "text": "string"}, tensors=0),
    "hipdnn.place": OpSpec((2, 2), (0, 0), tensors=1),  # a pool buffer and its byte offset
    "hipdnn.pool": OpSpec((1, 1), (0, 0), tensors=0),  # the pool's byte size
    "hipdnn.alias": OpSpec((1, 1)),
    "hipdnn.copy": OpSpec((1, 1)),
}


def spec(name: str) -> OpSpec | None:
    """The declaration of one of our ops (None: not ours)."""
    if name in STRUCTURAL:
        return STRUCTURAL[name]
    dialect, _, short = name.partition(".")
    if dialect == "onnx" and any(e.name == short for e in entries()):
        return OpSpec((0, None), (0, None), {"operand_roles": "array"})
    k = kernels().get(name)
    if k is None:
        return None
    attrs = {a: "int" for a in k.int_attrs if a != "op"}
    attrs.update({a: "float" for a in k.float_attrs})
    if k.op_enum:
        attrs["op"] = "string"
    attrs.update({p.attr: "array" for p in k.params if not p.symbolic})
    return OpSpec(k.arity, k.results, attrs)


def _count(n: int, bounds: tuple[int, int | None]) -> bool:
    return bounds[0] <= n and (bounds[1] is None or n <= bounds[1])


def _problems(op: ir.Operation) -> list[str]:
    s = spec(op.name)
    if s is None:
        return [f"unknown op {op.name}"]
    out = []
    if not _count(len(op.operands), s.operands):
        out.append(f"{len(op.operands)} operands, expected {s.operands[0]} to {s.operands[1] or 'any'}")
    if not _count(len(op.results), s.results):
        out.append(f"{len(op.results)} results, expected {s.results[0]} to {s.results[1] or 'any'}")
    n_tensors = len(op.operands) if s.tensors is None else s.tensors
    for k, v in enumerate([*op.operands, *op.results]):
        if k >= n_tensors and k < len(op.operands):
            if not isinstance(v.type, ir.IndexType):
                out.append(f"operand {k} of type {v.type}, expected index")
        elif not isinstance(v.type, ir.ShapedType) or isinstance(v.type, ir.MemRefType):
            out.append(f"a value of type {v.type}, expected a tensor")
    if op.name == "hipdnn.tie_dims" and op.operands and isinstance(op.operands[0].type, ir.RankedTensorType):
        rank = ir.RankedTensorType(op.operands[0].type).rank
        if len(op.operands) - 1 != rank:
            out.append(f"{len(op.operands) - 1} dims for a tensor of rank {rank}")
    for name, kind in s.attrs.items():
        if name not in op.attributes:
            out.append(f"attribute '{name}' is missing")
        elif not isinstance(op.attributes[name], _KINDS[kind]):
            out.append(f"attribute '{name}' is {op.attributes[name]}, expected {kind}")
    return out


def verify(module: ir.Module) -> None:
    """Raise ValueError naming each op of ours that breaks its declaration (MLIR's own verifier runs too)."""
    problems = []
    for block in module.body.operations:
        for region in block.operation.regions:
            for b in region.blocks:
                for op in b.operations:
                    op = op.operation
                    if op.name.startswith(("onnx.", "hipdnn.")):
                        problems += [f"{op.name}: {p}" for p in _problems(op)]
    if not module.operation.verify():
        problems.append("MLIR's verifier refuses the module")
    if problems:
        raise ValueError("; ".join(problems))
