"""The reference runtime's memory, tensor refs, kernel-call plumbing and the running of a program."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np

from .shim import CODE, DISPATCH, NP, _view, build_shim


class RuntimeBase:
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

    def _kernel_outputs(self, v, fn) -> int:
        """A kernel with several outputs: fn returns one array per output."""
        ins, outs, ints, floats = self.kernel_args(v[1])
        for out, result in zip(outs, fn(ins, outs, ints, floats), strict=True):
            out[...] = np.asarray(result).astype(out.dtype, copy=False).reshape(out.shape)
        return 0

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
