"""What a shape rule sees of one import-level op, and the helpers shape rules share.

A shape rule (ops/registry.py's OpDef.rule) gets a `Node`: the op with its operands addressed by
ONNX input position, its `onnx.*` attributes, and its entry.  It either folds the op into a
`hipdnn.host_tensor` (values computed on the host) with `host_tensor`, or rewrites it into its
kernel-level op with `replace`, which ties the result dims to it as index values (`hipdnn.tie_dims`)
and checks them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError, UnsupportedError
from .registry import Kernel, OpDef, by_ir_name

HOST_INT_TYPES = (6, 7)


class Node:
    """One imported op with its operands addressed by ONNX input position."""

    def __init__(self, op: ir.Operation, func: ir.Operation, entry: OpDef | None = None):
        self.op = op
        self.func = func
        self.entry = entry or by_ir_name(op.name)
        self.kind = op.name.split(".", 1)[1]
        self.where = hir.get_str(op, "onnx.node", op.name)
        roles = hir.get_ints(op, "operand_roles", list(range(len(op.operands))))
        self.inputs: dict[int, ir.Value] = {r: op.operands[k] for k, r in enumerate(roles)}
        self.replaced = False  # set once `replace`/`finish` took the op out of the IR

    def input(self, i: int) -> ir.Value | None:
        return self.inputs.get(i)

    def dims(self, i: int) -> list[sym.Expr]:
        return hir.dims_of(self.inputs[i])

    def host(self, i: int) -> list[sym.Expr] | None:
        v = self.inputs.get(i)
        return None if v is None else hir.host_values(v)

    def const_ints(self, i: int, what: str) -> list[int] | None:
        """Input i as constant ints (None if absent); refuse if it is not constant."""
        if i not in self.inputs:
            return None
        vals = self.host(i)
        if vals is None or not all(isinstance(v, int) for v in vals):
            raise UnsupportedError(f"{self.where}: {what} must be a constant")
        return [int(v) for v in vals]

    def attr_int(self, name: str, default: int | None = None) -> int | None:
        return hir.get_int(self.op, "onnx." + name, default)

    def attr_float(self, name: str, default: float) -> float:
        return hir.get_float(self.op, "onnx." + name, default)

    def attr_ints(self, name: str) -> list[int] | None:
        return hir.get_ints(self.op, "onnx." + name)

    def result_dtype(self, k: int = 0) -> int:
        return hir.element_dtype(self.op.results[k])

    def fail(self, why: str) -> None:
        raise UnsupportedError(f"{self.where}: {why}")

    def require(self, kind: str, values: list[sym.Expr], text: str) -> None:
        """A relation the model promises: checked now when static, else by the program (see checks.py)."""
        checks.require(self.op, self.where, kind, values, text)


def norm_axis(o: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ModelError(f"{o.where}: axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def replace(o: Node, op: Kernel | str, operands: list[ir.Value], attrs: dict, dims: list[list[sym.Expr]],
            result_types: list[str] | None = None, params: dict[str, list[sym.Expr]] | None = None) -> ir.Operation:
    """Create the kernel-level op (a Kernel, or a structural op's name) before `o`, tie its result dims
    (and run-time parameter arrays, `params`) to it, move the uses over and erase `o`."""
    with o.op.context:
        types = [ir.Type.parse(t) for t in result_types] if result_types else [r.type for r in o.op.results]
    new = emit(o, op, operands, attrs, dims, types, params)
    _retire(o, list(new.results))
    return new


def emit(o: Node, op: Kernel | str, operands: list[ir.Value], attrs: dict, dims: list[list[sym.Expr]],
         types: list[ir.Type], params: dict[str, list[sym.Expr]] | None = None) -> ir.Operation:
    """Create one kernel-level op before `o` (of result types `types`, refined by `dims`) and tie its
    result dims and parameter arrays to it; `o` stays. Rules that become several ops (Split, Tile,
    Clip) chain these, then move each result's uses with `finish`."""
    name = op.op_name if isinstance(op, Kernel) else op
    for k, ds in enumerate(dims):
        check_dims(o, ds, hir.type_dtype(types[k]) if k < len(types) else None)
    with o.op.context, o.op.location:
        types = [refined_type(t, ds) for t, ds in zip(types, dims, strict=False)] + types[len(dims):]
    attrs = {**op.defaults, **attrs} if isinstance(op, Kernel) else dict(attrs)
    attrs["onnx.node"] = o.where
    new = hir.create(name, operands, types, attrs, before=o.op)
    for r, ds in zip(new.results, dims, strict=False):
        hir.tie_dims(r, ds, before=o.op)
    for param, values in (params or {}).items():
        hir.tie_param(new, param, values, before=o.op)
    return new


def finish(o: Node, results: list[ir.Value]) -> None:
    """Move the uses of `o`'s results to `results` (in order) and erase `o`."""
    if len(results) != len(o.op.results):
        raise ValueError(f"{o.where}: {len(results)} replacements for {len(o.op.results)} results")
    _retire(o, results)


# The rewriter of the pattern being applied (refine-shapes): replacing an op through it keeps MLIR's
# rewrite driver informed of what changed.  Outside a pattern, ops are replaced directly.
_rewriter: contextvars.ContextVar = contextvars.ContextVar("hipdnn_rewriter", default=None)


@contextlib.contextmanager
def rewriting(rewriter) -> Iterator[None]:
    """Shape rules called in this block replace their op through `rewriter` (an MLIR PatternRewriter)."""
    token = _rewriter.set(rewriter)
    try:
        yield
    finally:
        _rewriter.reset(token)


_target_abi: contextvars.ContextVar = contextvars.ContextVar("hipdnn_target_abi", default=None)


@contextlib.contextmanager
def targeting(abi) -> Iterator[None]:
    """Shape rules called in this block compile for `abi` (the RuntimeAbi compiled against; None: the bundled
    manifest, which has every kernel)."""
    token = _target_abi.set(abi)
    try:
        yield
    finally:
        _target_abi.reset(token)


def kernel_in(abi, kernel: Kernel) -> bool:
    """Whether runtime ABI `abi` (None: the bundled manifest) has `kernel` at its target version."""
    if abi is None:
        return True
    fn = abi.functions.get(abi.name(kernel.kernel))
    return fn is not None and fn.since <= abi.target_minor


def enum_value_in(abi, enum: str, key: str) -> bool:
    """Whether runtime ABI `abi` (None: the bundled manifest) has value `key` of enum `enum` (its name without
    the ABI prefix, e.g. "binary_op") at its target version."""
    if abi is None:
        return True
    full = abi.name(enum)
    return key in abi.enums.get(full, {}) and abi.enum_since.get((full, key), 0) <= abi.target_minor


def target_has(kernel: Kernel) -> bool:
    """Whether the runtime the rules compile for (see `targeting`) has `kernel`: a rule with a fused kernel
    newer than its composition composes where the target lacks it."""
    return kernel_in(_target_abi.get(), kernel)


def _retire(o: Node, values: list[ir.Value]) -> None:
    """Move the uses of `o`'s results to `values` (a kernel op may have more results than `o`) and erase `o`."""
    old = list(o.op.results)
    rewriter = _rewriter.get()
    if rewriter is not None and len(values) >= len(old):
        rewriter.replace_op(o.op, values[:len(old)])
    else:
        for old_r, new_r in zip(old, values, strict=False):
            old_r.replace_all_uses_with(new_r)
        if rewriter is not None:
            rewriter.erase_op(o.op)
        else:
            o.op.erase()
    o.replaced = True


def refined_type(t: ir.Type, dims: list[sym.Expr]) -> ir.Type:
    """`t` with the rank and the static dims the shape rule computed (a dim static in `t` stays)."""
    old = list(t.shape) if isinstance(t, ir.RankedTensorType) and t.rank == len(dims) else None
    shape = []
    for j, d in enumerate(dims):
        if isinstance(d, int):
            shape.append(d)
        elif old is not None and not ir.ShapedType.is_dynamic_size(old[j]):
            shape.append(old[j])
        else:
            shape.append(ir.ShapedType.get_dynamic_size())
    return ir.RankedTensorType.get(shape, t.element_type)


def check_dims(o: Node, dims: list[sym.Expr], dtype: int | None) -> None:
    """Every dim >= 0 (checked at run time when it depends on fed values) and the size within int64."""
    for e in dims:
        for x in sym.int_literals(e):
            if not sym.fits_int64(x):
                raise ModelError(f"{o.where}: the output shape {show(dims)} does not fit in int64")
    for i, d in enumerate(dims):
        if not sym.nonnegative(d):
            t = checks.Text(d)
            msg = f"output dim {i} of shape {t.dims(dims)} is {{0}}; dims must be >= 0"
            o.require("nonneg", t.values, msg)
    if dtype is None or dtype not in hir.DTYPES:
        return
    static = hir.DTYPES[dtype][1]
    for d in dims:
        if isinstance(d, int):
            static *= d
    if not sym.fits_int64(static):
        raise ModelError(f"{o.where}: the output shape {show(dims)} needs {static} bytes, more than int64 can "
                         "address; the model's dims are too large")


def show(dims: list[sym.Expr]) -> str:
    return "[" + ", ".join(sym.to_str(d) for d in dims) + "]"


def host_tensor(o: Node, values: list[sym.Expr], dims: list[int], dtype: int | None = None) -> None:
    dtype = o.result_dtype() if dtype is None else dtype
    for x in (x for v in values for x in sym.int_literals(v)):
        if not sym.fits_int64(x):
            raise ModelError(f"{o.where}: the shape value {x} does not fit in int64")
    replace(o, "hipdnn.host_tensor", hir.index_operands(values, before=o.op), {}, [list(dims)],
             [hir.tensor_type_str(dtype, dims)])


def all_host(o: Node) -> bool:
    return all(hir.host_values(v) is not None for v in o.inputs.values())


def broadcast(o: Node, *shapes: list[sym.Expr]) -> list[sym.Expr]:
    out: list[sym.Expr] = []
    try:
        for s in shapes:
            out = sym.broadcast(out, s)
    except ValueError as exc:
        raise ModelError(f"{o.where}: {exc}") from None
    return out


def host_elementwise(o: Node, fn: Callable[[sym.Expr, sym.Expr], sym.Expr]) -> bool:
    a, b = o.host(0), o.host(1)
    da, db = o.dims(0), o.dims(1)
    if len(da) > 1 or len(db) > 1:
        return False
    n = max(len(a), len(b))
    if len(a) not in (1, n) or len(b) not in (1, n):
        return False
    a = a * n if len(a) == 1 else a
    b = b * n if len(b) == 1 else b
    host_tensor(o, [fn(x, y) for x, y in zip(a, b, strict=False)], broadcast(o, da, db))
    return True

