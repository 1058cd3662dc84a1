"""Shape checks: relations between dims and host-read values that must hold before a program may size
or touch a buffer (a Reshape keeps the element count, a Squeezed axis has size 1, a dim is >= 0, ...).

Passes record one `Check` per relation (`require`).  A relation over constants only is decided at
compile time: a violation is a `ModelError` naming the node.  Any other relation is a `hipdnn.check`
op (attributes `where`, `kind`, `text`; operands: the values, index SSA values), emitted once per
distinct relation by the lowering as a compare that returns INVALID_ARGUMENT, and listed in the
artifact metadata (`checks`) so that the runtime can name the relation that failed.  Values are
evaluated with int64 arithmetic that treats wrapping as a failure (`symbolic.evaluate_int64`): a
feed cannot wrap a size into a small one.

Kinds: "eq" (values[0] == values[1]), "le" (values[0] <= values[1]), "nonneg" (values[0] >= 0) and
"fits" (values[0] evaluates without overflow).  `text` explains the relation with `{k}` standing for
values[k]; values beyond the kind's operands only appear in the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from . import ir as hir
from . import symbolic as sym
from .errors import ModelError

ARITY = {"eq": 2, "le": 2, "nonneg": 1, "fits": 1}


@dataclass(frozen=True)
class Check:
    where: str  # the node, as messages name it
    kind: str
    values: tuple[sym.Expr, ...]
    text: str

    def relation(self) -> tuple[str, tuple[str, ...]]:
        """What two checks share when they test the same thing (emitted once)."""
        return self.kind, tuple(sym.to_str(v) for v in self.values[:ARITY[self.kind]])

    def is_static(self) -> bool:
        return not any(sym.symbols(v) for v in self.values[:ARITY[self.kind]])

    def holds(self, env: dict[str, int]) -> bool:
        """Whether the relation holds; raises symbolic.Int64Overflow when an operand overflows."""
        v = [sym.evaluate_int64(x, env) for x in self.values[:ARITY[self.kind]]]
        if self.kind == "eq":
            return v[0] == v[1]
        if self.kind == "le":
            return v[0] <= v[1]
        if self.kind == "nonneg":
            return v[0] >= 0
        return True

    def message(self, env: dict[str, int]) -> str:
        shown = []
        for x in self.values:
            try:
                shown.append(str(sym.evaluate_int64(x, env)))
            except (sym.Int64Overflow, KeyError):
                shown.append(sym.to_str(x))
        return f"{self.where}: {self.text.format(*shown)}"

    def to_json(self) -> dict:
        # JSON readers may hold numbers as doubles: ints beyond 2^53 travel as text
        return {"where": self.where, "kind": self.kind, "text": self.text,
                "values": [v if isinstance(v, int) and abs(v) < 2**53 else sym.to_str(v) for v in self.values]}


class Text:
    """Builds a check's text and values: `ref(e)` gives the placeholder that shows e."""

    def __init__(self, *operands: sym.Expr):
        self.values: list[sym.Expr] = list(operands)

    def ref(self, e: sym.Expr) -> str:
        if isinstance(e, int):
            return str(e)
        self.values.append(e)
        return "{" + str(len(self.values) - 1) + "}"

    def dims(self, exprs: list[sym.Expr]) -> str:
        return "[" + ", ".join(self.ref(e) for e in exprs) + "]"


def require(before: ir.Operation, where: str, kind: str, values: list[sym.Expr], text: str) -> None:
    """Record a relation (a hipdnn.check op before `before`), or decide it now when its operands are
    constants (ModelError if violated)."""
    check = Check(where, kind, tuple(values), text)
    if check.is_static():
        try:
            ok = check.holds({})
        except sym.Int64Overflow:
            ok = False
        if not ok:
            raise ModelError(check.message({}))
        return
    hir.create(hir.CHECK, hir.index_operands(list(values), before), [],
               {"where": where, "kind": kind, "text": text}, before=before)


def read(func: ir.Operation) -> list[Check]:
    """The recorded checks, in recording order, one per distinct relation."""
    return [c for c, _ in read_with_operands(func)]


def read_with_operands(func: ir.Operation) -> list[tuple[Check, list[ir.Value]]]:
    """The recorded checks, in recording order, one per distinct relation, each with the index values its
    hipdnn.check op holds (the lowering computes those; the Check's expressions are the metadata's)."""
    out: list[tuple[Check, list[ir.Value]]] = []
    seen: set = set()
    memo = hir.shape_memo()
    for op in func.regions[0].blocks[0].operations:
        if op.operation.name != hir.CHECK:
            continue
        op = op.operation
        operands = list(op.operands)
        c = Check(hir.get_str(op, "where"), hir.get_str(op, "kind"),
                  tuple(hir.dim_expr(v, memo) for v in operands), hir.get_str(op, "text"))
        if c.relation() not in seen:
            seen.add(c.relation())
            out.append((c, operands))
    return out
