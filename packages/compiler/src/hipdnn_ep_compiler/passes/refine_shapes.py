"""Pass refine-shapes: symbolic shape refinement and folding of shape computations.

Each op's shape rule is its entry's in the op registry (ops/).  The pass is a set of MLIR rewrite
patterns, one per import-level op (`onnx.<name>`) rooted at it, applied by MLIR's greedy driver in
program order (a rule reads the refined dims of its operands): only the ops there at the start are
visited, nothing is folded during the sweep (canonicalize and cse run after the pass: FOLLOW).  A rule
replaces its op through the pattern's rewriter (ops/node.py).  A rule that refuses the model raises;
the pattern then reports no match, every later one does the same, and the pass re-raises the error
once the driver has stopped.

IR in: ops as imported (ONNX semantics, parameter tensors as operands, `onnx.*` attributes).
IR out: every value's tensor type refined with the rank and every dim known statically (so is @main's
signature), and the dims of every value that is not fully static tied to it as `index` values
(`hipdnn.tie_dims`): arith over `tensor.dim`s of the program inputs, folded and shared by upstream
canonicalize and cse;
every computation on host-computable integer values (Shape, Gather, Concat, Slice, Squeeze,
Unsqueeze, Reshape, Cast, Add/Sub/Mul/Div on shape values) folded into `hipdnn.host_tensor`
ops whose operands are the elements (index values); every remaining op in its kernel-level form (a registry
`Kernel`: `hipdnn.binary {op}`, `hipdnn.reduce {op, axes}`, ...) with only data operands and
parameters as attributes (run-time ones, Slice starts, tied as index values: `hipdnn.tie_param`),
or `hipdnn.alias`.  A relation the model promises that is not decided at compile time is a
`hipdnn.check` op over index values (checks.py).

`hipdnn.alias` (Reshape, Squeeze, Unsqueeze, Identity) has new dims and shares its input's data.
"""

from __future__ import annotations

from torch_mlir import ir, rewrite

from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError, UnsupportedError
from ..ops.node import Node, rewriting, targeting
from ..ops.registry import OpDef, by_ir_name, by_ir_names

NAME = "refine-shapes"
FOLLOW = hir.FOLD
_NO_RULE = ("func.return", "hipdnn.weight", "hipdnn.constant")  # ops refine-shapes leaves as they are


class _Sweep:
    """One application of the patterns to one module: the first error a rule raised, if any."""

    def __init__(self, func: ir.Operation):
        self.func = func
        self.error: Exception | None = None

    def pattern(self, entry: OpDef):
        def apply(op, rewriter) -> bool:
            """The pattern for entry's op: False when the op was rewritten (the bindings' convention)."""
            if self.error is not None:
                return True  # a rule refused the model: leave the rest as it is
            o = Node(op.operation, self.func, entry)
            try:
                with sym.current_scope().node(), rewriting(rewriter):
                    entry.rule(o)
                if not o.replaced and not _erased(o.op):
                    raise RuntimeError(f"internal error: the shape rule of {op.name} left {o.where} in place")
            except ZeroDivisionError as exc:
                self.error = ModelError(f"{o.where}: {exc}")
            except sym.ShapeBoundError as exc:
                self.error = UnsupportedError(f"{o.where}: {exc}")
            except Exception as exc:  # noqa: BLE001 - re-raised by run() once the driver has stopped
                self.error = exc
            return self.error is not None

        return apply


def _erased(op: ir.Operation) -> bool:
    """Whether a rule erased `op` itself (ops/node.py's helpers replace it through the rewriter instead)."""
    try:
        op.name  # noqa: B018 - the bindings invalidate an erased op: reading it raises
    except RuntimeError:
        return True
    return False


def _config() -> rewrite.GreedyRewriteConfig:
    config = rewrite.GreedyRewriteConfig()
    config.use_top_down_traversal = True  # producers before their users
    config.strictness = rewrite.GreedyRewriteStrictness.EXISTING_OPS  # a rule's new ops are already refined
    config.enable_folding = False  # FOLLOW folds, once
    config.region_simplification_level = rewrite.GreedySimplifyRegionLevel.DISABLED
    return config


USES_ABI = True  # the shape rules compose what the target runtime has no fused kernel for


def run(module: ir.Module, abi=None) -> ir.Module:
    with targeting(abi):
        return _run(module)


def _run(module: ir.Module) -> ir.Module:
    func = hir.main_func(module)
    for op in hir.ops(module):
        if op.name not in _NO_RULE and by_ir_name(op.name) is None:
            raise UnsupportedError(f"{Node(op, func).where}: no shape rule for {op.name}")
    sweep = _Sweep(func)
    patterns = rewrite.RewritePatternSet(module.context)
    for name, entry in by_ir_names().items():
        patterns.add(name, sweep.pattern(entry))
    rewrite.apply_patterns_and_fold_greedily(module, patterns.freeze(), _config())
    if sweep.error is not None:
        raise sweep.error
    # the results' types are refined: the signature follows what is returned
    ret = hir.ops(module)[-1]
    with module.context:
        inputs = [a.type for a in hir.body(module).arguments]
        func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in ret.operands]))
    return module
