"""The exported-symbol gate: a built library exports exactly the manifest's functions."""

from __future__ import annotations

from conftest import stub_source
from hipdnn_ep_abi import symbols
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
