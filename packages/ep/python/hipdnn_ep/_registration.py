"""One-call registration of the plugin library with ONNX Runtime."""

from __future__ import annotations

import os
import re
import threading
from types import ModuleType
from typing import Any

from ._library import get_ep_name, get_library_path

# The plugin is built against ORT C API version 23 (ONNX Runtime 1.23).
MIN_ONNXRUNTIME_VERSION = "1.23.0"


def _version_tuple(version: str) -> tuple[int, int, int]:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not m:
        raise ValueError(f"cannot parse the version {version!r}")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def check_onnxruntime_version(ort_version: str, minimum: str = MIN_ONNXRUNTIME_VERSION) -> None:
    """Raise RuntimeError unless ort_version >= minimum (a pure function)."""
    if _version_tuple(ort_version) < _version_tuple(minimum):
        raise RuntimeError(
            f"hipdnn-ep needs onnxruntime>={minimum}, but onnxruntime {ort_version} is installed; "
            f"upgrade it: pip install -U 'onnxruntime>={minimum}'"
        )


# Keys the plugin puts in each EP device's metadata (ep_factory.h): the name its library was
# registered under and the library file; newer onnxruntime (1.32) adds the file too, under its own
# key (a copy of the plugin older than these keys is known by that one).
_REGISTRATION_NAME_KEY = "registration_name"
_PLUGIN_LIBRARY_KEYS = ("plugin_library", "library_path")

# ONNX Runtime's registry is per process and refuses a second registration of a name, so
# register() checks and registers under one lock: concurrent first calls register once.
_lock = threading.Lock()


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _check_registered(devices: list[Any], name: str, library: str) -> None:
    """Refuse devices registered under another name or from another copy of the library."""
    meta = dict(devices[0].ep_metadata)
    have_name = meta.get(_REGISTRATION_NAME_KEY)
    have_library = next((meta[k] for k in _PLUGIN_LIBRARY_KEYS if meta.get(k)), None)
    if have_library and not _same_file(have_library, library):
        raise RuntimeError(
            f"hipdnn-ep: onnxruntime already has {get_ep_name()} registered from {have_library}, not from this "
            f"package's {library}; unregister it first "
            f"(onnxruntime.unregister_execution_provider_library({have_name or get_ep_name()!r}))"
        )
    if have_name and have_name != name:
        raise RuntimeError(
            f"hipdnn-ep: the library is already registered with onnxruntime as {have_name!r}, so it is not "
            f"registered again as {name!r}; call register(registration_name={have_name!r}) or leave the name "
            f"out, or unregister it first (onnxruntime.unregister_execution_provider_library({have_name!r}))"
        )


def register(ort_module: ModuleType | None = None, registration_name: str | None = None) -> list[Any]:
    """Register the plugin with ONNX Runtime (once) and return its EP devices.

    ort_module: the onnxruntime module to use (default: import onnxruntime).
    registration_name: the name to register the library under (default: the EP's name).
    Returns the OrtEpDevice objects of this EP, ready for
    SessionOptions.add_provider_for_devices.

    Idempotent and thread-safe: a call that finds this library registered under the same name
    returns its devices. One registered under another name, or another copy of the library
    registered as this EP, is refused with a RuntimeError that says how to undo it.
    """
    if ort_module is None:
        import onnxruntime as ort_module  # noqa: PLC0415 - imported only when asked to register
    check_onnxruntime_version(ort_module.__version__)
    ep_name = get_ep_name()
    name = registration_name or ep_name
    library = get_library_path()

    def ours() -> list[Any]:
        return [d for d in ort_module.get_ep_devices() if d.ep_name == ep_name]

    with _lock:
        devices = ours()
        if not devices:
            try:
                ort_module.register_execution_provider_library(name, library)
            except Exception as exc:
                # a registration from outside register() (its lock) may have won the race
                devices = ours()
                if not devices:
                    raise RuntimeError(
                        f"hipdnn-ep: onnxruntime refused to register {library} as {name!r}: {exc}"
                    ) from exc
            else:
                devices = ours()
                if not devices:
                    raise RuntimeError("hipdnn-ep: the library registered but offers no device to ONNX Runtime")
        _check_registered(devices, name, library)
    return devices
