"""Compile time of a real transformers export: BERT-base (random weights from a BertConfig, nothing
downloaded) exported with torch.onnx.export (opset 17, dynamic batch and sequence), converted to
float16 with onnxruntime's OnnxModel.convert_float_to_float16(keep_io_types=True), then measured
and printed as one table:

  support check    hipdnn_ep_compiler.check_support (in this process, imports done): nodes claimed / total
  compile          hipdnn_ep_compiler.compile_model (in this process, after the support check)
  session cold     a new process, an empty compile cache: InferenceSession with the EP, CPU fallback off
                   (support check + compile + load, as a user meets it)
  session warm     a new process, the cache the cold one filled
  ORT session      InferenceSession with ORT's CPU EP alone (--reference cuda: its CUDA EP), same model
  max |error|      the EP's outputs against that reference on the same feeds

    pip install torch transformers onnxscript      (besides the hipdnn-ep wheels)
    python tools/bench/compile_bench.py [--layers 12] [--seq 128] [--profile N] [--keep DIR]
    python tools/bench/compile_bench.py --model bert-fp16.onnx    (an export made before: no torch needed)
    python tools/bench/compile_bench.py --backend cuda --reference cuda   (on a GPU, against ORT's CUDA EP;
                                                                           needs onnxruntime-gpu)

--profile N prints the N most expensive functions (cProfile, cumulative) of the in-process compile.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def export_bert(folder: Path, layers: int, hidden: int, heads: int) -> Path:
    import onnx
    import torch
    from onnxruntime.transformers.onnx_model import OnnxModel
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                        intermediate_size=4 * hidden)
    bert = BertModel(config).eval()

    class Export(torch.nn.Module):  # keyword arguments, as transformers' forward takes them
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    model = Export().eval()
    ids = torch.randint(0, config.vocab_size, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    fp32 = folder / "bert-fp32.onnx"
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            "last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}}
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), str(fp32), opset_version=17, input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state", "pooler_output"], dynamic_axes=axes, dynamo=False)
    m = OnnxModel(onnx.load(str(fp32)))
    m.convert_float_to_float16(keep_io_types=True)
    fp16 = folder / "bert-fp16.onnx"
    m.save_model_to_file(str(fp16))
    return fp16


def feeds(batch: int, seq: int):
    import numpy as np

    rng = np.random.default_rng(0)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, seq // 2:] = 0  # one padded row
    return {"input_ids": rng.integers(0, 30522, (batch, seq)).astype(np.int64), "attention_mask": mask}


def _run_ms(sess, f: dict, repeat: int = 20) -> float:
    """Median milliseconds of one Run (outputs copied to the host), after two warm-up runs."""
    import statistics

    for _ in range(2):
        sess.run(None, f)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sess.run(None, f)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


REFERENCE = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


def child(model: str, cache: str, batch: int, seq: int, backend: str, reference: str) -> None:
    """In a fresh process: the EP session's creation time, its outputs' error against ORT's reference EP
    and the Run time of both."""
    import hipdnn_ep
    import numpy as np
    import onnxruntime as ort

    devices = hipdnn_ep.register(ort)
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devices, {"backend": backend, "cache_dir": cache})
    t = time.perf_counter()
    try:
        sess = ort.InferenceSession(model, sess_options=so, enable_fallback=0)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        print(json.dumps({"error": str(exc).splitlines()[0][:200]}))
        return
    created = time.perf_counter() - t
    t = time.perf_counter()
    cpu = ort.InferenceSession(model, providers=[REFERENCE[reference]])
    cpu_created = time.perf_counter() - t
    f = feeds(batch, seq)
    err = max(float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))
              for g, w in zip(sess.run(None, f), cpu.run(None, f), strict=True))
    print(json.dumps({"session": created, "cpu_session": cpu_created, "max_error": err,
                      "run_ms": _run_ms(sess, f), "cpu_run_ms": _run_ms(cpu, f)}))


def in_child(model: Path, cache: Path, batch: int, seq: int, backend: str, reference: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(model), str(cache), str(batch), str(seq), backend,
                          reference], capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--keep", type=Path, help="keep the models and caches in this folder")
    ap.add_argument("--model", type=Path, help="measure this model (inputs input_ids, attention_mask) instead "
                                               "of exporting one")
    ap.add_argument("--backend", default="cpu", help="the EP's backend for the sessions (cpu, cuda, hip)")
    ap.add_argument("--reference", choices=list(REFERENCE), default="cpu",
                    help="ORT's EP the outputs and times are compared with (cuda: its CUDA EP)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        model, cache, batch, seq, backend, reference = args.child
        child(model, cache, int(batch), int(seq), backend, reference)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="compile-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    model = args.model or export_bert(folder, args.layers, args.hidden, args.heads)
    export_s = float("nan") if args.model else time.perf_counter() - t

    import hipdnn_ep_compiler as hc
    import onnx
    from hipdnn_ep_compiler.support import check_support

    m = onnx.load(str(model), load_external_data=False)
    ops = Counter(n.op_type for n in m.graph.node)
    t = time.perf_counter()
    verdicts = check_support(str(model))
    support_s = time.perf_counter() - t
    claimed = sum(v.supported for v in verdicts)
    refused = Counter((v.op_type, v.reason.split(": ", 1)[-1][:80]) for v in verdicts if not v.supported)
    profiler = cProfile.Profile() if args.profile else None
    t = time.perf_counter()
    if profiler:
        profiler.enable()
    try:
        hc.compile_model(str(model), folder / "artifact")
        compile_s = time.perf_counter() - t
    except hc.CompileError as exc:
        compile_s = float("nan")
        print(f"compile refused: {exc}")
    if profiler:
        profiler.disable()
    cold = in_child(model, folder / "cache", args.batch, args.seq, args.backend, args.reference)
    warm = in_child(model, folder / "cache", args.batch, args.seq, args.backend, args.reference)
    ref = f"ORT {args.reference.upper()}"

    cpu_s = cold.get("cpu_session", float("nan"))

    def ratio(x: float) -> str:
        return f"{x / cpu_s:8.1f}x" if cpu_s == cpu_s and x == x else "       -"

    rows = [("export (torch + fp16 conversion)", export_s, ""),
            ("support check (in process)", support_s, f"{claimed}/{len(verdicts)} nodes claimed"),
            ("compile (in process)", compile_s, ""),
            ("session cold (new process, empty cache)", cold.get("session", float("nan")), cold.get("error", "")),
            ("session warm (new process, filled cache)", warm.get("session", float("nan")), warm.get("error", "")),
            (f"{ref} EP session", cpu_s, "")]
    if args.model:
        print(f"\n{args.model.name}: {len(m.graph.node)} nodes, run at batch {args.batch}, seq {args.seq}")
    else:
        print(f"\nBERT-base export: {len(m.graph.node)} nodes, {args.layers} layers, hidden {args.hidden}, fp16 "
              f"(keep_io_types), run at batch {args.batch}, seq {args.seq}")
    print(f"{'':44} {'seconds':>9} {'vs ' + ref:>10}  note")
    for name, secs, note in rows:
        print(f"{name:44} {secs:9.2f} {ratio(secs) if name != rows[0][0] else '':>10}  {note}")
    if "max_error" in cold:
        print(f"{'max |error| vs ' + ref + ' (fp16 model)':44} {cold['max_error']:9.2e}")
        print(f"{'Run, ms (EP ' + args.backend + ' / ' + ref + ')':44} {warm.get('run_ms', float('nan')):9.2f} "
              f"{warm.get('cpu_run_ms', float('nan')):9.2f}")
    print("ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    for (op, why), n in refused.most_common():
        print(f"refused: {n} x {op}: {why}")
    if profiler:
        print()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
