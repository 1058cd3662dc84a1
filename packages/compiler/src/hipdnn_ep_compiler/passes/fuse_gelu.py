"""Pass fuse-gelu: GELU spelled out in elementwise ops becomes one `onnx.gelu` (one unary kernel).

torch.onnx.export below opset 20 writes GELU as the ops of its definition, and transformers' BERT- and
GPT-2-style models carry those chains in every MLP, each a few kernel launches and passes over a
[batch, seq, 4 * hidden] tensor:

    erf:   0.5 * x * (1 + Erf(x / sqrt(2)))                                   (Gelu, approximate="none")
    tanh:  0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))          (Gelu, approximate="tanh")

This pass rewrites each such chain into the import-level `onnx.gelu` (with `onnx.approximate = "tanh"` for
the second), whose shape rule (ops/onnx.py) calls the unary kernel's GELU_ERF or GELU_TANH. It is a rewrite
pattern rooted at `onnx.mul`, applied by MLIR's greedy driver before refine-shapes, as fuse-qdq is.

What is recognised: a product (a tree of Mul, and of Div by a constant, read as a product by its
reciprocal) whose factors are x, one constant c and one Add of a constant 1 and Erf(p) or Tanh(q), where
- p is a product of x and one constant: 1 / sqrt(2) (Div by sqrt(2) or Mul by 1 / sqrt(2));
- q is a product of one constant sqrt(2 / pi) and an Add of x and a product of one constant 0.044715 and
  x^3 (Pow(x, 3), of a float or integer exponent, or x * x * x in any association);
- c is 0.5; the operands of every Mul and Add in any order.
It is fused only where the result is the same computation:
- every value between x and the root (each Mul, Div, Add, Erf, Tanh, Pow result but the root's) has one
  user, the chain's next op: none is a graph output or read elsewhere (the ops go with the rewrite);
- x is float32 or float16 and every constant is a small one the importer keeps readable (an initializer or
  Constant node), of x's element type, of one element and of rank at most x's (so it broadcasts without
  changing the shape); x itself is no constant;
- each constant is its value within 1e-6 relative for float32 and within float16's unit roundoff (2^-11
  relative: the value rounded to float16, or 1 / that for a Div) for float16, whose nearest values to
  sqrt(2) and 1 / sqrt(2) are 1e-4 from them; Pow's exponent is exactly 3.
Anything else stays as imported.
"""

from __future__ import annotations

import math

from torch_mlir import ir

from .. import ir as hir
from . import fusion

NAME = "fuse-gelu"

FLOAT32, FLOAT16 = 1, 10
_TOLERANCE = {FLOAT32: 1e-6, FLOAT16: 2.0 ** -11}
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


class _Chain:
    """The ops of one candidate chain and its element type, collected while matching."""

    def __init__(self, dtype: int, rank: int):
        self.dtype, self.rank = dtype, rank
        self.ops: list[ir.Operation] = []

    def constant(self, value: ir.Value) -> float | None:
        """The value of a one-element constant of the chain's element type and rank at most x's, or None."""
        op = hir.defining_op(value)
        if op is None or op.name not in fusion.CONSTANT_OPS or hir.element_dtype(value) != self.dtype:
            return None
        t = ir.RankedTensorType(value.type)
        if t.rank > self.rank or not t.has_static_shape or math.prod(t.shape) != 1:
            return None
        vals = hir.float_values(value)
        return vals[0] if vals and len(vals) == 1 else None

    def near(self, got: float | None, want: float) -> bool:
        return got is not None and math.isfinite(got) and abs(got - want) <= _TOLERANCE[self.dtype] * abs(want)

    def inner(self, value: ir.Value, name: str) -> ir.Operation | None:
        """The op `name` producing `value`, an intermediate of the chain (one user), taken into it; or None."""
        op = hir.defining_op(value)
        if op is None or op.name != name or not fusion.one_use(value):
            return None
        self.ops.append(op)
        return op

    def factors(self, value: ir.Value, root: bool = False) -> tuple[list[float], list[ir.Value]]:
        """`value` as a product: (its constant factors, its other factors), through Mul and through Div by a
        nonzero constant (a factor 1 / divisor), whose results (but the root's) have one user; the Mul and Div
        ops are taken into the chain."""
        op = hir.defining_op(value)
        if op is None or op.name not in ("onnx.mul", "onnx.div") or (not root and not fusion.one_use(value)):
            return [], [value]
        ins = fusion.given_inputs(op)
        if ins is None:
            return [], [value]
        if op.name == "onnx.div":
            d = self.constant(ins[1])
            if d is None or d == 0:
                return [], [value]
            parts = [self.factors(ins[0])]
            consts = [1.0 / d]
        else:
            parts = [self.factors(v) for v in ins]
            consts = []
        if not root:
            self.ops.append(op)
        others: list[ir.Value] = []
        for c, o in parts:
            consts += c
            others += o
        # a constant operand is a leaf of the recursion: read its value here
        rest = []
        for v in others:
            c = self.constant(v)
            if c is None:
                rest.append(v)
            else:
                consts.append(c)
        return consts, rest

    def product_of_x(self, value: ir.Value, x: ir.Value, want_const: float, power: int) -> bool:
        """Whether `value` (an intermediate) is want_const * x^power (x^3 also as Pow(x, 3))."""
        if not fusion.one_use(value):
            return False
        consts, others = self.factors(value)
        if len(consts) != 1 or not self.near(consts[0], want_const):
            return False
        n = 0
        for v in others:
            if v == x:
                n += 1
            elif power == 3 and self._cube(v, x):
                n += 3
            else:
                return False
        return n == power

    def _cube(self, value: ir.Value, x: ir.Value) -> bool:
        op = hir.defining_op(value)
        if op is None or op.name != "onnx.pow" or not fusion.one_use(value):
            return False
        ins = fusion.given_inputs(op)
        if ins is None or ins[0] != x:
            return False
        exp = hir.defining_op(ins[1])
        if exp is None or exp.name not in fusion.CONSTANT_OPS or math.prod(ir.RankedTensorType(ins[1].type).shape) != 1:
            return False
        if ir.RankedTensorType(ins[1].type).rank > self.rank:
            return False
        vals = hir.float_values(ins[1]) if exp.name == "hipdnn.weight" else hir.host_values(ins[1])
        if not vals or len(vals) != 1 or not isinstance(vals[0], (int, float)) or float(vals[0]) != 3.0:
            return False
        self.ops.append(op)
        return True

    def one_plus(self, value: ir.Value, x: ir.Value) -> str | None:
        """"erf" or "tanh" where `value` is 1 + Erf(x / sqrt(2)) or 1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))."""
        add = self.inner(value, "onnx.add")
        ins = None if add is None else fusion.given_inputs(add)
        if ins is None:
            return None
        for one, t in ((ins[0], ins[1]), (ins[1], ins[0])):
            if not self.near(self.constant(one), 1.0):
                continue
            mark = len(self.ops)
            erf = self.inner(t, "onnx.erf")
            if erf is not None and self.product_of_x(erf.operands[0], x, _INV_SQRT2, 1):
                return "erf"
            del self.ops[mark:]
            tanh = self.inner(t, "onnx.tanh")
            if tanh is not None and self._tanh_arg(tanh.operands[0], x):
                return "tanh"
            del self.ops[mark:]
        return None

    def _tanh_arg(self, value: ir.Value, x: ir.Value) -> bool:
        """Whether `value` is sqrt(2/pi) * (x + 0.044715 * x^3)."""
        if not fusion.one_use(value):
            return False
        consts, others = self.factors(value)
        if len(consts) != 1 or not self.near(consts[0], _SQRT_2_OVER_PI) or len(others) != 1:
            return False
        add = self.inner(others[0], "onnx.add")
        ins = None if add is None else fusion.given_inputs(add)
        if ins is None:
            return False
        for a, b in ((ins[0], ins[1]), (ins[1], ins[0])):
            mark = len(self.ops)
            if a == x and self.product_of_x(b, x, _KAPPA, 3):
                return True
            del self.ops[mark:]
        return False


def _match(root: ir.Operation) -> tuple[ir.Value, str, list[ir.Operation]] | None:
    """(x, "erf" or "tanh", the chain's ops but the root) where Mul `root` ends a spelled-out GELU."""
    y = root.results[0]
    dtype = hir.element_dtype(y)
    if dtype not in _TOLERANCE or not isinstance(y.type, ir.RankedTensorType):
        return None
    chain = _Chain(dtype, ir.RankedTensorType(y.type).rank)
    consts, others = chain.factors(y, root=True)
    if len(consts) != 1 or not chain.near(consts[0], 0.5) or len(others) != 2:
        return None
    for x, term in ((others[0], others[1]), (others[1], others[0])):
        src = hir.defining_op(x)
        if x == term or (src is not None and src.name in fusion.CONSTANT_OPS):
            continue
        if hir.element_dtype(x) != dtype or not fusion.same_shape(x, y):
            continue
        mark = len(chain.ops)
        kind = chain.one_plus(term, x)
        if kind is not None:
            return x, kind, chain.ops
        del chain.ops[mark:]
    return None


def _rewrite(rewriter, root: ir.Operation, found) -> None:
    """Rewrites what _match found at a Mul (fusion.pattern calls it)."""
    x, kind, ops = found
    with root.context:
        attrs = {"onnx.approximate": ir.StringAttr.get("tanh")} if kind == "tanh" else None
    fusion.replace_chain(rewriter, root, "onnx.gelu", [x], ops, attrs)


def run(module: ir.Module) -> ir.Module:
    return fusion.apply(module, [("onnx.mul", fusion.pattern(_match, _rewrite))], top_down=False)
