"""Fixtures for the ABI gate tests: manifests edited the way real regressions edit them,
and shared libraries built from the manifest with the system C compiler."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hipdnn_ep_abi import DEFAULT_MANIFEST, Manifest, generate, load, parse


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    """The manifest as committed."""
    return load(DEFAULT_MANIFEST)


@pytest.fixture(scope="session")
def manifest_text() -> str:
    return DEFAULT_MANIFEST.read_text()


def edit_function(text: str, name: str, new_block: str | None) -> str:
    """Replaces (or, with None, deletes) the [[functions]]/[[kernels]] block of `name`."""
    pattern = re.compile(r'(?ms)^\[\[(functions|kernels)\]\]\nname = "' + re.escape(name) + r'"\n.*?(?=^\[\[|\Z)')
    assert pattern.search(text), f"{name} not in manifest"
    return pattern.sub(new_block or "", text, count=1)


def set_minor(text: str, minor: int) -> str:
    return re.sub(r"(?m)^minor = \d+$", f"minor = {minor}", text, count=1)


def declare_writes(text: str, name: str, writes: str) -> str:
    """Adds `writes = {...}` to the [[functions]] block of `name` (a snapshot released before
    write bounds were declared has none)."""
    pattern = re.compile(r'(?ms)^(\[\[functions\]\]\nname = "' + re.escape(name) + r'"\n.*?^callers = [^\n]*\n)')
    assert pattern.search(text), f"{name} not in manifest"
    return pattern.sub(lambda m: m[1] + f"writes = {writes}\n", text, count=1)


def stub_source(m: Manifest, omit: frozenset[str] = frozenset(), extra: tuple[str, ...] = ()) -> str:
    """C definitions of every manifest function (bodies irrelevant: only the symbols matter here)."""
    lines = ['#include "hipdnn_ep/runtime_abi.h"']
    for fn in m.functions:
        if fn.name in omit:
            continue
        body = "" if str(fn.returns) == "void" else "return 0;"
        lines.append(f"{fn.prototype()} {{ {body} }}")
    for name in extra:
        lines.append(f'__attribute__((visibility("default"))) int {name}(void) {{ return 0; }}')
    return "\n".join(lines) + "\n"


@pytest.fixture
def build_library(tmp_path: Path, manifest: Manifest):
    """Builds a shared library exporting the manifest's functions through the generated version script."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")

    def build(source: str, *, script: str | None = None, name: str = "libhipdnn_ep_runtime.so") -> Path:
        gen = tmp_path / "gen"
        generate.write_all(manifest, gen)
        src = tmp_path / "stub.c"
        src.write_text(source)
        out = tmp_path / name
        map_file = gen / "runtime.map"
        if script is not None:
            map_file = tmp_path / "custom.map"
            map_file.write_text(script)
        subprocess.run([cc, "-shared", "-fPIC", "-fvisibility=hidden", "-I", str(gen / "include"),
                        f"-Wl,--version-script={map_file}", "-o", str(out), str(src)], check=True)
        return out

    return build


__all__ = ["declare_writes", "edit_function", "parse", "set_minor", "stub_source"]
