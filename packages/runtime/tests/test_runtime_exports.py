"""A runtime library whose exports differ from its own manifest is refused by name, never as
`undefined symbol`: the first historical break (hipdnn_ep_get_host_scratch_base deleted from the
runtime while its manifest, header and version script still declared it), seen at load time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hipdnn_ep_runtime as rt
import pytest
from conftest import ArtifactFactory

DELETED = "hipdnn_ep_get_host_scratch_base"


def runtime_without(function: str, directory: Path) -> Path:
    """A copy of the runtime library whose dynamic symbol `function` is renamed away (same length),
    as if its definition had been deleted from the sources."""
    data = bytearray(Path(rt.library_path()).read_bytes())
    name = b"\0" + function.encode() + b"\0"
    at = data.find(name)
    assert at >= 0 and data.find(name, at + 1) < 0, f"{function} is not exactly once in .dynstr"
    data[at + len(name) - 2] = ord("X")  # ..._basX: no longer the name anything imports
    out = directory / Path(rt.library_path()).name
    out.write_bytes(bytes(data))
    return out


# Runs in a fresh process: only the broken copy may carry the runtime's SONAME there.
OPEN_WITH = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
out = ctypes.c_void_p()
status = lib.hipdnn_ep_artifact_open(sys.argv[2].encode(), ctypes.byref(out))
print(json.dumps({"status": status, "message": lib.hipdnn_ep_last_error().decode()}))
"""


def test_artifact_open_refuses_a_runtime_lacking_an_import(tmp_path: Path, make_artifact: ArtifactFactory) -> None:
    broken = runtime_without(DELETED, tmp_path)
    built = make_artifact()  # imports hipdnn_ep_get_host_scratch_base, as every dynamic-shape program does
    proc = subprocess.run([sys.executable, "-c", OPEN_WITH, str(broken), str(built.directory)],
                          capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout)
    assert result["status"] == 7, result  # ABI_MISMATCH, not INTERNAL from dlopen
    message = result["message"]
    assert "undefined symbol" not in message
    major, minor = rt.abi_version()
    assert f"does not export 1 function that its own ABI manifest declares and the artifact imports: " \
           f"[{DELETED}@HIPDNN_EP_{major}.0]" in message
    assert str(broken) in message
    assert f"Fix: reinstall a released runtime wheel, e.g. pip install --force-reinstall " \
           f"'hipdnn-ep-runtime>={major}.{minor},<{major + 1}'" in message
    assert not built.loaded, "the artifact's code ran before the check refused it"


def test_missing_exports_names_the_function(tmp_path: Path) -> None:
    assert rt.missing_exports() == []
    broken = runtime_without(DELETED, tmp_path)
    assert rt.missing_exports(str(broken)) == [f"{DELETED}@HIPDNN_EP_{rt.abi_version()[0]}.0"]


def test_every_manifest_function_resolves_in_the_installed_runtime() -> None:
    with pytest.raises(AssertionError, match="not exactly once"):
        runtime_without("hipdnn_ep_no_such_function", Path("/nonexistent"))
    assert rt.missing_exports() == []
