"""Job 6: a machine without a registry, uv or git: what --pack-offline writes and --offline runs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.utils import canonicalize_name

from .cells import Cell, run_matrix
from .common import NAMES, ROOT
from .expect import expect
from .replay import replayed_runtime
from .wheels import Source, Wheel, _git, fetch_third_party, read_wheel


def pip_conflicts(pip_check: str) -> list[str]:
    """The lines of `pip check` in which one of our wheels' pins refuses another of our wheels."""
    ours = {canonicalize_name(n) for n in NAMES.values()}
    found = []
    for line in pip_check.splitlines():
        m = re.match(r"(\S+) \S+ (?:has requirement|requires) ([A-Za-z0-9._-]+)", line.strip())
        if m and canonicalize_name(m[1]) in ours and canonicalize_name(m[2]) in ours:
            found.append(line.strip())
    return found


class OfflineInstaller:
    """Installs a cell with no registry: each wheel is unpacked once (all pip does for these wheels: they
    carry no scripts the cells use) and a cell's three are linked into one folder, as into one
    site-packages (the EP finds the runtime beside itself); the cell's Python is the machine's own (its
    onnxruntime, onnx and numpy) with that folder first on PYTHONPATH. pip's verdict on the set is `pip
    check`: our pins against one another (the compiler's torch-mlir is absent by design: the compiling
    was done where it is installed)."""

    def __init__(self, root: Path, wheels: list[Wheel]):
        self.root = root
        self.sites: dict[Path, Path] = {}
        for w in wheels:
            digest = hashlib.sha256(str(w.path.resolve()).encode()).hexdigest()[:8]
            dest = root / "site" / f"{w.path.stem}-{digest}"
            if not dest.exists():
                with zipfile.ZipFile(w.path) as z:
                    z.extractall(dest.with_suffix(".tmp"))
                dest.with_suffix(".tmp").rename(dest)
            self.sites[w.path] = dest

    def __call__(self, cell: Cell, work: Path) -> Path | None:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        # PYTHONPATH splits at ':', which a cell's name may hold ("[replay: removed]")
        site = self.root / "cell-site" / hashlib.sha256(cell.name.encode()).hexdigest()[:16]
        shutil.rmtree(site, ignore_errors=True)
        for w in (cell.ep, cell.compiler, cell.runtime):
            shutil.copytree(self.sites[w.path], site, dirs_exist_ok=True, copy_function=_link)
        python = work / "python"
        python.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
        proc = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True)
        conflicts = pip_conflicts(proc.stdout)
        if conflicts:
            cell.install = "pip check: " + "; ".join(conflicts)
            return None
        cell.install = "ok"
        return python


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_runtime_offline(source: Path, cache: Path, backends: str, json_include: Path) -> Path:
    """A runtime wheel built from carried sources by this machine's Python, with no registry (pip wheel
    --no-build-isolation: scikit-build-core, nanobind, cmake and ninja must be installed), cached per
    source content and backends. `json_include`: the carried nlohmann/json headers (runtimes released
    before they were needed ignore them)."""
    dest = cache / f"runtime-{_tree_digest(source)}-{backends.replace(';', '+')}"
    found = sorted(dest.glob("*.whl"))
    if found:
        return found[0]
    tmp = dest.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "--wheel-dir",
           str(tmp), f"-Cbuild-dir={dest.with_suffix('.build')}",
           f"-Ccmake.define.HIPDNN_EP_JSON_INCLUDE_DIR={json_include}", str(source)]
    if "cuda" in backends.split(";"):
        arch = os.environ.get("HIPDNN_EP_CUDA_ARCHITECTURES", "90")
        cmd.append(f"-Ccmake.define.HIPDNN_EP_CUDA_ARCHITECTURES={arch}")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HIPDNN_EP_BACKENDS": backends})
    if proc.returncode != 0:
        raise SystemExit(f"matrix: building the runtime from {source} failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    tmp.rename(dest)
    print(f"matrix: built the runtime from {source} ({backends}) in {time.monotonic() - t0:.0f} s", flush=True)
    return sorted(dest.glob("*.whl"))[0]


def pack_offline(out: Path, found: dict[str, list[Source]], wheels: dict[str, list[Wheel]], cells: list[Cell],
                 work: Path) -> None:
    """Writes what the offline leg needs into `out`, to be carried to a machine with no registry or git:

    runtime/<label>/packages/runtime  the runtime's sources at each release and HEAD (built there, for its
                                      Python and its GPU)
    third_party/nlohmann-json         the JSON headers those sources build with (no registry there)
    wheels/                           the compiler (pure Python) and EP (py3, no extension) wheels built here
    ctx/<cell>/                       the models and EPContext models each cell of this leg wrote: the
                                      compiled side, done here, since compiling needs torch-mlir
    plan.json                         labels and paths"""
    shutil.rmtree(out, ignore_errors=True)
    (out / "wheels").mkdir(parents=True)
    plan: dict[str, list] = {"runtime": [], "compiler": [], "ep": []}
    fetch_third_party()
    shutil.copytree(ROOT / "third_party/nlohmann-json", out / "third_party/nlohmann-json")
    for s in found["runtime"]:
        dest = out / "runtime" / s.label
        dest.mkdir(parents=True)
        if s.commit is None:
            files = _git("ls-files", "-co", "--exclude-standard", "--", "packages/runtime").split("\n")
            for name in filter(None, files):
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
        else:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", s.commit, "packages/runtime"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        plan["runtime"].append({"label": s.label, "source": f"runtime/{s.label}/packages/runtime"})
    for package in ("compiler", "ep"):
        for w in wheels[package]:
            shutil.copy2(w.path, out / "wheels" / w.path.name)
            plan[package].append({"label": w.label, "wheel": f"wheels/{w.path.name}"})
    for c in cells:
        ctx = work / "ctx" / c.name
        if c.replay or not ctx.is_dir():
            continue
        (out / "ctx" / c.name).mkdir(parents=True)
        for model in ctx.glob("*.onnx"):
            shutil.copy2(model, out / "ctx" / c.name / model.name)
    (out / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"matrix: offline bundle written to {out} ({size / 2**20:.1f} MiB)", flush=True)


def offline_leg(bundle: Path, cache: Path, backend: str, backends: str, replay: bool, jobs: int) -> tuple:
    """The matrix on a machine with no registry (a GPU machine, say), from a bundle `--pack-offline` wrote
    where there is one: the runtime built here from each carried source (for this machine's Python and
    GPU), the carried compiler and EP wheels, and each cell running the EPContext models the same
    combination compiled on the other machine (its own models against ORT's CPU EP, and the refused feed),
    then the representative cross-loads. Returns (cells, runtime wheels, pythons, what did not build)."""
    plan = json.loads((bundle / "plan.json").read_text())
    work = cache / "offline"

    def build(entry: dict) -> Path | str:
        try:
            return build_runtime_offline(bundle / entry["source"], work / "wheels", backends,
                                         bundle / "third_party/nlohmann-json")
        except SystemExit as exc:  # one runtime that does not build must not hide the others' cells
            print(exc, flush=True)
            return f"runtime {entry['label']} did not build ({backends}): {str(exc)[-1500:]}"

    with ThreadPoolExecutor(max_workers=max(1, len(plan["runtime"]))) as pool:
        built = list(pool.map(build, plan["runtime"]))
    unbuilt = [b for b in built if isinstance(b, str)]
    runtimes = [read_wheel("runtime", e["label"], b) for e, b in zip(plan["runtime"], built, strict=True)
                if not isinstance(b, str)]
    compilers = [read_wheel("compiler", e["label"], bundle / e["wheel"]) for e in plan["compiler"]]
    eps = [read_wheel("ep", e["label"], bundle / e["wheel"]) for e in plan["ep"]]
    cells = [Cell(c, r, e, backend, expect(c, r, e)) for e in eps for c in compilers for r in runtimes]
    contexts = {c.name: bundle / "ctx" / Cell(c.compiler, c.runtime, c.ep, "cpu", c.expected).name for c in cells}
    if replay:
        head = Cell(compilers[-1], runtimes[-1], eps[-1], "cpu", expect(compilers[-1], runtimes[-1], eps[-1]))
        for case in ("removed", "narrowed"):
            r = replayed_runtime(runtimes[-1], case, work / "replay" / f"{backend}-{case}")
            cells.append(Cell(compilers[-1], r, eps[-1], backend, expect(compilers[-1], r, eps[-1]), replay=True))
            contexts[cells[-1].name] = bundle / "ctx" / head.name
    installer = OfflineInstaller(work, [*runtimes, *compilers, *eps, *(c.runtime for c in cells if c.replay)])
    pythons = run_matrix(cells, work / "cells" / backend, installer, contexts, jobs)
    return cells, runtimes, pythons, unbuilt
