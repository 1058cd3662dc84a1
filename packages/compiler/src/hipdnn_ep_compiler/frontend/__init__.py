"""ONNX frontend: load and validate a model (loader), the op table, and the importer into the
hipdnn op-level IR (frontend.importer, which needs MLIR and is imported only when compiling)."""

from .loader import MIN_OPSET, load_model
from .op_table import supported_ops

__all__ = ["load_model", "supported_ops", "MIN_OPSET"]
