"""Pass refine-shapes: symbolic shape refinement and folding of shape computations.

IR in: ops as imported (ONNX semantics, parameter tensors as operands, `onnx.*` attributes).
IR out: every value's dims as symbolic expressions (`hipdnn.dims`) over program input dims;
every computation on host-computable integer values (Shape, Gather, Concat, Slice, Squeeze,
Unsqueeze, Reshape, Cast, Add/Sub/Mul/Div on shape values) folded into `hipdnn.host_tensor`
ops holding element expressions; every remaining op in canonical form with only data
operands and parameters as attributes:

  hipdnn.binary {op}   hipdnn.unary {op}   hipdnn.matmul   hipdnn.gemm {trans_a, trans_b, alpha, beta}
  hipdnn.softmax {axis}   hipdnn.layer_norm {axis, epsilon}   hipdnn.reduce {op, axes}
  hipdnn.transpose {perm}   hipdnn.concat {axis}   hipdnn.slice {starts, steps}
  hipdnn.gather {axis}   hipdnn.expand   hipdnn.cast {to}   hipdnn.where   hipdnn.alias

`hipdnn.alias` (Reshape, Squeeze, Unsqueeze, Identity) has new dims and shares its input's data.
"""

from __future__ import annotations

from collections.abc import Callable

from torch_mlir import ir

from .. import checks
from .. import ir as hir
from .. import symbolic as sym
from ..errors import ModelError, UnsupportedError

NAME = "refine-shapes"

BINARY = {"add": "ADD", "sub": "SUB", "mul": "MUL", "div": "DIV", "pow": "POW",
          "equal": "EQUAL", "less": "LESS", "greater": "GREATER"}
UNARY = {"relu": "RELU", "sigmoid": "SIGMOID", "tanh": "TANH", "exp": "EXP", "log": "LOG",
         "sqrt": "SQRT", "neg": "NEG", "erf": "ERF"}
REDUCE = {"reduce_sum": "SUM", "reduce_mean": "MEAN", "reduce_max": "MAX"}
ALIAS = ("reshape", "squeeze", "unsqueeze", "identity")
HOST_INT_TYPES = (6, 7)


class _Op:
    """One imported op with its operands addressed by ONNX input position."""

    def __init__(self, op: ir.Operation, func: ir.Operation):
        self.op = op
        self.func = func
        self.kind = op.name.split(".", 1)[1]
        self.where = hir.get_str(op, "onnx.node", op.name)
        roles = hir.get_ints(op, "operand_roles", list(range(len(op.operands))))
        self.inputs: dict[int, ir.Value] = {r: op.operands[k] for k, r in enumerate(roles)}

    def input(self, i: int) -> ir.Value | None:
        return self.inputs.get(i)

    def dims(self, i: int) -> list[sym.Expr]:
        return hir.dims_of(self.inputs[i])

    def host(self, i: int) -> list[sym.Expr] | None:
        v = self.inputs.get(i)
        return None if v is None else hir.host_values(v)

    def const_ints(self, i: int, what: str) -> list[int] | None:
        """Input i as constant ints (None if absent); refuse if it is not constant."""
        if i not in self.inputs:
            return None
        vals = self.host(i)
        if vals is None or not all(isinstance(v, int) for v in vals):
            raise UnsupportedError(f"{self.where}: {what} must be a constant")
        return [int(v) for v in vals]

    def attr_int(self, name: str, default: int | None = None) -> int | None:
        return hir.get_int(self.op, "onnx." + name, default)

    def attr_float(self, name: str, default: float) -> float:
        return hir.get_float(self.op, "onnx." + name, default)

    def attr_ints(self, name: str) -> list[int] | None:
        return hir.get_ints(self.op, "onnx." + name)

    def result_dtype(self, k: int = 0) -> int:
        return hir.element_dtype_from_text(str(self.op.results[k].type))

    def fail(self, why: str) -> None:
        raise UnsupportedError(f"{self.where}: {why}")

    def require(self, kind: str, values: list[sym.Expr], text: str) -> None:
        """A relation the model promises: checked now when static, else by the program (see checks.py)."""
        checks.require(self.func, self.where, kind, values, text)


def _norm_axis(o: _Op, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ModelError(f"{o.where}: axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _replace(o: _Op, name: str, operands: list[ir.Value], attrs: dict, dims: list[list[sym.Expr]],
             result_types: list[str] | None = None) -> ir.Operation:
    """Create the canonical op before `o`, move the uses over and erase `o`."""
    types = result_types or [str(r.type) for r in o.op.results]
    for k, ds in enumerate(dims):
        _check_dims(o, ds, hir.element_dtype_from_text(types[k]) if k < len(types) else None)
    attrs = dict(attrs)
    attrs["onnx.node"] = o.where
    attrs["hipdnn.dims"] = [[sym.to_str(d) for d in ds] for ds in dims]
    new = hir.create(name, operands, types, attrs, before=o.op)
    for old_r, new_r in zip(o.op.results, new.results, strict=False):
        old_r.replace_all_uses_with(new_r)
    o.op.erase()
    return new


def _check_dims(o: _Op, dims: list[sym.Expr], dtype: int | None) -> None:
    """Every dim >= 0 (checked at run time when it depends on fed values) and the size within int64."""
    for e in dims:
        for x in sym.int_literals(e):
            if not sym.fits_int64(x):
                raise ModelError(f"{o.where}: the output shape {_show(dims)} does not fit in int64")
    for i, d in enumerate(dims):
        if not sym.nonnegative(d):
            t = checks.Text(d)
            msg = f"output dim {i} of shape {t.dims(dims)} is {{0}}; dims must be >= 0"
            o.require("nonneg", t.values, msg)
    if dtype is None or dtype not in hir.DTYPES:
        return
    static = hir.DTYPES[dtype][1]
    for d in dims:
        if isinstance(d, int):
            static *= d
    if not sym.fits_int64(static):
        raise ModelError(f"{o.where}: the output shape {_show(dims)} needs {static} bytes, more than int64 can "
                         "address; the model's dims are too large")


def _show(dims: list[sym.Expr]) -> str:
    return "[" + ", ".join(sym.to_str(d) for d in dims) + "]"


def _host_tensor(o: _Op, values: list[sym.Expr], dims: list[int], dtype: int | None = None) -> None:
    dtype = o.result_dtype() if dtype is None else dtype
    for x in (x for v in values for x in sym.int_literals(v)):
        if not sym.fits_int64(x):
            raise ModelError(f"{o.where}: the shape value {x} does not fit in int64")
    _replace(o, "hipdnn.host_tensor", [],
             {"values": [sym.to_str(v) for v in values]}, [list(dims)],
             [hir.tensor_type_str(dtype, dims)])


def _all_host(o: _Op) -> bool:
    return all(hir.host_values(v) is not None for v in o.inputs.values())


def _broadcast(o: _Op, *shapes: list[sym.Expr]) -> list[sym.Expr]:
    out: list[sym.Expr] = []
    try:
        for s in shapes:
            out = sym.broadcast(out, s)
    except ValueError as exc:
        raise ModelError(f"{o.where}: {exc}") from None
    return out


def _host_elementwise(o: _Op, fn: Callable[[sym.Expr, sym.Expr], sym.Expr]) -> bool:
    a, b = o.host(0), o.host(1)
    da, db = o.dims(0), o.dims(1)
    if len(da) > 1 or len(db) > 1:
        return False
    n = max(len(a), len(b))
    if len(a) not in (1, n) or len(b) not in (1, n):
        return False
    a = a * n if len(a) == 1 else a
    b = b * n if len(b) == 1 else b
    _host_tensor(o, [fn(x, y) for x, y in zip(a, b, strict=False)], _broadcast(o, da, db))
    return True


def _binary(o: _Op) -> None:
    if o.kind in ("add", "sub", "mul", "div") and _all_host(o) and o.result_dtype() in HOST_INT_TYPES:
        fn = {"add": sym.add, "sub": sym.sub, "mul": sym.mul, "div": sym.div}[o.kind]
        if _host_elementwise(o, fn):
            return
    _replace(o, "hipdnn.binary", [o.input(0), o.input(1)], {"op": BINARY[o.kind]},
             [_broadcast(o, o.dims(0), o.dims(1))])


def _unary(o: _Op) -> None:
    _replace(o, "hipdnn.unary", [o.input(0)], {"op": UNARY[o.kind]}, [o.dims(0)])


def _gelu(o: _Op) -> None:
    approx = hir.get_str(o.op, "onnx.approximate", "none")
    if approx not in ("none", "tanh"):
        o.fail(f"Gelu approximate='{approx}' is not supported")
    op = "GELU_TANH" if approx == "tanh" else "GELU_ERF"
    _replace(o, "hipdnn.unary", [o.input(0)], {"op": op}, [o.dims(0)])


def _matmul(o: _Op) -> None:
    a, b = o.dims(0), o.dims(1)
    if not a or not b:
        raise ModelError(f"{o.where}: MatMul operands must have rank >= 1")
    a2 = [1] + a if len(a) == 1 else a
    b2 = b + [1] if len(b) == 1 else b
    batch = _broadcast(o, a2[:-2], b2[:-2])
    out = batch + [a2[-2], b2[-1]]
    if len(a) == 1:
        out.pop(-2)
    if len(b) == 1:
        out.pop(-1)
    _replace(o, "hipdnn.matmul", [o.input(0), o.input(1)], {}, [out])


def _gemm(o: _Op) -> None:
    # any nonzero transA/transB transposes, as in ONNX shape inference and ORT
    ta, tb = int(o.attr_int("transA", 0) != 0), int(o.attr_int("transB", 0) != 0)
    a, b = o.dims(0), o.dims(1)
    if len(a) != 2 or len(b) != 2:
        raise ModelError(f"{o.where}: Gemm operands must be 2-D")
    m = a[1] if ta else a[0]
    n = b[0] if tb else b[1]
    operands = [o.input(0), o.input(1)] + ([o.input(2)] if o.input(2) is not None else [])
    _replace(o, "hipdnn.gemm", operands,
             {"trans_a": ta, "trans_b": tb, "alpha": o.attr_float("alpha", 1.0), "beta": o.attr_float("beta", 1.0)},
             [[m, n]])


def _softmax(o: _Op) -> None:
    d = o.dims(0)
    _replace(o, "hipdnn.softmax", [o.input(0)], {"axis": _norm_axis(o, o.attr_int("axis", -1), len(d))}, [d])


def _layer_norm(o: _Op) -> None:
    d = o.dims(0)
    axis = _norm_axis(o, o.attr_int("axis", -1), len(d))
    text = checks.Text(1, sym.product(d[axis:]))
    o.require("le", text.values, f"input shape {text.dims(d)} has {{1}} elements from axis {axis} on; "
                                 "LayerNormalization needs at least 1")
    operands = [o.input(0), o.input(1)] + ([o.input(2)] if o.input(2) is not None else [])
    _replace(o, "hipdnn.layer_norm", operands,
             {"axis": _norm_axis(o, o.attr_int("axis", -1), len(d)), "epsilon": o.attr_float("epsilon", 1e-5)},
             [d])


def _reduce(o: _Op) -> None:
    d = o.dims(0)
    axes = o.const_ints(1, "the reduction axes")
    if axes is not None and len(o.dims(1)) != 1:
        raise ModelError(f"{o.where}: the axes input has rank {len(o.dims(1))}; it must be 1-D")
    if axes is None:
        axes = o.attr_ints("axes")  # opsets before 18 (ReduceMean/Max) carry axes as an attribute
    keep = o.attr_int("keepdims", 1) == 1  # like ONNX shape inference and ORT: any other value drops the axes
    if not axes:
        if o.attr_int("noop_with_empty_axes", 0):
            _replace(o, "hipdnn.alias", [o.input(0)], {}, [d])
            return
        axes = list(range(len(d)))
    axes = sorted({_norm_axis(o, a, len(d)) for a in axes})
    out = [1 if i in axes else x for i, x in enumerate(d)] if keep else [x for i, x in enumerate(d) if i not in axes]
    _replace(o, "hipdnn.reduce", [o.input(0)], {"op": REDUCE[o.kind], "axes": axes}, [out])


def _runtime_reshape_dims(o: _Op, src: list[sym.Expr], target: list[sym.Expr]) -> list[sym.Expr]:
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


def _reshape_dims(o: _Op, src: list[sym.Expr], target: list[sym.Expr]) -> list[sym.Expr]:
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


def _require_same_size(o: _Op, src: list[sym.Expr], target: list[sym.Expr], dims: list[sym.Expr]) -> None:
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


def _alias_like(o: _Op) -> None:
    src = o.dims(0)
    if o.kind == "identity":
        dims = src
    elif o.kind == "reshape":
        target = o.host(1)
        if target is None:
            o.fail("the target shape must be computable from input shapes and constants")
        dims = _reshape_dims(o, src, target)
        _require_same_size(o, src, target, dims)
    elif o.kind == "unsqueeze":
        axes = o.const_ints(1, "the axes") if o.input(1) is not None else o.attr_ints("axes")
        if not axes:
            raise ModelError(f"{o.where}: Unsqueeze needs axes")
        r = len(src) + len(axes)
        axes = sorted(_norm_axis(o, a, r) for a in axes)
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
        axes = {_norm_axis(o, a, len(src)) for a in axes}
        for a in sorted(axes):
            if src[a] != 1:
                text = checks.Text(src[a], 1)
                o.require("eq", text.values, f"axis {a} of input shape {text.dims(src)} has size {{0}}; "
                                             "Squeeze removes only axes of size 1")
        dims = [x for i, x in enumerate(src) if i not in axes]
    vals = o.host(0)
    if vals is not None:
        _host_tensor(o, vals, dims)
        return
    _replace(o, "hipdnn.alias", [o.input(0)], {}, [dims])


def _transpose(o: _Op) -> None:
    d = o.dims(0)
    perm = o.attr_ints("perm") or list(reversed(range(len(d))))
    if sorted(perm) != list(range(len(d))):
        raise ModelError(f"{o.where}: perm {perm} is not a permutation of rank {len(d)}")
    _replace(o, "hipdnn.transpose", [o.input(0)], {"perm": perm}, [[d[p] for p in perm]])


def _concat(o: _Op) -> None:
    ins = [o.inputs[k] for k in sorted(o.inputs)]
    ds = [hir.dims_of(v) for v in ins]
    axis = _norm_axis(o, o.attr_int("axis"), len(ds[0]))
    if len(ds[0]) == 1 and _all_host(o):
        vals: list[sym.Expr] = []
        for v in ins:
            vals.extend(hir.host_values(v))
        _host_tensor(o, vals, [len(vals)])
        return
    for k, dk in enumerate(ds[1:], 1):
        if len(dk) != len(ds[0]):
            raise ModelError(f"{o.where}: input {k} has rank {len(dk)}, input 0 has rank {len(ds[0])}")
        for j, (a, b) in enumerate(zip(ds[0], dk, strict=True)):
            if j != axis and isinstance(a, int) and isinstance(b, int) and a != b:
                raise ModelError(f"{o.where}: input {k} has shape {_show(dk)}, input 0 has {_show(ds[0])}; "
                                 f"they must agree outside axis {axis}")
            if j != axis and a != b:  # checked even when the result goes unused, as ORT does
                text = checks.Text(a, b)
                o.require("eq", text.values, f"input {k} has shape {text.dims(dk)}, input 0 has "
                                             f"{text.dims(ds[0])}; they must agree outside axis {axis}")
    out = list(ds[0])
    out[axis] = sym.add(*(d[axis] for d in ds))
    _replace(o, "hipdnn.concat", ins, {"axis": axis}, [out])


def _slice_params(o: _Op, d: list[sym.Expr]) -> tuple[list[sym.Expr], list[int], list[sym.Expr]]:
    starts, ends = o.host(1), o.host(2)
    if starts is None or ends is None:
        o.fail("starts and ends must be computable from input shapes and constants")
    axes = o.const_ints(3, "axes")
    steps = o.const_ints(4, "steps")
    axes = list(range(len(starts))) if axes is None else [_norm_axis(o, a, len(d)) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    n_starts, n_steps, counts = [0] * len(d), [1] * len(d), list(d)
    for ax, s, e, st in zip(axes, starts, ends, steps, strict=False):
        dim = d[ax]
        if st == 0:
            raise ModelError(f"{o.where}: slice step 0")
        if st > 0:
            s = sym.minimum(sym.maximum(sym.select_negative(s, sym.add(s, dim), s), 0), dim)
            e = sym.minimum(sym.maximum(sym.select_negative(e, sym.add(e, dim), e), 0), dim)
            count = sym.maximum(sym.ceildiv(sym.sub(e, s), st), 0)
        else:
            s = sym.minimum(sym.maximum(sym.select_negative(s, sym.add(s, dim), s), -1), sym.add(dim, -1))
            e = sym.minimum(sym.maximum(sym.select_negative(e, sym.add(e, dim), e), -1), sym.add(dim, -1))
            count = sym.maximum(sym.ceildiv(sym.sub(s, e), -st), 0)
        n_starts[ax], n_steps[ax], counts[ax] = s, st, count
    return n_starts, n_steps, counts


def _slice(o: _Op) -> None:
    d = o.dims(0)
    starts, steps, counts = _slice_params(o, d)
    vals = o.host(0)
    if vals is not None and len(d) == 1 and all(isinstance(x, int) for x in (starts[0], counts[0])):
        picked = [vals[starts[0] + i * steps[0]] for i in range(counts[0])]
        _host_tensor(o, picked, [len(picked)])
        return
    _replace(o, "hipdnn.slice", [o.input(0)],
             {"starts": [sym.to_str(s) for s in starts], "steps": steps}, [counts])


def _gather(o: _Op) -> None:
    d, di = o.dims(0), o.dims(1)
    axis = _norm_axis(o, o.attr_int("axis", 0), len(d))
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
        _host_tensor(o, [vals[i] for i in idx], di)
        return
    _replace(o, "hipdnn.gather", [o.input(0), o.input(1)], {"axis": axis}, [d[:axis] + di + d[axis + 1:]])


def _shape(o: _Op) -> None:
    d = o.dims(0)
    start = o.attr_int("start", 0)
    end = o.attr_int("end", len(d))
    vals = d[slice(start, end)]
    _host_tensor(o, vals, [len(vals)], dtype=7)


def _expand(o: _Op) -> None:
    shape = o.host(1)
    if shape is None:
        o.fail("the target shape must be computable from input shapes and constants")
    dims = o.dims(0)
    n = max(len(dims), len(shape))
    padded_x, padded_s = [1] * (n - len(dims)) + list(dims), [1] * (n - len(shape)) + list(shape)
    for i, (a, b) in enumerate(zip(padded_x, padded_s, strict=True)):
        if a == 1 or b == 1 or a == b or (isinstance(a, int) and isinstance(b, int)):
            continue  # static pairs: _broadcast refuses the bad ones
        # a and b broadcast iff a == b, a == 1 or b == 1: then `fold` below equals b
        fold = sym.select_zero(sym.add(a, -1), b, sym.select_zero(sym.add(b, -1), b, a))
        text = checks.Text(fold, b, a)
        o.require("eq", text.values, f"input shape {text.dims(dims)} does not broadcast to the target shape "
                                     f"{text.dims(shape)}: at axis {i} (aligned right) {{2}} and {{1}} must be equal "
                                     "or 1")
    _replace(o, "hipdnn.expand", [o.input(0)], {}, [_broadcast(o, dims, shape)])


def _cast(o: _Op) -> None:
    to = o.attr_int("to")
    if to not in hir.DTYPES:
        o.fail(f"Cast to element type {to} is not supported")
    vals = o.host(0)
    if vals is not None and to in HOST_INT_TYPES:
        _host_tensor(o, vals, o.dims(0), dtype=to)
        return
    _replace(o, "hipdnn.cast", [o.input(0)], {"to": to}, [o.dims(0)])


def _where(o: _Op) -> None:
    _replace(o, "hipdnn.where", [o.input(0), o.input(1), o.input(2)], {},
             [_broadcast(o, o.dims(0), o.dims(1), o.dims(2))])


RULES: dict[str, Callable[[_Op], None]] = {
    **{k: _binary for k in BINARY}, **{k: _unary for k in UNARY}, **{k: _reduce for k in REDUCE},
    **{k: _alias_like for k in ALIAS},
    "gelu": _gelu, "matmul": _matmul, "gemm": _gemm, "softmax": _softmax, "layer_norm": _layer_norm,
    "transpose": _transpose, "concat": _concat, "slice": _slice, "gather": _gather, "shape": _shape,
    "expand": _expand, "cast": _cast, "where": _where,
}

CANONICAL = {"hipdnn.weight", "hipdnn.constant", "hipdnn.host_tensor", "hipdnn.binary", "hipdnn.unary",
             "hipdnn.matmul", "hipdnn.gemm", "hipdnn.softmax", "hipdnn.layer_norm", "hipdnn.reduce",
             "hipdnn.transpose", "hipdnn.concat", "hipdnn.slice", "hipdnn.gather", "hipdnn.expand",
             "hipdnn.cast", "hipdnn.where", "hipdnn.alias"}


def run(module: ir.Module) -> ir.Module:
    func = hir.main_func(module)
    for op in hir.ops(module):
        if op.name == "func.return":
            continue
        if op.name == "hipdnn.weight":
            if "hipdnn.dims" not in op.attributes:
                shape = ir.RankedTensorType(op.results[0].type).shape
                hir.set_dims(op, [list(shape)])
            continue
        if op.name == "hipdnn.constant":
            continue
        o = _Op(op, func)
        rule = RULES.get(o.kind)
        if rule is None:
            raise UnsupportedError(f"{o.where}: no shape rule for {op.name}")
        try:
            rule(o)
        except ZeroDivisionError as exc:
            raise ModelError(f"{o.where}: {exc}") from None
    return module
