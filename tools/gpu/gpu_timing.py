"""What the GPU benchmarks share: calling a compiled program through the runtime's C ABI with its
inputs and weights resident on the device, and timing a loop of calls.

Used by tools/gpu/gpu_bench.py and tools/bench/ (encoder_bench, bert_bench, llm_kernel_bench). A
program is called with ctypes (no Python-level copies per run); its outputs come back as device blocks
the caller frees, and `DeviceProgram.run_once` copies them to numpy for the accuracy checks. Kernel
profiles come from CUDA's profiler through torch.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from pathlib import Path

import hipdnn_ep_runtime as rt
import numpy as np

DTYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10, np.dtype(np.int64): 7, np.dtype(np.int32): 6}
H2D, D2H = 1, 2


class TensorRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


def runtime_lib() -> ctypes.CDLL:
    """The runtime library with the signatures the benchmarks call."""
    lib = ctypes.CDLL(rt.library_path())
    lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
    lib.hipdnn_ep_artifact_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hipdnn_ep_artifact_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(TensorRef),
                                           ctypes.POINTER(TensorRef)]
    lib.hipdnn_ep_artifact_close.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.hipdnn_ep_malloc.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
    return lib


def time_loop(fn: Callable[[], object], sync: Callable[[], object], runs: int, warmup: int = 10) -> float:
    """Seconds per call of fn, averaged over `runs` calls after `warmup`, the device drained at both ends."""
    for _ in range(warmup):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    sync()
    return (time.perf_counter() - start) / runs


def torch_graph(fn: Callable[[], object]) -> Callable[[], object]:
    """fn captured into a torch CUDA graph (one warm-up call and the capture on a side stream, as torch asks):
    the graph's replay. Call it under torch.no_grad() when fn computes with tensors that require grad."""
    import torch

    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
        with torch.cuda.graph(graph):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph.replay


def time_torch_graph(fn: Callable[[], object], runs: int) -> float:
    """Seconds per replay of fn captured into a torch CUDA graph (torch_graph), `runs` replays back to back
    timed with time_loop."""
    import torch

    return time_loop(torch_graph(fn), torch.cuda.synchronize, runs)


def kernel_label(name: str) -> str:
    """A CUDA kernel's name without namespaces, template arguments and parameters."""
    name = name.replace("(anonymous namespace)", "").split("(")[0]
    depth, plain = 0, ""
    for ch in name:
        depth += ch == "<"
        if depth == 0:
            plain += ch
        depth -= ch == ">"
    return plain.split("::")[-1].split(" ")[-1]


def _cuda_profile(step: Callable[[], object], runs: int):
    """torch's profiler (CUDA activity) over `runs` calls of `step`, after one call outside it."""
    from torch.profiler import ProfilerActivity, profile

    step()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            step()
    return prof


def kernel_profile(step: Callable[[], object], runs: int) -> list[tuple[str, float, float]]:
    """Where the device time of one call of `step` (which drains the device) goes: (kernel, launches, us)
    per call, the largest first, from CUDA's profiler through torch (it sees every kernel of the process,
    those of replayed graphs included)."""
    from torch.autograd import DeviceType

    rows: dict[str, tuple[float, float]] = {}
    for e in _cuda_profile(step, runs).key_averages():
        if e.device_type == DeviceType.CUDA:
            label = kernel_label(e.key)
            n, us = rows.get(label, (0.0, 0.0))
            rows[label] = (n + e.count / runs, us + e.self_device_time_total / runs)
    return sorted(((k, n, us) for k, (n, us) in rows.items()), key=lambda r: -r[2])


def device_timeline(step: Callable[[], object], runs: int, max_gap_us: float = 20.0) -> tuple[float, float, int]:
    """How one call of `step` (which drains the device) occupies the device: (kernel us, idle us between its
    kernels, kernels) per call, from the kernels' start and end times in CUDA's profiler. The device is idle
    longer than `max_gap_us` only between calls (the host's part of a call: its run, copies and the
    synchronization), so such gaps separate calls and are not counted; shorter ones are the launch gaps
    inside a call."""
    from torch.autograd import DeviceType

    spans = sorted((e.time_range.start, e.time_range.end) for e in _cuda_profile(step, runs).events()
                   if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start)
    busy = sum(end - start for start, end in spans)
    idle, last_end = 0.0, None
    for start, end in spans:
        if last_end is not None and 0 < start - last_end <= max_gap_us:
            idle += start - last_end
        last_end = end if last_end is None else max(last_end, end)
    return busy / runs, idle / runs, round(len(spans) / runs)


def print_kernel_profile(title: str, kernels: list[tuple[str, float, float]], top: int = 15) -> None:
    total = sum(us for _, _, us in kernels)
    launches = sum(n for _, n, _ in kernels)
    print(f"\n{title}: {launches:.0f} launches, {total:.1f} us of kernels per forward")
    print(f"{'kernel':48} {'launches':>9} {'us':>8} {'share':>6}")
    for name, n, us in kernels[:top]:
        print(f"{name[:48]:48} {n:9.0f} {us:8.1f} {us / total:6.1%}")


class DeviceProgram:
    """A compiled artifact on one state, its arrays (graph inputs, then weights) uploaded once."""

    def __init__(self, directory: Path, state: rt.State, arrays: list[np.ndarray]) -> None:
        self.lib = runtime_lib()
        self.state = state
        self.state_ptr = ctypes.c_void_p(state._handle())
        self.handle = ctypes.c_void_p()
        if self.lib.hipdnn_ep_artifact_open(str(directory / "program.so").encode(), ctypes.byref(self.handle)) != 0:
            raise RuntimeError(self.lib.hipdnn_ep_last_error().decode())
        with rt.Artifact(directory) as artifact:
            self.n_outputs = len(artifact.metadata["outputs"])
        self.refs = (TensorRef * len(arrays))()
        self.out = (TensorRef * self.n_outputs)()
        self.ptrs, self.keep = [], []
        for i, a in enumerate(arrays):
            a = np.array(a, order="C")  # keeps 0-d arrays 0-d (ascontiguousarray makes them 1-d)
            p = state.malloc(max(a.nbytes, 1))
            state.memcpy(p, a.ctypes.data, a.nbytes, H2D)
            d = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            self.keep.append(d)
            self.ptrs.append(p)
            self.refs[i] = TensorRef(p, d, a.ndim, DTYPES[a.dtype])

    def __call__(self) -> None:
        """One run, its outputs freed (the loop the benchmarks time)."""
        if self.lib.hipdnn_ep_artifact_run(self.handle, self.state_ptr, self.refs, self.out) != 0:
            raise RuntimeError(self.lib.hipdnn_ep_last_error().decode())
        for o in self.out:
            self.lib.hipdnn_ep_free(self.state_ptr, o.data)

    def run_once(self) -> list[np.ndarray]:
        """One run with its outputs copied to numpy."""
        if self.lib.hipdnn_ep_artifact_run(self.handle, self.state_ptr, self.refs, self.out) != 0:
            raise RuntimeError(self.lib.hipdnn_ep_last_error().decode())
        results = []
        for o in self.out:
            dtype = next(k for k, v in DTYPES.items() if v == o.dtype)
            host = np.empty(tuple(o.dims[d] for d in range(o.rank)), dtype)
            self.state.memcpy(host.ctypes.data, o.data, host.nbytes, D2H)
            self.lib.hipdnn_ep_free(self.state_ptr, o.data)
            results.append(host)
        return results

    def close(self) -> None:
        for p in self.ptrs:
            self.state.free(p)
        self.lib.hipdnn_ep_artifact_close(self.handle)
