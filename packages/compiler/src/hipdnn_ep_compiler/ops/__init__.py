"""The op registry (registry.py) and the ops registered in it (onnx.py, llm.py, mask.py, general.py)."""

from . import llm, mask, onnx  # noqa: F401  (register the ops)
from . import general  # noqa: F401, I001  (general ops: reductions, ArgMax/ArgMin, ScatterND, Pad, unary)
from .registry import Kernel, OpDef, Param, by_ir_name, entries, kernel, kernels, lookup, supported_ops

__all__ = ["Kernel", "OpDef", "Param", "by_ir_name", "entries", "kernel", "kernels", "lookup", "supported_ops"]
