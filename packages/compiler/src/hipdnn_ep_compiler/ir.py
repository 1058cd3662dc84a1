"""Our op-level IR: `onnx.*` (import level) and `hipdnn.*` (program level) operations, declared
and verified by dialect.py, in an MLIR module.

The program is `func.func @main`; its arguments are the graph inputs, its results the graph
outputs.  Weights are `hipdnn.weight` ops, small integer constants `hipdnn.constant`.
Every pass is IR in, IR out: dims and host-computed integers are `index` SSA values (see "dims and
host values as SSA values" below), other per-op facts are attributes.

Helpers here hide the MLIR Python binding details from the passes.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterable, Iterator
from typing import Any

from torch_mlir import ir
from torch_mlir._mlir_libs import _mlir

from . import symbolic as sym
from .dtypes import DTYPE_NAMES, DTYPES, INT64  # noqa: F401  (re-exported for the passes)

# The bindings look up Python op classes per dialect namespace by import and retry a failed import
# on every op access: give our namespaces (onnx, hipdnn) modules to find, once.
if __package__ + "._dialect_modules" not in _mlir.globals.dialect_search_modules:
    _mlir.globals.append_dialect_search_prefix(__package__ + "._dialect_modules")


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
    """The data-flow ops of @main, in order (the shape computation's ops left out: see is_shape_op)."""
    return [o.operation for o in body(module).operations if not is_shape_op(o.operation)]


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


# ---------------------------------------------------------------- dims and host values as SSA values
#
# A dim (or a host-computed integer) is an `index` value: an input dim is `tensor.dim %argN, %cK`, an
# element of a small integer input read on the host is `arith.index_cast (tensor.extract %argN[%cK])`,
# and everything computed from them is `arith` (addi, subi, muli, divsi, ceildivsi, maxsi, minsi,
# select over cmpi).  `hipdnn.tie_dims %t, %d0, ..` states every dim of a tensor that is not fully static
# (its type holds the static facts); `hipdnn.tie_param %t, ..` the run-time array of a kernel parameter
# (Slice starts); `hipdnn.host_tensor`/`hipdnn.materialize` take their elements as operands,
# `hipdnn.check` its values, and the memory plan is `hipdnn.place %t, %offset` per pool buffer and one
# `hipdnn.pool %size`.  Upstream canonicalize and cse fold and share the arithmetic (fold_shapes).
#
# The shape rules reason about dims with symbolic.py's expressions (whether two dims are provably
# equal, whether a check is decided at compile time, ModelError on a static violation, the text of the
# metadata): `dim_expr` reads an index value back into one, `IndexBuilder` writes one as arith ops (a
# named symbol of symbolic.py is one SSA value, written once and reused where it dominates).  The
# lowering (lowering/to_llvm.py) reads the index values themselves (`tied_dims`, `param_operands`,
# `placed_offsets`, `pool_size_value`, the operands of checks and materialize) and emits their arith as
# checked int64 arithmetic; it reads expressions only for the artifact's metadata.

TIE_DIMS = "hipdnn.tie_dims"
TIE_PARAM = "hipdnn.tie_param"
CHECK = "hipdnn.check"
PLACE = "hipdnn.place"  # plan-memory: a buffer's byte offset in the pool
POOL = "hipdnn.pool"  # plan-memory: the pool's byte size
_SHAPE_OPS = frozenset((TIE_DIMS, TIE_PARAM, CHECK, PLACE, POOL, "tensor.dim", "tensor.extract"))
# the ops whose index result dim_expr reads (an index value of the shape computation)
_SHAPE_VALUE_OPS = frozenset(("tensor.dim", "arith.index_cast", "arith.addi", "arith.subi", "arith.muli",
                              "arith.divsi", "arith.ceildivsi", "arith.maxsi", "arith.minsi", "arith.select"))


def is_shape_op(op: ir.Operation) -> bool:
    """An op of the shape computation (arith over dims, ties, checks), not of the data flow."""
    return op.name in _SHAPE_OPS or op.name.startswith("arith.")


# Upstream passes that fold and share the shape arithmetic and drop what is unused: a pass that leaves
# index arithmetic behind names them as what its pass manager runs after it (passes/: FOLLOW).
FOLD = "func.func(canonicalize, cse)"


def fold_shapes(module: ir.Module) -> None:
    """Run FOLD on `module` on its own (the pipeline runs it after the passes that name it)."""
    from torch_mlir.passmanager import PassManager

    with module.context:
        PassManager.parse(f"builtin.module({FOLD})").run(module.operation)
    memo = _reading.get()
    if memo is not None:  # the ops it read may be gone, their storage reused by new ones
        memo.clear()


# index value -> its expression, shared by every dim_expr of one `reading_shapes` block (a pass): a
# dim is then read once per pass, not once per use, however deep the graph; and ("named", name) ->
# the index value an IndexBuilder wrote for a named symbol, which later builders reuse where it
# dominates.  Only upstream passes (fold_shapes) erase index ops, so the values stay valid until then.
_reading: contextvars.ContextVar[dict | None] = contextvars.ContextVar("hipdnn_dim_exprs", default=None)


def shape_memo() -> dict:
    """The memo of the enclosing `reading_shapes` block, else a new one."""
    memo = _reading.get()
    return {} if memo is None else memo


@contextlib.contextmanager
def reading_shapes() -> Iterator[None]:
    token = _reading.set({})
    try:
        yield
    finally:
        _reading.reset(token)


_PRED = {p: i for i, p in enumerate(("eq", "ne", "slt", "sle", "sgt", "sge"))}
_BINARY = {"arith.addi": sym.add, "arith.subi": sym.sub, "arith.muli": sym.mul, "arith.divsi": sym.div,
           "arith.ceildivsi": sym.ceildiv, "arith.maxsi": sym.maximum, "arith.minsi": sym.minimum}
_EMIT = {"add": "AddIOp", "mul": "MulIOp", "div": "DivSIOp", "ceildiv": "CeilDivSIOp", "max": "MaxSIOp",
         "min": "MinSIOp"}


def dim_expr(value: ir.Value, memo: dict | None = None) -> sym.Expr:
    """The expression an index value computes, over input dims and host-read input elements."""
    memo = shape_memo() if memo is None else memo
    if value in memo:
        return memo[value]
    op = defining_op(value)
    name = op.name if op is not None else "a block argument"
    if name == "arith.constant":
        e = ir.IntegerAttr(op.attributes["value"]).value
    elif name == "tensor.dim":
        e = sym.input_dim(ir.BlockArgument(op.operands[0]).arg_number, dim_expr(op.operands[1], memo))
    elif name == "arith.index_cast" and defining_op(op.operands[0]).name == "tensor.extract":
        ext = defining_op(op.operands[0])
        e = sym.input_value(ir.BlockArgument(ext.operands[0]).arg_number,
                            dim_expr(ext.operands[1], memo) if len(ext.operands) > 1 else 0)
    elif name in _BINARY:
        e = _BINARY[name](dim_expr(op.operands[0], memo), dim_expr(op.operands[1], memo))
    elif name == "arith.select" and defining_op(op.operands[0]).name == "arith.cmpi":
        cmp = defining_op(op.operands[0])
        pred = ir.IntegerAttr(cmp.attributes["predicate"]).value
        x, y = (dim_expr(v, memo) for v in cmp.operands)
        a, b = (dim_expr(v, memo) for v in op.operands[1:])
        if pred in (_PRED["eq"], _PRED["ne"]):
            e = sym.select_zero(sym.sub(x, y), *((a, b) if pred == _PRED["eq"] else (b, a)))
        elif pred in (_PRED["slt"], _PRED["sge"]):
            e = sym.select_negative(sym.sub(x, y), *((a, b) if pred == _PRED["slt"] else (b, a)))
        elif pred in (_PRED["sgt"], _PRED["sle"]):
            e = sym.select_negative(sym.sub(y, x), *((a, b) if pred == _PRED["sgt"] else (b, a)))
        else:
            raise ValueError(f"unsigned comparison {cmp} in a shape computation")
    else:
        raise ValueError(f"{name} is not a shape computation this compiler emits")
    memo[value] = e
    return e


def share_equal_values(module: ir.Module) -> int:
    """Replace every index value whose expression equals an earlier one's by that earlier value (which
    dominates it: one block); returns how many were replaced.  Builders write an expression in the form
    its parts had then: across named symbols (symbolic.py) the same product may be `(2 * a) * b` here and
    `(b * 2) * a` there, which cse cannot merge and the expressions' canonical form does.  FOLD then drops
    what is left unused and merges what now has the same operands."""
    memo = shape_memo()
    first: dict[str, ir.Value] = {}
    replaced = 0
    for op in body(module).operations:
        op = op.operation
        if op.name not in _SHAPE_VALUE_OPS or len(op.results) != 1 or not isinstance(op.results[0].type, ir.IndexType):
            continue
        value = op.results[0]
        earlier = first.setdefault(sym.to_str(dim_expr(value, memo)), value)
        if earlier != value:
            value.replace_all_uses_with(earlier)
            replaced += 1
    return replaced


class IndexBuilder:
    """Writes expressions as index SSA values before an op (each distinct expression once)."""

    def __init__(self, before: ir.Operation):
        from torch_mlir.dialects import arith, tensor

        self.arith, self.tensor = arith, tensor
        self.before = before
        self.args = before.block.arguments  # @main's: the program inputs
        self.memo: dict[str, ir.Value] = {}

    def __call__(self, e: sym.Expr) -> ir.Value:
        key = e if isinstance(e, str) else sym.to_str(e)
        if key in self.memo:
            return self.memo[key]
        if sym.is_named(e):
            return self._named(e)
        with self.before.context, self.before.location, ir.InsertionPoint(self.before):
            v = self._emit(e)
        self.memo[key] = v
        return v

    def __contains__(self, name: str) -> bool:
        """Whether a named symbol has a value here: written by this builder, or by an earlier one of the
        same pass before an op ahead of this one (so it dominates; read back, it is the same expression)."""
        if name in self.memo:
            return True
        reading = _reading.get()
        v = None if reading is None else reading.get(("named", name))
        if v is None or not v.owner.operation.is_before_in_block(self.before):
            return False
        self.memo[name] = v
        return True

    def _named(self, name: str) -> ir.Value:
        """A named symbol's value: its definition, with the named symbols that it uses written first,
        in order (no recursion through a chain as long as the graph is deep), each shared with the
        builders that come after this one in the pass."""
        reading = _reading.get()
        for n, d in sym.definitions([name], self):
            v = self(d)
            self.memo[n] = v
            if reading is not None:
                reading[("named", n)] = v
        return self.memo[name] if name in self else self(sym.definition(name))

    def _emit(self, e: sym.Expr) -> ir.Value:
        arith = self.arith
        index = ir.IndexType.get()
        if isinstance(e, int):
            return arith.ConstantOp(index, ir.IntegerAttr.get(index, e)).result
        if isinstance(e, str):
            i, k = sym.parse_symbol(e)
            if not sym.is_value_symbol(e):
                return self.tensor.DimOp(self.args[i], self(k)).result
            arg = self.args[i]
            elem = self.tensor.ExtractOp(arg, [self(k)] if ir.RankedTensorType(arg.type).rank else []).result
            return arith.IndexCastOp(index, elem).result
        op, *args = e
        vals = [self(a) for a in args]
        if op in ("selneg", "selzero"):
            pred = arith.CmpIPredicate.slt if op == "selneg" else arith.CmpIPredicate.eq
            cond = arith.CmpIOp(pred, vals[0], self(0)).result
            return arith.SelectOp(cond, vals[1], vals[2]).result
        out = vals[0]
        for v in vals[1:]:
            out = getattr(arith, _EMIT[op])(out, v).result
        return out


def _tie(value: ir.Value, name: str, exprs: list[sym.Expr], before: ir.Operation, attrs: dict) -> None:
    build = IndexBuilder(before)
    operands = [value] + [build(e) for e in exprs]
    create(name, operands, [], attrs, before=before)


def tie_dims(value: ir.Value, dims: list[sym.Expr], before: ir.Operation) -> None:
    """State the dims of `value` (an op result) as SSA values, unless its type already says them all."""
    if not all(isinstance(d, int) for d in dims):
        _tie(value, TIE_DIMS, dims, before, {})


def _tie_of(value: ir.Value, name: str, param: str | None = None) -> ir.Operation | None:
    for use in value.uses:
        owner = use.owner
        owner = owner.operation if isinstance(owner, ir.OpView) else owner
        if owner.name == name and use.operand_number == 0 and (param is None or get_str(owner, "name") == param):
            return owner
    return None


def dims_of(value: ir.Value) -> list[sym.Expr] | None:
    """The refined dims of a value: its hipdnn.tie_dims, its static type, or program input symbols."""
    if not isinstance(value.type, ir.RankedTensorType):
        return None
    shape = ir.RankedTensorType(value.type).shape
    if is_block_arg(value):
        i = ir.BlockArgument(value).arg_number
        return [d if not ir.ShapedType.is_dynamic_size(d) else sym.input_dim(i, j) for j, d in enumerate(shape)]
    tie = _tie_of(value, TIE_DIMS)
    if tie is not None:
        memo = shape_memo()
        return [dim_expr(v, memo) for v in list(tie.operands)[1:]]
    if any(ir.ShapedType.is_dynamic_size(d) for d in shape):
        return None
    return list(shape)


def tied_dims(value: ir.Value) -> list[ir.Value] | None:
    """The index values of a value's hipdnn.tie_dims (one per dim), None when it has none."""
    tie = _tie_of(value, TIE_DIMS)
    return None if tie is None else list(tie.operands)[1:]


def tie_param(op: ir.Operation, param: str, values: list[sym.Expr], before: ir.Operation) -> None:
    """State a kernel's run-time parameter array (e.g. Slice starts) as SSA values."""
    _tie(op.results[0], TIE_PARAM, values, before, {"name": param})


def param_values(op: ir.Operation, param: str) -> list[sym.Expr]:
    tie = _tie_of(op.results[0], TIE_PARAM, param)
    if tie is None:
        raise ValueError(f"{op.name} has no hipdnn.tie_param for '{param}'")
    memo = shape_memo()
    return [dim_expr(v, memo) for v in list(tie.operands)[1:]]


def param_operands(op: ir.Operation, param: str) -> list[ir.Value]:
    """The index values of a kernel's run-time parameter array (its hipdnn.tie_param)."""
    tie = _tie_of(op.results[0], TIE_PARAM, param)
    if tie is None:
        raise ValueError(f"{op.name} has no hipdnn.tie_param for '{param}'")
    return list(tie.operands)[1:]


def place(value: ir.Value, offset: sym.Expr, before: ir.Operation) -> None:
    """State that the buffer of `value` lies at byte `offset` of the pool."""
    _tie(value, PLACE, [offset], before, {})


def offset_of(value: ir.Value) -> sym.Expr | None:
    """The pool offset of a buffer (hipdnn.place), None when it is not in the pool."""
    tie = _tie_of(value, PLACE)
    return None if tie is None else dim_expr(tie.operands[1])


def pool_offsets(module: ir.Module) -> dict[ir.Value, sym.Expr]:
    """Every pool buffer's offset (hipdnn.place), read with one memo: the offsets share their slot sums."""
    memo = shape_memo()
    return {op.operation.operands[0]: dim_expr(op.operation.operands[1], memo)
            for op in body(module).operations if op.operation.name == PLACE}


def set_pool_size(module: ir.Module, size: sym.Expr) -> None:
    ret = body(module).operations[len(body(module).operations) - 1].operation
    create(POOL, index_operands([size], ret), [], {}, before=ret)


def pool_size(module: ir.Module) -> sym.Expr | None:
    """The pool's byte size (hipdnn.pool), None when the program uses no pool."""
    for op in body(module).operations:
        if op.operation.name == POOL:
            return dim_expr(op.operation.operands[0])
    return None


def placed_offsets(module: ir.Module) -> dict[ir.Value, ir.Value]:
    """Every pool buffer's offset as its index value (hipdnn.place)."""
    return {op.operation.operands[0]: op.operation.operands[1]
            for op in body(module).operations if op.operation.name == PLACE}


def pool_size_value(module: ir.Module) -> ir.Value | None:
    """The pool's byte size as its index value (hipdnn.pool), None when the program uses no pool."""
    for op in body(module).operations:
        if op.operation.name == POOL:
            return op.operation.operands[0]
    return None


def index_operands(values: list[sym.Expr], before: ir.Operation) -> list[ir.Value]:
    build = IndexBuilder(before)
    return [build(v) for v in values]


def host_values_of(op: ir.Operation) -> list[sym.Expr]:
    """The elements of a hipdnn.host_tensor or hipdnn.materialize (its index operands)."""
    memo = shape_memo()
    return [dim_expr(v, memo) for v in op.operands]


def host_values(value: ir.Value) -> list[sym.Expr] | None:
    """Element values of a host-computable value (hipdnn.host_tensor / hipdnn.constant), else None."""
    if is_block_arg(value):
        return _input_values(value)
    op = defining_op(value)
    if op.name == "hipdnn.constant":
        return get_ints(op, "values")
    if op.name != "hipdnn.host_tensor":
        return None
    return host_values_of(op)

def float_values(value: ir.Value) -> list[float] | None:
    """Element values of a small constant float tensor (a hipdnn.weight with float_values), else None."""
    if is_block_arg(value):
        return None
    op = defining_op(value)
    if op is None or op.name != "hipdnn.weight" or "float_values" not in op.attributes:
        return None
    return [float(ir.FloatAttr(a).value) for a in ir.ArrayAttr(op.attributes["float_values"])]


def int_values(value: ir.Value) -> list[int] | None:
    """Element values of a small constant INT8/UINT8 tensor (a hipdnn.weight with int_values), else None."""
    if is_block_arg(value):
        return None
    op = defining_op(value)
    if op is None or op.name != "hipdnn.weight" or "int_values" not in op.attributes:
        return None
    return [int(ir.IntegerAttr(a).value) for a in ir.ArrayAttr(op.attributes["int_values"])]


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


def counted_input_values(value: ir.Value, n: int) -> list[sym.Expr] | None:
    """A 1-D int32/int64 program input of symbolic length read as its first n elements (n at most
    HOST_READABLE_INPUT_ELEMENTS), for an op that knows how many it needs (axes whose count the result's
    rank gives): the caller requires the length to be n.  The program copies at most n elements and
    zero-fills the rest of the scratch range, so a shorter feed is refused by that check without reading
    past it or computing with stale values."""
    if not is_block_arg(value) or n > HOST_READABLE_INPUT_ELEMENTS:
        return None
    t = ir.RankedTensorType(value.type)
    if str(t.element_type) not in ("i64", "i32") or t.rank != 1 or t.has_static_shape:
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
