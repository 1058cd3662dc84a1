"""Pass materialize-host-scalars: decide where every host-computed integer lives at run time.

IR in: refined IR (refine-shapes, eliminate-dead-ops).
IR out:
  * a `hipdnn.host_tensor`/`hipdnn.constant` still used by a device op (a kernel, an alias, the
    program result) becomes `hipdnn.materialize`: a device int tensor filled from the host
    (memcpy HOST_TO_DEVICE), the only way host values reach device data;
  * every integer array the program hands the runtime (dims of tensors, materialized values,
    the symbolic parameter arrays of kernels, e.g. slice starts) whose entries are not all
    compile-time constants gets a slot range in the host scratch: `hipdnn.dims_slot` (per result,
    -1 = static or caller-owned), `hipdnn.values_slot`, and for a kernel's symbolic `Param`
    its `slot_attr` (`hipdnn.starts_slot`);
  * program inputs whose elements are used on the host (a Reshape target or Slice starts fed
    as a graph input: "v" symbols) get `hipdnn.input_value_slots` = [[input, first slot, elements], ...]:
    the program copies them DEVICE_TO_HOST into the scratch before computing anything;
  * the function gets `hipdnn.host_scratch_slots` = number of int64 slots, only when some
    array is dynamic.  A fully static graph uses no host scratch at all.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..ops import Param, kernel

NAME = "materialize-host-scalars"

HOST_OPS = ("hipdnn.host_tensor", "hipdnn.constant")


def _symbolic_params(op: ir.Operation) -> list[Param]:
    entry = kernel(op.name)
    return [p for p in entry.params if p.symbolic] if entry else []


def _static(exprs: list[sym.Expr]) -> bool:
    return all(sym.is_static(e) for e in exprs)


def run(module: ir.Module) -> ir.Module:
    for op in hir.ops(module):
        if op.name in HOST_OPS and op.results[0].uses:
            operands = (list(op.operands) if op.name == "hipdnn.host_tensor"
                        else hir.index_operands(hir.get_ints(op, "values"), before=op))
            new = hir.create("hipdnn.materialize", operands, [op.results[0].type], {}, before=op)
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()

    next_slot = 0
    by_content: dict[str, int] = {}  # identical arrays share one slot range

    def take(exprs: list[sym.Expr], elem: str = "i64") -> int:
        nonlocal next_slot
        key = elem + ":" + " ".join(sym.to_str(e) for e in exprs)
        if key not in by_content:
            by_content[key] = next_slot
            next_slot += len(exprs)
        return by_content[key]

    read: list[sym.Expr] = []  # every array the host computes, for the input elements it reads
    for op in hir.ops(module):
        if op.name == "func.return" or not op.results:
            continue
        slots = []
        for r in op.results:
            dims = hir.dims_of(r)
            read += dims
            slots.append(-1 if _static(dims) else take(dims))
        hir.set_attr(op, "hipdnn.dims_slot", slots)
        if op.name == "hipdnn.materialize":
            vals = hir.host_values_of(op)
            read += vals
            hir.set_attr(op, "hipdnn.values_slot", -1 if _static(vals) else take(vals, str(op.results[0].type)))
        for param in _symbolic_params(op):
            vals = hir.param_values(op, param.attr)
            read += vals
            hir.set_attr(op, param.slot_attr, -1 if _static(vals) else take(vals))
    for check in checks.read(hir.main_func(module)):
        read += check.values
    # program inputs whose elements the host reads ("v" symbols) get a copy in the host scratch
    read_inputs: dict[int, int] = {}  # input -> elements read (the highest element read + 1)
    for s in (s for e in read for s in sym.symbols(e) if sym.is_value_symbol(s)):
        i, k = sym.parse_symbol(s)
        read_inputs[i] = max(read_inputs.get(i, 0), k + 1)
    block = hir.body(module)
    pairs = []
    for i in sorted(read_inputs):
        t = ir.RankedTensorType(block.arguments[i].type)
        # a static input is copied whole; one of symbolic length (hir.counted_input_values) up to the
        # elements read
        n = read_inputs[i] if t.rank == 1 and not t.has_static_shape else (t.shape[0] if t.rank == 1 else 1)
        pairs.append([i, next_slot, n])
        next_slot += n
    if pairs:
        hir.set_attr(hir.main_func(module), "hipdnn.input_value_slots", pairs)
    if next_slot:
        hir.set_attr(hir.main_func(module), "hipdnn.host_scratch_slots", next_slot)
    return module
