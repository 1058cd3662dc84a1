"""The exported-symbol gate: a built library exports exactly the manifest's functions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stub_source
from hipdnn_ep_abi import DEFAULT_MANIFEST, generate, symbols
from hipdnn_ep_abi.__main__ import main


def test_complete_library_passes(manifest, build_library):
    lib = build_library(stub_source(manifest))
    assert symbols.check(manifest, lib) == []
    exported = symbols.exported_symbols(lib)
    assert exported["hipdnn_ep_malloc"] == "HIPDNN_EP_1.0"
    assert exported["hipdnn_ep_kernel_gemm"] == "HIPDNN_EP_1.1"


def test_function_deleted_from_the_library_is_named(manifest, build_library, capsys):
    """The first historical break, seen from the library side."""
    lib = build_library(stub_source(manifest, omit=frozenset({"hipdnn_ep_get_host_scratch_base"})))
    found = symbols.check(manifest, lib)
    assert [v.name for v in found] == ["hipdnn_ep_get_host_scratch_base"]
    assert "undefined symbol" in found[0].message
    assert main(["check-symbols", str(lib)]) == 1
    assert "hipdnn_ep_get_host_scratch_base" in capsys.readouterr().err


def test_undeclared_export_is_named(manifest, build_library):
    lib = build_library(stub_source(manifest, extra=("hipdnn_ep_secret_helper",)),
                        script="{ global: hipdnn_ep_*; local: *; };")
    names = {v.name for v in symbols.check(manifest, lib)}
    assert "hipdnn_ep_secret_helper" in names


def test_wrong_version_node_is_named(manifest, build_library):
    lib = build_library(stub_source(manifest), script="HIPDNN_EP_1.0 { global: hipdnn_ep_*; local: *; };")
    found = {v.name: v.message for v in symbols.check(manifest, lib)}
    assert "hipdnn_ep_kernel_gemm" in found and "HIPDNN_EP_1.1" in found["hipdnn_ep_kernel_gemm"]
    assert "hipdnn_ep_malloc" not in found


ABI_DIR = DEFAULT_MANIFEST.parent
RUNTIME_DIR = ABI_DIR.parent / "runtime"
CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.26)
project(exports_gate C)
include({module})
add_library(runtime SHARED stub.c)
target_include_directories(runtime PRIVATE {include})
set_target_properties(runtime PROPERTIES C_VISIBILITY_PRESET hidden)
target_link_options(runtime PRIVATE "LINKER:--version-script={map}")
hipdnn_ep_check_exports(runtime PYTHON {python} ABI_DIR {abi_dir})
"""


def _cmake_build(tmp_path: Path, manifest, omit: frozenset[str]) -> tuple[subprocess.CompletedProcess, Path]:
    """Configures and builds a library through the runtime's own export gate (cmake/check_exports.cmake)."""
    cmake = shutil.which("cmake")
    if cmake is None or shutil.which("cc") is None:
        pytest.skip("needs cmake and a C compiler")
    gen = tmp_path / "gen"
    generate.write_all(manifest, gen)
    src = tmp_path / "project"
    src.mkdir()
    (src / "stub.c").write_text(stub_source(manifest, omit=omit))
    (src / "CMakeLists.txt").write_text(CMAKE_PROJECT.format(
        module=RUNTIME_DIR / "cmake/check_exports.cmake", include=gen / "include", map=gen / "runtime.map",
        python=sys.executable, abi_dir=ABI_DIR))
    build = tmp_path / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run([cmake, "-S", src, "-B", build, *generator], check=True, capture_output=True)
    proc = subprocess.run([cmake, "--build", build], capture_output=True, text=True)
    return proc, build / "libruntime.so"


def test_runtime_build_fails_when_an_export_is_missing(tmp_path, manifest):
    """The first historical break at build time: the definition is deleted, the header and version
    script still declare it. The build must fail naming it, and leave no library behind."""
    proc, lib = _cmake_build(tmp_path, manifest, frozenset({"hipdnn_ep_get_host_scratch_base"}))
    assert proc.returncode != 0
    assert "hipdnn_ep_get_host_scratch_base: declared in the manifest" in proc.stdout + proc.stderr
    assert not lib.exists()


def test_runtime_build_passes_with_every_export(tmp_path, manifest):
    proc, lib = _cmake_build(tmp_path, manifest, frozenset())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lib.exists()


def test_runtime_build_uses_the_export_gate():
    text = (RUNTIME_DIR / "CMakeLists.txt").read_text()
    assert "include(cmake/check_exports.cmake)" in text
    assert "hipdnn_ep_check_exports(hipdnn_ep_runtime " in text
