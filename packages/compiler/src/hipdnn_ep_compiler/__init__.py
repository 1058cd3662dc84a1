"""hipdnn-ep-compiler: compiles ONNX graphs into host programs that call the hipdnn-ep runtime ABI.

Importing the package is cheap: MLIR (torch-mlir) is imported on the first compile_model or
supported_ops call.
"""

from ._version import __version__
from .artifact import ArtifactInfo, read_metadata
from .errors import AbiTargetError, ArtifactError, CompileError, LinkError, ModelError, UnsupportedError
from .weights import load_weights

__all__ = [
    "__version__", "compile_model", "supported_ops", "read_metadata", "load_weights", "ArtifactInfo",
    "CompileError", "ModelError", "UnsupportedError", "AbiTargetError", "LinkError", "ArtifactError",
]


def supported_ops() -> dict[str, list[str]]:
    """Supported op types per domain ("ai.onnx", "com.microsoft"), sorted, from the op registry."""
    from .ops import supported_ops as registered

    return registered()


def __getattr__(name: str):
    if name == "compile_model":
        from .compiler import compile_model

        return compile_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
