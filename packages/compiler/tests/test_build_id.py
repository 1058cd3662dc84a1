"""The build id: a digest of the compiler's content, stated by capabilities and in artifact metadata."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx

import hipdnn_ep_compiler
from hipdnn_ep_compiler.build_id import PACKAGE_DIR, build_id, source_files
from hipdnn_ep_compiler.protocol import handle

PRINT_ID = "from hipdnn_ep_compiler.build_id import build_id; print(build_id())"


def _copy_package(tmp_path: Path) -> Path:
    """A copy of the installed compiler package under tmp_path/src (put first on PYTHONPATH)."""
    dest = tmp_path / "src" / "hipdnn_ep_compiler"
    shutil.copytree(Path(hipdnn_ep_compiler.__file__).parent, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _id_of(src: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([sys.executable, "-c", PRINT_ID], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_build_id_covers_sources_and_bundled_manifest():
    files = source_files()
    assert PACKAGE_DIR / "build_id.py" in files and PACKAGE_DIR / "abi" / "runtime_abi_v1.json" in files
    assert not any("__pycache__" in f.parts for f in files)
    assert len(build_id()) == 24 and int(build_id(), 16) >= 0


def test_an_edited_source_changes_the_build_id(tmp_path):
    copy = _copy_package(tmp_path)
    before = _id_of(copy.parent)
    assert before == build_id(), "a faithful copy has the installed compiler's id"
    passes = sorted((copy / "passes").glob("*.py"))
    passes[0].write_text(passes[0].read_text() + "\n# an edited pass\n")
    assert _id_of(copy.parent) != before
    (copy / "abi" / "runtime_abi_v1.json").write_text(
        json.dumps(json.loads((copy / "abi" / "runtime_abi_v1.json").read_text())))  # same data, other bytes
    assert len({before, _id_of(copy.parent)}) == 2


def test_capabilities_and_metadata_state_the_build_id(static_model, tmp_path):
    caps = handle({"protocol": 2, "action": "capabilities"})
    assert caps["build_id"] == build_id()
    # a host keeps the answer while none of install_files changes: they include every source
    assert {str(f) for f in source_files()} <= set(caps["install_files"])
    onnx.save(static_model, tmp_path / "m.onnx")
    r = handle({"protocol": 2, "action": "compile", "model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "a")})
    assert r["ok"] and r["metadata"]["compiler"]["build_id"] == build_id()
