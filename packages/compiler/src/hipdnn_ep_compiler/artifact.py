"""Artifact metadata: what the compiler embeds, and a pure-Python reader of it.

An artifact is a directory holding `program.so`; its metadata is JSON, NUL-terminated, in the
ELF section `.hipdnn_ep_meta`, readable without loading the code (the runtime checks it
before dlopen; `read_metadata` here serves `inspect`).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ArtifactError

SECTION = ".hipdnn_ep_meta"
PROGRAM = "program.so"
BACKENDS = ("cpu", "cuda", "hip")  # the runtime backends an artifact may be compiled for
FORMAT = 1


@dataclass(frozen=True)
class ArtifactInfo:
    """Result of a compile: where the artifact is and what it says about itself."""

    path: Path
    metadata: dict[str, Any]

    @property
    def program(self) -> Path:
        return self.path / PROGRAM

    @property
    def imports(self) -> list[str]:
        return [i["name"] for i in self.metadata["imports"]]


def program_path(artifact: str | Path) -> Path:
    p = Path(artifact)
    return p / PROGRAM if p.is_dir() else p


def read_section(path: str | Path, name: str = SECTION) -> bytes:
    """Raw bytes of one ELF64 little-endian section, found through the section headers."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"cannot read {p}: {exc.strerror or exc}") from None
    if data[:4] != b"\x7fELF":
        raise ArtifactError(f"{p} is not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ArtifactError(f"{p} is not a little-endian ELF64 file")
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

        def header(i: int) -> tuple[int, int, int]:
            base = shoff + i * shentsize
            sh_name, = struct.unpack_from("<I", data, base)
            sh_offset, sh_size = struct.unpack_from("<QQ", data, base + 0x18)
            return sh_name, sh_offset, sh_size

        _, str_off, str_size = header(shstrndx)
        names = data[str_off:str_off + str_size]
        for i in range(shnum):
            sh_name, off, size = header(i)
            end = names.index(b"\0", sh_name)
            if names[sh_name:end].decode() == name:
                if off + size > len(data):
                    raise ArtifactError(f"{p}: section {name} extends past the end of the file")
                return data[off:off + size]
    except (struct.error, ValueError, IndexError) as exc:
        raise ArtifactError(f"{p}: malformed ELF section headers ({exc})") from None
    raise ArtifactError(f"{p} has no {name} section: not a hipdnn-ep artifact")


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata of an artifact directory (or of its program.so)."""
    p = program_path(path)
    raw = read_section(p)
    text = raw.split(b"\0", 1)[0]
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{p}: metadata is not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ArtifactError(f"{p}: unknown metadata format {meta.get('format') if isinstance(meta, dict) else meta!r}")
    return meta


def format_metadata(meta: dict[str, Any]) -> str:
    """Human-readable summary for `hipdnn-ep-compile inspect`."""
    abi = meta["abi"]
    plan = meta["memory_plan"]
    lines = [
        f"compiler: {meta['compiler']['name']} {meta['compiler']['version']}"
        + (f" (build {meta['compiler']['build_id']})" if "build_id" in meta["compiler"] else ""),
        f"backend:  {meta['backend']}",
        f"abi:      {abi['major']}.{abi['min_minor']} "
        f"(needs runtime ABI {abi['major']}.x with x >= {abi['min_minor']})",
        f"graph:    {meta['graph_hash']}",
        "imports:",
        *[f"  {i['name']}  {i['hash']}" for i in meta["imports"]],
        "inputs:",
        *[f"  {t['name']}  dtype={t['dtype']}  dims={t['dims']}" for t in meta["inputs"]],
        "outputs:",
        *[f"  {t['name']}  dtype={t['dtype']}  dims={t['dims']}" for t in meta["outputs"]],
        "weights:",
        *[f"  {w['name']}  dtype={w['dtype']}  dims={w['dims']}  source={w['source']['kind']}"
          for w in meta["weights"]],
        f"memory plan: pool {plan['pool_bytes']} bytes, host scratch {plan['host_scratch_bytes']} bytes, "
        f"{len(plan.get('buffers', []))} pool buffers",
    ]
    return "\n".join(lines)
