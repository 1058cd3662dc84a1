"""The runtime states its ABI: version, manifest, exported symbols, shipped files."""

from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path

import hipdnn_ep_runtime as rt


def test_abi_version_matches_manifest_and_wheel_version() -> None:
    manifest = rt.abi_manifest()
    assert rt.abi_version() == (manifest["abi"]["major"], manifest["abi"]["minor"])
    assert int(rt.__version__.split(".")[0]) == rt.abi_version()[0]


def test_shipped_manifest_equals_the_one_compiled_in() -> None:
    shipped = json.loads((Path(rt.__file__).parent / "abi_manifest.json").read_text())
    assert shipped == rt.abi_manifest()


def test_library_is_named_after_its_soname() -> None:
    lib = Path(rt.library_path())
    assert lib.name == rt.abi_manifest()["abi"]["soname"]
    dynamic = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert f"Library soname: [{lib.name}]" in dynamic


def test_exports_only_manifest_functions_with_versions() -> None:
    manifest = rt.abi_manifest()
    out = subprocess.run(["nm", "-D", "--defined-only", rt.library_path()], capture_output=True, text=True,
                         check=True).stdout
    exported = {}
    for line in out.splitlines():
        symbol = line.split()[-1]
        if "@@" in symbol:
            name, node = symbol.split("@@")
            exported[name] = node
    non_kernels = {f["name"]: manifest["version_nodes"][str(f["since"])] for f in manifest["functions"]
                   if f["kind"] == "function"}
    kernels = {f["name"] for f in manifest["functions"] if f["kind"] == "kernel"}
    for name, node in non_kernels.items():
        assert exported.get(name) == node, name
    # Nothing outside the manifest leaks out (kernels may still be on their way).
    assert set(exported) <= set(non_kernels) | kernels


def test_abi_version_c_call(runtime_lib: ctypes.CDLL) -> None:
    runtime_lib.hipdnn_ep_abi_version.restype = ctypes.c_uint32
    major, minor = rt.abi_version()
    assert runtime_lib.hipdnn_ep_abi_version() == (major << 16) | minor


def test_header_and_cmake_package_are_shipped() -> None:
    header = Path(rt.include_dir()) / "hipdnn_ep" / "runtime_abi.h"
    assert "#define HIPDNN_EP_ABI_MAJOR" in header.read_text()
    config = Path(rt.cmake_dir()) / "hipdnn_ep_runtime-config.cmake"
    text = config.read_text()
    assert "hipdnn_ep_runtime::runtime" in text
    assert rt.abi_manifest()["abi"]["soname"] in text
    assert (Path(rt.cmake_dir()) / "hipdnn_ep_runtime-config-version.cmake").exists()
