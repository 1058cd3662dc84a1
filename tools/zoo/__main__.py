"""python tools/zoo --help"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

if __package__ in (None, ""):  # run as `python tools/zoo`: import the package from its parent folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "zoo"

from .builders import ZOO  # noqa: E402
from .cache import built  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="zoo", description=__doc__)
    p.add_argument("--models", nargs="+", choices=list(ZOO), default=list(ZOO), metavar="NAME",
                   help=f"models to run (default: all): {', '.join(ZOO)}")
    p.add_argument("--backend", choices=["cpu", "cuda"], default="cpu",
                   help="EP backend; the reference is ORT's CPU EP or its CUDA EP")
    p.add_argument("--cache", type=Path, default=ROOT / "build/zoo", help="where exported models are kept")
    p.add_argument("--runs", type=int, default=5, help="timed runs per session (median reported)")
    p.add_argument("--json", type=Path, help="also write the results to this file")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument("--show", type=Path, metavar="JSON", help="print the tables of an earlier --json file and exit")
    args = p.parse_args(argv)
    if args.list:
        for e in ZOO.values():
            print(f"{e.name:22} tolerance {e.tolerance:.0e}  {e.note}")
        return 0

    from rich.console import Console

    from .measure import REFERENCE, Result, run_model
    from .report import read_json, write_json

    console = Console()
    if not console.is_terminal:
        console.width = 200  # a log or a CI page: keep the table's rows whole
    if args.show:
        results, backend = read_json(args.show)
        _print_tables(console, results, backend)
        return _verdict(console, results)

    import onnxruntime as ort

    reference = REFERENCE[args.backend]
    if reference not in ort.get_available_providers():  # ORT would quietly run the reference on its CPU EP
        raise SystemExit(f"zoo: --backend {args.backend} compares against ORT's {reference}, which this onnxruntime "
                         f"lacks (it has {', '.join(ort.get_available_providers())}); install onnxruntime-gpu")
    results = []
    for name in args.models:
        with console.status(f"{name}: export and run"):
            try:
                path, inputs = built(name, args.cache)
                # the tolerances are the CPU backend's; the cuda backend's error is shown, not checked
                tolerance = ZOO[name].tolerance if args.backend == "cpu" else None
                results.append(run_model(name, path, inputs, args.backend, args.runs, ZOO[name].note, tolerance))
            except Exception as exc:  # noqa: BLE001 - one model's failure is a row of the table, not the end
                first = (str(exc).splitlines() or [""])[0]
                results.append(Result(name, ZOO[name].note, error=f"{type(exc).__name__}: {first}"[:300]))
                traceback.print_exc(file=sys.stderr)
        console.print(f"{name}: done" if not results[-1].error else f"{name}: [red]{results[-1].error}[/red]")
    _print_tables(console, results, args.backend)
    if args.json:
        write_json(results, args.backend, args.json)
    return _verdict(console, results)


def _print_tables(console, results, backend: str) -> None:
    """The zoo table, then the ops left to other EPs summed over the models where any was left."""
    from .report import missing_table, table

    console.print(table(results, backend))
    if any(r.unsupported for r in results):
        console.print(missing_table(results))
    else:
        console.print("no node left to other EPs", highlight=False)


def _verdict(console, results) -> int:
    """1 when a model failed to run, was not claimed whole or is further from ORT than its tolerance."""
    from .report import failures

    failed = failures(results)
    for line in failed:
        console.print(f"[red]FAILED[/red] {line}", highlight=False)
    console.print(f"zoo: {len(results) - len(failed)} of {len(results)} models whole and within tolerance",
                  highlight=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
