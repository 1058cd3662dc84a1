"""The compiler's build id: a digest of what determines the code it emits.

The version string names a release; the build id names the content. It is the SHA-256 of every
file of this package (its Python sources and the bundled ABI manifest), by relative path, and of
the versions of the code generator it drives (torch-mlir) and of onnx. Editing a pass, an op rule
or the bundled manifest gives another id, so a host that keys its compile cache on the id (the EP
does) never reuses an artifact built by other code, even when the version string did not move.

Computed on first use (about a millisecond per hundred kilobytes of source), then kept for the
life of the process: a running compiler serves the code it imported.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# Distributions whose version changes the emitted code without a change to this package.
CODEGEN_DISTRIBUTIONS = ("torch-mlir", "onnx")


def source_files() -> list[Path]:
    """Every file of the package that the build id covers (caches and bytecode excluded), sorted."""
    return sorted(p for p in PACKAGE_DIR.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))


def _distribution_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


@functools.cache
def build_id() -> str:
    """24 hex digits identifying this compiler's content (see the module docstring)."""
    h = hashlib.sha256(b"hipdnn-ep-compiler build id 1\0")
    for path in source_files():
        data = path.read_bytes()
        rel = path.relative_to(PACKAGE_DIR).as_posix().encode()
        h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    for name in CODEGEN_DISTRIBUTIONS:
        h.update(f"{name}=={_distribution_version(name)}\0".encode())
    return h.hexdigest()[:24]
