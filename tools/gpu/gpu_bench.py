"""First GPU benchmarks of the runtime, side by side in one run, as ratios.

    python tools/gpu/gpu_bench.py [--artifacts build/gpu-artifacts] [--backend cuda]

1. The caching allocator against cudaMalloc/cudaFree (through cupy) and PyTorch's caching
   allocator on a realistic inference pattern: the activations of a BERT-base-shaped encoder
   (12 layers, hidden 768, float16) allocated and freed in layer order, at a fixed sequence
   128 and at sequences that change from run to run (dynamic shapes). The pattern is replayed
   from C++ (tools/gpu/alloc_bench.cpp, compiled here with g++, against PyTorch's c10 allocator when
   torch is importable), so no figure includes an interpreter call.
   Fragmentation: bytes reserved over peak bytes in use after the pattern.
2. Per-Run host overhead on a 3-node graph (tools/gpu/gpu_artifacts.py's three_node: Add, Relu, Mul
   on [1, 64]): hipdnn_ep_artifact_run called through ctypes with device inputs, the output
   freed each time, with and without graph replay; host time per run without waiting, and per
   run once the device is done;
   PyTorch eager issuing the same three ops as the reference.
3. One BERT-base-shaped encoder layer (tools/models/models.py attention_model: hidden 768, 12 heads,
   seq 128, float32, batch 1) as a compiled program with device-resident weights, against the
   same layer in PyTorch eager and as a replayed CUDA graph, on the same weights and inputs
   (their outputs are compared first).
Prints one table; needs a GPU build of the runtime, and torch/cupy for the peers.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import subprocess
import sys
import time
from pathlib import Path

import hipdnn_ep_runtime as rt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_timing import DeviceProgram, runtime_lib, time_loop, time_torch_graph  # noqa: E402

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


def encode_ops(seqs: list[int]) -> np.ndarray:
    """The patterns of these sequences, one after the other (each ends with nothing live), as the
    (op, slot, bytes) int64 triples tools/gpu/alloc_bench.cpp replays."""
    code = {"alloc": 0, "free": 1, "alias": 2}
    triples = []
    for seq in seqs:
        live: set[int] = set()
        for op, slot, size in activation_pattern(seq):
            triples.append((code[op], slot, size))
            if op == "alloc":
                live.add(slot)
            elif op == "free":
                live.discard(slot)
            else:
                live.discard(slot)
                live.add(size)
        triples += [(1, slot, 0) for slot in sorted(live)]
    return np.array(triples, np.int64).reshape(-1)


def build_alloc_bench(out: Path) -> tuple[ctypes.CDLL, bool]:
    """Compiles tools/gpu/alloc_bench.cpp (with PyTorch's allocator when torch is importable)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc is not on PATH (the CUDA toolkit's headers and libcudart are needed)")
    cuda = Path(nvcc).resolve().parents[1]
    base = ["g++", "-O2", "-std=c++17", "-shared", "-fPIC", str(Path(__file__).with_name("alloc_bench.cpp")),
            f"-I{cuda / 'include'}", f"-L{cuda / 'lib64'}", f"-Wl,-rpath,{cuda / 'lib64'}", "-lcudart"]
    out.mkdir(parents=True, exist_ok=True)
    try:
        import torch
        from torch.utils import cpp_extension

        lib_dirs = cpp_extension.library_paths()
        torch_flags = ["-DWITH_TORCH", f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
        torch_flags += [f"-I{p}" for p in cpp_extension.include_paths()]
        torch_flags += [f"-L{p}" for p in lib_dirs] + [f"-Wl,-rpath,{p}" for p in lib_dirs] + ["-lc10_cuda", "-lc10"]
        with_torch = subprocess.run(base + torch_flags + ["-o", str(out / "alloc_bench.so")],
                                    capture_output=True, text=True).returncode == 0
    except ImportError:
        with_torch = False
    if not with_torch:
        subprocess.run(base + ["-o", str(out / "alloc_bench.so")], check=True)
    lib = ctypes.CDLL(str(out / "alloc_bench.so"))
    lib.bench_hipdnn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    lib.bench_cuda.argtypes = lib.bench_torch.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    for f in (lib.bench_hipdnn, lib.bench_cuda, lib.bench_torch):
        f.restype = ctypes.c_double
    return lib, with_torch


def bench_allocators(backend: str, rows: list, build: Path) -> None:
    """The allocators replayed from C++ (no Python call per allocation on any side)."""
    try:
        bench, with_torch = build_alloc_bench(build)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        rows.append(("allocator benchmark", "n/a", "", f"cannot build tools/gpu/alloc_bench.cpp: {e}"))
        return
    if with_torch:
        import torch

        torch.empty(1, device="cuda")  # initializes PyTorch's allocator in this process
    lib = runtime_lib()
    rng = np.random.default_rng(0)
    dynamic = [int(s) for s in rng.integers(16, 513, 200)]
    for label, seqs, reps in (("seq 128", [128], 200), ("seq 16..512", dynamic, 1)):
        ops = encode_ops(seqs)
        n, ptr = len(ops) // 3, ops.ctypes.data
        with rt.State(backend=backend) as st:
            malloc = ctypes.cast(lib.hipdnn_ep_malloc, ctypes.c_void_p)
            free = ctypes.cast(lib.hipdnn_ep_free, ctypes.c_void_p)
            ours = bench.bench_hipdnn(st._handle(), malloc, free, ptr, n, reps)
            s = st.memory_stats()
            ours_frag = s["bytes_reserved"] / max(s["peak_bytes_in_use"], 1)
        rows.append((f"allocator, {label}: hipdnn caching", f"{ours:.3f} us/pair", "1.00",
                     f"reserved/peak {ours_frag:.2f} (C++ loop, C ABI call per op)"))
        few = encode_ops(seqs[:20])
        raw = bench.bench_cuda(few.ctypes.data, len(few) // 3, max(1, reps // 10))
        rows.append((f"allocator, {label}: cudaMalloc/cudaFree", f"{raw:.3f} us/pair", f"{raw / ours:.1f}x ours",
                     "target >= 10x"))
        if with_torch:
            import torch

            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            tt = bench.bench_torch(ptr, n, reps)
            frag = torch.cuda.memory_reserved() / max(torch.cuda.max_memory_allocated(), 1)
            rows.append((f"allocator, {label}: PyTorch caching", f"{tt:.3f} us/pair", f"{tt / ours:.2f}x ours",
                         f"reserved/peak {frag:.2f} (raw_alloc/raw_delete; target: ours within 2x)"))
        else:
            rows.append((f"allocator, {label}: PyTorch caching", "n/a", "", "built without torch"))


def bench_run_overhead(artifacts: Path, backend: str, rows: list, runs: int = 5000) -> None:
    directory = artifacts / "three_node"
    if not (directory / "program.so").exists():
        rows.append(("per-Run overhead (3 nodes)", "n/a", "", f"no {directory}; run tools/gpu/gpu_artifacts.py"))
        return
    feeds = np.load(directory / "feeds.npz")
    arrays = [feeds["w64/x"], feeds["weight/0"], feeds["weight/1"]]
    for graphs in (False, True):
        with rt.State(backend=backend, graph_capture=graphs) as st:
            program = DeviceProgram(directory, st, arrays)
            for _ in range(100):  # warm-up (captures the graph when on)
                program()
            st.synchronize()
            start = time.perf_counter()
            for _ in range(runs):
                program()
            host = (time.perf_counter() - start) / runs * 1e6
            st.synchronize()
            total = (time.perf_counter() - start) / runs * 1e6
            replays = st.graph_stats()["replays"]
            program.close()
        label = "graph replay" if graphs else "kernels launched"
        rows.append((f"per-Run host time, 3-node graph, {label}", f"{host:.1f} us", "target <= 20 us",
                     f"{total:.1f} us/run until the device is done (ctypes call included); {replays} replays"))
    try:
        import torch

        x, a, b = (torch.from_numpy(v).cuda() for v in arrays)
        t_host = time_loop(lambda: torch.relu(x + a) * b, lambda: None, runs, 100) * 1e6
        torch.cuda.synchronize()
        rows.append(("  PyTorch eager, same 3 ops", f"{t_host:.1f} us", f"{host / t_host:.2f}x ours/torch", ""))
    except ImportError:
        pass


def bench_bert_layer(artifacts: Path, backend: str, rows: list, runs: int = 200) -> None:
    directory = artifacts / "bert_layer_seq128"
    if not (directory / "program.so").exists():
        rows.append(("BERT-base layer, seq 128", "n/a", "", f"no {directory}"))
        return
    import torch

    feeds = np.load(directory / "feeds.npz")
    n_weights = sum(k.startswith("weight/") for k in feeds.files)
    arrays = [feeds["b1s128/x"], feeds["b1s128/attention_mask"]] + [feeds[f"weight/{i}"] for i in range(n_weights)]
    with rt.Artifact(directory) as artifact:
        names = [w["name"] for w in artifact.metadata["weights"]]
    times = {}
    for graphs in (False, True):
        with rt.State(backend=backend, graph_capture=graphs) as st:
            program = DeviceProgram(directory, st, arrays)
            ours = program.run_once()[0]
            times[graphs] = time_loop(program, st.synchronize, runs) * 1e3
            program.close()
    t_ours = times[False]

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
        t_eager = time_loop(layer, torch.cuda.synchronize, runs) * 1e3
        t_graph = time_torch_graph(layer, runs) * 1e3
    rows.append(("BERT-base layer fp32 seq128: hipdnn", f"{t_ours * 1e3:.0f} us", "1.00",
                 f"max|diff| vs torch {diff:.1e}; x12 layers ~{12 * t_ours:.2f} ms"))
    rows.append(("  hipdnn, graph replay", f"{times[True] * 1e3:.0f} us", f"{times[True] / t_ours:.2f}x", ""))
    rows.append(("  PyTorch eager, same weights", f"{t_eager * 1e3:.0f} us", f"{t_ours / t_eager:.2f}x ours/torch", ""))
    rows.append(("  PyTorch eager as one CUDA graph", f"{t_graph * 1e3:.0f} us",
                 f"{times[True] / t_graph:.2f}x our replay/torch graph", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", default=str(Path(__file__).resolve().parents[2] / "build/gpu-artifacts"))
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--build", default=str(Path(__file__).resolve().parents[2] / "build/alloc-bench"),
                        help="where tools/gpu/alloc_bench.cpp is compiled")
    args = parser.parse_args(argv)
    rows: list[tuple[str, str, str, str]] = []
    bench_allocators(args.backend, rows, Path(args.build))
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
