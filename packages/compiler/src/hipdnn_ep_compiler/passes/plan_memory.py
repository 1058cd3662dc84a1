"""Pass plan-memory: place every intermediate in the pool, every program output in its own block.

IR in: after materialize-host-scalars.
IR out:
  * each program result owns a buffer the program allocates with the runtime's malloc: when a
    result is (an alias of) a program input, a weight, or a buffer another result already
    owns, a `hipdnn.copy` is inserted;
  * ops that produce a buffer (kernels, materialize, copy) get `hipdnn.storage` = "output"
    (with `hipdnn.output_index`) or "pool" for their result; an op with several results
    (GroupQueryAttention) gets `hipdnn.storage.<k>` etc. for result k;
  * a pool buffer's byte offset is an index value (arith over the input dims), stated by
    `"hipdnn.place"(%buffer, %offset)`, and the pool's byte size by `"hipdnn.pool"(%size)`, when the
    pool is used; canonicalize and cse fold and share them with the rest of the shape arithmetic;
  * every index value whose expression equals an earlier one's is replaced by it (hir.share_equal_values:
    what the builders wrote in two forms is computed once by the program).

Offsets are liveness based.  With static sizes a buffer goes to the lowest offset that no
buffer with an overlapping live range occupies (first fit).  With dynamic sizes, buffers share
slots: a buffer reuses a slot whose previous tenant is dead (preferring one that held a buffer of
the same size expression), a slot is as large as its largest tenant, and slots are laid end to
end.  Every offset is then a sum of slot sizes, each a maximum of a few size expressions, so the
expressions the host program evaluates at run time grow linearly with the graph; placing each
buffer above all live ones instead would nest every earlier offset into the next and grow
exponentially.  Sizes are rounded up to ALIGNMENT.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from torch_mlir import ir

from .. import ir as hir
from .. import symbolic as sym

NAME = "plan-memory"
FOLLOW = hir.FOLD  # the offsets and the pool size are arithmetic to fold
ALIGNMENT = 256
NO_BUFFER = {"hipdnn.alias", "hipdnn.weight", "func.return"}


def attr_name(name: str, result: int) -> str:
    """The planning attribute `name` of an op's result: `name` for result 0, `name.<k>` for result k."""
    return name if result == 0 else f"{name}.{result}"


def storage(op: ir.Operation, result: int = 0) -> str | None:
    """ "output", "pool" or None (no buffer) for an op's result."""
    return hir.get_str(op, attr_name("hipdnn.storage", result))


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
    return sym.mul(hir.DTYPES[hir.element_dtype(value)][1], sym.product(hir.dims_of(value)))


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
        copy = hir.create("hipdnn.copy", [value], [value.type],
                          {"hipdnn.dims_slot": [-1 if all(sym.is_static(d) for d in dims) else _reuse_slot(value)]},
                          before=ret)
        hir.tie_dims(copy.results[0], dims, before=ret)
        ret.operands[k] = copy.results[0]
        claimed.add(copy.results[0])

    # Ops are addressed by their position: an ir.Operation's hash changes when an attribute is set
    # (as below, on ops whose results are outputs), so ops cannot key a dict across the loop.
    ops = hir.ops(module)
    end = len(ops)
    outputs = {}
    for k, value in enumerate(ret.operands):
        outputs[_base(value)] = k

    # live range of each buffer: its defining op to its last use through any alias chain
    last_use: dict = {}
    for i, op in enumerate(ops):
        for operand in op.operands:
            base = _base(operand)
            last_use[base] = end if op.name == "func.return" else max(last_use.get(base, 0), i)

    buffers: list[_Buffer] = []
    for i, op in enumerate(ops):
        if op.name in NO_BUFFER or not op.results:
            continue
        for k, value in enumerate(op.results):
            if value in outputs:
                hir.set_attr(op, attr_name("hipdnn.storage", k), "output")
                hir.set_attr(op, attr_name("hipdnn.output_index", k), outputs[value])
                continue
            buffers.append(_Buffer(op, k, i, last_use.get(value, i), _align(size_bytes(value))))
    if buffers:
        static = all(sym.is_static(b.size) for b in buffers)
        offsets, pool_size = _first_fit(buffers) if static else _slots(buffers)
        for b, offset in zip(buffers, offsets, strict=True):
            hir.set_attr(b.op, attr_name("hipdnn.storage", b.result), "pool")
            hir.place(b.op.results[b.result], offset, before=ret)
        hir.set_pool_size(module, pool_size)
    hir.share_equal_values(module)  # the shape computation the lowering emits, each value once
    return module


@dataclass(frozen=True)
class _Buffer:
    op: ir.Operation
    result: int  # which result of op
    start: int  # index of the defining op
    stop: int  # index of the last use
    size: sym.Expr  # aligned byte size


def _first_fit(buffers: list[_Buffer]) -> tuple[list[int], int]:
    """Static sizes: the lowest offset not overlapping any buffer with an overlapping live range."""
    placed: list[tuple[_Buffer, int]] = []
    for b in buffers:
        live = [(off, other.size) for other, off in placed if other.start <= b.stop and b.start <= other.stop]
        offset = next(c for c in sorted({0} | {off + sz for off, sz in live})
                      if all(c + b.size <= off or off + sz <= c for off, sz in live))
        placed.append((b, offset))
    return [off for _, off in placed], max(off + b.size for b, off in placed)


def _slots(buffers: list[_Buffer]) -> tuple[list[sym.Expr], sym.Expr]:
    """Dynamic sizes: slots reused once their tenant is dead, laid end to end."""
    slot_end: list[int] = []  # last use of the slot's current tenant
    slot_sizes: list[list[sym.Expr]] = []  # distinct size expressions of its tenants
    assignment = []
    for b in buffers:
        free = [k for k, end in enumerate(slot_end) if end < b.start]
        slot = next((k for k in free if b.size in slot_sizes[k]), free[0] if free else None)
        if slot is None:
            slot = len(slot_end)
            slot_end.append(b.stop)
            slot_sizes.append([])
        slot_end[slot] = b.stop
        if b.size not in slot_sizes[slot]:
            slot_sizes[slot].append(b.size)
        assignment.append(slot)
    sizes = [functools.reduce(sym.maximum, tenants) for tenants in slot_sizes]
    starts = [sym.add(*sizes[:k]) if k else 0 for k in range(len(sizes))]
    return [starts[k] for k in assignment], sym.add(*sizes)


def _reuse_slot(value: ir.Value) -> int:
    """A copy has the dims of its source: reuse the source's dims slot (or the caller's dims)."""
    if hir.is_block_arg(value):
        return -2  # the caller's dims array of that program input
    op = hir.defining_op(value)
    slots = hir.get_ints(op, "hipdnn.dims_slot", None)
    return slots[hir.result_index(value)] if slots else -1
