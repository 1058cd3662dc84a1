"""A numpy reference of the runtime ABI, for running artifacts in the compiler's own tests.

The compiler wheel must not need the runtime wheel, yet its tests should execute what it
emits.  This builds, from the manifest JSON, a shared library with the runtime's SONAME and
symbol versions whose every function forwards to a Python dispatcher; the kernels are numpy
one-liners following the manifest's documented semantics.  It is a test oracle for the host
programs (dims, offsets, attributes, statuses), not a runtime.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import subprocess
from pathlib import Path

import numpy as np

from hipdnn_ep_compiler.link import version_script

NP = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
      10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
CODE = {np.dtype(v): k for k, v in NP.items()}
DISPATCH = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64))


def _c_param_type(t: str) -> str:
    if "*" not in t:
        return t
    return "const void*" if "const" in t else "void*"


def build_shim(manifest: dict, out_dir: Path) -> Path:
    fns = manifest["functions"]
    lines = ["#include <stdint.h>", "typedef struct hipdnn_ep_state hipdnn_ep_state_t;",
             "typedef struct hipdnn_ep_artifact hipdnn_ep_artifact_t;",
             "static int64_t (*dispatch)(int, uint64_t*);",
             "void hipdnn_test_set_dispatch(int64_t (*f)(int, uint64_t*)) { dispatch = f; }"]
    for idx, f in enumerate(fns):
        params = [(p["type"], p["name"]) for p in f["params"]]
        # pointers become void pointers: the shim needs no struct definitions
        decl = ", ".join(f"{_c_param_type(t)} {n}" for t, n in params) or "void"
        packed = ", ".join(f"(uint64_t)(uintptr_t){n}" for _, n in params) or "0"
        ret = f["returns"]["type"]
        c_ret = "const char*" if ret == "const char*" else ret
        call = f"dispatch({idx}, v)"
        body = f"uint64_t v[] = {{{packed}}}; "
        body += f"{call};" if ret == "void" else f"return ({c_ret})(uintptr_t){call};"
        lines.append(f"{c_ret} {f['name']}({decl}) {{ {body} }}")
    src = out_dir / "refruntime.c"
    src.write_text("\n".join(lines) + "\n")
    by_minor: dict[int, list[str]] = {0: ["hipdnn_test_set_dispatch"]}
    for f in fns:
        by_minor.setdefault(f["since"], []).append(f["name"])
    nodes = {int(k): v for k, v in manifest["version_nodes"].items()}
    (out_dir / "refruntime.map").write_text(version_script(nodes, by_minor, max(nodes)))
    lib = out_dir / manifest["abi"]["soname"]
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src), f"-Wl,-soname,{manifest['abi']['soname']}",
                    f"-Wl,--version-script,{out_dir / 'refruntime.map'}"], check=True)
    return lib


def _view(ptr: int, dims: tuple, dtype) -> np.ndarray:
    n = int(np.prod(dims)) if dims else 1
    nbytes = n * np.dtype(dtype).itemsize
    if nbytes == 0:
        return np.empty(dims, dtype)
    buf = (ctypes.c_char * nbytes).from_address(ptr)
    return np.frombuffer(buf, dtype=dtype).reshape(dims)



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


def _log_sum_exp(x: np.ndarray, axis=None, keepdims=True) -> np.ndarray:
    """log(sum(exp(x))) relative to the maximum, as the runtime computes it (an infinite or NaN maximum is
    the result; -inf over an empty set)."""
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
    m = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.isfinite(m), np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift, m)
    return out if keepdims else np.squeeze(out, axis=axis)

class RefRuntime:
    def __init__(self, manifest_path: Path, work_dir: Path):
        self.manifest = json.loads(Path(manifest_path).read_text())
        self.lib = ctypes.CDLL(str(build_shim(self.manifest, work_dir)), mode=ctypes.RTLD_GLOBAL)
        self.names = [f["name"] for f in self.manifest["functions"]]
        self.enums = {e["name"]: e["values"] for e in self.manifest["enums"]}
        ref = next(s for s in self.manifest["structs"] if s["name"] == "hipdnn_ep_tensor_ref_t")
        self.ref_size = ref["size"]
        self.ref_off = {f["name"]: f["offset"] for f in ref["fields"]}
        args = next(s for s in self.manifest["structs"] if s["name"] == "hipdnn_ep_kernel_args_t")
        self.args_off = {f["name"]: f["offset"] for f in args["fields"]}
        self.blocks: dict[int, np.ndarray] = {}
        self.scratch = self.pool = None
        self.calls: list[str] = []
        self._cb = DISPATCH(self._dispatch)
        self.lib.hipdnn_test_set_dispatch.argtypes = [DISPATCH]
        self.lib.hipdnn_test_set_dispatch(self._cb)

    # ------------------------------------------------------------ memory
    def _alloc(self, size: int) -> int:
        arr = np.zeros(max(size, 1) + 256, np.uint8)
        addr = (arr.ctypes.data + 255) // 256 * 256
        self.blocks[addr] = arr
        return addr

    def _dispatch(self, idx: int, v) -> int:
        name = self.names[idx].removeprefix("hipdnn_ep_")
        self.calls.append(name)
        try:
            return getattr(self, "fn_" + name)(v)
        except Exception as exc:  # report as a status, like the runtime would
            self.error = repr(exc)
            return self.enums["hipdnn_ep_status"]["INTERNAL"]

    def _out_ptr(self, addr: int, value: int) -> None:
        ctypes.c_uint64.from_address(addr).value = value

    def fn_malloc(self, v) -> int:
        self._out_ptr(v[2], self._alloc(v[1]))
        return 0

    def fn_output_alloc(self, v) -> int:  # (state, outputs, index, size): sets outputs[index].data
        self._out_ptr(v[1] + v[2] * self.ref_size + self.ref_off["data"], self._alloc(v[3]))
        return 0

    def fn_free(self, v) -> int:
        if v[1]:
            self.blocks.pop(v[1])
        return 0

    def fn_memcpy(self, v) -> int:
        ctypes.memmove(v[1], v[2], v[3])
        return 0

    def fn_get_host_scratch_base(self, v) -> int:
        if self.scratch is None or self.scratch[1] < v[1]:
            self.scratch = (self._alloc(v[1]), v[1])
        self._out_ptr(v[2], self.scratch[0])
        return 0

    def fn_get_pool_base(self, v) -> int:
        if self.pool is None or self.pool[1] < v[1]:
            self.pool = (self._alloc(v[1]), v[1])
        self._out_ptr(v[2], self.pool[0])
        return 0

    # ------------------------------------------------------------ tensors
    def tensor(self, ref_addr: int) -> np.ndarray:
        o = self.ref_off
        data = ctypes.c_uint64.from_address(ref_addr + o["data"]).value
        dims_p = ctypes.c_uint64.from_address(ref_addr + o["dims"]).value
        rank = ctypes.c_int32.from_address(ref_addr + o["rank"]).value
        dtype = ctypes.c_int32.from_address(ref_addr + o["dtype"]).value
        if data == 0 and rank == -1:
            return None  # an absent optional input
        dims = tuple(ctypes.c_int64.from_address(dims_p + 8 * k).value for k in range(rank))
        return _view(data, dims, NP[dtype])

    def kernel_args(self, addr: int):
        o = self.args_off
        u64 = lambda off: ctypes.c_uint64.from_address(addr + off).value  # noqa: E731
        i32 = lambda off: ctypes.c_int32.from_address(addr + off).value  # noqa: E731
        ins = [self.tensor(u64(o["inputs"]) + k * self.ref_size) for k in range(i32(o["n_inputs"]))]
        outs = [self.tensor(u64(o["outputs"]) + k * self.ref_size) for k in range(i32(o["n_outputs"]))]
        ints = [ctypes.c_int64.from_address(u64(o["int_attrs"]) + 8 * k).value for k in range(i32(o["n_int_attrs"]))]
        floats = [ctypes.c_double.from_address(u64(o["float_attrs"]) + 8 * k).value
                  for k in range(i32(o["n_float_attrs"]))]
        return ins, outs, ints, floats

    def _kernel(self, v, fn) -> int:
        ins, outs, ints, floats = self.kernel_args(v[1])
        result = fn(ins, outs[0], ints, floats)
        outs[0][...] = np.asarray(result).astype(outs[0].dtype, copy=False).reshape(outs[0].shape)
        return 0

    def _op(self, enum: str, code: int) -> str:
        return {val: key for key, val in self.enums[enum].items()}[code]

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
                    "SHIFT_LEFT": lambda x, s: shift(x, s, True), "SHIFT_RIGHT": lambda x, s: shift(x, s, False)})

        def run(i, o, ints, f):
            op = self._op("hipdnn_ep_binary_op", ints[0])
            if op == "DIV" and np.issubdtype(i[0].dtype, np.integer):
                return _int_divide(i[0], i[1])
            if op == "POW" and np.issubdtype(i[0].dtype, np.integer):
                return _int_pow(i[0], i[1])
            return ops[op](i[0], i[1])
        return self._kernel(v, run)

    def fn_kernel_unary(self, v):
        from math import erf
        verf = np.vectorize(erf, otypes=[np.float64])
        ops = {"RELU": lambda x: np.maximum(x, 0), "SIGMOID": lambda x: 1 / (1 + np.exp(-x)), "TANH": np.tanh,
               "EXP": np.exp, "LOG": np.log, "SQRT": np.sqrt, "NEG": np.negative, "ERF": verf,
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
        return self._kernel(v, lambda i, o, ints, f: i[0].astype(o.dtype))

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
            fn = {"SUM": np.sum, "MEAN": np.mean, "MAX": np.max, "MIN": np.min, "PROD": np.prod,
                  "L1": lambda x, **k: np.sum(np.abs(x), **k), "L2": lambda x, **k: np.sqrt(np.sum(x * x, **k)),
                  "LOG_SUM": lambda x, **k: np.log(np.sum(x, **k)),
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

    # ------------------------------------------------------------ quantization kernels
    @staticmethod
    def _expand_scale(x, scale, axis, block):
        """The scale (or zero point) of each element of x: per tensor, per axis or blocked."""
        if scale is None:
            return 0
        if block == 0 and scale.size == 1:
            return scale.reshape(())
        if block == 0:
            return scale.reshape([-1 if d == axis else 1 for d in range(x.ndim)])
        return np.repeat(scale, block, axis=axis).take(np.arange(x.shape[axis]), axis=axis)

    def fn_kernel_quantize_linear(self, v):
        def run(i, o, ints, f):
            axis, block = ints
            scale = self._expand_scale(i[0], i[1], axis, block).astype(np.float32)
            zp = self._expand_scale(i[0], i[2] if len(i) > 2 else None, axis, block)
            q = np.rint(i[0].astype(np.float32) / scale) + np.asarray(zp, np.float32)
            info = np.iinfo(o.dtype)
            return np.clip(q, info.min, info.max)
        return self._kernel(v, run)

    def fn_kernel_dequantize_linear(self, v):
        def run(i, o, ints, f):
            axis, block = ints
            scale = self._expand_scale(i[0], i[1], axis, block).astype(np.float32)
            zp = self._expand_scale(i[0], i[2] if len(i) > 2 else None, axis, block)
            return (i[0].astype(np.int64) - np.asarray(zp, np.int64)).astype(np.float32) * scale
        return self._kernel(v, run)

    def fn_kernel_dynamic_quantize_linear(self, v):
        def run(i, outs, ints, f):
            x = i[0].astype(np.float32)
            lo = np.float32(min(0.0, x.min(initial=0.0)))
            hi = np.float32(max(0.0, x.max(initial=0.0)))
            scale = np.float32(1.0) if hi == lo else np.float32((hi - lo) / np.float32(255))
            zp = np.clip(np.rint(-lo / scale), 0, 255)
            return [np.clip(np.rint(x / scale) + zp, 0, 255), scale, zp]
        return self._kernel_outputs(v, run)

    def fn_kernel_matmul_integer(self, v):
        def run(i, o, ints, f):
            a = i[0].astype(np.int64) - (i[2].astype(np.int64).reshape(-1, 1) if len(i) > 2 and i[2] is not None
                                         else 0)
            b = i[1].astype(np.int64) - (i[3].astype(np.int64).reshape(-1) if len(i) > 3 and i[3] is not None
                                         else 0)
            return (a @ b).astype(np.int64).astype(np.uint32).astype(np.int32)
        return self._kernel(v, run)

    # ------------------------------------------------------------ LLM kernels
    def _kernel_outputs(self, v, fn) -> int:
        """A kernel with several outputs: fn returns one array per output."""
        ins, outs, ints, floats = self.kernel_args(v[1])
        for out, result in zip(outs, fn(ins, outs, ints, floats), strict=True):
            out[...] = np.asarray(result).astype(out.dtype, copy=False).reshape(out.shape)
        return 0

    def fn_kernel_matmul_nbits(self, v):
        def run(i, o, ints, f):
            k, n, _, block = ints
            b, scales, zp = i[1], i[2], i[3] if len(i) > 3 else None
            blocks = -(-k // block)
            q = np.stack([b & 15, b >> 4], axis=-1).reshape(n, blocks, block).astype(np.float64)
            z = (np.full((n, blocks), 8.0) if zp is None else
                 np.stack([zp & 15, zp >> 4], axis=-1).reshape(n, -1)[:, :blocks].astype(np.float64))
            w = ((q - z[..., None]) * scales.reshape(n, blocks, 1)).reshape(n, -1)[:, :k]
            y = i[0].astype(np.float64) @ w.T
            return y + i[4] if len(i) > 4 and i[4] is not None else y
        return self._kernel(v, run)

    def fn_kernel_rms_norm(self, v):
        def run(i, outs, ints, f):
            x = i[0].astype(np.float64)
            for extra in i[2:]:
                x = x + extra if extra is not None else x
            axes = tuple(range(ints[0], x.ndim))
            y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + f[0]) * i[1]
            return [y, x][:len(outs)]
        return self._kernel_outputs(v, run)

    @staticmethod
    def _rope(x, pos, cos, sin, interleaved, rotary_dim):
        """x [..., head] rotated at positions pos (broadcast to x's leading dims)."""
        x = x.astype(np.float64).copy()
        half = rotary_dim // 2
        c, s = cos[pos][..., :half], sin[pos][..., :half]
        i1 = slice(0, 2 * half, 2) if interleaved else slice(0, half)
        i2 = slice(1, 2 * half, 2) if interleaved else slice(half, 2 * half)
        x1, x2 = x[..., i1].copy(), x[..., i2].copy()
        x[..., i1], x[..., i2] = x1 * c - x2 * s, x2 * c + x1 * s
        return x

    def fn_kernel_rotary_embedding(self, v):
        def run(i, o, ints, f):
            x, pos, cos, sin = i
            interleaved, heads, rdim = ints
            rdim = rdim or 2 * cos.shape[1]
            if x.ndim == 4:
                b, h, s, d = x.shape
                xs = x.transpose(0, 2, 1, 3)
            else:
                b, s, hidden = x.shape
                d = hidden // heads if heads else rdim
                xs = x.reshape(b, s, hidden // d, d)
            if pos.size == b * s and pos.ndim == 2:
                p = pos.reshape(b, s)
            else:
                p = np.broadcast_to(pos[0] + np.arange(s), (b, s))
            y = self._rope(xs, p[:, :, None], cos, sin, interleaved, rdim)
            return y.transpose(0, 2, 1, 3) if x.ndim == 4 else y.reshape(x.shape)
        return self._kernel(v, run)

    def fn_kernel_group_query_attention(self, v):
        def run(i, outs, ints, f):
            heads, kvh, window, do_rotary, interleaved = ints
            scale, softcap = f
            q = i[0]
            bsz, seq, width = q.shape
            packed = i[1] is None
            d = width // (heads + 2 * kvh) if packed else width // heads
            if packed:
                q, k, v_ = q[..., :heads * d], q[..., heads * d:(heads + kvh) * d], q[..., (heads + kvh) * d:]
            else:
                k, v_ = i[1], i[2]
            past_k, past_v = (i[3], i[4]) if len(i) > 3 and i[3] is not None else (None, None)
            seqlens, total = i[5], int(i[6].reshape(-1)[0])
            present_len = outs[1].shape[2]
            q = q.reshape(bsz, seq, heads, d).astype(np.float64)
            k = k.reshape(bsz, seq, kvh, d).astype(np.float64)
            v_ = v_.reshape(bsz, seq, kvh, d).astype(np.float64)
            pk, pv = np.zeros((bsz, kvh, present_len, d)), np.zeros((bsz, kvh, present_len, d))
            out = np.zeros((bsz, seq, heads, d))
            scale = scale or 1 / np.sqrt(d)
            first = seq == total
            for b in range(bsz):
                valid = int(seqlens[b]) + 1
                past = 0 if first else valid - seq
                if past:
                    pk[b, :, :past], pv[b, :, :past] = past_k[b, :, :past], past_v[b, :, :past]
                pos = np.array([(s if s < valid else 1) if first else past + s for s in range(seq)])
                kb, qb = k[b], q[b]
                if do_rotary:
                    rdim = 2 * i[7].shape[1]
                    kb = self._rope(kb, pos[:, None], i[7], i[8], interleaved, rdim)
                    qb = self._rope(qb, pos[:, None], i[7], i[8], interleaved, rdim)
                pk[b, :, past:past + seq], pv[b, :, past:past + seq] = kb.transpose(1, 0, 2), v_[b].transpose(1, 0, 2)
                for h in range(heads):
                    g = h // (heads // kvh)
                    for s in range(seq):
                        end = min(past + s + 1, valid)
                        begin = max(0, end - window) if window > 0 else 0
                        sc = pk[b, g, begin:end] @ qb[s, h] * scale
                        if softcap > 0:
                            sc = softcap * np.tanh(sc / softcap)
                        p = np.exp(sc - sc.max())
                        out[b, s, h] = (p / p.sum()) @ pv[b, g, begin:end]
            return [out.reshape(bsz, seq, heads * d), pk, pv]
        return self._kernel_outputs(v, run)

    def fn_kernel_conv_transpose(self, v):
        def run(i, o, ints, f):
            r = i[0].ndim - 2
            geo = [int(g) for g in i[3]]
            return conv_transpose_ref(i[0], i[1], i[2], geo[:r], geo[r:2 * r], geo[2 * r:], ints[0], o.shape[2:])
        return self._kernel(v, run)

    def fn_kernel_grid_sample(self, v):
        def run(i, o, ints, f):
            return grid_sample_ref(i[0], i[1], *ints)
        return self._kernel(v, run)

    def fn_kernel_resize(self, v):
        def run(i, o, ints, f):
            r = i[0].ndim
            bits = np.array([int(g) for g in i[1]], np.uint32)
            vals = bits.view(np.float32).astype(np.float64)
            scales = [0.0 if bits[d] == 0 else vals[d] for d in range(r)]
            return resize_ref(i[0], ints[0], ints[1], ints[2], ints[3], ints[4], f[0], f[1], scales,
                              vals[r:2 * r], vals[2 * r:], o.shape)
        return self._kernel(v, run)

    # ------------------------------------------------------------ vision kernels
    @staticmethod
    def _windows(x, out_spatial, kernel, strides, pads, dilations, fill):
        """x [N, C, *S] padded with `fill`, as [N, C, *out, *kernel] views of each output's window taps."""
        r = len(out_spatial)
        hi = [max(0, (o - 1) * s + (k - 1) * d + 1 - n - p)
              for o, s, k, d, n, p in zip(out_spatial, strides, kernel, dilations, x.shape[2:], pads, strict=True)]
        xp = np.pad(x, [(0, 0), (0, 0)] + [(p, h) for p, h in zip(pads, hi, strict=True)], constant_values=fill)
        taps = np.empty(x.shape[:2] + tuple(out_spatial) + tuple(kernel), x.dtype)
        for o in np.ndindex(*out_spatial):
            for k in np.ndindex(*kernel):
                idx = tuple(oi * s + ki * d for oi, s, ki, d in zip(o, strides, k, dilations, strict=True))
                taps[(slice(None), slice(None)) + o + k] = xp[(slice(None), slice(None)) + idx]
        return taps, r

    def fn_kernel_conv(self, v):
        def run(i, o, ints, f):
            x, wt, b = (a.astype(np.float64) for a in i[:3])
            r = x.ndim - 2
            geo = [int(g) for g in i[3]]
            strides, pads, dilations = geo[:r], geo[r:2 * r], geo[2 * r:]
            taps, _ = self._windows(x, o.shape[2:], wt.shape[2:], strides, pads, dilations, 0.0)
            group = ints[0]
            cg, mg = x.shape[1] // group, wt.shape[0] // group
            outs = []
            for g in range(group):
                t = taps[:, g * cg:(g + 1) * cg]  # [N, cg, *out, *k]
                wg = wt[g * mg:(g + 1) * mg]      # [mg, cg, *k]
                t = np.moveaxis(t, 1, 1 + r)      # [N, *out, cg, *k]
                outs.append(np.tensordot(t, wg, axes=(list(range(1 + r, 2 + 2 * r)), list(range(1, 2 + r)))))
            y = np.concatenate(outs, axis=-1) + b  # [N, *out, M]
            return np.moveaxis(y, -1, 1)
        return self._kernel(v, run)

    def fn_kernel_conv_integer(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64) - float(i[2].reshape(-1)[0])  # padding (0) is x_zero_point less itself
            wt = i[1].astype(np.float64) - i[3].astype(np.float64).reshape((-1,) + (1,) * (i[1].ndim - 1))
            r = x.ndim - 2
            geo = [int(g) for g in i[4]]
            strides, pads, dilations = geo[:r], geo[r:2 * r], geo[2 * r:]
            taps, _ = self._windows(x, o.shape[2:], wt.shape[2:], strides, pads, dilations, 0.0)
            group = ints[0]
            cg, mg = x.shape[1] // group, wt.shape[0] // group
            outs = []
            for g in range(group):
                t = np.moveaxis(taps[:, g * cg:(g + 1) * cg], 1, 1 + r)
                outs.append(np.tensordot(t, wt[g * mg:(g + 1) * mg],
                                         axes=(list(range(1 + r, 2 + 2 * r)), list(range(1, 2 + r)))))
            y = np.moveaxis(np.concatenate(outs, axis=-1), -1, 1)  # exact: |y| < 2**53
            return y.astype(np.int64).astype(np.uint32).astype(np.int32)
        return self._kernel(v, run)

    def fn_kernel_pool(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64)
            r = x.ndim - 2
            geo = [int(g) for g in i[1]]
            kernel, strides, pads, ends, dilations = (geo[k * r:(k + 1) * r] for k in range(5))
            taps, _ = self._windows(x, o.shape[2:], kernel, strides, pads, dilations, np.nan)
            axes = tuple(range(2 + r, 2 + 2 * r))
            if self._op("hipdnn_ep_pool_op", ints[0]) == "MAX":
                return np.nanmax(taps, axis=axes)
            if not ints[1]:
                return np.nanmean(taps, axis=axes)
            # count_include_pad: taps inside X and its pads count, ceil_mode's extra ones do not
            ones = np.ones((1, 1) + x.shape[2:])
            inside, _ = self._windows(np.pad(ones, [(0, 0), (0, 0)] + list(zip(pads, ends, strict=True)),
                                             constant_values=1.0), o.shape[2:], kernel, strides,
                                      [0] * r, dilations, 0.0)
            return np.nansum(taps, axis=axes) / inside.sum(axis=axes)
        return self._kernel(v, run)

    def fn_kernel_batch_norm(self, v):
        def run(i, o, ints, f):
            x, scale, b, mean, var = (a.astype(np.float64) for a in i)
            shape = (1, -1) + (1,) * (x.ndim - 2)
            return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + f[0]) * scale.reshape(shape) \
                + b.reshape(shape)
        return self._kernel(v, run)

    def fn_kernel_activation(self, v):
        def run(i, o, ints, f):
            x = i[0].astype(np.float64)
            a, b = f
            sp = np.logaddexp(0.0, x)
            return {"HARD_SIGMOID": lambda: np.clip(a * x + b, 0, 1),
                    "HARD_SWISH": lambda: x * np.clip(x / 6 + 0.5, 0, 1),
                    "LEAKY_RELU": lambda: np.where(x < 0, a * x, x),
                    "ELU": lambda: np.where(x < 0, a * np.expm1(x), x),
                    "SELU": lambda: b * np.where(x <= 0, a * np.expm1(x), x),
                    "CELU": lambda: np.maximum(0, x) + np.minimum(0, a * np.expm1(x / a)),
                    "SOFTPLUS": lambda: sp,
                    "MISH": lambda: x * np.tanh(sp),
                    "THRESHOLDED_RELU": lambda: np.where(x > a, x, 0.0)}[self._op("hipdnn_ep_activation_op", ints[0])]()
        return self._kernel(v, run)

    # ------------------------------------------------------------ running artifacts
    def run(self, program: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Run an artifact's program with host arrays (graph inputs then weights)."""
        from hipdnn_ep_compiler.artifact import read_metadata

        meta = read_metadata(program)
        lib = ctypes.CDLL(str(program))
        entry = getattr(lib, self.manifest["program_entry"]["name"])
        entry.restype = ctypes.c_int32
        entry.argtypes = [ctypes.c_void_p] * 3
        keep = [np.require(a, requirements="C") for a in inputs]  # ascontiguousarray would make 0-d arrays 1-d
        dims = [np.array(a.shape, np.int64) for a in keep]
        ins = (ctypes.c_uint8 * (self.ref_size * max(len(keep), 1)))()
        base = ctypes.addressof(ins)
        for k, (a, d) in enumerate(zip(keep, dims, strict=False)):
            r = base + k * self.ref_size
            ctypes.c_uint64.from_address(r + self.ref_off["data"]).value = a.ctypes.data
            ctypes.c_uint64.from_address(r + self.ref_off["dims"]).value = d.ctypes.data
            ctypes.c_int32.from_address(r + self.ref_off["rank"]).value = a.ndim
            ctypes.c_int32.from_address(r + self.ref_off["dtype"]).value = CODE[a.dtype]
        n_out = len(meta["outputs"])
        outs = (ctypes.c_uint8 * (self.ref_size * n_out))()
        self.error = None
        status = entry(None, base, ctypes.addressof(outs))
        if status != 0:
            raise RuntimeError(f"program returned status {status} ({self.error})")
        results = []
        for k in range(n_out):
            t = self.tensor(ctypes.addressof(outs) + k * self.ref_size)
            results.append(t.copy())
            self.fn_free([0, ctypes.c_uint64.from_address(ctypes.addressof(outs) + k * self.ref_size).value])
        return results


# ---------------------------------------------------------------- ConvTranspose and Resize references


def conv_transpose_ref(x, w, b, strides, pads, dilations, group, out_spatial):
    """ConvTranspose by scattering each kernel tap's contribution (float64 numpy loops over the taps)."""
    x, w, b = (a.astype(np.float64) for a in (x, w, b))
    n, c = x.shape[:2]
    r = x.ndim - 2
    cg, mg = c // group, w.shape[1]
    y = np.zeros((n, mg * group, *out_spatial))
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        for k in np.ndindex(*w.shape[2:]):
            wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + k]  # [cg, mg]
            contrib = np.einsum("nc...,cm->nm...", xg, wk)  # [N, mg, *in]
            src, dst = [], []
            for d in range(r):
                p = np.arange(x.shape[2 + d])
                o = p * strides[d] - pads[d] + k[d] * dilations[d]
                ok = (o >= 0) & (o < out_spatial[d])
                src.append(p[ok])
                dst.append(o[ok])
            ys = y[:, g * mg:(g + 1) * mg]
            ys[(slice(None), slice(None)) + np.ix_(*dst)] += contrib[(slice(None), slice(None)) + np.ix_(*src)]
    return y + b.reshape(1, -1, *([1] * r))


def resize_axis_weights(mode, coord, nearest, exclude, antialias, a, n_in, n_out, scale, roi_start, roi_end):
    """Resize along one axis as a [out, in] weight matrix and the rows outside the roi (extrapolated):
    the ONNX reference's per-coordinate taps, coordinates computed in float32 as onnxruntime does."""
    f = np.float32
    m = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, bool)
    for o in range(n_out):
        xo, lo, li, s = f(o), f(n_out), f(n_in), f(scale)
        if coord == 1:
            adj = lo / (s * li)
            x = li / f(2) * (f(1) - adj) + (xo + f(0.5)) / s - f(0.5)
        elif coord == 2:
            x = (xo + f(0.5)) / s - f(0.5) if n_out > 1 else f(0)
        elif coord == 3:
            x = f(0) if n_out == 1 else xo * (li - f(1)) / (lo - f(1))
        elif coord == 4:
            x = xo / s
        elif coord == 5:
            x = (xo + f(0.5)) / s
        elif coord == 6:
            rs, re = f(roi_start), f(roi_end)
            x = (rs * (li - f(1)) + xo * (re - rs) * (li - f(1)) / (lo - f(1)) if n_out > 1
                 else f(0.5) * (rs + re) * (li - f(1)))
        else:
            x = (xo + f(0.5)) / s - f(0.5)
        x = float(x)
        if coord == 6 and (x < 0 or x > n_in - 1):
            outside[o] = True
            continue
        if mode == 0:
            if nearest == 1:
                i = np.floor(x + 0.5) if x >= 0 else -np.floor(-x + 0.5)
            elif nearest == 2:
                i = np.floor(x)
            elif nearest == 3:
                i = np.ceil(x)
            elif nearest == 4:
                i = np.ceil(x) if scale < 1 else np.trunc(x)
            else:
                i = np.floor(x) if x == int(x) + 0.5 else (np.floor(x + 0.5) if x >= 0 else -np.floor(-x + 0.5))
            m[o, min(max(int(i), 0), n_in - 1)] = 1.0
            continue
        base = int(np.ceil(x)) - 1
        ratio = x - base
        ss = min(scale, 1.0) if antialias else 1.0
        support = 1.0 if mode == 1 else 2.0
        start = int(np.floor(-support / ss)) + 1
        js = np.arange(start, 2 - start)
        dist = np.abs((js - ratio) * ss)
        if mode == 1:
            c = np.maximum(0.0, 1.0 - dist)
        else:
            c = np.where(dist <= 1, ((a + 2) * dist - (a + 3)) * dist * dist + 1,
                         np.where(dist < 2, ((a * dist - 5 * a) * dist + 8 * a) * dist - 4 * a, 0.0))
        idx = base + js
        if exclude:
            c = np.where((idx >= 0) & (idx < n_in), c, 0.0)
        c = c / c.sum()
        for k, wk in zip(np.clip(idx, 0, n_in - 1), c, strict=True):
            m[o, k] += wk
    return m, outside


def resize_ref(x, mode, coord, nearest, exclude, antialias, a, extrapolation, scales, roi_starts, roi_ends, out_shape):
    """Resize as one weight matrix per axis (separable), extrapolated positions set afterwards."""
    y = x.astype(np.float64)
    mask = np.zeros(out_shape, bool)
    for d, (n_in, n_out) in enumerate(zip(x.shape, out_shape, strict=True)):
        s = scales[d] if scales[d] != 0 else np.float32(n_out) / np.float32(n_in)
        m, outside = resize_axis_weights(mode, coord, nearest, exclude, antialias, a, n_in, n_out, float(s),
                                         roi_starts[d], roi_ends[d])
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, d, 0), axes=(1, 0)), 0, d)
        shape = [1] * len(out_shape)
        shape[d] = n_out
        mask |= outside.reshape(shape)
    y[mask] = extrapolation
    return y


def grid_sample_ref(x, grid, mode, padding, align):
    """GridSample per output position and tap, in float64 (the ONNX reference's algorithm)."""
    x, grid = x.astype(np.float64), grid.astype(np.float64)
    n, c = x.shape[:2]
    sp = x.shape[2:]
    r = len(sp)
    out = grid.shape[1:-1]
    y = np.zeros((n, c, *out))

    def reflect(v, lo, hi):
        rng = hi - lo
        if rng <= 0:
            return 0.0
        if v < lo:
            dx = lo - v
            k = int(dx / rng)
            rr = dx - k * rng
            return lo + rr if k % 2 == 0 else hi - rr
        if v > hi:
            dx = v - hi
            k = int(dx / rng)
            rr = dx - k * rng
            return hi - rr if k % 2 == 0 else lo + rr
        return v

    def bounds(size):
        return (0.0, size - 1.0) if align else (-0.5, size - 0.5)

    def index(i, size):
        if padding == 0:
            return i if 0 <= i < size else None
        if padding == 1:
            return min(max(i, 0), size - 1)
        return min(max(int(reflect(float(i), *bounds(size))), 0), size - 1)

    def cubic(d, a=-0.75):
        d = abs(d)
        if d <= 1:
            return ((a + 2) * d - (a + 3)) * d * d + 1
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0

    for b in range(n):
        for o in np.ndindex(*out):
            taps = []
            for d in range(r):
                g = grid[(b, *o, r - 1 - d)]
                s = sp[d]
                v = (g + 1) / 2 * (s - 1) if align else ((g + 1) * s - 1) / 2
                if padding == 1 and mode != 2:  # cubic pads each tap's index only (as onnxruntime)
                    v = min(max(v, 0.0), s - 1.0)
                elif padding == 2 and mode != 2:
                    v = reflect(v, *bounds(s))
                if mode == 1:
                    taps.append([(int(np.rint(v)), 1.0)])
                elif mode == 0:
                    f = np.floor(v)
                    taps.append([(int(f), 1 - (v - f)), (int(f) + 1, v - f)])
                else:
                    f = np.floor(v)
                    taps.append([(int(f) - 1 + j, cubic(v - f - (j - 1))) for j in range(4)])
            for combo in itertools.product(*taps):
                idx = [index(i, sp[d]) for d, (i, _) in enumerate(combo)]
                if any(i is None for i in idx):
                    continue
                w = np.prod([wt for _, wt in combo])
                y[(b, slice(None), *o)] += w * x[(b, slice(None), *idx)]
    return y
