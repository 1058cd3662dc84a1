"""Quantization ops: QuantizeLinear and DequantizeLinear (per tensor, per axis, blocked; INT8, UINT8, INT16
and UINT16, and INT32 for DequantizeLinear), DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and
QLinearConv, the ops of onnxruntime's `quantize_dynamic`, QDQ and QOperator models.

The first four have kernels of their own (ABI 1.3); QLinearMatMul is composed, as onnxruntime's CPU EP
computes it: the int32 product of matmul_integer, times the float multiplier a_scale * b_scale / y_scale,
rounded (ties to even) and saturated by quantize_linear with scale 1 and y's zero point. ConvInteger is
the conv_integer kernel (int32 accumulation); QLinearConv is composed the same way as QLinearMatMul: the
conv_integer product plus the INT32 bias, times the float multiplier x_scale * w_scale / y_scale (per output
channel with a per-channel w_scale), through quantize_linear with scale 1 and y's zero point.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .mask import FILL, _fill_bits
from .node import Node, broadcast, emit, finish, norm_axis, replace, show
from .onnx import BINARY, CAST, CONCAT, TRANSPOSE, UNARY, _matmul_dims
from .registry import Kernel, OpDef, Param, register, register_kernel
from .vision import ACTIVATION, POOL, conv_geometry

FLOAT32, UINT8, INT8, UINT16, INT16, INT32, FLOAT16 = 1, 2, 3, 4, 5, 6, 10
QUANT_TYPES = {INT8: "INT8", UINT8: "UINT8"}
# QuantizeLinear/DequantizeLinear take 16-bit types too (the integer-product ops stay 8-bit)
QDQ_TYPES = (INT8, UINT8, INT16, UINT16)

QUANTIZE = register_kernel(Kernel("quantize_linear", "kernel_quantize_linear", ("axis", "block_size"), arity=(2, 3),
                                  same_type=(0, 1), labels={2: "the zero point"}))
DEQUANTIZE = register_kernel(Kernel("dequantize_linear", "kernel_dequantize_linear", ("axis", "block_size"),
                                    arity=(2, 3), same_type=(0, 2), labels={1: "the scale"}))
DYNAMIC_QUANTIZE = register_kernel(Kernel("dynamic_quantize_linear", "kernel_dynamic_quantize_linear",
                                          results=(3, 3)))
MATMUL_INTEGER = register_kernel(Kernel("matmul_integer", "kernel_matmul_integer", arity=(2, 4), same_type=(0, 2),
                                        labels={1: "B", 3: "b_zero_point"}))


def _name(code: int) -> str:
    """An element type's name for a message (int16, not 5)."""
    return hir.DTYPE_NAMES.get(code, str(code))


def _type(o: Node, dtype: int, dims: list[sym.Expr]) -> ir.Type:
    with o.op.context:
        return ir.Type.parse(hir.tensor_type_str(dtype, dims))


def _scale_attrs(o: Node, x: list[sym.Expr], scale: list[sym.Expr]) -> dict:
    """axis and block_size for the kernel, with the scale's shape checked against X's (the kernel checks
    again at run time, where dims are dynamic)."""
    block = o.attr_int("block_size", 0)
    if block < 0:
        raise ModelError(f"{o.where}: block_size {block} must be >= 0")
    if block == 0 and sym.product(scale) == 1 and len(scale) <= 1:
        return {"axis": 0, "block_size": 0}  # per tensor
    axis = norm_axis(o, o.attr_int("axis", 1), len(x))
    if block == 0:
        if len(scale) != 1 or (isinstance(scale[0], int) and isinstance(x[axis], int) and scale[0] != x[axis]):
            raise ModelError(f"{o.where}: the scale has shape {show(scale)}; per axis {axis} of the input "
                             f"{show(x)} it must be [{sym.to_str(x[axis])}] (or hold one value)")
    else:
        want = list(x)
        want[axis] = sym.ceildiv(x[axis], block)
        if len(scale) != len(x) or any(isinstance(g, int) and isinstance(w, int) and g != w
                                       for g, w in zip(scale, want, strict=True)):
            raise ModelError(f"{o.where}: the scale has shape {show(scale)}; blocks of {block} along axis {axis} of "
                             f"the input {show(x)} need {show(want)}")
    return {"axis": axis, "block_size": block}


def _same_dims(o: Node, got: list[sym.Expr], want: list[sym.Expr], text: str) -> None:
    """got equals want: refused now where both dims are static, else checked by the program."""
    if len(got) != len(want) or any(isinstance(g, int) and isinstance(w, int) and g != w
                                    for g, w in zip(got, want, strict=True)):
        raise ModelError(f"{o.where}: {text.format(show(got), show(want))}")
    for g, w in zip(got, want, strict=True):
        if g != w:
            t = checks.Text(g, w)
            o.require("eq", t.values, text.format(t.dims(got), t.dims(want)))


def _zero_point(o: Node, scale: list[sym.Expr]) -> list:
    zp = o.input(2)
    if zp is None:
        return []
    if not (sym.product(o.dims(2)) == 1 and sym.product(scale) == 1):
        _same_dims(o, o.dims(2), scale, "the zero point has shape {0}; it must be the scale's {1}")
    return [zp]


def _one_value(o: Node, i: int, what: str) -> None:
    """Input i holds one value: rank <= 1, its dim 1 (checked by the program where it is symbolic)."""
    d = o.dims(i)
    if len(d) > 1 or (d and isinstance(d[0], int) and d[0] != 1):
        o.fail(f"{what} of shape {show(d)} is not supported (one value; b_scale may be per column)")
    if d and d[0] != 1:
        t = checks.Text(d[0], 1)
        o.require("eq", t.values, f"{what} has {{0}} values; it must hold one")


def _quantize(o: Node) -> None:
    out = o.result_dtype()
    if out not in QDQ_TYPES:
        o.fail(f"quantizing to element type {_name(out)} is not supported (INT8, UINT8, INT16 and UINT16 are)")
    if o.input(2) is not None and hir.element_dtype(o.input(2)) != out:
        raise ModelError(f"{o.where}: the zero point's element type differs from the output's")
    x, scale = o.dims(0), o.dims(1)
    attrs = _scale_attrs(o, x, scale)
    zp = _zero_point(o, scale)
    if zp and len(o.dims(2)) != len(scale):  # a [1] zero point with a scalar scale
        zp = [emit(o, "hipdnn.alias", zp, {}, [scale], [_type(o, out, scale)]).results[0]]
    replace(o, QUANTIZE, [o.input(0), o.input(1)] + zp, attrs, [x])


register(OpDef("QuantizeLinear", "quantize_linear", _quantize, (QUANTIZE,)))


def _dequantize(o: Node) -> None:
    x, scale = o.dims(0), o.dims(1)
    xdt = hir.element_dtype(o.input(0))
    if xdt not in (*QDQ_TYPES, INT32):
        o.fail(f"dequantizing element type {_name(xdt)} is not supported (INT8, UINT8, INT16, UINT16 and INT32 are)")
    if o.result_dtype() != hir.element_dtype(o.input(1)):
        o.fail(f"an output of element type {_name(o.result_dtype())} other than the scale's "
               f"({_name(hir.element_dtype(o.input(1)))}) is not supported")
    attrs = _scale_attrs(o, x, scale)
    zp = _zero_point(o, scale)
    if zp and len(o.dims(2)) != len(scale):
        zp = [emit(o, "hipdnn.alias", zp, {}, [scale], [_type(o, xdt, scale)]).results[0]]
    replace(o, DEQUANTIZE, [o.input(0), o.input(1)] + zp, attrs, [x])


register(OpDef("DequantizeLinear", "dequantize_linear", _dequantize, (DEQUANTIZE,)))


def _dynamic_quantize(o: Node) -> None:
    x = o.dims(0)
    if hir.element_dtype(o.input(0)) != FLOAT32:
        o.fail("DynamicQuantizeLinear of an input other than FLOAT32 is not supported")
    roles = hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))
    types = [_type(o, UINT8, x), _type(o, FLOAT32, []), _type(o, UINT8, [])]
    new = emit(o, DYNAMIC_QUANTIZE, [o.input(0)], {}, [x, [], []], types)
    finish(o, [new.results[r] for r in roles])


register(OpDef("DynamicQuantizeLinear", "dynamic_quantize_linear", _dynamic_quantize, (DYNAMIC_QUANTIZE,)))


def _matmul_integer_zero_point(o: Node, i: int, per: sym.Expr, what: str) -> None:
    if o.input(i) is None:
        return
    d = o.dims(i)
    n = sym.product(d)
    if len(d) > 1 or (isinstance(n, int) and n != 1 and isinstance(per, int) and n != per):
        raise ModelError(f"{o.where}: {what} has shape {show(d)}; it must hold one value or {sym.to_str(per)}")


def _integer_product(o: Node, a: int, b: int, za: int, zb: int) -> tuple[ir.Value, list[sym.Expr]]:
    """matmul_integer of the node's inputs a and b with zero points za and zb (positions, maybe absent)."""
    da, db = o.dims(a), o.dims(b)
    out = _matmul_dims(o, da, db)
    m = da[-2] if len(da) > 1 else 1
    n = db[-1] if len(db) > 1 else 1
    _matmul_integer_zero_point(o, za, m, "a_zero_point")
    _matmul_integer_zero_point(o, zb, n, "b_zero_point")
    for i, what in ((a, "A"), (b, "B")):
        if hir.element_dtype(o.input(i)) not in QUANT_TYPES:
            o.fail(f"{what} of element type {_name(hir.element_dtype(o.input(i)))} is not supported "
                   "(INT8 and UINT8 are)")
    operands = [o.input(a), o.input(b)]
    slots = [0, 1]
    for i, slot in ((za, 2), (zb, 3)):
        if o.input(i) is not None:
            operands.append(o.input(i))
            slots.append(slot)
    new = emit(o, MATMUL_INTEGER, operands, {"hipdnn.slots": slots}, [out], [_type(o, INT32, out)])
    return new.results[0], out


def _matmul_integer(o: Node) -> None:
    y, _ = _integer_product(o, 0, 1, 2, 3)
    finish(o, [y])


register(OpDef("MatMulInteger", "matmul_integer", _matmul_integer, (MATMUL_INTEGER,)))


def _scale_per(o: Node, i: int, what: str, per: sym.Expr, shapes: str, along: str) -> bool:
    """Checks input i (a scale) is one value or [per] (`shapes` says which in the refusal): True when it is
    one per `along` (a column, an output channel)."""
    d = o.dims(i)
    if len(d) > 1 or (d and not isinstance(d[0], int) and d[0] != per):
        o.fail(f"{what} of shape {show(d)} is not supported (one value, or {shapes})")
    if sym.product(d) == 1:
        return False
    _same_dims(o, d, [per], f"{what} has shape {{0}}; per {along} it must be {{1}}")
    return True


def _scale_f32(o: Node, i: int, dims: list[sym.Expr]) -> ir.Value:
    """Input i as FLOAT32 of dims (float16 scales are widened: ORT computes the multiplier in float)."""
    v = o.input(i)
    if hir.element_dtype(v) != FLOAT32:
        v = emit(o, CAST, [v], {"to": FLOAT32}, [o.dims(i)], [_type(o, FLOAT32, o.dims(i))]).results[0]
    return emit(o, "hipdnn.alias", [v], {}, [dims], [_type(o, FLOAT32, dims)]).results[0]


def _qlinear_multiplier(o: Node, ds: list[sym.Expr]) -> ir.Value:
    """QLinearMatMul's and QLinearConv's input 1 * input 4 / input 6 (their scales), FLOAT32 of dims ds."""
    ab = emit(o, BINARY, [_scale_f32(o, 1, []), _scale_f32(o, 4, ds)], {"op": "MUL"}, [ds],
              [_type(o, FLOAT32, ds)]).results[0]
    return emit(o, BINARY, [ab, _scale_f32(o, 6, [])], {"op": "DIV"}, [ds], [_type(o, FLOAT32, ds)]).results[0]


def _qlinear_y_zero_point(o: Node, ydt: int) -> ir.Value | None:
    """QLinearMatMul's and QLinearConv's y_zero_point (input 7), whose element type is the output's (None
    where fuse-qdq fused a QuantizeLinear without one)."""
    if o.input(7) is None:
        if ydt not in QUANT_TYPES:
            raise ModelError(f"{o.where}: the output's element type must be INT8 or UINT8")
        return None
    if ydt != hir.element_dtype(o.input(7)) or ydt not in QUANT_TYPES:
        raise ModelError(f"{o.where}: y_zero_point's element type must be the output's (INT8 or UINT8)")
    return emit(o, "hipdnn.alias", [o.input(7)], {}, [[]], [_type(o, ydt, [])]).results[0]


def _requantize(o: Node, acc: ir.Value, mult: ir.Value, dims: list[sym.Expr],
                zero_point: Callable[[Node, int], ir.Value | None]) -> None:
    """The node's result: quantize_linear(acc * mult) with scale 1 and the zero point `zero_point` gives for
    the output's element type (None: none), as onnxruntime requantizes an integer product (acc: FLOAT32)."""
    real = emit(o, BINARY, [acc, mult], {"op": "MUL"}, [dims], [_type(o, FLOAT32, dims)]).results[0]
    one = emit(o, FILL, [], {"bits": _fill_bits(np.array([1.0]), FLOAT32)}, [[]],
               [_type(o, FLOAT32, [])]).results[0]
    ydt = o.result_dtype()
    zp = zero_point(o, ydt)
    y = emit(o, QUANTIZE, [real, one] + ([zp] if zp is not None else []), {"axis": 0, "block_size": 0}, [dims],
             [_type(o, ydt, dims)]).results[0]
    finish(o, [y])


def _qlinear_matmul(o: Node) -> None:
    # inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
    for i, what in ((1, "a_scale"), (6, "y_scale"), (7, "y_zero_point")):
        if o.input(i) is not None:
            _one_value(o, i, what)
    acc, out = _integer_product(o, 0, 3, 2, 5)
    f32 = emit(o, CAST, [acc], {"to": FLOAT32}, [out], [_type(o, FLOAT32, out)]).results[0]

    n = out[-1] if len(o.dims(3)) > 1 else 1
    per_column = _scale_per(o, 4, "b_scale", n, f"[N] = [{sym.to_str(n)}] per column, with a static length", "column")
    # multiplier = a_scale * b_scale / y_scale, as onnxruntime's requantization
    mult = _qlinear_multiplier(o, [n] if per_column else [])
    _requantize(o, f32, mult, out, _qlinear_y_zero_point)


register(OpDef("QLinearMatMul", "qlinear_matmul", _qlinear_matmul, (MATMUL_INTEGER, CAST, BINARY, FILL, QUANTIZE)))


# ---------------------------------------------------------------- ConvInteger and QLinearConv

CONV_INTEGER = register_kernel(Kernel("conv_integer", "kernel_conv_integer", ("group",),
                                      params=(Param("geometry", 4, symbolic=True),), same_type=(0, 2), arity=(4, 4),
                                      labels={1: "W", 2: "x_zero_point", 3: "w_zero_point"}))


def _conv_zero_point(o: Node, i: int, of: int, maps: sym.Expr | None, what: str) -> ir.Value:
    """Input i, the zero point of input `of`: one value (maps None) or one value or [M]; zero when absent."""
    dt = hir.element_dtype(o.input(of))
    if o.input(i) is None:
        return emit(o, FILL, [], {"bits": 0}, [[]], [_type(o, dt, [])]).results[0]
    if hir.element_dtype(o.input(i)) != dt:
        raise ModelError(f"{o.where}: {what}'s element type differs from its input's")
    if maps is None:
        _one_value(o, i, what)
    else:
        _matmul_integer_zero_point(o, i, maps, what)
    return o.input(i)


def _conv_product(o: Node, xi: int, wi: int, zxi: int, zwi: int) -> tuple[ir.Value, list[sym.Expr]]:
    """conv_integer of the node's X and W (input positions) less their zero points: INT32 [N, M, out...]."""
    for i, what in ((xi, "x"), (wi, "w")):
        dt = hir.element_dtype(o.input(i))
        if dt not in QUANT_TYPES:
            o.fail(f"{what} of element type {_name(dt)} is not supported (INT8 and UINT8 are)")
    group, out, params = conv_geometry(o, o.entry.op_type, xi, wi)
    maps = o.dims(wi)[0]
    zx = _conv_zero_point(o, zxi, xi, None, "x_zero_point")
    zw = _conv_zero_point(o, zwi, wi, maps, "w_zero_point")
    new = emit(o, CONV_INTEGER, [o.input(xi), o.input(wi), zx, zw], {"group": group}, [out],
               [_type(o, INT32, out)], params)
    return new.results[0], out


def _conv_integer(o: Node) -> None:
    y, _ = _conv_product(o, 0, 1, 2, 3)
    finish(o, [y])


register(OpDef("ConvInteger", "conv_integer", _conv_integer, (CONV_INTEGER, FILL)))


def _qlinear_conv(o: Node) -> None:
    # inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B (INT32 [M])
    for i, what in ((1, "x_scale"), (6, "y_scale"), (7, "y_zero_point")):
        if o.input(i) is not None:
            _one_value(o, i, what)
    acc, out = _conv_product(o, 0, 3, 2, 5)
    maps = o.dims(3)[0]
    ones = [1] * (len(out) - 2)
    if o.input(8) is not None:
        if hir.element_dtype(o.input(8)) != INT32:
            raise ModelError(f"{o.where}: B must be INT32")
        _same_dims(o, o.dims(8), [maps], "B has shape {0}; it must be {1}")
        b = emit(o, "hipdnn.alias", [o.input(8)], {}, [[maps, *ones]], [_type(o, INT32, [maps, *ones])]).results[0]
        acc = emit(o, BINARY, [acc, b], {"op": "ADD"}, [out], [_type(o, INT32, out)]).results[0]
    f32 = emit(o, CAST, [acc], {"to": FLOAT32}, [out], [_type(o, FLOAT32, out)]).results[0]

    per_channel = _scale_per(o, 4, "w_scale", maps, f"[M] = [{sym.to_str(maps)}] per output channel",
                             "output channel")
    # multiplier = x_scale * w_scale / y_scale, as onnxruntime's requantization (in float)
    mult = _qlinear_multiplier(o, [maps, *ones] if per_channel else [])
    _requantize(o, f32, mult, out, _qlinear_y_zero_point)


register(OpDef("QLinearConv", "qlinear_conv", _qlinear_conv, (CONV_INTEGER, FILL, BINARY, CAST, QUANTIZE)))


# ---------------------------------------------------------------- com.microsoft QLinear* (QOperator format)
# What onnxruntime's quantize_static writes for QuantFormat.QOperator besides QLinearConv/QLinearMatMul:
# each is composed as dequantize_linear of its inputs (per tensor), the float op, and quantize_linear to
# the output's scale and zero point. onnxruntime's CPU kernels compute the same real-valued function with
# their own float rounding (QLinearAdd, e.g., scales each input by scale / y_scale), so a requantized
# value can differ from theirs by one step where a float result lands within an ulp of a rounding tie.

MS = "com.microsoft"


def _per_tensor(o: Node, i: int, what: str, dtype: int) -> ir.Value | None:
    """Input i (a scale or zero point, maybe absent) as one value of rank 0."""
    if o.input(i) is None:
        return None
    _one_value(o, i, what)
    if hir.element_dtype(o.input(i)) != dtype:
        raise ModelError(f"{o.where}: {what} has element type {_name(hir.element_dtype(o.input(i)))}; it must be "
                         f"{dtype}")
    return emit(o, "hipdnn.alias", [o.input(i)], {}, [[]], [_type(o, dtype, [])]).results[0]


def _dequantized(o: Node, x: int, scale: int, zero_point: int) -> ir.Value:
    """Input x (INT8 or UINT8), dequantized per tensor with its scale and zero point (input positions)."""
    xdt = hir.element_dtype(o.input(x))
    if xdt not in QUANT_TYPES:
        o.fail(f"input {x} of element type {_name(xdt)} is not supported (INT8 and UINT8 are)")
    if hir.element_dtype(o.input(scale)) != FLOAT32:
        o.fail("a scale other than FLOAT32 is not supported")
    s = _per_tensor(o, scale, f"input {scale} (a scale)", FLOAT32)
    z = _per_tensor(o, zero_point, f"input {zero_point} (a zero point)", xdt)
    dims = o.dims(x)
    return emit(o, DEQUANTIZE, [o.input(x), s] + ([z] if z is not None else []), {"axis": 0, "block_size": 0},
                [dims], [_type(o, FLOAT32, dims)]).results[0]


def _requantized(o: Node, v: ir.Value, dims: list[sym.Expr], scale: int, zero_point: int) -> None:
    ydt = o.result_dtype()
    if ydt not in QUANT_TYPES:
        o.fail(f"an output of element type {_name(ydt)} is not supported (INT8 and UINT8 are)")
    s = _per_tensor(o, scale, "y_scale", FLOAT32)
    z = _per_tensor(o, zero_point, "y_zero_point", ydt)
    y = emit(o, QUANTIZE, [v, s] + ([z] if z is not None else []), {"axis": 0, "block_size": 0}, [dims],
             [_type(o, ydt, dims)]).results[0]
    finish(o, [y])


def _qlinear_binary(o: Node) -> None:
    # A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point
    a, b = _dequantized(o, 0, 1, 2), _dequantized(o, 3, 4, 5)
    dims = broadcast(o, o.dims(0), o.dims(3))
    op = "ADD" if o.entry.op_type == "QLinearAdd" else "MUL"
    y = emit(o, BINARY, [a, b], {"op": op}, [dims], [_type(o, FLOAT32, dims)]).results[0]
    _requantized(o, y, dims, 6, 7)


register(OpDef("QLinearAdd", "qlinear_add", _qlinear_binary, (DEQUANTIZE, BINARY, QUANTIZE), domains=(MS,)))
register(OpDef("QLinearMul", "qlinear_mul", _qlinear_binary, (DEQUANTIZE, BINARY, QUANTIZE), domains=(MS,)))


def _qlinear_unary(o: Node) -> None:
    # X, X_scale, X_zero_point, Y_scale, Y_zero_point
    x = _dequantized(o, 0, 1, 2)
    dims = o.dims(0)
    if o.entry.op_type == "QLinearSigmoid":
        y = emit(o, UNARY, [x], {"op": "SIGMOID"}, [dims], [_type(o, FLOAT32, dims)]).results[0]
    else:  # QLinearLeakyRelu
        alpha = o.attr_float("alpha", 0.01)
        y = emit(o, ACTIVATION, [x], {"op": "LEAKY_RELU", "alpha": alpha, "beta": 0.0}, [dims],
                 [_type(o, FLOAT32, dims)]).results[0]
    _requantized(o, y, dims, 3, 4)


register(OpDef("QLinearSigmoid", "qlinear_sigmoid", _qlinear_unary, (DEQUANTIZE, UNARY, QUANTIZE), domains=(MS,)))
register(OpDef("QLinearLeakyRelu", "qlinear_leaky_relu", _qlinear_unary, (DEQUANTIZE, ACTIVATION, QUANTIZE),
               domains=(MS,)))


def _qlinear_global_average_pool(o: Node) -> None:
    # X, x_scale, x_zero_point, y_scale, y_zero_point; channels_last 0 (NCHW) or 1 (NHWC)
    x = _dequantized(o, 0, 1, 2)
    d = o.dims(0)
    if not 3 <= len(d) <= 5:
        o.fail(f"QLinearGlobalAveragePool over {len(d) - 2} spatial dims is not supported (1 to 3 are)")
    if o.attr_int("channels_last", 0):
        o.fail("QLinearGlobalAveragePool with channels_last 1 is not supported (NCHW is)")
    r = len(d) - 2
    out = [d[0], d[1], *([1] * r)]
    window = [*d[2:], *([1] * r), *([0] * (2 * r)), *([1] * r)]
    y = emit(o, POOL, [x], {"op": "AVERAGE", "count_include_pad": 0}, [out], [_type(o, FLOAT32, out)],
             params={"window": window}).results[0]
    _requantized(o, y, out, 3, 4)


register(OpDef("QLinearGlobalAveragePool", "qlinear_global_average_pool", _qlinear_global_average_pool,
               (DEQUANTIZE, POOL, QUANTIZE), domains=(MS,)))


def _qlinear_concat(o: Node) -> None:
    # Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input; axis
    n = max(o.inputs) + 1
    if n < 5 or (n - 2) % 3:
        raise ModelError(f"{o.where}: QLinearConcat takes Y_scale, Y_zero_point and triples (X, scale, zero point)")
    xs = list(range(2, n, 3))
    parts = [_dequantized(o, i, i + 1, i + 2) for i in xs]
    ds = [o.dims(i) for i in xs]
    axis = norm_axis(o, o.attr_int("axis"), len(ds[0]))
    for k, dk in enumerate(ds[1:], 1):
        if len(dk) != len(ds[0]):
            raise ModelError(f"{o.where}: input {xs[k]} has rank {len(dk)}, input 2 has rank {len(ds[0])}")
        for j, (a, b) in enumerate(zip(ds[0], dk, strict=True)):
            if j != axis and a != b:
                _same_dims(o, [b], [a], f"input {xs[k]} has dim {j} {{0}}; it must be input 2's {{1}}")
    out = list(ds[0])
    out[axis] = sym.add(*(d[axis] for d in ds))
    y = emit(o, CONCAT, parts, {"axis": axis}, [out], [_type(o, FLOAT32, out)]).results[0]
    _requantized(o, y, out, 0, 1)


register(OpDef("QLinearConcat", "qlinear_concat", _qlinear_concat, (DEQUANTIZE, CONCAT, QUANTIZE), domains=(MS,)))


def _qgemm(o: Node) -> None:
    # A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (INT32, optional), y_scale, y_zero_point (optional:
    # without y_scale the output is FLOAT32); alpha, transA, transB. As onnxruntime's CPU EP: the int32 product
    # plus C, times (alpha * a_scale) * b_scale [/ y_scale], requantized like QLinearMatMul when y_scale is given.
    ta, tb = int(o.attr_int("transA", 0) != 0), int(o.attr_int("transB", 0) != 0)
    alpha = o.attr_float("alpha", 1.0)
    for i, what in ((0, "A"), (3, "B")):
        if len(o.dims(i)) != 2:
            raise ModelError(f"{o.where}: {what} has rank {len(o.dims(i))}; QGemm needs 2")
        if hir.element_dtype(o.input(i)) not in QUANT_TYPES:
            o.fail(f"{what} of element type {_name(hir.element_dtype(o.input(i)))} is not supported "
                   "(INT8 and UINT8 are)")
    _one_value(o, 1, "a_scale")

    def operand(i: int, trans: int) -> tuple[ir.Value, list[sym.Expr]]:
        v, d = o.input(i), o.dims(i)
        if trans:
            d = [d[1], d[0]]
            v = emit(o, TRANSPOSE, [v], {"perm": [1, 0]}, [d], [_type(o, hir.element_dtype(v), d)]).results[0]
        return v, d

    a, da = operand(0, ta)
    b, db = operand(3, tb)
    m, k, n = da[0], da[1], db[1]
    _same_dims(o, [db[0]], [k], "B's inner dim is {0}; it must be A's {1}")
    _matmul_integer_zero_point(o, 2, m, "a_zero_point")
    if o.input(2) is not None:
        _one_value(o, 2, "a_zero_point")
    _matmul_integer_zero_point(o, 5, n, "b_zero_point")
    operands, slots = [a, b], [0, 1]
    for i, slot in ((2, 2), (5, 3)):
        if o.input(i) is not None:
            operands.append(o.input(i))
            slots.append(slot)
    out = [m, n]
    acc = emit(o, MATMUL_INTEGER, operands, {"hipdnn.slots": slots}, [out], [_type(o, INT32, out)]).results[0]
    if o.input(6) is not None:
        if hir.element_dtype(o.input(6)) != INT32:
            raise ModelError(f"{o.where}: C must be INT32")
        broadcast(o, out, o.dims(6))
        acc = emit(o, BINARY, [acc, o.input(6)], {"op": "ADD"}, [out], [_type(o, INT32, out)]).results[0]
    f32 = emit(o, CAST, [acc], {"to": FLOAT32}, [out], [_type(o, FLOAT32, out)]).results[0]

    ds = [n] if _scale_per(o, 4, "b_scale", n, "[N] per column", "column") else []

    def value(i: int, dims: list[sym.Expr]) -> ir.Value:
        if hir.element_dtype(o.input(i)) != FLOAT32:
            o.fail(f"input {i} (a scale) of element type {_name(hir.element_dtype(o.input(i)))} is not supported "
                   "(FLOAT32 is)")
        return emit(o, "hipdnn.alias", [o.input(i)], {}, [dims], [_type(o, FLOAT32, dims)]).results[0]

    def mul(x: ir.Value, y: ir.Value, op: str = "MUL") -> ir.Value:
        return emit(o, BINARY, [x, y], {"op": op}, [ds], [_type(o, FLOAT32, ds)]).results[0]

    scale = value(1, [])
    if alpha != 1.0:
        c = emit(o, FILL, [], {"bits": _fill_bits(np.array([alpha]), FLOAT32)}, [[]], [_type(o, FLOAT32, [])])
        scale = emit(o, BINARY, [c.results[0], scale], {"op": "MUL"}, [[]], [_type(o, FLOAT32, [])]).results[0]
    mult = mul(scale, value(4, ds))
    if o.input(7) is None:  # a float output
        if o.result_dtype() != FLOAT32:
            raise ModelError(f"{o.where}: without y_scale the output must be FLOAT32")
        finish(o, [emit(o, BINARY, [f32, mult], {"op": "MUL"}, [out], [_type(o, FLOAT32, out)]).results[0]])
        return
    _one_value(o, 7, "y_scale")
    mult = mul(mult, value(7, []), "DIV")

    def zero_point(o: Node, ydt: int) -> ir.Value | None:
        if ydt not in QUANT_TYPES:
            o.fail(f"an output of element type {_name(ydt)} is not supported (INT8 and UINT8 are)")
        return _per_tensor(o, 8, "y_zero_point", ydt)

    _requantize(o, f32, mult, out, zero_point)


register(OpDef("QGemm", "qgemm", _qgemm, (TRANSPOSE, MATMUL_INTEGER, BINARY, CAST, FILL, QUANTIZE), domains=(MS,)))
