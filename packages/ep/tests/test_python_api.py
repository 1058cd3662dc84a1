"""The hipdnn_ep Python package: library lookup, names, registration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hipdnn_ep
import onnxruntime as ort
import pytest
from hipdnn_ep._library import find_library


def test_library_path_is_the_one_inside_the_package() -> None:
    path = Path(hipdnn_ep.get_library_path())
    assert path.is_absolute() and path.is_file()
    assert path.parent == Path(hipdnn_ep.__file__).resolve().parent


@pytest.mark.parametrize("names", [[], ["libhipdnn_ep_plugin.so", "libhipdnn_ep_plugin.old.so"]],
                         ids=["none", "two"])
def test_library_lookup_needs_exactly_one_candidate(tmp_path: Path, names: list[str]) -> None:
    for n in names:
        (tmp_path / n).write_bytes(b"")
    listing = ", ".join(sorted(names)) or "none"
    with pytest.raises(RuntimeError, match=f"found {len(names)}: {listing}"):
        find_library(tmp_path)


def test_names() -> None:
    assert hipdnn_ep.get_ep_name() == "HipdnnEp"
    assert hipdnn_ep.get_ep_names() == ["HipdnnEp"]


def test_import_has_no_side_effects() -> None:
    code = ("import os, sys; env = dict(os.environ); import hipdnn_ep; "
            "assert 'onnxruntime' not in sys.modules, 'onnxruntime imported'; "
            "assert dict(os.environ) == env, 'environment changed'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("version", "ok"), [("1.23.0", True), ("1.32.0", True), ("1.23.2.dev1", True),
                                             ("1.22.1", False), ("0.9", False)])
def test_onnxruntime_version_check(version: str, ok: bool) -> None:
    if ok:
        hipdnn_ep.check_onnxruntime_version(version)
    else:
        with pytest.raises(RuntimeError, match=rf"needs onnxruntime>=1\.23\.0, but onnxruntime {version}"):
            hipdnn_ep.check_onnxruntime_version(version)


def test_register_is_idempotent_and_returns_cpu_device() -> None:
    first = hipdnn_ep.register(ort)
    second = hipdnn_ep.register()
    assert [d.ep_name for d in first] == ["HipdnnEp"] == [d.ep_name for d in second]
    assert first[0].device.type == ort.OrtHardwareDeviceType.CPU
    assert dict(first[0].ep_metadata)["backend"] == "cpu"


def test_register_refuses_old_onnxruntime() -> None:
    class OldOrt:
        __version__ = "1.20.0"

    with pytest.raises(RuntimeError, match="needs onnxruntime>=1.23.0"):
        hipdnn_ep.register(OldOrt)  # type: ignore[arg-type]
