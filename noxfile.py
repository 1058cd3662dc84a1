#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2025.2.9"]
# ///
"""hipdnn-ep automation: every job CI and developers run.

Sessions (``nox -l``): ``abi`` (ABI gates), ``tests`` (every suite on the CPU backend, then the EP
suite on the oldest supported onnxruntime), ``quick`` (``tests`` without the tests marked slow: the
sweeps over every ONNX node test), ``matrix`` (every combination of released and HEAD
wheels, each installed in a fresh environment and run end to end), ``zoo`` (the model zoo on the CPU
backend: every model claimed whole and within its tolerance of ORT's CPU EP; installs torch), ``lint``,
``wheels`` (build the three wheels into dist/), ``release`` (bump rules; cut a release), ``demo`` (the
main job: compile a dynamic- and a fixed-shape model and run them on the EP), ``gpu`` (on a GPU machine:
the cuda runtime, its GPU suite and compute-sanitizer), ``hip_check`` (the GPU kernels compiled for AMD
gfx1100/gfx1151 with Debian's clang-19; fetches what it needs with apt). The runtime and the EP are
built from source once per session into dist/ and installed from there.
"""

from __future__ import annotations

import re
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "abi", "tests", "matrix", "zoo"]

ROOT = Path(__file__).resolve().parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
DIST = ROOT / "dist"
ABI_DIR = ROOT / "packages/abi"
COMPILER_ABI_JSON = ROOT / "packages/compiler/src/hipdnn_ep_compiler/abi/runtime_abi_v1.json"
PACKAGES = {"runtime": "hipdnn-ep-runtime", "compiler": "hipdnn-ep-compiler", "ep": "hipdnn-ep"}


def _abi_tool(session: nox.Session, *args: str) -> None:
    session.run("python", "-m", "hipdnn_ep_abi", *args, env={"PYTHONPATH": str(ABI_DIR)})


def _build_wheels(session: nox.Session, *names: str) -> list[Path]:
    """Builds the named packages' wheels into dist/ (runtime first: the EP builds against it)."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "build"), "build")
    DIST.mkdir(exist_ok=True)
    wheels = []
    for name in names:
        pattern = f"{PACKAGES[name].replace('-', '_')}-*.whl"
        for old in DIST.glob(pattern):
            old.unlink()
        session.run("python", "-m", "build", "--wheel", "--outdir", str(DIST), str(ROOT / "packages" / name),
                    env={"PIP_FIND_LINKS": str(DIST), "UV_FIND_LINKS": str(DIST)})
        wheels += DIST.glob(pattern)
    return wheels


def _install(session: nox.Session, *names: str) -> None:
    """Builds the named packages and installs exactly those wheels (never a same-named index package)."""
    wheels = _build_wheels(session, *names)
    session.install("--find-links", str(DIST), *map(str, wheels))


@nox.session
def abi(session: nox.Session) -> None:
    """ABI gates: bump rules (C ABI, metadata schema, compiler protocol), exported symbols, wheel version,
    generated copies, corpus."""
    # cmake and ninja from the build group: the gate tests build libraries through the runtime's CMake check
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"),
                    *nox.project.dependency_groups(PYPROJECT, "build"))
    session.run("pytest", str(ABI_DIR), *session.posargs)
    _abi_tool(session, "check-compat")
    _abi_tool(session, "check-version", str(ROOT / "packages/runtime/pyproject.toml"))
    _abi_tool(session, "check-pins")
    _abi_tool(session, "json", "--check", str(COMPILER_ABI_JSON))
    # the JSON contracts (artifact metadata, compiler protocol): bump rules against their snapshots, generated
    # copies current
    _abi_tool(session, "contracts", "check-compat")
    _abi_tool(session, "contracts", "generate", "--check")
    _install(session, "runtime", "compiler")
    library = session.run("python", "-c", "import hipdnn_ep_runtime as r; print(r.library_path())",
                          silent=True).strip()
    _abi_tool(session, "check-symbols", library)
    session.run("pytest", str(ROOT / "integration"), "-m", "abi")


def _oldest_onnxruntime() -> str:
    """The oldest onnxruntime the EP supports (MIN_ONNXRUNTIME_VERSION, which it checks at registration)."""
    text = (ROOT / "packages/ep/python/hipdnn_ep/_registration.py").read_text()
    return re.search(r'MIN_ONNXRUNTIME_VERSION = "([^"]+)"', text)[1]


def _run_suites(session: nox.Session, *pytest_args: str) -> None:
    """Installs the wheels and runs every suite (the ABI tools', each package's, integration) on the CPU backend."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    _install(session, "runtime", "compiler", "ep")
    suites = [ABI_DIR, *(ROOT / "packages" / n / "tests" for n in PACKAGES), ROOT / "integration"]
    for suite in suites:
        if suite.exists():
            session.run("pytest", str(suite), *pytest_args, *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Every suite on the CPU backend, then the EP suite on the oldest onnxruntime it supports (1.23).

    GPU tests skip unless --gpu is given to pytest. The range of onnxruntime the EP declares is the
    range CI runs."""
    _run_suites(session)
    if not session.posargs:
        session.install(f"onnxruntime~={_oldest_onnxruntime()}")
        session.run("pytest", str(ROOT / "packages/ep/tests"))


@nox.session
def quick(session: nox.Session) -> None:
    """The suites of `tests` without the tests marked slow (the sweeps over every ONNX node test): the
    quick check before a commit; `tests` runs everything."""
    _run_suites(session, "-m", "not slow")


def _oldest_python() -> str:
    """The oldest Python the wheels support: their common `requires-python = ">=X.Y"`."""
    found = {n: nox.project.load_toml(ROOT / "packages" / n / "pyproject.toml")["project"]["requires-python"]
             for n in PACKAGES}
    if len(set(found.values())) != 1 or not next(iter(found.values())).startswith(">="):
        raise SystemExit(f"the wheels must declare one requires-python '>=X.Y', they declare {found}")
    return next(iter(found.values()))[2:]


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over all Python sources, and vermin: nothing newer than the oldest Python the wheels support."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", str(ROOT), *session.posargs)
    # ruff (target-version) refuses newer syntax; vermin also the newer stdlib (tomllib, typing.Self, ...)
    session.run("vermin", f"--target={_oldest_python()}-", "--violations", "--no-tips", "--eval-annotations",
                "--exclude-regex", r"(^|/)(build|dist|\.nox|\.venv|third_party)/",
                *(str(ROOT / p) for p in ("packages", "integration", "tools", "examples", "noxfile.py")))


@nox.session
def wheels(session: nox.Session) -> None:
    """Builds the three wheels into dist/."""
    _build_wheels(session, "runtime", "compiler", "ep")


@nox.session(default=False, venv_backend="none")
def release(session: nox.Session) -> None:
    """Bump rules of the three wheels (`-- check`, the default), or release one (`-- cut runtime|compiler|ep`)."""
    session.run("python3", str(ROOT / "tools/release/release.py"), *(session.posargs or ["check"]))


@nox.session
def matrix(session: nox.Session) -> None:
    """Every (compiler, runtime, ep) combination of the releases and HEAD, installed and run end to end.

    Wheels are built once per content into build/matrix/wheels; the table goes to stdout and
    build/matrix/matrix.md. Options after `--`: `--gpu auto|cuda|none`, `--no-replay`, `--no-example`,
    `--cache DIR`, `--jobs N`, `--pack-offline DIR` (a bundle for a GPU machine with no registry, run there
    with `python3 integration/matrix --offline DIR`; integration/README.md)."""
    # uv on the session's PATH builds the wheels and makes each cell's venv; cmake and ninja build the
    # downstream example against each runtime wheel
    session.install("packaging", "uv", "cmake>=3.26", "ninja")
    session.run("python", str(ROOT / "integration/matrix"), *session.posargs)


@nox.session(default=False)
def demo(session: nox.Session) -> None:
    """The main job: compile a dynamic- and a fixed-shape model, run them on the EP, compare with ORT's CPU EP."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"), "rich")
    _install(session, "runtime", "compiler", "ep")
    session.run("python", str(ROOT / "tools/demo.py"), *session.posargs)


@nox.session(venv_backend="virtualenv")
def zoo(session: nox.Session) -> None:
    """The model zoo: public architectures with random weights, exported here, run on the EP and on ORT's CPU EP.

    Fails unless every model is claimed whole and within its tolerance of ORT (tools/zoo/builders.py). CI runs
    all of them: exporting and running them takes about a minute on 2 cores (exports are kept in build/zoo).
    Without options it first runs the zoo's tests, whose exported-model test skips in `tests` (no torch there),
    and the compiler's tests marked `exports` (likewise). Options after `--` go to tools/zoo instead (`--models
    NAME ...`, `--backend cuda`, `--json FILE`; `--help`)."""
    # torch and torchvision from PyPI, a pair built for each other (torchvision's operators load only beside
    # its own torch): on Linux that is torch's CUDA build (~5.5 GB installed, run here on the CPU); its
    # CPU-only wheels are on PyTorch's own index, which CI does not use (it installs from PyPI only). pip
    # (virtualenv), not uv: the session reuses pip's index configuration and cache for these large wheels.
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"), "rich", "torch==2.14.1",
                    "torchvision==0.29.1", "transformers")
    _install(session, "runtime", "compiler", "ep")
    if not session.posargs:
        session.run("pytest", str(ROOT / "integration/tests/test_zoo.py"))
        # the compiler's tests on models torch exports (transformers' BERT, GELU), which skip in `tests`
        session.run("pytest", "-m", "exports", str(ROOT / "packages/compiler/tests"))
    session.run("python", str(ROOT / "tools/zoo"), *session.posargs)


@nox.session(venv_backend="none", default=False)
def gpu(session: nox.Session) -> None:
    """On a machine with an NVIDIA GPU: build the cuda runtime, run the GPU suite and memcheck, print a table."""
    session.run("bash", str(ROOT / "tools/gpu/gpu_test.sh"), *session.posargs, external=True)


@nox.session(venv_backend="none", default=False)
def hip_check(session: nox.Session) -> None:
    """Compile every GPU kernel for gfx1100 and gfx1151 with Debian's clang-19 and HIP headers (no AMD GPU needed)."""
    session.run("bash", str(ROOT / "tools/gpu/hip_check.sh"), *session.posargs, external=True)


if __name__ == "__main__":
    nox.main()
