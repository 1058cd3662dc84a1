"""The general ONNX ops: the reductions beyond Sum/Mean/Max, ArgMax/ArgMin, ScatterND, ScatterElements,
GatherND, Pad, Sum and Mean of N inputs, and the trigonometric, hyperbolic and rounding unary ops.

The reductions are values of the reduce kernel's enum and the unary ops values of the unary kernel's
(ABI 1.3); ArgMax/ArgMin (arg_reduce), ScatterND (scatter_nd), ScatterElements (scatter_elements),
GatherND (gather_nd) and Pad (pad) have kernels of their own (ABI 1.3).  Their indices are data: the
kernels check every index (on the GPU backends as a data error).
"""

from __future__ import annotations

import numpy as np
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from . import host_axes
from .mask import FILL, _chain, _fill_bits
from .node import Node, emit, finish, norm_axis, replace
from .onnx import BINARY, REDUCE, UNARY, _reduce, _unary
from .registry import Kernel, OpDef, Param, register, register_kernel

ARG_REDUCE = register_kernel(Kernel("arg_reduce", "kernel_arg_reduce", ("axis", "select_last_index", "is_min")))
SCATTER_ND = register_kernel(Kernel("scatter_nd", "kernel_scatter_nd", ("reduction",), same_type=(0, 2),
                                    labels={1: "indices"}, arity=(3, 3)))
GATHER_ND = register_kernel(Kernel("gather_nd", "kernel_gather_nd", ("batch_dims",), labels={1: "indices"},
                                   arity=(2, 2)))
SCATTER_ELEMENTS = register_kernel(Kernel("scatter_elements", "kernel_scatter_elements", ("axis", "reduction"),
                                          same_type=(0, 2), labels={1: "indices"}, arity=(3, 3)))
PAD = register_kernel(Kernel("pad", "kernel_pad", ("mode",), params=(Param("pads", 2, symbolic=True),),
                             same_type=(0, 1), arity=(2, 2)))

# ---------------------------------------------------------------- unary ops on the unary kernel

for _op_type, _key in (("Sin", "SIN"), ("Cos", "COS"), ("Tan", "TAN"), ("Asin", "ASIN"), ("Acos", "ACOS"),
                      ("Atan", "ATAN"), ("Sinh", "SINH"), ("Cosh", "COSH"), ("Asinh", "ASINH"), ("Acosh", "ACOSH"),
                      ("Atanh", "ATANH"), ("Round", "ROUND"), ("Softsign", "SOFTSIGN")):
    register(OpDef(_op_type, _key.lower(), _unary, (UNARY,), enum_key=_key))

# ---------------------------------------------------------------- Sum and Mean of N inputs on the binary kernel


def _sum_mean(o: Node) -> None:
    ins = [o.inputs[k] for k in sorted(o.inputs)]
    if not ins:
        raise ModelError(f"{o.where}: {o.entry.op_type} needs at least one input")
    if len(ins) == 1:
        replace(o, "hipdnn.alias", ins, {}, [o.dims(0)])
        return
    acc, dims = _chain(o, "ADD", ins, [hir.dims_of(v) for v in ins])
    if o.kind == "mean":
        dtype = o.result_dtype()
        with o.op.context:
            t = ir.Type.parse(hir.tensor_type_str(dtype, []))
        n = emit(o, FILL, [], {"bits": _fill_bits(np.array([len(ins)]), dtype)}, [[]], [t]).results[0]
        acc = emit(o, BINARY, [acc, n], {"op": "DIV"}, [dims], [o.op.results[0].type]).results[0]
    finish(o, [acc])


register(OpDef("Sum", "sum", _sum_mean, (BINARY,)))
register(OpDef("Mean", "mean", _sum_mean, (BINARY, FILL)))

# ---------------------------------------------------------------- reductions on the reduce kernel


def _reduce_general(o: Node) -> None:
    # noop_with_empty_axes with no axes reduces nothing; ONNX still applies the element map
    # (ReduceL1 of x is |x|, ReduceSumSquare x * x, ReduceLogSum log(x)).
    axes = o.host(1) if o.input(1) is not None else o.attr_ints("axes")
    if o.input(1) is not None and axes is None:
        _reduce(o)  # refuses: the axes are not readable
        return
    if not axes and o.attr_int("noop_with_empty_axes", 0):
        key = o.entry.enum_key
        x, d = o.input(0), o.dims(0)
        if key in ("L1", "L2"):
            replace(o, UNARY, [x], {"op": "ABS"}, [d])
        elif key == "LOG_SUM":
            replace(o, UNARY, [x], {"op": "LOG"}, [d])
        elif key == "SUM_SQUARE":
            replace(o, BINARY, [x, x], {"op": "MUL"}, [d])
        else:
            replace(o, "hipdnn.alias", [x], {}, [d])
        return
    _reduce(o)


for _op_type, _key in (("ReduceMin", "MIN"), ("ReduceProd", "PROD"), ("ReduceL1", "L1"), ("ReduceL2", "L2"),
                      ("ReduceLogSum", "LOG_SUM"), ("ReduceLogSumExp", "LOG_SUM_EXP"),
                      ("ReduceSumSquare", "SUM_SQUARE")):
    register(OpDef(_op_type, "reduce_" + _key.lower(), _reduce_general, (REDUCE,), enum_key=_key))

# ---------------------------------------------------------------- ArgMax, ArgMin


def _arg_reduce(o: Node) -> None:
    d = o.dims(0)
    if not d:
        raise ModelError(f"{o.where}: the input is a scalar; {o.entry.op_type} needs rank >= 1")
    axis = norm_axis(o, o.attr_int("axis", 0), len(d))
    others = [x for i, x in enumerate(d) if i != axis]
    if d[axis] == 0 and all(isinstance(x, int) and x > 0 for x in others):
        raise ModelError(f"{o.where}: axis {axis} is empty; {o.entry.op_type} needs at least one element")
    keep = o.attr_int("keepdims", 1) != 0
    out = [1 if i == axis else x for i, x in enumerate(d)] if keep else others
    attrs = {"axis": axis, "select_last_index": int(o.attr_int("select_last_index", 0) != 0),
             "is_min": int(o.kind == "arg_min")}
    replace(o, ARG_REDUCE, [o.input(0)], attrs, [out])


register(OpDef("ArgMax", "arg_max", _arg_reduce, (ARG_REDUCE,)))
register(OpDef("ArgMin", "arg_min", _arg_reduce, (ARG_REDUCE,)))

# ---------------------------------------------------------------- ScatterND

_SCATTER_REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}


def _scatter_nd(o: Node) -> None:
    d, di, du = o.dims(0), o.dims(1), o.dims(2)
    reduction = hir.get_str(o.op, "onnx.reduction", "none")
    if reduction not in _SCATTER_REDUCTIONS:
        raise ModelError(f"{o.where}: reduction is '{reduction}'; it must be one of {', '.join(_SCATTER_REDUCTIONS)}")
    if not di:
        raise ModelError(f"{o.where}: indices are a scalar; ScatterND needs indices of rank >= 1")
    k = di[-1]
    if not isinstance(k, int):
        o.fail("the indices' last dim (the index tuple's length) must be static")
    if not 1 <= k <= len(d):
        raise ModelError(f"{o.where}: the indices' last dim is {k}; it must be in [1, data rank {len(d)}]")
    want = di[:-1] + d[k:]
    if len(du) != len(want):
        raise ModelError(f"{o.where}: updates have rank {len(du)}; ScatterND needs {len(want)} "
                         "(the indices' rank - 1 + the data's rank - the index tuple's length)")
    for i, (a, b) in enumerate(zip(du, want, strict=True)):
        if a != b:
            text = checks.Text(a, b)
            o.require("eq", text.values, f"updates dim {i} is {{0}} but ScatterND needs {{1}}")
    replace(o, SCATTER_ND, [o.input(0), o.input(1), o.input(2)], {"reduction": _SCATTER_REDUCTIONS[reduction]},
            [d])


register(OpDef("ScatterND", "scatter_nd", _scatter_nd, (SCATTER_ND,)))

# ---------------------------------------------------------------- ScatterElements, GatherND


def _scatter_elements(o: Node) -> None:
    d, di, du = o.dims(0), o.dims(1), o.dims(2)
    reduction = hir.get_str(o.op, "onnx.reduction", "none")
    if reduction not in _SCATTER_REDUCTIONS:
        raise ModelError(f"{o.where}: reduction is '{reduction}'; it must be one of {', '.join(_SCATTER_REDUCTIONS)}")
    if len(d) != len(di) or len(du) != len(di):
        raise ModelError(f"{o.where}: data, indices and updates have ranks {len(d)}, {len(di)} and {len(du)}; "
                         "they must be equal")
    axis = norm_axis(o, o.attr_int("axis", 0), len(d))
    for k, (a, b) in enumerate(zip(di, du, strict=True)):
        if a != b:
            text = checks.Text(b, a)
            o.require("eq", text.values, f"updates dim {k} is {{0}} but the indices' is {{1}}; they must be equal")
    for k, (a, b) in enumerate(zip(di, d, strict=True)):
        if k != axis and a != b:
            text = checks.Text(a, b)
            o.require("le", text.values, f"indices dim {k} is {{0}} but data's is {{1}}; it must not be larger")
    replace(o, SCATTER_ELEMENTS, [o.input(0), o.input(1), o.input(2)],
            {"axis": axis, "reduction": _SCATTER_REDUCTIONS[reduction]}, [d])


register(OpDef("ScatterElements", "scatter_elements", _scatter_elements, (SCATTER_ELEMENTS,)))


def _gather_nd(o: Node) -> None:
    d, di = o.dims(0), o.dims(1)
    b = o.attr_int("batch_dims", 0)
    if not di:
        raise ModelError(f"{o.where}: indices are a scalar; GatherND needs indices of rank >= 1")
    if not 0 <= b < min(len(d), len(di)):
        raise ModelError(f"{o.where}: batch_dims is {b}; it must be >= 0 and below the ranks of data ({len(d)}) "
                         f"and indices ({len(di)})")
    k = di[-1]
    if not isinstance(k, int):
        o.fail("the indices' last dim (the index tuple's length) must be static")
    if not 1 <= k <= len(d) - b:
        raise ModelError(f"{o.where}: the indices' last dim is {k}; it must be in [1, data rank - batch_dims = "
                         f"{len(d) - b}]")
    for i in range(b):
        if di[i] != d[i]:
            text = checks.Text(di[i], d[i])
            o.require("eq", text.values, f"indices batch dim {i} is {{0}} but data's is {{1}}; they must be equal")
    replace(o, GATHER_ND, [o.input(0), o.input(1)], {"batch_dims": b}, [di[:-1] + d[b + k:]])


register(OpDef("GatherND", "gather_nd", _gather_nd, (GATHER_ND,)))

# ---------------------------------------------------------------- Pad

_PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}


def _pads(o: Node, rank: int) -> list[sym.Expr]:
    """The pads for every axis (all begins, then all ends), from the input (opset 11) or the attribute."""
    if o.input(1) is not None:
        pads = o.host(1)
        if pads is None:
            o.fail("pads must be computable from input shapes, constants and small integer inputs")
        if len(o.dims(1)) != 1:
            raise ModelError(f"{o.where}: pads has rank {len(o.dims(1))}; it must be 1-D")
    else:
        pads = o.attr_ints("pads")
        if pads is None:
            raise ModelError(f"{o.where}: Pad has neither a pads input nor a pads attribute")
    if host_axes.fed(o, 3):  # axes read at run time: each axis' pads placed by host selects
        ax = host_axes.axes(o, 3, rank)
        if len(pads) != 2 * len(ax):
            raise ModelError(f"{o.where}: pads has {len(pads)} entries for {len(ax)} axes; it needs {2 * len(ax)}")
        n = len(ax)
        return [sym.add(0, *(sym.select_zero(sym.sub(a, i), pads[half * n + j], 0) for j, a in enumerate(ax)))
                for half in (0, 1) for i in range(rank)]
    axes = o.const_ints(3, "the axes") if o.input(3) is not None else None
    if axes is None:
        axes = list(range(rank))
    else:
        axes = [norm_axis(o, a, rank) for a in axes]
        if len(set(axes)) != len(axes):
            raise ModelError(f"{o.where}: axes {axes} repeat an axis")
    if len(pads) != 2 * len(axes):
        raise ModelError(f"{o.where}: pads has {len(pads)} entries for {len(axes)} axes; it needs {2 * len(axes)}")
    full: list[sym.Expr] = [0] * (2 * rank)
    for j, a in enumerate(axes):
        full[a], full[rank + a] = pads[j], pads[len(axes) + j]
    return full


def _pad_value(o: Node) -> ir.Value:
    """The constant value as a one-element device tensor of the data's dtype."""
    dtype = hir.element_dtype(o.input(0))
    if o.input(2) is not None:
        n = sym.product(o.dims(2))
        if len(o.dims(2)) > 1 or n != 1:
            raise ModelError(f"{o.where}: constant_value has shape {o.dims(2)}; it must be a scalar")
        return o.input(2)
    value = np.array([o.attr_float("value", 0.0)])  # opsets before 11: the value attribute
    with o.op.context:
        t = ir.Type.parse(hir.tensor_type_str(dtype, [1]))
    return emit(o, FILL, [], {"bits": _fill_bits(value, dtype)}, [[1]], [t]).results[0]


def _pad(o: Node) -> None:
    d = o.dims(0)
    mode = hir.get_str(o.op, "onnx.mode", "constant")
    if mode not in _PAD_MODES:
        raise ModelError(f"{o.where}: mode is '{mode}'; it must be one of {', '.join(_PAD_MODES)}")
    pads = _pads(o, len(d))
    out = [sym.add(x, sym.add(pads[i], pads[len(d) + i])) for i, x in enumerate(d)]
    if mode == "reflect":
        for i, x in enumerate(d):
            for p in (pads[i], pads[len(d) + i]):
                if isinstance(p, int) and p <= 0:
                    continue
                # a pad <= 0 reflects nothing (a fed pad may be): 0 <= x then holds
                text = checks.Text(sym.select_negative(sym.add(p, -1), 0, sym.add(p, 1)), x)
                o.require("le", text.values, f"reflect pad {{0}} - 1 on axis {i} must be below the axis size {{1}}")
    value = _pad_value(o)
    replace(o, PAD, [o.input(0), value], {"mode": _PAD_MODES[mode]}, [out], params={"pads": pads})


register(OpDef("Pad", "pad", _pad, (PAD, FILL)))
