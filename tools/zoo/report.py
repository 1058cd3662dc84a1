"""The zoo table (rich), the unsupported ops summed over the models, and the JSON form of both."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

from .measure import Result

REFERENCE_NAME = {"cpu": "ORT CPU", "cuda": "ORT CUDA"}


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _ratio(ep: float | None, ref: float | None) -> str:
    return "-" if ep is None or not ref else f"{ep / ref:.2f}x"


def _top(result: Result, n: int = 4) -> str:
    items = list(result.unsupported.items())
    text = ", ".join(f"{op} {count}" for op, count in items[:n])
    return text + (f", +{len(items) - n} more" if len(items) > n else "")


def table(results: list[Result], backend: str):
    from rich.table import Table

    ref = REFERENCE_NAME[backend]
    t = Table(title=f"hipdnn-ep zoo: {backend} backend against {ref} (EP with CPU fallback, compile cache off)")
    for col in ("model", "claimed", "max abs", "max rel", "tol", f"create s: EP ({ref})", "x", f"run ms: EP ({ref})",
                "x", "left to other EPs: op nodes"):
        t.add_column(col, justify="left" if col in ("model", "left to other EPs: op nodes") else "right")
    for r in results:
        if r.error:
            t.add_row(f"[red]{r.name}[/red]", "-", "-", "-", "-", "-", "-", "-", "-", f"[red]{r.error}[/red]")
            continue
        whole = r.total and r.claimed == r.total
        claimed = f"[green]{r.claimed}/{r.total}[/green]" if whole else f"[red]{r.claimed}/{r.total}[/red]"
        rel = _num(r.max_rel, ".2g")
        if r.tolerance is not None:
            rel = f"[red]{rel}[/red]" if any(p.startswith("max rel") for p in r.problems()) else f"[green]{rel}[/green]"
        create = f"{_num(r.ep_create_s, '.2f')} ({_num(r.ref_create_s, '.2f')})"
        run = f"{_num(r.ep_run_ms, '.1f')} ({_num(r.ref_run_ms, '.1f')})"
        name = r.name if not r.problems() else f"[red]{r.name}[/red]"
        t.add_row(name, claimed, _num(r.max_abs, ".2g"), rel, _num(r.tolerance, ".0e"), create,
                  _ratio(r.ep_create_s, r.ref_create_s), run, _ratio(r.ep_run_ms, r.ref_run_ms), _top(r))
    return t


def failures(results: list[Result]) -> list[str]:
    """One line per model that fails the zoo's check (Result.problems), naming why."""
    return [f"{r.name}: {'; '.join(r.problems())}" for r in results if r.problems()]


def missing_ops(results: list[Result]) -> list[dict]:
    """Op types left to other EPs, most models first: how many nodes, in which models, and why."""
    nodes: Counter[str] = Counter()
    models: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for r in results:
        for op, count in r.unsupported.items():
            nodes[op] += count
            models.setdefault(op, []).append(r.name)
            reasons.setdefault(op, r.reasons.get(op, ""))
    order = sorted(nodes, key=lambda op: (-len(models[op]), -nodes[op], op))
    return [{"op": op, "nodes": nodes[op], "models": models[op], "reason": reasons[op]} for op in order]


def missing_table(results: list[Result]):
    from rich.table import Table

    t = Table(title="ops left to other EPs, over all models (the first refusal's reason)")
    for col in ("op", "models", "nodes", "reason"):
        t.add_column(col, justify="right" if col in ("models", "nodes") else "left")
    for row in missing_ops(results):
        t.add_row(row["op"], str(len(row["models"])), str(row["nodes"]), row["reason"])
    return t


def write_json(results: list[Result], backend: str, path: Path) -> None:
    data = {"backend": backend, "models": [dataclasses.asdict(r) for r in results], "missing_ops": missing_ops(results)}
    path.write_text(json.dumps(data, indent=1) + "\n")


def read_json(path: Path) -> tuple[list[Result], str]:
    data = json.loads(path.read_text())
    return [Result(**m) for m in data["models"]], data["backend"]
