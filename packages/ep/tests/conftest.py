"""Fixtures: the plugin registered with onnxruntime, plus the test doubles of
the compiler and runtime from tests/fakes (see fakes/README.md)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import hipdnn_ep
import onnxruntime as ort
import pytest

TESTS = Path(__file__).resolve().parent
FAKES = TESTS / "fakes"
REPO = TESTS.parents[2]


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"onnxruntime {ort.__version__}, hipdnn_ep library {hipdnn_ep.get_library_path()}"]


@pytest.fixture(scope="session")
def abi_include(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Include folder with hipdnn_ep/runtime_abi.h generated from the manifest."""
    out = tmp_path_factory.mktemp("abi")
    env = dict(os.environ, PYTHONPATH=str(REPO / "packages" / "runtime" / "abi"))
    subprocess.run([sys.executable, "-m", "hipdnn_ep_abi", "generate", "--out", str(out)], check=True, env=env,
                   capture_output=True)
    return out / "include"


def _build_runtime(abi_include: Path, out_dir: Path, defines: list[str]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / "libhipdnn_ep_runtime.so.1"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", f"-I{abi_include}", *defines, "-o", str(lib),
                    "-Wl,-soname,libhipdnn_ep_runtime.so.1",
                    str(FAKES / "fake_runtime.c"), "-ldl"], check=True)
    return lib


@pytest.fixture(scope="session")
def fake_runtime(abi_include: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test double of the runtime library (host memory, CPU backend)."""
    return _build_runtime(abi_include, tmp_path_factory.mktemp("runtime"), [])


@pytest.fixture(scope="session")
def fake_runtime_abi2(abi_include: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime double claiming ABI 2.0 (another major)."""
    return _build_runtime(abi_include, tmp_path_factory.mktemp("runtime2"), ["-DFAKE_ABI_VERSION=(2u<<16)"])


@pytest.fixture(scope="session")
def fake_python(abi_include: Path, fake_runtime: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter wrapper under which the compiler double is importable."""
    script = tmp_path_factory.mktemp("python") / "python-fake-compiler"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{FAKES}" FAKE_COMPILER_INCLUDE="{abi_include}" '
                      f'FAKE_COMPILER_RUNTIME="{fake_runtime}" '
                      f'exec "{sys.executable}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.fixture(scope="session")
def ep_devices() -> list:
    """This EP's OrtEpDevices (the library registered once per process)."""
    return hipdnn_ep.register(ort)


@dataclass(frozen=True)
class Env:
    """Options that wire the EP to the doubles, and the compile log."""

    options: dict[str, str]
    compile_log: Path
    cache_dir: Path

    def compiles(self) -> list[str]:
        return self.compile_log.read_text().splitlines() if self.compile_log.exists() else []


@pytest.fixture
def env(tmp_path: Path, fake_python: Path, fake_runtime: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    log = tmp_path / "compiles.jsonl"
    monkeypatch.setenv("FAKE_COMPILER_LOG", str(log))
    cache = tmp_path / "cache"
    return Env({"compiler_python": str(fake_python), "runtime_library": str(fake_runtime),
                "cache_dir": str(cache)}, log, cache)


def make_session(model: str | Path, devices: list, options: dict[str, str],
                 config: dict[str, str] | None = None) -> ort.InferenceSession:
    """A session with this EP (and ORT's CPU EP for fallback)."""
    so = ort.SessionOptions()
    for k, v in (config or {}).items():
        so.add_session_config_entry(k, v)
    so.add_provider_for_devices(devices, options)
    return ort.InferenceSession(str(model), sess_options=so)
