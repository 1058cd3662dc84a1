"""Fixtures for the ABI gate tests: manifests edited the way real regressions edit them,
and shared libraries built from the manifest with the system C compiler."""

from __future__ import annotations

import importlib
import itertools
import re
import shutil
import subprocess
import sys
import types
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


# ---------------------------------------------------------------- contract (metadata.toml, protocol.toml) edits

def field_block(path: str) -> re.Pattern:
    """The [[fields]] block of a contract's field `path`."""
    return re.compile(r'\[\[fields\]\]\npath = "' + re.escape(path) + r'"\n(?:(?!\[\[fields\]\]).*\n)*')


def without_field(text: str, path: str) -> str:
    new, n = field_block(path).subn("", text)
    assert n == 1
    return new


def retyped_field(text: str, path: str, type_: str) -> str:
    block = field_block(path).search(text)[0]
    return text.replace(block, re.sub(r'type = "[^"]*"', f'type = "{type_}"', block))


def added_field(text: str, path: str, since: int, required: bool = False) -> str:
    return text + (f'\n[[fields]]\npath = "{path}"\ntype = "string"\nrequired = {str(required).lower()}\n'
                   f'since = {since}\ndoc = "a new field"\n')


def contract_violations(released: Path, text: str) -> list[str]:
    """The bump-rule violations of contract `text` against the released snapshot `released`."""
    from hipdnn_ep_abi import contracts

    return [str(v) for v in contracts.check(contracts.load(released), contracts.parse(text))]


JSON_INCLUDE = Path(__file__).resolve().parents[3] / "third_party/nlohmann-json"


def build_cpp_program(folder: Path, header: str, header_text: str, source: str) -> Path:
    """Compiles `source` (a C++ program including the generated `header`, written from `header_text` beside
    the shared field readers) into folder/program; skips without c++ or third_party/nlohmann-json."""
    from hipdnn_ep_abi import contracts

    if shutil.which("c++") is None or not (JSON_INCLUDE / "nlohmann/json.hpp").exists():
        pytest.skip("needs c++ and third_party/nlohmann-json (tools/release/fetch_third_party.sh)")
    (folder / "hipdnn_ep").mkdir()
    (folder / contracts.CPP_READER_HEADER).write_text(contracts.cpp_reader_header())
    (folder / header).write_text(header_text)
    (folder / "program.cpp").write_text(source)
    subprocess.run(["c++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-DJSON_USE_IMPLICIT_CONVERSIONS=0",
                    "-I", str(folder), "-isystem", str(JSON_INCLUDE), str(folder / "program.cpp"), "-o",
                    str(folder / "program")], check=True)
    return folder / "program"


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


_packages = itertools.count()


def import_schema(folder: Path, module: str) -> types.ModuleType:
    """Imports a generated schema module (metadata_schema, protocol_schema) from `folder`, as the compiler's abi
    package does: a package of its own, so the module's `from . import schema_check` finds the one beside it.
    The package's __init__ is not run (the compiler's imports the rest of the compiler)."""
    name = f"_generated_schemas_{next(_packages)}"
    package = types.ModuleType(name)
    package.__path__ = [str(folder)]
    sys.modules[name] = package
    return importlib.import_module(f"{name}.{module}")


def write_schemas(folder: Path) -> Path:
    """Writes what `contracts generate` writes into the compiler (both schema modules and their validator)."""
    from hipdnn_ep_abi import contracts

    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{contracts.VALIDATOR_MODULE}.py").write_text(contracts.python_validator_module())
    (folder / "metadata_schema.py").write_text(contracts.python_module(contracts.load(contracts.METADATA)))
    (folder / "protocol_schema.py").write_text(contracts.python_module(contracts.load(contracts.PROTOCOL),
                                                                       "protocol.toml"))
    return folder


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


__all__ = ["declare_writes", "edit_function", "import_schema", "parse", "set_minor", "stub_source",
           "write_schemas"]
