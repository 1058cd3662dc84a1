"""Pass fuse-linear-bias: a linear layer spelled `Add(MatMul(x, W), b)` becomes one `onnx.gemm` (one gemm kernel call).

Transformer exports write every linear layer (nn.Linear) as a MatMul by a constant weight followed by an Add of a
constant bias: two kernel calls, the second a pass over the [batch, seq, N] product.  The gemm kernel takes the
bias as its C (beta 1), which the GPU backends add in the GEMM library's bias epilogue: one launch.  This pass
rewrites, before refine-shapes (as fuse-qdq and fuse-gelu do),

    y = Add(MatMul(x, W), b)           (either Add operand order)

into
    x of rank 2:    y = Gemm(x, W, b)
    x of rank > 2:  y = Reshape(Gemm(Reshape(x, [-1, K]), W, b), x's dims but the last + [N])

whose Reshapes are aliases of their input (no kernel call) and whose target shapes are host arithmetic:
constants where the dims are static, else Concat(Shape(x, end=-1), [N]) for y and, where x's last dim is
dynamic, Concat([-1], Shape(x, start=-1)) for x.

It is fused only where the result is the same computation:
- W is a 2-D constant [K, N], K >= 1 (an initializer or Constant node, or an Identity of one: torch.onnx.export
  writes an initializer equal to an earlier one so) and x is of rank >= 2 with a last dim K or dynamic (as
  after the Reshape that merges attention's heads: it is K at run time, or the gemm kernel refuses the call as
  the matmul kernel would have; x goes to [-1, its last dim], never to [-1, K], so no other dim absorbs it);
- b is a constant (the same kinds) of dims [N] with any number of leading 1s, of rank at most the MatMul
  result's (so the Add does not change the shape); b of rank 1 or 2 is the Gemm's C as it is, a longer one
  through a Reshape to [N];
- x, W, b and y are all float32 or all float16;
- the MatMul's result is read by that Add only (no graph output, no other reader).
A MatMul of two activations (attention's Q K^T and P V) has no constant W and is left alone.  Anything else
stays as imported.
"""

from __future__ import annotations

import math

from torch_mlir import ir

from .. import ir as hir
from . import fusion

NAME = "fuse-linear-bias"

FLOAT32, FLOAT16 = 1, 10
INT64 = 7


def _constant(value: ir.Value) -> ir.Value | None:
    """The constant (initializer or Constant node) `value` is, through Identity ops, of a static type; or None.
    torch.onnx.export writes an initializer equal to an earlier one as an Identity of it (a freshly initialized
    model's zero biases)."""
    op = hir.defining_op(value)
    while op is not None and op.name == "onnx.identity" and len(op.operands) == 1:
        value = op.operands[0]
        op = hir.defining_op(value)
    t = fusion.ranked(value)
    if op is None or op.name not in fusion.CONSTANT_OPS or t is None or not t.has_static_shape:
        return None
    return value


def _match(add: ir.Operation) -> tuple[ir.Operation, ir.Value, ir.Value, ir.Value] | None:
    """(the MatMul, x, W, b) where Add `add` is a linear layer's bias added to its product, or None."""
    ins = fusion.given_inputs(add)
    y = add.results[0]
    ty = fusion.ranked(y)
    if ins is None or ty is None or hir.element_dtype(y) not in (FLOAT32, FLOAT16):
        return None
    dtype = hir.element_dtype(y)
    for prod, b in ((ins[0], ins[1]), (ins[1], ins[0])):
        mm = hir.defining_op(prod)
        if mm is None or mm.name != "onnx.matmul" or not fusion.one_use(prod) or prod == b:
            continue
        mm_ins = fusion.given_inputs(mm)
        if mm_ins is None:
            continue
        x, w = mm_ins
        w, b = _constant(w), _constant(b)
        tx, tm = fusion.ranked(x), fusion.ranked(prod)
        if tx is None or w is None or b is None or tm is None:
            continue
        tw, tb = ir.RankedTensorType(w.type), ir.RankedTensorType(b.type)
        if any(hir.element_dtype(v) != dtype for v in (x, w, b, prod)):
            continue
        if tw.rank != 2 or tx.rank < 2 or tm.rank != tx.rank or ty.rank != tm.rank:
            continue
        k, n = tw.shape
        dyn = ir.ShapedType.get_dynamic_size()
        if k < 1 or tx.shape[-1] not in (k, dyn) or tm.shape[-1] not in (n, dyn):
            continue
        if tb.rank == 0 or tb.rank > tm.rank or tb.shape[-1] != n or any(d != 1 for d in tb.shape[:-1]):
            continue
        return mm, x, w, b
    return None


def _node(op: ir.Operation) -> str:
    return hir.get_str(op, "onnx.node", op.name)


def _onnx(name: str, operands: list[ir.Value], result: ir.Type | str, node: str, before: ir.Operation,
          **attrs) -> ir.Value:
    """An import-level ONNX op `name` (onnx.reshape...) before `before`, its attributes as the importer writes them."""
    full = {f"onnx.{k}": v for k, v in attrs.items()}
    full.update({"operand_roles": list(range(len(operands))), "onnx.node": node})
    return hir.create(name, operands, [result], full, before).results[0]


def _ints(values: list[int], name: str, before: ir.Operation) -> ir.Value:
    """An int64 constant (readable by the shape rules, as the importer writes small ones)."""
    t = hir.tensor_type_str(INT64, [len(values)])
    return hir.create("hipdnn.constant", [], [t], {"name": name, "values": values}, before).results[0]


def _rewrite(rewriter, add: ir.Operation, found) -> None:
    """Rewrites what _match found at an Add (fusion.pattern calls it)."""
    mm, x, w, b = found
    dtype = hir.element_dtype(add.results[0])
    tx, tb = ir.RankedTensorType(x.type), ir.RankedTensorType(b.type)
    k, n = ir.RankedTensorType(w.type).shape
    node, mm_node = _node(add), _node(mm)
    with add.context, add.location:
        if tb.rank > 2:  # [1, ..., 1, N]: Gemm's C is of rank at most 2
            b = _onnx("onnx.reshape", [b, _ints([n], f"{node}: bias dims", add)], hir.tensor_type_str(dtype, [n]),
                      node, add)
        if tx.rank == 2:
            y = _onnx("onnx.gemm", [x, w, b], add.results[0].type, mm_node, add)
        else:
            lead = list(tx.shape[:-1])
            static = all(not ir.ShapedType.is_dynamic_size(d) for d in lead)
            rows = math.prod(lead) if static else None
            last_static = not ir.ShapedType.is_dynamic_size(tx.shape[-1])
            if not last_static:
                # x's last dim, K at run time (the gemm kernel refuses another, as the matmul kernel would)
                last = _onnx("onnx.shape", [x], hir.tensor_type_str(INT64, [1]), node, add, start=-1)
                cols = _onnx("onnx.concat", [_ints([-1], f"{node}: rows", add), last],
                             hir.tensor_type_str(INT64, [2]), node, add, axis=0)
            else:
                cols = _ints([-1, k], f"{node}: rows", add)
            x2_type = hir.tensor_type_str(dtype, [rows, k if last_static else None])
            x2 = _onnx("onnx.reshape", [x, cols], x2_type, node, add)
            y2 = _onnx("onnx.gemm", [x2, w, b], hir.tensor_type_str(dtype, [rows, n]), mm_node, add)
            if static:
                shape = _ints(lead + [n], f"{node}: result dims", add)
            else:
                lead_dims = _onnx("onnx.shape", [x], hir.tensor_type_str(INT64, [len(lead)]), node, add, end=-1)
                shape = _onnx("onnx.concat", [lead_dims, _ints([n], f"{node}: N", add)],
                              hir.tensor_type_str(INT64, [len(lead) + 1]), node, add, axis=0)
            y = _onnx("onnx.reshape", [y2, shape], add.results[0].type, node, add)
    rewriter.replace_op(add, [y])
    rewriter.erase_op(mm)  # read by the Add only; its constants stay for eliminate-dead-ops


def run(module: ir.Module) -> ir.Module:
    return fusion.apply(module, [("onnx.add", fusion.pattern(_match, _rewrite))], top_down=True)
