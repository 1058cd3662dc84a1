"""TopK and OneHot.

TopK has a kernel of its own (top_k, ABI 1.3) with two results, the values and their INT64 indices;
k sets the result shape, so it must be computable on the host (a constant, a shape value or a small
integer graph input read at run time), and 0 <= k <= the axis' size is checked (at compile time when
static, else by the program before anything runs).  The kernel writes the k best in order whatever
`sorted` says (ONNX leaves the order unspecified without it), equal values in index order as ONNX
Runtime does.

OneHot is composed from existing kernels: the indices (cast to int64) are compared with two ranges,
[0, depth) and [-depth, 0) (negative indices count from the end), and Where picks values[1] where one
matches, values[0] elsewhere (an index out of range matches nothing: a row of off values, as the spec
says).  depth sets the result shape: it must be computable on the host, and >= 1.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .mask import RANGE
from .node import Node, emit, finish
from .onnx import BINARY, CAST, SLICE, WHERE
from .registry import Kernel, OpDef, register, register_kernel

TOP_K = register_kernel(Kernel("top_k", "kernel_top_k", ("axis", "largest", "sorted"), results=(2, 2)))

_INT64, _BOOL = 7, 9


def _host_scalar(o: Node, i: int, what: str) -> sym.Expr:
    """Input i as one host-computable integer (a scalar or a 1-element tensor)."""
    vals = o.host(i)
    if vals is None:
        o.fail(f"{what} must be computable on the host: a constant, a shape value or a small int32/int64 "
               "graph input")
    if len(o.dims(i)) > 1 or len(vals) != 1:
        raise ModelError(f"{o.where}: {what} has shape {o.dims(i)}; it must be a scalar or a 1-element tensor")
    return vals[0]


def _type(o: Node, dtype: int, dims: list[sym.Expr]) -> ir.Type:
    with o.op.context, o.op.location:
        return hir.tensor_type(dtype, dims)


def _roles(o: Node) -> list[int]:
    return hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))


# ---------------------------------------------------------------- TopK


def _top_k(o: Node) -> None:
    d = o.dims(0)
    if not d:
        raise ModelError(f"{o.where}: the input is a scalar; TopK needs rank >= 1")
    axis = o.attr_int("axis", -1)
    if not -len(d) <= axis < len(d):
        raise ModelError(f"{o.where}: axis {axis} is out of range for rank {len(d)}")
    axis = axis + len(d) if axis < 0 else axis
    k = _host_scalar(o, 1, "k")
    if not sym.nonnegative(k):
        text = checks.Text(k)
        o.require("nonneg", text.values, "k is {0}; it must be >= 0")
    text = checks.Text(k, d[axis])
    o.require("le", text.values, f"k is {{0}} but axis {axis} of the input has only {{1}} elements")
    out = list(d)
    out[axis] = k
    x_type = o.op.operands[0].type
    types = [_type(o, hir.type_dtype(x_type), out), _type(o, _INT64, out)]
    attrs = {"axis": axis, "largest": int(o.attr_int("largest", 1) != 0), "sorted": int(o.attr_int("sorted", 1) != 0)}
    new = emit(o, TOP_K, [o.input(0)], attrs, [out, out], types)
    finish(o, [new.results[r] for r in _roles(o)])


register(OpDef("TopK", "top_k", _top_k, (TOP_K,)))

# ---------------------------------------------------------------- OneHot


def _one_hot(o: Node) -> None:
    d = o.dims(0)
    rank = len(d) + 1
    axis = o.attr_int("axis", -1)
    if not -rank <= axis < rank:
        raise ModelError(f"{o.where}: axis {axis} is out of range for an output of rank {rank}")
    axis = axis + rank if axis < 0 else axis
    depth = _host_scalar(o, 1, "depth")
    text = checks.Text(1, depth)
    o.require("le", text.values, "depth is {1}; it must be >= 1")
    vd = o.dims(2)
    if len(vd) != 1 or vd[0] != 2:
        if len(vd) == 1 and not isinstance(vd[0], int):
            text = checks.Text(vd[0], 2)
            o.require("eq", text.values, "values has {0} elements; it must have 2 (off, on)")
        else:
            raise ModelError(f"{o.where}: values has shape {vd}; it must be [2] (off, on)")
    out = d[:axis] + [depth] + d[axis:]
    dtype = o.result_dtype()
    idx = o.input(0)
    if hir.element_dtype(idx) != _INT64:  # float indices truncate, as ONNX Runtime casts them
        idx = emit(o, CAST, [idx], {"to": _INT64}, [d], [_type(o, _INT64, d)]).results[0]
    # indices [d0.., 1 (axis), ..dn]; ranges [depth, 1, ...] with the ones after the axis
    idx = emit(o, "hipdnn.alias", [idx], {}, [d[:axis] + [1] + d[axis:]],
               [_type(o, _INT64, d[:axis] + [1] + d[axis:])]).results[0]
    tail = [1] * (len(d) - axis)
    hits = []
    for start in (0, sym.sub(0, depth)):
        r = emit(o, RANGE, [], {}, [[depth]], [_type(o, _INT64, [depth])],
                 params={"start_delta": [start, 1]}).results[0]
        r = emit(o, "hipdnn.alias", [r], {}, [[depth] + tail], [_type(o, _INT64, [depth] + tail)]).results[0]
        hits.append(emit(o, BINARY, [idx, r], {"op": "EQUAL"}, [out], [_type(o, _BOOL, out)]).results[0])
    hit = emit(o, BINARY, hits, {"op": "OR"}, [out], [_type(o, _BOOL, out)]).results[0]
    off, on = (emit(o, SLICE, [o.input(2)], {"steps": [1]}, [[1]], [_type(o, dtype, [1])],
                    params={"starts": [s]}).results[0] for s in (0, 1))
    finish(o, [emit(o, WHERE, [hit, on, off], {}, [out], [_type(o, dtype, out)]).results[0]])


register(OpDef("OneHot", "one_hot", _one_hot, (CAST, RANGE, BINARY, SLICE, WHERE)))
