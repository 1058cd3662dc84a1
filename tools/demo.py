"""The main job: an encoder layer with dynamic shapes and the same layer fixed at sequence
length 128, run through ONNX Runtime with hipdnn-ep (CPU fallback disabled, so the EP must
take every node) and compared with ORT's CPU EP. Prints one table; exits 1 on a mismatch.

    python tools/demo.py [--backend cpu|cuda|hip] [--cache-dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import hipdnn_ep
import numpy as np
import onnx
import onnxruntime as ort
from rich.console import Console
from rich.markup import escape
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
from models import attention_feeds, attention_model  # noqa: E402

TOLERANCE = 1e-4
CASES = [
    # (label, model, the (batch, seq) shapes it runs at: several per session for the dynamic one)
    ("encoder, dynamic [batch, seq]", attention_model(), [(1, 1), (2, 17), (4, 64), (1, 128)]),
    ("encoder, fixed [2, 128]", attention_model(batch=2, seq=128), [(2, 128)]),
]


def ep_session(path: Path, devices: list, backend: str, cache_dir: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    options.add_provider_for_devices(devices, {"backend": backend, "cache_dir": cache_dir})
    return ort.InferenceSession(str(path), sess_options=options)


def median_ms(session: ort.InferenceSession, feeds: dict, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["cpu", "cuda", "hip"], default="cpu")
    ap.add_argument("--cache-dir", help="compile cache (default: a fresh temporary folder, so the demo compiles)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per shape")
    args = ap.parse_args(argv)

    console = Console()
    devices = hipdnn_ep.register(ort)
    table = Table(title=f"hipdnn-ep ({args.backend} backend) vs ONNX Runtime CPU EP")
    for column in ("model", "shape", "max |diff|", "hipdnn-ep ms", "ORT CPU ms", "ratio"):
        table.add_column(column, justify="left" if column in ("model", "shape") else "right")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache_dir or str(Path(tmp) / "cache")
        for label, model, shapes in CASES:
            path = Path(tmp) / "model.onnx"
            onnx.save(model, path)
            start = time.perf_counter()
            session = ep_session(path, devices, args.backend, cache_dir)
            console.print(f"{escape(label)}: session created (compiled) in {time.perf_counter() - start:.2f} s")
            reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            for batch, seq in shapes:
                feeds = attention_feeds(batch, seq)
                diff = max(float(np.max(np.abs(g - w)))
                           for g, w in zip(session.run(None, feeds), reference.run(None, feeds), strict=True))
                failures += diff > TOLERANCE
                ep_ms, cpu_ms = median_ms(session, feeds, args.repeat), median_ms(reference, feeds, args.repeat)
                verdict = f"{diff:.2e}" + (" FAIL" if diff > TOLERANCE else "")
                table.add_row(escape(label), escape(f"[{batch}, {seq}]"), verdict,
                              f"{ep_ms:.3f}", f"{cpu_ms:.3f}", f"{ep_ms / cpu_ms:.2f}")
    console.print(table)
    if failures:
        console.print(f"[red]{failures} result(s) differ from ORT's CPU EP by more than {TOLERANCE}[/red]")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
