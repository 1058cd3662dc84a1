"""hipdnn-ep: an ONNX Runtime plugin execution provider.

Importing this package has no side effects and does not import onnxruntime.

    import onnxruntime as ort, hipdnn_ep
    devices = hipdnn_ep.register()          # registers the plugin library once
    so = ort.SessionOptions()
    so.add_provider_for_devices(devices, {"backend": "cpu"})
"""

from ._library import get_ep_name, get_ep_names, get_library_path
from ._registration import check_onnxruntime_version, register

__all__ = [
    "check_onnxruntime_version",
    "get_ep_name",
    "get_ep_names",
    "get_library_path",
    "register",
]
