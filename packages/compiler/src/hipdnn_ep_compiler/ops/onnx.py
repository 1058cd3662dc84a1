"""The ONNX ops (ai.onnx and com.microsoft) the compiler supports: their kernels and entries.

Each op is one `OpDef` (ops/registry.py) next to its shape rule; each kernel-level op one `Kernel`.
To add an op, see "Adding an op" in the package README.
"""

from __future__ import annotations

import numpy as np
from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError
from . import host_axes
from .node import (
    HOST_INT_TYPES,
    Node,
    all_host,
    broadcast,
    emit,
    finish,
    host_elementwise,
    host_tensor,
    norm_axis,
    replace,
    show,
)
from .registry import Kernel, OpDef, Param, register, register_kernel

# ---------------------------------------------------------------- kernel-level ops

BINARY = register_kernel(Kernel("binary", "kernel_binary", ("op",), op_enum="binary_op", same_type=None, arity=(2, 2)))
UNARY = register_kernel(Kernel("unary", "kernel_unary", ("op",), op_enum="unary_op"))
CAST = register_kernel(Kernel("cast", "kernel_cast", int_attrs=("saturate",), defaults={"saturate": 1}))
WHERE = register_kernel(Kernel("where", "kernel_where", same_type=(1, 2), labels={0: "the condition"}, arity=(3, 3)))
MATMUL = register_kernel(Kernel("matmul", "kernel_matmul", same_type=None, arity=(2, 2)))
GEMM = register_kernel(Kernel("gemm", "kernel_gemm", ("trans_a", "trans_b"), ("alpha", "beta"), same_type=None,
                              arity=(2, 3)))
SOFTMAX = register_kernel(Kernel("softmax", "kernel_softmax", ("axis",)))
LAYER_NORM = register_kernel(Kernel("layer_norm", "kernel_layer_norm", ("axis",), ("epsilon",), same_type=None,
                                    arity=(2, 3)))
REDUCE = register_kernel(Kernel("reduce", "kernel_reduce", ("op",), op_enum="reduce_op",
                                params=(Param("axes", 1),)))
TRANSPOSE = register_kernel(Kernel("transpose", "kernel_transpose", params=(Param("perm", 1),)))
CONCAT = register_kernel(Kernel("concat", "kernel_concat", ("axis",), same_type=None, arity=(1, None)))
SLICE = register_kernel(Kernel("slice", "kernel_slice", params=(Param("starts", 1, symbolic=True), Param("steps", 2))))
# Slice with its steps fed as a graph input: both parameter arrays written at run time (ops/host_axes.py).
SLICE_STEPS = register_kernel(Kernel("slice_steps", "kernel_slice", params=(
    Param("starts", 1, symbolic=True), Param("steps", 2, symbolic=True)), shown="slice"))
GATHER = register_kernel(Kernel("gather", "kernel_gather", ("axis",), labels={1: "indices"}, arity=(2, 2)))
EXPAND = register_kernel(Kernel("expand", "kernel_expand"))

# ---------------------------------------------------------------- ONNX ops, each with its shape rule

def _host_equal(a: sym.Expr, b: sym.Expr) -> sym.Expr:
    if a == b:
        return 1
    diff = sym.sub(a, b)
    # decided when the difference has a known sign (a dim against -1): no select left for later shapes
    if sym.nonnegative(sym.add(diff, -1)) or sym.nonnegative(sym.sub(-1, diff)):
        return 0
    return sym.select_zero(diff, 1, 0)


def _host_less(a: sym.Expr, b: sym.Expr) -> sym.Expr:
    """a < b as 1 or 0; decided when the difference has a known sign."""
    diff = sym.sub(a, b)
    if sym.nonnegative(diff):
        return 0
    if sym.nonnegative(sym.sub(-1, diff)):
        return 1
    return sym.select_negative(diff, 1, 0)


def _truth(a: sym.Expr) -> sym.Expr:
    """A host boolean as 1 or 0 (a host value of any nonzero int is true)."""
    return sym.select_zero(a, 0, 1)


# Comparisons of host ints and logic over host booleans (shape code: the expanded Attention body's
# Where(And(Not(Equal(Hq, Hkv)), Equal(Mod(Hq, Hkv), 0)), Hq / Hkv, 1)) fold to host booleans (1 or 0).
_HOST_COMPARE = {
    "equal": _host_equal,
    "less": _host_less,
    "greater": lambda a, b: _host_less(b, a),
    "less_or_equal": lambda a, b: sym.sub(1, _host_less(b, a)),
    "greater_or_equal": lambda a, b: sym.sub(1, _host_less(a, b)),
}
_HOST_LOGIC = {
    "and": lambda a, b: sym.select_zero(a, 0, _truth(b)),
    "or": lambda a, b: sym.select_zero(a, _truth(b), 1),
    "xor": lambda a, b: sym.select_zero(a, _truth(b), sym.sub(1, _truth(b))),
}


def _binary(o: Node) -> None:
    if o.kind in ("add", "sub", "mul", "div") and all_host(o) and o.result_dtype() in HOST_INT_TYPES:
        fn = {"add": sym.add, "sub": sym.sub, "mul": sym.mul, "div": sym.div}[o.kind]
        if host_elementwise(o, fn):
            return
    # comparisons of shape values (torch's expand: Where(Equal(shape, -1), 1, shape)) are host booleans
    if o.kind in _HOST_COMPARE and all_host(o) and hir.element_dtype(o.input(0)) in HOST_INT_TYPES:
        if host_elementwise(o, _HOST_COMPARE[o.kind]):
            return
    if o.kind in _HOST_LOGIC and all_host(o):
        if host_elementwise(o, _HOST_LOGIC[o.kind]):
            return
    replace(o, BINARY, [o.input(0), o.input(1)], {"op": o.entry.enum_key},
             [broadcast(o, o.dims(0), o.dims(1))])


for _op_type, _key in (("Add", "ADD"), ("Sub", "SUB"), ("Mul", "MUL"), ("Div", "DIV"),
                      ("Equal", "EQUAL"), ("Less", "LESS"), ("Greater", "GREATER")):
    register(OpDef(_op_type, _key.lower(), _binary, (BINARY,), enum_key=_key))


def _silu_mul(o: Node) -> None:
    """fuse-silu-mul's Mul(Mul(x, Sigmoid(x)), y): one binary call, x * sigmoid(x) * y, broadcast as Mul."""
    replace(o, BINARY, [o.input(0), o.input(1)], {"op": "SILU_MUL"}, [broadcast(o, o.dims(0), o.dims(1))])


# No ONNX op and no domain (a model cannot name it): only fuse-silu-mul writes it.
register(OpDef("SiluMul", "silu_mul", _silu_mul, (BINARY,), domains=(), enum_key="SILU_MUL"))

_FLOAT_TYPES = (1, 10, 11)  # FLOAT32, FLOAT16, FLOAT64
_FLOAT64 = 11


def _pow(o: Node) -> None:
    """ONNX Pow: the exponent (T1) may have another type than the base (T); the kernel takes one type.
    onnxruntime's CPU EP computes pow in double and converts the result to T. So: an exponent of another
    type is cast to the base's where that is exact (a float base with an integer exponent, whose finite
    results need small exponents; an integer base with an integer exponent of another width); an integer
    base with a floating-point exponent (2 ** 0.5 truncates to 1) computes in FLOAT64 and is cast back
    (truncated toward zero, as onnxruntime's conversion)."""
    base, exponent = o.input(0), o.input(1)
    bt, et = hir.element_dtype(base), hir.element_dtype(exponent)
    dims = broadcast(o, o.dims(0), o.dims(1))
    if bt != et and bt not in _FLOAT_TYPES and et in _FLOAT_TYPES:
        with o.op.context:
            f64 = [ir.Type.parse(hir.tensor_type_str(_FLOAT64, o.dims(k))) for k in (0, 1)]
            out_f64 = ir.Type.parse(hir.tensor_type_str(_FLOAT64, dims))
        wide = [emit(o, CAST, [v], {"to": _FLOAT64}, [o.dims(k)], [f64[k]]).results[0] if t != _FLOAT64 else v
                for k, (v, t) in enumerate(((base, bt), (exponent, et)))]
        power = emit(o, BINARY, wide, {"op": "POW"}, [dims], [out_f64]).results[0]
        replace(o, CAST, [power], {"to": bt}, [dims])
        return
    if bt != et:
        with o.op.context:
            cast_type = ir.Type.parse(hir.tensor_type_str(bt, o.dims(1)))
        exponent = emit(o, CAST, [exponent], {"to": bt}, [o.dims(1)], [cast_type]).results[0]
    replace(o, BINARY, [base, exponent], {"op": "POW"}, [dims])


register(OpDef("Pow", "pow", _pow, (BINARY, CAST), enum_key="POW"))


_HOST_UNARY = {
    "neg": lambda x: sym.mul(-1, x),
    "abs": lambda x: sym.select_negative(x, sym.mul(-1, x), x),
    "sign": lambda x: sym.select_negative(x, -1, _truth(x)),
    "not": lambda x: sym.select_zero(x, 1, 0),
}


def _unary(o: Node) -> None:
    vals = o.host(0)
    dtype = hir.element_dtype(o.input(0))
    if vals is not None and o.kind in _HOST_UNARY and (dtype in HOST_INT_TYPES or o.kind == "not"):
        host_tensor(o, [_HOST_UNARY[o.kind](v) for v in vals], o.dims(0))
        return
    replace(o, UNARY, [o.input(0)], {"op": o.entry.enum_key}, [o.dims(0)])


for _op_type, _key in (("Relu", "RELU"), ("Sigmoid", "SIGMOID"), ("Tanh", "TANH"), ("Exp", "EXP"),
                      ("Log", "LOG"), ("Sqrt", "SQRT"), ("Neg", "NEG"), ("Erf", "ERF")):
    register(OpDef(_op_type, _key.lower(), _unary, (UNARY,), enum_key=_key))


def _gelu(o: Node) -> None:
    approx = hir.get_str(o.op, "onnx.approximate", "none")
    if approx not in ("none", "tanh"):
        o.fail(f"Gelu approximate='{approx}' is not supported")
    op = "GELU_TANH" if approx == "tanh" else "GELU_ERF"
    replace(o, UNARY, [o.input(0)], {"op": op}, [o.dims(0)])


register(OpDef("Gelu", "gelu", _gelu, (UNARY,), domains=("ai.onnx", "com.microsoft")))


def _matmul_dims(o: Node, a: list[sym.Expr], b: list[sym.Expr]) -> list[sym.Expr]:
    """ONNX MatMul's result dims (numpy's matmul rules)."""
    if not a or not b:
        raise ModelError(f"{o.where}: MatMul operands must have rank >= 1")
    a2 = [1] + a if len(a) == 1 else a
    b2 = b + [1] if len(b) == 1 else b
    batch = broadcast(o, a2[:-2], b2[:-2])
    out = batch + [a2[-2], b2[-1]]
    if len(a) == 1:
        out.pop(-2)
    if len(b) == 1:
        out.pop(-1)
    return out


def _matmul(o: Node) -> None:
    replace(o, MATMUL, [o.input(0), o.input(1)], {}, [_matmul_dims(o, o.dims(0), o.dims(1))])


register(OpDef("MatMul", "matmul", _matmul, (MATMUL,)))


def _gemm(o: Node) -> None:
    # any nonzero transA/transB transposes, as in ONNX shape inference and ORT
    ta, tb = int(o.attr_int("transA", 0) != 0), int(o.attr_int("transB", 0) != 0)
    a, b = o.dims(0), o.dims(1)
    if len(a) != 2 or len(b) != 2:
        raise ModelError(f"{o.where}: Gemm operands must be 2-D")
    m = a[1] if ta else a[0]
    n = b[0] if tb else b[1]
    operands = [o.input(0), o.input(1)] + ([o.input(2)] if o.input(2) is not None else [])
    replace(o, GEMM, operands,
             {"trans_a": ta, "trans_b": tb, "alpha": o.attr_float("alpha", 1.0), "beta": o.attr_float("beta", 1.0)},
             [[m, n]])


register(OpDef("Gemm", "gemm", _gemm, (GEMM,)))


def _softmax(o: Node) -> None:
    d = o.dims(0)
    replace(o, SOFTMAX, [o.input(0)], {"axis": norm_axis(o, o.attr_int("axis", -1), len(d))}, [d])


register(OpDef("Softmax", "softmax", _softmax, (SOFTMAX,)))


def _layer_norm(o: Node) -> None:
    d = o.dims(0)
    axis = norm_axis(o, o.attr_int("axis", -1), len(d))
    text = checks.Text(1, sym.product(d[axis:]))
    o.require("le", text.values, f"input shape {text.dims(d)} has {{1}} elements from axis {axis} on; "
                                 "LayerNormalization needs at least 1")
    operands = [o.input(0), o.input(1)] + ([o.input(2)] if o.input(2) is not None else [])
    attrs = {"axis": axis, "epsilon": o.attr_float("epsilon", 1e-5)}
    roles = hir.get_ints(o.op, "result_roles", list(range(len(o.op.results))))
    if roles == [0]:
        replace(o, LAYER_NORM, operands, attrs, [d])
        return
    # Mean and InvStdDev (outputs 1 and 2, imported only when used): composed, in stash_type
    out = {}
    if 0 in roles:
        out[0] = emit(o, LAYER_NORM, operands, attrs, [d], [o.op.results[roles.index(0)].type]).results[0]
    stash = hir.element_dtype(o.op.results[next(k for k, r in enumerate(roles) if r > 0)])
    out[1], out[2] = _layer_norm_stats(o, axis, attrs["epsilon"], stash)
    finish(o, [out[r] for r in roles])


def _layer_norm_stats(o: Node, axis: int, epsilon: float, stash: int) -> tuple[ir.Value, ir.Value]:
    """LayerNormalization's Mean and InvStdDev = 1 / sqrt(Var + epsilon) over the axes from `axis` on,
    of X cast to `stash` (the stash_type), X's shape with 1 from `axis` on (as the ONNX function body
    computes them, with the two-pass variance)."""
    from .mask import FILL, _fill_bits  # mask.py builds on this module

    d = o.dims(0)
    stats = d[:axis] + [1] * (len(d) - axis)

    def call(op, operands: list[ir.Value], op_attrs: dict, dims: list[sym.Expr]) -> ir.Value:
        with o.op.context:
            t = ir.Type.parse(hir.tensor_type_str(stash, dims))
        return emit(o, op, operands, op_attrs, [dims], [t]).results[0]

    x = o.input(0)
    if hir.element_dtype(x) != stash:
        x = call(CAST, [x], {"to": stash}, d)
    axes = list(range(axis, len(d)))
    mean = call(REDUCE, [x], {"op": "MEAN", "axes": axes}, stats)
    dev = call(BINARY, [x, mean], {"op": "SUB"}, d)
    var = call(REDUCE, [call(BINARY, [dev, dev], {"op": "MUL"}, d)], {"op": "MEAN", "axes": axes}, stats)
    eps = call(FILL, [], {"bits": _fill_bits(np.array([epsilon]), stash)}, [])
    std = call(UNARY, [call(BINARY, [var, eps], {"op": "ADD"}, stats)], {"op": "SQRT"}, stats)
    return mean, call(UNARY, [std], {"op": "RECIPROCAL"}, stats)


register(OpDef("LayerNormalization", "layer_norm", _layer_norm, (LAYER_NORM, REDUCE, BINARY, UNARY, CAST)))


def _reduce(o: Node) -> None:
    d = o.dims(0)
    if host_axes.fed(o, 1):  # axes fed as a graph input: known at run time
        keep = o.attr_int("keepdims", 1) == 1
        counted = host_axes.counted_reduction(o, d) if keep and o.host(1) is None else None
        if counted is not None:
            replace(o, host_axes.REDUCE_AXES_COUNTED, [o.input(0)], {"op": o.entry.enum_key}, [counted[0]],
                    params={"axes": counted[1]})
            return
        out_rank = host_axes.result_rank(o)
        count = len(d) - out_rank if not keep and out_rank is not None else None
        ax = host_axes.axes(o, 1, len(d), "reduction axes", count)
        replace(o, host_axes.REDUCE_AXES, [o.input(0)], {"op": o.entry.enum_key},
                [host_axes.reduced(d, ax, keep)], params={"axes": ax})
        return
    axes = o.const_ints(1, "the reduction axes")
    if axes is not None and len(o.dims(1)) != 1:
        raise ModelError(f"{o.where}: the axes input has rank {len(o.dims(1))}; it must be 1-D")
    if axes is None:
        axes = o.attr_ints("axes")  # opsets before 18 (ReduceMean/Max) carry axes as an attribute
    keep = o.attr_int("keepdims", 1) == 1  # like ONNX shape inference and ORT: any other value drops the axes
    if not axes:
        if o.attr_int("noop_with_empty_axes", 0):
            replace(o, "hipdnn.alias", [o.input(0)], {}, [d])
            return
        axes = list(range(len(d)))
    axes = sorted({norm_axis(o, a, len(d)) for a in axes})
    out = [1 if i in axes else x for i, x in enumerate(d)] if keep else [x for i, x in enumerate(d) if i not in axes]
    replace(o, REDUCE, [o.input(0)], {"op": o.entry.enum_key, "axes": axes}, [out])


for _op_type, _key in (("ReduceSum", "SUM"), ("ReduceMean", "MEAN"), ("ReduceMax", "MAX")):
    register(OpDef(_op_type, "reduce_" + _key.lower(), _reduce, (REDUCE,), enum_key=_key))


def _runtime_reshape_dims(o: Node, src: list[sym.Expr], target: list[sym.Expr]) -> list[sym.Expr]:
    """Target entries only known at run time may be 0 (copy the input dim) or -1 (infer): resolve both
    with host selects.  An entry is -1 for at most one axis in a valid model."""
    allow_zero = o.attr_int("allowzero", 0)
    for i, t in enumerate(target):
        if not sym.nonnegative(t):
            text = checks.Text(-1, t)
            msg = f"target shape {text.dims(target)} has {{1}} at index {i}; entries must be >= -1"
            o.require("le", text.values, msg)
    n_infer = sym.add(*(sym.select_negative(t, 1, 0) for t in target))
    text = checks.Text(n_infer, 1)
    msg = f"target shape {text.dims(target)} has {{0}} entries equal to -1; at most one may be -1"
    o.require("le", text.values, msg)
    for i, t in enumerate(target[len(src):], len(src)):
        if not allow_zero and not sym.nonnegative(sym.add(t, -1)):
            text = checks.Text(sym.select_zero(t, 1, 0), 0)
            msg = f"target shape {text.dims(target)} has 0 at index {i}, which copies the input's dim {i}, but " \
                  f"the input has rank {len(src)}"
            o.require("eq", text.values, msg)
    resolved = []
    for i, t in enumerate(target):
        copy = src[i] if i < len(src) and not allow_zero else t
        resolved.append(sym.select_negative(t, 1, sym.select_zero(t, copy, t)))
    total = sym.product(src)
    out = []
    for i, t in enumerate(target):
        others = sym.product(r for j, r in enumerate(resolved) if j != i)
        if not sym.nonnegative(t):
            text = checks.Text(1, sym.select_negative(t, others, 1))
            o.require("le", text.values, f"target shape {text.dims(target)} has a -1 but its other dims multiply "
                                         "to {1}, so the -1 cannot be inferred")
        inferred = sym.div(total, others)
        out.append(sym.select_negative(t, inferred, resolved[i]))
    return out


def _reshape_dims(o: Node, src: list[sym.Expr], target: list[sym.Expr]) -> list[sym.Expr]:
    if any(not sym.nonnegative(t) and not isinstance(t, int) for t in target):
        return _runtime_reshape_dims(o, src, target)
    allow_zero = o.attr_int("allowzero", 0)
    out: list[sym.Expr] = []
    infer_at = None
    for i, t in enumerate(target):
        if t == 0 and not allow_zero:
            if i >= len(src):
                raise ModelError(f"{o.where}: shape entry {i} is 0 but the input has rank {len(src)}")
            out.append(src[i])
        elif t == -1:
            if infer_at is not None:
                raise ModelError(f"{o.where}: more than one -1 in the target shape")
            infer_at = i
            out.append(-1)
        elif isinstance(t, int) and t < -1:
            raise ModelError(f"{o.where}: invalid target dimension {t}")
        else:
            out.append(t)
    if infer_at is not None:
        known = sym.product(x for i, x in enumerate(out) if i != infer_at)
        text = checks.Text(1, known)
        o.require("le", text.values, f"target shape {text.dims(target)} has a -1 but its other dims multiply to "
                                     "{1}, so the -1 cannot be inferred")
        out[infer_at] = sym.div(sym.product(src), known)
    return out


def _require_same_size(o: Node, src: list[sym.Expr], target: list[sym.Expr], dims: list[sym.Expr]) -> None:
    """A Reshape keeps the element count (a -1 that does not divide evenly breaks it too)."""
    before, after = sym.product(src), sym.product(dims)
    if before == after:
        return
    text = checks.Text(before, after)
    resolved = text.dims(dims)
    shown = text.dims(target)
    msg = f"input shape {text.dims(src)} has {{0}} elements but target shape {shown}"
    msg += " has {1}" if shown == resolved else f" (resolved to {resolved}) has {{1}}"
    o.require("eq", text.values, msg)


def _alias_like(o: Node) -> None:
    src = o.dims(0)
    if o.kind == "identity":
        dims = src
    elif o.kind == "reshape":
        target = o.host(1)
        if target is None:
            o.fail("the target shape must be computable from input shapes and constants")
        dims = _reshape_dims(o, src, target)
        _require_same_size(o, src, target, dims)
    elif o.kind == "unsqueeze" and host_axes.fed(o, 1):
        count = len(o.host(1)) if o.host(1) is not None else None
        out_rank = host_axes.result_rank(o)
        if count is None and out_rank is not None and out_rank > len(src):
            count = out_rank - len(src)
        dims = host_axes.inserted(src, host_axes.axes(o, 1, len(src) + (count or 0), count=count))
    elif o.kind == "squeeze" and host_axes.fed(o, 1):
        out_rank = host_axes.result_rank(o)
        count = len(src) - out_rank if out_rank is not None and out_rank < len(src) else None
        ax = host_axes.axes(o, 1, len(src), count=count)
        host_axes.require_squeezable(o, src, ax)
        dims = host_axes.kept(src, ax)
    elif o.kind == "unsqueeze":
        axes = o.const_ints(1, "the axes") if o.input(1) is not None else o.attr_ints("axes")
        if not axes:
            raise ModelError(f"{o.where}: Unsqueeze needs axes")
        r = len(src) + len(axes)
        axes = sorted(norm_axis(o, a, r) for a in axes)
        if len(set(axes)) != len(axes):
            raise ModelError(f"{o.where}: Unsqueeze axes {o.const_ints(1, 'the axes') or o.attr_ints('axes')} "
                             "repeat an axis")
        it = iter(src)
        dims = [1 if i in axes else next(it) for i in range(r)]
    else:  # squeeze
        axes = o.const_ints(1, "the axes") if o.input(1) is not None else o.attr_ints("axes")
        if axes is None:
            axes = [i for i, x in enumerate(src) if x == 1]
            if any(not isinstance(x, int) for x in src):
                o.fail("Squeeze without axes on dynamic dims is not supported")
        axes = {norm_axis(o, a, len(src)) for a in axes}
        for a in sorted(axes):
            if src[a] != 1:
                text = checks.Text(src[a], 1)
                o.require("eq", text.values, f"axis {a} of input shape {text.dims(src)} has size {{0}}; "
                                             "Squeeze removes only axes of size 1")
        dims = [x for i, x in enumerate(src) if i not in axes]
    vals = o.host(0)
    if vals is not None and all(isinstance(x, int) for x in dims):
        host_tensor(o, vals, dims)
        return
    replace(o, "hipdnn.alias", [o.input(0)], {}, [dims])


for _op_type in ("Reshape", "Squeeze", "Unsqueeze", "Identity"):
    register(OpDef(_op_type, _op_type.lower(), _alias_like))


def _transpose(o: Node) -> None:
    d = o.dims(0)
    perm = o.attr_ints("perm") or list(reversed(range(len(d))))
    if sorted(perm) != list(range(len(d))):
        raise ModelError(f"{o.where}: perm {perm} is not a permutation of rank {len(d)}")
    replace(o, TRANSPOSE, [o.input(0)], {"perm": perm}, [[d[p] for p in perm]])


register(OpDef("Transpose", "transpose", _transpose, (TRANSPOSE,)))


def _concat(o: Node) -> None:
    ins = [o.inputs[k] for k in sorted(o.inputs)]
    ds = [hir.dims_of(v) for v in ins]
    axis = norm_axis(o, o.attr_int("axis"), len(ds[0]))
    if len(ds[0]) == 1 and all_host(o):
        vals: list[sym.Expr] = []
        for v in ins:
            vals.extend(hir.host_values(v))
        host_tensor(o, vals, [len(vals)])
        return
    for k, dk in enumerate(ds[1:], 1):
        if len(dk) != len(ds[0]):
            raise ModelError(f"{o.where}: input {k} has rank {len(dk)}, input 0 has rank {len(ds[0])}")
        for j, (a, b) in enumerate(zip(ds[0], dk, strict=True)):
            if j != axis and isinstance(a, int) and isinstance(b, int) and a != b:
                raise ModelError(f"{o.where}: input {k} has shape {show(dk)}, input 0 has {show(ds[0])}; "
                                 f"they must agree outside axis {axis}")
            if j != axis and a != b:  # checked even when the result goes unused, as ORT does
                text = checks.Text(a, b)
                o.require("eq", text.values, f"input {k} has shape {text.dims(dk)}, input 0 has "
                                             f"{text.dims(ds[0])}; they must agree outside axis {axis}")
    out = list(ds[0])
    out[axis] = sym.add(*(d[axis] for d in ds))
    replace(o, CONCAT, ins, {"axis": axis}, [out])


register(OpDef("Concat", "concat", _concat, (CONCAT,)))


def _gather(o: Node) -> None:
    d, di = o.dims(0), o.dims(1)
    axis = norm_axis(o, o.attr_int("axis", 0), len(d))
    vals, idx = o.host(0), o.host(1)
    if idx is not None and isinstance(d[axis], int) and all(isinstance(i, int) for i in idx):
        for i in idx:
            if not -d[axis] <= i < d[axis]:
                raise ModelError(f"{o.where}: index {i} is out of range for axis {axis} of size {d[axis]}")
    if vals is not None and idx is not None and len(d) == 1 and all(isinstance(i, int) for i in idx):
        n = len(vals)
        for i in idx:
            if not -n <= i < n:
                raise ModelError(f"{o.where}: index {i} out of range for {n} elements")
        host_tensor(o, [vals[i] for i in idx], di)
        return
    replace(o, GATHER, [o.input(0), o.input(1)], {"axis": axis}, [d[:axis] + di + d[axis + 1:]])


register(OpDef("Gather", "gather", _gather, (GATHER,)))


def _shape(o: Node) -> None:
    d = o.dims(0)
    start = o.attr_int("start", 0)
    end = o.attr_int("end", len(d))
    vals = d[slice(start, end)]
    host_tensor(o, vals, [len(vals)], dtype=7)


register(OpDef("Shape", "shape", _shape))


def _expand(o: Node) -> None:
    shape = o.host(1)
    if shape is None:
        o.fail("the target shape must be computable from input shapes and constants")
    dims = o.dims(0)
    n = max(len(dims), len(shape))
    padded_x, padded_s = [1] * (n - len(dims)) + list(dims), [1] * (n - len(shape)) + list(shape)
    for i, (a, b) in enumerate(zip(padded_x, padded_s, strict=True)):
        if a == 1 or b == 1 or a == b or (isinstance(a, int) and isinstance(b, int)):
            continue  # static pairs: broadcast refuses the bad ones
        # a and b broadcast iff a == b, a == 1 or b == 1: then `fold` below equals b
        fold = sym.select_zero(sym.add(a, -1), b, sym.select_zero(sym.add(b, -1), b, a))
        text = checks.Text(fold, b, a)
        o.require("eq", text.values, f"input shape {text.dims(dims)} does not broadcast to the target shape "
                                     f"{text.dims(shape)}: at axis {i} (aligned right) {{2}} and {{1}} must be equal "
                                     "or 1")
    replace(o, EXPAND, [o.input(0)], {}, [broadcast(o, dims, shape)])


register(OpDef("Expand", "expand", _expand, (EXPAND,)))


def _cast(o: Node) -> None:
    to = o.attr_int("to")
    if to not in hir.DTYPES:
        o.fail(f"Cast to element type {to} is not supported")
    vals = o.host(0)
    if vals is not None and to in HOST_INT_TYPES:
        host_tensor(o, vals, o.dims(0), dtype=to)
        return
    if vals is not None and to == 9:  # a host int or boolean to a host boolean
        host_tensor(o, [_truth(v) for v in vals], o.dims(0), dtype=to)
        return
    replace(o, CAST, [o.input(0)], {"to": to, "saturate": _saturate(o)}, [o.dims(0)])


def _saturate(o: Node) -> int:
    """Cast's and CastLike's saturate (opset 19; 1 when absent): how a FLOAT8 output treats overflow."""
    saturate = o.attr_int("saturate", 1)
    if saturate not in (0, 1):
        o.fail(f"saturate must be 0 or 1, got {saturate}")
    return saturate


register(OpDef("Cast", "cast", _cast, (CAST,)))


def _host_where(o: Node) -> bool:
    """Where over host values of rank <= 1 (shape code: Where(Equal(shape, -1), 1, shape))."""
    vals = [o.host(i) for i in range(3)]
    if any(len(o.dims(i)) > 1 for i in range(3)):
        return False
    n = max(len(v) for v in vals)
    if any(len(v) not in (1, n) for v in vals):
        return False
    c, x, y = (v * n if len(v) == 1 else v for v in vals)
    host_tensor(o, [sym.select_zero(ci, yi, xi) for ci, xi, yi in zip(c, x, y, strict=True)],
                broadcast(o, o.dims(0), o.dims(1), o.dims(2)))
    return True


def _where(o: Node) -> None:
    if all_host(o) and o.result_dtype() in HOST_INT_TYPES and _host_where(o):
        return
    replace(o, WHERE, [o.input(0), o.input(1), o.input(2)], {},
             [broadcast(o, o.dims(0), o.dims(1), o.dims(2))])


register(OpDef("Where", "where", _where, (WHERE,)))
