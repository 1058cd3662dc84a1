"""The op registry (registry.py) and the ops registered in it (onnx.py, llm.py, mask.py, general.py, misc.py,
vision.py, resize.py, contrib.py, quant.py, attention.py, indexing.py, bitwise.py, einsum.py, slicing.py)."""

from . import (  # noqa: F401  (register the ops)
    attention,
    bitwise,
    contrib,
    einsum,
    general,
    indexing,
    llm,
    mask,
    misc,
    onnx,
    quant,
    resize,
    slicing,
    vision,
)
from .registry import Kernel, OpDef, Param, by_ir_name, entries, kernel, kernels, lookup, supported_ops

__all__ = ["Kernel", "OpDef", "Param", "by_ir_name", "entries", "kernel", "kernels", "lookup", "supported_ops"]
