"""ONNX frontend: load and validate a model (loader) and the importer into the hipdnn op-level IR
(frontend.importer, which needs MLIR and is imported only when compiling).  Which ops are
supported is the op registry's (hipdnn_ep_compiler.ops)."""

from .loader import MIN_OPSET, load_model

__all__ = ["load_model", "MIN_OPSET"]
