"""What `hipdnn-ep bench` measures besides speed: the bytes a decode step must read and the model must hold
(weights, the KV cache), the copy rate that turns them into the floor of a decode step, and the memory
the runtime and the device report for this process."""

from __future__ import annotations

import os
import subprocess
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bench import Decoder


def runtime_peak_bytes(backend: str, device: int) -> int | None:
    """The most memory the runtime held at once in this process on one device (its caching allocators' segments
    and GEMM workspaces): every state of this EP there (its allocator's, its runs', with the weights they
    uploaded), since the process started.
    None where the runtime cannot say: a runtime before ABI 1.3, or no state open on that device from the
    runtime library this module loaded (an EP given another library by its runtime_library option)."""
    import hipdnn_ep_runtime as rt  # noqa: PLC0415  (the library the EP loaded: one copy per process)

    if not hasattr(rt, "device_memory_stats"):
        return None
    stats = rt.device_memory_stats(backend, device)
    return stats["peak_bytes_reserved"] if stats["states"] else None


def process_device_mib() -> float | None:
    """Device memory this process holds (nvidia-smi's per-process figure), or None where it cannot say."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    used = [float(f[1]) for f in (line.split(",") for line in out.splitlines())
            if len(f) == 2 and f[0].strip() == str(os.getpid())]
    return sum(used) if used else None


def copy_bandwidth(size: int = 256 << 20, repeats: int = 5) -> float:
    """Bytes per second (read + write) of the best of `repeats` copies of a `size`-byte buffer."""
    import numpy as np  # noqa: PLC0415

    src = np.ones(size, np.uint8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    return 2 * size / best


def device_copy_bandwidth(backend: str, size: int = 1 << 30, repeats: int = 5) -> float:
    """Bytes per second (read + write) of the best of `repeats` device-to-device copies of `size` bytes."""
    import hipdnn_ep_runtime as rt  # noqa: PLC0415

    device_to_device = 3  # hipdnn_ep_memcpy_kind DEVICE_TO_DEVICE
    with rt.State(backend=backend) as state:
        src, dst = state.malloc(size), state.malloc(size)
        try:
            best = float("inf")
            for _ in range(repeats + 1):
                state.synchronize()
                t = time.perf_counter()
                state.memcpy(dst, src, size, device_to_device)
                state.synchronize()
                best = min(best, time.perf_counter() - t)
        finally:
            state.free(src)
            state.free(dst)
    return 2 * size / best


def _weight_bytes(model, batch: int | None) -> int:
    """Bytes of the model's initializers; with `batch`, an embedding table (a Gather's data and nothing else's)
    counts one row per sequence (what a decode step reads of it)."""
    from onnx import helper  # noqa: PLC0415

    gathered = {n.input[0] for n in model.graph.node if n.op_type == "Gather"}
    users: dict[str, int] = {}
    for n in model.graph.node:
        for i in n.input:
            users[i] = users.get(i, 0) + 1
    weights = 0
    for t in model.graph.initializer:
        item = helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        count = 1
        for d in t.dims:
            count *= d
        if batch is not None and t.name in gathered and users.get(t.name) == 1 and t.dims:
            count = batch * (count // t.dims[0])
        weights += count * item
    return weights


def _kv_bytes(model, decoder: Decoder, batch: int, positions: float) -> float:
    import onnx  # noqa: PLC0415

    kv_item = 2 if any(i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16 for i in model.graph.input) else 4
    return 2 * decoder.layers * batch * decoder.kv_heads * positions * decoder.head_size * kv_item


def decode_bytes(decoder: Decoder, batch: int, context: float) -> tuple[int, float]:
    """(weight bytes one decode step reads, KV bytes at `context` positions)."""
    import onnx  # noqa: PLC0415

    model = onnx.load(str(decoder.model), load_external_data=False)
    return _weight_bytes(model, batch), _kv_bytes(model, decoder, batch, context)


def resident_bytes(decoder: Decoder, batch: int, positions: int) -> tuple[int, int]:
    """(bytes of every weight, bytes of the KV cache at `positions` positions): what an EP must hold in its memory
    to generate; issue 11's target for peak device memory is this plus 10%."""
    import onnx  # noqa: PLC0415

    model = onnx.load(str(decoder.model), load_external_data=False)
    return _weight_bytes(model, None), int(_kv_bytes(model, decoder, batch, positions))
