"""Einsum, composed from the transpose, reduce (sum) and matmul kernels and aliases (reshapes).

Each operand first sums out the labels that no other operand and not the output has; then operands
are contracted pairwise, left to right: the labels both share and a later operand or the output
needs are batch dims, the ones they share and nothing later needs are contracted, the rest are kept
rows (the left operand's) and columns (the right one's).  One contraction is a transpose of each
side to [batch, rows, contracted] and [batch, contracted, columns], two reshapes to 3-D, a batched
MatMul and a reshape back; a final transpose puts the labels in the output's order.  An ellipsis
stands for the dims its operand has beyond its letters (numpy's broadcasting, right-aligned); the
implicit output (no "->") is the ellipsis' dims, then the letters that appear once, in alphabetical
order.  A label repeated within one term takes the diagonal first (its axes moved last, merged and
sliced with step n + 1: n must be static).  An explicit output without the ellipsis its inputs have
is refused (onnxruntime refuses it too); so are element types MatMul does not take when a
contraction needs it (check-dtypes names the kernel), and a broadcast (size 1 against n) of a dim
that is summed.
"""

from __future__ import annotations

import string

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .node import Node, broadcast, emit, finish
from .onnx import MATMUL, REDUCE, SLICE, TRANSPOSE
from .registry import OpDef, register

_LETTERS = set(string.ascii_letters)


class _Term:
    """An intermediate value with one label per dim."""

    def __init__(self, value: ir.Value, labels: list[str], dims: list[sym.Expr]):
        self.value, self.labels, self.dims = value, labels, dims


def _parse(o: Node, equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ModelError(f"{o.where}: equation '{equation}' has {len(terms)} input terms for {len(ranks)} inputs")
    ell_rank = 0
    parsed: list[list[str]] = []
    for t, rank in zip(terms, ranks, strict=True):
        letters = t.replace("...", "")
        if any(c not in _LETTERS for c in letters) or t.count("...") > 1:
            raise ModelError(f"{o.where}: equation term '{t}' must be letters with at most one '...'")
        if "..." in t:
            n_ell = rank - len(letters)
            if n_ell < 0:
                raise ModelError(f"{o.where}: term '{t}' has more letters than its input's rank {rank}")
            ell_rank = max(ell_rank, n_ell)
        elif len(letters) != rank:
            raise ModelError(f"{o.where}: term '{t}' has {len(letters)} letters but its input has rank {rank}")
        parsed.append([t, rank])
    # ellipsis dims get labels of their own, right-aligned across terms ("0", "1", ... never letters)
    ell = [str(k) for k in range(ell_rank)]
    labels = []
    for t, rank in parsed:
        head, dots, tail = t.partition("...")
        mid = ell[ell_rank - (rank - len(head) - len(tail)):] if dots else []
        labels.append(list(head) + mid + list(tail))
    if arrow:
        letters = rhs.replace("...", "")
        if any(c not in _LETTERS for c in letters) or rhs.count("...") > 1:
            raise ModelError(f"{o.where}: equation output '{rhs}' must be letters with at most one '...'")
        if len(set(letters)) != len(letters):
            raise ModelError(f"{o.where}: equation output '{rhs}' repeats an index")
        used = {c for ls in labels for c in ls}
        for c in letters:
            if c not in used:
                raise ModelError(f"{o.where}: output index '{c}' of equation '{equation}' is in no input term")
        head, dots, tail = rhs.partition("...")
        if not dots and ell_rank:  # numpy sums them; onnxruntime refuses the equation
            o.fail(f"equation '{equation}' leaves the ellipsis out of its output; summing its dims is not "
                   "supported (onnxruntime refuses it too)")
        out = list(head) + (ell if dots else []) + list(tail)
    else:
        counts: dict[str, int] = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c in _LETTERS)
    return labels, out


def _diagonals(o: Node, t: _Term, equation: str) -> _Term:
    """A label repeated within a term takes the diagonal: the two axes moved last, merged into one of
    n * n and sliced with step n + 1 (the slice kernel's steps are constants: n must be static)."""
    while len(set(t.labels)) != len(t.labels):
        c = next(c for c in t.labels if t.labels.count(c) > 1)
        p = t.labels.index(c)
        q = t.labels.index(c, p + 1)
        n, m = t.dims[p], t.dims[q]
        if not isinstance(n, int) or not isinstance(m, int):
            o.fail(f"equation '{equation}' takes a diagonal over index '{c}' of dynamic size; diagonals need "
                   "static sizes")
        if n != m:
            raise ModelError(f"{o.where}: index '{c}' has sizes {n} and {m} in one term; they must be equal")
        rest = [k for k in range(len(t.labels)) if k not in (p, q)]
        perm = rest + [p, q]
        dims = [t.dims[k] for k in perm]
        v = t.value
        if perm != list(range(len(perm))):
            v = emit(o, TRANSPOSE, [v], {"perm": perm}, [dims], [_type(o, v, dims)]).results[0]
        head = [t.dims[k] for k in rest]
        flat = _reshape(o, v, dims, head + [n * n])
        out = head + [n]
        v = emit(o, SLICE, [flat], {"steps": [1] * len(head) + [n + 1]}, [out], [_type(o, flat, out)],
                 params={"starts": [0] * len(out)}).results[0]
        t = _Term(v, [t.labels[k] for k in rest] + [c], out)
    return t


def _transpose(o: Node, t: _Term, order: list[str]) -> _Term:
    if order == t.labels:
        return t
    perm = [t.labels.index(c) for c in order]
    dims = [t.dims[p] for p in perm]
    v = emit(o, TRANSPOSE, [t.value], {"perm": perm}, [dims], [_type(o, t.value, dims)]).results[0]
    return _Term(v, order, dims)


def _reshape(o: Node, v: ir.Value, old: list[sym.Expr], dims: list[sym.Expr]) -> ir.Value:
    if old == dims:
        return v
    return emit(o, "hipdnn.alias", [v], {}, [dims], [_type(o, v, dims)]).results[0]


def _type(o: Node, like: ir.Value, dims: list[sym.Expr]) -> ir.Type:
    with o.op.context, o.op.location:
        return hir.tensor_type(hir.element_dtype(like), dims)


def _sum_out(o: Node, t: _Term, keep: set[str]) -> _Term:
    axes = [i for i, c in enumerate(t.labels) if c not in keep]
    if not axes:
        return t
    labels = [c for c in t.labels if c in keep]
    dims = [d for i, d in enumerate(t.dims) if i not in axes]
    v = emit(o, REDUCE, [t.value], {"op": "SUM", "axes": axes}, [dims], [_type(o, t.value, dims)]).results[0]
    return _Term(v, labels, dims)


def _contract(o: Node, a: _Term, b: _Term, keep: set[str]) -> _Term:
    a = _sum_out(o, a, keep | set(b.labels))
    b = _sum_out(o, b, keep | set(a.labels))
    batch = [c for c in a.labels if c in b.labels and c in keep]
    summed = [c for c in a.labels if c in b.labels and c not in keep]
    rows = [c for c in a.labels if c not in b.labels]
    cols = [c for c in b.labels if c not in a.labels]
    da = dict(zip(a.labels, a.dims, strict=True))
    db = dict(zip(b.labels, b.dims, strict=True))
    for c in summed:
        if da[c] != db[c]:
            text = checks.Text(da[c], db[c])
            o.require("eq", text.values, f"index '{c}' has size {{0}} in one operand and {{1}} in another; "
                                         "they must be equal")
    a = _transpose(o, a, batch + rows + summed)
    b = _transpose(o, b, batch + summed + cols)
    m, n, k = (sym.product([d[c] for c in ls]) for d, ls in ((da, rows), (db, cols), (da, summed)))
    a3 = _reshape(o, a.value, a.dims, [da[c] for c in batch] + [m, k])
    b3 = _reshape(o, b.value, b.dims, [db[c] for c in batch] + [k, n])
    bdims = [broadcast(o, [da[c]], [db[c]])[0] for c in batch]
    c3 = emit(o, MATMUL, [a3, b3], {}, [bdims + [m, n]], [_type(o, a3, bdims + [m, n])]).results[0]
    dims = bdims + [da[c] for c in rows] + [db[c] for c in cols]
    return _Term(_reshape(o, c3, bdims + [m, n], dims), batch + rows + cols, dims)


def _einsum(o: Node) -> None:
    equation = hir.get_str(o.op, "onnx.equation", "")
    ins = [o.inputs[k] for k in sorted(o.inputs)]
    if not ins:
        raise ModelError(f"{o.where}: Einsum needs at least one input")
    dims = [hir.dims_of(v) for v in ins]
    labels, out = _parse(o, equation, [len(d) for d in dims])
    terms = [_diagonals(o, _Term(v, ls, d), equation) for v, ls, d in zip(ins, labels, dims, strict=True)]
    # a letter's size agrees across terms (ellipsis dims broadcast in the MatMul)
    size: dict[str, sym.Expr] = {}
    for t in terms:
        for c, d in zip(t.labels, t.dims, strict=True):
            if c in _LETTERS and c in size and size[c] != d:
                text = checks.Text(size[c], d)
                o.require("eq", text.values, f"index '{c}' has size {{0}} in one operand and {{1}} in another; "
                                             "they must be equal")
            size.setdefault(c, d)
    # sum out what only one term has and the output does not need
    for i, t in enumerate(terms):
        others = {c for j, u in enumerate(terms) if j != i for c in u.labels}
        terms[i] = _sum_out(o, t, set(out) | others)
    acc = terms[0]
    for i in range(1, len(terms)):
        later = {c for u in terms[i + 1:] for c in u.labels}
        acc = _contract(o, acc, terms[i], set(out) | later)
    acc = _sum_out(o, acc, set(out))
    acc = _transpose(o, acc, out)
    if acc.value is ins[0]:
        acc = _Term(emit(o, "hipdnn.alias", [acc.value], {}, [acc.dims], [acc.value.type]).results[0], acc.labels,
                    acc.dims)
    finish(o, [acc.value])


register(OpDef("Einsum", "einsum", _einsum, (TRANSPOSE, REDUCE, MATMUL, SLICE)))
