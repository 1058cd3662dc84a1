"""The compatibility matrix: every (compiler, runtime, ep) combination of released wheels and HEAD.

    python integration/matrix.py [--cache build/matrix] [--gpu auto|cuda|none] [--no-replay] [--no-example]
                                 [--jobs N] [--pack-offline DIR]
    python integration/matrix.py --offline DIR [--gpu cuda] [--jobs N] [--cache DIR]   (no registry, uv or git)

1. Finds every release of each wheel in HEAD's history (``tools/release.py``: by tag, else by the
   ``Release <package> <version>`` commit) plus HEAD itself (the working tree), and builds each
   wheel once: from the working tree, or from a ``git archive`` of the release commit. Wheels are
   cached under ``<cache>/wheels`` by package and content (the git tree of what the wheel is built
   from), so a release is built once per cache and HEAD again only when its sources change.
2. Works out each combination's expected outcome from the wheels' own metadata: whether pip can
   install them together (the EP's and the compiler's ``Requires-Dist`` pins), whether the ABIs
   agree (the runtime's ABI from its manifest, the ABI the EP was built for, the ABI major and
   newest minor the compiler targets), and so which ABI minor the code will target.
3. Installs each combination into a fresh virtual environment (uv; our wheels with ``--no-index
   --find-links``, onnxruntime, onnx, numpy and the compiler's dependencies from the registry,
   cached by uv) and runs ``matrix_cell.py`` there: dynamic- and fixed-shape models through
   onnxruntime against its CPU EP, a refused feed, and EPContext models written by this cell; then
   every cell loads the EPContext models every other cell wrote.
4. Replays the original regression (unless ``--no-replay``): HEAD's runtime wheel with
   ``hipdnn_ep_get_host_scratch_base`` no longer exported, and with ``hipdnn_ep_get_pool_base``'s
   size parameter dropped from its manifest, each claiming to be an ordinary runtime; the matrix
   must report their cells as refused or failed, never as passed.

5. Builds the downstream example (examples/custom_kernels) against every runtime wheel (cached per
   wheel content and example source) and runs each build beside every runtime of the leg, in a
   cell's environment (``example_cell.py``); a run with a runtime older than the header it was built
   with must be refused by the example's own check, with its message.

Compatible cells must pass every test; incompatible ones must be refused by pip or by our own
check with its documented message (a clear error naming the fix). A link error, an undefined
symbol, a crash or a wrong result fails the matrix. The table (markdown) goes to stdout and to
``<cache>/matrix.md``; the exit status is 1 when any cell differs from its expectation. With a
GPU (``nvidia-smi`` answers, or ``--gpu cuda``) the same cells run again on the cuda backend,
with runtime wheels built with ``HIPDNN_EP_BACKENDS="cpu;cuda"``; without one that leg is skipped.

Offline (a GPU machine with no registry, uv or git, and maybe another Python): ``--pack-offline DIR``
writes, after the CPU leg, the runtime's sources at each release and HEAD, the compiler and EP
wheels and every CPU cell's EPContext models; ``--offline DIR`` there builds each runtime from its
sources with that machine's Python and runs each cell on the EPContext models its combination
compiled here (compiling needs torch-mlir), then the cross-loads and the example.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from base64 import urlsafe_b64encode
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
THIRD_PARTY = ROOT / "third_party"  # git-ignored; tools/fetch_third_party.sh fills it
sys.path.insert(0, str(ROOT / "tools"))
import release  # noqa: E402

NAMES = {"runtime": "hipdnn-ep-runtime", "compiler": "hipdnn-ep-compiler", "ep": "hipdnn-ep"}
# What each wheel is built from: its content key is the git tree of these paths.
BUILT_FROM = {"runtime": ["packages/runtime", "packages/abi", "tools/fetch_third_party.sh"],
              "compiler": ["packages/compiler"],
              "ep": ["packages/ep", "packages/abi", "tools/fetch_third_party.sh"]}
TEST_DEPS = ["onnxruntime>=1.23", "onnx>=1.16", "numpy>=1.26"]
CELL = Path(__file__).resolve().parent / "matrix_cell.py"
EXAMPLE = ROOT / "examples/custom_kernels"
EXAMPLE_CELL = Path(__file__).resolve().parent / "example_cell.py"


# ------------------------------------------------------------------ sources and wheels

@dataclass(frozen=True)
class Source:
    package: str
    label: str  # the release version, or "HEAD"
    commit: str | None  # None: the working tree
    key: str  # content key: git tree ids of BUILT_FROM
    in_worktree: bool = False  # the working tree holds the same content (built there: incremental)


def _git(*args: str, env: dict | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"matrix: git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _key(package: str, tree: str) -> str:
    # A path an older release does not have (a script renamed since) counts as absent.
    listed = {line.split("\t", 1)[1]: line.split()[2]
              for line in _git("ls-tree", tree, "--", *BUILT_FROM[package]).splitlines()}
    ids = [listed.get(path, "absent") for path in BUILT_FROM[package]]
    return hashlib.sha256(" ".join(ids).encode()).hexdigest()[:20]


def working_tree() -> str:
    """A git tree of the working tree as it is (tracked and untracked, ignored files left out)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git("read-tree", "HEAD", env=env)
        _git("add", "-A", "--", *sorted({p for paths in BUILT_FROM.values() for p in paths}), env=env)
        return _git("write-tree", env=env)


def sources() -> dict[str, list[Source]]:
    """Every release of each package reachable from HEAD, oldest first, then HEAD unless it is the
    newest release's content."""
    repo = release.Repo(ROOT)
    head_tree = working_tree()
    out: dict[str, list[Source]] = {}
    for package in NAMES:
        head = Source(package, "HEAD", None, _key(package, head_tree), in_worktree=True)
        found = [Source(package, r.version, r.commit, key, in_worktree=key == head.key)
                 for r in repo.releases(package) for key in [_key(package, r.commit)]]
        if not any(s.key == head.key for s in found):
            found.append(head)
        out[package] = found
    return out


@dataclass(frozen=True)
class Wheel:
    package: str
    label: str
    path: Path
    version: str
    requires: tuple[str, ...]  # Requires-Dist
    abi: tuple[int, int]  # runtime: its ABI; compiler: (major, newest minor); ep: the ABI it needs
    note: str = ""  # what was done to it (the regression replay)

    @property
    def name(self) -> str:
        return NAMES[self.package]

    @property
    def title(self) -> str:
        text = self.version if self.label == self.version else f"{self.version} ({self.label})"
        return f"{text} [{self.note}]" if self.note else text


def read_wheel(package: str, label: str, path: Path, note: str = "") -> Wheel:
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        if package == "runtime":
            abi = json.loads(z.read(next(n for n in names if n.endswith("hipdnn_ep_runtime/abi_manifest.json"))))
            pair = (abi["abi"]["major"], abi["abi"]["minor"])
        elif package == "compiler":
            abi = json.loads(z.read(next(n for n in names if n.endswith("hipdnn_ep_compiler/abi/runtime_abi_v1.json"))))
            pair = (abi["abi"]["major"], abi["abi"]["minor"])
        else:
            info = z.read(next(n for n in names if n.endswith("hipdnn_ep/_abi_info.py"))).decode()
            pair = tuple(int(v) for v in re.search(r"REQUIRED_RUNTIME_ABI = \((\d+), (\d+)\)", info).groups())
    version = re.search(r"(?m)^Version: (\S+)$", meta)[1]
    requires = tuple(re.findall(r"(?m)^Requires-Dist: (.+)$", meta))
    return Wheel(package, label, path, version, requires, pair, note)


def fetch_third_party() -> None:
    """The headers of THIRD_PARTY (ORT's, nlohmann/json), fetched once by tools/fetch_third_party.sh."""
    if not ((THIRD_PARTY / "ort-headers/onnxruntime_ep_c_api.h").exists()
            and (THIRD_PARTY / "nlohmann-json/nlohmann/json.hpp").exists()):
        subprocess.run(["bash", str(ROOT / "tools/fetch_third_party.sh"), str(THIRD_PARTY)], check=True)


class Builder:
    """Builds (once per content key) and caches the wheels."""

    def __init__(self, cache: Path, backends: str = "cpu"):
        self.cache = cache
        self.backends = backends

    def wheel(self, source: Source) -> Path:
        suffix = "" if source.package != "runtime" or self.backends == "cpu" else "-" + self.backends.replace(";", "+")
        dest = self.cache / "wheels" / f"{source.package}-{source.key}{suffix}"
        found = sorted(dest.glob("*.whl"))
        if found:
            return found[0]
        root = ROOT if source.in_worktree else self._export(source.commit)
        cmd = ["uv", "build", "--wheel", "--quiet", "--out-dir", str(dest.with_suffix(".tmp")),
               str(root / "packages" / source.package)]
        if source.package in ("ep", "runtime"):
            # The headers of third_party/ (an exported commit has none). Releases built before
            # tools/fetch_third_party.sh ignore the nlohmann/json define.
            fetch_third_party()
            cmd += ["-C", f"cmake.define.HIPDNN_EP_JSON_INCLUDE_DIR={THIRD_PARTY / 'nlohmann-json'}"]
        if source.package == "ep":
            cmd += ["-C", f"cmake.define.HIPDNN_EP_ORT_INCLUDE_DIR={THIRD_PARTY / 'ort-headers'}"]
        env = {**os.environ, "HIPDNN_EP_BACKENDS": self.backends}
        print(f"matrix: building {NAMES[source.package]} {source.label} ({source.key})", flush=True)
        t0 = time.monotonic()
        shutil.rmtree(dest.with_suffix(".tmp"), ignore_errors=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"matrix: building {NAMES[source.package]} {source.label} failed:\n"
                             f"{(proc.stdout + proc.stderr)[-4000:]}")
        dest.with_suffix(".tmp").rename(dest)
        print(f"matrix: built {NAMES[source.package]} {source.label} in {time.monotonic() - t0:.0f} s", flush=True)
        return sorted(dest.glob("*.whl"))[0]

    def _export(self, commit: str) -> Path:
        out = self.cache / "src" / commit[:12]
        if not (out / ".complete").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
            (out / ".complete").write_text(commit)
        return out



# ------------------------------------------------------------------ the regression, replayed

SCRATCH = "hipdnn_ep_get_host_scratch_base"
POOL_PARAMS = 'params = ["hipdnn_ep_state_t* state", "uint64_t needed_size", "void** out_base"]'
POOL_PARAMS_NARROWED = 'params = ["hipdnn_ep_state_t* state", "void** out_base"]'


def _manifest_json(text: str) -> bytes:
    sys.path.insert(0, str(ROOT / "packages/abi"))
    try:
        from hipdnn_ep_abi import generate, parse
    finally:
        sys.path.pop(0)
    return json.dumps(generate.manifest_json(parse(text)), separators=(",", ":")).encode()


def replayed_runtime(wheel: Wheel, case: str, out: Path) -> Wheel:
    """A copy of a runtime wheel changed the way the original regression changed the runtime, still
    claiming to be that version: "removed" stops exporting hipdnn_ep_get_host_scratch_base (the
    definition deleted, manifest and version script unchanged); "narrowed" ships a manifest in which
    hipdnn_ep_get_pool_base lost its size parameter (a signature change without a major bump)."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / wheel.path.name
    with zipfile.ZipFile(wheel.path) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        records = []
        for info in src.infolist():
            if info.filename == record_name:
                continue
            data = src.read(info)
            if re.search(r"libhipdnn_ep_runtime\.so[.\d]*$", info.filename) and not info.is_dir():
                data = _edit_library(data, case)
            dst.writestr(info, data)
            digest = urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{info.filename},sha256={digest},{len(data)}")
        records.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(records) + "\n")
    return read_wheel("runtime", wheel.label, target, note=f"replay: {case}")


def _edit_library(data: bytes, case: str) -> bytes:
    data = bytearray(data)

    def replace(old: bytes, new: bytes) -> None:
        at = data.find(old)
        if at < 0 or len(new) > len(old):
            return
        data[at:at + len(old)] = new.ljust(len(old), b" ")

    text = (ROOT / "packages/abi/manifest.toml").read_text()
    if case == "removed":
        name = b"\0" + SCRATCH.encode() + b"\0"
        replace(name, name[:-2] + b"X\0")  # the dynamic symbol renamed away: no longer exported
    else:
        replace(_manifest_json(text), _manifest_json(text.replace(POOL_PARAMS, POOL_PARAMS_NARROWED)))
    return bytes(data)


# ------------------------------------------------------------------ expectations

@dataclass(frozen=True)
class Expected:
    outcome: str  # "pass", "pip" (pip refuses the set), "abi" (our ABI check refuses it)
    why: str
    target: tuple[int, int] | None = None  # the ABI the code is compiled for


def _requirement(wheel: Wheel, name: str, extras: set[str]) -> Requirement | None:
    for text in wheel.requires:
        req = Requirement(text)
        if canonicalize_name(req.name) != canonicalize_name(name):
            continue
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
            return req
    return None


def expect(compiler: Wheel, runtime: Wheel, ep: Wheel) -> Expected:
    """What installing and running this combination must give, from the wheels' metadata alone."""
    wanted = [(ep, compiler, {""}), (ep, runtime, {""})]
    creq = _requirement(ep, compiler.name, {""})
    wanted.append((compiler, runtime, set(creq.extras) if creq else set()))
    for who, dep, extras in wanted:
        req = _requirement(who, dep.name, extras)
        if req is not None and not req.specifier.contains(Version(dep.version), prereleases=True):
            return Expected("pip", f"{who.name} {who.version} requires {req}")
    (rmaj, rmin), (emaj, emin), (cmaj, cmin) = runtime.abi, ep.abi, compiler.abi
    if rmaj != emaj or rmin < emin:
        return Expected("abi", f"the EP needs runtime ABI {emaj}.{emin}, the runtime has {rmaj}.{rmin}")
    if cmaj != rmaj:
        return Expected("abi", f"the compiler targets ABI major {cmaj}, the runtime has {rmaj}.{rmin}")
    return Expected("pass", "", (rmaj, min(rmin, cmin)))


# ------------------------------------------------------------------ running cells

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


# ------------------------------------------------------------------ offline: a machine without a registry

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


# ------------------------------------------------------------------ the downstream example

@dataclass
class ExampleBuild:
    """examples/custom_kernels built against one runtime wheel."""
    against: Wheel
    expected: str  # "built", or "refused" (CMake's version check finds no matching runtime package)
    outcome: str = ""  # "built", "refused" or "fail"
    message: str = ""
    build: Path | None = None
    seconds: float = 0.0
    runs: dict[str, dict] = field(default_factory=dict)  # runtime title -> {"demo": .., "library": ..}
    run_expected: dict[str, str] = field(default_factory=dict)  # runtime title -> "pass" | "refused"


def example_needs(cmakelists: Path = EXAMPLE / "CMakeLists.txt") -> tuple[int, int]:
    """The runtime ABI the example asks for: its `find_package(hipdnn_ep_runtime MAJOR.MINOR ...)`."""
    found = re.search(r"find_package\(\s*hipdnn_ep_runtime\s+(\d+)\.(\d+)", cmakelists.read_text())
    if found is None:
        raise SystemExit(f"matrix: {cmakelists} asks for no hipdnn_ep_runtime version (find_package(... X.Y ...))")
    return int(found[1]), int(found[2])


def example_build_expected(needs: tuple[int, int], runtime: Wheel) -> str:
    """The runtime wheel's CMake package version check: the same ABI major, at least the minor asked for."""
    return "built" if runtime.abi[0] == needs[0] and runtime.abi[1] >= needs[1] else "refused"


def example_run_expected(built_against: Wheel, runtime: Wheel) -> str:
    """The example's own check (custom_kernels_check_runtime): the loaded runtime has the ABI major of the
    header the library was compiled with and at least its minor; else it refuses with its message."""
    (bmaj, bmin), (rmaj, rmin) = built_against.abi, runtime.abi
    return "pass" if rmaj == bmaj and rmin >= bmin else "refused"


def _example_key() -> str:
    """The example's content (tracked and untracked files, ignored ones left out)."""
    digest = hashlib.sha256()
    for name in sorted(_git("ls-files", "-co", "--exclude-standard", "--", "examples/custom_kernels").split()):
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def build_example(runtime: Wheel, cache: Path, needs: tuple[int, int]) -> ExampleBuild:
    """Configures and builds the example against a runtime wheel unpacked as pip would install it (its
    header, CMake package and library); cached per wheel content and example source."""
    result = ExampleBuild(runtime, example_build_expected(needs, runtime))
    digest = hashlib.sha256(runtime.path.read_bytes()).hexdigest()[:16]
    dest = (cache / "examples" / f"custom_kernels-{digest}-{_example_key()}").resolve()
    done = dest / "outcome.json"
    if not done.exists():
        t0 = time.monotonic()
        shutil.rmtree(dest, ignore_errors=True)
        with zipfile.ZipFile(runtime.path) as z:
            z.extractall(dest / "site")
        config = next((dest / "site").glob("*/cmake/hipdnn_ep_runtime-config.cmake"), None)
        package_dir = config.parent if config else dest / "site"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        proc = subprocess.run(["cmake", "-S", str(EXAMPLE), "-B", str(dest / "build"), *generator,
                               f"-Dhipdnn_ep_runtime_DIR={package_dir}"], capture_output=True, text=True)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0:
            # CMake's own refusal: the wheel's hipdnn_ep_runtime package is not of a compatible version
            refused = "hipdnn_ep_runtime" in text and "compatible with requested version" in text
            outcome = ("refused" if refused else "fail", " ".join(text.split())[-800:])
        else:
            proc = subprocess.run(["cmake", "--build", str(dest / "build")], capture_output=True, text=True)
            outcome = ("built", "") if proc.returncode == 0 else ("fail", (proc.stdout + proc.stderr)[-1500:])
        done.write_text(json.dumps({"outcome": outcome[0], "message": outcome[1],
                                    "seconds": round(time.monotonic() - t0, 1)}))
    saved = json.loads(done.read_text())
    result.outcome, result.message, result.seconds = saved["outcome"], saved["message"], saved["seconds"]
    result.build = dest / "build" if result.outcome == "built" else None
    return result


def run_example(runtimes: list[Wheel], cells: list[Cell], pythons: dict[str, Path], cache: Path,
                backend: str) -> list[ExampleBuild]:
    """The example built against every runtime wheel of the leg, then run beside every runtime of the leg
    (in the environment of a cell that installed it). The replayed runtimes are left out: the example
    calls neither replayed function, and the "removed" one's own Python module no longer imports."""
    needs = example_needs()
    envs: dict[str, tuple[Wheel, Path]] = {}
    for c in cells:
        if c.name in pythons and not c.replay:
            envs.setdefault(c.runtime.title, (c.runtime, pythons[c.name]))
    builds = []
    for runtime in runtimes:
        b = build_example(runtime, cache, needs)
        builds.append(b)
        for title, (wheel, python) in envs.items():
            b.run_expected[title] = example_run_expected(runtime, wheel)
            if b.build is not None:
                b.runs[title] = run_cell_script(python, str(b.build), "--backend", backend, script=EXAMPLE_CELL,
                                                timeout=300)
        print(f"matrix: examples/custom_kernels against runtime {runtime.title}: {b.outcome}, run with "
              + ", ".join(f"{t}: {example_actual(r)}" for t, r in b.runs.items()), flush=True)
    return builds


def example_actual(run: dict[str, dict]) -> str:
    """'pass' or 'refused' when the demo and the library agree on it, else 'fail'."""
    outcomes = {r["outcome"] for r in run.values()}
    return outcomes.pop() if len(outcomes) == 1 and outcomes <= {"pass", "refused"} else "fail"


def example_ok(b: ExampleBuild) -> bool:
    if b.outcome != b.expected:
        return False
    return all(example_actual(b.runs.get(t, {"-": {"outcome": "missing"}})) == want
               for t, want in b.run_expected.items()) if b.outcome == "built" else True


def example_table(builds: list[ExampleBuild], needs: tuple[int, int]) -> str:
    titles = list(builds[0].run_expected) if builds else []
    head = ["built against runtime", "build (expected from metadata)", *(f"run with {t}" for t in titles), "verdict"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for b in builds:
        build = f"{b.outcome} ({'as expected' if b.outcome == b.expected else f'**expected {b.expected}**'})"
        runs = []
        for t in titles:
            if b.outcome != "built":
                runs.append("-")
                continue
            got, want = example_actual(b.runs.get(t, {})), b.run_expected[t]
            runs.append(got if got == want else f"**{got}** (expected {want})")
        verdict = "as expected" if example_ok(b) else "**UNEXPECTED**"
        rows.append("| " + " | ".join([f"{b.against.title} (ABI {b.against.abi[0]}.{b.against.abi[1]})", build, *runs,
                                       verdict]) + " |")
    notes = [f"\nThe example asks for runtime ABI >= {needs[0]}.{needs[1]} (its find_package); each run loads "
             "the library through Python (RMS norm against numpy) and runs its demo beside the installed runtime."]
    refusal = next((r["message"] for b in builds for r in (x.get("library") for x in b.runs.values())
                    if r and r["outcome"] == "refused"), None)
    if refusal:
        notes.append(f"A refusal reads: `{refusal}`")
    for b in builds:
        if b.outcome != b.expected:
            notes.append(f"- build against {b.against.title}: {b.outcome}: {b.message[-600:]}")
        for t, run in b.runs.items():
            if example_actual(run) != b.run_expected[t]:
                notes.extend(f"- {b.against.title} with {t}: {k}: {r['outcome']}: {r['message'][-400:]}"
                             for k, r in run.items())
    return "\n".join(rows) + "\n" + "\n".join(notes) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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


if __name__ == "__main__":
    sys.exit(main())
