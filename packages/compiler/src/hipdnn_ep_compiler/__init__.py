"""hipdnn-ep-compiler: compiles ONNX graphs into host programs that call the hipdnn-ep runtime ABI.

Importing the package is cheap: MLIR (torch-mlir) is imported on the first compile_model call.
"""

from ._version import __version__
from .artifact import ArtifactInfo, read_metadata
from .errors import AbiTargetError, ArtifactError, CompileError, LinkError, ModelError, UnsupportedError
from .frontend.op_table import supported_ops
from .weights import load_weights

__all__ = [
    "__version__", "compile_model", "supported_ops", "read_metadata", "load_weights", "ArtifactInfo",
    "CompileError", "ModelError", "UnsupportedError", "AbiTargetError", "LinkError", "ArtifactError",
]


def __getattr__(name: str):
    if name == "compile_model":
        from .compiler import compile_model

        return compile_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
