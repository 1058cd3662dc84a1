"""Pass fuse-qdq: QDQ-quantized Conv, MatMul and Gemm become the integer ops onnxruntime's CPU EP runs.

A QDQ model (onnxruntime's quantize_static, QuantFormat.QDQ) computes each quantized op in float between
DequantizeLinear and QuantizeLinear nodes:

    DQ(x) -> Conv | MatMul | Gemm [-> Relu | Clip] -> Q(y)      (DQ(w) and DQ(bias, INT32) beside DQ(x))

onnxruntime's CPU EP fuses each such group into QLinearConv, QLinearMatMul or com.microsoft QGemm (int32
accumulation, one float requantization), and so does this pass, rewriting the import-level ops into the
one import-level op (`onnx.qlinear_conv`, `onnx.qlinear_matmul`, `onnx.qgemm`) whose shape rule compiles
the integer kernels (ops/quant.py). It is a rewrite pattern rooted at `onnx.quantize_linear`, applied by
MLIR's greedy driver before refine-shapes.

Where a group is fused, as onnxruntime's QDQ selectors decide (qdq_selectors.cc, qdq_util.cc):
- x's DQ per tensor, of INT8 or UINT8, the output's Q of the same element type, per tensor; an INT8 x
  needs an INT8 weight; the weight's DQ per tensor, or per output channel (Conv: axis 0 of W; MatMul:
  the columns of a 2-D B, axis 1; Gemm: B's N axis, 0 under transB); no blocked scales; FLOAT32 scales;
  every scale and zero point a constant (a DQ with other consumers stays for them: onnxruntime's
  EnsureUniqueDQForNodeUnit duplicates it);
- a Gemm of DQs whose result no Q reads becomes QGemm with a FLOAT32 output (no y_scale), as onnxruntime's
  Gemm selector allows (unless a Relu or Clip read by one node follows it: onnxruntime then takes that
  into the group, which fuses only with a Q);
- a bias is the INT32 DQ of Conv's B or Gemm's C (Gemm with beta 1), taken into the accumulator as
  onnxruntime does: its zero point must be zero and, where the scales are known here (constants of at
  most 16 values), its scale x_scale * w_scale;
- the op's result has one user, the Q (or a Relu or Clip whose one user is the Q), so it is no graph
  output; a Relu or Clip is dropped only where the Q's saturation makes it redundant: Relu when the Q's
  zero point (rank 0) is the lowest value of its type, Clip when rint(min / y_scale) + zero point and
  rint(max / y_scale) + zero point fall outside the type's range (y_scale of rank 0).
Everything else stays as imported (DQ, the float op, Q).
"""

from __future__ import annotations

import numpy as np
from torch_mlir import ir

from .. import ir as hir
from ..ops.registry import lookup
from . import fusion

NAME = "fuse-qdq"

FLOAT32, UINT8, INT8, INT32 = 1, 2, 3, 6
_RANGE = {UINT8: (0, 255), INT8: (-128, 127)}
_SKIP_ATTRS = ("operand_roles", "result_roles", "onnx.node", "onnx.beta")


def _inputs(op: ir.Operation) -> dict[int, ir.Value]:
    roles = hir.get_ints(op, "operand_roles", list(range(len(op.operands))))
    return {r: op.operands[k] for k, r in enumerate(roles)}


def _op_of(owner) -> ir.Operation:
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _constant(value: ir.Value | None) -> bool:
    op = None if value is None else hir.defining_op(value)
    return op is not None and op.name in fusion.CONSTANT_OPS


def _shape(value: ir.Value) -> list[int] | None:
    t = ir.RankedTensorType(value.type) if isinstance(value.type, ir.RankedTensorType) else None
    return list(t.shape) if t is not None and t.has_static_shape else None


def _count(shape: list[int]) -> int:
    return int(np.prod(shape)) if shape else 1


def _ints(value: ir.Value | None) -> list[int] | None:
    """A constant zero point's values where the IR carries them (None: unknown)."""
    if value is None:
        return None
    host = hir.host_values(value) if hir.defining_op(value) is not None else None
    if host is not None and all(isinstance(v, int) for v in host):
        return [int(v) for v in host]
    return hir.int_values(value)


class _Quant:
    """One DequantizeLinear (or QuantizeLinear) whose scale and zero point are constants."""

    def __init__(self, op: ir.Operation):
        ins = _inputs(op)
        self.op, self.data, self.scale, self.zero_point = op, ins.get(0), ins.get(1), ins.get(2)
        self.axis = hir.get_int(op, "onnx.axis", 1)
        self.block = hir.get_int(op, "onnx.block_size", 0)
        self.scale_shape = _shape(self.scale) if self.scale is not None else None

    def ok(self) -> bool:
        return (self.data is not None and self.block == 0 and self.scale_shape is not None
                and hir.element_dtype(self.scale) == FLOAT32 and _constant(self.scale)
                and (self.zero_point is None or (_constant(self.zero_point) and _shape(self.zero_point) is not None)))

    @property
    def dtype(self) -> int:
        return hir.element_dtype(self.data)

    def per_tensor(self) -> bool:
        return len(self.scale_shape) <= 1 and _count(self.scale_shape) == 1 and (
            self.zero_point is None or _count(_shape(self.zero_point)) == 1)

    def per_axis(self, axis: int) -> bool:
        """Per tensor, or one scale (and zero point) per index of `axis` of the data (of static dims)."""
        if self.per_tensor():
            return True
        data = _shape(self.data)
        if data is None or len(self.scale_shape) != 1 or not -len(data) <= self.axis < len(data):
            return False
        zp = None if self.zero_point is None else _shape(self.zero_point)
        return (self.axis % len(data) == axis and self.scale_shape[0] == data[axis]
                and (zp is None or zp == self.scale_shape))


def _dequantized(value: ir.Value) -> _Quant | None:
    op = hir.defining_op(value)
    if op is None or op.name != "onnx.dequantize_linear" or hir.element_dtype(value) != FLOAT32:
        return None
    dq = _Quant(op)
    return dq if dq.ok() else None


def _q_scalar(q: _Quant) -> tuple[float, int] | None:
    """The Q's scale and zero point where both are known rank-0 values (onnxruntime reads them so)."""
    if q.scale_shape != []:
        return None
    scale = hir.float_values(q.scale)
    if q.zero_point is None:
        zp = [0]
    elif _shape(q.zero_point) != []:
        return None
    else:
        zp = _ints(q.zero_point)
    if not scale or not zp:
        return None
    return scale[0], zp[0]


def _redundant(act: ir.Operation, q: _Quant, ydt: int) -> bool:
    """Whether the Q's saturation does what Relu or Clip `act` does (so the group may drop it)."""
    known = _q_scalar(q)
    if known is None:
        return False
    scale, zp = known
    lo, hi = _RANGE[ydt]
    if act.name == "onnx.relu":
        return zp == lo
    ins = _inputs(act)
    bounds = []
    for i, unbounded in ((1, -np.inf), (2, np.inf)):
        v = ins.get(i)
        if v is None:
            bounds.append(unbounded)
            continue
        vals = hir.float_values(v)
        if vals is None or len(vals) != 1 or hir.element_dtype(v) != FLOAT32:
            return False
        bounds.append(vals[0])
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        qmin, qmax = (float(np.rint(np.float32(b) / np.float32(scale))) + zp for b in bounds)
    return qmin <= lo and qmax >= hi


def _bias(value: ir.Value | None, x: _Quant, w: _Quant, channels: int) -> tuple[bool, ir.Value | None]:
    """(fusable, the INT32 bias) for a bias input (None: none)."""
    if value is None:
        return True, None
    b = _dequantized(value)
    if b is None or b.dtype != INT32 or not b.per_axis(0) or _shape(b.data) is None or len(_shape(b.data)) != 1:
        return False, None
    if b.zero_point is not None:
        zp = _ints(b.zero_point)
        if zp is None or any(zp):
            return False, None
    bs, xs, ws = hir.float_values(b.scale), hir.float_values(x.scale), hir.float_values(w.scale)
    if bs is not None and xs is not None and ws is not None:
        want = np.float32(xs[0]) * np.asarray(ws, np.float32)
        got = np.asarray(bs, np.float32)
        if not np.array_equal(np.broadcast_to(got, (channels,)) if got.size == 1 else got,
                              np.broadcast_to(want, (channels,)) if want.size == 1 else want):
            return False, None
    return True, b.data


def _operands(x: _Quant, w: _Quant, q: _Quant | None, bias: ir.Value | None, bias_role: int | None
              ) -> tuple[list[ir.Value], list[int]]:
    """The fused op's operands and their input positions: x, its scale and zero point, w, its scale and
    zero point, then (QLinear*) y's scale and zero point and the bias, or (QGemm) the bias, y's scale and
    zero point."""
    slots = [(0, x.data), (1, x.scale), (2, x.zero_point), (3, w.data), (4, w.scale), (5, w.zero_point)]
    if q is None:  # QGemm of a FLOAT32 output: no y_scale
        slots += [(6, bias)]
    elif bias_role == 6:  # QGemm: C before y's
        slots += [(6, bias), (7, q.scale), (8, q.zero_point)]
    else:
        slots += [(6, q.scale), (7, q.zero_point), (8, bias)]
    present = [(r, v) for r, v in slots if v is not None]
    return [v for _, v in present], [r for r, _ in present]


def _group(q_op: ir.Operation):
    """The fusable group ending at Q `q_op`: (new op name, operands, roles, the float op, the dropped
    activation or None, the DQ ops), or None."""
    q = _Quant(q_op)
    ydt = hir.element_dtype(q_op.results[0])
    if not q.ok() or ydt not in _RANGE or not q.per_tensor() or hir.element_dtype(q.data) != FLOAT32:
        return None
    src = hir.defining_op(q.data)
    act = None
    if src is not None and src.name in ("onnx.relu", "onnx.clip"):
        if not fusion.one_use(q.data) or not _redundant(src, q, ydt):
            return None
        act, src = src, hir.defining_op(_inputs(src)[0])
        if src is None or not fusion.one_use(act.operands[0]):
            return None
    elif not fusion.one_use(q.data):
        return None
    if src is None or src.name not in ("onnx.conv", "onnx.matmul", "onnx.gemm"):
        return None
    found = _integer_op(src, q, ydt)
    return None if found is None else (*found[:3], src, act, found[3])


def _integer_op(src: ir.Operation, q: _Quant | None, ydt: int | None):
    """(name, operands, roles, DQ ops) of the integer op for Conv/MatMul/Gemm `src`, whose inputs must all
    be DQs, requantized by Q `q` to element type ydt (None: Gemm's FLOAT32 output, as QGemm without
    y_scale), or None."""
    ins = _inputs(src)
    x = _dequantized(ins[0]) if 0 in ins else None
    w = _dequantized(ins[1]) if 1 in ins else None
    if x is None or w is None or x.dtype not in _RANGE or w.dtype not in _RANGE or not x.per_tensor():
        return None
    if (ydt is not None and x.dtype != ydt) or (x.dtype == INT8 and w.dtype != INT8):
        return None
    wshape = _shape(w.data)
    if src.name == "onnx.conv":
        if wshape is None or not w.per_axis(0):
            return None
        ok, bias = _bias(ins.get(2), x, w, wshape[0])
        name, bias_role = "onnx.qlinear_conv", 8
    elif src.name == "onnx.matmul":
        if not (w.per_tensor() or (wshape is not None and len(wshape) == 2 and w.per_axis(1))):
            return None
        ok, bias, name, bias_role = True, None, "onnx.qlinear_matmul", None
    else:  # Gemm
        if wshape is None or len(wshape) != 2:
            return None
        n_axis = 0 if hir.get_int(src, "onnx.transB", 0) else 1
        if not w.per_axis(n_axis) or (2 in ins and hir.get_float(src, "onnx.beta", 1.0) != 1.0):
            return None
        ok, bias = _bias(ins.get(2), x, w, wshape[n_axis])
        name, bias_role = lookup("com.microsoft", "QGemm").op_name, 6
    if not ok:
        return None
    operands, roles = _operands(x, w, q, bias, bias_role)
    dqs = [x.op, w.op] + ([hir.defining_op(ins[2])] if bias is not None else [])
    return name, operands, roles, dqs


def _fuse_float_gemm(gemm, rewriter) -> bool:
    """The pattern at a Gemm of DQs whose result no Q reads: QGemm with a FLOAT32 output, as onnxruntime's
    Gemm selector allows (its MatMul and Conv selectors need the Q)."""
    gemm = gemm.operation
    out = gemm.results[0]
    users = [_op_of(u) for u in hir.users(out)]
    if hir.element_dtype(out) != FLOAT32 or any(u.name == "onnx.quantize_linear" for u in users):
        return True
    if len(users) == 1 and users[0].name in ("onnx.relu", "onnx.clip"):
        # onnxruntime takes a Relu or Clip read by one node as the group's (redundant under a Q, or no group)
        after = [_op_of(u) for u in hir.users(users[0].results[0])]
        if len(after) == 1 and after[0].name != "func.return":
            return True
    found = _integer_op(gemm, None, None)
    if found is None:
        return True
    name, operands, roles, dqs = found
    _rewrite(rewriter, gemm, name, operands, roles, gemm, None, dqs)
    return False


def _rewrite(rewriter, last: ir.Operation, name: str, operands: list[ir.Value], roles: list[int],
             src: ir.Operation, act: ir.Operation | None, dqs: list[ir.Operation]) -> None:
    """Replace the group's last op (its Q, or the float Gemm) with the integer op; erase what it leaves unread."""
    q_op = last
    with q_op.context, q_op.location:
        attrs = {k: src.attributes[k] for k in src.attributes if k not in _SKIP_ATTRS}
        attrs["operand_roles"] = hir.to_attr(roles)
        attrs["onnx.node"] = ir.StringAttr.get(hir.get_str(src, "onnx.node", src.name))
        new = ir.Operation.create(name, results=[q_op.results[0].type], operands=operands, attributes=attrs,
                                  ip=ir.InsertionPoint(q_op))
    rewriter.replace_op(q_op, [new.results[0]])
    if act is not None:
        rewriter.erase_op(act)
    if src != q_op:
        rewriter.erase_op(src)
    unique = []
    for dq in dqs:
        if not any(dq == u for u in unique):
            unique.append(dq)
    for dq in unique:  # a DQ that other ops read stays for them
        if all(len(list(r.uses)) == 0 for r in dq.results):
            rewriter.erase_op(dq)


def run(module: ir.Module) -> ir.Module:
    at_q = fusion.pattern(_group, lambda rewriter, q_op, found: _rewrite(rewriter, q_op, *found))
    return fusion.apply(module, [("onnx.quantize_linear", at_q), ("onnx.gemm", _fuse_float_gemm)], top_down=True)
