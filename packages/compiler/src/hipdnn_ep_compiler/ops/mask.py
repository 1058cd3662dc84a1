"""The ops exporters emit around attention masks and shapes: comparisons and logic, Min/Max/Clip/Mod,
Range, ConstantOfShape, GatherElements, CumSum, Trilu, Flatten, Split, Tile, and the unary ops of that code (Abs,
Floor, IsNaN...).

Most are values of the existing binary and unary kernels (ABI 1.3 enum values); Split, Tile and Clip
become several kernel calls; Range and ConstantOfShape fold to host values when their result is a
small static integer tensor, else call the range and fill kernels (a float Range: an int64 range cast,
scaled and shifted); Mod of floats with fmod=0 is composed around the FMOD kernel; GatherElements, CumSum and Trilu
have kernels of their own (all ABI 1.3).
"""

from __future__ import annotations

import numpy as np
import onnx
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from . import host_axes
from .node import (
    HOST_INT_TYPES,
    Node,
    all_host,
    broadcast,
    emit,
    finish,
    host_elementwise,
    host_tensor,
    norm_axis,
    replace,
)
from .onnx import BINARY, CAST, EXPAND, SLICE, UNARY, WHERE, _binary, _unary
from .registry import Kernel, OpDef, Param, register, register_kernel

RANGE = register_kernel(Kernel("range", "kernel_range", params=(Param("start_delta", 0, symbolic=True),),
                               arity=(0, 0)))
FILL = register_kernel(Kernel("fill", "kernel_fill", ("bits",), arity=(0, 0)))
CUMSUM = register_kernel(Kernel("cumsum", "kernel_cumsum", ("axis", "exclusive", "reverse")))
TRILU = register_kernel(Kernel("trilu", "kernel_trilu", ("upper",), params=(Param("k", 1, symbolic=True),)))
GATHER_ELEMENTS = register_kernel(Kernel("gather_elements", "kernel_gather_elements", ("axis",),
                                         labels={1: "indices"}, arity=(2, 2)))

# Host values (shapes) a fold may build: more elements than this stay device tensors.
HOST_FOLD_ELEMENTS = 1024

# ---------------------------------------------------------------- binary and unary ops on existing kernels

for _op_type, _key in (("GreaterOrEqual", "GREATER_OR_EQUAL"), ("LessOrEqual", "LESS_OR_EQUAL"), ("And", "AND"),
                      ("Or", "OR"), ("Xor", "XOR")):
    register(OpDef(_op_type, _key.lower(), _binary, (BINARY,), enum_key=_key))

for _op_type, _key in (("Abs", "ABS"), ("Floor", "FLOOR"), ("Ceil", "CEIL"), ("Not", "NOT"), ("IsNaN", "IS_NAN"),
                      ("Sign", "SIGN"), ("Reciprocal", "RECIPROCAL")):
    register(OpDef(_op_type, _key.lower(), _unary, (UNARY,), enum_key=_key))


def _mod(o: Node) -> None:
    fmod = o.attr_int("fmod", 0)
    if fmod not in (0, 1):
        raise ModelError(f"{o.where}: fmod is {fmod}; it must be 0 or 1")
    if not fmod and o.result_dtype() in _FLOAT_TYPES:
        _float_floor_mod(o)
        return
    if all_host(o) and o.result_dtype() in HOST_INT_TYPES:
        try:
            if host_elementwise(o, lambda a, b: _host_mod(a, b, fmod)):
                return
        except ZeroDivisionError:
            raise ModelError(f"{o.where}: a divisor is 0") from None
    replace(o, BINARY, [o.input(0), o.input(1)], {"op": "FMOD" if fmod else "MOD"},
            [broadcast(o, o.dims(0), o.dims(1))])


_FLOAT_TYPES = (1, 10, 11)  # float32, float16, float64


def _float_floor_mod(o: Node) -> None:
    """Mod with fmod=0 of floats (defined from opset 28): the remainder of floor division, the sign of B.
    fmod's remainder r, moved by B where r is nonzero and its sign differs from B's; a zero remainder is
    zero with B's sign (NaN and infinities as numpy's mod: x mod inf is x or inf, inf mod y is NaN)."""
    a, b = o.input(0), o.input(1)
    da, db = o.dims(0), o.dims(1)
    d = broadcast(o, da, db)
    dtype = o.result_dtype()

    def call(op, operands: list[ir.Value], attrs: dict, dims: list[sym.Expr], boolean: bool = False) -> ir.Value:
        with o.op.context:
            rt = ir.Type.parse(hir.tensor_type_str(9 if boolean else dtype, dims))
        return emit(o, op, operands, attrs, [dims], [rt]).results[0]

    def fill(value: float) -> ir.Value:
        return call(FILL, [], {"bits": _fill_bits(np.array([value]), dtype)}, [])

    r = call(BINARY, [a, b], {"op": "FMOD"}, d)
    zero = fill(0.0)
    b_negative = call(BINARY, [b, zero], {"op": "LESS"}, db, boolean=True)
    differ = call(BINARY, [call(BINARY, [r, zero], {"op": "LESS"}, d, boolean=True), b_negative], {"op": "XOR"}, d,
                  boolean=True)
    moved = call(WHERE, [differ, call(BINARY, [r, b], {"op": "ADD"}, d), r], {}, d)
    signed_zero = call(WHERE, [b_negative, fill(-0.0), zero], {}, db)
    is_zero = call(BINARY, [r, zero], {"op": "EQUAL"}, d, boolean=True)
    finish(o, [call(WHERE, [is_zero, signed_zero, moved], {}, d)])


def _host_mod(a: sym.Expr, b: sym.Expr, fmod: int) -> sym.Expr:
    """a mod b of host ints: the sign of a (fmod=1, C's %) or of b (fmod=0, Python's %)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError
        return a - b * sym.div(a, b) if fmod else a % b
    rem = sym.sub(a, sym.mul(b, sym.div(a, b)))  # truncated: the sign of a
    if fmod or (sym.nonnegative(a) and sym.nonnegative(b)):
        return rem
    # a nonzero remainder whose sign differs from b's moves by b
    same_sign = sym.select_negative(b, sym.select_negative(rem, rem, sym.add(rem, b)),
                                    sym.select_negative(rem, sym.add(rem, b), rem))
    return sym.select_zero(rem, 0, same_sign)


register(OpDef("Mod", "mod", _mod, (BINARY, FILL, WHERE)))


def _chain(o: Node, key: str, values: list[ir.Value], dims: list[list[sym.Expr]]) -> tuple[ir.Value, list[sym.Expr]]:
    """values[0] op values[1] op ... as binary kernel calls (broadcasting step by step)."""
    acc, acc_dims = values[0], dims[0]
    for v, d in zip(values[1:], dims[1:], strict=True):
        acc_dims = broadcast(o, acc_dims, d)
        acc = emit(o, BINARY, [acc, v], {"op": key}, [acc_dims], [o.op.results[0].type]).results[0]
    return acc, acc_dims


def _min_max(o: Node) -> None:
    ins = [o.inputs[k] for k in sorted(o.inputs)]
    if not ins:
        raise ModelError(f"{o.where}: {o.entry.op_type} needs at least one input")
    fn = sym.minimum if o.kind == "min" else sym.maximum
    if len(ins) == 2 and all_host(o) and o.result_dtype() in HOST_INT_TYPES and host_elementwise(o, fn):
        return
    if len(ins) == 1:
        replace(o, "hipdnn.alias", ins, {}, [o.dims(0)])
        return
    out, _ = _chain(o, o.entry.enum_key, ins, [hir.dims_of(v) for v in ins])
    finish(o, [out])


register(OpDef("Min", "min", _min_max, (BINARY,), enum_key="MIN"))
register(OpDef("Max", "max", _min_max, (BINARY,), enum_key="MAX"))


def _clip(o: Node) -> None:
    # min(max(x, lo), hi), as ONNX Runtime computes it (lo > hi gives hi)
    x, d = o.input(0), o.dims(0)
    for i, what in ((1, "min"), (2, "max")):
        if o.input(i) is not None and len(o.dims(i)) != 0 and o.dims(i) != [1]:
            raise ModelError(f"{o.where}: the {what} input has shape {o.dims(i)}; it must be a scalar")
    out = x
    for i, key in ((1, "MAX"), (2, "MIN")):
        if o.input(i) is not None:
            out = emit(o, BINARY, [out, o.input(i)], {"op": key}, [d], [o.op.results[0].type]).results[0]
    if out is x:
        replace(o, "hipdnn.alias", [x], {}, [d])
        return
    finish(o, [out])


register(OpDef("Clip", "clip", _clip, (BINARY,)))

# ---------------------------------------------------------------- Range, ConstantOfShape


def _scalar(o: Node, i: int, what: str) -> sym.Expr | None:
    vals = o.host(i)
    if vals is None:
        return None
    if len(o.dims(i)) > 1 or len(vals) != 1:
        raise ModelError(f"{o.where}: {what} has shape {o.dims(i)}; it must be a scalar")
    return vals[0]


def _range_count(o: Node, start: sym.Expr, limit: sym.Expr, delta: sym.Expr) -> sym.Expr:
    """max(ceil((limit - start) / delta), 0) over host ints."""
    if delta == 0:
        raise ModelError(f"{o.where}: delta is 0")
    if not isinstance(delta, int):
        text = checks.Text(1, sym.mul(delta, delta))
        o.require("le", text.values, "delta is 0; Range needs a nonzero delta")
    count = sym.ceildiv(sym.sub(limit, start), delta)
    if not sym.nonnegative(count):  # Range(0, dim, 1) over a dim is the dim itself, without a max
        count = sym.maximum(count, 0)
    return count


def _float_scalar(o: Node, i: int, what: str) -> float | sym.Expr | None:
    """A float Range operand known on the host: a small float constant (a float), or a Cast to float of
    a host int value (its int expression), else None."""
    v = o.input(i)
    vals = hir.float_values(v)
    if vals is None and not hir.is_block_arg(v):
        op = hir.defining_op(v)
        if op is not None and op.name == CAST.op_name:
            vals = hir.host_values(op.operands[0])
    if vals is None:
        return None
    if len(o.dims(i)) > 1 or len(vals) != 1:
        raise ModelError(f"{o.where}: {what} has shape {o.dims(i)}; it must be a scalar")
    return vals[0]


def _float_range(o: Node) -> None:
    """Range of floats whose length the host computes: start + i * delta, as an int64 range cast to the
    element type, times delta, plus start (kernel calls: the range kernel is integer only)."""
    start, limit, delta = (_float_scalar(o, i, w) for i, w in enumerate(("start", "limit", "delta")))
    if start is None or limit is None or delta is None:
        o.fail("start, limit and delta of a floating-point Range must be constants, or casts of values computable "
               "on the host (input shapes, constants, small integer inputs)")
    if all(isinstance(v, float) for v in (start, limit, delta)):
        if delta == 0:
            raise ModelError(f"{o.where}: delta is 0")
        # as onnxruntime: limit - start in the element type, divided by delta in double, rounded up
        np_type = onnx.helper.tensor_dtype_to_np_dtype(o.result_dtype())
        span = np.float64(np.asarray(limit, np_type) - np.asarray(start, np_type))
        quotient = span / np.float64(np.asarray(delta, np_type))
        if not np.isfinite(quotient):
            raise ModelError(f"{o.where}: Range({start}, {limit}, {delta}) has no finite length")
        count = max(int(np.ceil(quotient)), 0)
    else:  # a value computed on the host: exact in integers when start and delta are whole numbers
        ints = [v if not isinstance(v, float) else int(v) if v.is_integer() else None for v in (start, limit, delta)]
        if None in ints:
            o.fail("a floating-point Range whose limit (or start, delta) is computed on the host needs whole-number "
                   "start and delta constants")
        count = _range_count(o, *ints)
    dtype = o.result_dtype()
    with o.op.context:
        index_t = ir.Type.parse(hir.tensor_type_str(hir.INT64, [count]))
        float_t = ir.Type.parse(hir.tensor_type_str(dtype, [count]))
    idx = emit(o, RANGE, [], {}, [[count]], [index_t], params={"start_delta": [0, 1]}).results[0]
    steps = emit(o, CAST, [idx], {"to": dtype}, [[count]], [float_t]).results[0]
    scaled = emit(o, BINARY, [steps, o.input(2)], {"op": "MUL"}, [[count]], [float_t]).results[0]
    finish(o, [emit(o, BINARY, [scaled, o.input(0)], {"op": "ADD"}, [[count]], [float_t]).results[0]])


def _range(o: Node) -> None:
    if o.result_dtype() in _FLOAT_TYPES:
        _float_range(o)
        return
    if o.result_dtype() not in HOST_INT_TYPES:
        o.fail("Range is supported on int32, int64 and floating-point types")
    start, limit, delta = (_scalar(o, i, w) for i, w in enumerate(("start", "limit", "delta")))
    if start is None or limit is None or delta is None:
        o.fail("start, limit and delta must be computable from input shapes, constants and small integer inputs")
    count = _range_count(o, start, limit, delta)
    if isinstance(count, int) and count <= HOST_FOLD_ELEMENTS:
        host_tensor(o, [sym.add(start, sym.mul(k, delta)) for k in range(count)], [count])
        return
    replace(o, RANGE, [], {}, [[count]], params={"start_delta": [start, delta]})


register(OpDef("Range", "range", _range, (RANGE, CAST, BINARY)))


def _value_attr(o: Node) -> np.ndarray:
    """ConstantOfShape's value (one element; float32 0 when absent)."""
    if "onnx.value" not in o.op.attributes:
        return np.zeros(1, np.float32)
    values = np.array(ir.DenseElementsAttr(o.op.attributes["onnx.value"])).reshape(-1)
    if values.size != 1:
        raise ModelError(f"{o.where}: value has {values.size} elements; it must have one")
    return values


def _fill_bits(value: np.ndarray, dtype: int) -> int:
    """The int64 whose low bytes (little-endian) are `value` stored as `dtype`."""
    raw = value.astype(onnx.helper.tensor_dtype_to_np_dtype(dtype)).tobytes()
    return int.from_bytes(raw.ljust(8, b"\0"), "little", signed=True)


def _constant_of_shape(o: Node) -> None:
    shape = o.host(0)
    if shape is None:
        o.fail("the shape must be computable from input shapes and constants")
    if len(o.dims(0)) != 1:
        raise ModelError(f"{o.where}: the shape input has rank {len(o.dims(0))}; it must be 1-D")
    value = _value_attr(o)
    dtype = o.result_dtype()
    static = all(isinstance(d, int) for d in shape)
    if dtype in HOST_INT_TYPES and static and int(np.prod(shape)) <= HOST_FOLD_ELEMENTS:
        for d in shape:
            if d < 0:
                raise ModelError(f"{o.where}: shape {shape} has a negative dim")
        host_tensor(o, [int(value[0])] * int(np.prod(shape)), list(shape))
        return
    replace(o, FILL, [], {"bits": _fill_bits(value, dtype)}, [list(shape)])


register(OpDef("ConstantOfShape", "constant_of_shape", _constant_of_shape, (FILL,)))

# ---------------------------------------------------------------- CumSum, Trilu


def _cumsum(o: Node) -> None:
    d = o.dims(0)
    if host_axes.fed(o, 1):
        _cumsum_fed_axis(o, d)
        return
    axis = o.const_ints(1, "the axis")
    if axis is None or len(axis) != 1 or len(o.dims(1)) > 1:
        raise ModelError(f"{o.where}: the axis must be one value (a scalar or a 1-element tensor)")
    attrs = {"axis": norm_axis(o, axis[0], len(d)), "exclusive": int(o.attr_int("exclusive", 0) != 0),
             "reverse": int(o.attr_int("reverse", 0) != 0)}
    replace(o, CUMSUM, [o.input(0)], attrs, [d])


def _cumsum_fed_axis(o: Node, d: list[sym.Expr]) -> None:
    """The axis read at run time: a cumsum over the last axis between two transposes whose permutation
    (the fed axis moved last, then back) is written at run time (ops/host_axes.py)."""
    ax = host_axes.axes(o, 1, len(d), "axis")
    if len(ax) != 1:
        raise ModelError(f"{o.where}: the axis must be one value (a scalar or a 1-element tensor)")
    attrs = {"axis": len(d) - 1, "exclusive": int(o.attr_int("exclusive", 0) != 0),
             "reverse": int(o.attr_int("reverse", 0) != 0)}
    if len(d) == 1:  # the one axis (its range is checked)
        replace(o, CUMSUM, [o.input(0)], attrs, [d])
        return
    fwd, inv = host_axes.last_perm(len(d), ax[0])
    moved = [host_axes.pick(d, p) for p in fwd]
    t = o.op.results[0].type
    # the moved tensor's dims are a run-time permutation of d: its type states none of t's
    with o.op.context, o.op.location:
        tm = ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size()] * len(d), ir.RankedTensorType(t).element_type)
    x = emit(o, host_axes.TRANSPOSE_PERM, [o.input(0)], {}, [moved], [tm], params={"perm": fwd}).results[0]
    x = emit(o, CUMSUM, [x], attrs, [moved], [tm]).results[0]
    x = emit(o, host_axes.TRANSPOSE_PERM, [x], {}, [d], [t], params={"perm": inv}).results[0]
    finish(o, [x])


register(OpDef("CumSum", "cumsum", _cumsum, (CUMSUM, host_axes.TRANSPOSE_PERM)))


def _trilu(o: Node) -> None:
    d = o.dims(0)
    if len(d) < 2:
        raise ModelError(f"{o.where}: the input has rank {len(d)}; Trilu needs at least 2")
    k = _scalar(o, 1, "k") if o.input(1) is not None else 0
    if k is None:
        o.fail("k must be computable from input shapes, constants and small integer inputs")
    replace(o, TRILU, [o.input(0)], {"upper": int(o.attr_int("upper", 1) != 0)}, [d], params={"k": [k]})


register(OpDef("Trilu", "trilu", _trilu, (TRILU,)))

# ---------------------------------------------------------------- GatherElements


def _gather_elements(o: Node) -> None:
    d, di = o.dims(0), o.dims(1)
    if len(d) != len(di):
        raise ModelError(f"{o.where}: indices have rank {len(di)} but data has rank {len(d)}; they must be equal")
    axis = norm_axis(o, o.attr_int("axis", 0), len(d))
    for k, (a, b) in enumerate(zip(di, d, strict=True)):
        if k != axis and a != b:
            text = checks.Text(a, b)
            o.require("le", text.values, f"indices dim {k} is {{0}} but data's is {{1}}; it must not be larger")
    replace(o, GATHER_ELEMENTS, [o.input(0), o.input(1)], {"axis": axis}, [di])


register(OpDef("GatherElements", "gather_elements", _gather_elements, (GATHER_ELEMENTS,)))

# ---------------------------------------------------------------- Flatten, Split, Tile


def _flatten(o: Node) -> None:
    d = o.dims(0)
    axis = o.attr_int("axis", 1)
    if not -len(d) <= axis <= len(d):
        raise ModelError(f"{o.where}: axis {axis} is out of range for rank {len(d)}")
    axis = axis + len(d) if axis < 0 else axis
    dims = [sym.product(d[:axis]), sym.product(d[axis:])]
    vals = o.host(0)
    if vals is not None:
        host_tensor(o, vals, dims)
        return
    replace(o, "hipdnn.alias", [o.input(0)], {}, [dims])


register(OpDef("Flatten", "flatten", _flatten))


def _split_sizes(o: Node, dim: sym.Expr, n_out: int) -> list[sym.Expr]:
    """The sizes of the parts: the split input when given, a small int64 graph input read at run time
    (host_axes), or computed on the host (a constant, shape arithmetic such as the rotary dim of
    RotaryEmbedding's expansion)."""
    if host_axes.fed(o, 1):  # not constant: read at run time, or refused naming what it may be
        return _fed_split_sizes(o, dim, n_out)
    sizes = o.host(1) if o.input(1) is not None else o.attr_ints("split")
    if sizes:
        if len(sizes) != n_out:
            raise ModelError(f"{o.where}: split has {len(sizes)} entries for {n_out} outputs")
        if any(isinstance(s, int) and s < 0 for s in sizes):
            raise ModelError(f"{o.where}: split {sizes} has a negative size")
        shown = "[" + ", ".join(sym.to_str(s) for s in sizes) + "]"
        for s in sizes:
            if not isinstance(s, int):
                text = checks.Text(s)
                o.require("nonneg", text.values, f"split {shown} has a negative size {{0}}")
        total: sym.Expr = 0
        for s in sizes:
            total = sym.add(total, s)
        text = checks.Text(total, dim)
        o.require("eq", text.values, f"split sizes {shown} add up to {{0}} but the axis has size {{1}}")
        return list(sizes)
    num = o.attr_int("num_outputs", n_out)
    if num != n_out:
        raise ModelError(f"{o.where}: num_outputs is {num} but the node has {n_out} outputs")
    if o.attr_int("num_outputs") is None:  # before opset 18: equal parts, the axis must divide evenly
        text = checks.Text(sym.mul(sym.div(dim, num), num), dim)
        o.require("eq", text.values, f"the axis has size {{1}}, which does not split into {num} equal parts")
    # opset 18: parts of ceil(dim / num), the last one smaller
    chunk = sym.ceildiv(dim, num)
    last = sym.sub(dim, sym.mul(chunk, num - 1))
    text = checks.Text(last)
    o.require("nonneg", text.values, f"the last of {num} parts would have {{0}} elements")
    return [chunk] * (num - 1) + [last]


def _fed_split_sizes(o: Node, dim: sym.Expr, n_out: int) -> list[sym.Expr]:
    """Split sizes read on the host at run time: each >= 0 and their sum the axis' size, checked by the
    program before anything runs (each output is a slice at a run-time start)."""
    sizes = host_axes.values(o, 1, "split", n_out)
    if len(o.dims(1)) != 1:
        raise ModelError(f"{o.where}: the split input has rank {len(o.dims(1))}; it must be 1-D")
    if len(sizes) != n_out:
        raise ModelError(f"{o.where}: split has {len(sizes)} entries for {n_out} outputs")
    for k, s in enumerate(sizes):
        if isinstance(s, int) and s < 0:
            raise ModelError(f"{o.where}: split entry {k} is {s}; sizes must be >= 0")
        if not isinstance(s, int):
            text = checks.Text(s)
            o.require("nonneg", text.values, f"split entry {k} is {{0}}; sizes must be >= 0")
    text = checks.Text(sym.add(0, *sizes), dim)
    o.require("eq", text.values, f"split sizes {text.dims(sizes)} add up to {{0}} but the axis has size {{1}}")
    return list(sizes)


def _split(o: Node) -> None:
    d = o.dims(0)
    axis = norm_axis(o, o.attr_int("axis", 0), len(d))
    results = list(o.op.results)
    roles = hir.get_ints(o.op, "result_roles", list(range(len(results))))
    n_out = len(o.op.results) if "result_roles" not in o.op.attributes else None
    n_out = n_out if n_out is not None else max(roles) + 1
    sizes = _split_sizes(o, d[axis], n_out)
    starts: list[sym.Expr] = [0]
    for s in sizes:
        starts.append(sym.add(starts[-1], s))
    outs = []
    for r, role in zip(results, roles, strict=True):
        begin = [0] * len(d)
        begin[axis] = starts[role]
        counts = list(d)
        counts[axis] = sizes[role]
        new = emit(o, SLICE, [o.input(0)], {"steps": [1] * len(d)}, [counts], [r.type], params={"starts": begin})
        outs.append(new.results[0])
    finish(o, outs)


register(OpDef("Split", "split", _split, (SLICE,)))


def _tile(o: Node) -> None:
    d = o.dims(0)
    repeats = o.host(1)
    if repeats is None:
        o.fail("repeats must be computable from input shapes and constants")
    if len(repeats) != len(d):
        raise ModelError(f"{o.where}: repeats has {len(repeats)} entries for an input of rank {len(d)}")
    for i, r in enumerate(repeats):
        if not sym.nonnegative(r):
            text = checks.Text(r)
            o.require("nonneg", text.values, f"repeats entry {i} is {{0}}; it must be >= 0")
    out = [sym.mul(r, x) for r, x in zip(repeats, d, strict=True)]
    if all(r == 1 for r in repeats):
        replace(o, "hipdnn.alias", [o.input(0)], {}, [d])
        return
    # x [d0, d1] -> [1, d0, 1, d1] (alias) -> expand to [r0, d0, r1, d1] -> [r0 * d0, r1 * d1] (alias)
    t = o.op.results[0].type
    inter = [e for x in d for e in (1, x)]
    wide = [e for r, x in zip(repeats, d, strict=True) for e in (r, x)]
    a = emit(o, "hipdnn.alias", [o.input(0)], {}, [inter], [t]).results[0]
    e = emit(o, EXPAND, [a], {}, [wide], [t]).results[0]
    finish(o, [emit(o, "hipdnn.alias", [e], {}, [out], [t]).results[0]])


register(OpDef("Tile", "tile", _tile, (EXPAND,)))
