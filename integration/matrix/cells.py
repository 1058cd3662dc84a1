"""Job 3: each combination installed into its own environment and run (matrix_cell.py), the EPContext
cross-loads, the verdicts and the table."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from base64 import urlsafe_b64encode
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .common import CELL, NAMES, TEST_DEPS
from .expect import Expected
from .wheels import Wheel


@dataclass
class Cell:
    compiler: Wheel
    runtime: Wheel
    ep: Wheel
    backend: str
    expected: Expected
    replay: bool = False  # a replayed regression: must not pass
    install: str = ""  # "" until tried, "ok", or pip's refusal
    results: dict[str, dict] = field(default_factory=dict)  # test -> {"outcome", "message", ...}
    loads: dict[str, dict] = field(default_factory=dict)
    load_expected: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    loads_in: Cell | None = None  # the cell whose EPContext loads stand for this one's (same reader())

    @property
    def name(self) -> str:
        return f"c{self.compiler.title}-r{self.runtime.title}-e{self.ep.title}-{self.backend}".replace(" ", "_")


def _uv(*args: str, python: Path | None = None) -> subprocess.CompletedProcess:
    cmd = ["uv", "pip", *args] + (["--python", str(python)] if python else [])
    return subprocess.run(cmd, capture_output=True, text=True)


def install(cell: Cell, work: Path) -> Path | None:
    """A fresh virtual environment with the cell's three wheels; None (and cell.install says why) when
    pip refuses them."""
    venv = work / "venv"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    subprocess.run(["uv", "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin/python"
    # third-party dependencies from the registry (uv's cache makes this a link, not a download)
    ours = {canonicalize_name(n) for n in NAMES.values()}
    third = [r for w in (cell.compiler, cell.ep, cell.runtime) for r in w.requires
             if canonicalize_name(Requirement(r).name) not in ours]
    third = [r for r in third if Requirement(r).marker is None or Requirement(r).marker.evaluate({"extra": "runtime"})]
    proc = _uv("install", "--quiet", *TEST_DEPS, *third, python=python)
    if proc.returncode != 0:
        raise SystemExit(f"matrix: installing the test dependencies failed: {proc.stderr[-3000:]}")
    links = work / "wheels"
    links.mkdir()
    for w in (cell.compiler, cell.runtime, cell.ep):
        (links / w.path.name).symlink_to(w.path)
    # --no-cache: uv keys a local wheel by its path and version, so a rebuilt HEAD wheel of the same name at
    # the same cell path was installed from its first build (seen: cells ran a runtime an hour old)
    proc = _uv("install", "--quiet", "--no-cache", "--no-index", "--find-links", str(links),
               f"{cell.ep.name}=={cell.ep.version}", f"{cell.compiler.name}[runtime]=={cell.compiler.version}",
               f"{cell.runtime.name}=={cell.runtime.version}", python=python)
    if proc.returncode != 0:
        cell.install = " ".join(proc.stderr.split())[-600:]
        return None
    site = next(venv.glob("lib/python*/site-packages"))
    for w in (cell.compiler, cell.runtime, cell.ep):
        stale = installed_differs(site, w.path)
        if stale:
            raise SystemExit(f"matrix: {cell.name}: the installed {w.name} is not {w.path}: {stale}")
    cell.install = "ok"
    return python


def installed_differs(site: Path, wheel: Path) -> str:
    """'' when every file the wheel's RECORD lists was installed into `site` with the wheel's hash, else the
    first file that was not."""
    with zipfile.ZipFile(wheel) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        wanted = [line.split(",") for line in z.read(record).decode().splitlines() if line.count(",") == 2]
    for name, digest, _ in wanted:
        if not digest or name.endswith(".dist-info/RECORD"):
            continue
        path = site / name
        if not path.is_file():
            return f"{name} is missing"
        got = "sha256=" + urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
        if got != digest:
            return f"{name} differs from the wheel's"
    return ""


def run_cell_script(python: Path, *args: str, timeout: float = 900, script: Path = CELL) -> dict[str, dict]:
    try:
        proc = subprocess.run([str(python), str(script), *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"process": {"outcome": "fail", "message": f"hung: no answer in {timeout:.0f} s"}}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
        return {"process": {"outcome": "fail", "message": f"crashed ({how}): {proc.stderr[-1500:]}"}}
    return json.loads(lines[-1])


def cell_verdict(cell: Cell) -> tuple[bool, str]:
    """Whether the cell behaved as expected, and the cell's outcome in words."""
    outcomes = [r["outcome"] for r in cell.results.values()]
    if cell.install and cell.install != "ok":
        actual = "refused by pip"
    elif outcomes and all(o == "pass" for o in outcomes):
        actual = "passed"
    elif outcomes and all(o in ("pass", "refused") for o in outcomes):
        actual = "refused" if all(o == "refused" for o in outcomes) else "partly refused"
    else:
        actual = "FAILED"
    if cell.replay:
        return actual != "passed", actual
    loads_ok = all(cell.loads.get(k, {}).get("outcome") == v for k, v in cell.load_expected.items())
    want = {"pass": "passed", "pip": "refused by pip", "abi": "refused"}[cell.expected.outcome]
    return actual == want and loads_ok, actual


def _dynamic_fixed(cell: Cell, kind: str) -> str:
    rs = [r["outcome"] for k, r in cell.results.items() if k.startswith(kind + ":")]
    if not rs:
        return "-"
    text = f"{rs.count('pass')}/{len(rs)} pass"
    others = sorted(set(rs) - {"pass"})
    return text + (f", {len(rs) - rs.count('pass')} {'/'.join(others)}" if others else "")


def table(cells: list[Cell]) -> str:
    head = ["compiler", "runtime", "ep", "backend", "expected (from metadata)", "install", "dynamic", "fixed",
            "EPContext of each writer loaded (as expected)", "verdict"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        ok, actual = cell_verdict(c)
        if c.replay:
            expected = "caught (refused or failed)"
        elif c.expected.outcome == "pass":
            expected = "pass" + (f", code for ABI {c.expected.target[0]}.{c.expected.target[1]}"
                                 if c.expected.target else "")
        else:
            expected = f"refused: {c.expected.why}"
        install_text = "ok" if c.install == "ok" else ("pip refused" if c.install else "-")
        n_as_expected = sum(c.loads.get(k, {}).get("outcome") == v for k, v in c.load_expected.items())
        n_refused = sum(v == "refused" for v in c.load_expected.values())
        loads = (f"{n_as_expected}/{len(c.load_expected)}" + (f" ({n_refused} refused: newer ABI)" if n_refused else "")
                 if c.load_expected else f"as compiler {c.loads_in.compiler.title}'s row" if c.loads_in else "-")
        verdict = ("as expected" if ok else "**UNEXPECTED**") + f": {actual}"
        rows.append("| " + " | ".join([c.compiler.title, c.runtime.title, c.ep.title, c.backend, expected, install_text,
                                       _dynamic_fixed(c, "dynamic"), _dynamic_fixed(c, "fixed"), loads,
                                       verdict]) + " |")
    return "\n".join(rows) + "\n"


def details(cells: list[Cell]) -> str:
    """What each unexpected cell said."""
    out = []
    for c in cells:
        ok, actual = cell_verdict(c)
        if ok and not c.replay:
            continue
        out.append(f"### {c.name}: {actual}")
        if c.install and c.install != "ok":
            out.append(f"- pip: {c.install}")
        for k, r in {**c.results, **c.loads}.items():
            if r["outcome"] != "pass":
                out.append(f"- {k}: {r['outcome']}: {r['message'][:400]}")
        for k, v in c.load_expected.items():
            got = c.loads.get(k, {}).get("outcome")
            if got != v:
                out.append(f"- {k}: expected {v}, got {got}")
    return "\n".join(out) + ("\n" if out else "")


def _context_abi(producer: Path, model: str) -> tuple[int, int] | None:
    """The ABI an EPContext model's embedded code needs (its metadata's abi.min_minor)."""
    ctx = producer / f"{model}_ctx.onnx"
    if not ctx.exists():
        return None
    found = re.findall(rb'"abi":\{"major":(\d+),"min_minor":(\d+)\}', ctx.read_bytes())
    return max((int(a), int(b)) for a, b in found) if found else None


CONTEXT_MODELS_SKIPPED = ("refusal",)  # written for the offline leg's own runs, not cross-loaded


def context_models(producer: Path) -> list[str]:
    """The models a cell wrote EPContext models of (`<model>_ctx.onnx` in its folder)."""
    return sorted(m for p in producer.glob("*_ctx.onnx")
                  for m in [p.name[:-len("_ctx.onnx")]] if m not in CONTEXT_MODELS_SKIPPED)


def writer(cell: Cell) -> tuple:
    """What decides an EPContext model's bytes: the EP that wrote it, the compiler, the ABI the code targets
    (the runtime it was written beside counts only through that target)."""
    return cell.ep.title, cell.compiler.title, cell.expected.target


def reader(cell: Cell) -> tuple:
    """What decides how an EPContext model loads: the EP that reads it and the runtime it runs on (loading
    compiles nothing, so the reading cell's compiler plays no part)."""
    return cell.ep.title, cell.runtime.title, cell.backend


def cross_loads(cells: list[Cell], written: dict[str, Path], installed: set[str]) -> list[tuple[Cell, list[Path]]]:
    """The representative EPContext cross-loads: each distinct writer (the first cell of each `writer()`
    identity that wrote models) loaded by each distinct reader (the first installed cell of each
    `reader()` identity). Every other cell's loads would repeat one of these exactly; its row names the
    cell whose loads stand for it. This grows with writers x readers, not with the square of the cells."""
    writers: dict[tuple, Path] = {}
    for c in cells:
        if not c.replay and c.name in written and context_models(written[c.name]):
            writers.setdefault(writer(c), written[c.name])
    readers: dict[tuple, Cell] = {}
    for c in cells:
        if c.name in installed and not c.replay:
            first = readers.setdefault(reader(c), c)
            if first is not c:
                c.loads_in = first
    return [(consumer, list(writers.values())) for consumer in readers.values()]


def _parallel(fn, items: list, jobs: int) -> None:
    if jobs <= 1:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(fn, item) for item in items]:
            future.result()


def run_matrix(cells: list[Cell], work: Path, installer=None, contexts: dict[str, Path] | None = None,
               jobs: int = 1) -> dict[str, Path]:
    """Runs every cell, then the representative EPContext cross-loads; returns each installed cell's Python.

    Online (the default) each cell compiles and writes its EPContext models into work/ctx; offline
    (`contexts`: cell name -> the folder of EPContext models the same combination wrote on another
    machine) each cell runs those instead, since compiling needs what the offline machine lacks."""
    # what an earlier run left (EPContext models, which ORT refuses to overwrite) must not be loaded
    shutil.rmtree(work / "ctx", ignore_errors=True)
    installer = installer or install
    pythons: dict[str, Path] = {}
    written: dict[str, Path] = dict(contexts or {})

    def run_one(cell: Cell) -> None:
        t0 = time.monotonic()
        python = installer(cell, work / cell.name)
        if python is not None:
            pythons[cell.name] = python
            if contexts is None:
                written[cell.name] = work / "ctx" / cell.name
                cell.results = run_cell_script(python, "run", "--out", str(written[cell.name]),
                                               "--backend", cell.backend)
            else:
                cell.results = run_cell_script(python, "run", "--out", str(work / "out" / cell.name),
                                               "--backend", cell.backend, "--from-context", str(contexts[cell.name]))
        cell.seconds = time.monotonic() - t0
        _, actual = cell_verdict(cell)
        print(f"matrix: {cell.name}: {actual} ({cell.seconds:.0f} s)", flush=True)

    _parallel(run_one, cells, jobs)
    plan = cross_loads(cells, written, set(pythons))

    def load(item: tuple[Cell, list[Path]]) -> None:
        consumer, producers = item
        for out in producers:
            for model in context_models(out):
                abi = _context_abi(out, model)
                ok = abi is not None and abi[0] == consumer.runtime.abi[0] and abi[1] <= consumer.runtime.abi[1]
                consumer.load_expected[f"epcontext-load:{out.name}:{model}"] = "pass" if ok else "refused"
        t0 = time.monotonic()
        consumer.loads = run_cell_script(pythons[consumer.name], "load", "--out", str(work / consumer.name / "loads"),
                                         "--backend", consumer.backend, *map(str, producers))
        consumer.seconds += time.monotonic() - t0

    _parallel(load, plan, jobs)
    return pythons
