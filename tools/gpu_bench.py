"""First GPU benchmarks of the runtime, side by side in one run, as ratios.

    python tools/gpu_bench.py [--artifacts build/gpu-artifacts] [--backend cuda]

1. The caching allocator against cudaMalloc/cudaFree (through cupy) and PyTorch's caching
   allocator on a realistic inference pattern: the activations of a BERT-base-shaped encoder
   (12 layers, hidden 768, float16) allocated and freed in layer order, at a fixed sequence
   128 and at sequences that change from run to run (dynamic shapes). Every allocator is driven
   from Python, so each figure includes about the same interpreter overhead per call.
   Fragmentation: bytes reserved over peak bytes in use after the pattern.
2. Per-Run host overhead on a 3-node graph (tools/gpu_artifacts.py's three_node: Add, Relu, Mul
   on [1, 64]): hipdnn_ep_artifact_run called through ctypes with device inputs, the output
   freed each time; host time per run without waiting, and per run once the device is done;
   PyTorch eager issuing the same three ops as the reference.
3. One BERT-base-shaped encoder layer (tools/models.py attention_model: hidden 768, 12 heads,
   seq 128, float32, batch 1) as a compiled program with device-resident weights, against the
   same layer in PyTorch eager and as a replayed CUDA graph, on the same weights and inputs
   (their outputs are compared first).
Prints one table; needs a GPU build of the runtime, and torch/cupy for the peers.
"""

from __future__ import annotations

import argparse
import ctypes
import time
from pathlib import Path

import hipdnn_ep_runtime as rt
import numpy as np

LAYERS, HIDDEN, HEADS, FFN = 12, 768, 12, 3072


def activation_pattern(seq: int) -> list[tuple[str, int, int]]:
    """(op, slot, bytes) of one encoder forward at sequence `seq` (float16, batch 1)."""
    h = seq * HIDDEN * 2
    ops: list[tuple[str, int, int]] = [("alloc", 0, h)]  # embeddings out
    for layer in range(LAYERS):
        base = 1 + layer * 8
        ops += [("alloc", base + 1, 3 * h), ("alloc", base + 2, HEADS * seq * seq * 2),
                ("alloc", base + 3, HEADS * seq * seq * 2), ("free", base + 2, 0), ("alloc", base + 4, h),
                ("free", base + 1, 0), ("free", base + 3, 0), ("alloc", base + 5, h), ("free", base + 4, 0),
                ("alloc", base + 6, seq * FFN * 2), ("alloc", base + 7, h), ("free", base + 6, 0),
                ("free", base + 5, 0), ("free", base if layer else 0, 0), ("alias", base + 7, base + 8)]
    return ops


def run_pattern(ops, alloc, free, keep_last: bool = False) -> int:
    """Runs the ops; returns how many alloc/free pairs it made."""
    live: dict[int, object] = {}
    pairs = 0
    for op, slot, size in ops:
        if op == "alloc":
            live[slot] = alloc(size)
            pairs += 1
        elif op == "free":
            free(live.pop(slot))
        else:  # the layer output becomes the next layer's input slot
            live[size] = live.pop(slot)
    for handle in live.values():
        free(handle)
    return pairs


def time_allocator(alloc, free, seqs: list[int], sync) -> tuple[float, int]:
    patterns = [activation_pattern(s) for s in seqs]
    run_pattern(patterns[0], alloc, free)  # warm the cache
    sync()
    pairs = 0
    start = time.perf_counter()
    for ops in patterns:
        pairs += run_pattern(ops, alloc, free)
    sync()
    return (time.perf_counter() - start) / pairs * 1e6, pairs


def bench_allocators(backend: str, rows: list) -> None:
    rng = np.random.default_rng(0)
    fixed = [128] * 200
    dynamic = [int(s) for s in rng.integers(16, 513, size=200)]
    for label, seqs in (("seq 128", fixed), ("seq 16..512", dynamic)):
        with rt.State(backend=backend) as st:
            ours, _ = time_allocator(st.malloc, st.free, seqs, st.synchronize)
            s = st.memory_stats()
            ours_frag = s["bytes_reserved"] / max(s["peak_bytes_in_use"], 1)
        rows.append((f"allocator, {label}: hipdnn caching", f"{ours:.2f} us/pair", "1.00",
                     f"reserved/peak {ours_frag:.2f}"))
        try:
            import cupy

            def cmalloc(n):
                return cupy.cuda.runtime.malloc(n)

            raw, _ = time_allocator(cmalloc, cupy.cuda.runtime.free, seqs[:20], cupy.cuda.runtime.deviceSynchronize)
            rows.append((f"allocator, {label}: cudaMalloc/cudaFree", f"{raw:.2f} us/pair", f"{raw / ours:.1f}x slower",
                         "(cupy.cuda.runtime)"))
        except ImportError:
            rows.append((f"allocator, {label}: cudaMalloc/cudaFree", "n/a", "", "cupy not installed"))
        try:
            import torch

            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

            def talloc(n):
                return torch.empty(n, dtype=torch.uint8, device="cuda")

            tt, _ = time_allocator(talloc, lambda t: None, seqs, torch.cuda.synchronize)
            frag = torch.cuda.memory_reserved() / max(torch.cuda.max_memory_allocated(), 1)
            rows.append((f"allocator, {label}: PyTorch caching", f"{tt:.2f} us/pair", f"{tt / ours:.2f}x ours",
                         f"reserved/peak {frag:.2f}"))
        except ImportError:
            rows.append((f"allocator, {label}: PyTorch caching", "n/a", "", "torch not installed"))


class TensorRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dims", ctypes.POINTER(ctypes.c_int64)), ("rank", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


def bench_run_overhead(artifacts: Path, backend: str, rows: list, runs: int = 5000) -> None:
    directory = artifacts / "three_node"
    if not (directory / "program.so").exists():
        rows.append(("per-Run overhead (3 nodes)", "n/a", "", f"no {directory}; run tools/gpu_artifacts.py"))
        return
    lib = ctypes.CDLL(rt.library_path())
    lib.hipdnn_ep_artifact_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hipdnn_ep_artifact_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(TensorRef),
                                           ctypes.POINTER(TensorRef)]
    lib.hipdnn_ep_artifact_close.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    feeds = np.load(directory / "feeds.npz")
    arrays = [feeds["w64/x"], feeds["weight/0"], feeds["weight/1"]]
    handle = ctypes.c_void_p()
    assert lib.hipdnn_ep_artifact_open(str(directory / "program.so").encode(), ctypes.byref(handle)) == 0
    with rt.State(backend=backend) as st:
        state_ptr = ctypes.c_void_p(st._handle()) if hasattr(st, "_handle") else None
        if state_ptr is None:
            rows.append(("per-Run overhead (3 nodes)", "n/a", "", "State has no _handle()"))
            return
        ptrs, dims = [], []
        refs = (TensorRef * 3)()
        for i, a in enumerate(arrays):
            p = st.malloc(max(a.nbytes, 1))
            st.memcpy(p, a.ctypes.data, a.nbytes, 1)
            d = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            dims.append(d)
            ptrs.append(p)
            refs[i] = TensorRef(p, d, a.ndim, 1)
        out = (TensorRef * 1)()
        for _ in range(100):  # warm-up
            assert lib.hipdnn_ep_artifact_run(handle, state_ptr, refs, out) == 0
            lib.hipdnn_ep_free(state_ptr, out[0].data)
        st.synchronize()
        start = time.perf_counter()
        for _ in range(runs):
            lib.hipdnn_ep_artifact_run(handle, state_ptr, refs, out)
            lib.hipdnn_ep_free(state_ptr, out[0].data)
        host = (time.perf_counter() - start) / runs * 1e6
        st.synchronize()
        total = (time.perf_counter() - start) / runs * 1e6
        for p in ptrs:
            st.free(p)
    lib.hipdnn_ep_artifact_close(handle)
    rows.append(("per-Run host time, 3-node graph", f"{host:.1f} us", "target <= 20 us",
                 f"{total:.1f} us/run until the device is done (ctypes call included)"))
    try:
        import torch

        x, a, b = (torch.from_numpy(v).cuda() for v in arrays)
        for _ in range(100):
            torch.relu(x + a) * b
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(runs):
            torch.relu(x + a) * b
        t_host = (time.perf_counter() - start) / runs * 1e6
        torch.cuda.synchronize()
        rows.append(("  PyTorch eager, same 3 ops", f"{t_host:.1f} us", f"{host / t_host:.2f}x ours/torch", ""))
    except ImportError:
        pass


def open_artifact(lib, path: Path) -> ctypes.c_void_p:
    lib.hipdnn_ep_artifact_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hipdnn_ep_artifact_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(TensorRef),
                                           ctypes.POINTER(TensorRef)]
    lib.hipdnn_ep_artifact_close.argtypes = [ctypes.c_void_p]
    lib.hipdnn_ep_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    handle = ctypes.c_void_p()
    if lib.hipdnn_ep_artifact_open(str(path).encode(), ctypes.byref(handle)) != 0:
        raise RuntimeError(lib.hipdnn_ep_last_error())
    return handle


def bench_bert_layer(artifacts: Path, backend: str, rows: list, runs: int = 200) -> None:
    directory = artifacts / "bert_layer_seq128"
    if not (directory / "program.so").exists():
        rows.append(("BERT-base layer, seq 128", "n/a", "", f"no {directory}"))
        return
    import torch

    lib = ctypes.CDLL(rt.library_path())
    lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
    feeds = np.load(directory / "feeds.npz")
    n_weights = sum(k.startswith("weight/") for k in feeds.files)
    arrays = [feeds["b1s128/x"], feeds["b1s128/attention_mask"]] + [feeds[f"weight/{i}"] for i in range(n_weights)]
    with rt.Artifact(directory) as artifact:
        names = [w["name"] for w in artifact.metadata["weights"]]
    handle = open_artifact(lib, directory / "program.so")
    with rt.State(backend=backend) as st:
        state_ptr = ctypes.c_void_p(st._handle())
        refs = (TensorRef * len(arrays))()
        keep, ptrs = [], []
        for i, a in enumerate(arrays):
            p = st.malloc(max(a.nbytes, 1))
            st.memcpy(p, a.ctypes.data, a.nbytes, 1)
            d = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            keep.append(d)
            ptrs.append(p)
            refs[i] = TensorRef(p, d, a.ndim, {np.dtype(np.float32): 1, np.dtype(np.int64): 7}[a.dtype])
        out = (TensorRef * 1)()
        assert lib.hipdnn_ep_artifact_run(handle, state_ptr, refs, out) == 0, lib.hipdnn_ep_last_error()
        ours = np.empty((1, 128, 768), np.float32)
        st.memcpy(ours.ctypes.data, out[0].data, ours.nbytes, 2)
        lib.hipdnn_ep_free(state_ptr, out[0].data)
        for _ in range(10):
            lib.hipdnn_ep_artifact_run(handle, state_ptr, refs, out)
            lib.hipdnn_ep_free(state_ptr, out[0].data)
        st.synchronize()
        start = time.perf_counter()
        for _ in range(runs):
            lib.hipdnn_ep_artifact_run(handle, state_ptr, refs, out)
            lib.hipdnn_ep_free(state_ptr, out[0].data)
        st.synchronize()
        t_ours = (time.perf_counter() - start) / runs * 1e3
        for p in ptrs:
            st.free(p)
    lib.hipdnn_ep_artifact_close(handle)

    w = {n: torch.from_numpy(feeds[f"weight/{i}"]).cuda() for i, n in enumerate(names)}
    x = torch.from_numpy(arrays[0]).cuda()
    mask = torch.from_numpy(arrays[1]).cuda()

    def layer():
        b, s, h, heads = 1, 128, 768, 12
        qkv = x @ w["wqkv"] + w["bqkv"]
        q, k, v = qkv.split(h, dim=-1)
        q = q.view(b, s, heads, h // heads).transpose(1, 2)
        k = k.view(b, s, heads, h // heads).permute(0, 2, 3, 1)
        v = v.view(b, s, heads, h // heads).transpose(1, 2)
        scores = (q @ k) * w["scale"] + (w["one"] - mask[:, None, None, :].float()) * w["big_neg"]
        ctx = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, h)
        ln = torch.nn.functional.layer_norm(x + ctx @ w["wo"], (h,), w["ln_s"], w["ln_b"])
        h0 = ln @ w["w1"]
        g = h0 * (torch.erf(h0 / w["sqrt2"]) + w["one"]) * w["half"]
        return ln + g @ w["w2"]

    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        ref = layer().cpu().numpy()
        diff = float(np.max(np.abs(ref - ours)))
        for _ in range(10):
            layer()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(runs):
            layer()
        torch.cuda.synchronize()
        t_eager = (time.perf_counter() - start) / runs * 1e3
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            layer()
            with torch.cuda.graph(graph):
                layer()
        torch.cuda.current_stream().wait_stream(stream)
        graph.replay()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(runs):
            graph.replay()
        torch.cuda.synchronize()
        t_graph = (time.perf_counter() - start) / runs * 1e3
    rows.append(("BERT-base layer fp32 seq128: hipdnn", f"{t_ours * 1e3:.0f} us", "1.00",
                 f"max|diff| vs torch {diff:.1e}; x12 layers ~{12 * t_ours:.2f} ms"))
    rows.append(("  PyTorch eager, same weights", f"{t_eager * 1e3:.0f} us", f"{t_ours / t_eager:.2f}x ours/torch", ""))
    rows.append(("  PyTorch eager as one CUDA graph", f"{t_graph * 1e3:.0f} us", f"{t_ours / t_graph:.2f}x ours/graph",
                 ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", default=str(Path(__file__).resolve().parents[1] / "build/gpu-artifacts"))
    parser.add_argument("--backend", default="cuda")
    args = parser.parse_args(argv)
    rows: list[tuple[str, str, str, str]] = []
    bench_allocators(args.backend, rows)
    bench_run_overhead(Path(args.artifacts), args.backend, rows)
    try:
        bench_bert_layer(Path(args.artifacts), args.backend, rows)
    except ImportError as e:
        rows.append(("BERT-base layer, seq 128", "n/a", "", str(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
