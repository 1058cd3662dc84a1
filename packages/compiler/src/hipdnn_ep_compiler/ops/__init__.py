"""The op registry (registry.py) and the ops registered in it (onnx.py)."""

from . import onnx  # noqa: F401  (registers the ONNX ops)
from .registry import Kernel, OpDef, Param, by_ir_name, entries, kernel, kernels, lookup, supported_ops

__all__ = ["Kernel", "OpDef", "Param", "by_ir_name", "entries", "kernel", "kernels", "lookup", "supported_ops"]
