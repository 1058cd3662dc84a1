"""One-call registration of the plugin library with ONNX Runtime."""

from __future__ import annotations

import re
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


def register(ort_module: ModuleType | None = None, registration_name: str | None = None) -> list[Any]:
    """Register the plugin with ONNX Runtime (once) and return its EP devices.

    ort_module: the onnxruntime module to use (default: import onnxruntime).
    Returns the OrtEpDevice objects of this EP, ready for
    SessionOptions.add_provider_for_devices.
    """
    if ort_module is None:
        import onnxruntime as ort_module  # noqa: PLC0415 - imported only when asked to register
    check_onnxruntime_version(ort_module.__version__)
    name = registration_name or get_ep_name()
    ep_name = get_ep_name()
    if not any(d.ep_name == ep_name for d in ort_module.get_ep_devices()):
        ort_module.register_execution_provider_library(name, get_library_path())
    devices = [d for d in ort_module.get_ep_devices() if d.ep_name == ep_name]
    if not devices:
        raise RuntimeError("hipdnn-ep: the library registered but offers no device to ONNX Runtime")
    return devices
