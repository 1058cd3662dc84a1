"""The op registry (registry.py) and the ops registered in it (onnx.py, llm.py, mask.py, general.py, misc.py, vision.py,
contrib.py, quant.py)."""

from . import contrib, general, llm, mask, misc, onnx, quant, vision  # noqa: F401  (register the ops)
from .registry import Kernel, OpDef, Param, by_ir_name, entries, kernel, kernels, lookup, supported_ops

__all__ = ["Kernel", "OpDef", "Param", "by_ir_name", "entries", "kernel", "kernels", "lookup", "supported_ops"]
