"""`hipdnn-ep bench`: prefill and decode speed of an LLM in onnxruntime-genai's folder format on this EP
and on ONNX Runtime's own EPs, side by side, with the memory-bandwidth floor of a decode step.

The decoder (genai_config.json's `model.decoder`) is driven directly through ONNX Runtime sessions:
per repetition, one prefill of `-l` tokens for `-b` sequences, then `-g` decode steps. Each EP runs in
its own child process, so its peak memory (growth of the resident set from before the session) is its
own; on a GPU the device memory the process holds after its runs (nvidia-smi: the CUDA context and
every cached block included) is reported too, and for this EP the most memory the runtime's allocators
held at once (every state on its device, from hipdnn_ep_runtime.device_memory_stats), beside what the
model needs resident: every weight and the KV cache at its longest. The floor of a decode step is the bytes it must read
(every weight once, an embedding table one row per sequence, and the KV cache at the mean decode
length) over the measured memory copy rate (read + write) of where the weights live: the host
(`numpy.copyto` of a 256 MiB buffer) for the CPU, the device (a 1 GiB device-to-device copy through
hipdnn_ep_runtime) with `--option backend=cuda` or `hip`.

Two ways to feed a step (`--io`):
- `binding` (the default for a GPU EP: ORT's CUDA EP, this EP with a GPU backend): what a GPU
  deployment does. Inputs and outputs go through an IO binding; the KV cache and the logits live in
  the EP's device memory (OrtValues allocated through the EP device's allocator) and stay there
  between steps; only the token ids and the attention mask travel from the host, and the logits are
  never read back (the next token is drawn at random: the speed does not depend on it). With a model
  built for a shared KV buffer (genai_config's `past_present_share_buffer`, as onnxruntime-genai
  runs on CUDA), one buffer of `max_length` positions per layer is bound as both past and present, and
  a decode step's attention mask has the static shape (batch, max_length), zero past the real length
  (the prompt's is (batch, prompt length), a first prompt): every decode step has the same input
  shapes, which lets an EP replay a captured graph of it. Without a
  shared buffer, each step's present is a new device buffer, bound as the next step's past.
- `numpy` (the default on the CPU): feeds and fetches are host arrays, as for a plain
  `InferenceSession.run`; each step feeds the previous present KV back as the next past. The next
  token is drawn at random in both ways.
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

from .bench_memory import (
    copy_bandwidth,
    decode_bytes,
    device_copy_bandwidth,
    process_device_mib,
    resident_bytes,
    runtime_peak_bytes,
)

ORT_EPS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "cuda-graph": "CUDAExecutionProvider"}
# ORT's CUDA EP replaying a captured CUDA graph of each decode step (as onnxruntime-genai runs it on CUDA)
CUDA_GRAPH_OPTIONS = {"enable_cuda_graph": "1"}
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
    runtime_peak_mib: float | None = None  # hipdnn: the most its runtime held at once (all states)
    io: str = "numpy"  # how steps were fed: numpy or binding
    kv: str = "growing"  # KV cache: growing (past + new per step) or shared (one max_length buffer)
    graphs: str | None = None  # this EP's graph capture as its log says (hipdnn with a GPU backend)


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
    shared_kv: bool = False  # genai_config's search.past_present_share_buffer
    max_length: int = 0  # genai_config's search.max_length (the shared buffer's length)

    @classmethod
    def read(cls, folder: Path) -> Decoder:
        config_path = folder / "genai_config.json"
        if not config_path.is_file():
            raise SystemExit(f"hipdnn-ep bench: {folder} has no genai_config.json; give an onnxruntime-genai model "
                             "folder (tools/models/llm_models.py writes one)")
        config = json.loads(config_path.read_text())
        dec, search = config["model"]["decoder"], config.get("search", {})
        return cls(folder, folder / dec["filename"], dec["num_hidden_layers"], dec["num_key_value_heads"],
                   dec["head_size"], dec["inputs"]["past_key_names"], dec["inputs"]["past_value_names"],
                   dec["outputs"]["present_key_names"], dec["outputs"]["present_value_names"],
                   bool(search.get("past_present_share_buffer", False)),
                   int(search.get("max_length", config["model"].get("context_length", 0))))


def _session(decoder: Decoder, ep: str, options: dict[str, str], log_file: str | None = None,
             allow_fallback: bool = False):
    """(session, the EP device ORT was handed or None for ORT's own EPs). This EP must take every node
    unless `allow_fallback`: else a node it leaves (or every node, where its compiler cannot be used)
    would run on ORT's CPU EP and the figures under "hipdnn" would be partly or wholly that EP's."""
    import onnxruntime as ort  # noqa: PLC0415

    so = ort.SessionOptions()
    if ep == "hipdnn":
        from . import register  # noqa: PLC0415

        # The compiler runs in this interpreter's environment unless told otherwise (the EP's own guess
        # from its install path misses installs outside lib/pythonX.Y, e.g. pip --target).
        options = {"backend": "cpu", "compiler_python": sys.executable, **options}
        if log_file:
            so.log_severity_level = 1  # info: the EP says once per node whether it is replayed from a graph
        if not allow_fallback:
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        device = devices_for_backend(register(), options["backend"])
        so.add_provider_for_devices(device, options)
        try:
            return ort.InferenceSession(str(decoder.model), sess_options=so), device[0]
        except Exception as e:
            if allow_fallback or "CPU fallback is disabled" not in str(e):
                raise
            # last: the parent shows the end of a failed worker's output, after ORT's list of the nodes
            raise SystemExit(f"{e}\nhipdnn-ep bench: the EP does not run the whole model, so its figures would be "
                             "partly ORT's CPU EP's; --allow-fallback times it anyway") from None
    if ep.startswith("cuda") and hasattr(ort, "preload_dlls"):
        ort.preload_dlls()  # the CUDA and cuDNN libraries of the nvidia-* wheels, where installed
    provider = (ORT_EPS[ep], CUDA_GRAPH_OPTIONS) if ep == "cuda-graph" else ORT_EPS[ep]
    sess = ort.InferenceSession(str(decoder.model), sess_options=so, providers=[provider])
    if sess.get_providers()[0] != ORT_EPS[ep]:  # ORT falls back to its CPU EP with a mere warning
        raise SystemExit(f"hipdnn-ep bench: onnxruntime {ort.__version__} did not run the model on "
                         f"{ORT_EPS[ep]} (it has {ort.get_available_providers()}); for CUDA install "
                         "onnxruntime-gpu with its CUDA and cuDNN libraries on the library path")
    return sess, None


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


def _gpu_ep(ep: str, options: dict[str, str]) -> bool:
    return ep.startswith("cuda") or (ep == "hipdnn" and options.get("backend", "cpu") != "cpu")


class DeviceMemory:
    """Allocates OrtValues in an EP's device memory: through the EP device's allocator for its memory
    info (a plugin EP: ORT creates a shared allocator for it at registration), else by device name
    ("cuda" for ORT's CUDA EP), else in host memory (the CPU EPs)."""

    def __init__(self, ep: str, ep_device, options: dict[str, str]):
        self.memory_info = None
        self.where: tuple = ("cpu", 0)
        if ep.startswith("cuda"):
            self.where = ("cuda", 0)
        elif ep_device is not None and _gpu_ep(ep, options):
            memory_info = getattr(ep_device, "memory_info", None)
            if memory_info is not None:
                import onnxruntime as ort  # noqa: PLC0415

                self.memory_info = memory_info(ort.OrtDeviceMemoryType.DEFAULT)
            self.where = ("gpu", int(dict(ep_device.ep_metadata).get("device_id", 0)),
                          int(ep_device.device.vendor_id))

    def empty(self, shape: tuple[int, ...], dtype):
        import onnxruntime as ort  # noqa: PLC0415

        try:
            if self.memory_info is not None:
                return ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, memory_info=self.memory_info)
            return ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, *self.where)
        except (TypeError, RuntimeError, ValueError) as e:
            raise SystemExit(f"hipdnn-ep bench: onnxruntime {ort.__version__} cannot allocate a {list(shape)} "
                             f"tensor in the EP's memory ({self.where[0]} {self.where[1]}): {e}. Fix: use "
                             "onnxruntime >= 1.23, or --io numpy") from e


def _feeds_numpy(decoder: Decoder, sess, args: argparse.Namespace, kv_type, rng, timings: tuple[list, list],
                 timed: bool):
    """One repetition with host arrays: the past fed back from the previous present. Returns the last step's
    logits."""
    import numpy as np  # noqa: PLC0415

    inputs = {i.name for i in sess.get_inputs()}
    outputs = [o.name for o in sess.get_outputs()]
    b, length = args.batch_size, args.prompt_length
    empty = np.zeros((b, decoder.kv_heads, 0, decoder.head_size), kv_type)
    feeds = {"input_ids": _prompt(rng, sess, b, length), "attention_mask": np.ones((b, length), np.int64)}
    for i in range(decoder.layers):
        feeds[decoder.past_key % i] = feeds[decoder.past_value % i] = empty
    if "position_ids" in inputs:
        feeds["position_ids"] = np.broadcast_to(np.arange(length, dtype=np.int64), (b, length)).copy()
    for step in range(args.generation_length + 1):
        t = time.perf_counter()
        result = dict(zip(outputs, sess.run(outputs, feeds), strict=True))
        if timed:
            timings[min(step, 1)].append(time.perf_counter() - t)
        nxt = _next_tokens(rng, sess, b)
        feeds = {"input_ids": nxt, "attention_mask": np.ones((b, length + 1), np.int64)}
        for i in range(decoder.layers):
            feeds[decoder.past_key % i] = result[decoder.present_key % i]
            feeds[decoder.past_value % i] = result[decoder.present_value % i]
        if "position_ids" in inputs:
            feeds["position_ids"] = np.full((b, 1), length, np.int64)
        length += 1
    return result[outputs[0]]


def _prompt(rng, sess, batch: int, length: int):
    import numpy as np  # noqa: PLC0415

    vocab = sess.get_outputs()[0].shape[-1]
    return rng.integers(0, vocab if isinstance(vocab, int) else 1000, (batch, length), dtype=np.int64)


def _next_tokens(rng, sess, batch: int):
    """The next token of each sequence, drawn at random (the speed does not depend on it, and the logits need
    not be read back from the device)."""
    return _prompt(rng, sess, batch, 1)


def _feeds_bound(decoder: Decoder, sess, args: argparse.Namespace, kv_type, rng, timings: tuple[list, list],
                 timed: bool, memory: DeviceMemory, shared: bool, cache: dict, after_step=None, graph: bool = False):
    """One repetition through an IO binding with the KV cache and logits in the EP's memory (see the module
    docstring). `cache` keeps the shared KV buffers and logits across repetitions; `after_step(step)` is called
    after each step (0: the prompt), outside the timing. With `graph` (ORT's CUDA EP capturing CUDA graphs)
    the prompt runs uncaptured (gpu_graph_id -1) and every decode step replays graph 1, its inputs copied
    into device buffers that keep their address, as a replayed graph needs. Returns the last step's logits
    as an OrtValue."""
    import numpy as np  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415

    inputs = {i.name for i in sess.get_inputs()}
    logits_name = sess.get_outputs()[0].name
    vocab = sess.get_outputs()[0].shape[-1]
    b, length = args.batch_size, args.prompt_length
    kv_shape = (b, decoder.kv_heads, decoder.max_length, decoder.head_size)
    names = [(decoder.past_key % i, decoder.present_key % i) for i in range(decoder.layers)] + \
            [(decoder.past_value % i, decoder.present_value % i) for i in range(decoder.layers)]
    if shared and "kv" not in cache:
        cache["kv"] = [memory.empty(kv_shape, kv_type) for _ in names]
    for seq in (length, 1):
        if seq not in cache:
            cache[seq] = memory.empty((b, seq, vocab), kv_type)
    io = sess.io_binding()
    if shared:
        for (past, present), buffer in zip(names, cache["kv"], strict=True):
            io.bind_ortvalue_input(past, buffer)
            io.bind_ortvalue_output(present, buffer)
    else:
        empty = np.zeros((b, decoder.kv_heads, 0, decoder.head_size), kv_type)
        for past, _ in names:
            io.bind_cpu_input(past, empty)
    ids = _prompt(rng, sess, b, length)
    for step in range(args.generation_length + 1):
        seq = ids.shape[1]
        total = length if step == 0 else length + 1
        # the mask: (batch, total) for the prompt (a first prompt, as onnxruntime-genai feeds it); for a decode
        # step with the shared buffer the static (batch, max_length), zero past the real length
        mask = np.zeros((b, decoder.max_length if shared and step > 0 else total), np.int64)
        mask[:, :total] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "position_ids" in inputs:
            feeds["position_ids"] = np.broadcast_to(np.arange(total - seq, total, dtype=np.int64), (b, seq)).copy()
        for name, value in feeds.items():
            if graph and step > 0:
                key = ("graph input", name)
                if key not in cache:
                    cache[key] = memory.empty(value.shape, value.dtype)
                cache[key].update_inplace(value)
                io.bind_ortvalue_input(name, cache[key])
            else:
                io.bind_cpu_input(name, value)
        run_options = None
        if graph:
            run_options = ort.RunOptions()
            run_options.add_run_config_entry("gpu_graph_id", "1" if step > 0 else "-1")
        io.bind_ortvalue_output(logits_name, cache[seq])
        presents = []
        if not shared:
            presents = [memory.empty((b, decoder.kv_heads, total, decoder.head_size), kv_type) for _ in names]
            for (_, present), value in zip(names, presents, strict=True):
                io.bind_ortvalue_output(present, value)
        t = time.perf_counter()
        sess.run_with_iobinding(io, run_options)
        io.synchronize_outputs()
        if timed:
            timings[min(step, 1)].append(time.perf_counter() - t)
        if after_step is not None:
            after_step(step)
        if not shared:
            for (past, _), value in zip(names, presents, strict=True):
                io.bind_ortvalue_input(past, value)
        if step > 0:
            length += 1
        ids = _next_tokens(rng, sess, b)
    return cache[1] if args.generation_length else cache[args.prompt_length]


def _run_ep(decoder: Decoder, ep: str, args: argparse.Namespace, options: dict[str, str]) -> Result:
    import numpy as np  # noqa: PLC0415

    if ep == "cuda-graph" and not (decoder.shared_kv and args.io in (None, "binding")):
        raise SystemExit("hipdnn-ep bench: --ep cuda-graph replays one graph for every decode step, which needs "
                         "the same input shapes each step: a model with a shared KV buffer "
                         "(past_present_share_buffer) and --io binding")
    baseline = _peak_rss_kib()  # after the imports
    start = time.perf_counter()
    sess, ep_device = _session(decoder, ep, options, args.log, args.allow_fallback)
    session_s = time.perf_counter() - start
    inputs = {i.name: i for i in sess.get_inputs()}
    kv_type = np.dtype(NP_TYPES[inputs[decoder.past_key % 0].type])
    io = args.io or ("binding" if _gpu_ep(ep, options) else "numpy")
    shared = io == "binding" and decoder.shared_kv
    if shared and args.prompt_length + args.generation_length > decoder.max_length:
        raise SystemExit(f"hipdnn-ep bench: prompt {args.prompt_length} + generation {args.generation_length} "
                         f"exceeds the model's max_length {decoder.max_length} (its shared KV buffer); "
                         "give a shorter -l/-g or a model with a larger max_length")
    memory = DeviceMemory(ep, ep_device, options) if io == "binding" else None
    rng = np.random.default_rng(0)
    prefill, decode = [], []
    cache: dict = {}
    for rep in range(args.warmup + args.repetitions):
        if io == "binding":
            _feeds_bound(decoder, sess, args, kv_type, rng, (prefill, decode), rep >= args.warmup, memory, shared,
                         cache, graph=ep == "cuda-graph")
        else:
            _feeds_numpy(decoder, sess, args, kv_type, rng, (prefill, decode), rep >= args.warmup)
        print(json.dumps({"progress": ep, "done": rep + 1, "of": args.warmup + args.repetitions}), flush=True)
    pre = statistics.median(prefill)
    dec = statistics.median(decode) if decode else float("nan")
    peak = (_peak_rss_kib() - baseline) / 1024
    device = process_device_mib() if _gpu_ep(ep, options) else None
    runtime_peak = None
    if ep == "hipdnn":
        ordinal = options.get("device_id") or dict(ep_device.ep_metadata).get("device_id", "0")
        runtime_peak = runtime_peak_bytes(options.get("backend", "cpu"), int(ordinal))
    b = args.batch_size
    return Result(ep, pre * 1e3, dec * 1e3, b * args.prompt_length / pre, b / dec if decode else float("nan"), peak,
                  session_s, device, None if runtime_peak is None else runtime_peak / 2**20, io,
                  "shared" if shared else "growing")


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
    ap.add_argument("--log", help=argparse.SUPPRESS)  # the worker's ORT log goes here (read for graph notes)
    return ap


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("model", help="onnxruntime-genai model folder (genai_config.json, model.onnx)")
    ap.add_argument("-l", "--prompt-length", type=int, default=128)
    ap.add_argument("-g", "--generation-length", type=int, default=32, help="decode steps per repetition")
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("-w", "--warmup", type=int, default=1, help="repetitions run first and not timed")
    ap.add_argument("-b", "--batch-size", type=int, default=1)
    ap.add_argument("--ep", action="append", choices=("hipdnn", "cpu", "cuda", "cuda-graph"),
                    help="EPs to run (default: hipdnn, cpu, and cuda when onnxruntime has it); cuda-graph: ORT's "
                         "CUDA EP replaying a captured graph of each decode step (needs a shared KV buffer)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="hipdnn-ep option")
    ap.add_argument("--allow-fallback", action="store_true",
                    help="let nodes hipdnn-ep does not take run on ORT's CPU EP (by default the bench refuses: its "
                         "figures would not be the EP's alone)")
    ap.add_argument("--io", choices=("binding", "numpy"),
                    help="binding: KV cache and logits in the EP's device memory through an IO binding (default for "
                         "GPU EPs); numpy: host arrays (default on the CPU)")
    ap.add_argument("--json", help="also write the results to this file")


def _progress():
    """A rich progress bar when rich is installed, else plain lines."""
    try:
        from rich.progress import Progress  # noqa: PLC0415
    except ImportError:
        return None
    return Progress(transient=True)


def memory_ratio(r: Result, resident: int) -> str:
    """The table's peak memory over weights + KV: the runtime's peak for this EP, else nvidia-smi's figure
    marked *, else '-'."""
    if r.runtime_peak_mib is not None:
        return f"{r.runtime_peak_mib * 2**20 / resident:.2f}"
    if r.device_mib is not None:
        return f"{r.device_mib * 2**20 / resident:.2f}*"
    return "-"


def graph_notes(log: str) -> str | None:
    """What this EP's log says about graph capture: how many nodes were replayed from a captured graph, and
    why the others run without one (the EP says it once per node, at ORT's info level). None: nothing said."""
    replayed, without = 0, {}
    for line in log.splitlines():
        at = line.find("hipdnn-ep: node '")
        if at < 0:
            continue
        if "' replayed from a captured graph" in line:
            replayed += 1
        elif "' runs without a graph: " in line:
            why = line.split("' runs without a graph: ", 1)[1].strip()
            without[why] = without.get(why, 0) + 1
    if not replayed and not without:
        return None
    parts = [f"{replayed} node(s) replayed from captured graphs"] if replayed else []
    parts += [f"{n} node(s) without a graph: {why}" for why, n in without.items()]
    return "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    import tempfile  # noqa: PLC0415

    import onnxruntime as ort  # noqa: PLC0415

    decoder = Decoder.read(Path(args.model))
    eps = args.ep or ["hipdnn", "cpu"] + (["cuda"] if "CUDAExecutionProvider" in ort.get_available_providers() else [])
    options = dict(kv.split("=", 1) for kv in args.option)
    backend = options.get("backend", "cpu")
    bandwidth = copy_bandwidth() if backend == "cpu" else device_copy_bandwidth(backend)
    context = args.prompt_length + (args.generation_length + 1) / 2
    weights, kv = decode_bytes(decoder, args.batch_size, context)
    floor_ms = (weights + kv) / bandwidth * 1e3
    all_weights, kv_growing = resident_bytes(decoder, args.batch_size, args.prompt_length + args.generation_length)
    kv_shared = resident_bytes(decoder, args.batch_size, decoder.max_length)[1]
    base = [sys.executable, "-m", "hipdnn_ep.bench", args.model, "-l", str(args.prompt_length), "-g",
            str(args.generation_length), "-r", str(args.repetitions), "-w", str(args.warmup), "-b",
            str(args.batch_size), *(f"--option={o}" for o in args.option), *(["--io", args.io] if args.io else []),
            *(["--allow-fallback"] if args.allow_fallback else [])]
    results: list[Result] = []
    progress = _progress()
    total = args.warmup + args.repetitions
    if progress:
        progress.start()
    try:
        for ep in eps:
            task = progress.add_task(f"{ep}: session", total=total) if progress else None
            with tempfile.NamedTemporaryFile("w+", prefix=f"bench-{ep}-", suffix=".log") as log:
                extra = ["--log", log.name] if ep == "hipdnn" else []
                proc = subprocess.Popen([*base, "--worker", ep, *extra], stdout=subprocess.PIPE, stderr=log,
                                        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
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
                proc.wait()
                log.seek(0)
                text = log.read()
            if proc.returncode != 0 or result is None:
                # the worker's own errors and ORT's warnings, without its info lines
                said = [ln for ln in text.splitlines() if " [I:" not in ln and "I:onnxruntime" not in ln]
                print("\n".join(said[-40:]), file=sys.stderr)
                print(f"hipdnn-ep bench: {ep} failed (exit status {proc.returncode})", file=sys.stderr)
                continue
            if ep == "hipdnn":
                result.graphs = graph_notes(text)
            results.append(result)
    finally:
        if progress:
            progress.stop()
    print(f"model {decoder.model}  batch {args.batch_size}  prompt {args.prompt_length}  "
          f"generate {args.generation_length}  repetitions {args.repetitions} (+{args.warmup} warm-up)")
    print(f"decode floor: {weights / 2**20:.1f} MiB weights + {kv / 2**20:.1f} MiB KV per step at "
          f"{bandwidth / 1e9:.1f} GB/s {'host' if backend == 'cpu' else backend + ' device'} copy (read + write) = "
          f"{floor_ms:.3f} ms per step")
    shared_text = f" ({kv_shared / 2**20:.1f} MiB as the shared buffer of {decoder.max_length})"
    print(f"resident: {all_weights / 2**20:.1f} MiB weights + {kv_growing / 2**20:.1f} MiB KV cache at "
          f"{args.prompt_length + args.generation_length} positions{shared_text if decoder.shared_kv else ''}; "
          "target: peak device memory <= 1.10 x (weights + KV)")
    header = f"{'EP':<8} {'io':<8} {'kv':<8} {'prefill ms':>11} {'prefill tok/s':>14} {'decode ms/step':>15} " \
             f"{'decode tok/s':>13} {'x floor':>8} {'+peak MiB':>10} {'device MiB':>11} {'rt peak MiB':>12} " \
             f"{'x W+KV':>7} {'session s':>10}"
    print(header)
    print("-" * len(header))
    for r in results:
        resident = all_weights + (kv_shared if r.kv == "shared" else kv_growing)
        print(f"{r.ep:<8} {r.io:<8} {r.kv:<8} {r.prefill_ms:>11.2f} {r.prefill_tok_s:>14.1f} {r.decode_ms:>15.3f} "
              f"{r.decode_tok_s:>13.1f} {r.decode_ms / floor_ms:>8.2f} {r.peak_rss_mib:>10.0f} "
              f"{'-' if r.device_mib is None else f'{r.device_mib:.0f}':>11} "
              f"{'-' if r.runtime_peak_mib is None else f'{r.runtime_peak_mib:.0f}':>12} "
              f"{memory_ratio(r, resident):>7} {r.session_s:>10.2f}")
    print("+peak MiB: growth of the process's peak resident set (host); device MiB: what nvidia-smi says the "
          "process holds after its runs (CUDA context and every block its allocator caches included); rt peak MiB: "
          "the most memory hipdnn's runtime held at once (allocator segments and GEMM workspaces of every state on "
          "its device; host memory on the cpu backend); x W+KV: rt peak over weights + KV cache, or with * device "
          "MiB over it (nvidia-smi: an upper bound, the context included)")
    for r in results:
        if r.graphs:
            print(f"{r.ep} graphs: {r.graphs}")
    if args.json:
        Path(args.json).write_text(json.dumps({"floor_ms": floor_ms, "weight_bytes": weights, "kv_bytes": kv,
                                               "resident_weight_bytes": all_weights,
                                               "resident_kv_bytes": {"growing": kv_growing, "shared": kv_shared},
                                               "copy_bytes_per_s": bandwidth,
                                               "results": [asdict(r) for r in results]}, indent=2))
    return 0 if len(results) == len(eps) else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
