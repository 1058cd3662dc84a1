"""What the pattern-fusion passes (fuse-qdq, fuse-gelu, fuse-silu-mul, fuse-gated-matmul-nbits, fuse-attention,
fuse-linear-bias, fuse-skip-layer-norm) share: reading the import-level graph they match, and running their
rewrite patterns through MLIR's greedy driver over the ops that exist when it starts, with no folding and no
region simplification (they rewrite import-level ONNX ops and leave everything else as it is)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch_mlir import ir, rewrite

from .. import ir as hir

# The ops an imported constant comes from: an initializer, or a Constant node / small host value.
CONSTANT_OPS = ("hipdnn.weight", "hipdnn.constant")


def one_use(value: ir.Value) -> bool:
    return len(list(value.uses)) == 1


def given_inputs(op: ir.Operation) -> list[ir.Value] | None:
    """The operands of an op whose ONNX inputs are all given, in ONNX order; None when one is left out."""
    roles = hir.get_ints(op, "operand_roles", list(range(len(op.operands))))
    return list(op.operands) if roles == list(range(len(op.operands))) else None


def ranked(value: ir.Value) -> ir.RankedTensorType | None:
    """The value's ranked tensor type, or None (unranked)."""
    return ir.RankedTensorType(value.type) if isinstance(value.type, ir.RankedTensorType) else None


def same_shape(a: ir.Value, b: ir.Value) -> bool:
    """Whether a and b have the same rank and dims (a dynamic dim of one matching either of the other)."""
    if not isinstance(a.type, ir.RankedTensorType) or not isinstance(b.type, ir.RankedTensorType):
        return False
    ta, tb = ir.RankedTensorType(a.type), ir.RankedTensorType(b.type)
    return ta.rank == tb.rank and all(
        da == db or ir.ShapedType.is_dynamic_size(da) or ir.ShapedType.is_dynamic_size(db)
        for da, db in zip(ta.shape, tb.shape, strict=True))


def erase_chain(rewriter, ops: list[ir.Operation]) -> None:
    """Erases a rewritten chain's ops, each read only by the chain, once nothing reads them (users before
    producers); an op something outside the chain still reads stays."""
    left = list(ops)
    while left:
        dead = [op for op in left if all(len(list(r.uses)) == 0 for r in op.results)]
        if not dead:
            break
        for op in dead:
            rewriter.erase_op(op)
        left = [op for op in left if not any(op == d for d in dead)]


def replace_chain(rewriter, root: ir.Operation, op_name: str, operands: list[ir.Value], chain: list[ir.Operation],
                  attrs: dict | None = None) -> None:
    """Replaces `root` by a new import-level op `op_name` of the given operands (its ONNX inputs in order, named
    after root's node, `attrs` added) and erases the rest of the matched chain."""
    with root.context, root.location:
        attributes = {"operand_roles": hir.to_attr(list(range(len(operands)))),
                      "onnx.node": ir.StringAttr.get(hir.get_str(root, "onnx.node", root.name)), **(attrs or {})}
        new = ir.Operation.create(op_name, results=[root.results[0].type], operands=operands, attributes=attributes,
                                  ip=ir.InsertionPoint(root))
    rewriter.replace_op(root, [new.results[0]])
    erase_chain(rewriter, chain)


def pattern(match: Callable[[ir.Operation], Any], rewrite: Callable[[Any, ir.Operation, Any], None]) -> Callable:
    """A pattern function for `apply`: `match(root)` gives what it found at the root op, or None (nothing to do);
    `rewrite(rewriter, root, found)` rewrites it. The function returns False once it rewrote (the bindings'
    convention: the pattern succeeded), True otherwise."""

    def at(root, rewriter) -> bool:
        op = root.operation
        found = match(op)
        if found is None:
            return True
        rewrite(rewriter, op, found)
        return False

    return at


def apply(module: ir.Module, patterns: list[tuple[str, Callable]], top_down: bool) -> ir.Module:
    """Runs each (root op name, pattern function) over `module` until nothing changes."""
    config = rewrite.GreedyRewriteConfig()
    config.use_top_down_traversal = top_down
    config.strictness = rewrite.GreedyRewriteStrictness.EXISTING_OPS
    config.enable_folding = False
    config.region_simplification_level = rewrite.GreedySimplifyRegionLevel.DISABLED
    pattern_set = rewrite.RewritePatternSet(module.context)
    for root, fn in patterns:
        pattern_set.add(root, fn)
    rewrite.apply_patterns_and_fold_greedily(module, pattern_set.freeze(), config)
    return module
