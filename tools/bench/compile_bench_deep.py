"""Compile time and memory of deep generated graphs, one table: the compiler's shape reasoning must
cost what the graph's size does, not what its depth's power does.

    python tools/bench/compile_bench_deep.py                  every pattern at depths 8, 10, 11, 100
    python tools/bench/compile_bench_deep.py --depths 8 100 --patterns add_transpose --timeout 60

Patterns (packages/compiler/tests/support/deep_graphs.py, shared with the compiler's regression
test): `add_transpose` y = Add(y, Transpose(y)) on y[a, b]; `slice` y = y[1:-1] on y[a, 4];
`reshape` exporter-style Shape/Gather/Concat/Reshape/Slice/Concat blocks on y[a, b].  Each compile
runs in its own process (a full compile_model: passes, lowering, object, link), so "peak MB" is that
process's peak resident memory, the compiler's imports included (about 200 MB on their own), and
"cpu s" its CPU time, the linker's included (wall time on a busy machine overstates the compile);
a compile past --timeout is stopped and shown as such.  "max expr" is the largest dim expression
the artifact's metadata spells, in nodes; "symbols" the named symbols it defines.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packages" / "compiler" / "tests"))

DEPTHS = (8, 10, 11, 100)


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (the linker)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_one(pattern: str, depth: int) -> dict:
    """Compile one generated graph in this process; what the table shows of it."""
    from hipdnn_ep_compiler import compile_model
    from hipdnn_ep_compiler.errors import CompileError
    from support.deep_graphs import PATTERNS, expression_size, expressions

    model = PATTERNS[pattern](depth)
    row = {"nodes": len(model.graph.node)}
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.perf_counter(), _cpu_seconds()
        try:
            meta = compile_model(model, Path(tmp) / "a").metadata
            row["verdict"] = "compiled"
            exprs = expressions(meta)
            row["max_expr"] = max((expression_size(e) for e in exprs), default=1)
            row["symbols"] = len(meta.get("symbols", []))
        except CompileError as exc:
            row["verdict"] = f"refused: {exc}"
        row["seconds"] = time.perf_counter() - start
        row["cpu_seconds"] = _cpu_seconds() - cpu
    row["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def measure(pattern: str, depth: int, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--one", pattern, str(depth)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"verdict": f"stopped after {timeout:.0f} s", "seconds": time.perf_counter() - start}
    if done.returncode != 0:
        return {"verdict": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
    ap.add_argument("--patterns", nargs="+", default=None)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one compile may take")
    ap.add_argument("--one", nargs=2, metavar=("PATTERN", "DEPTH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one[0], int(args.one[1]))))
        return 0
    from support.deep_graphs import PATTERNS

    patterns = args.patterns or sorted(PATTERNS)
    rows = [(p, d, measure(p, d, args.timeout)) for p in patterns for d in args.depths]
    header = ["pattern", "depth", "nodes", "compile s", "cpu s", "peak MB", "max expr", "symbols", "verdict"]
    cells = [[p, str(d), str(r.get("nodes", "")), f"{r['seconds']:.2f}" if "seconds" in r else "",
              f"{r['cpu_seconds']:.2f}" if "cpu_seconds" in r else "",
              f"{r['peak_mb']:.0f}" if "peak_mb" in r else "", str(r.get("max_expr", "")),
              str(r.get("symbols", "")), r["verdict"]] for p, d, r in rows]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print("\t".join(header))
        for c in cells:
            print("\t".join(c))
        return 0
    table = Table(title="compile time of deep graphs (one process per compile)")
    for h in header:
        table.add_column(h, justify="left" if h in ("pattern", "verdict") else "right")
    for c in cells:
        table.add_row(*c)
    Console(width=max(120, Console().width)).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
