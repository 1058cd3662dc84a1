"""ONNX frontend: load and validate a model, then import it into the hipdnn op-level IR."""

from .importer import import_model
from .loader import MIN_OPSET, load_model
from .op_table import supported_ops

__all__ = ["load_model", "import_model", "supported_ops", "MIN_OPSET"]
