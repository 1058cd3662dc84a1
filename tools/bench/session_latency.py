"""Session-creation latency of onnxruntime with hipdnn-ep for the demo encoder (tools/models/models.py),
dynamic [batch, seq] and fixed [2, 128], measured in fresh processes and printed as one table
(median and min over the repetitions).

For each repetition, each interpreter given (--python, several to compare installs) runs, in turn
(interleaved, so a machine loaded by other work skews them alike):

  cold    a new process, an empty compile cache: register(), then the first session (no compiler
          process yet), then a second session of the other model (the compiler process is running)
  warm    a new process, the cache filled by a previous process: register(), then both sessions

Columns: register = hipdnn_ep.register(); first / second = InferenceSession(...) of the first and
the second model; total = from before register() to after the second session.

A second table splits a cold session's compiler work: the compiler process driven directly over
its protocol (`python -m hipdnn_ep_compiler.protocol --serve`): start (spawn, interpreter start and
imports: the first answer's time less a second one's), capabilities, support and compile of
each model, as the EP asks them; and the import time (-X importtime, cumulative) of the heaviest
modules. What a cold session takes beyond these is the EP's and ONNX Runtime's own work.

    python tools/bench/session_latency.py [--repeat N] [--python PY ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ORDERS = {"dynamic first": ("dynamic", "fixed"), "fixed first": ("fixed", "dynamic")}


def child(models_dir: str, cache_dir: str, order: list[str]) -> None:
    """Runs in the measured process: prints one JSON line of timings in seconds."""
    start = time.perf_counter()
    import hipdnn_ep
    import onnxruntime as ort

    imported = time.perf_counter()
    devices = hipdnn_ep.register(ort)
    registered = time.perf_counter()
    times = {"import": imported - start, "register": registered - imported}
    sessions = []
    for label, name in zip(("first", "second"), order, strict=True):
        options = ort.SessionOptions()
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        options.add_provider_for_devices(devices, {"backend": "cpu", "cache_dir": cache_dir})
        t = time.perf_counter()
        sessions.append(ort.InferenceSession(str(Path(models_dir) / f"{name}.onnx"), sess_options=options))
        times[label] = time.perf_counter() - t
    times["total"] = time.perf_counter() - imported
    print(json.dumps(times))


# What a compile imports (the compiler's protocol.prepare, spelled out for compilers without it).
PREPARE = ("import hipdnn_ep_compiler.protocol, hipdnn_ep_compiler.compiler, hipdnn_ep_compiler.support, "
           "torch_mlir.execution_engine, torch_mlir.passmanager, torch_mlir.dialects.llvm")
IMPORTS = ("numpy", "ml_dtypes", "onnx", "torch_mlir.ir", "hipdnn_ep_compiler.compiler")


def phases(python: str, models_dir: Path, work: Path) -> dict[str, float]:
    """Times the compiler's answers to what the EP asks in a cold session of each model."""
    proc = subprocess.Popen([python, "-m", "hipdnn_ep_compiler.protocol", "--serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd="/")
    times: dict[str, float] = {}

    def ask(label: str, request: dict) -> None:
        t = time.perf_counter()
        proc.stdin.write(json.dumps({"protocol": 2, **request}) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        if not answer.get("ok"):
            raise SystemExit(f"{python}: the compiler refused {request}: {answer}")
        times[label] = time.perf_counter() - t

    ask("start", {"action": "capabilities"})  # the first answer waits for the process to be ready
    ask("capabilities", {"action": "capabilities"})
    times["start"] -= times["capabilities"]
    for name in ("dynamic", "fixed"):
        model = str(models_dir / f"{name}.onnx")
        ask(f"support {name}", {"action": "support", "models": [model]})
        ask(f"compile {name}", {"action": "compile", "model": model, "output": str(work / name)})
    proc.stdin.close()
    proc.wait()
    out = subprocess.run([python, "-X", "importtime", "-c", PREPARE],
                         capture_output=True, text=True, check=True, cwd="/")
    for line in out.stderr.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) == 3 and fields[2] in IMPORTS:
            times[f"import {fields[2]}"] = int(fields[1]) / 1e6
    return times


def run_child(python: str, models_dir: Path, cache_dir: Path, order: tuple[str, str]) -> dict[str, float]:
    out = subprocess.run([python, __file__, "--child", str(models_dir), str(cache_dir), *order],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{python}: the measured process failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="repetitions per cell (default 5)")
    ap.add_argument("--python", action="append", help="interpreter of an install to measure (repeatable; "
                    "default: this one)")
    args = ap.parse_args(argv)
    pythons = args.python or [sys.executable]

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    import onnx
    from models import attention_model

    results: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="session-latency-") as tmp:
        root = Path(tmp)
        onnx.save(attention_model(), root / "dynamic.onnx")
        onnx.save(attention_model(batch=2, seq=128), root / "fixed.onnx")
        for rep in range(args.repeat):
            for p, python in enumerate(pythons):
                for order_name, order in ORDERS.items():
                    cache = root / f"cache-{p}-{rep}-{order[0]}"
                    cache.mkdir(mode=0o700)
                    for state in ("cold", "warm"):  # the cold run fills the cache the warm run uses
                        timings = run_child(python, root, cache, order)
                        results.setdefault((python, state, order_name), []).append(timings)
                work = root / f"phases-{p}-{rep}"
                work.mkdir()
                results.setdefault((python, "phases", ""), []).append(phases(python, root, work))
            print(f"repetition {rep + 1}/{args.repeat} done", file=sys.stderr)

    columns = ("register", "first", "second", "total")
    header = f"| {'install':<12} | {'cache':<5} | {'order':<13} | " + " | ".join(f"{c:>15}" for c in columns) + " |"
    print(f"session creation, seconds: median (min) of {args.repeat} runs")
    print(header)
    print("|" + "|".join("-" * (len(cell) + 0) for cell in header.split("|")[1:-1]) + "|")
    def label_of(python: str) -> str:  # the virtual environment's folder name
        path = Path(python)
        name = path.parent.parent.name if path.parent.name == "bin" else path.name
        return name if len(name) <= 12 else "…" + name[-11:]

    for (python, state, order_name), runs in results.items():
        if state == "phases":
            continue
        label = label_of(python)
        cells = [f"{statistics.median(r[c] for r in runs):7.3f} ({min(r[c] for r in runs):5.3f})" for c in columns]
        print(f"| {label:<12} | {state:<5} | {order_name:<13} | " + " | ".join(f"{c:>15}" for c in cells) + " |")

    print(f"\ncompiler process, seconds: median (min) of {args.repeat} runs")
    print("| phase | " + " | ".join(label_of(p) for p in pythons) + " |")
    print("|---|" + "---|" * len(pythons))
    keys = list(dict.fromkeys(k for p in pythons for r in results[(p, "phases", "")] for k in r))
    for key in keys:
        cells = []
        for python in pythons:
            values = [r[key] for r in results[(python, "phases", "")] if key in r]
            cells.append(f"{statistics.median(values):.3f} ({min(values):.3f})" if values else "-")
        print(f"| {key} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
