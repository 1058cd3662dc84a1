"""The vision ops: Conv, ConvTranspose, MaxPool/AveragePool and their global forms, LpPool (on the
pool, unary and binary kernels), BatchNormalization (inference), InstanceNormalization and
GroupNormalization (on the layer_norm and batch_norm kernels), and the parametric activations
(HardSigmoid, HardSwish, LeakyRelu, Elu, Selu, Celu, Softplus, Mish, ThresholdedRelu) and PRelu.
Resize and GridSample, the family's sampling ops, are in ops/resize.py.

Conv and pooling pass their window geometry (strides, pads, dilations, kernel shape) as a symbolic
parameter array: with auto_pad SAME on dynamic spatial dims the pads depend on the input's size. The
output sizes are floor((in + pads - dilated kernel) / stride) + 1 (ceil for ceil_mode), with the
numerator checked non-negative, so truncating division is floor division. All kernels are ABI 1.3.
"""

from __future__ import annotations

import numpy as np
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from .mask import FILL, _fill_bits
from .node import Node, broadcast, emit, finish, replace
from .onnx import BINARY, CAST, EXPAND, LAYER_NORM, REDUCE, UNARY
from .registry import Kernel, OpDef, Param, register, register_kernel

CONV = register_kernel(Kernel("conv", "kernel_conv", ("group",), params=(Param("geometry", 3, symbolic=True),),
                              same_type=None, arity=(3, 3)))
POOL = register_kernel(Kernel("pooling", "kernel_pool", ("op", "count_include_pad"), op_enum="pool_op",
                              params=(Param("window", 1, symbolic=True),)))
MAX_POOL_INDICES = register_kernel(Kernel("max_pool_indices", "kernel_max_pool_indices", ("storage_order",),
                                          params=(Param("window", 1, symbolic=True),), results=(2, 2)))
BATCH_NORM = register_kernel(Kernel("batch_norm", "kernel_batch_norm", (), ("epsilon",), same_type=None,
                                    arity=(5, 5)))
ACTIVATION = register_kernel(Kernel("activation", "kernel_activation", ("op",), ("alpha", "beta"),
                                    op_enum="activation_op"))

FLOAT32, UINT8, INT8, INT64 = 1, 2, 3, 7

# ---------------------------------------------------------------- window geometry (Conv and pooling)


def _spatial_rank(o: Node, what: str, xi: int = 0) -> int:
    d = o.dims(xi)
    if not 3 <= len(d) <= 5:
        o.fail(f"{what} over {len(d) - 2} spatial dims is not supported (1 to 3 are); the input has dims "
               f"[{', '.join(sym.to_str(x) for x in d)}]")
    return len(d) - 2


def _ints_attr(o: Node, name: str, rank: int, default: int) -> list[int]:
    vals = o.attr_ints(name)
    if vals is None:
        return [default] * rank
    if len(vals) != rank:
        raise ModelError(f"{o.where}: {name} has {len(vals)} entries for {rank} spatial dims")
    return list(vals)


def _window(o: Node, spatial: list[sym.Expr], kernel: list[sym.Expr], ceil_mode: bool = False):
    """Output sizes, pads at the start and at the end, strides and dilations of a Conv/pool window."""
    r = len(spatial)
    strides = _ints_attr(o, "strides", r, 1)
    dilations = _ints_attr(o, "dilations", r, 1)
    for name, vals in (("strides", strides), ("dilations", dilations)):
        if any(v < 1 for v in vals):
            raise ModelError(f"{o.where}: {name} {vals} must be >= 1")
    auto_pad = hir.get_str(o.op, "onnx.auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise ModelError(f"{o.where}: auto_pad '{auto_pad}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    spans = [sym.add(sym.mul(sym.add(k, -1), d), 1) for k, d in zip(kernel, dilations, strict=True)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        outs = [sym.ceildiv(x, s) for x, s in zip(spatial, strides, strict=True)]
        begins, ends = [], []
        for x, out, s, span in zip(spatial, outs, strides, spans, strict=True):
            total = sym.maximum(0, sym.sub(sym.add(sym.mul(sym.add(out, -1), s), span), x))
            half = sym.div(total, 2)
            rest = sym.sub(total, half)
            begins.append(half if auto_pad == "SAME_UPPER" else rest)
            ends.append(rest if auto_pad == "SAME_UPPER" else half)
        return outs, begins, ends, strides, dilations
    pads = [0] * (2 * r) if auto_pad == "VALID" else _ints_attr(o, "pads", 2 * r, 0)
    if any(p < 0 for p in pads):
        raise ModelError(f"{o.where}: pads {pads} must be >= 0")
    begins, ends = pads[:r], pads[r:]
    outs = []
    for i, (x, s, span) in enumerate(zip(spatial, strides, spans, strict=True)):
        num = sym.sub(sym.add(x, begins[i], ends[i]), span)
        if not sym.nonnegative(num):
            text = checks.Text(sym.add(x, begins[i], ends[i]), span)
            o.require("le", [text.values[1], text.values[0]],
                      f"spatial dim {i} is {{1}} with its pads, smaller than the kernel's extent {{0}}")
        if ceil_mode:
            out = sym.add(sym.ceildiv(num, s), 1)
            # a last window that would start past the input and its start pad is dropped
            last = sym.sub(sym.mul(sym.add(out, -1), s), sym.add(x, begins[i]))
            out = sym.select_negative(last, out, sym.add(out, -1))
        else:
            out = sym.add(sym.div(num, s), 1)
        outs.append(out)
    return outs, begins, ends, strides, dilations


# ---------------------------------------------------------------- Conv


def _weights_and_group(o: Node, what: str, xi: int, wi: int) -> tuple[int, list, list, int, list]:
    """Conv's and ConvTranspose's shared checks of X (input xi) and W (input wi): the spatial rank, X's and W's
    dims, the group and the kernel's spatial dims (kernel_shape where W is fed at run time)."""
    r = _spatial_rank(o, what, xi)
    x, w = o.dims(xi), o.dims(wi)
    if len(w) != len(x):
        raise ModelError(f"{o.where}: W has rank {len(w)} but X has rank {len(x)}; they must be equal")
    group = o.attr_int("group", 1)
    if group < 1:
        raise ModelError(f"{o.where}: group {group} must be >= 1")
    kernel = list(w[2:])
    shape = o.attr_ints("kernel_shape")
    if shape is not None:
        if len(shape) != r:
            raise ModelError(f"{o.where}: kernel_shape {list(shape)} must have one entry per spatial dim ({r})")
        for i, (k, ks) in enumerate(zip(kernel, shape, strict=True)):
            if isinstance(k, int) and k != ks:
                raise ModelError(f"{o.where}: kernel_shape {list(shape)} differs from W's spatial dims")
            if not isinstance(k, int):  # W fed at run time: it must have the declared kernel shape
                text = checks.Text(k, ks)
                o.require("eq", text.values, f"W's spatial dim {i} is {{0}} but kernel_shape says {{1}}")
                kernel[i] = ks
    return r, x, w, group, kernel


def conv_geometry(o: Node, what: str, xi: int = 0, wi: int = 1) -> tuple[int, list[sym.Expr], dict]:
    """Conv's (and ConvInteger's, QLinearConv's) checks of X (input xi) and W (input wi): the group, the
    output dims [N, M, out...] and the geometry parameter (strides, pads at the start, dilations)."""
    r, x, w, group, kernel = _weights_and_group(o, what, xi, wi)
    text = checks.Text(x[1], sym.mul(w[1], group))
    o.require("eq", text.values, f"X has {{0}} channels but W's dim 1 times group {group} is {{1}}")
    if isinstance(w[0], int) and w[0] % group:
        raise ModelError(f"{o.where}: W has {w[0]} output maps, not divisible by group {group}")
    outs, begins, _, strides, dilations = _window(o, x[2:], kernel)
    return group, [x[0], w[0], *outs], {"geometry": [*strides, *begins, *dilations]}


def _conv(o: Node) -> None:
    group, out, params = conv_geometry(o, "Conv")
    w = o.dims(1)
    bias = o.input(2)
    if bias is None:
        dtype = o.result_dtype()
        with o.op.context:
            t = ir.Type.parse(hir.tensor_type_str(dtype, [w[0]]))
        bias = emit(o, FILL, [], {"bits": 0}, [[w[0]]], [t]).results[0]
    elif len(o.dims(2)) != 1:
        raise ModelError(f"{o.where}: B has rank {len(o.dims(2))}; it must be 1-D")
    replace(o, CONV, [o.input(0), o.input(1), bias], {"group": group}, [out], params=params)


register(OpDef("Conv", "conv", _conv, (CONV, FILL)))

# ---------------------------------------------------------------- pooling


def _pool(o: Node) -> None:
    is_max = o.kind == "max_pool"
    r = _spatial_rank(o, o.entry.op_type)
    x = o.dims(0)
    if is_max and o.attr_int("storage_order", 0) not in (0, 1):
        raise ModelError(f"{o.where}: storage_order must be 0 or 1")
    kernel = o.attr_ints("kernel_shape")
    if kernel is None or len(kernel) != r:
        raise ModelError(f"{o.where}: kernel_shape {kernel} must have one entry per spatial dim ({r})")
    if any(k < 1 for k in kernel):
        raise ModelError(f"{o.where}: kernel_shape {list(kernel)} must be >= 1")
    ceil_mode = o.attr_int("ceil_mode", 0) != 0
    outs, begins, ends, strides, dilations = _window(o, x[2:], list(kernel), ceil_mode)
    op = "MAX" if is_max else "AVERAGE"
    include_pad = int(o.attr_int("count_include_pad", 0) != 0)
    out = [x[0], x[1], *outs]
    window = {"window": [*kernel, *strides, *begins, *ends, *dilations]}
    dtype = hir.element_dtype(o.input(0))
    roles = hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))
    if is_max and 1 in roles:  # the Indices output: the max_pool_indices kernel
        _max_pool_indices(o, x, out, dtype, roles, window)
        return
    if is_max and dtype in (INT8, UINT8):  # quantized MaxPool (QOperator models): exact through float32
        with o.op.context:
            f32 = [ir.Type.parse(hir.tensor_type_str(FLOAT32, d)) for d in (x, out)]
            back = ir.Type.parse(hir.tensor_type_str(dtype, out))
        v = emit(o, CAST, [o.input(0)], {"to": FLOAT32}, [x], [f32[0]]).results[0]
        v = emit(o, POOL, [v], {"op": op, "count_include_pad": include_pad}, [out], [f32[1]], window).results[0]
        finish(o, [emit(o, CAST, [v], {"to": dtype}, [out], [back]).results[0]])
        return
    replace(o, POOL, [o.input(0)], {"op": op, "count_include_pad": include_pad}, [out], params=window)


def _max_pool_indices(o: Node, x: list[sym.Expr], out: list[sym.Expr], dtype: int, roles: list[int],
                      window: dict) -> None:
    """MaxPool with its Indices output (INT64, each maximum's flat index into X in storage_order); an
    INT8/UINT8 input pools through float32 as above."""
    v = o.input(0)
    pooled = dtype
    if dtype in (INT8, UINT8):
        with o.op.context:
            f32 = ir.Type.parse(hir.tensor_type_str(FLOAT32, x))
        v = emit(o, CAST, [v], {"to": FLOAT32}, [x], [f32]).results[0]
        pooled = FLOAT32
    with o.op.context:
        types = [ir.Type.parse(hir.tensor_type_str(pooled, out)), ir.Type.parse(hir.tensor_type_str(INT64, out))]
    new = emit(o, MAX_POOL_INDICES, [v], {"storage_order": o.attr_int("storage_order", 0)}, [out, out], types,
               window)
    y, indices = new.results
    if pooled != dtype:
        with o.op.context:
            back = ir.Type.parse(hir.tensor_type_str(dtype, out))
        y = emit(o, CAST, [y], {"to": dtype}, [out], [back]).results[0]
    finish(o, [[y, indices][r] for r in roles])


def _global_pool(o: Node) -> None:
    r = _spatial_rank(o, o.entry.op_type)
    x = o.dims(0)
    window = [*x[2:], *([1] * r), *([0] * (2 * r)), *([1] * r)]
    op = "MAX" if o.kind == "global_max_pool" else "AVERAGE"
    replace(o, POOL, [o.input(0)], {"op": op, "count_include_pad": 0}, [[x[0], x[1], *([1] * r)]],
            params={"window": window})


register(OpDef("MaxPool", "max_pool", _pool, (POOL, CAST, MAX_POOL_INDICES)))
register(OpDef("AveragePool", "average_pool", _pool, (POOL,)))
register(OpDef("GlobalMaxPool", "global_max_pool", _global_pool, (POOL,)))
register(OpDef("GlobalAveragePool", "global_average_pool", _global_pool, (POOL,)))

# ---------------------------------------------------------------- LpPool
# (sum over the window of |x|^p)^(1/p) on existing kernels: pow(|x|, p), an average pool that counts
# the pads (without ceil_mode every window lies inside X and its pads, so it divides by the kernel
# volume), times that volume, then pow(., 1/p).


def _lp_pool(o: Node) -> None:
    r = _spatial_rank(o, "LpPool")
    x = o.dims(0)
    kernel = o.attr_ints("kernel_shape")
    if kernel is None or len(kernel) != r:
        raise ModelError(f"{o.where}: kernel_shape {kernel} must have one entry per spatial dim ({r})")
    if any(k < 1 for k in kernel):
        raise ModelError(f"{o.where}: kernel_shape {list(kernel)} must be >= 1")
    if o.attr_int("ceil_mode", 0):
        o.fail("LpPool with ceil_mode is not supported")
    p = o.attr_int("p", 2)
    if p < 1:
        raise ModelError(f"{o.where}: p {p} must be >= 1")
    outs, begins, ends, strides, dilations = _window(o, x[2:], list(kernel))
    t = o.op.results[0].type
    out_dims = [x[0], x[1], *outs]
    xt = o.input(0).type
    powed = emit(o, UNARY, [o.input(0)], {"op": "ABS"}, [x], [xt]).results[0]
    if p != 1:
        powed = emit(o, BINARY, [powed, _fill(o, float(p), [])], {"op": "POW"}, [x], [xt]).results[0]
    mean = emit(o, POOL, [powed], {"op": "AVERAGE", "count_include_pad": 1}, [out_dims], [t],
                params={"window": [*kernel, *strides, *begins, *ends, *dilations]}).results[0]
    volume = int(np.prod(kernel))
    total = emit(o, BINARY, [mean, _fill(o, float(volume), [])], {"op": "MUL"}, [out_dims], [t]).results[0]
    if p != 1:
        total = emit(o, BINARY, [total, _fill(o, 1.0 / p, [])], {"op": "POW"}, [out_dims], [t]).results[0]
    finish(o, [total])


register(OpDef("LpPool", "lp_pool", _lp_pool, (UNARY, BINARY, POOL, FILL)))

# ---------------------------------------------------------------- BatchNormalization


def _batch_norm(o: Node) -> None:
    x = o.dims(0)
    if len(x) < 2:
        raise ModelError(f"{o.where}: X has rank {len(x)}; BatchNormalization needs at least 2")
    for i, what in ((1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")):
        d = o.dims(i)
        if len(d) != 1:
            raise ModelError(f"{o.where}: {what} has rank {len(d)}; it must be 1-D [C]")
        text = checks.Text(d[0], x[1])
        o.require("eq", text.values, f"{what} has {{0}} entries but X has {{1}} channels")
    epsilon = o.attr_float("epsilon", 1e-5)
    roles = hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))
    if o.attr_int("training_mode", 0):
        _batch_norm_training(o, roles, epsilon)
        return
    if roles != [0]:
        raise ModelError(f"{o.where}: the running_mean/running_var outputs are computed in training mode only "
                         "(training_mode=1)")
    replace(o, BATCH_NORM, [o.input(i) for i in range(5)], {"epsilon": epsilon}, [x])


def _batch_norm_training(o: Node, roles: list[int], epsilon: float) -> None:
    """Training mode: X normalized with its own per-channel mean and (population) variance over every
    axis but 1; running_mean/running_var = input * momentum + current * (1 - momentum)."""
    x = o.dims(0)
    c = [x[1]]
    kept = [1, x[1]] + [1] * (len(x) - 2)
    axes = [0] + list(range(2, len(x)))
    dtype = hir.element_dtype(o.input(0))
    if dtype != o.result_dtype() or any(hir.element_dtype(o.input(i)) != dtype for i in (3, 4)):
        o.fail("BatchNormalization in training mode needs X, input_mean and input_var of one element type")

    def call(op, operands: list[ir.Value], attrs: dict, dims: list[sym.Expr]) -> ir.Value:
        with o.op.context:
            t = ir.Type.parse(hir.tensor_type_str(dtype, dims))
        return emit(o, op, operands, attrs, [dims], [t]).results[0]

    mean = call(REDUCE, [o.input(0)], {"op": "MEAN", "axes": axes}, kept)
    dev = call(BINARY, [o.input(0), mean], {"op": "SUB"}, x)
    var = call(REDUCE, [call(BINARY, [dev, dev], {"op": "MUL"}, x)], {"op": "MEAN", "axes": axes}, c)
    mean = call("hipdnn.alias", [mean], {}, c)
    out = {0: call(BATCH_NORM, [o.input(0), o.input(1), o.input(2), mean, var], {"epsilon": epsilon}, x)}
    momentum = o.attr_float("momentum", 0.9)
    for role, running, current in ((1, o.input(3), mean), (2, o.input(4), var)):
        if role in roles:
            kept_part = call(BINARY, [running, _fill(o, momentum, [])], {"op": "MUL"}, c)
            new_part = call(BINARY, [current, _fill(o, 1.0 - momentum, [])], {"op": "MUL"}, c)
            out[role] = call(BINARY, [kept_part, new_part], {"op": "ADD"}, c)
    finish(o, [out[r] for r in roles])


register(OpDef("BatchNormalization", "batch_norm", _batch_norm, (BATCH_NORM, REDUCE, BINARY, FILL)))

# ---------------------------------------------------------------- activations

# op type -> (enum key, alpha's default, beta's default); None: the op has no such attribute
_ACTIVATIONS = {
    "HardSigmoid": ("HARD_SIGMOID", 0.2, 0.5),
    "HardSwish": ("HARD_SWISH", None, None),
    "LeakyRelu": ("LEAKY_RELU", 0.01, None),
    "Elu": ("ELU", 1.0, None),
    "Selu": ("SELU", 1.67326319217681884765625, 1.05070102214813232421875),
    "Celu": ("CELU", 1.0, None),
    "Softplus": ("SOFTPLUS", None, None),
    "Mish": ("MISH", None, None),
    "ThresholdedRelu": ("THRESHOLDED_RELU", 1.0, None),
}


def _activation(o: Node) -> None:
    key, alpha, beta = _ACTIVATIONS[o.entry.op_type]
    a = o.attr_float("alpha", alpha) if alpha is not None else 0.0
    # Selu's second parameter is "gamma"
    b = o.attr_float("gamma" if key == "SELU" else "beta", beta) if beta is not None else 0.0
    if key == "CELU" and a == 0.0:
        raise ModelError(f"{o.where}: Celu's alpha must not be 0")
    replace(o, ACTIVATION, [o.input(0)], {"op": key, "alpha": a, "beta": b}, [o.dims(0)])


for _op_type, (_key, _, _) in _ACTIVATIONS.items():
    register(OpDef(_op_type, _key.lower(), _activation, (ACTIVATION,), enum_key=_key))


def _prelu(o: Node) -> None:
    # relu(x) + slope * (x - relu(x)): x - relu(x) is min(x, 0) exactly, so positive x passes unchanged
    x, d = o.input(0), o.dims(0)
    out_dims = broadcast(o, d, o.dims(1))  # ONNX: the slope broadcasts to X (unidirectionally)
    t = o.op.results[0].type
    pos = emit(o, UNARY, [x], {"op": "RELU"}, [d], [t]).results[0]
    neg = emit(o, BINARY, [x, pos], {"op": "SUB"}, [d], [t]).results[0]
    scaled = emit(o, BINARY, [neg, o.input(1)], {"op": "MUL"}, [out_dims], [t]).results[0]
    finish(o, [emit(o, BINARY, [pos, scaled], {"op": "ADD"}, [out_dims], [t]).results[0]])


register(OpDef("PRelu", "prelu", _prelu, (UNARY, BINARY)))

# ---------------------------------------------------------------- InstanceNormalization, GroupNormalization
# Both normalize groups of contiguous elements (per image and channel, or per image and channel
# group): layer_norm over the trailing dims of a view [N, groups, rest] with a scale of one 1, then
# batch_norm with mean 0 and variance 1 (epsilon 0) applies the per-channel scale and bias.


def _fill(o: Node, value: float, dims: list[sym.Expr]) -> ir.Value:
    dtype = o.result_dtype()
    with o.op.context:
        t = ir.Type.parse(hir.tensor_type_str(dtype, dims))
    bits = _fill_bits(np.array([value], np.float32), dtype)
    return emit(o, FILL, [], {"bits": bits}, [dims], [t]).results[0]


def _channel_affine(o: Node, y: ir.Value, dims: list[sym.Expr], scale: ir.Value, bias: ir.Value) -> ir.Value:
    c = [dims[1]]
    zeros, ones = _fill(o, 0.0, c), _fill(o, 1.0, c)
    return emit(o, BATCH_NORM, [y, scale, bias, zeros, ones], {"epsilon": 0.0}, [dims],
                [o.op.results[0].type]).results[0]


def _grouped_norm(o: Node, groups: sym.Expr, epsilon: float) -> ir.Value:
    x = o.dims(0)
    t = o.op.results[0].type
    view = [x[0], groups, sym.div(sym.product(x[1:]), groups)]
    text = checks.Text(sym.product(x[2:]))
    o.require("le", [1, text.values[0]], "the input has {0} spatial elements; normalization needs at least 1")
    v = emit(o, "hipdnn.alias", [o.input(0)], {}, [view], [t]).results[0]
    n = emit(o, LAYER_NORM, [v, _fill(o, 1.0, [1])], {"axis": 2, "epsilon": epsilon}, [view], [t]).results[0]
    return emit(o, "hipdnn.alias", [n], {}, [x], [t]).results[0]


def _channel_vector(o: Node, i: int, what: str, channels: sym.Expr) -> None:
    d = o.dims(i)
    if len(d) != 1:
        raise ModelError(f"{o.where}: {what} has rank {len(d)}; it must be 1-D")
    text = checks.Text(d[0], channels)
    o.require("eq", text.values, f"{what} has {{0}} entries but X has {{1}} channels")


def _instance_norm(o: Node) -> None:
    x = o.dims(0)
    if len(x) < 3:
        raise ModelError(f"{o.where}: X has rank {len(x)}; InstanceNormalization needs at least 3")
    for i, what in ((1, "scale"), (2, "B")):
        _channel_vector(o, i, what, x[1])
    y = _grouped_norm(o, x[1], o.attr_float("epsilon", 1e-5))
    finish(o, [_channel_affine(o, y, x, o.input(1), o.input(2))])


register(OpDef("InstanceNormalization", "instance_norm", _instance_norm, (LAYER_NORM, BATCH_NORM, FILL)))


def _group_norm(o: Node) -> None:
    x = o.dims(0)
    if len(x) < 3:
        raise ModelError(f"{o.where}: X has rank {len(x)}; GroupNormalization needs at least 3")
    groups = o.attr_int("num_groups")
    if groups is None or groups < 1:
        raise ModelError(f"{o.where}: num_groups must be given and >= 1")
    text = checks.Text(sym.mul(sym.div(x[1], groups), groups), x[1])
    o.require("eq", text.values, f"X has {{1}} channels, not divisible by num_groups {groups}")
    if hir.element_dtype(o.input(1)) != o.result_dtype():
        o.fail("GroupNormalization with a scale of another element type than X is not supported")
    sd = o.dims(1)
    if len(sd) != 1:
        raise ModelError(f"{o.where}: scale has rank {len(sd)}; it must be 1-D")
    scale, bias = o.input(1), o.input(2)
    # opset 18 takes scale and bias per group, opset 21 per channel (the same when groups == channels)
    if sd[0] == groups and not (isinstance(x[1], int) and x[1] == groups):
        scale, bias = (_per_channel(o, i, groups, x[1]) for i in (1, 2))
    else:
        for i, what in ((1, "scale"), (2, "bias")):
            _channel_vector(o, i, what, x[1])
    y = _grouped_norm(o, groups, o.attr_float("epsilon", 1e-5))
    finish(o, [_channel_affine(o, y, x, scale, bias)])


def _per_channel(o: Node, i: int, groups: int, channels: sym.Expr) -> ir.Value:
    """A per-group vector [G] repeated for each channel of its group: [G] -> [G, 1] -> [G, C/G] -> [C]."""
    d = o.dims(i)
    if d != [groups]:
        raise ModelError(f"{o.where}: input {i} has dims {d}; per-group parameters must be [{groups}]")
    t = o.input(i).type
    col = emit(o, "hipdnn.alias", [o.input(i)], {}, [[groups, 1]], [t]).results[0]
    wide = emit(o, EXPAND, [col], {}, [[groups, sym.div(channels, groups)]], [t]).results[0]
    return emit(o, "hipdnn.alias", [wide], {}, [[channels]], [t]).results[0]


register(OpDef("GroupNormalization", "group_norm", _group_norm, (LAYER_NORM, BATCH_NORM, FILL, EXPAND)))

# ---------------------------------------------------------------- ConvTranspose
# Output position o of spatial dim i takes input position p through kernel tap k when
# o = p * stride - pad_begin + k * dilation; the output size is stride * (in - 1) + output_padding +
# dilated kernel - pads, or output_shape (the pads then follow from it, as the ONNX spec says: SAME_UPPER
# puts the smaller half at the start; onnxruntime clamps a negative total padding to 0).

CONV_TRANSPOSE = register_kernel(Kernel("conv_transpose", "kernel_conv_transpose", ("group",),
                                        params=(Param("geometry", 3, symbolic=True),), same_type=None,
                                        arity=(3, 3)))


def _half(total: sym.Expr) -> sym.Expr:
    """total / 2 for total >= 0."""
    return total // 2 if isinstance(total, int) else sym.div(total, 2)


def _conv_transpose(o: Node) -> None:
    r, x, w, group, kernel = _weights_and_group(o, "ConvTranspose", 0, 1)
    text = checks.Text(x[1], w[0])
    o.require("eq", text.values, "X has {0} channels but W's dim 0 is {1}; they must be equal")
    if isinstance(w[0], int) and w[0] % group:
        raise ModelError(f"{o.where}: W has {w[0]} input channels, not divisible by group {group}")
    maps = sym.mul(w[1], group)
    strides = _ints_attr(o, "strides", r, 1)
    dilations = _ints_attr(o, "dilations", r, 1)
    out_pad = _ints_attr(o, "output_padding", r, 0)
    for name, vals in (("strides", strides), ("dilations", dilations)):
        if any(v < 1 for v in vals):
            raise ModelError(f"{o.where}: {name} {vals} must be >= 1")
    if any(p < 0 for p in out_pad):
        raise ModelError(f"{o.where}: output_padding {out_pad} must be >= 0")
    auto_pad = hir.get_str(o.op, "onnx.auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise ModelError(f"{o.where}: auto_pad '{auto_pad}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    spans = [sym.add(sym.mul(sym.add(k, -1), d), 1) for k, d in zip(kernel, dilations, strict=True)]
    full = [sym.add(sym.mul(sym.add(xi, -1), s), op, span)  # the output size without pads
            for xi, s, op, span in zip(x[2:], strides, out_pad, spans, strict=True)]
    out_shape = o.attr_ints("output_shape")
    if out_shape is not None:
        out_shape = list(out_shape)
        if len(out_shape) == r + 2:  # some exporters give [N, C, spatial...]
            out_shape = out_shape[2:]
        if len(out_shape) != r or any(v < 0 for v in out_shape):
            raise ModelError(f"{o.where}: output_shape {out_shape} must have {r} entries >= 0")
    if out_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # SAME: in * stride, or the unpadded size where that is smaller (onnxruntime and ONNX's shape inference)
        outs = out_shape if out_shape is not None else [sym.minimum(f, sym.mul(xi, s))
                                                         for f, xi, s in zip(full, x[2:], strides, strict=True)]
        begins = []
        for f, out in zip(full, outs, strict=True):
            # a larger output than the unpadded one (up to stride - 1, as output_padding) only extends the end
            total = sym.maximum(0, sym.sub(f, out))
            if auto_pad == "SAME_UPPER":
                begins.append(_half(total))
            else:
                begins.append(sym.sub(total, _half(total)))
    else:
        pads = [0] * (2 * r) if auto_pad == "VALID" else _ints_attr(o, "pads", 2 * r, 0)
        if any(p < 0 for p in pads):
            raise ModelError(f"{o.where}: pads {pads} must be >= 0")
        begins = pads[:r]
        outs = [sym.sub(f, sym.add(b, e)) for f, b, e in zip(full, pads[:r], pads[r:], strict=True)]
    bias = o.input(2)
    if bias is None:
        dtype = o.result_dtype()
        with o.op.context:
            t = ir.Type.parse(hir.tensor_type_str(dtype, [maps]))
        bias = emit(o, FILL, [], {"bits": 0}, [[maps]], [t]).results[0]
    elif len(o.dims(2)) != 1:
        raise ModelError(f"{o.where}: B has rank {len(o.dims(2))}; it must be 1-D")
    else:
        text = checks.Text(o.dims(2)[0], maps)
        o.require("eq", text.values, "B has {0} entries but the output has {1} maps")
    replace(o, CONV_TRANSPOSE, [o.input(0), o.input(1), bias], {"group": group}, [[x[0], maps, *outs]],
            params={"geometry": [*strides, *begins, *dilations]})


register(OpDef("ConvTranspose", "conv_transpose", _conv_transpose, (CONV_TRANSPOSE, FILL)))
