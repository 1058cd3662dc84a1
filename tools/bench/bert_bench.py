"""transformers' BERT-base (random weights, nothing downloaded) exported by torch.onnx.export, float16 on
the GPU: hipdnn-ep (cuda backend, graph capture on) against PyTorch eager, PyTorch's CUDA-graph replay,
`torch.compile(mode="reduce-overhead")` and, where onnxruntime has its CUDA EP, ONNX Runtime's CUDA EP
on the graph fused by onnxruntime's transformer optimizer (with its CUDA graph). One table per batch size.

    python tools/bench/bert_bench.py [--batch 1 8] [--seq 128] [--layers 12] [--runs 100] [--profile] [--ep-only]

The model is what a user exports: `BertModel(BertConfig())` (12 layers, hidden 768, 12 heads, FFN 3072;
transformers' default attention implementation, or `--attention eager`), exported on the CPU in float32
(TorchScript exporter, opset 17, dynamic batch and sequence) and converted to float16 by onnxruntime's
`convert_float_to_float16`; PyTorch runs the same weights as `.half()` on the GPU. hipdnn-ep compiles it
at session creation (the time is reported). Every figure is one forward (ids and attention mask in,
last_hidden_state out), the median wall-clock time of `--runs` forwards after a warm-up, each followed by
a device synchronization: for the ONNX Runtime sessions the ids and the mask come from host memory
(bind_cpu_input, as a server feeds tokens) and the output stays on the device; PyTorch's inputs are
resident on the device (its CUDA graph row notes also the mean of replays queued back to back, which
hides the launch and the synchronization that the median of synchronized calls counts). Every output is
compared, on the tokens the attention mask keeps, with the float32 model run by PyTorch on the CPU (the
truth the float16 runs approximate), and hipdnn-ep's whole output also with onnxruntime's CPU EP on the
same float16 ONNX model (what the EP must compute). The floor is the larger of one read of the weights at
the device's copy rate and the matrix work at its float16 tensor rate. `--profile` adds, per batch size,
where hipdnn-ep's forward spends its device time, kernel by kernel, and the device timelines (kernel time,
the idle gaps between kernels) of hipdnn-ep's forward and PyTorch's graph replay.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from gpu_timing import device_timeline, kernel_profile, print_kernel_profile, time_loop, torch_graph  # noqa: E402

HBM_BYTES_PER_S = 4.25e12  # H200 device-to-device copy, read + write counted (H100: about 3.0e12)
TENSOR_FLOPS = 780e12      # dense float16/bfloat16 matrix products measured through PyTorch


def median_ms(step, runs: int, warmup: int = 10) -> float:
    """Median milliseconds of one call of `step` (which synchronizes), after `warmup` calls."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def make_bert(layers: int, attention: str | None):
    import torch
    import transformers

    torch.manual_seed(0)
    kwargs = {"attn_implementation": attention} if attention else {}
    config = transformers.BertConfig(num_hidden_layers=layers, **kwargs)
    return transformers.BertModel(config).eval()


def export_float16(bert, path: Path, seq: int) -> Path:
    """`bert` exported in float32 (dynamic batch and sequence), converted to float16: path."""
    import onnx
    import torch
    from onnxruntime.transformers.float16 import convert_float_to_float16

    class LastHidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.randint(0, 1000, (2, seq))
    mask = torch.ones(2, seq, dtype=torch.int64)
    fp32 = path.with_name("bert_fp32.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHidden(), (ids, mask), str(fp32), opset_version=17, dynamo=False,
                          input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                        "last_hidden_state": {0: "batch", 1: "seq"}})
        onnx.save(convert_float_to_float16(onnx.load(fp32)), str(path))
    return path


def feeds_for(batch: int, seq: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch * 1000 + seq)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, seq - seq // 4:] = 0  # the last sequence padded: the mask takes part
    return {"input_ids": rng.integers(0, 30000, (batch, seq)).astype(np.int64), "attention_mask": mask}


def run_torch(bert, feeds, runs: int, profile: bool = False) -> list[tuple[str, float | None, np.ndarray | None, str]]:
    import torch

    model = copy.deepcopy(bert).half().cuda()
    ids = torch.from_numpy(feeds["input_ids"]).cuda()
    mask = torch.from_numpy(feeds["attention_mask"]).cuda()

    def forward():
        return model(input_ids=ids, attention_mask=mask).last_hidden_state

    def synced(fn):
        def step():
            fn()
            torch.cuda.synchronize()
        return step

    rows = []
    with torch.no_grad():
        ref = forward().float().cpu().numpy()
        rows.append(("PyTorch eager", median_ms(synced(forward), runs), ref, ""))
        # timed as every other row (each replay synchronized, the median); replays queued back to back (the
        # mean, which hides the launch and the synchronization) in the note
        replay = torch_graph(forward)
        queued = time_loop(replay, torch.cuda.synchronize, runs) * 1e3
        rows.append(("PyTorch, one CUDA graph replayed", median_ms(synced(replay), runs), None,
                     f"back to back {queued:.3f} ms"))
        if profile:
            busy, idle, kernels = device_timeline(synced(replay), 10)
            print(f"PyTorch CUDA graph, device timeline per forward: {kernels} kernels and copies, {busy:.1f} us busy, "
                  f"{idle:.1f} us idle between them")
        try:
            compiled = torch.compile(forward, mode="reduce-overhead")
            for _ in range(3):
                compiled()
            out = compiled().float().cpu().numpy()
            rows.append(('torch.compile(mode="reduce-overhead")', median_ms(synced(compiled), runs), out, ""))
        except Exception as e:  # noqa: BLE001 - a peer that cannot run here is a row, not a failure
            why = f"failed: {str(e).splitlines()[0][:120]}"
            rows.append(('torch.compile(mode="reduce-overhead")', None, None, why))
    return rows


def run_session(sess, feeds, runs: int, output_on_device, profile: bool = False) -> tuple[float, np.ndarray]:
    """Median ms of one forward through an IO binding (inputs from the host, the output on the device); with
    `profile`, the forward's kernel profile printed."""
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    binding.bind_ortvalue_output("last_hidden_state", output_on_device)

    def step():
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()

    step()
    step()  # (a graph is captured by the second run with these shapes)
    out = output_on_device.numpy().astype(np.float32)
    ms = median_ms(step, runs)
    if profile:
        b, seq = feeds["input_ids"].shape
        print_kernel_profile(f"hipdnn-ep forward, batch {b}, seq {seq}", kernel_profile(step, 10))
        busy, idle, kernels = device_timeline(step, 10)
        print(f"device timeline per forward: {kernels} kernels and copies, {busy:.1f} us busy, {idle:.1f} us idle "
              f"between them ({idle / max(kernels - 1, 1):.2f} us a gap); the rest of the {ms * 1e3:.1f} us is the "
              "host's")
    return ms, out


def run_hipdnn(model: Path, feeds, runs: int, profile: bool) -> tuple[str, float | None, np.ndarray | None, str]:
    import hipdnn_ep
    import onnxruntime as ort
    from hipdnn_ep.bench import DeviceMemory, devices_for_backend

    options = {"backend": "cuda", "graph_capture": "1", "compiler_python": sys.executable}
    devices = devices_for_backend(hipdnn_ep.register(ort), "cuda")
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devices, options)
    try:
        start = time.perf_counter()
        sess = ort.InferenceSession(str(model), sess_options=so)
        created = time.perf_counter() - start
        b, s = feeds["input_ids"].shape
        out = DeviceMemory("hipdnn", devices[0], options).empty((b, s, 768), np.float16)
        ms, result = run_session(sess, feeds, runs, out, profile)
    except Exception as e:  # noqa: BLE001
        return ("hipdnn-ep (cuda, graph capture)", None, None, f"failed: {str(e).splitlines()[0][:150]}")
    return ("hipdnn-ep (cuda, graph capture)", ms, result, f"session {created:.2f} s")


def run_ort_cuda(model: Path, feeds, runs: int) -> tuple[str, float | None, np.ndarray | None, str]:
    label = "onnxruntime CUDA EP, optimizer-fused graph, its CUDA graph"
    import onnxruntime as ort

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return (label, None, None, f"onnxruntime {ort.__version__} has no CUDAExecutionProvider")
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        fused = model.with_name("bert_ort_fused.onnx")
        optimize_model(str(model), model_type="bert", num_heads=12, hidden_size=768).save_model_to_file(str(fused))
        sess = ort.InferenceSession(str(fused), providers=[("CUDAExecutionProvider", {"enable_cuda_graph": "1"})])
        b, s = feeds["input_ids"].shape
        out = ort.OrtValue.ortvalue_from_shape_and_type([b, s, 768], np.float16, "cuda", 0)
        ms, result = run_session(sess, feeds, runs, out)
    except Exception as e:  # noqa: BLE001
        return (label, None, None, f"failed: {str(e).splitlines()[0][:150]}")
    return (label, ms, result, "")


def float32_truth(bert, feeds) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = bert(input_ids=torch.from_numpy(feeds["input_ids"]),
                   attention_mask=torch.from_numpy(feeds["attention_mask"])).last_hidden_state
    return out.numpy()


def cpu_reference(model: Path, feeds) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0].astype(np.float32)


def floor_ms(layers: int, batch: int, seq: int, weight_bytes: int) -> float:
    hidden, ffn = 768, 3072
    per_layer = 2 * batch * seq * hidden * (4 * hidden + 2 * ffn) + 2 * 2 * batch * seq * seq * hidden
    return max(weight_bytes / HBM_BYTES_PER_S, layers * per_layer / TENSOR_FLOPS) * 1e3


def bench(args: argparse.Namespace) -> int:
    bert = make_bert(args.layers, args.attention)
    weight_bytes = 2 * sum(p.numel() for p in bert.encoder.parameters())
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = export_float16(bert, Path(tmp) / "bert_fp16.onnx", args.seq)
        for batch in args.batch:
            feeds = feeds_for(batch, args.seq)
            rows = [run_hipdnn(model, feeds, args.runs, args.profile)]
            eager = graph = None
            if not args.ep_only:
                rows = run_torch(bert, feeds, args.runs, args.profile) + rows + [run_ort_cuda(model, feeds, args.runs)]
                eager, graph = rows[0][1], rows[1][1]
            kept = feeds["attention_mask"].astype(bool)
            ref = float32_truth(bert, feeds)[kept]
            scale = float(np.abs(ref).max())
            onnx_ref = cpu_reference(model, feeds)
            floor = floor_ms(args.layers, batch, args.seq, weight_bytes)
            print(f"\nBERT-base ({args.layers} layers) float16, batch {batch}, seq {args.seq}: ms per forward "
                  f"(median of {args.runs}); floor {floor:.3f} ms; max|float32 output| {scale:.2f}")
            print(f"{'':58} {'ms':>8} {'vs eager':>9} {'vs graph':>9} {'x floor':>8}  note")
            for label, ms, out, note in rows:
                if out is not None:
                    diff = float(np.abs(out[kept] - ref).max())
                    note = f"{note + '; ' if note else ''}max|diff| vs float32 {diff:.2e}"
                    if label.startswith("hipdnn"):
                        whole = float(np.abs(out - onnx_ref).max())
                        ok = whole <= 0.02 * max(1.0, float(np.abs(onnx_ref).max()))
                        note += f", vs onnxruntime CPU {whole:.2e}{'' if ok else ' MISMATCH'}"
                        status |= 0 if ok else 1
                if ms is None:
                    print(f"{label:58} {'-':>8} {'':>9} {'':>9} {'':>8}  {note}")
                else:
                    ratios = "".join(f" {base / ms:8.2f}x" if base else f" {'-':>9}" for base in (eager, graph))
                    print(f"{label:58} {ms:8.3f}{ratios} {ms / floor:7.1f}x  {note}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--profile", action="store_true", help="also print hipdnn-ep's kernels per forward")
    parser.add_argument("--ep-only", action="store_true",
                        help="time hipdnn-ep alone (no PyTorch or onnxruntime CUDA rows): to compare runtime builds")
    parser.add_argument("--attention", choices=["eager", "sdpa"], default=None,
                        help="transformers' attention implementation (default: transformers' own default)")
    args = parser.parse_args(argv)
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
