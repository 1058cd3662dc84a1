"""What the pattern-fusion passes (fuse-qdq, fuse-gelu, fuse-attention) share: reading the import-level graph
they match, and running their rewrite patterns through MLIR's greedy driver over the ops that exist when it
starts, with no folding and no region simplification (they rewrite import-level ONNX ops and leave everything
else as it is)."""

from __future__ import annotations

from collections.abc import Callable

from torch_mlir import ir, rewrite

# The ops an imported constant comes from: an initializer, or a Constant node / small host value.
CONSTANT_OPS = ("hipdnn.weight", "hipdnn.constant")


def one_use(value: ir.Value) -> bool:
    return len(list(value.uses)) == 1


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
