"""Artifact metadata: what the compiler embeds, and a pure-Python reader of it.

The artifact format is declared once, in the runtime ABI manifest's [artifact] table (read here
from the bundled JSON): an artifact is a directory holding FILE (`program.so`); its metadata is
JSON, NUL-terminated, in the ELF section SECTION (`.hipdnn_ep_meta`), readable without loading
the code (the runtime checks it before dlopen; `read_metadata` here serves `inspect`). FORMAT is
the metadata format this compiler writes; readers accept OLDEST_FORMAT to FORMAT.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .abi import bundled_manifest_path, metadata_schema
from .errors import AbiTargetError, ArtifactError


def _declared_format() -> dict[str, Any]:
    return json.loads(bundled_manifest_path().read_text())["artifact"]


_DECLARED = _declared_format()
SECTION: str = _DECLARED["section"]
PROGRAM: str = _DECLARED["file"]
FORMAT: int = _DECLARED["format"]
OLDEST_FORMAT: int = _DECLARED["oldest_format"]
BACKENDS = ("cpu", "cuda", "hip")  # the runtime backends an artifact may be compiled for


def check_runtime_reads(artifact_format: dict[str, Any] | None, source: str) -> None:
    """Refuses to compile for a runtime whose manifest says it cannot read what this compiler writes.
    `artifact_format`: the [artifact] table of the target runtime's manifest (None: a runtime older
    than the declaration, which reads format 1 files named program.so in section .hipdnn_ep_meta)."""
    theirs = artifact_format or {"file": "program.so", "section": ".hipdnn_ep_meta", "format": 1,
                                 "oldest_format": 1}
    if not theirs["oldest_format"] <= FORMAT <= theirs["format"] or \
            (theirs["file"], theirs["section"]) != (PROGRAM, SECTION):
        raise AbiTargetError(
            f"the runtime described by {source} reads artifact metadata formats {theirs['oldest_format']} to "
            f"{theirs['format']} ({theirs['file']}, section {theirs['section']}); this compiler writes format "
            f"{FORMAT} ({PROGRAM}, section {SECTION}). Fix: install a hipdnn-ep-compiler and hipdnn-ep-runtime "
            f"whose artifact formats overlap (upgrade the older one)")


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
    found = meta.get("format") if isinstance(meta, dict) else None
    if not isinstance(found, int) or not OLDEST_FORMAT <= found <= FORMAT:
        raise ArtifactError(f"{p}: metadata format {found!r} is not one this compiler reads (formats "
                            f"{OLDEST_FORMAT} to {FORMAT}); use the hipdnn-ep-compiler that built it, or compile "
                            f"the model again")
    # fields of a newer minor of the same format are allowed; a declared field must have its declared type
    broken = metadata_schema.problems(meta, known_only=False)
    if broken:
        raise ArtifactError(f"{p}: metadata does not follow the artifact metadata schema "
                            f"{metadata_schema.MAJOR}.{metadata_schema.MINOR}: {'; '.join(broken[:5])}")
    return meta


def check_written(meta: dict[str, Any]) -> None:
    """Refuses metadata this compiler built that breaks the declared schema (packages/abi/metadata.toml):
    a field written but not declared, or written with another type, would reach readers undeclared."""
    broken = metadata_schema.problems(meta)
    if broken:
        raise ArtifactError("internal error: the metadata built for this model does not follow the artifact "
                            f"metadata schema {metadata_schema.MAJOR}.{metadata_schema.MINOR}: "
                            f"{'; '.join(broken[:5])}. Fix: declare the field in packages/abi/metadata.toml")


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
        *[f"  {t['name']}  dtype={t['dtype']}  dims={_dims(t)}" for t in meta["inputs"]],
        "outputs:",
        *[f"  {t['name']}  dtype={t['dtype']}  dims={_dims(t)}" for t in meta["outputs"]],
        "weights:",
        *[f"  {w['name']}  dtype={w['dtype']}  dims={w['dims']}  source={w['source']['kind']}"
          for w in meta["weights"]],
        f"memory plan: pool {plan['pool_bytes']} bytes, host scratch {plan['host_scratch_bytes']} bytes, "
        f"{len(plan.get('buffers', []))} pool buffers",
    ]
    if meta.get("symbols"):  # the named symbols the expressions above use
        lines += ["symbols:", *[f"  {s['name']} = {s['value']}" for s in meta["symbols"]]]
    return "\n".join(lines)


def _dims(t: dict) -> str:
    """A tensor's dims as inspect shows them: the metadata's spelling, the ONNX name after a named one."""
    names = t.get("dim_names") or [None] * len(t["dims"])
    return "[" + ", ".join(str(d) if n is None else f"{d} ({n})" for d, n in zip(t["dims"], names, strict=False)) + "]"
