"""The op registry: what the compiler knows about each op, declared once.

Two levels, each declared once:

- a `Kernel` is one kernel-level IR op (`hipdnn.<name>`) and how it calls its runtime kernel: the
  kernel's manifest suffix, the attributes it sets (in the manifest's order), the parameter inputs
  the lowering appends from attributes (reduce axes, transpose perm, slice starts and steps) and the
  element-type rules the manifest cannot state (operands that share one type, names of inputs in
  messages);
- an `OpDef` is one ONNX op (per domain): its import-level IR op (`onnx.<name>`), its shape rule
  (a function that computes result dims, folds host-computable values and rewrites the op into its
  kernel-level form) and the kernel(s) it becomes.

Everything else is derived from these: the support query and `supported_ops()` (the OpDefs), the
importer's op names, refine-shapes' rewrite patterns (one per IR op), check-dtypes' rules and the
lowering's kernel calls (the Kernels), and the check that every kernel agrees with the runtime ABI manifest
(`lowering/runtime_calls.validate`).  Which element types a kernel accepts is read from the
manifest, never repeated here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ONNX_DOMAIN = "ai.onnx"
DOMAIN_ALIASES = {"": ONNX_DOMAIN}


@dataclass(frozen=True)
class Param:
    """A kernel input the lowering builds from an attribute of the kernel op: an int64 array in host
    memory.  A `symbolic` array's entries are index values tied to the op by `hipdnn.tie_param {name =
    attr}` (values known only at run time are written to the host scratch, in the slot recorded as
    attribute `hipdnn.<attr>_slot`); others are constant ints in the attribute `attr`."""

    attr: str
    input: int  # its position among the kernel's inputs
    symbolic: bool = False
    # The tied values are [count, value 0, value 1, ...]: an array whose length is known at run time (the
    # first `count` values; the tensor ref's dims point at the count).  Symbolic params only.
    counted: bool = False

    @property
    def slot_attr(self) -> str:
        return f"hipdnn.{self.attr}_slot"


@dataclass(frozen=True)
class Kernel:
    """A kernel-level IR op and the runtime kernel it calls."""

    name: str  # the IR op is hipdnn.<name>
    kernel: str  # the manifest function suffix, e.g. "kernel_binary"
    int_attrs: tuple[str, ...] = ()  # op attributes passed as int_attrs, in the manifest's order
    float_attrs: tuple[str, ...] = ()
    op_enum: str | None = None  # the enum whose key the string attribute "op" names
    params: tuple[Param, ...] = ()
    # How many data operands it takes (min, max; max None: any number); params come after them.
    arity: tuple[int, int | None] = (1, 1)
    # How many results it has (min, max): one buffer each (GroupQueryAttention: output and the KV caches).
    results: tuple[int, int] = (1, 1)
    # Operands that must share one element type (None: all of them).
    same_type: tuple[int, ...] | None = ()
    # How messages name an operand whose element-type rule is its own ("the condition", "indices").
    labels: dict[int, str] = field(default_factory=dict)
    # How messages name it when its IR name is not its kernel's (reduce_axes: "reduce").
    shown: str = ""
    # Values of int/float attributes that an emitter may leave out (Cast's saturate: 1).
    defaults: dict[str, int | float] = field(default_factory=dict)

    @property
    def op_name(self) -> str:
        return f"hipdnn.{self.name}"

    @property
    def n_operands(self) -> int:
        return self.arity[0]

    @property
    def param_inputs(self) -> tuple[int, ...]:
        return tuple(p.input for p in self.params)

    def same_type_operands(self, n_operands: int) -> list[int]:
        if self.same_type is None:
            return list(range(n_operands))
        return [i for i in self.same_type if i < n_operands]


# A shape rule: called by refine-shapes with a view of one import-level op (ops.node.Node).
ShapeRule = Callable[[Any], None]


@dataclass(frozen=True)
class OpDef:
    """One ONNX op: import, shape rule, and the kernels it lowers to."""

    op_type: str
    name: str  # the import-level IR op is onnx.<name>
    rule: ShapeRule
    kernels: tuple[Kernel, ...] = ()  # what the rule may produce (documentation and the support listing)
    domains: tuple[str, ...] = (ONNX_DOMAIN,)
    enum_key: str | None = None  # the kernel's "op" enum key (Add -> ADD) for ops sharing a kernel

    @property
    def op_name(self) -> str:
        return f"onnx.{self.name}"


_BY_DOMAIN: dict[tuple[str, str], OpDef] = {}
_BY_NAME: dict[str, OpDef] = {}
_KERNELS: dict[str, Kernel] = {}


def register_kernel(kernel: Kernel) -> Kernel:
    if kernel.op_name in _KERNELS:
        raise ValueError(f"kernel op {kernel.op_name} is registered twice")
    _KERNELS[kernel.op_name] = kernel
    return kernel


def register(op: OpDef) -> OpDef:
    for domain in op.domains:
        key = (domain, op.op_type)
        if key in _BY_DOMAIN:
            raise ValueError(f"op {op.op_type} of domain {domain} is registered twice")
        _BY_DOMAIN[key] = op
    if _BY_NAME.get(op.name, op) is not op and _BY_NAME[op.name].rule is not op.rule:
        raise ValueError(f"IR op {op.op_name} is registered twice with different shape rules")
    _BY_NAME.setdefault(op.name, op)
    for k in op.kernels:
        if _KERNELS.get(k.op_name) is not k:
            raise ValueError(f"{op.op_type}: kernel {k.op_name} is not registered")
    return op


def lookup(domain: str, op_type: str) -> OpDef | None:
    """The entry for an ONNX node's (domain, op_type), or None when the op is not supported."""
    return _BY_DOMAIN.get((DOMAIN_ALIASES.get(domain, domain), op_type))


def by_ir_name(op_name: str) -> OpDef | None:
    """The entry for an import-level IR op name (onnx.<name>)."""
    dialect, _, name = op_name.partition(".")
    return _BY_NAME.get(name) if dialect == "onnx" else None


def by_ir_names() -> dict[str, OpDef]:
    """Every import-level IR op name (onnx.<name>) with its entry: refine-shapes' patterns, one per name."""
    return {e.op_name: e for e in _BY_NAME.values()}


def kernel(op_name: str) -> Kernel | None:
    """The kernel description of a kernel-level IR op name (hipdnn.<name>)."""
    return _KERNELS.get(op_name)


def kernels() -> dict[str, Kernel]:
    return dict(_KERNELS)


def entries() -> list[OpDef]:
    """Every registered op, once (an op registered under two domains is one entry; one no model can name,
    written by a pass, included)."""
    return list({id(e): e for e in (*_BY_DOMAIN.values(), *_BY_NAME.values())}.values())


def supported_ops() -> dict[str, list[str]]:
    """Supported op types per domain ("ai.onnx", "com.microsoft"), sorted."""
    out: dict[str, set[str]] = {ONNX_DOMAIN: set(), "com.microsoft": set()}
    for domain, op_type in _BY_DOMAIN:
        out.setdefault(domain, set()).add(op_type)
    return {d: sorted(v) for d, v in out.items()}
