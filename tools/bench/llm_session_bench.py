"""Session creation of LLM-shaped int4 models with hipdnn-ep, against ONNX Runtime's CPU EP, as one table.

For each model (an onnxruntime-genai folder given with --model, or one tools/models/llm_models.py writes with
--size), each cell is a fresh process that creates one InferenceSession of the decoder and reports:

  ort-cpu   ONNX Runtime's CPU EP alone (the reference: loading the weights is most of its work)
  cold      hipdnn-ep with an empty compile cache (compiler start, support check, compile)
  warm      hipdnn-ep with the cache the cold run filled (no compile)

Columns: seconds of InferenceSession(...) (median and min over --repeat), its ratio to ort-cpu's median,
the CPU seconds of the whole measured process and its compiler (imports included; a loaded machine
inflates the wall time, not this), the process's resident-set growth over the session (after it,
and at its peak), as a multiple of the model's weight bytes, and the compiler process's peak
resident set (it is a separate process, whose memory is returned when it idles out or its host
exits); then the seconds of a first and a second decode step (one token after 8 cached ones; a GPU
backend uploads the weights in the first) and the resident-set growth after them.

    python tools/bench/llm_session_bench.py --size llama3-8b-8l --size llama3-8b [--repeat 3]
    python tools/bench/llm_session_bench.py --model FOLDER [--option backend=cuda]
    python tools/bench/llm_session_bench.py --model FOLDER --host-as-device

--host-as-device sets the EP's test hook HIPDNN_EP_TEST_HOST_AS_DEVICE=1 in the measured processes: the CPU
backend offers its memory to ONNX Runtime as a GPU memory device, so session creation takes ORT's GPU path
(placement of the fused nodes' inputs, the EP's allocator and data transfer) on a machine without a GPU.

A second table (--phases) splits a compile of each decoder, in a fresh process, into the compiler's
stages: imports, load (ONNX checker, shape inference), import to the IR, the pass pipeline, lowering to
the LLVM dialect, LLVM code generation and linking. The EP compiles the subgraph it claims, which is
the whole decoder when every node is claimed.

Models written for --size go to --work (default: a temporary folder, removed at the end); run big ones
one at a time on a loaded machine (`nice`), they take a minute to write and several GB of disk.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CELLS = ("ort-cpu", "cold", "warm")


def _status_kib(pid: int | str, field: str) -> int:
    """A VmRSS / VmHWM figure of /proc/PID/status, in KiB (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _compiler_usage() -> tuple[int, float]:
    """The peak resident set (KiB) and the CPU seconds of this process's compiler children
    (hipdnn_ep_compiler.protocol)."""
    peak, cpu = 0, 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"hipdnn_ep_compiler" in cmdline:
                peak = max(peak, _status_kib(pid, "VmHWM"))
                try:  # utime and stime, fields 14 and 15 (the command, field 2, may hold spaces)
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    cpu += (int(fields[11]) + int(fields[12])) / ticks
                except (OSError, IndexError, ValueError):
                    pass
    return peak, cpu


def child(model: str, cell: str, cache_dir: str, options: list[str]) -> None:
    """Runs in the measured process: prints one JSON line."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    if cell != "ort-cpu":
        import hipdnn_ep

        devices = hipdnn_ep.register(ort)
        so.add_provider_for_devices(devices, {"cache_dir": cache_dir, **dict(o.split("=", 1) for o in options)})
    # the high-water mark counts from here: what the session adds, not the imports before it
    Path("/proc/self/clear_refs").write_text("5")
    rss0 = _status_kib("self", "VmRSS")
    t = time.perf_counter()
    sess = ort.InferenceSession(model, sess_options=so)
    seconds = time.perf_counter() - t
    compiler_peak, compiler_cpu = _compiler_usage()
    own = resource.getrusage(resource.RUSAGE_SELF)
    result = {"seconds": seconds, "rss_kib": _status_kib("self", "VmRSS") - rss0,
              "peak_kib": _status_kib("self", "VmHWM") - rss0, "compiler_peak_kib": compiler_peak,
              "cpu_seconds": own.ru_utime + own.ru_stime + compiler_cpu, "providers": sess.get_providers()}
    # the first run pays what the session deferred (a GPU backend uploads the weights then): two decode
    # steps, timed apart
    feeds = decode_feeds(sess, Path(model).parent / "genai_config.json")
    for key in ("first_run_s", "second_run_s"):
        t = time.perf_counter()
        sess.run(None, feeds)
        result[key] = time.perf_counter() - t
    result["rss_after_runs_kib"] = _status_kib("self", "VmRSS") - rss0
    print(json.dumps(result))


DECODE_PAST = 8
_DECODE_DIMS = {"batch_size": 1, "sequence_length": 1, "past_sequence_length": DECODE_PAST,
                "total_sequence_length": DECODE_PAST + 1}


def decode_feeds(sess, config: Path) -> dict:
    """Inputs of one decode step (one new token after DECODE_PAST cached ones) for a decoder written by
    onnxruntime-genai's builder or tools/models/llm_models.py, from the session's own input list; the
    cache is max_length long where the model's genai_config.json shares past and present buffers."""
    import numpy as np

    genai = json.loads(config.read_text()) if config.is_file() else {}
    search = genai.get("search", {})
    cache = search["max_length"] if search.get("past_present_share_buffer") else DECODE_PAST
    head_size = genai.get("model", {}).get("decoder", {}).get("head_size")
    types = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float16)": np.float16,
             "tensor(float)": np.float32}
    feeds = {}
    for i in sess.get_inputs():
        shape = []
        for k, d in enumerate(i.shape):
            if i.name.startswith("past_key_values") and k == 2:
                d = cache  # the cache's length: the past, or the whole shared buffer
            elif i.name.startswith("past_key_values") and k == 3 and not isinstance(d, int) and head_size:
                d = head_size
            if not isinstance(d, int) and d not in _DECODE_DIMS:
                raise SystemExit(f"input {i.name}: unknown dim {d!r} (known: {', '.join(_DECODE_DIMS)})")
            shape.append(d if isinstance(d, int) else _DECODE_DIMS[d])
        dtype = types[i.type]
        if i.name == "position_ids":
            feeds[i.name] = np.full(shape, DECODE_PAST, dtype)
        elif i.name in ("input_ids", "attention_mask"):
            feeds[i.name] = np.ones(shape, dtype)
        else:
            feeds[i.name] = np.zeros(shape, dtype)
    return feeds


def phases_child(model: str) -> None:
    """Runs in a fresh process: times each stage of one compile of `model`, prints one JSON line."""
    t0 = time.perf_counter()
    from hipdnn_ep_compiler import compiler
    from hipdnn_ep_compiler.abi import load_abi
    from hipdnn_ep_compiler.frontend import load_model
    from hipdnn_ep_compiler.frontend.importer import import_model
    from hipdnn_ep_compiler.link import link_shared_object
    from hipdnn_ep_compiler.lowering import lower_to_llvm
    from hipdnn_ep_compiler.passes import run_pipeline
    from torch_mlir import execution_engine  # noqa: F401 - object emission's import, timed with the rest

    times = {"imports": time.perf_counter() - t0}

    def timed(label, fn, *args, **kwargs):
        t = time.perf_counter()
        result = fn(*args, **kwargs)
        times[label] = time.perf_counter() - t
        return result

    target = load_abi()
    proto, _ = timed("load, check, infer shapes", load_model, model)
    module = timed("import to IR", import_model, proto)
    timed("pass pipeline", run_pipeline, module, abi=target)
    lowered = timed("lower to LLVM dialect", lower_to_llvm, module, target)
    with tempfile.TemporaryDirectory(prefix="llm-session-bench-phases-") as tmp:
        obj = Path(tmp) / "program.o"
        timed("LLVM codegen", compiler.emit_object, lowered.module, lowered.imports, obj)
        timed("link", link_shared_object, obj, Path(tmp) / "program.so", target)
    times["nodes"] = len(proto.graph.node)
    print(json.dumps(times))


def weight_bytes(model: Path) -> int:
    """Bytes of the model's initializers (external data by its declared length, inline by its size)."""
    import onnx

    proto = onnx.load(str(model), load_external_data=False)
    total = 0
    for t in proto.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            total += int(info.get("length", 0)) or (Path(model).parent / info["location"]).stat().st_size
        else:
            total += len(t.raw_data) or len(t.SerializeToString())
    return total


def decoder_path(folder: Path) -> Path:
    config = json.loads((folder / "genai_config.json").read_text())
    return folder / config["model"]["decoder"]["filename"]


def run_cell(python: str, model: Path, cell: str, cache: Path, options: list[str],
             env: dict[str, str] | None = None) -> dict:
    out = subprocess.run([python, __file__, "--child", str(model), cell, str(cache), *options],
                         capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{cell} on {model}: the measured process failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_phases(python: str, model: Path) -> dict:
    out = subprocess.run([python, __file__, "--phases-child", str(model)], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(f"compiling {model} stage by stage failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _gib(kib: float) -> str:
    return f"{kib / 2**20:.2f}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], argv[3], argv[4:])
        return 0
    if argv[:1] == ["--phases-child"]:
        phases_child(argv[1])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", default=[], help="an onnxruntime-genai model folder (repeatable)")
    ap.add_argument("--size", action="append", default=[],
                    help="a tools/models/llm_models.py size to write (repeatable)")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions per cell (default 3)")
    ap.add_argument("--option", action="append", default=[], help="KEY=VALUE EP option (repeatable)")
    ap.add_argument("--work", type=Path, help="folder for the models written for --size (kept)")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--phases", action="store_true", help="also time the compiler's stages on each decoder")
    ap.add_argument("--host-as-device", action="store_true",
                    help="the EP's test hook: ORT's GPU path for the CPU backend (HIPDNN_EP_TEST_HOST_AS_DEVICE=1)")
    args = ap.parse_args(argv)
    if not args.model and not args.size:
        args.size = ["small"]

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    env = dict(os.environ, HIPDNN_EP_TEST_HOST_AS_DEVICE="1") if args.host_as_device else None
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="llm-session-bench-") as tmp:
        root = Path(tmp)
        work = args.work or root
        folders = [(Path(m).name, Path(m)) for m in args.model]
        for size in args.size:
            import llm_models

            folder = work / size
            if not (folder / "genai_config.json").is_file():
                print(f"writing the {size} model to {folder} ...", file=sys.stderr)
                llm_models.write_model(llm_models.SIZES[size], folder)
            folders.append((size, folder))
        for label, folder in folders:
            model = decoder_path(folder)
            runs: dict[str, list[dict]] = {c: [] for c in CELLS}
            for rep in range(args.repeat):
                cache = root / f"cache-{label}-{rep}"
                cache.mkdir(mode=0o700)
                for cell in CELLS:  # cold fills the cache warm reads
                    runs[cell].append(run_cell(sys.executable, model, cell, cache, args.option, env))
                print(f"{label}: repetition {rep + 1}/{args.repeat} done", file=sys.stderr)
            results[label] = {"weight_bytes": weight_bytes(model), "runs": runs}
            if args.phases:
                results[label]["phases"] = [run_phases(sys.executable, model) for _ in range(args.repeat)]

    print(f"session creation: seconds median (min) of {args.repeat}; memory: growth of the process's resident "
          "set over the session, GiB (x weight bytes)")
    header = ("| model | weights GiB | cell | seconds | x ort-cpu | process CPU s | RSS after | RSS peak | "
              "compiler peak GiB | 1st run s | 2nd run s | RSS after runs | providers |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for label, r in results.items():
        w = r["weight_bytes"]
        base = statistics.median(x["seconds"] for x in r["runs"]["ort-cpu"])
        for cell in CELLS:
            runs = r["runs"][cell]
            sec = [x["seconds"] for x in runs]
            rss = statistics.median(x["rss_kib"] for x in runs)
            peak = statistics.median(x["peak_kib"] for x in runs)
            comp = max(x["compiler_peak_kib"] for x in runs)
            providers = ",".join(p.replace("ExecutionProvider", "") for p in runs[0]["providers"])
            cpu = statistics.median(x["cpu_seconds"] for x in runs)
            first, second = (statistics.median(x[k] for x in runs) for k in ("first_run_s", "second_run_s"))
            after_runs = statistics.median(x["rss_after_runs_kib"] for x in runs)
            print(f"| {label} | {w / 2**30:.2f} | {cell} | {statistics.median(sec):.3f} ({min(sec):.3f}) | "
                  f"{statistics.median(sec) / base:.2f} | {cpu:.2f} | {_gib(rss)} ({rss * 1024 / w:.2f}x) | "
                  f"{_gib(peak)} ({peak * 1024 / w:.2f}x) | {_gib(comp) if comp else '-'} | {first:.3f} | "
                  f"{second:.4f} | {_gib(after_runs)} ({after_runs * 1024 / w:.2f}x) | {providers} |")
    if args.phases:
        labels = list(results)
        print(f"\ncompiler stages, seconds: median of {args.repeat} (a fresh process each)")
        print("| stage | " + " | ".join(f"{lb} ({results[lb]['phases'][0]['nodes']} nodes)" for lb in labels) + " |")
        print("|---|" + "---|" * len(labels))
        stages = [k for k in results[labels[0]]["phases"][0] if k != "nodes"]
        for stage in [*stages, "total"]:
            cells = []
            for lb in labels:
                runs = results[lb]["phases"]
                values = [sum(r[k] for k in stages) if stage == "total" else r[stage] for r in runs]
                cells.append(f"{statistics.median(values):.3f}")
            print(f"| {stage} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
