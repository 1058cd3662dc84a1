"""ONNX Slice: starts, ends, axes and steps as ONNX clamps them, on the slice kernel (ops/onnx.py).

Starts and ends may be host values (constants, shape arithmetic, small integer graph inputs); axes and
steps fed as small int64 graph inputs are read at run time (ops/host_axes.py), each entry's start and count
computed for both signs of a fed step and picked by the sign.
"""

from __future__ import annotations

from .. import checks
from .. import symbolic as sym
from ..errors import ModelError
from . import host_axes
from .node import Node, host_tensor, norm_axis, replace
from .onnx import SLICE, SLICE_STEPS
from .registry import OpDef, register


def _clamp_index(i: sym.Expr, dim: sym.Expr, lo: sym.Expr, hi: sym.Expr) -> sym.Expr:
    """A Slice start or end as ONNX reads it: i + dim when negative, then clamped to [lo, hi].  Any int64
    is allowed (PyTorch exports x[:, 1:] with end INT64_MAX): i is first clamped to [-dim - 1, dim], which
    changes no result, so that i + dim cannot overflow."""
    if not isinstance(i, int) and not sym.nonnegative(i):  # a fed value (constants fold exactly)
        i = sym.minimum(sym.maximum(i, sym.sub(-1, dim)), dim)
    return sym.minimum(sym.maximum(sym.select_negative(i, sym.add(i, dim), i), lo), hi)


def _to_the_end(end: sym.Expr, last: sym.Expr, clamped: sym.Expr) -> sym.Expr:
    """An end of INT64_MAX or INT32_MAX means "to the end in the step's direction" (numpy's None), as
    onnxruntime reads it, also for a negative step; any other end is `clamped`."""
    if not isinstance(end, int) and sym.nonnegative(end):
        return clamped  # an end computed from dims: a dim is no such marker
    above = sym.maximum(end, 0)  # compared with the two values without an overflow
    return sym.select_zero(sym.add(above, -sym.INT64_MAX), last,
                           sym.select_zero(sym.add(above, -(2**31 - 1)), last, clamped))


def _slice_span(s: sym.Expr, e: sym.Expr, positive: bool, dim: sym.Expr) -> tuple[sym.Expr, sym.Expr]:
    """One Slice entry's first index and span on an axis of size dim, for a step of the given sign."""
    if positive:
        s = _clamp_index(s, dim, 0, dim)
        e = _to_the_end(e, dim, _clamp_index(e, dim, 0, dim))
        return s, sym.maximum(sym.sub(e, s), 0)
    s = _clamp_index(s, dim, 0, sym.add(dim, -1))  # -1 only for dim 0, where nothing is read
    e = _to_the_end(e, -1, _clamp_index(e, dim, -1, sym.add(dim, -1)))
    return s, sym.maximum(sym.sub(s, e), 0)


def _slice_count(span: sym.Expr, st: sym.Expr) -> sym.Expr:
    """ceil(span / |step|) as 1 + (span - 1) / |step| (truncating): no intermediate beyond the span, so a
    step of INT64_MAX or INT64_MIN (|INT64_MIN| is no int64) counts 1 element, as in ONNX."""
    q = sym.div(sym.add(span, -1), st)
    return sym.select_zero(span, 0, sym.add(1, sym.select_negative(st, sym.mul(-1, q), q)))


def _fed_slice_params(o: Node, d: list[sym.Expr], starts: list[sym.Expr],
                      ends: list[sym.Expr]) -> tuple[list[sym.Expr], list[sym.Expr], list[sym.Expr]]:
    """Slice with axes or steps fed as graph inputs (read on the host at run time, ops/host_axes.py): each
    entry's start and count are computed for both signs of its step and selected by the fed sign, then
    placed on the axis it names by host selects; step 0 and bad axes are refused by the program."""
    r = len(d)
    ax = host_axes.axes(o, 3, r) if o.input(3) is not None else list(range(len(starts)))
    steps = o.host(4) if o.input(4) is not None else [1] * len(starts)
    if steps is None:
        o.fail("steps must be computable from constants, input shapes and small integer inputs "
               "(a static 1-D int64 input of at most 16 elements)")
    if not len(starts) == len(ends) == len(ax) == len(steps):
        raise ModelError(f"{o.where}: starts, ends, axes and steps have {len(starts)}, {len(ends)}, {len(ax)} and "
                         f"{len(steps)} entries; they must have as many")
    firsts, counts = [], []
    for k, (s, e, st, a) in enumerate(zip(starts, ends, steps, ax, strict=True)):
        dim = host_axes.pick(d, a)
        if isinstance(st, int):
            if st == 0:
                raise ModelError(f"{o.where}: slice step 0")
            first, span = _slice_span(s, e, st > 0, dim)
        else:
            text = checks.Text(sym.select_zero(st, 1, 0), 0)
            shown = text.ref(st)
            o.require("eq", text.values, f"steps[{k}] is {shown}; a slice step must not be 0")
            (s_up, span_up), (s_dn, span_dn) = _slice_span(s, e, True, dim), _slice_span(s, e, False, dim)
            first, span = sym.select_negative(st, s_dn, s_up), sym.select_negative(st, span_dn, span_up)
        count = _slice_count(span, st)
        firsts.append(first)
        counts.append(count)
    n_starts, n_steps, n_counts = [], [], []
    for i in range(r):
        on = [sym.sub(a, i) for a in ax]  # zero for the entry that names axis i

        def placed(values: list[sym.Expr], on=on) -> sym.Expr:  # the value of the entry naming axis i, or 0
            return sym.add(0, *(sym.select_zero(z, v, 0) for z, v in zip(on, values, strict=True)))

        m = host_axes.member(ax, i)
        n_starts.append(placed(firsts))
        n_steps.append(sym.select_zero(m, 1, placed(steps)))
        n_counts.append(sym.select_zero(m, d[i], placed(counts)))
    return n_starts, n_steps, n_counts


def _slice_params(o: Node, d: list[sym.Expr]) -> tuple[list[sym.Expr], list[int], list[sym.Expr]]:
    starts, ends = o.host(1), o.host(2)
    if starts is None or ends is None:
        o.fail("starts and ends must be computable from input shapes and constants")
    if host_axes.fed(o, 3) or host_axes.fed(o, 4):
        return _fed_slice_params(o, d, starts, ends)
    axes = o.const_ints(3, "axes")
    steps = o.const_ints(4, "steps")
    axes = list(range(len(starts))) if axes is None else [norm_axis(o, a, len(d)) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    n_starts, n_steps, counts = [0] * len(d), [1] * len(d), list(d)
    for ax, s, e, st in zip(axes, starts, ends, steps, strict=False):
        if st == 0:
            raise ModelError(f"{o.where}: slice step 0")
        n_starts[ax], span = _slice_span(s, e, st > 0, d[ax])
        n_steps[ax], counts[ax] = st, _slice_count(span, st)
    return n_starts, n_steps, counts


def _slice(o: Node) -> None:
    d = o.dims(0)
    starts, steps, counts = _slice_params(o, d)
    vals = o.host(0)
    if vals is not None and len(d) == 1 and all(isinstance(x, int) for x in (starts[0], counts[0], steps[0])):
        picked = [vals[starts[0] + i * steps[0]] for i in range(counts[0])]
        host_tensor(o, picked, [len(picked)])
        return
    if not all(isinstance(st, int) for st in steps):  # steps fed as a graph input
        replace(o, SLICE_STEPS, [o.input(0)], {}, [counts], params={"starts": starts, "steps": steps})
        return
    replace(o, SLICE, [o.input(0)], {"steps": steps}, [counts], params={"starts": starts})


register(OpDef("Slice", "slice", _slice, (SLICE, SLICE_STEPS)))
