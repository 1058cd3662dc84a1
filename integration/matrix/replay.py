"""Job 4: the original regression replayed: HEAD's runtime wheel with a function no longer exported, or
with a parameter dropped from its manifest, each claiming to be an ordinary runtime."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from base64 import urlsafe_b64encode
from pathlib import Path

from .common import ROOT
from .wheels import Wheel, read_wheel

SCRATCH = "hipdnn_ep_get_host_scratch_base"
POOL_PARAMS = 'params = ["hipdnn_ep_state_t* state", "uint64_t needed_size", "void** out_base"]'
POOL_PARAMS_NARROWED = 'params = ["hipdnn_ep_state_t* state", "void** out_base"]'


def _manifest_json(text: str) -> bytes:
    sys.path.insert(0, str(ROOT / "packages/abi"))
    try:
        from hipdnn_ep_abi import generate, parse
    finally:
        sys.path.pop(0)
    return json.dumps(generate.manifest_json(parse(text)), separators=(",", ":")).encode()


def replayed_runtime(wheel: Wheel, case: str, out: Path) -> Wheel:
    """A copy of a runtime wheel changed the way the original regression changed the runtime, still
    claiming to be that version: "removed" stops exporting hipdnn_ep_get_host_scratch_base (the
    definition deleted, manifest and version script unchanged); "narrowed" ships a manifest in which
    hipdnn_ep_get_pool_base lost its size parameter (a signature change without a major bump)."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / wheel.path.name
    with zipfile.ZipFile(wheel.path) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        records = []
        for info in src.infolist():
            if info.filename == record_name:
                continue
            data = src.read(info)
            if re.search(r"libhipdnn_ep_runtime\.so[.\d]*$", info.filename) and not info.is_dir():
                data = _edit_library(data, case)
            dst.writestr(info, data)
            digest = urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{info.filename},sha256={digest},{len(data)}")
        records.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(records) + "\n")
    return read_wheel("runtime", wheel.label, target, note=f"replay: {case}")


def _edit_library(data: bytes, case: str) -> bytes:
    data = bytearray(data)

    def replace(old: bytes, new: bytes) -> None:
        at = data.find(old)
        if at < 0 or len(new) > len(old):
            return
        data[at:at + len(old)] = new.ljust(len(old), b" ")

    text = (ROOT / "packages/abi/manifest.toml").read_text()
    if case == "removed":
        name = b"\0" + SCRATCH.encode() + b"\0"
        replace(name, name[:-2] + b"X\0")  # the dynamic symbol renamed away: no longer exported
    else:
        replace(_manifest_json(text), _manifest_json(text.replace(POOL_PARAMS, POOL_PARAMS_NARROWED)))
    return bytes(data)
