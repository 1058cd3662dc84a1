"""The reference of the general kernels: elementwise, matmul, normalization, reduce, data movement,
indexing."""

from __future__ import annotations

import ml_dtypes
import numpy as np

_FLOAT8 = {np.dtype(t) for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
                                   ml_dtypes.float8_e5m2fnuz)}


def _log(x: np.ndarray) -> np.ndarray:
    """log(x), -inf at 0 (IEEE, as the runtime computes it) without numpy's divide warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)


def _log_sum(x: np.ndarray, axis=None, keepdims=True) -> np.ndarray:
    """log(sum(x)): -inf over an empty set or a zero sum."""
    return _log(np.sum(x, axis=axis, keepdims=keepdims))


def _log_sum_exp(x: np.ndarray, axis=None, keepdims=True) -> np.ndarray:
    """log(sum(exp(x))) relative to the maximum, as the runtime computes it (an infinite or NaN maximum is
    the result; -inf over an empty set)."""
    if x.size == 0:
        return _log_sum(np.exp(x), axis=axis, keepdims=keepdims)  # -inf
    m = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.isfinite(m), np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift, m)
    return out if keepdims else np.squeeze(out, axis=axis)



def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (the runtime's; MIN / -1 wraps), exact for 64-bit values."""
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, b)
        if np.issubdtype(a.dtype, np.signedinteger):
            r = a - q * b
            q = np.where((r != 0) & ((a < 0) != (b < 0)), q + 1, q)
    return q


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer Pow as the runtime computes it: pow in double, truncated toward zero, saturated."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
    info = np.iinfo(a.dtype)
    r = np.where(np.isnan(r), 0, r)
    out = np.clip(r, float(info.min), float(info.max)).astype(object)
    out = np.where(r >= float(info.max), info.max, np.where(r <= float(info.min), info.min, out))
    return np.array([int(v) for v in np.asarray(out).reshape(-1)], dtype=a.dtype).reshape(np.shape(r))

class GeneralKernels:
    def fn_kernel_binary(self, v):
        import operator
        ops = {"ADD": operator.add, "SUB": operator.sub, "MUL": operator.mul, "DIV": operator.truediv,
               "POW": np.power, "EQUAL": np.equal, "LESS": np.less, "GREATER": np.greater,
               "GREATER_OR_EQUAL": np.greater_equal, "LESS_OR_EQUAL": np.less_equal, "AND": np.logical_and,
               "OR": np.logical_or, "XOR": np.logical_xor, "MIN": np.minimum, "MAX": np.maximum, "MOD": np.mod,
               "FMOD": np.fmod}

        def shift(x, s, left):
            width = x.dtype.itemsize * 8
            s64 = s.astype(np.int64)
            out_of_range = (s64 < 0) | (s64 >= width)
            safe = np.where(out_of_range, 0, s64).astype(x.dtype)
            shifted = np.left_shift(x, safe) if left else np.right_shift(x, safe)
            fill = np.zeros_like(x) if left or not np.issubdtype(x.dtype, np.signedinteger) else \
                np.where(x < 0, -1, 0).astype(x.dtype)
            return np.where(out_of_range, fill, shifted)

        ops.update({"BITWISE_AND": np.bitwise_and, "BITWISE_OR": np.bitwise_or, "BITWISE_XOR": np.bitwise_xor,
                    "SHIFT_LEFT": lambda x, s: shift(x, s, True), "SHIFT_RIGHT": lambda x, s: shift(x, s, False),
                    "SILU_MUL": lambda x, y: (x / (1 + np.exp(-x.astype(np.float64))) * y).astype(x.dtype)})

        def run(i, o, ints, f):
            op = self._op("hipdnn_ep_binary_op", ints[0])
            if op == "DIV" and np.issubdtype(i[0].dtype, np.integer):
                return _int_divide(i[0], i[1])
            if op == "POW" and np.issubdtype(i[0].dtype, np.integer):
                return _int_pow(i[0], i[1])
            if np.issubdtype(i[0].dtype, np.floating):  # IEEE results, as the kernels give (inf - inf is NaN)
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    return ops[op](i[0], i[1])
            return ops[op](i[0], i[1])
        return self._kernel(v, run)

    def fn_kernel_unary(self, v):
        from math import erf
        verf = np.vectorize(erf, otypes=[np.float64])
        ops = {"RELU": lambda x: np.maximum(x, 0), "SIGMOID": lambda x: 1 / (1 + np.exp(-x)), "TANH": np.tanh,
               "EXP": np.exp, "LOG": _log, "SQRT": np.sqrt, "NEG": np.negative, "ERF": verf,
               "GELU_ERF": lambda x: 0.5 * x * (1 + verf(x / np.sqrt(2))),
               "GELU_TANH": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
               "ABS": np.abs, "FLOOR": np.floor, "CEIL": np.ceil, "NOT": np.logical_not, "IS_NAN": np.isnan,
               "SIGN": np.sign, "RECIPROCAL": np.reciprocal, "SIN": np.sin, "COS": np.cos, "TAN": np.tan,
               "ASIN": np.arcsin, "ACOS": np.arccos, "ATAN": np.arctan, "SINH": np.sinh, "COSH": np.cosh,
               "ASINH": np.arcsinh, "ACOSH": np.arccosh, "ATANH": np.arctanh, "ROUND": np.round,
               "SOFTSIGN": lambda x: x / (1 + np.abs(x)), "BITWISE_NOT": np.invert}
        def run(i, o, ints, f):
            op = self._op("hipdnn_ep_unary_op", ints[0])
            x = i[0] if i[0].dtype == np.bool_ or np.issubdtype(i[0].dtype, np.integer) else i[0].astype(np.float64)
            return ops[op](x)
        return self._kernel(v, run)

    def fn_kernel_cast(self, v):
        def run(i, o, ints, f):
            x = i[0]
            if o.dtype in _FLOAT8 and (not ints or ints[0]):  # saturate: onnx's reference clips, then converts
                info = ml_dtypes.finfo(o.dtype)
                x = np.clip(x.astype(np.float64), float(info.min), float(info.max))
            return x.astype(o.dtype)
        return self._kernel(v, run)

    def fn_kernel_where(self, v):
        return self._kernel(v, lambda i, o, ints, f: np.where(i[0], i[1], i[2]))

    def fn_kernel_matmul(self, v):
        return self._kernel(v, lambda i, o, ints, f: np.matmul(i[0], i[1]))

    def fn_kernel_gemm(self, v):
        def run(i, o, ints, f):
            a = i[0].T if ints[0] else i[0]
            b = i[1].T if ints[1] else i[1]
            y = f[0] * (a @ b)
            return y + f[1] * i[2] if len(i) > 2 else y
        return self._kernel(v, run)

    def fn_kernel_softmax(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64)
            with np.errstate(invalid="ignore"):  # a row of -inf is NaN, as the runtime computes it
                e = np.exp(x - x.max(axis=ints[0], keepdims=True))
                return e / e.sum(axis=ints[0], keepdims=True)
        return self._kernel(v, run)

    def fn_kernel_layer_norm(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64)
            axes = tuple(range(ints[0], x.ndim))
            y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + f[0])
            y = y * i[1]
            return y + i[2] if len(i) > 2 else y
        return self._kernel(v, run)

    def fn_kernel_reduce(self, v):
        def run(i, o, ints, f):
            def extreme(f, start):  # an empty set gives the kernel's start value (-inf for MAX, +inf for MIN)
                def g(x, **k):
                    lim = np.iinfo(x.dtype) if np.issubdtype(x.dtype, np.integer) else None
                    return f(x, initial=start(lim), **k) if x.size == 0 else f(x, **k)
                return g
            fn = {"SUM": np.sum, "MEAN": np.mean, "PROD": np.prod,
                  "MAX": extreme(np.max, lambda lim: -np.inf if lim is None else lim.min),
                  "MIN": extreme(np.min, lambda lim: np.inf if lim is None else lim.max),
                  "L1": lambda x, **k: np.sum(np.abs(x), **k), "L2": lambda x, **k: np.sqrt(np.sum(x * x, **k)),
                  "LOG_SUM": _log_sum,
                  "LOG_SUM_EXP": _log_sum_exp,
                  "SUM_SQUARE": lambda x, **k: np.sum(x * x, **k)}[self._op("hipdnn_ep_reduce_op", ints[0])]
            x = i[0] if np.issubdtype(i[0].dtype, np.integer) else i[0].astype(np.float64)
            axes = tuple(int(a) for a in i[1]) or None  # no axes: every axis
            return fn(x, axis=axes, keepdims=True)
        return self._kernel(v, run)

    def fn_kernel_transpose(self, v):
        return self._kernel(v, lambda i, o, ints, f: np.transpose(i[0], [int(p) for p in i[1]]))

    def fn_kernel_concat(self, v):
        return self._kernel(v, lambda i, o, ints, f: np.concatenate(i, axis=ints[0]))

    def fn_kernel_slice(self, v):
        def run(i, o, ints, f):
            idx = tuple(slice(int(s), None, int(st)) for s, st in zip(i[1], i[2], strict=False))
            picked = i[0][idx]
            return picked[tuple(slice(0, n) for n in o.shape)]
        return self._kernel(v, run)

    def fn_kernel_gather(self, v):
        return self._kernel(v, lambda i, o, ints, f: np.take(i[0], i[1].astype(np.int64), axis=ints[0]))

    def fn_kernel_expand(self, v):
        return self._kernel(v, lambda i, o, ints, f: np.broadcast_to(i[0], o.shape))

    def fn_kernel_gather_elements(self, v):
        def run(i, o, ints, f):
            idx, axis = i[1].astype(np.int64), ints[0]
            # indices may be smaller than the data outside axis: they index that corner of it
            window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))
            return np.take_along_axis(i[0][window], np.where(idx < 0, idx + i[0].shape[axis], idx), axis=axis)
        return self._kernel(v, run)

    def fn_kernel_arg_reduce(self, v):
        def run(i, o, ints, f):
            axis, last, is_min = ints
            fn = np.argmin if is_min else np.argmax
            if not last:
                return fn(i[0], axis=axis)
            return i[0].shape[axis] - 1 - fn(np.flip(i[0], axis), axis=axis)
        return self._kernel(v, run)

    def fn_kernel_top_k(self, v):
        def run(i, outs, ints, f):
            axis, largest, _ = ints
            x, k = i[0], outs[0].shape[axis]
            # best first, equal values in index order (lexsort is stable), NaN larger than any number
            key = np.moveaxis(x, axis, -1)
            if np.issubdtype(x.dtype, np.floating):
                nan = np.isnan(key).astype(np.int64)
                val = np.where(nan == 1, 0, key).astype(np.float64)
                order = np.lexsort((-val, -nan) if largest else (val, nan), axis=-1)
            else:
                order = np.argsort(~key if largest else key, axis=-1, kind="stable")  # ~ reverses the order
            idx = order[..., :k]
            vals = np.take_along_axis(np.moveaxis(x, axis, -1), idx, axis=-1)
            return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)
        return self._kernel_outputs(v, run)

    def fn_kernel_scatter_nd(self, v):
        def run(i, o, ints, f):
            data, idx, upd = i[0].copy(), i[1].astype(np.int64), i[2]
            k = idx.shape[-1]
            tuples = idx.reshape(-1, k)
            upd = upd.reshape((len(tuples),) + data.shape[k:])
            combine = [lambda a, b: b, np.add, np.multiply, np.maximum, np.minimum][ints[0]]
            for n, t in enumerate(tuples):
                if any(not -data.shape[d] <= c < data.shape[d] for d, c in enumerate(t)):
                    raise IndexError(f"index tuple {n} = {list(t)} is out of range")
                at = tuple(int(c) % data.shape[d] for d, c in enumerate(t))
                data[at] = combine(data[at], upd[n])
            return data
        return self._kernel(v, run)

    def fn_kernel_gather_nd(self, v):
        def run(i, o, ints, f):
            data, idx, b = i[0], i[1].astype(np.int64), ints[0]
            k = idx.shape[-1]
            batches = int(np.prod(data.shape[:b], dtype=np.int64))
            flat_data = data.reshape((batches,) + data.shape[b:])
            tuples = idx.reshape(batches, -1, k)
            out = []
            for n in range(batches):
                for t in tuples[n]:
                    if any(not -flat_data.shape[1 + d] <= c < flat_data.shape[1 + d] for d, c in enumerate(t)):
                        raise IndexError(f"index tuple {list(t)} is out of range")
                    out.append(flat_data[n][tuple(int(c) for c in t)])
            return np.array(out, dtype=data.dtype)
        return self._kernel(v, run)

    def fn_kernel_scatter_elements(self, v):
        def run(i, o, ints, f):
            data, idx, upd = i[0].copy(), i[1].astype(np.int64), i[2]
            axis, reduction = ints
            combine = [lambda a, b: b, np.add, np.multiply, np.maximum, np.minimum][reduction]
            if np.any((idx < -data.shape[axis]) | (idx >= data.shape[axis])):
                raise IndexError("an index is out of range")
            for pos in np.ndindex(*idx.shape):
                at = list(pos)
                at[axis] = int(idx[pos]) % data.shape[axis]
                data[tuple(at)] = combine(data[tuple(at)], upd[pos])
            return data
        return self._kernel(v, run)

    def fn_kernel_pad(self, v):
        def run(i, o, ints, f):
            x, value, pads = i[0], i[1].reshape(-1)[0], [int(p) for p in i[2]]
            rank = x.ndim
            # crop first (negative pads), then pad
            crop = tuple(slice(max(-pads[d], 0), x.shape[d] - max(-pads[rank + d], 0)) for d in range(rank))
            x = x[crop]
            width = [(max(pads[d], 0), max(pads[rank + d], 0)) for d in range(rank)]
            mode = ["constant", "reflect", "edge", "wrap"][ints[0]]
            kw = {"constant_values": value} if mode == "constant" else {}
            return np.pad(x, width, mode=mode, **kw)
        return self._kernel(v, run)

    def fn_kernel_cumsum(self, v):
        def run(i, o, ints, f):
            axis, exclusive, reverse = ints
            x = np.flip(i[0], axis) if reverse else i[0]
            y = np.cumsum(x, axis=axis, dtype=x.dtype)
            if exclusive:
                y = y - x
            return np.flip(y, axis) if reverse else y
        return self._kernel(v, run)

    def fn_kernel_trilu(self, v):
        def run(i, o, ints, f):
            return (np.triu if ints[0] else np.tril)(i[0], int(i[1][0]))
        return self._kernel(v, run)

    def fn_kernel_range(self, v):
        def run(i, o, ints, f):
            start, delta = int(i[0][0]), int(i[0][1])
            return start + np.arange(o.shape[0], dtype=np.int64) * delta
        return self._kernel(v, run)

    def fn_kernel_fill(self, v):
        def run(i, o, ints, f):
            raw = ints[0].to_bytes(8, "little", signed=True)[:o.dtype.itemsize]
            return np.full(o.shape, np.frombuffer(raw, o.dtype)[0])
        return self._kernel(v, run)
