"""`hipdnn-ep bench`: prefill and decode speed of an LLM in onnxruntime-genai's folder format on this EP
and on ONNX Runtime's own EPs, side by side, with the memory-bandwidth floor of a decode step.

The decoder (genai_config.json's `model.decoder`) is driven directly through ONNX Runtime sessions:
per repetition, one prefill of `-l` tokens for `-b` sequences, then `-g` decode steps that feed each
step's present KV back as the next past. Each EP runs in its own child process, so its peak memory
(growth of the resident set from before the session) is its own; on a GPU the device memory the
process holds after its runs (nvidia-smi, CUDA context included) is reported too. The floor of a
decode step is the bytes it must read (every weight once, an embedding table one row per sequence,
and the KV cache at the mean decode length) over the measured memory copy rate (read + write) of
where the weights live: the host (`numpy.copyto` of a 256 MiB buffer) for the CPU, the device (a
1 GiB device-to-device copy through hipdnn_ep_runtime) with `--option backend=cuda` or `hip`.
Feeds and fetches are host arrays (numpy), as for a plain `InferenceSession.run`: on a GPU each
step's time includes copying the inputs, the past KV cache and the logits between host and device.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ORT_EPS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
NP_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16"}


@dataclass
class Result:
    ep: str
    prefill_ms: float  # median time of one prefill (all sequences)
    decode_ms: float  # median time of one decode step (all sequences)
    prefill_tok_s: float
    decode_tok_s: float
    peak_rss_mib: float  # growth of the process's peak resident set over its size before the session
    session_s: float  # session creation (includes compiling for this EP)
    device_mib: float | None = None  # device memory the process holds after its runs (nvidia-smi), GPU EPs


@dataclass(frozen=True)
class Decoder:
    folder: Path
    model: Path
    layers: int
    kv_heads: int
    head_size: int
    past_key: str
    past_value: str
    present_key: str
    present_value: str

    @classmethod
    def read(cls, folder: Path) -> Decoder:
        config_path = folder / "genai_config.json"
        if not config_path.is_file():
            raise SystemExit(f"hipdnn-ep bench: {folder} has no genai_config.json; give an onnxruntime-genai model "
                             "folder (tools/llm_models.py writes one)")
        dec = json.loads(config_path.read_text())["model"]["decoder"]
        return cls(folder, folder / dec["filename"], dec["num_hidden_layers"], dec["num_key_value_heads"],
                   dec["head_size"], dec["inputs"]["past_key_names"], dec["inputs"]["past_value_names"],
                   dec["outputs"]["present_key_names"], dec["outputs"]["present_value_names"])


def _session(decoder: Decoder, ep: str, options: dict[str, str]):
    import onnxruntime as ort  # noqa: PLC0415

    so = ort.SessionOptions()
    if ep == "hipdnn":
        from . import register  # noqa: PLC0415

        # The compiler runs in this interpreter's environment unless told otherwise (the EP's own guess
        # from its install path misses installs outside lib/pythonX.Y, e.g. pip --target).
        options = {"backend": "cpu", "compiler_python": sys.executable, **options}
        so.add_provider_for_devices(devices_for_backend(register(), options["backend"]), options)
        return ort.InferenceSession(str(decoder.model), sess_options=so)
    return ort.InferenceSession(str(decoder.model), sess_options=so, providers=[ORT_EPS[ep]])


def devices_for_backend(devices: list, backend: str) -> list:
    """The one EP device to hand ORT for `backend`: the device the EP offers for it (a GPU backend runs
    on the GPU ORT found), else its CPU device (the backend option then still selects the backend)."""
    for wanted in (backend, "cpu"):
        chosen = [d for d in devices if dict(d.ep_metadata).get("backend") == wanted]
        if chosen:
            return chosen[:1]
    raise SystemExit(f"hipdnn-ep bench: the EP offers no device for backend {backend} nor the CPU")


def _peak_rss_kib() -> int:
    """This process's peak resident set (VmHWM: unlike ru_maxrss it does not carry over the parent's peak
    through exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _run_ep(decoder: Decoder, ep: str, args: argparse.Namespace, options: dict[str, str]) -> Result:
    import numpy as np  # noqa: PLC0415

    baseline = _peak_rss_kib()  # after the imports
    start = time.perf_counter()
    sess = _session(decoder, ep, options)
    session_s = time.perf_counter() - start
    inputs = {i.name: i for i in sess.get_inputs()}
    kv_type = np.dtype(NP_TYPES[inputs[decoder.past_key % 0].type])
    outputs = [o.name for o in sess.get_outputs()]
    rng = np.random.default_rng(0)
    vocab = sess.get_outputs()[0].shape[-1]
    vocab = vocab if isinstance(vocab, int) else 1000
    b, n_prompt = args.batch_size, args.prompt_length
    prefill, decode = [], []
    for rep in range(args.warmup + args.repetitions):
        past = {decoder.past_key % i: np.zeros((b, decoder.kv_heads, 0, decoder.head_size), kv_type)
                for i in range(decoder.layers)}
        past |= {decoder.past_value % i: np.zeros((b, decoder.kv_heads, 0, decoder.head_size), kv_type)
                 for i in range(decoder.layers)}
        ids = rng.integers(0, vocab, (b, n_prompt), dtype=np.int64)
        length = n_prompt
        feeds = {"input_ids": ids, "attention_mask": np.ones((b, length), np.int64), **past}
        if "position_ids" in inputs:
            feeds["position_ids"] = np.broadcast_to(np.arange(length, dtype=np.int64), (b, length)).copy()
        t = time.perf_counter()
        result = dict(zip(outputs, sess.run(outputs, feeds), strict=True))
        if rep >= args.warmup:
            prefill.append(time.perf_counter() - t)
        for _ in range(args.generation_length):
            nxt = result[outputs[0]][:, -1].argmax(-1).reshape(b, 1).astype(np.int64)
            feeds = {"input_ids": nxt, "attention_mask": np.ones((b, length + 1), np.int64)}
            for i in range(decoder.layers):
                feeds[decoder.past_key % i] = result[decoder.present_key % i]
                feeds[decoder.past_value % i] = result[decoder.present_value % i]
            if "position_ids" in inputs:
                feeds["position_ids"] = np.full((b, 1), length, np.int64)
            t = time.perf_counter()
            result = dict(zip(outputs, sess.run(outputs, feeds), strict=True))
            if rep >= args.warmup:
                decode.append(time.perf_counter() - t)
            length += 1
        print(json.dumps({"progress": ep, "done": rep + 1, "of": args.warmup + args.repetitions}), flush=True)
    pre = statistics.median(prefill)
    dec = statistics.median(decode) if decode else float("nan")
    peak = (_peak_rss_kib() - baseline) / 1024
    device = _device_mib() if ep == "cuda" or options.get("backend", "cpu") != "cpu" else None
    return Result(ep, pre * 1e3, dec * 1e3, b * n_prompt / pre, b / dec if decode else float("nan"), peak, session_s,
                  device)


def _device_mib() -> float | None:
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


def decode_bytes(decoder: Decoder, batch: int, context: float) -> tuple[int, float]:
    """(weight bytes one decode step reads, KV bytes at `context` positions)."""
    import onnx  # noqa: PLC0415
    from onnx import helper  # noqa: PLC0415

    model = onnx.load(str(decoder.model), load_external_data=False)
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
        if t.name in gathered and users.get(t.name) == 1 and t.dims:  # an embedding table: one row per sequence
            count = batch * (count // t.dims[0])
        weights += count * item
    kv_item = 2 if any(i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16 for i in model.graph.input) else 4
    kv = 2 * decoder.layers * batch * decoder.kv_heads * context * decoder.head_size * kv_item
    return weights, kv


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not args.worker:
        return run(args)
    decoder = Decoder.read(Path(args.model))
    options = dict(kv.split("=", 1) for kv in args.option)
    print(json.dumps({"result": asdict(_run_ep(decoder, args.worker, args, options))}), flush=True)
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="hipdnn-ep bench", description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    return ap


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("model", help="onnxruntime-genai model folder (genai_config.json, model.onnx)")
    ap.add_argument("-l", "--prompt-length", type=int, default=128)
    ap.add_argument("-g", "--generation-length", type=int, default=32, help="decode steps per repetition")
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("-w", "--warmup", type=int, default=1, help="repetitions run first and not timed")
    ap.add_argument("-b", "--batch-size", type=int, default=1)
    ap.add_argument("--ep", action="append", choices=("hipdnn", "cpu", "cuda"),
                    help="EPs to run (default: hipdnn, cpu, and cuda when onnxruntime has it)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="hipdnn-ep option")
    ap.add_argument("--json", help="also write the results to this file")


def _progress():
    """A rich progress bar when rich is installed, else plain lines."""
    try:
        from rich.progress import Progress  # noqa: PLC0415
    except ImportError:
        return None
    return Progress(transient=True)


def run(args: argparse.Namespace) -> int:
    import onnxruntime as ort  # noqa: PLC0415

    decoder = Decoder.read(Path(args.model))
    eps = args.ep or ["hipdnn", "cpu"] + (["cuda"] if "CUDAExecutionProvider" in ort.get_available_providers() else [])
    backend = dict(kv.split("=", 1) for kv in args.option).get("backend", "cpu")
    bandwidth = copy_bandwidth() if backend == "cpu" else device_copy_bandwidth(backend)
    context = args.prompt_length + (args.generation_length + 1) / 2
    weights, kv = decode_bytes(decoder, args.batch_size, context)
    floor_ms = (weights + kv) / bandwidth * 1e3
    base = [sys.executable, "-m", "hipdnn_ep.bench", args.model, "-l", str(args.prompt_length), "-g",
            str(args.generation_length), "-r", str(args.repetitions), "-w", str(args.warmup), "-b",
            str(args.batch_size), *(f"--option={o}" for o in args.option)]
    results: list[Result] = []
    progress = _progress()
    total = args.warmup + args.repetitions
    if progress:
        progress.start()
    try:
        for ep in eps:
            task = progress.add_task(f"{ep}: session", total=total) if progress else None
            proc = subprocess.Popen([*base, "--worker", ep], stdout=subprocess.PIPE, text=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
            result = None
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if "progress" in msg:
                    if progress:
                        progress.update(task, completed=msg["done"], description=f"{ep}: repetition")
                    else:
                        print(f"{ep}: repetition {msg['done']}/{msg['of']}", file=sys.stderr)
                elif "result" in msg:
                    result = Result(**msg["result"])
            if proc.wait() != 0 or result is None:
                print(f"hipdnn-ep bench: {ep} failed (exit status {proc.returncode})", file=sys.stderr)
                continue
            results.append(result)
    finally:
        if progress:
            progress.stop()
    print(f"model {decoder.model}  batch {args.batch_size}  prompt {args.prompt_length}  "
          f"generate {args.generation_length}  repetitions {args.repetitions} (+{args.warmup} warm-up)")
    print(f"decode floor: {weights / 2**20:.1f} MiB weights + {kv / 2**20:.1f} MiB KV per step at "
          f"{bandwidth / 1e9:.1f} GB/s {'host' if backend == 'cpu' else backend + ' device'} copy (read + write) = "
          f"{floor_ms:.3f} ms per step")
    header = f"{'EP':<8} {'prefill ms':>11} {'prefill tok/s':>14} {'decode ms/step':>15} {'decode tok/s':>13} " \
             f"{'x floor':>8} {'+peak MiB':>10} {'device MiB':>11} {'session s':>10}"
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r.ep:<8} {r.prefill_ms:>11.2f} {r.prefill_tok_s:>14.1f} {r.decode_ms:>15.3f} {r.decode_tok_s:>13.1f} "
              f"{r.decode_ms / floor_ms:>8.2f} {r.peak_rss_mib:>10.0f} "
              f"{'-' if r.device_mib is None else f'{r.device_mib:.0f}':>11} {r.session_s:>10.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"floor_ms": floor_ms, "weight_bytes": weights, "kv_bytes": kv,
                                               "copy_bytes_per_s": bandwidth,
                                               "results": [asdict(r) for r in results]}, indent=2))
    return 0 if len(results) == len(eps) else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
