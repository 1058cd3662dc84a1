"""ONNX frontend: load and validate a model, then import it into the hipdnn op-level IR."""

from .loader import load_model, MIN_OPSET
from .importer import import_model
from .op_table import supported_ops

__all__ = ["load_model", "import_model", "supported_ops", "MIN_OPSET"]
