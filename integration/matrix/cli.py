"""The command line: runs the jobs for each leg (cpu, and cuda with a GPU) and writes the table."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path

from . import __doc__ as DOC
from .cells import Cell, cell_verdict, details, run_matrix, table
from .common import NAMES, ROOT
from .example import example_needs, example_ok, example_table, run_example
from .expect import expect
from .offline import offline_leg, pack_offline
from .replay import replayed_runtime
from .wheels import Builder, Wheel, read_wheel, sources


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=ROOT / "build/matrix", help="wheel cache and cell folders")
    ap.add_argument("--gpu", choices=("auto", "cuda", "none"), default="auto",
                    help="the GPU leg: auto runs it when nvidia-smi answers, cuda requires it, none skips it")
    ap.add_argument("--no-replay", action="store_true", help="leave out the replayed regression runtimes")
    ap.add_argument("--no-example", action="store_true",
                    help="leave out the downstream example (examples/custom_kernels)")
    ap.add_argument("--jobs", type=int, default=1, help="cells run at once (default 1)")
    ap.add_argument("--pack-offline", type=Path, metavar="DIR",
                    help="after the CPU leg, write what --offline needs on a machine with no registry into DIR")
    ap.add_argument("--offline", type=Path, metavar="DIR",
                    help="run one leg (cuda with a GPU, else cpu) from a bundle --pack-offline wrote: no registry, "
                         "uv or git needed")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    args.cache.mkdir(parents=True, exist_ok=True)
    gpu = args.gpu == "cuda" or (args.gpu == "auto" and _nvidia_gpu())
    report = []
    failed = False

    def add(title: str, cells: list[Cell], runtimes: list[Wheel], pythons: dict[str, Path], backend: str) -> None:
        nonlocal failed
        report.extend([title, table(cells), details(cells)])
        failed |= not all(cell_verdict(c)[0] for c in cells)
        if not args.no_example:
            builds = run_example(runtimes, cells, pythons, args.cache, backend)
            report.extend([f"### examples/custom_kernels (a downstream library) on the {backend} backend\n",
                           example_table(builds, example_needs())])
            failed |= not all(example_ok(b) for b in builds)

    if args.offline:
        backend, backends = ("cuda", "cpu;cuda") if gpu else ("cpu", "cpu")
        cells, runtimes, pythons, unbuilt = offline_leg(args.offline, args.cache, backend, backends,
                                                        not args.no_replay, args.jobs)
        add(f"## {backend} backend, offline (each cell runs the EPContext models its combination compiled on the "
            "CPU leg's machine)\n", cells, runtimes, pythons, backend)
        report.extend(f"- **UNEXPECTED**: {u}" for u in unbuilt)
        failed |= bool(unbuilt)
    else:
        found = sources()
        for package, items in found.items():
            print(f"matrix: {NAMES[package]}: " + ", ".join(f"{s.label}" + (f" ({s.commit[:10]})" if s.commit else "")
                                                              for s in items), flush=True)
        legs = [("cpu", "cpu")]
        if gpu:
            legs.append(("cuda", "cpu;cuda"))
        else:
            print("matrix: GPU leg skipped: " + ("--gpu none" if args.gpu == "none" else "no NVIDIA GPU answers "
                                                  "(nvidia-smi)"), flush=True)
        for backend, backends in legs:
            builder = Builder(args.cache, backends)
            wheels = {p: [read_wheel(p, s.label, builder.wheel(s)) for s in items] for p, items in found.items()}
            cells = [Cell(c, r, e, backend, expect(c, r, e))
                     for e in wheels["ep"] for c in wheels["compiler"] for r in wheels["runtime"]]
            if not args.no_replay:
                head_r, head_c, head_e = wheels["runtime"][-1], wheels["compiler"][-1], wheels["ep"][-1]
                for case in ("removed", "narrowed"):
                    r = replayed_runtime(head_r, case, args.cache / "replay" / f"{backend}-{case}")
                    cells.append(Cell(head_c, r, head_e, backend, expect(head_c, r, head_e), replay=True))
            pythons = run_matrix(cells, args.cache / "cells" / backend, jobs=args.jobs)
            add(f"## {backend} backend\n", cells, wheels["runtime"], pythons, backend)
            if backend == "cpu" and args.pack_offline:
                pack_offline(args.pack_offline, found, wheels, cells, args.cache / "cells" / backend)
    elapsed = time.monotonic() - t_start
    report.append(f"\n{'FAILED' if failed else 'OK'}: matrix in {elapsed:.0f} s\n")
    text = "# Compatibility matrix\n\n" + "\n".join(report)
    (args.cache / "matrix.md").write_text(text)
    print(text, flush=True)
    print(f"matrix: table written to {args.cache / 'matrix.md'}")
    return 1 if failed else 0


def _nvidia_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def _nvidia_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0
