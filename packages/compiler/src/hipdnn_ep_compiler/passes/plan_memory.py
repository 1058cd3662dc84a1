"""Pass plan-memory: place every intermediate in the pool, every program output in its own block.

IR in: after materialize-host-scalars.
IR out:
  * each program result owns a buffer the program allocates with the runtime's malloc: when a
    result is (an alias of) a program input, a weight, or a buffer another result already
    owns, a `hipdnn.copy` is inserted;
  * ops that produce a buffer (kernels, materialize, copy) get `hipdnn.storage` = "output"
    (with `hipdnn.output_index`) or "pool" (with `hipdnn.offset`, an expression);
  * `hipdnn.pool_size` (expression) on the function when the pool is used.

Offsets are liveness based: a buffer is placed just above every earlier buffer whose live
range overlaps its own, rounded up to ALIGNMENT.  With dynamic sizes the same formula is an
expression the host program evaluates at run time.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import ir as hir
from .. import symbolic as sym

NAME = "plan-memory"
ALIGNMENT = 256
NO_BUFFER = {"hipdnn.alias", "hipdnn.weight", "func.return"}


def _base(value: ir.Value) -> ir.Value:
    while not hir.is_block_arg(value):
        op = hir.defining_op(value)
        if op.name != "hipdnn.alias":
            break
        value = op.operands[0]
    return value


def _owns_buffer(value: ir.Value) -> bool:
    return not hir.is_block_arg(value) and hir.defining_op(value).name not in NO_BUFFER


def size_bytes(value: ir.Value) -> sym.Expr:
    return sym.mul(hir.DTYPES[hir.element_dtype_from_text(str(value.type))][1], sym.product(hir.dims_of(value)))


def _align(e: sym.Expr) -> sym.Expr:
    return sym.mul(ALIGNMENT, sym.ceildiv(e, ALIGNMENT))


def run(module: ir.Module) -> ir.Module:
    ret = hir.ops(module)[-1]
    claimed: set = set()
    for k, value in enumerate(list(ret.operands)):
        base = _base(value)
        if _owns_buffer(base) and base not in claimed:
            claimed.add(base)
            continue
        dims = hir.dims_of(value)
        copy = hir.create("hipdnn.copy", [value], [str(value.type)],
                          {"hipdnn.dims": [[sym.to_str(d) for d in dims]],
                           "hipdnn.dims_slot": [-1 if all(sym.is_static(d) for d in dims) else _reuse_slot(value)]},
                          before=ret)
        ret.operands[k] = copy.results[0]
        claimed.add(copy.results[0])

    ops = hir.ops(module)
    index = {op: i for i, op in enumerate(ops)}
    end = len(ops)
    outputs = {}
    for k, value in enumerate(ret.operands):
        outputs[_base(value)] = k

    # live range of each buffer: its defining op to its last use through any alias chain
    last_use: dict = {}
    for op in ops:
        for operand in op.operands:
            base = _base(operand)
            last_use[base] = end if op.name == "func.return" else max(last_use.get(base, 0), index[op])

    placed: list[tuple[int, int, sym.Expr, sym.Expr]] = []  # (start, end, offset, size)
    pool_size: sym.Expr | None = None
    for op in ops:
        if op.name in NO_BUFFER or not op.results:
            continue
        value = op.results[0]
        if value in outputs:
            hir.set_attr(op, "hipdnn.storage", "output")
            hir.set_attr(op, "hipdnn.output_index", outputs[value])
            continue
        start, stop = index[op], last_use.get(value, index[op])
        size = _align(size_bytes(value))
        live = [(off, sz) for s, e, off, sz in placed if s <= stop and start <= e]
        offset = _first_fit(live, size)
        placed.append((start, stop, offset, size))
        top = sym.add(offset, size)
        pool_size = top if pool_size is None else sym.maximum(pool_size, top)
        hir.set_attr(op, "hipdnn.storage", "pool")
        hir.set_attr(op, "hipdnn.offset", sym.to_str(offset))
    if placed:
        hir.set_attr(hir.main_func(module), "hipdnn.pool_size", sym.to_str(pool_size))
    return module


def _first_fit(live: list[tuple[sym.Expr, sym.Expr]], size: sym.Expr) -> sym.Expr:
    """Lowest offset not overlapping any live buffer; with dynamic sizes, above all of them."""
    if all(sym.is_static(x) for pair in live for x in pair) and sym.is_static(size):
        for candidate in sorted({0} | {off + sz for off, sz in live}):
            if all(candidate + size <= off or off + sz <= candidate for off, sz in live):
                return candidate
    offset: sym.Expr = 0
    for off, sz in live:
        offset = sym.maximum(offset, sym.add(off, sz)) if offset != 0 else sym.add(off, sz)
    return offset


def _reuse_slot(value: ir.Value) -> int:
    """A copy has the dims of its source: reuse the source's dims slot (or the caller's dims)."""
    if hir.is_block_arg(value):
        return -2  # the caller's dims array of that program input
    op = hir.defining_op(value)
    slots = hir.get_ints(op, "hipdnn.dims_slot", None)
    return slots[hir.result_index(value)] if slots else -1
