"""hipdnn-ep runtime: the C ABI library compiled artifacts call, and its Python API.

The shared library, its C header, the ABI manifest and a CMake package ship inside this
package; ``library_path()``, ``include_dir()`` and ``cmake_dir()`` locate them.
"""

from __future__ import annotations

from pathlib import Path

from ._core import (
    AbiMismatchError,
    Artifact,
    BackendUnavailableError,
    HipdnnEpError,
    InvalidArgumentError,
    LeakError,
    NotFoundError,
    OutOfMemoryError,
    State,
    abi_manifest,
    abi_version,
    built_backends,
    device_memory_stats,
)
from ._version import __version__

__all__ = [
    "AbiMismatchError",
    "Artifact",
    "BackendUnavailableError",
    "HipdnnEpError",
    "InvalidArgumentError",
    "LeakError",
    "NotFoundError",
    "OutOfMemoryError",
    "State",
    "__version__",
    "abi_manifest",
    "abi_version",
    "built_backends",
    "cmake_dir",
    "device_memory_stats",
    "include_dir",
    "library_path",
    "missing_exports",
]

_PACKAGE_DIR = Path(__file__).resolve().parent


def library_path() -> str:
    """Path of the runtime shared library this module loaded (link compiled artifacts against it)."""
    from ._core import _library_path

    return _library_path()


def include_dir() -> str:
    """Directory holding ``hipdnn_ep/runtime_abi.h``."""
    return str(_PACKAGE_DIR / "include")


def cmake_dir() -> str:
    """Directory holding ``hipdnn_ep_runtime-config.cmake`` (target ``hipdnn_ep_runtime::runtime``)."""
    return str(_PACKAGE_DIR / "cmake")


def missing_exports(library: str | None = None) -> list[str]:
    """Manifest functions the runtime library does not export, as ``name@VERSION_NODE``.

    Each function of the runtime's ABI manifest is resolved by name and version node
    (``dlvsym``), as the dynamic loader resolves a compiled artifact's imports; empty when the
    library is sound. ``library`` defaults to the library this module loaded.
    """
    import ctypes  # noqa: PLC0415

    manifest = abi_manifest()
    nodes = {int(k): v for k, v in manifest["version_nodes"].items()}
    lib = ctypes.CDLL(library or library_path())
    libc = ctypes.CDLL(None)
    dlvsym = libc.dlvsym
    dlvsym.restype = ctypes.c_void_p
    dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    missing = []
    for fn in manifest["functions"]:
        node = nodes.get(int(fn["since"]), "")
        if not node or not dlvsym(lib._handle, fn["name"].encode(), node.encode()):
            missing.append(f"{fn['name']}@{node or '(no version node)'}")
    return missing
