"""Small ai.onnx ops on existing kernels: CastLike, Size, Dropout (inference), LogSoftmax, Hardmax, Swish,
Shrink, IsInf, EyeLike, LpNormalization, RMSNormalization, MeanVarianceNormalization, DepthToSpace and
SpaceToDepth.

None needs a kernel of its own: each is a cast, a host value, an alias, or a short chain of the unary,
binary, reduce, arg_reduce, range, fill, where, transpose and rms_norm kernels.
"""

from __future__ import annotations

import math

import numpy as np
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .general import ARG_REDUCE
from .llm import RMS_NORM, _rms_norm
from .mask import FILL, RANGE, _fill_bits
from .node import HOST_INT_TYPES, Node, emit, finish, host_tensor, norm_axis, replace
from .onnx import BINARY, CAST, REDUCE, TRANSPOSE, UNARY, WHERE, _saturate
from .registry import OpDef, register

BOOL, INT64 = 9, 7
_FLOATS = (1, 10, 11)  # float32, float16, float64


def _type(o: Node, dtype: int, dims: list[sym.Expr]) -> ir.Type:
    with o.op.context, o.op.location:
        return hir.tensor_type(dtype, dims)


def _call(o: Node, kernel, operands: list[ir.Value], attrs: dict, dims: list[sym.Expr], dtype: int,
          params: dict | None = None) -> ir.Value:
    """One kernel call of one result (of element type `dtype`, dims `dims`) before `o`."""
    return emit(o, kernel, operands, attrs, [dims], [_type(o, dtype, dims)], params).results[0]


def _const(o: Node, value: float, dtype: int, dims: list[sym.Expr] | None = None) -> ir.Value:
    """A tensor of `dims` (default: a scalar) filled with `value` stored as `dtype`."""
    return _call(o, FILL, [], {"bits": _fill_bits(np.array([value]), dtype)}, dims or [], dtype)


def _binary(o: Node, key: str, a: ir.Value, b: ir.Value, dims: list[sym.Expr], dtype: int) -> ir.Value:
    return _call(o, BINARY, [a, b], {"op": key}, dims, dtype)


def _x(o: Node) -> tuple[ir.Value, list[sym.Expr], int]:
    return o.input(0), o.dims(0), hir.element_dtype(o.input(0))


# ---------------------------------------------------------------- CastLike, Size, Dropout


def _cast_like(o: Node) -> None:
    to = hir.element_dtype(o.input(1))
    if to not in hir.DTYPES:
        o.fail(f"CastLike to element type {to} is not supported")
    vals = o.host(0)
    if vals is not None and to in HOST_INT_TYPES:
        host_tensor(o, vals, o.dims(0), dtype=to)
        return
    if hir.element_dtype(o.input(0)) == to:
        replace(o, "hipdnn.alias", [o.input(0)], {}, [o.dims(0)])
        return
    replace(o, CAST, [o.input(0)], {"to": to, "saturate": _saturate(o)}, [o.dims(0)])


register(OpDef("CastLike", "cast_like", _cast_like, (CAST,)))


def _size(o: Node) -> None:
    host_tensor(o, [sym.product(o.dims(0))], [], dtype=INT64)


register(OpDef("Size", "size", _size))


def _dropout(o: Node) -> None:
    # Inference only: Y is X and the mask all true.  training_mode (input 2) must be a constant false.
    if o.input(2) is not None:
        flag = hir.defining_op(o.input(2))
        value = None if flag is None or flag.name != "hipdnn.weight" else hir.get_int(flag, "bool_value")
        if value is None:
            o.fail("training_mode must be a constant false (Dropout is supported for inference only)")
        if value:
            o.fail("training_mode is true; Dropout is supported for inference only")
    x, d, _ = _x(o)
    outs = []
    for role in hir.get_ints(o.op, "result_roles", list(range(len(o.op.results)))):
        if role == 0:
            outs.append(emit(o, "hipdnn.alias", [x], {}, [d], [o.op.results[0].type]).results[0])
        else:
            outs.append(_const(o, 1, BOOL, d))
    finish(o, outs)


register(OpDef("Dropout", "dropout", _dropout, (FILL,)))

# ---------------------------------------------------------------- LogSoftmax, Hardmax


def _log_softmax(o: Node) -> None:
    # (x - max) - log(sum(exp(x - max))), as onnxruntime computes it: x - max is exact near the maximum,
    # so large inputs keep their precision (x - LogSumExp(x) would round at the scale of x)
    x, d, dtype = _x(o)
    if not d:
        raise ModelError(f"{o.where}: the input is a scalar; LogSoftmax needs rank >= 1")
    axis = norm_axis(o, o.attr_int("axis", -1), len(d))
    kept = [1 if i == axis else e for i, e in enumerate(d)]
    shifted = _binary(o, "SUB", x, _call(o, REDUCE, [x], {"op": "MAX", "axes": [axis]}, kept, dtype), d, dtype)
    lse = _call(o, REDUCE, [shifted], {"op": "LOG_SUM_EXP", "axes": [axis]}, kept, dtype)
    finish(o, [_binary(o, "SUB", shifted, lse, d, dtype)])


register(OpDef("LogSoftmax", "log_softmax", _log_softmax, (REDUCE, BINARY)))


def _hardmax(o: Node) -> None:
    # one-hot of the first maximum along axis: Equal(iota along axis, ArgMax(keepdims)), cast to x's type
    x, d, dtype = _x(o)
    if not d:
        raise ModelError(f"{o.where}: the input is a scalar; Hardmax needs rank >= 1")
    axis = norm_axis(o, o.attr_int("axis", -1), len(d))
    kept = [1 if i == axis else e for i, e in enumerate(d)]
    arg = _call(o, ARG_REDUCE, [x], {"axis": axis, "select_last_index": 0, "is_min": 0}, kept, INT64)
    iota = _call(o, RANGE, [], {}, [d[axis]], INT64, params={"start_delta": [0, 1]})
    column = [d[axis]] + [1] * (len(d) - axis - 1)
    iota = _call(o, "hipdnn.alias", [iota], {}, column, INT64)
    hot = _binary(o, "EQUAL", iota, arg, d, BOOL)
    finish(o, [_call(o, CAST, [hot], {"to": dtype}, d, dtype)])


register(OpDef("Hardmax", "hardmax", _hardmax, (ARG_REDUCE, RANGE, BINARY, CAST)))

# ---------------------------------------------------------------- Swish, Shrink, IsInf


def _swish(o: Node) -> None:
    # x * sigmoid(alpha * x)
    x, d, dtype = _x(o)
    alpha = o.attr_float("alpha", 1.0)
    ax = x if alpha == 1.0 else _binary(o, "MUL", x, _const(o, alpha, dtype), d, dtype)
    s = _call(o, UNARY, [ax], {"op": "SIGMOID"}, d, dtype)
    finish(o, [_binary(o, "MUL", x, s, d, dtype)])


register(OpDef("Swish", "swish", _swish, (UNARY, BINARY)))


def _shrink(o: Node) -> None:
    # x < -lambd: x + bias; x > lambd: x - bias; else 0
    x, d, dtype = _x(o)
    lambd, bias = o.attr_float("lambd", 0.5), o.attr_float("bias", 0.0)
    below = _binary(o, "LESS", x, _const(o, -lambd, dtype), d, BOOL)
    above = _binary(o, "GREATER", x, _const(o, lambd, dtype), d, BOOL)
    b = _const(o, bias, dtype)
    inner = _call(o, WHERE, [above, _binary(o, "SUB", x, b, d, dtype), _const(o, 0, dtype)], {}, d, dtype)
    finish(o, [_call(o, WHERE, [below, _binary(o, "ADD", x, b, d, dtype), inner], {}, d, dtype)])


register(OpDef("Shrink", "shrink", _shrink, (BINARY, WHERE, FILL)))


def _is_inf(o: Node) -> None:
    x, d, dtype = _x(o)
    pos = o.attr_int("detect_positive", 1) != 0
    neg = o.attr_int("detect_negative", 1) != 0
    if dtype not in _FLOATS:  # integers are never infinite
        replace(o, FILL, [], {"bits": 0}, [d])
        return
    if not pos and not neg:
        replace(o, FILL, [], {"bits": 0}, [d])
        return
    if pos and neg:
        x = _call(o, UNARY, [x], {"op": "ABS"}, d, dtype)
    inf = _const(o, -math.inf if neg and not pos else math.inf, dtype)
    finish(o, [_binary(o, "EQUAL", x, inf, d, BOOL)])


register(OpDef("IsInf", "is_inf", _is_inf, (UNARY, BINARY, FILL)))

# ---------------------------------------------------------------- EyeLike


def _eye_like(o: Node) -> None:
    # (i, j) is 1 where j - i == k: Equal(iota(cols) - iota(rows), k), cast to the output type
    d = o.dims(0)
    if len(d) != 2:
        raise ModelError(f"{o.where}: the input has rank {len(d)}; EyeLike needs a 2-D input")
    dtype = o.result_dtype()
    k = o.attr_int("k", 0)
    rows = _call(o, RANGE, [], {}, [d[0]], INT64, params={"start_delta": [0, 1]})
    rows = _call(o, "hipdnn.alias", [rows], {}, [d[0], 1], INT64)
    cols = _call(o, RANGE, [], {}, [d[1]], INT64, params={"start_delta": [0, 1]})
    diff = _binary(o, "SUB", cols, rows, d, INT64)
    hot = _binary(o, "EQUAL", diff, _const(o, k, INT64), d, BOOL)
    finish(o, [hot if dtype == BOOL else _call(o, CAST, [hot], {"to": dtype}, d, dtype)])


register(OpDef("EyeLike", "eye_like", _eye_like, (RANGE, BINARY, CAST)))

# ---------------------------------------------------------------- LpNormalization, MeanVarianceNormalization


def _lp_normalization(o: Node) -> None:
    # x / ||x||_p along axis (p 1 or 2); a zero norm gives 0, as in onnxruntime
    x, d, dtype = _x(o)
    if not d:
        raise ModelError(f"{o.where}: the input is a scalar; LpNormalization needs rank >= 1")
    axis = norm_axis(o, o.attr_int("axis", -1), len(d))
    p = o.attr_int("p", 2)
    if p not in (1, 2):
        raise ModelError(f"{o.where}: p is {p}; LpNormalization supports p = 1 or 2")
    kept = [1 if i == axis else e for i, e in enumerate(d)]
    norm = _call(o, REDUCE, [x], {"op": "L1" if p == 1 else "L2", "axes": [axis]}, kept, dtype)
    zero = _const(o, 0, dtype)
    is_zero = _binary(o, "EQUAL", norm, zero, kept, BOOL)
    safe = _call(o, WHERE, [is_zero, _const(o, 1, dtype), norm], {}, kept, dtype)
    finish(o, [_binary(o, "DIV", x, safe, d, dtype)])


register(OpDef("LpNormalization", "lp_normalization", _lp_normalization, (REDUCE, BINARY, WHERE)))


def _mean_variance_normalization(o: Node) -> None:
    # (x - mean) / sqrt(mean((x - mean)^2) + 1e-9) over axes (default [0, 2, 3])
    x, d, dtype = _x(o)
    axes = o.attr_ints("axes")
    axes = [0, 2, 3] if axes is None else axes
    axes = sorted({norm_axis(o, a, len(d)) for a in axes})
    kept = [1 if i in axes else e for i, e in enumerate(d)]
    mean = _call(o, REDUCE, [x], {"op": "MEAN", "axes": axes}, kept, dtype)
    centered = _binary(o, "SUB", x, mean, d, dtype)
    var = _call(o, REDUCE, [_binary(o, "MUL", centered, centered, d, dtype)], {"op": "MEAN", "axes": axes}, kept,
                dtype)
    std = _call(o, UNARY, [_binary(o, "ADD", var, _const(o, 1e-9, dtype), kept, dtype)], {"op": "SQRT"}, kept, dtype)
    finish(o, [_binary(o, "DIV", centered, std, d, dtype)])


register(OpDef("MeanVarianceNormalization", "mean_variance_normalization", _mean_variance_normalization,
               (REDUCE, BINARY, UNARY)))

# ---------------------------------------------------------------- RMSNormalization (opset 23)

# X, Scale; axis and epsilon as in SimplifiedLayerNormalization (stash_type: the kernel accumulates in float32)
register(OpDef("RMSNormalization", "rms_norm", _rms_norm, (RMS_NORM,)))

# ---------------------------------------------------------------- DepthToSpace, SpaceToDepth


def _divisible(o: Node, dim: sym.Expr, by: int, what: str, d: list[sym.Expr]) -> sym.Expr:
    """dim / by, checked to divide evenly (at compile time when static, else by the program)."""
    q = sym.div(dim, by)
    text = checks.Text(sym.mul(q, by), dim)
    o.require("eq", text.values, f"input shape {text.dims(d)}: {what} {{1}} is not a multiple of {by}")
    return q


def _reshuffle(o: Node, inter: list[sym.Expr], perm: list[int], out: list[sym.Expr]) -> None:
    """reshape to `inter`, transpose by `perm`, reshape to `out`."""
    x, _, dtype = _x(o)
    a = _call(o, "hipdnn.alias", [x], {}, inter, dtype)
    t = _call(o, TRANSPOSE, [a], {"perm": perm}, [inter[p] for p in perm], dtype)
    finish(o, [_call(o, "hipdnn.alias", [t], {}, out, dtype)])


def _blocksize(o: Node) -> int:
    b = o.attr_int("blocksize")
    if b is None or b < 1:
        raise ModelError(f"{o.where}: blocksize is {b}; it must be a positive integer")
    d = o.dims(0)
    if len(d) != 4:
        raise ModelError(f"{o.where}: the input has rank {len(d)}; {o.entry.op_type} needs [N, C, H, W]")
    return b


def _depth_to_space(o: Node) -> None:
    b = _blocksize(o)
    n, c, h, w = o.dims(0)
    mode = hir.get_str(o.op, "onnx.mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ModelError(f"{o.where}: mode is '{mode}'; it must be DCR or CRD")
    c2 = _divisible(o, c, b * b, "the channel count", o.dims(0))
    out = [n, c2, sym.mul(h, b), sym.mul(w, b)]
    if mode == "DCR":
        _reshuffle(o, [n, b, b, c2, h, w], [0, 3, 4, 1, 5, 2], out)
    else:
        _reshuffle(o, [n, c2, b, b, h, w], [0, 1, 4, 2, 5, 3], out)


register(OpDef("DepthToSpace", "depth_to_space", _depth_to_space, (TRANSPOSE,)))


def _space_to_depth(o: Node) -> None:
    b = _blocksize(o)
    n, c, h, w = o.dims(0)
    h2 = _divisible(o, h, b, "the height", o.dims(0))
    w2 = _divisible(o, w, b, "the width", o.dims(0))
    mode = hir.get_str(o.op, "onnx.mode", "DCR")  # opset 28
    if mode not in ("DCR", "CRD"):
        raise ModelError(f"{o.where}: mode is '{mode}'; it must be DCR or CRD")
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    _reshuffle(o, [n, c, h2, b, w2, b], perm, [n, sym.mul(c, b * b), h2, w2])


register(OpDef("SpaceToDepth", "space_to_depth", _space_to_depth, (TRANSPOSE,)))
