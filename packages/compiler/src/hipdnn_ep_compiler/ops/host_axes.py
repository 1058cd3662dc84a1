"""Axes fed as small integer graph inputs, read on the host at run time (ONNX's node tests feed Reduce,
Squeeze, Unsqueeze and CumSum axes this way).

Such an input is a small static int32/int64 program input (ir._input_values): its element k is the
symbol "v<input>_k", copied to the host scratch before anything runs.  Its static shape gives the number
of axes, so the result's rank is known at compile time (keepdims, Unsqueeze, Squeeze with axes); only
which dim each axis names is a run-time value.  The design, and why:

- Each axis is normalized as a host expression (a < 0 ? a + rank : a) and the ONNX validity rules are
  `require`d (checks.py) so that the program refuses a bad feed before it sizes anything: every axis in
  [-rank, rank - 1], no axis named twice (Squeeze: each named dim of size 1).  A clear INVALID_ARGUMENT
  names the node and the values; nothing runs on a bad axis.
- A result dim is a sum of selects over the input dims (symbolic.select_zero): "dim i is reduced" is
  member(i) = sum_k (axis_k == i), 0 or 1 once duplicates are refused, and the j-th kept dim of a
  keepdims=0 Reduce or a Squeeze is sum_i [member(i) == 0 and i - (axes before i) == j] * d_i.  These are
  ordinary shape expressions: named when large, computed once on the host, checked like any other.
- Kernels get the axes at run time where their ABI already takes them as a parameter array (the reduce
  kernel's axes input, read on the host by its validation and in any order): a kernel-level op whose
  `Param` is symbolic (REDUCE_AXES below) writes the normalized axes to the host scratch, as Slice starts
  are.  No ABI change: the reduce kernel already takes any unique in-range axes in any order.
- A kernel whose axis is a compile-time int attribute (CumSum) runs between two transposes whose
  permutation is a run-time parameter array (TRANSPOSE_PERM: the transpose kernel's perm input, also
  read on the host), moving the fed axis last and back; again no ABI change.

Also fed this way, with the same checks: Split's sizes (each output a slice at a run-time start), Slice's
axes and steps (ops/onnx.py: start and count computed for both signs of a fed step, selected by its sign)
and Pad's axes (ops/general.py).

Not fed this way:
- an axes input whose length is itself symbolic (every input dim made symbolic), unless the op knows the
  count (`values`: a keepdims=0 Reduce, Squeeze or Unsqueeze from its declared result rank, Split from
  its outputs; the program then requires that length, ir.counted_input_values), or a keepdims=1 Reduce
  (`counted_reduction`: any count keeps the rank; up to rank(x) axes are read and the kernel gets an axes
  array of run-time length, Param.counted); with noop_with_empty_axes it stays refused;
- Resize's scales and roi: they are floats, and the host algebra (symbolic.py, the host program the
  lowering emits, the runtime's check evaluator in shape_checks.cpp, the metadata's expressions) is int64
  only.  floor(d * scale) with onnxruntime's float32 rounding would need a float op in all of them and a
  run-time geometry parameter; they stay constants.
"""

from __future__ import annotations

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .node import Node
from .registry import Kernel, Param, register_kernel

# The reduce and transpose kernels with their axes / perm written at run time (their ABI already takes
# them as an INT64 parameter input read on the host).
REDUCE_AXES = register_kernel(Kernel("reduce_axes", "kernel_reduce", ("op",), op_enum="reduce_op",
                                     params=(Param("axes", 1, symbolic=True),), shown="reduce"))
# The reduce kernel over an axes input of run-time length: its axes array is counted (Param.counted).
REDUCE_AXES_COUNTED = register_kernel(Kernel("reduce_axes_counted", "kernel_reduce", ("op",), op_enum="reduce_op",
                                             params=(Param("axes", 1, symbolic=True, counted=True),),
                                             shown="reduce"))
TRANSPOSE_PERM = register_kernel(Kernel("transpose_perm", "kernel_transpose",
                                        params=(Param("perm", 1, symbolic=True),), shown="transpose"))


def fed(o: Node, i: int) -> bool:
    """Whether input i is present and not a constant (`axes` reads it at run time, or refuses it)."""
    if o.input(i) is None:
        return False
    values = o.host(i)
    return values is None or any(not isinstance(v, int) for v in values)


def result_rank(o: Node, k: int = 0) -> int | None:
    """The rank of result k as imported (declared or inferred), None when unknown."""
    t = o.op.results[k].type
    return t.rank if isinstance(t, ir.RankedTensorType) else None


def values(o: Node, i: int, what: str, count: int | None = None) -> list[sym.Expr]:
    """Input i's values, read on the host.  An input of symbolic length is read when the op knows how
    many values it needs (`count`: from the result's rank, or the number of outputs); the program then
    requires the fed length to be that count."""
    vals = o.host(i)
    if vals is None and count is not None and o.input(i) is not None:
        vals = hir.counted_input_values(o.input(i), count)
        if vals is not None:
            text = checks.Text(o.dims(i)[0], count)
            o.require("eq", text.values, f"the {what} input has {{0}} entries; the result needs {count}")
    if vals is None:
        o.fail(f"the {what} must be computable from constants, input shapes and small integer inputs "
               f"(a 1-D int64 input of at most 16 elements, of static length or of a length the result gives)")
    return vals


def axes(o: Node, i: int, rank: int, what: str = "axes", count: int | None = None) -> list[sym.Expr]:
    """Input i's values as axes of a rank-`rank` tensor, normalized (>= 0), with the ONNX rules checked
    (at compile time for constants, else by the program): each in [-rank, rank - 1], none twice."""
    vals = values(o, i, what, count)
    if len(o.dims(i)) > 1:
        raise ModelError(f"{o.where}: the {what} input has rank {len(o.dims(i))}; it must be 1-D")
    out: list[sym.Expr] = []
    for k, a in enumerate(vals):
        if isinstance(a, int):
            if not -rank <= a < rank:
                raise ModelError(f"{o.where}: axis {a} is out of range for rank {rank}")
        else:
            for lo, hi in ((-rank, a), (a, rank - 1)):
                text = checks.Text(lo, hi)
                shown = text.ref(a)
                o.require("le", text.values, f"{what}[{k}] is {shown}; it must be in [{-rank}, {rank - 1}] "
                                             f"(the input has rank {rank})")
        out.append(sym.select_negative(a, sym.add(a, rank), a))
    for j in range(len(out)):
        for k in range(j + 1, len(out)):
            same = sym.select_zero(sym.sub(out[j], out[k]), 1, 0)
            if isinstance(same, int):
                if same:
                    raise ModelError(f"{o.where}: the {what} name axis {out[j]} twice")
                continue
            text = checks.Text(same, 0)
            shown = text.ref(out[j])
            o.require("eq", text.values, f"{what}[{j}] and {what}[{k}] both name axis {shown}; "
                                         "an axis may be named once")
    return out


def counted_reduction(o: Node, d: list[sym.Expr]) -> tuple[list[sym.Expr], list[sym.Expr]] | None:
    """A keepdims=1 reduction over an axes input of symbolic length L (any count keeps the rank): its first
    rank(d) elements are read (unique in-range axes are at most that many; L <= rank is checked, the
    program zero-fills what L does not cover), entry k counts where k < L, and L = 0 reduces every axis.
    Returns the result dims and the counted parameter array [L, axes...], or None when the input is not
    such an input."""
    r = len(d)
    vals = hir.counted_input_values(o.input(1), r)
    if vals is None:
        return None
    if o.attr_int("noop_with_empty_axes", 0):
        o.fail("noop_with_empty_axes with reduction axes of symbolic length is not supported (whether the "
               "node reduces is known only at run time)")
    n = o.dims(1)[0]
    text = checks.Text(n, r)
    o.require("le", text.values, f"the reduction axes input has {{0}} entries; an input of rank {r} has at "
                                 f"most {r} distinct axes")
    ax = []
    for k, a in enumerate(vals):
        for lo, hi in ((-r, a), (a, r - 1)):  # entries past n are 0 (zero-filled): in range
            text = checks.Text(lo, hi)
            shown = text.ref(a)
            o.require("le", text.values, f"reduction axes[{k}] is {shown}; it must be in [{-r}, {r - 1}] "
                                         f"(the input has rank {r})")
        ax.append(sym.select_negative(a, sym.add(a, r), a))
    live = [sym.select_negative(sym.sub(k, n), 1, 0) for k in range(r)]  # k < n
    for j in range(r):
        for k in range(j + 1, r):
            same = sym.select_zero(live[k], 0, sym.select_zero(sym.sub(ax[j], ax[k]), 1, 0))
            text = checks.Text(same, 0)
            shown = text.ref(ax[j])
            o.require("eq", text.values, f"reduction axes[{j}] and reduction axes[{k}] both name axis {shown}; "
                                         "an axis may be named once")
    dims = []
    for i, x in enumerate(d):
        named = sym.add(0, *(sym.select_zero(lv, 0, sym.select_zero(sym.sub(a, i), 1, 0))
                             for lv, a in zip(live, ax, strict=True)))
        dims.append(sym.select_zero(sym.select_zero(n, 1, named), x, 1))  # no axes: every axis
    return dims, [n] + ax


def member(ax: list[sym.Expr], i: int) -> sym.Expr:
    """1 when dim i is one of the (unique, normalized) axes, else 0."""
    return sym.add(0, *(sym.select_zero(sym.sub(a, i), 1, 0) for a in ax))


def pick(d: list[sym.Expr], index: sym.Expr) -> sym.Expr:
    """d[index] for an index known at run time (in range: checked by `axes`)."""
    return sym.add(0, *(sym.select_zero(sym.sub(index, i), x, 0) for i, x in enumerate(d)))


def kept(d: list[sym.Expr], ax: list[sym.Expr]) -> list[sym.Expr]:
    """The dims of `d` that the axes do not name, in order (len(d) - len(ax) of them)."""
    marks = [member(ax, i) for i in range(len(d))]
    out = []
    for j in range(len(d) - len(ax)):
        terms = []
        before = 0  # how many axes lie before dim i
        for i, x in enumerate(d):
            terms.append(sym.select_zero(marks[i], sym.select_zero(sym.sub(sym.sub(i, before), j), x, 0), 0))
            before = sym.add(before, marks[i])
        out.append(sym.add(0, *terms))
    return out


def inserted(d: list[sym.Expr], ax: list[sym.Expr]) -> list[sym.Expr]:
    """Unsqueeze: the dims of a rank len(d) + len(ax) result with 1 at the axes and d's dims elsewhere."""
    out = []
    before = 0
    for i in range(len(d) + len(ax)):
        m = member(ax, i)
        src = pick(d, sym.sub(i, before))
        out.append(sym.select_zero(m, src, 1))
        before = sym.add(before, m)
    return out


def reduced(d: list[sym.Expr], ax: list[sym.Expr], keepdims: bool) -> list[sym.Expr]:
    """A reduction's result dims over run-time axes."""
    if keepdims:
        return [sym.select_zero(member(ax, i), x, 1) for i, x in enumerate(d)]
    return kept(d, ax)


def require_squeezable(o: Node, d: list[sym.Expr], ax: list[sym.Expr]) -> None:
    """Squeeze removes only dims of size 1."""
    for k, a in enumerate(ax):
        size = pick(d, a)
        if size == 1:
            continue
        text = checks.Text(size, 1)
        shown = text.ref(a)
        o.require("eq", text.values, f"axes[{k}] names axis {shown} of input shape {text.dims(d)}, of size {{0}}; "
                                     "Squeeze removes only axes of size 1")


def last_perm(rank: int, axis: sym.Expr) -> tuple[list[sym.Expr], list[sym.Expr]]:
    """The permutation that moves `axis` last (the others in order), and its inverse."""
    fwd = []
    for j in range(rank - 1):
        # the j-th dim other than axis: j below the axis, j + 1 from it on
        fwd.append(sym.add(j, sym.select_negative(sym.sub(j, axis), 0, 1)))
    fwd.append(axis)
    inv = []
    for i in range(rank):
        # where dim i went: rank - 1 for the axis, i below it, i - 1 above it
        below = sym.select_negative(sym.sub(i, axis), i, sym.add(i, -1))
        inv.append(sym.select_zero(sym.sub(i, axis), rank - 1, below))
    return fwd, inv
